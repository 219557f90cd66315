"""A multi-turn agent's output, read as data: per user turn, the steps of tool calls it made.

An output is a list with one entry per user turn; a turn is a list of *steps* (one model message
each); a step is a list of calls, each ``{function_name: arguments}`` with the arguments a JSON
object (as text, as function-calling APIs return them, or already parsed). An empty step is a
message in plain text (the agent answered or asked instead of calling). This is the shape of
BFCL's multi-turn results (``output`` in the shared data).

Nothing here runs anything. :func:`read_trajectory` checks the shape and bounds every part (turns,
calls, name length, argument size, depth and values); what cannot be read at all raises
:class:`TrajectoryError` (the family's root reports it). Each step is read by the family's one
decoder (:func:`vx.families.tools.decode.decode`). A call whose arguments are unreadable is kept with
its ``problem``: as in BFCL's executor, a step holding such a call runs none of its calls
(``drops_step``), and a call whose arguments cannot be passed as keywords (a key that is not a Python
name, a value that is not finite) is refused where BFCL's would fail.
"""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from vx.errors import VxError
from vx.families.tools.decode import decode

#: Bounds of what is replayed (far above BFCL's trajectories: at most 32 calls, arguments < 4 KiB).
MAX_TURNS = 50
MAX_CALLS = 200
MAX_STEPS = 400
MAX_NAME = 100
MAX_ARG_CHARS = 64 * 1024
MAX_ARG_DEPTH = 10
MAX_ARG_ITEMS = 10_000
#: Characters of an unreadable output quoted in a message.
QUOTE = 200


class TrajectoryError(VxError):
    """An output that is not a trajectory of tool calls (the message says what was found)."""


def quote(text: Any, limit: int = QUOTE) -> str:
    """Text (or a value's repr) cut for a message, control characters escaped."""
    t = text if isinstance(text, str) else repr(text)
    t = t.encode("unicode_escape", "backslashreplace").decode("ascii") if not t.isprintable() else t
    return t if len(t) <= limit else t[: limit - 1] + "…"


@attrs.frozen
class Call:
    """One tool call: a function name and its keyword arguments (None when unreadable)."""

    name: str
    args: dict[str, Any] | None
    #: why the call cannot run as given ("" when it can)
    problem: str = ""
    #: the arguments are not a JSON object at all: BFCL's decoder drops the whole step
    drops_step: bool = False

    def render(self, limit: int = 120) -> str:
        """``name(key=value, ...)`` for messages (values as JSON, cut)."""
        if self.args is None:
            return f"{quote(self.name, 60)}(<{self.problem}>)"
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in self.args.items())
        return quote(f"{self.name}({inner})", limit)


@attrs.frozen
class Trajectory:
    """The calls of an output, per turn and step."""

    turns: tuple[tuple[tuple[Call, ...], ...], ...]

    def calls(self) -> Iterator[tuple[int, int, Call]]:
        """Every call with its turn and step index, in order."""
        for t, turn in enumerate(self.turns):
            for s, step in enumerate(turn):
                for c in step:
                    yield t, s, c

    @property
    def n_calls(self) -> int:
        return sum(len(step) for turn in self.turns for step in turn)

    def turn_calls(self, t: int) -> list[Call]:
        return [c for step in self.turns[t] for c in step]


def _check_value(value: Any, depth: int, budget: list[int]) -> str:
    """'' when a JSON value is within bounds and finite, else why not."""
    budget[0] -= 1
    if budget[0] < 0:
        return f"more than {MAX_ARG_ITEMS} values"
    if depth > MAX_ARG_DEPTH:
        return f"nested deeper than {MAX_ARG_DEPTH}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"a non-finite number ({value})"
    if isinstance(value, list):
        for v in value:
            if why := _check_value(v, depth + 1, budget):
                return why
    elif isinstance(value, dict):
        for k, v in value.items():
            if why := _check_value(k, depth + 1, budget) or _check_value(v, depth + 1, budget):
                return why
    return ""


