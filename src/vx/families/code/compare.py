"""evalplus's output comparison, reimplemented to run in the parent on plain data.

This mirrors ``evalplus.eval.unsafe_execute`` (evalplus 0.3.1) rule by rule, so that labels
computed by vx agree with evalplus's verdicts:

* an output matches when ``out == expected`` -- types matter: a tuple never equals a list;
* floats: when the task has no tolerance (``atol == 0``) but an expected value is a float or a
  non-empty list/tuple of floats, the tolerance becomes 1e-6 -- and, as in evalplus, it *stays*
  1e-6 for the later inputs of the same run (the base and the plus inputs are separate runs);
* with a tolerance, an output that is not exactly equal must have the expected value's type (and
  length, for sequences) and be ``numpy.allclose(out, expected, rtol=1e-7, atol=atol)``;
* special oracles: for MBPP+ ``are_equivalent`` (any output), ``sum_div`` (0 accepted),
  ``surface_Area`` and ``digit_distance_nums`` (alternative readings of the spec), set equality
  for 8 tasks, "is not None" for 3 tasks; for HumanEval+ ``find_zero`` (``|poly(xs, out)| <= atol``).

The parent never sees a candidate's objects, only decoded data (see groundtruth), so an object
whose ``__eq__`` always answers True cannot fool this comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

# Mirrors evalplus.eval._special_oracle (0.3.1).
MBPP_OUTPUT_NOT_NONE_TASKS = ("check_str", "text_match_three", "text_starta_endb")
MBPP_OUTPUT_SET_EQ_TASKS = (
    "similar_elements",
    "find_char_long",
    "common_in_nested_lists",
    "extract_singly",
    "larg_nnum",
    "intersection_array",
    "find_dissimilar",
    "Diff",
)


def _surface_area(base_edge: float, height: float) -> int:
    slant = math.sqrt((base_edge / 2) ** 2 + height**2)
    return round(base_edge**2 + 4 * (base_edge * slant) / 2)


def _digit_distance_nums(a: int, b: int) -> int:
    sa, sb = str(a), str(b)
    width = max(len(sa), len(sb))
    return sum(abs(int(x) - int(y)) for x, y in zip(sa.zfill(width), sb.zfill(width)))


def _poly(xs: Sequence[float], x: float) -> float:
    return sum(coeff * math.pow(x, i) for i, coeff in enumerate(xs))


def is_floats(value: Any) -> bool:
    """evalplus's test: a float, or a non-empty list/tuple of floats, or a float numpy array."""
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(v, float) for v in value)
    if isinstance(value, np.ndarray):
        return value.dtype in (np.float64, np.float32)
    return False


@attrs.frozen
class Outcome:
    """One input's comparison: ok, and when not ok, why (for reports)."""

    ok: bool
    reason: str = ""


class Comparator:
    """Compares one run's outputs in order, carrying evalplus's sticky float tolerance.

    Make one per (candidate, input set): ``Comparator("mbpp+", "f", atol)``, then call
    :meth:`check` for each input in order.
    """

    def __init__(self, dataset: str, entry_point: str, atol: float) -> None:
        self.dataset = dataset
        self.entry_point = entry_point
        self.atol = float(atol)

    def check(self, inputs: Sequence[Any], out: Any, expected: Any, out_type: str | None = None) -> Outcome:
        """Compare one output. `out_type` is the name of the type the candidate really returned,
        when `out` is a plain-data reduction of it (e.g. "float64" reported as a float)."""
        try:
            return self._check(inputs, out, expected, out_type or type(out).__name__)
        except Exception as exc:  # a comparison that raises fails the input, as in evalplus
            return Outcome(False, f"comparison raised {type(exc).__name__}: {exc}")

    def _check(self, inputs: Sequence[Any], out: Any, expected: Any, out_type: str) -> Outcome:
        exact = bool(out == expected)
        entry = self.entry_point
        if self.dataset == "mbpp+":
            if entry == "are_equivalent":
                exact = True
            elif entry == "sum_div":
                exact = exact or out == 0
            elif entry == "surface_Area":
                exact = exact or abs(out - _surface_area(*inputs)) <= self.atol
            elif entry == "digit_distance_nums":
                exact = exact or out == _digit_distance_nums(*inputs)
            elif entry in MBPP_OUTPUT_SET_EQ_TASKS:
                exact = set(out) == set(expected)
            elif entry in MBPP_OUTPUT_NOT_NONE_TASKS:
                exact = out == expected if isinstance(out, bool) else expected == (out is not None)
        if self.dataset == "humaneval+" and entry == "find_zero":
            value = abs(_poly(inputs[0], out))  # find_zero(xs)
            if value <= self.atol:
                return Outcome(True)
            return Outcome(False, f"|poly(xs, {out!r})| = {value:.3g} > atol {self.atol}")
        if self.atol == 0 and is_floats(expected):
            self.atol = 1e-6  # sticky for the rest of the run, as in evalplus
        if not exact and self.atol != 0:
            if type(out) is not type(expected) or out_type != type(expected).__name__:
                return Outcome(False, f"expected a {type(expected).__name__}, got a {out_type}")
            if isinstance(expected, (list, tuple)) and len(out) != len(expected):
                return Outcome(False, f"expected length {len(expected)}, got {len(out)}")
            if not np.allclose(out, expected, rtol=1e-07, atol=self.atol):
                return Outcome(False, f"{_short(out)} is not close to {_short(expected)} (atol {self.atol})")
            return Outcome(True)
        if exact:
            return Outcome(True)
        return Outcome(False, f"returned {_short(out)}, expected {_short(expected)}")


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
