"""Answers normalised against the offered docs, so that equal answers compare equal.

Two correct answers to one question often differ in form: one spells out an optional parameter at its
documented default and the other leaves it out; one writes ``5`` and the other ``5.0``; one writes
``"New York"`` and the other ``"new york"``; parallel calls come in any order. A normalised answer
removes those differences:

* a call's arguments are compared as values -- numbers as numbers (``5 == 5.0``; a boolean is not a
  number), strings as BFCL's checker compares them (case, spaces and ``,./-_*^`` ignored), lists
  element by element, dicts key by key;
* an optional argument at its documented default, or ``None``, is the same as leaving it out (the docs
  say what an omitted parameter means);
* the calls of an answer are a multiset (their order does not count);
* a name the docs offer is the docs' spelling (``math_factorial`` is ``math.factorial``).

:func:`normal_answer` gives an answer's normal form as plain data (a peer op's observation),
:func:`answer_key` a string equal for equal normal forms. Nothing here reads a possible answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.families.tools.decode import Call, Decoded
from vx.families.tools.dialect import Function, Param, standard_string

__all__ = [
    "NO_CALL",
    "UNREADABLE",
    "NormalCall",
    "answer_key",
    "normal_answer",
    "normal_call",
    "normal_value",
]

NO_CALL = "<no call>"
UNREADABLE = "<unreadable>"


def normal_value(value: Any, param: Param | None = None) -> Any:
    """A value in its comparable form (see the module docstring); JSON-able."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        v = float(value)
        if not math.isfinite(v):
            return str(v)
        return int(v) if v.is_integer() and abs(v) < 2**53 else v
    if isinstance(value, str):
        return standard_string(value)
    items = param.items if param is not None else None
    if isinstance(value, (list, tuple)):
        return [normal_value(v, items) for v in value]
    if isinstance(value, Mapping):
        props = param.properties if param is not None else {}
        return {str(k): normal_value(v, props.get(str(k))) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return repr(value)


@attrs.frozen
class NormalCall:
    """A call in normal form: the function, the arguments that count (optional ones at their defaults
    dropped), and which of them the docs require."""

    name: str
    args: Mapping[str, Any]
    required: tuple[str, ...] = ()
    offered: bool = True

    def key(self) -> str:
        return json.dumps([self.name, self.args], sort_keys=True, ensure_ascii=False)

    def to_data(self) -> list[Any]:
        return [self.name, dict(self.args), list(self.required), self.offered]

    @classmethod
    def from_data(cls, data: Sequence[Any]) -> NormalCall:
        name, args, required, offered = data
        return cls(str(name), dict(args), tuple(required), bool(offered))


def _at_default(value: Any, param: Param) -> bool:
    if value is None:
        return True
    if not param.has_default:
        return False
    return normal_value(value, param) == normal_value(param.default, param)


def normal_call(call: Call, fn: Function | None) -> NormalCall:
    """A call in normal form against its function's docs (None: a function not offered; its arguments
    are kept as written, compared as values)."""
    if fn is None:
        return NormalCall(call.name, {k: normal_value(v) for k, v in call.args.items()}, (), False)
    args: dict[str, Any] = {}
    for name, value in call.args.items():
        param = fn.params.get(name)
        if param is not None and name not in fn.required and _at_default(value, param):
            continue
        args[name] = normal_value(value, param)
    return NormalCall(fn.name, args, tuple(p for p in fn.required if p in args), True)


def normal_answer(decoded: Decoded, offered: Mapping[str, Function]) -> dict[str, Any]:
    """An answer's normal form as plain data: ``{"status": "calls" | "no_call" | "unreadable",
    "calls": [normal calls, sorted]}``."""
    if not decoded.ok:
        return {"status": "unreadable", "calls": []}
    if not decoded.calls:
        return {"status": "no_call", "calls": []}
    calls = [normal_call(c, offered.get(c.name) if c.offered else None) for c in decoded.calls]
    calls.sort(key=NormalCall.key)
    return {"status": "calls", "calls": [c.to_data() for c in calls]}


def answer_key(normal: Mapping[str, Any]) -> str:
    """A string equal for equal normal forms: the multiset of normal calls, or NO_CALL / UNREADABLE."""
    status = normal.get("status")
    if status == "unreadable":
        return UNREADABLE
    if status != "calls":
        return NO_CALL
    return json.dumps([NormalCall.from_data(c).key() for c in normal.get("calls", ())], ensure_ascii=False)
