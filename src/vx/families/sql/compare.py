"""Result-table comparison with Spider 2.0's execution-match semantics.

A predicted table matches a gold table when:

* **column names are ignored** — only the values count;
* **every gold column matches some predicted column** (in any position); extra predicted columns
  are allowed, and one predicted column may serve several gold columns, as in Spider 2.0;
* two columns match when they have the same length and their values agree position by position;
  with ``ignore_order`` each column is sorted on its own first (Spider 2.0 sorts columns
  independently, so row alignment across columns is not checked);
* **numbers are equal within an absolute tolerance of 1e-2** (``math.isclose(abs_tol=0.01)``);
  booleans and decimals count as numbers;
* **NULL and NaN are treated as 0**;
* dates, times and timestamps compare by their ISO text; other values by equality;
* with **several acceptable gold tables**, any match passes.

``condition_cols`` (Spider 2.0's per-instance choice of which gold columns must be matched) is
supported as a list of gold column indices.

**Spider (1.0) execution match** -- `spider_match`, the rule of test-suite-sql-eval's ``result_eq`` that
Spider's EX is computed with -- is stricter and different: the two tables must have the same number of
rows and columns; some permutation of the predicted columns must make the tables equal as *bags of
rows* (as *lists* of rows when the order matters, i.e. when the gold query orders); cells are equal as
Python values are (``1 == 1.0``, ``'1' != 1``, NULL equals only NULL); two empty tables match whatever
their widths; and, as the reference's quick rejection does first, the rows with their cells sorted by
``str(x) + str(type(x))`` must agree as sets (lists when ordered) -- which makes ``(1, 1.5)`` and
``(1.0, 1.5)`` different rows, as test-suite-sql-eval says. `result_signature` is a digest of a table that two tables
share exactly when they match under that rule, so that many attempts' results can be clustered by hashing (peer ops).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

ABS_TOL = 1e-2

Table = Sequence[Sequence[Any]]  # rows of values


def normalize(value: Any) -> Any:
    """A cell as the comparison sees it: NULL/NaN → 0, decimals and booleans → float, temporal
    values → ISO text, bytes → text."""
    if value is None:
        return 0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        return 0 if math.isnan(value) else value
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return normalize(value.item())
    return value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _sort_key(v: Any) -> tuple:
    # numbers before text, numbers by value (so tolerance survives sorting), the rest by text
    return (0, float(v), "") if _is_number(v) else (1, 0.0, str(v))


def values_equal(a: Any, b: Any, tol: float = ABS_TOL) -> bool:
    a, b = normalize(a), normalize(b)
    if _is_number(a) and _is_number(b):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=tol)
    return a == b


def columns_match(
    gold: Sequence[Any], pred: Sequence[Any], *, ignore_order: bool = False, tol: float = ABS_TOL
) -> bool:
    """Whether one gold column equals one predicted column (see the module docstring)."""
    if len(gold) != len(pred):
        return False
    g = [normalize(v) for v in gold]
    p = [normalize(v) for v in pred]
    if ignore_order:
        g.sort(key=_sort_key)
        p.sort(key=_sort_key)
    return all(values_equal(a, b, tol) for a, b in zip(g, p))


def _columns(rows: Table, width: int | None = None) -> list[list[Any]]:
    n = width if width is not None else (len(rows[0]) if rows else 0)
    return [[r[j] for r in rows] for j in range(n)]


def tables_match(
    pred: Table,
    gold: Table,
    *,
    ignore_order: bool = False,
    condition_cols: Sequence[int] | None = None,
    tol: float = ABS_TOL,
    pred_width: int | None = None,
    gold_width: int | None = None,
) -> bool:
    """Whether the predicted rows match the gold rows. Widths (column counts) are needed only
    for empty tables, where rows cannot tell them: an empty gold with width w matches an empty
    prediction with at least one column (every gold column is an empty column)."""
    gold_cols = _columns(gold, gold_width)
    if condition_cols:
        gold_cols = [gold_cols[i] for i in condition_cols]
    pred_cols = _columns(pred, pred_width)
    if not gold_cols:  # a gold with no columns: only an equally empty prediction matches
        return not pred_cols and len(pred) == len(gold)
    return all(any(columns_match(g, p, ignore_order=ignore_order, tol=tol) for p in pred_cols) for g in gold_cols)


def matches_any(
    pred: Table,
    golds: Sequence[Table],
    *,
    ignore_order: bool = False,
    tol: float = ABS_TOL,
    pred_width: int | None = None,
    gold_widths: Sequence[int | None] | None = None,
    condition_cols: Sequence[Sequence[int] | None] | None = None,
) -> bool:
    """Several acceptable gold tables: the prediction passes when it matches any of them."""
    widths = list(gold_widths) if gold_widths is not None else [None] * len(golds)
    conds = list(condition_cols) if condition_cols is not None else [None] * len(golds)
    return any(
        tables_match(pred, g, ignore_order=ignore_order, tol=tol, pred_width=pred_width, gold_width=w, condition_cols=c)
        for g, w, c in zip(golds, widths, conds)
    )


# --------------------------------------------------------------------------- Spider (1.0) execution match

MAX_TIE_ORDERS = 720  # column orders tried among columns of equal content before a signature settles


def cell_token(value: Any) -> tuple:
    """A cell as Spider's match compares it, in a form that sorts and hashes: numbers equal when
    Python says they are (``1 == 1.0``; booleans are numbers), text, bytes and NULL kept apart."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value):
            return (4, "nan")
        if value.is_integer() and abs(value) < 2**53:
            return (1, int(value))
        return (1, value)
    if isinstance(value, int):
        return (1, value)
    if isinstance(value, (bytes, bytearray)):
        return (3, bytes(value))
    if isinstance(value, str):
        return (2, value)
    return (5, repr(value))