def checked_call(name: str, args: Mapping[str, Any]) -> Call:
    """A decoded call with the checks replay needs: a bounded name, bounded finite values, argument
    names that can be passed as keywords."""
    shown = name if len(name) <= MAX_NAME else name[:MAX_NAME]
    args = dict(args)
    if len(json.dumps(args, ensure_ascii=False, default=str)) > MAX_ARG_CHARS:
        return Call(shown, None, f"arguments longer than {MAX_ARG_CHARS} characters", True)
    if len(name) > MAX_NAME:
        return Call(shown, args, f"a function name longer than {MAX_NAME} characters", False)
    if why := _check_value(args, 0, [MAX_ARG_ITEMS]):
        return Call(name, args, f"arguments with {why}", False)
    bad = [k for k in args if not (isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k))]
    if bad:
        return Call(name, args, f"an argument name that is not a Python name: {quote(bad[0], 40)}", False)
    return Call(name, args)


def read_call(name: Any, raw: Any) -> Call:
    """One ``{name: arguments}`` entry as a :class:`Call`, read by the family's decoder (never raises for
    bad arguments: a call that cannot be read keeps the decoder's reason and drops its step)."""
    if not isinstance(name, str):
        raise TrajectoryError(f"a call's function name is {type(name).__name__}, not text")
    return read_step([{name: raw}])[0]


def read_step(entries: Sequence[Mapping[str, Any]]) -> tuple[Call, ...]:
    """One step's calls, read by :func:`vx.families.tools.decode.decode` (the family's one decoder): a step
    it cannot read runs none of its calls (BFCL's decoder drops it too), each kept with the reason."""
    for entry in entries:
        for v in entry.values():
            why = ""
            if isinstance(v, str) and len(v) > MAX_ARG_CHARS:
                why = f"arguments longer than {MAX_ARG_CHARS} characters"
            elif isinstance(v, str):
                try:  # BFCL's decoder reads the text with json.loads: "" (no arguments written) is not JSON
                    json.loads(v)
                except (ValueError, RecursionError):
                    why = f"arguments that are not JSON: {quote(v, 80) or 'an empty text'}"
            if why:
                return tuple(Call(quote(str(k), MAX_NAME), None, why, True) for e in entries for k in e)
    decoded = decode(list(entries))
    if decoded.error:
        return tuple(Call(quote(str(k), MAX_NAME), None, decoded.error, True) for e in entries for k in e)
    return tuple(checked_call(c.written or c.name, c.args) for c in decoded.calls)


def read_trajectory(output: Any) -> Trajectory:
    """An output as a :class:`Trajectory`; raises :class:`TrajectoryError` for what is no trajectory
    (a string: an inference error; wrong nesting; past the bounds)."""
    if isinstance(output, str):
        text = output.strip()
        if text.startswith("["):
            try:
                return read_trajectory(json.loads(text))
            except (ValueError, RecursionError):
                pass
        raise TrajectoryError(f"the output is text, not a trajectory of tool calls: {quote(text)}")
    if not isinstance(output, (list, tuple)):
        raise TrajectoryError(f"the output is a {type(output).__name__}, not a list of turns")
    if len(output) > MAX_TURNS:
        raise TrajectoryError(f"the output has {len(output)} turns (at most {MAX_TURNS} are read)")
    turns = []
    n_calls = n_steps = 0
    for t, turn in enumerate(output):
        if not isinstance(turn, (list, tuple)):
            raise TrajectoryError(f"turn {t + 1} is a {type(turn).__name__}, not a list of steps")
        steps = []
        for s, step in enumerate(turn):
            n_steps += 1
            if n_steps > MAX_STEPS:
                raise TrajectoryError(f"the output has more than {MAX_STEPS} steps")
            if isinstance(step, Mapping):  # a step of one call, written without its list
                step = [step]
            if not isinstance(step, (list, tuple)):
                raise TrajectoryError(f"turn {t + 1}, step {s + 1} is a {type(step).__name__}, not a list of calls")
            for entry in step:
                if not isinstance(entry, Mapping):
                    raise TrajectoryError(
                        f"turn {t + 1}, step {s + 1} holds a {type(entry).__name__}, not a {{name: arguments}} call"
                    )
                if any(not isinstance(name, str) for name in entry):
                    raise TrajectoryError(f"turn {t + 1}, step {s + 1} names a function with something other than text")
                n_calls += len(entry)
                if n_calls > MAX_CALLS:
                    raise TrajectoryError(f"the output makes more than {MAX_CALLS} calls (not replayed)")
            steps.append(read_step(step))
        turns.append(tuple(steps))
    return Trajectory(tuple(turns))
