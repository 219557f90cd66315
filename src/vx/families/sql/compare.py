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
"""

from __future__ import annotations

import datetime as dt
import math
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


def columns_match(gold: Sequence[Any], pred: Sequence[Any], *, ignore_order: bool = False,
                  tol: float = ABS_TOL) -> bool:
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


def tables_match(pred: Table, gold: Table, *, ignore_order: bool = False,
                 condition_cols: Sequence[int] | None = None, tol: float = ABS_TOL,
                 pred_width: int | None = None, gold_width: int | None = None) -> bool:
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


def matches_any(pred: Table, golds: Sequence[Table], *, ignore_order: bool = False, tol: float = ABS_TOL,
                pred_width: int | None = None, gold_widths: Sequence[int | None] | None = None,
                condition_cols: Sequence[Sequence[int] | None] | None = None) -> bool:
    """Several acceptable gold tables: the prediction passes when it matches any of them."""
    widths = list(gold_widths) if gold_widths is not None else [None] * len(golds)
    conds = list(condition_cols) if condition_cols is not None else [None] * len(golds)
    return any(tables_match(pred, g, ignore_order=ignore_order, tol=tol, pred_width=pred_width,
                            gold_width=w, condition_cols=c) for g, w, c in zip(golds, widths, conds))


__all__ = ["ABS_TOL", "columns_match", "matches_any", "normalize", "tables_match", "values_equal"]
