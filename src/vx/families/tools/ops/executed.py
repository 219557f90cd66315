"""Multi-turn ops that read a trajectory's replay (never the ground-truth calls).

* ``silent_turn`` -- a user turn that asks for something sees no call, and nothing excuses it;
* ``unhandled_error`` -- a call that could not run (refused, or raised in the backend) was never
  followed by a working call of the same function;
* ``unoffered_call`` -- a call to a function the task had not offered yet (held out until a later turn);
* ``guessed_value`` -- a call changed the state with a value the user had not given, and the agent
  later redid it with the value the user gave in a later turn (it guessed where it should have asked).

Each op's false alarms on correct trajectories were measured per BFCL category on the train split's
labels (docs/tools.md): where a rule could not stay under 1% it abstains instead (``silent_turn`` on a
silent turn the agent may have spent asking for a missing value).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from vx.families.tools.ops.turns import DEPENDS as TURN_DEPENDS
from vx.families.tools.ops.turns import EXEC_OP_TIMEOUT, held_out, offered_at, user_turns, with_replay
from vx.families.tools.replay import CallOutcome
from vx.families.tools.trajectory import Trajectory
from vx.ops.core import abstain, clean, drawback, op

DEPENDS = (__name__, *TURN_DEPENDS)

#: A silent turn is excused (the op abstains) when the agent acts in the next turn and that next user turn
#: is a short follow-up (at most this many words: "The folder name is 'backup_tests'.") or supplies a value
#: the agent then uses. Chosen on the train split's labels: with 25, no correct trajectory of any BFCL
#: category is flagged; with 20, 3.6% of the correct miss_param ones are.
FOLLOW_UP_WORDS = 25


def acted(traj: Trajectory, turn: int) -> bool:
    """Whether the agent made a readable call in ``turn``."""
    return turn < len(traj.turns) and any(not c.drops_step for step in traj.turns[turn] for c in step)


def leaves(value: Any) -> Iterator[Any]:
    """The scalar values inside an argument (strings and numbers; booleans and None left out)."""
    if isinstance(value, Mapping):
        for v in value.values():
            yield from leaves(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from leaves(v)
    elif value is not None and not isinstance(value, bool):
        yield value


def norm(value: Any) -> str:
    """A value as the user might have written it: lower case, ``_``/``-``/spaces as one space, no ``@``/``#``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return re.sub(r"[\s_\-]+", " ", str(value).strip().lower().lstrip("@#")).strip()


def supplied(task: Mapping[str, Any], traj: Trajectory, turn: int) -> bool:
    """The agent acted in ``turn + 1`` with a value the user first wrote in that turn (it was told what was
    missing)."""
    said = user_turns(task)
    if turn + 1 >= len(traj.turns) or turn + 1 >= len(said):
        return False
    before = norm(" ".join(said[: turn + 1]))
    now = norm(said[turn + 1])
    for step in traj.turns[turn + 1]:
        for c in step:
            for v in leaves(c.args or {}):
                n = norm(v)
                if len(n) >= 2 and n in now and n not in before:
                    return True
    return False


