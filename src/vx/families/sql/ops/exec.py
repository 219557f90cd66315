"""The SQL family's four exec seed ops: they share one execution of the query per item
(``ctx["execution"]``, see :mod:`vx.families.sql.ops.item`) and abstain when it could not produce
what they look at."""

from __future__ import annotations

from vx.families.sql.ops import analysis, item
from vx.families.sql.ops.item import execution
from vx.ops import abstain, clean, drawback, op

NULL_HEAVY_SHARE = 0.5  # a result whose cells are at least this share NULL is null-heavy

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (__name__, analysis, item, "vx.families.sql.catalog", "vx.families.sql.warehouse")


@op(tier="exec", detects="execution_error", timeout=30.0, depends=DEPENDS)
def execution_error(task, output, ctx):
    """The warehouse rejects the query or fails while running it."""
    res = execution(task, output, ctx)
    if res is None or res.error_kind == "timeout":
        return abstain()
    if res.error is not None:
        return drawback(f"{res.error_kind} error: {res.error.splitlines()[0][:300]}")
    return clean()


@op(tier="exec", detects="empty_result", timeout=30.0, depends=DEPENDS)
def empty_result(task, output, ctx):
    """The query runs but returns no rows."""
    res = execution(task, output, ctx)
    if res is None or not res.ok:
        return abstain()
    if not res.rows:
        return drawback("the query returned no rows")
    return clean()


@op(tier="exec", detects="null_result", timeout=30.0, depends=DEPENDS)
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


@op(tier="exec", detects="timeout", timeout=30.0, depends=DEPENDS)
def timeout(task, output, ctx):
    """The query does not finish within the task's time limit."""
    res = execution(task, output, ctx)
    if res is None:
        return abstain()
    if res.error_kind == "timeout":
        return drawback(res.error or "the query timed out")
    return clean()
