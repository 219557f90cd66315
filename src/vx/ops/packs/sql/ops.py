"""The SQL family's seed op pack: root ``parses``, six static ops, four exec ops.

Ops read the task record (question, catalog, warehouse spec — see `vx.ops.packs.sql.item`) and
the SQL output; none reads the gold SQL. Static ops inspect the root's parse tree and abstain
when their check does not apply (no aggregate, a single table, no top-N question…); exec ops share
one execution of the query per item and abstain when it could not produce what they look at.
Messages name the clause or identifier at fault.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import attrs
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from vx.ops import abstain, clean, drawback, op
from vx.ops.core import Op
from vx.ops.packs.sql import analysis
from vx.ops.packs.sql.item import Parsed, catalog, dialect, execution, parsed, sql_text

ROOT = "parses"
NULL_HEAVY_SHARE = 0.5  # a result whose cells are at least this share NULL is null-heavy


@op(tier="static", detects="syntax_error", root=True)
def parses(task, output, ctx):
    """The output is one SQL query that parses in the task's dialect (sqlglot)."""
    sql = sql_text(output).strip()
    d = dialect(task)
    if not sql:
        return drawback("the output is empty: no SQL query")
    try:
        trees = [t for t in sqlglot.parse(sql, read=d) if t is not None]
    except (ParseError, TokenError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return drawback(f"does not parse as {d} SQL: {first[:200]}")
    if not trees:
        return drawback("the output holds no SQL statement")
    if len(trees) > 1:
        return drawback(f"{len(trees)} statements; the answer must be a single query")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        return drawback(f"a {tree.key.upper()} statement, not a query")
    ctx["artifact"] = Parsed(tree, d)
    return clean()


def _tree(ctx) -> Any:
    p = parsed(ctx)
    return p.tree if p is not None else None


@op(tier="static", detects="missing_group_by")
def missing_group_by(task, output, ctx):
    """An aggregate is selected together with non-aggregated columns and there is no GROUP BY."""
    tree = _tree(ctx)
    if tree is None or not analysis.has_aggregate(tree):
        return abstain()
    found = analysis.missing_group_by(tree)
    return drawback(found[0]) if found else clean()


@op(tier="static", detects="select_star")
def select_star(task, output, ctx):
    """SELECT * although the question names the columns it wants."""
    tree = _tree(ctx)
    cat = catalog(task, ctx)
    if tree is None or cat is None:
        return abstain()
    named = analysis.question_columns(str(task.get("question", "")), cat, analysis.table_names(tree))
    if not named:
        return abstain()
    stars = analysis.star_projections(tree)
    if stars:
        return drawback(f"SELECT {stars[0]} although the question asks for {', '.join(named[:3])}")
    return clean()


@op(tier="static", detects="missing_limit")
def top_n_missing_limit(task, output, ctx):
    """The question asks for the top N (or the single most/least …) but the query returns all rows."""
    tree = _tree(ctx)
    if tree is None:
        return abstain()
    n = analysis.top_n_requested(str(task.get("question", "")))
    if n is None:
        return abstain()
    limit = analysis.outer_limit(tree)
    if limit is None:
        if analysis.bounds_rows_otherwise(tree):
            return clean()
        return drawback(f"the question asks for the top {n} but the query has no LIMIT")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit != n and n > 1:
        return drawback(f"LIMIT {limit} but the question asks for the top {n}")
    return clean()


@op(tier="static", detects="unknown_identifier")
def unknown_identifier(task, output, ctx):
    """The query names a table or column that the schema catalog does not have."""
    tree = _tree(ctx)
    cat = catalog(task, ctx)
    if tree is None or cat is None:
        return abstain()
    problems = analysis.unknown_identifiers(tree, cat)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return drawback(problems[0] + more)
    return clean()


@op(tier="static", detects="cartesian_join")
def cartesian_join(task, output, ctx):
    """Two tables are joined without any condition relating them (a cartesian product)."""
    tree = _tree(ctx)
    if tree is None:
        return abstain()
    found = analysis.cartesian_joins(tree, catalog(task, ctx))
    if found is None:
        return abstain()
    return drawback(found[0]) if found else clean()


@op(tier="static", detects="date_format")
def date_as_string_compare(task, output, ctx):
    """A date-like column is compared with a date string it cannot meaningfully be compared with
    (an epoch or year number, a non-ISO date, dates stored as non-ISO text compared by range)."""
    tree = _tree(ctx)
    cat = catalog(task, ctx)
    if tree is None or cat is None:
        return abstain()
    problems, n = analysis.date_string_comparisons(tree, cat)
    if n == 0:
        return abstain()
    return drawback(problems[0]) if problems else clean()


# --------------------------------------------------------------------------- exec ops


@op(tier="exec", detects="execution_error", timeout=30.0)
def execution_error(task, output, ctx):
    """The warehouse rejects the query or fails while running it."""
    res = execution(task, output, ctx)
    if res is None or res.error_kind == "timeout":
        return abstain()
    if res.error is not None:
        return drawback(f"{res.error_kind} error: {res.error.splitlines()[0][:300]}")
    return clean()


@op(tier="exec", detects="empty_result", timeout=30.0)
def empty_result(task, output, ctx):
    """The query runs but returns no rows."""
    res = execution(task, output, ctx)
    if res is None or not res.ok:
        return abstain()
    if not res.rows:
        return drawback("the query returned no rows")
    return clean()


@op(tier="exec", detects="null_result", timeout=30.0)
def null_heavy_result(task, output, ctx):
    """The result is mostly NULL, or a whole column of it is NULL."""
    res = execution(task, output, ctx)
    if res is None or not res.ok or not res.rows or not res.columns:
        return abstain()
    n_rows, n_cols = len(res.rows), len(res.columns)
    nulls = [sum(1 for r in res.rows if r[j] is None) for j in range(n_cols)]
    for j, k in enumerate(nulls):
        if k == n_rows:
            return drawback(f"column {res.columns[j]} is NULL in all {n_rows} row(s)")
    share = sum(nulls) / (n_rows * n_cols)
    if share >= NULL_HEAVY_SHARE:
        return drawback(f"{share:.0%} of the result's cells are NULL")
    return clean()


@op(tier="exec", detects="timeout", timeout=30.0)
def timeout(task, output, ctx):
    """The query does not finish within the task's time limit."""
    res = execution(task, output, ctx)
    if res is None:
        return abstain()
    if res.error_kind == "timeout":
        return drawback(res.error or "the query timed out")
    return clean()


def _helpers_digest() -> str:
    """A hash of the modules the ops delegate to: an op's version must change when they do, or the
    verdict cache would serve verdicts of the old code."""
    from vx.ops.packs.sql import catalog as m1, item as m2, warehouse as m3

    h = hashlib.sha256()
    for mod in (analysis, m1, m2, m3):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()


def _versioned(ops: list[Op]) -> list[Op]:
    digest = _helpers_digest()
    return [attrs.evolve(o, version=hashlib.sha256((o.version + digest).encode()).hexdigest()[:12]) for o in ops]


OPS = _versioned([parses, missing_group_by, select_star, top_n_missing_limit, unknown_identifier, cartesian_join,
                  date_as_string_compare, execution_error, empty_result, null_heavy_result, timeout])


# Closed taxonomy of failure classes (clusters for synthesis) and how a failing item is assigned one.
TAXONOMY = ("syntax_error", "execution_error", "unknown_identifier", "missing_group_by", "select_star",
            "missing_limit", "cartesian_join", "date_format", "wrong_join_key", "wrong_predicate",
            "wrong_aggregate", "wrong_columns", "wrong_order", "duplicate_rows", "missing_filter",
            "empty_result", "null_result", "timeout", "wrong_result")


def classify_failure(task, output, meta) -> str | None:
    """The failure class of a failing item: the mutation operator's class when the item was made by
    one, else a class read off the query itself, else "wrong_result"."""
    from vx.ops.packs.sql.mutate import OPERATORS

    meta = meta or {}
    name = meta.get("operator")
    if name in OPERATORS and OPERATORS[name].failure_class in TAXONOMY:
        return OPERATORS[name].failure_class
    ctx: dict = {}
    if parses(task, output, ctx).verdict == 1:
        return "syntax_error"
    for o, cls in ((unknown_identifier, "unknown_identifier"), (missing_group_by, "missing_group_by"),
                   (cartesian_join, "cartesian_join"), (top_n_missing_limit, "missing_limit"),
                   (select_star, "select_star"), (date_as_string_compare, "date_format")):
        if o(task, output, ctx).verdict == 1:
            return cls
    return "wrong_result"


# The family's check templates register on import (the synthesizer finds them through this pack).
from vx.ops.packs.sql import templates as _templates  # noqa: E402,F401
