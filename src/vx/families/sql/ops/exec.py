"""The SQL family's exec ops: four share one execution of the query per item (``ctx["execution"]``,
see :mod:`vx.families.sql.ops.item`) and abstain when it could not produce what they look at;
``literal_not_in_column`` and ``limit_over_ties`` ask the database small questions of their own
(does a column hold this value; do the rows around the LIMIT tie)."""

from __future__ import annotations

from collections.abc import Mapping

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


MAX_DISTINCT = 5000  # distinct values of a column read to name the nearest one


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@op(tier="exec", detects="wrong_literal", timeout=30.0, depends=DEPENDS)
def literal_not_in_column(task, output, ctx):
    """A column is compared with a text value it never holds (a value the data spells otherwise:
    'Volvo' for 'volvo', 'Bachelors' for 'Bachelor'); the message names the value the column has."""
    import difflib

    art, cat = item.parsed(ctx), item.catalog(task, ctx)
    spec = task.get("warehouse")
    if art is None or cat is None or not isinstance(spec, Mapping):
        return abstain()
    found = analysis.string_comparisons(art.tree, cat)
    if not found:
        return abstain()
    wh = item.session(spec)
    timeout = float(task.get("timeout") or item.DEFAULT_TIMEOUT)
    for table, column, value, how in found:
        t, c = _quote(table), _quote(column)
        test = "LIKE" if how == "like" else "="
        hit = wh.execute(f"SELECT 1 FROM {t} WHERE {c} {test} {_string(value)} LIMIT 1", timeout=timeout, max_rows=1)
        if not hit.ok or hit.rows:
            continue
        if how == "like":
            return drawback(f"no value of {table}.{column} is LIKE '{value}'")
        vals = wh.execute(f"SELECT DISTINCT CAST({c} AS TEXT) FROM {t} WHERE {c} IS NOT NULL LIMIT {MAX_DISTINCT}",
                          timeout=timeout, max_rows=MAX_DISTINCT)
        texts = [str(r[0]) for r in vals.rows] if vals.ok else []
        same = [x for x in texts if x.strip().lower() == value.strip().lower()]
        if same:
            return drawback(f"{table}.{column} never equals '{value}'; the data spells it '{same[0]}'")
        near = difflib.get_close_matches(value, texts, n=1, cutoff=0.6)
        return drawback(f"{table}.{column} never equals '{value}'" + (f" (nearest value: '{near[0]}')" if near else ""))
    return clean()


@op(tier="exec", detects="limit_ties", timeout=30.0, depends=DEPENDS)
def limit_over_ties(task, output, ctx):
    """The outer ORDER BY … LIMIT n cuts through a tie: rows n and n + 1 have the same ordering key,
    so which of them is returned is up to the engine."""
    art = item.parsed(ctx)
    spec = task.get("warehouse")
    if art is None or not isinstance(spec, Mapping):
        return abstain()
    probe = analysis.limit_tie_probe(art.tree, art.dialect)
    if probe is None:
        return abstain()
    res = item.session(spec).execute(probe[0], timeout=float(task.get("timeout") or item.DEFAULT_TIMEOUT),
                                     max_rows=probe[1] + 1)
    if not res.ok:
        return abstain(f"the tie probe does not run: {res.error}")
    if analysis.tie_at_limit(res.rows, probe[1]):
        key = ", ".join(repr(v) for v in res.rows[probe[1]])
        return drawback(f"LIMIT {probe[1]} cuts through a tie: rows {probe[1]} and {probe[1] + 1} both order by ({key})")
    return clean()
