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
    abstains with that error recorded)."""
    if "execution" in ctx:
        return ctx["execution"]
    spec = task.get("warehouse")
    if not isinstance(spec, Mapping):
        ctx["execution"] = None
        return None
    wh = session(spec)
    res = wh.execute(
        sql_text(output),
        timeout=float(task.get("timeout") or DEFAULT_TIMEOUT),
        max_rows=int(task.get("max_rows") or DEFAULT_MAX_ROWS),
    )
    ctx["execution"] = res
    return res


__all__ = ["Parsed", "WarehouseError", "catalog", "dialect", "execution", "parsed", "sql_text"]
