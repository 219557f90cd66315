"""The SQL family's exec ops: four share one execution of the query per item (``ctx["execution"]``,
see :mod:`vx.families.sql.ops.item`) and abstain when it could not produce what they look at;
``literal_not_in_column``, ``limit_over_ties`` and ``unused_join`` ask the database small questions of
their own (does a column hold this value, or is it padded with spaces; do the rows around the LIMIT tie;
does the query return some row fewer times without the join), and ``empty_result`` asks whether the
columns it reads are padded."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping

from sqlglot import exp

from vx.families.sql.ops import analysis, item
from vx.families.sql.ops.item import execution
from vx.memo import MISSING, Memo
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
    """The query runs but returns no rows, and nothing says that no rows could be the right answer. An
    empty result alone is not a drawback: the op abstains when the query keeps groups by a HAVING
    threshold (the data may meet it nowhere) or reads a column whose text values are padded with spaces
    (flight_2's ``' APG'``: the gold query written from the question returns nothing either)."""
    res = execution(task, output, ctx)
    if res is None or not res.ok:
        return abstain()
    if res.rows:
        return clean()
    art, cat = item.parsed(ctx), item.catalog(task, ctx)
    if art is not None and analysis.has_threshold(art.tree):
        return abstain("no rows, but the query keeps groups by a HAVING threshold the data may meet nowhere")
    if art is not None and cat is not None and isinstance(task.get("warehouse"), Mapping):
        padded = [f"{t}.{c}" for t, c in sorted(analysis.column_refs(art.tree, cat)) if padded_column(task, t, c)]
        if padded:
            return abstain(
                f"no rows, but {padded[0]} holds values padded with spaces: a query written from the "
                "question matches nothing there, whoever writes it"
            )
    return drawback("the query returned no rows")


@op(tier="exec", detects="null_result", timeout=30.0, depends=DEPENDS)
def null_heavy_result(task, output, ctx):
    """The result is mostly NULL, or a whole column of it is NULL, where the query made the NULLs (an
    outer join, an aggregate over nothing, an expression): NULLs a plain column reads from the data
    (``SELECT IndepYear`` of a country that has none) are the right answer."""
    res = execution(task, output, ctx)
    if res is None or not res.ok or not res.rows or not res.columns:
        return abstain()
    art = item.parsed(ctx)
    n_rows, n_cols = len(res.rows), len(res.columns)
    made = [j for j in range(n_cols) if art is None or not analysis.bare_column_projection(art.tree, j)]
    if not made:
        return abstain("every column is read as stored: its NULLs are the data's")
    nulls = {j: sum(1 for r in res.rows if r[j] is None) for j in made}
    for j, k in nulls.items():
        if k == n_rows:
            return drawback(f"column {res.columns[j]} is NULL in all {n_rows} row(s)")
    share = sum(nulls.values()) / (n_rows * len(made))
    if share >= NULL_HEAVY_SHARE:
        return drawback(f"{share:.0%} of the result's computed cells are NULL")
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


#: A column whose text values are at least this share padded with spaces (``' APG'``, ``'Aberdeen '``)
#: is *padded*: a literal written from the question cannot match it, and the gold query shares that fate.
PADDED_SHARE = 0.5
_PADDED = Memo(16384, 8 << 20)  # (warehouse spec, table, column) -> padded, bounded in entries and bytes


def padded_column(task, table: str, column: str) -> bool:
    """Whether `table.column` of the task's database holds text values padded with spaces (at least
    :data:`PADDED_SHARE` of its non-NULL text values; one lookup per database column and process)."""
    spec = task.get("warehouse")
    if not isinstance(spec, Mapping):
        return False
    key = (json.dumps(dict(spec), sort_keys=True, default=str), table.lower(), column.lower())
    padded = _PADDED.get(key)
    if padded is MISSING:
        t, c = _quote(table), _quote(column)
        res = item.session(spec).execute(
            f"SELECT COUNT(*), SUM(CASE WHEN {c} <> TRIM({c}) THEN 1 ELSE 0 END) FROM {t} "
            f"WHERE {c} IS NOT NULL AND TYPEOF({c}) = 'text'",
            timeout=float(task.get("timeout") or item.DEFAULT_TIMEOUT),
            max_rows=1,
        )
        n, k = res.rows[0] if res.ok and res.rows else (0, 0)
        padded = _PADDED.put(key, bool(n) and (k or 0) / n >= PADDED_SHARE, 2 * sum(map(len, key)) + 256)
    return bool(padded)


@op(tier="exec", detects="wrong_literal", timeout=30.0, depends=DEPENDS)
def literal_not_in_column(task, output, ctx):
    """A column is compared with a text value it never holds (a value the data spells otherwise:
    'Volvo' for 'volvo', 'Bachelors' for 'Bachelor'); the message names the value the column has.
    Padding is the data's quirk, not the query's: a value the column holds once surrounding spaces are
    ignored, and any value of a padded column (:func:`padded_column`), are not judged."""
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
    judged = 0
    for table, column, value, how in found:
        t, c = _quote(table), _quote(column)
        if padded_column(task, table, column):
            continue
        test = "LIKE" if how == "like" else "="
        hit = wh.execute(f"SELECT 1 FROM {t} WHERE {c} {test} {_string(value)} LIMIT 1", timeout=timeout, max_rows=1)
        if not hit.ok:
            continue
        if hit.rows:
            judged += 1
            continue
        if how == "like":
            judged += 1
            return drawback(f"no value of {table}.{column} is LIKE '{value}'")
        vals = wh.execute(
            f"SELECT DISTINCT CAST({c} AS TEXT) FROM {t} WHERE {c} IS NOT NULL LIMIT {MAX_DISTINCT}",
            timeout=timeout,
            max_rows=MAX_DISTINCT,
        )
        texts = [str(r[0]) for r in vals.rows] if vals.ok else []
        if any(x.strip() == value.strip() for x in texts):
            continue  # the same text up to surrounding spaces: the data's padding
        judged += 1
        same = [x for x in texts if x.strip().lower() == value.strip().lower()]
        if same:
            return drawback(f"{table}.{column} never equals '{value}'; the data spells it '{same[0]}'")
        near = difflib.get_close_matches(value, texts, n=1, cutoff=0.6)
        return drawback(f"{table}.{column} never equals '{value}'" + (f" (nearest value: '{near[0]}')" if near else ""))
    return (
        clean()
        if judged
        else abstain("every compared column is padded with spaces, or its value is the data's up to padding")
    )


@op(tier="exec", detects="wrong_join_path", timeout=30.0, depends=DEPENDS)
def unused_join(task, output, ctx):
    """A table is inner-joined, nothing of it is used outside the join condition, and the join repeats
    rows: the query without it returns some row fewer times. A join that only keeps the rows that have
    a match (a semi-join: ``FROM dogs JOIN treatments ON …`` for dogs that had a treatment), or that sits
    under GROUP BY, an aggregate, DISTINCT, a set operation or a nested query, is not a defect."""
    art = item.parsed(ctx)
    spec = task.get("warehouse")
    if art is None or not isinstance(spec, Mapping):
        return abstain()
    found = analysis.unused_joins(art.tree, item.catalog(task, ctx))
    if not found:
        return abstain() if art.tree.find(exp.Join) is None else clean()
    wh = item.session(spec)
    timeout = float(task.get("timeout") or item.DEFAULT_TIMEOUT)
    max_rows = int(task.get("max_rows") or item.DEFAULT_MAX_ROWS)
    full = wh.execute(analysis.unbounded(art.tree).sql(dialect=art.dialect), timeout=timeout, max_rows=max_rows)
    if not full.ok or full.truncated:
        return abstain()
    with_join = Counter(tuple(r) for r in full.rows)
    for name, join in found:
        alone = wh.execute(
            analysis.without_join(art.tree, join).sql(dialect=art.dialect), timeout=timeout, max_rows=max_rows
        )
        if not alone.ok or alone.truncated:
            continue
        without = Counter(tuple(r) for r in alone.rows)
        repeated = [r for r, k in with_join.items() if k > without.get(r, 0)]
        if repeated:
            return drawback(
                f"{name} is joined but none of its columns is used outside the join condition, and the "
                f"join repeats rows: {len(full.rows)} row(s) with it, {len(alone.rows)} without "
                f"(e.g. {repeated[0]!r} {with_join[repeated[0]]} times)"
            )
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
    res = item.session(spec).execute(
        probe[0], timeout=float(task.get("timeout") or item.DEFAULT_TIMEOUT), max_rows=probe[1] + 1
    )
    if not res.ok:
        return abstain(f"the tie probe does not run: {res.error}")
    if analysis.tie_at_limit(res.rows, probe[1]):
        key = ", ".join(repr(v) for v in res.rows[probe[1]])
        return drawback(
            f"LIMIT {probe[1]} cuts through a tie: rows {probe[1]} and {probe[1] + 1} both order by ({key})"
        )
    return clean()
