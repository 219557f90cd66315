"""The SQL family's root ``parses``, its six static seed ops and ``extra_aggregate_column`` (the query's
parse tree only; on SQLite the root reads double-quoted names no column matches as strings, as SQLite does).

Ops read the task record (question, catalog, warehouse spec — see `vx.families.sql.ops.item`) and
the SQL output; none reads the gold SQL. Static ops inspect the root's parse tree and abstain
when their check does not apply (no aggregate, a single table, no top-N question…). Messages name
the clause or identifier at fault.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from vx.families.sql.ops import analysis, item
from vx.families.sql.ops.item import Parsed, catalog, dialect, parsed, sql_text
from vx.ops import abstain, clean, drawback, op

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (__name__, analysis, item, "vx.families.sql.catalog", "vx.families.sql.warehouse")


@op(tier="static", detects="syntax_error", root=True, depends=DEPENDS)
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
    except (RecursionError, MemoryError) as exc:  # the output provoked it: its drawback, never an abstention
        return drawback(f"cannot be parsed as {d} SQL: {_too_much(exc, sql)}")
    if not trees:
        return drawback("the output holds no SQL statement")
    if len(trees) > 1:
        return drawback(f"{len(trees)} statements; the answer must be a single query")
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        return drawback(f"a {tree.key.upper()} statement, not a query")
    cat = catalog(task, ctx)
    if d == "sqlite" and cat is not None:  # SQLite's rule: "x" is a string when no column x is in sight
        try:
            tree, _ = analysis.sqlite_string_literals(tree, cat)
        except (RecursionError, MemoryError) as exc:
            return drawback(f"cannot be read as {d} SQL: {_too_much(exc, sql)}")
    ctx["artifact"] = Parsed(tree, d)
    volatile = analysis.volatile_calls(tree)
    if volatile and hasattr(ctx, "mark_volatile"):  # its result depends on the run: no verdict of it is cached
        ctx.mark_volatile(f"the query calls {', '.join(volatile[:3])}")
    return clean()


def _too_much(exc: BaseException, sql: str) -> str:
    """What a parser's recursion or memory error on the output means, for a person."""
    if isinstance(exc, RecursionError):
        return f"nested too deeply for the parser ({sql.count('(')} opening parentheses in {len(sql)} characters)"
    return f"the parser ran out of memory on {len(sql)} characters"


def _tree(ctx) -> Any:
    p = parsed(ctx)
    return p.tree if p is not None else None


@op(tier="static", detects="missing_group_by", depends=DEPENDS)
def missing_group_by(task, output, ctx):
    """An aggregate is selected together with non-aggregated columns and there is no GROUP BY."""
    tree = _tree(ctx)
    if tree is None or not analysis.has_aggregate(tree):
        return abstain()
    found = analysis.missing_group_by(tree)
    return drawback(found[0]) if found else clean()


@op(tier="static", detects="select_star", depends=DEPENDS)
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


@op(tier="static", detects="missing_limit", depends=DEPENDS)
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


@op(tier="static", detects="unknown_identifier", depends=DEPENDS)
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


@op(tier="static", detects="cartesian_join", depends=DEPENDS)
def cartesian_join(task, output, ctx):
    """Two tables are joined without any condition relating them (a cartesian product)."""
    tree = _tree(ctx)
    if tree is None:
        return abstain()
    found = analysis.cartesian_joins(tree, catalog(task, ctx))
    if found is None:
        return abstain()
    return drawback(found[0]) if found else clean()


@op(tier="static", detects="date_format", depends=DEPENDS)
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


@op(tier="static", detects="extra_columns", depends=DEPENDS)
def extra_aggregate_column(task, output, ctx):
    """The query also returns a COUNT / SUM / AVG it only needs to order or filter by, and the question
    does not ask for that figure (``SELECT name, COUNT(*) … ORDER BY COUNT(*) DESC LIMIT 1``)."""
    tree = _tree(ctx)
    if tree is None or not isinstance(tree, exp.Select) or not (tree.args.get("order") or tree.args.get("having")):
        return abstain()
    found = analysis.ordering_aggregates(tree, str(task.get("question", "")))
    if found:
        return drawback(
            f"returns {found[0]} as well, which it only orders or filters by; the question does not ask for that figure"
        )
    return clean()
