"""What the multi-turn ops read from an item: the task's user turns and offered functions, the trajectory
(the root's artifact) and its replay on the backends (shared by the item's exec ops).

A multi-turn task record (one line of tasks.jsonl; never the ground-truth calls)::

    {"id": "multi_turn_base_1", "category": "multi_turn_base",
     "turns": [[{"role": "user", "content": "..."}], ...],
     "involved_classes": ["GorillaFileSystem"], "initial_config": {...},
     "functions": [{"name": "cd", ...}, ...], "held_out": {"2": ["mv"]}}

The root ``reads_trajectory`` stores the :class:`~vx.families.tools.trajectory.Trajectory` in
``ctx["artifact"]``; the first exec op that needs the replay runs it (:func:`replayed`) and leaves it in
``ctx["replay"]``. Where BFCL's backends are not installed, :func:`replayed` raises
:class:`NotReplayed`, which the exec ops turn into a drawback naming what to install: never an
abstention that would let an unreplayed trajectory pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from vx.families.tools import backends, replay, trajectory
from vx.families.tools.replay import Replay, ReplayUnavailable
from vx.families.tools.trajectory import Trajectory, TrajectoryError, read_trajectory
from vx.ops.core import Context, Result, clean, drawback, op

DEPENDS = (__name__, trajectory, replay, backends, "vx.families.tools.decode")
#: Seconds an exec op may take (the first one pays for the replay).
EXEC_OP_TIMEOUT = 180.0


class NotReplayed(Exception):
    """The trajectory cannot be replayed here (the message says why and what to install)."""


def user_turns(task: Mapping[str, Any]) -> list[str]:
    """The user's words per turn (an empty string for a turn with no user message)."""
    out = []
    for turn in task.get("turns") or ():
        msgs = turn if isinstance(turn, list) else [turn]
        out.append(
            "\n".join(
                str(m.get("content", ""))
                for m in msgs
                if isinstance(m, Mapping) and m.get("role", "user") == "user" and isinstance(m.get("content"), str)
            )
        )
    return out


def held_out(task: Mapping[str, Any]) -> dict[int, set[str]]:
    """Functions held out until a turn (``{turn: names}``)."""
    out: dict[int, set[str]] = {}
    for at, names in (task.get("held_out") or {}).items():
        try:
            out[int(at)] = {str(n) for n in names}
        except (TypeError, ValueError):
            continue
    return out


def offered_at(task: Mapping[str, Any], turn: int) -> set[str]:
    """The names of the functions offered at ``turn`` (a held-out one from its turn on)."""
    names = {str(d.get("name")) for d in task.get("functions") or () if isinstance(d, Mapping)}
    for at, held in held_out(task).items():
        if turn < at:
            names -= held
    return names


def reoffer_turns(task: Mapping[str, Any]) -> set[int]:
    """Turns in which held-out functions are offered again (their user message is BFCL's notice)."""
    return set(held_out(task))


def trajectory_of(task: Mapping[str, Any], output: Any, ctx: Context) -> Trajectory:
    """The item's trajectory: the root's artifact, else read now (raises TrajectoryError)."""
    found = ctx.get("artifact")
    if isinstance(found, Trajectory):
        return found
    traj = read_trajectory(output)
    ctx["artifact"] = traj
    return traj


def replayed(task: Mapping[str, Any], output: Any, ctx: Context) -> Replay:
    """The item's replay, run once per item (``ctx["replay"]``); raises :class:`NotReplayed`."""
    found = ctx.get("replay")
    if isinstance(found, Replay):
        return found
    if isinstance(found, NotReplayed):
        raise found
    try:
        rep = replay.replay(task, trajectory_of(task, output, ctx))
    except ReplayUnavailable as exc:
        err = NotReplayed(f"not replayed: {exc}")
        ctx["replay"] = err
        raise err from None
    ctx["replay"] = rep
    return rep


def with_replay(fn: Callable[[Mapping[str, Any], Trajectory, Replay, Context], Any]) -> Callable:
    """An exec op body on (task, trajectory, replay, ctx): an unreadable output leaves the verdict to the
    root (abstain), an unreplayable one is a drawback naming what is missing."""

    def run(task: Mapping[str, Any], output: Any, ctx: Context) -> Any:
        try:
            traj = trajectory_of(task, output, ctx)
        except TrajectoryError:
            return None
        try:
            rep = replayed(task, output, ctx)
        except NotReplayed as exc:
            return drawback(str(exc))
        return fn(task, traj, rep, ctx)

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    run.__wrapped__ = fn  # type: ignore[attr-defined]
    return run


@op(root=True, tier="static", detects="unreadable", depends=DEPENDS)
def reads_trajectory(task, output, ctx) -> Result:
    """The output is a trajectory of tool calls with one entry per user turn."""
    try:
        traj = trajectory_of(task, output, ctx)
    except TrajectoryError as exc:
        return drawback(str(exc))
    n = len(task.get("turns") or ())
    if n and len(traj.turns) != n:
        return drawback(f"the trajectory has {len(traj.turns)} turn(s) for {n} user turn(s): it stopped early")
    return clean(f"{traj.n_calls} call(s) over {len(traj.turns)} turn(s)")


_WORD = re.compile(r"[A-Za-z0-9_.@#'$-]+")


def words(text: str) -> set[str]:
    """Lower-case tokens of a text (for grounding values in what the user said)."""
    return {w.strip(".'").lower() for w in _WORD.findall(text) if w.strip(".'")}


__all__ = [
    "DEPENDS",
    "EXEC_OP_TIMEOUT",
    "NotReplayed",
    "held_out",
    "offered_at",
    "reads_trajectory",
    "reoffer_turns",
    "replayed",
    "trajectory_of",
    "user_turns",
    "with_replay",
    "words",
]
