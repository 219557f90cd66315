"""The multi-turn pack's closed failure taxonomy and its classifier.

``state_mismatch`` (a state the other attempts' plurality does not reach) and ``state_check`` (an end state
that fails the task's evaluator-first checks) are two classes: the first is any difference, the second a
difference in what the task's words name, so one's clean verdict says nothing of the other's drawback (the
objective's consensus votes within a class).

A failing trajectory's class is BFCL's failure class when the builder kept it (``meta["error_type"]``:
the state differs, a result was never shown, a turn went silent), else what the output itself shows (it
is no trajectory, or it stops before the last user turn), else None (evolution then clusters by which
ops fire).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vx.families.tools.trajectory import TrajectoryError, read_trajectory

#: Closed taxonomy of failure classes of multi-turn trajectories (clusters for synthesis).
TAXONOMY = (
    "unreadable",
    "stopped_early",
    "silent_turn",
    "unhandled_error",
    "unoffered_call",
    "guessed_value",
    "state_mismatch",
    "state_check",
    "missing_result",
)

#: BFCL's error types -> the taxonomy.
BFCL_CLASSES = {
    "inference_error": "unreadable",
    "force_terminated": "stopped_early",
    "empty_turn_model_response": "silent_turn",
    "instance_state_mismatch": "state_mismatch",
    "execution_response_mismatch": "missing_result",
}


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """A failing trajectory's class (see the module docstring)."""
    found = BFCL_CLASSES.get(str((meta or {}).get("error_type") or "").removeprefix("multi_turn:"))
    if found:
        return found
    try:
        traj = read_trajectory(output)
    except TrajectoryError:
        return "unreadable"
    turns = task.get("turns")
    if isinstance(turns, list) and turns and len(traj.turns) != len(turns):
        return "stopped_early"
    return None


__all__ = ["BFCL_CLASSES", "TAXONOMY", "classify_failure"]
