"""The tools family's closed failure taxonomy and the evidence classifier (the first static op that
fires on an answer names its class)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vx.families.tools.ops import question as Q
from vx.families.tools.ops import static as S

#: Closed taxonomy of failure classes of single-turn answers (clusters for synthesis).
TAXONOMY = (
    "unreadable",
    "format",
    "unknown_function",
    "missing_argument",
    "unknown_argument",
    "wrong_type",
    "wrong_value",
    "ungrounded_value",
    "irrelevant_call",
    "no_call",
    "wrong_count",
    "wrong_call",
)

#: The static ops in the order they classify a failure.
_ORDER = (
    S.decodes,
    S.unknown_function,
    S.missing_required,
    S.unknown_parameter,
    S.wrong_type,
    S.outside_enum,
    Q.no_function_fits,
    Q.missed_enumerated,
    Q.ungrounded_value,
)


def classify_by_evidence(task: Mapping[str, Any], output: Any) -> str:
    """A failing answer's class: ``unreadable`` when it cannot be read, ``format`` when its calls are in a
    form the answer format does not take, else the class of the first static op that fires, else
    ``wrong_call`` (a call that is well formed but not the right one: a wrong value, function or count)."""
    from vx.families.tools.ops.artifact import answer_of
    from vx.ops.core import Context

    ctx = Context()
    decoded = answer_of(task, output, ctx).decoded
    if decoded.error:
        return "unreadable"
    if S.format_problem(decoded):
        return "format"
    for o in _ORDER:
        res = o(task, output, ctx)
        if int(res.verdict) == 1:
            return o.detects
    return "wrong_call"


__all__ = ["TAXONOMY", "classify_by_evidence"]