@op(tier="exec", detects="silent_turn", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@with_replay
def silent_turn(task, traj, rep, ctx):
    """A user turn asks for something and the agent makes no call in it, with nothing to excuse it."""
    said = user_turns(task)
    reoffered = held_out(task)
    excused = []
    for k in range(len(traj.turns)):
        if k >= len(said) or not said[k].strip() or acted(traj, k):
            continue
        if (k + 1) in reoffered:  # the function it needed is held out until the next turn: right to say so
            continue
        follow_up = k + 1 < len(said) and 0 < len(said[k + 1].split()) <= FOLLOW_UP_WORDS
        if acted(traj, k + 1) and (follow_up or supplied(task, traj, k)):
            excused.append(k + 1)
            continue
        return drawback(f"turn {k + 1} asks {_quote_turn(said[k])} and the agent makes no call in it")
    if excused:
        return abstain(
            f"no call in turn {excused[0]}, but the next user turn answers what was missing and the agent acts "
            "on it: it may have asked"
        )
    return clean("the agent calls something in every turn that asks for something")


def _quote_turn(text: str, limit: int = 80) -> str:
    t = " ".join(text.split())
    return repr(t if len(t) <= limit else t[: limit - 1] + "…")


def failure(c: CallOutcome) -> str:
    """'refused' or 'exception' for a call that could not run, '' otherwise (a backend's own error
    message is an answer, not a failure to run)."""
    if c.outcome in ("refused", "timeout", "crashed"):
        return "refused"
    if c.outcome == "error":
        return "exception"
    return ""


def backend_error(c: CallOutcome) -> bool:
    """The backend answered with an error object (``{"error": ...}``)."""
    if c.outcome != "ok":
        return False
    try:
        value = json.loads(c.result)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


def base_name(name: str) -> str:
    """A function name without what a model's template glued to it (``cat<|channel|>commentary`` → ``cat``)."""
    m = re.match(r"[A-Za-z0-9_]+", name)
    return m.group(0) if m else name


@op(tier="exec", detects="unhandled_error", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@with_replay
def unhandled_error(task, traj, rep, ctx):
    """A call could not run (refused, or the backend raised) and no later call of that function worked."""
    calls = [c for c in rep.calls if c.outcome != "dropped"]
    for i, c in enumerate(calls):
        kind = failure(c)
        if not kind:
            continue
        name = base_name(c.call.name)
        if any(base_name(d.call.name) == name and not failure(d) for d in calls[i + 1 :]):
            continue
        return drawback(f"turn {c.turn + 1}: {c.call.render(80)} {_why(c)}, and it was never called again to work")
    return clean("every call that failed to run was followed by a working call of the same function")


def _why(c: CallOutcome) -> str:
    if c.outcome == "refused":
        return f"was not run ({c.result[:100]})"
    if c.outcome == "timeout":
        return "ran out of time"
    return f"raised: {c.result.removeprefix('Error during execution: ')[:100]}"


@op(tier="exec", detects="unoffered_call", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@with_replay
def unoffered_call(task, traj, rep, ctx):
    """The agent called a function the task had not offered yet (held out until a later turn)."""
    if not held_out(task):
        return clean("the task holds no function back")
    for c in rep.calls:
        if c.outcome in ("ok", "error") and c.call.name not in offered_at(task, c.turn):
            later = [t for t, names in held_out(task).items() if c.call.name in names]
            when = f" (offered from turn {later[0] + 1})" if later else ""
            return drawback(f"turn {c.turn + 1}: {c.call.render(80)} calls a function not offered yet{when}")
    return clean("every call is to a function offered at its turn")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


@op(tier="exec", detects="guessed_value", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@with_replay
def guessed_value(task, traj, rep, ctx):
    """The agent changed the state with a value the user had not given, then redid the call with the value
    the user gave in a later turn: it guessed where it should have asked."""
    said = user_turns(task)
    initial = norm(" ".join(_strings(task.get("initial_config") or {})))
    calls = [c for c in rep.calls if c.call.args is not None and c.outcome in ("ok", "error")]
    for i, c in enumerate(calls):
        if not c.changed:
            continue
        before = norm(" ".join(said[: c.turn + 1]))
        for param, x in c.call.args.items():
            if isinstance(x, bool) or not isinstance(x, (str, int, float)):
                continue
            guess = norm(x)
            if not guess or guess in before or guess in initial:
                continue
            for d in calls[i + 1 :]:
                if d.turn <= c.turn or d.call.name != c.call.name or d.call.args is None:
                    continue
                given = d.call.args.get(param)
                if given is None or norm(given) == guess:
                    continue
                if norm(given) in norm(" ".join(said[c.turn + 1 : d.turn + 1])) and norm(given) not in before:
                    return drawback(
                        f"turn {c.turn + 1}: {c.call.name} with {param}={json.dumps(x)[:60]}, a value the user never "
                        f"gave; in turn {d.turn + 1} the user gives {json.dumps(given)[:60]} and the agent redoes it"
                    )
    return clean("no state change rests on a value the user gave only later")


EXECUTED_OPS = (silent_turn, unhandled_error, unoffered_call, guessed_value)

__all__ = [
    "EXECUTED_OPS",
    "FOLLOW_UP_WORDS",
    "acted",
    "backend_error",
    "base_name",
    "guessed_value",
    "silent_turn",
    "unhandled_error",
    "unoffered_call",
]