def _token_rows(rows: Table) -> list[tuple[tuple, ...]]:
    return [tuple(cell_token(v) for v in r) for r in rows]


def _unordered_row(row: Sequence[Any]) -> tuple:
    """A row's cells sorted as test-suite-sql-eval's quick rejection sorts them (by ``str(x) + str(type(x))``),
    then as cell tokens (:func:`cell_token`). The order depends on the cells' types: ``(1, 1.5)`` sorts to
    ``(1.5, 1)`` (``'1.5<class…'`` < ``'1<class…'``) but ``(1.0, 1.5)`` stays, so the reference grader
    calls those two rows different although they are equal cell by cell."""
    return tuple(cell_token(v) for v in sorted(row, key=lambda x: str(x) + str(type(x))))


def _quick_view(rows: Table, ordered: bool) -> Any:
    """What the reference's quick rejection compares: the rows' unordered forms, as a list when the order
    matters, else as a set."""
    u = [_unordered_row(r) for r in rows]
    return u if ordered else frozenset(u)


def spider_match(pred: Table, gold: Table, *, order_matters: bool = False) -> bool:
    """Spider's execution match (test-suite-sql-eval ``result_eq``; see the module docstring), including
    its quick rejection (:func:`_unordered_row`), so that a row mixing ints and floats is judged as the
    reference judges it."""
    if not gold and not pred:
        return True
    if len(gold) != len(pred):
        return False
    g, p = _token_rows(gold), _token_rows(pred)
    width = len(g[0])
    if any(len(r) != width for r in p):
        return False
    if _quick_view(gold, order_matters) != _quick_view(pred, order_matters):
        return False
    gcols = [Counter(r[i] for r in g) for i in range(width)]
    pcols = [Counter(r[j] for r in p) for j in range(width)]
    options = [[j for j in range(width) if pcols[j] == gcols[i]] for i in range(width)]
    if any(not o for o in options):
        return False
    target = g if order_matters else Counter(g)

    def assign(i: int, used: list[int]) -> bool:
        if i == width:
            perm = [tuple(r[j] for j in used) for r in p]
            return perm == target if order_matters else Counter(perm) == target
        return any(assign(i + 1, used + [j]) for j in options[i] if j not in used)

    return assign(0, [])


def result_signature(rows: Table, *, ordered: bool = False) -> str:
    """A digest two tables share exactly when `spider_match` says they match (``ordered`` =
    ``order_matters``). Columns are put in a canonical order (by their sorted content; among columns
    of equal content, the order giving the smallest table) before the rows are hashed, sorted unless
    ``ordered``. Past :data:`MAX_TIE_ORDERS` orders of equal-content columns the first is used."""
    if not rows:
        return "empty"
    t = _token_rows(rows)
    width = len(t[0])
    keys = [tuple(sorted(r[j] for r in t)) for j in range(width)]
    order = sorted(range(width), key=lambda j: keys[j])
    groups: list[list[int]] = []
    for j in order:
        if groups and keys[groups[-1][0]] == keys[j]:
            groups[-1].append(j)
        else:
            groups.append([j])
    n_orders = math.prod(math.factorial(len(gr)) for gr in groups)

    def table(cols: Sequence[int]) -> tuple:
        body = [tuple(r[j] for j in cols) for r in t]
        return tuple(body) if ordered else tuple(sorted(body))

    if n_orders == 1 or n_orders > MAX_TIE_ORDERS:
        best = table(order)
    else:
        best = min(
            table([j for perm in combo for j in perm])
            for combo in itertools.product(*(itertools.permutations(gr) for gr in groups))
        )
    quick = _quick_view(rows, ordered)
    quick = tuple(quick) if ordered else tuple(sorted(quick))
    return hashlib.sha256(repr((width, best, quick)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


__all__ = [
    "ABS_TOL",
    "cell_token",
    "columns_match",
    "matches_any",
    "normalize",
    "result_signature",
    "spider_match",
    "tables_match",
    "values_equal",
]
