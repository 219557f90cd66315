"""What SQL ops read from an item: the task record's fields, the parsed query, the shared execution.

SQL task record (one line of tasks.jsonl; everything a verifier may see — never the gold SQL)::

    {"id": "academic/3", "question": "…", "instructions": "…", "category": "group_by",
     "database": "academic", "dialect": "duckdb",
     "warehouse": {"backend": "duckdb", "source": "defog", "database": "academic"},
     "catalog": {"tables": {"author": [["aid", "BIGINT"], …]}, "samples": {"flight.departure_time": […]}},
     "ignore_order": true, "timeout": 5.0, "max_rows": 10000}

The output to grade is the SQL text. The root op stores `Parsed` at ``ctx["artifact"]``; exec ops
share one execution per item through ``ctx["execution"]`` (the first exec op to run executes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vx.families.sql.catalog import Catalog
from vx.families.sql.warehouse import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    QueryResult,
    WarehouseError,
    session,
)

DEFAULT_DIALECT = "duckdb"


@attrs.frozen
class Parsed:
    """The root's artifact: the parsed statement and the dialect it was read in."""

    tree: Any  # sqlglot.exp.Expr
    dialect: str


def dialect(task: Mapping[str, Any]) -> str:
    return str(task.get("dialect") or (task.get("warehouse") or {}).get("backend") or DEFAULT_DIALECT)


def catalog(task: Mapping[str, Any], ctx: dict | None = None) -> Catalog | None:
    """The task's schema catalog (parsed once per item), or None when the task carries none."""
    if ctx is not None and "catalog" in ctx:
        return ctx["catalog"]
    raw = task.get("catalog")
    cat = Catalog.from_json(raw) if isinstance(raw, Mapping) else None
    if ctx is not None:
        ctx["catalog"] = cat
    return cat


def parsed(ctx: Mapping[str, Any]) -> Parsed | None:
    art = ctx.get("artifact")
    return art if isinstance(art, Parsed) else None


def sql_text(output: Any) -> str:
    return output if isinstance(output, str) else ("" if output is None else str(output))


def execution(task: Mapping[str, Any], output: Any, ctx: dict) -> QueryResult | None:
    """The item's execution result, run once and shared by all exec ops of the item. None when the
    task names no warehouse. A warehouse that cannot be opened raises WarehouseError (the op then
    abstains with that error recorded).

    A query that runs is run a second time: when the two results differ (``random()``, a sample, anything
    whose result is not a function of the query and the data) the execution is the error
    ``nondeterministic``, so every grading of it gets the same verdict (``execution_error`` fires), and the
    item's verdicts are not cached (:meth:`vx.ops.core.Context.mark_volatile`)."""
    if "execution" in ctx:
        return ctx["execution"]
    spec = task.get("warehouse")
    if not isinstance(spec, Mapping):
        ctx["execution"] = None
        return None
    wh = session(spec)
    sql = sql_text(output)
    timeout, max_rows = float(task.get("timeout") or DEFAULT_TIMEOUT), int(task.get("max_rows") or DEFAULT_MAX_ROWS)
    res = wh.execute(sql, timeout=timeout, max_rows=max_rows)
    if res.ok:
        again = wh.execute(sql, timeout=timeout, max_rows=max_rows)
        differs = _difference(res, again) if again.ok else ""  # a second run out of time says nothing
        if differs:
            why = f"two runs of the query returned different results ({differs})"
            if hasattr(ctx, "mark_volatile"):
                ctx.mark_volatile(why)
            res = QueryResult(error=why, error_kind="nondeterministic", seconds=res.seconds + again.seconds)
    ctx["execution"] = res
    return res


def _difference(a: QueryResult, b: QueryResult) -> str:
    """How two results of one query differ ("" when they are the same table, NaN equal to NaN)."""
    if a.columns != b.columns:
        return f"columns {', '.join(a.columns)[:60]}, then {', '.join(b.columns)[:60]}"
    if len(a.rows) != len(b.rows) or a.truncated != b.truncated:
        more = lambda r: "+" if r.truncated else ""  # noqa: E731
        return f"{len(a.rows)}{more(a)} row(s), then {len(b.rows)}{more(b)}"
    for n, (x, y) in enumerate(zip(a.rows, b.rows), 1):
        if x != y and list(map(repr, x)) != list(map(repr, y)):
            same = sorted(map(repr, a.rows)) == sorted(map(repr, b.rows))
            return "the same rows in another order" if same else f"row {n} differs"
    return ""


__all__ = ["Parsed", "WarehouseError", "catalog", "dialect", "execution", "parsed", "sql_text"]
