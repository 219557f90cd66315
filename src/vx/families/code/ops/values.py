"""Comparing and showing the plain values a candidate returns (in the parent, never in the child)."""

from __future__ import annotations

import math
from typing import Any


def _clip(text: str, n: int = 120) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


def short(value: Any, n: int = 80) -> str:
    """``repr(value)`` clipped to ``n`` characters; values repr() refuses (an int of more than
    4300 digits) are described instead (they come from candidates: showing them must not fail)."""
    try:
        return _clip(repr(value), n)
    except ValueError:
        if isinstance(value, int):
            return f"<an int of {value.bit_length() * 30103 // 100000 + 1} digits>"
        return f"<{type(value).__name__} that cannot be shown>"
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to show>"


def trivial_value(value: Any) -> bool:
    """Values a correct solution plausibly writes as literals (base cases): None, booleans, small
    integers, empty containers, one-character strings."""
    if value is None or isinstance(value, bool):
        return True
    if type(value) in (int, float):
        return -1 <= value <= 2
    if isinstance(value, (str, bytes)):
        return len(value) <= 1
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value) == 0
    return False


def same_value(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (1 != 1.0 != True here; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _loose_equal(a: Any, b: Any, exact: bool) -> bool:
    if exact:
        return same_value(a, b)
    from vx.families.code.examples import (
        jsonable,  # JSON-recovered values: compare JSON forms
    )

    try:
        return jsonable(a) == jsonable(b) and type(jsonable(a)) is type(jsonable(b))
    except Exception:
        return False


_NUMERIC = (bool, int, float, complex)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _a(name: str) -> str:
    """'a list', 'an int'."""
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def type_mismatch(value: Any, expected: Any, exact: bool = True, _depth: int = 0) -> str | None:
    """Why ``value`` can never equal ``expected`` by type (None if the types are compatible).

    Numbers (bool/int/float) are compatible with each other and set with frozenset, as Python's
    ``==`` (and so evalplus) treats them; list and tuple are not (``[1] != (1,)``), unless the
    expected value's exact types are unknown (``exact=False``)."""
    if _depth > 20:
        return None
    if isinstance(value, _NUMERIC) and isinstance(expected, _NUMERIC):
        return None
    if isinstance(value, (set, frozenset)) and isinstance(expected, (set, frozenset)):
        return None
    seq = (list, tuple)
    if not exact and isinstance(value, seq) and isinstance(expected, seq):
        pass
    elif type(value) is not type(expected):
        return f"{_a(_type_name(value))} where the example expects {_a(_type_name(expected))}"
    if isinstance(expected, seq):
        for i, (v, e) in enumerate(zip(value, expected)):
            inner = type_mismatch(v, e, exact, _depth + 1)
            if inner:
                return f"{inner} (at index {i})" if _depth == 0 else inner
            if i >= 50:
                break
    elif isinstance(expected, dict):
        for k in list(expected)[:50]:
            if k in value:
                inner = type_mismatch(value[k], expected[k], exact, _depth + 1)
                if inner:
                    return f"{inner} (at key {k!r})" if _depth == 0 else inner
    return None
