"""Replaying a multi-turn trajectory on fresh instances of BFCL's backends, safely and bounded.

:func:`replay` takes a task (its involved backend classes and their initial state) and a
:class:`~vx.families.tools.trajectory.Trajectory`, and returns a :class:`Replay`: per call its
outcome and result, per turn the backends' state after it. It never evaluates text: a call is run
only when its name is a public method of the task's involved classes (:mod:`.backends` reads them
from the classes' source) and its arguments are a bounded JSON object; anything else -- a name such
as ``__import__('os').system`` or ``_load_scenario``, arguments past the bounds -- is *refused*, with
a message, and never reaches a backend.

The calls run in one sandboxed child per trajectory (:mod:`vx.sandbox`, the same isolation model
code is run in), whose code is :mod:`.child` and whose import path holds only the backends and
mpmath. Each call has a CPU budget (:data:`CALL_CPU`) and the process a memory limit
(:data:`MEMORY_MB`): a backend method given a hostile value (a math function asked for a billion
digits) is stopped there, its outcome "timeout", and the replay goes on; a child that dies
("crashed") leaves the rest of the trajectory not run, and the replay incomplete.

Semantics follow BFCL's executor (``multi_turn_utils.execute_multi_turn_func_call``), which a test
holds it to on the ground truth and on every shared trajectory: a step holding a call whose
arguments are not a JSON object runs none of its calls (BFCL's decoder drops it); results are
rendered as BFCL renders them (``str`` as is, ``dict`` as JSON, an exception as ``Error during
execution: ...``); a method name two involved classes share goes to the later class. Where vx
departs on purpose: names outside the backends' public methods are refused instead of evaluated
(BFCL would run a builtin such as ``open``), and a timeout or crash is an outcome, not a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.families.tools import backends
from vx.families.tools.trajectory import Call, Trajectory, quote

#: CPU seconds of one backend call (the backends answer in well under a millisecond; a state
#: snapshot of the largest initial states takes a few).
CALL_CPU = 0.5
#: CPU seconds of loading the backends (importing their modules, mpmath included, and their scenario).
LOAD_CPU = 5.0
#: The child's address space.
MEMORY_MB = 768
#: Wall-clock deadline of one whole replay, startup included (a backstop: budgets are CPU time).
TOTAL_WALL = 120.0
#: A call's wall-clock backstop: WALL_FACTOR x its CPU budget + WALL_SLACK seconds. It stops a backend
#: method stuck in C code that never sees the CPU timer's signal (mpmath or Decimal asked for hundreds
#: of millions of digits); the child is then killed and the rest of the trajectory is not run.
WALL_FACTOR = 4.0
WALL_SLACK = 1.0

OUTCOMES = ("ok", "error", "refused", "dropped", "timeout", "crashed", "not_run")
#: Outcomes of calls that did something to the backends (ran to an answer or an exception).
RAN = ("ok", "error")


class ReplayUnavailable(backends.MissingDependency):
    """The backends or the sandbox cannot run here (the message says what to install or fix)."""


@attrs.frozen
class CallOutcome:
    """One call of a replayed trajectory."""

    turn: int
    step: int
    call: Call
    #: ok | error (the backend raised) | refused (never run: why in ``result``) | dropped (its step
    #: held unreadable arguments) | timeout | crashed | not_run (after a crash)
    outcome: str
    #: the result as BFCL renders it, or vx's reason for not running the call
    result: str
    #: the backends' state changed during the call
    changed: bool = False

    @property
    def ran(self) -> bool:
        return self.outcome in RAN

    @property
    def failed(self) -> bool:
        """The call did not do what it asked: it raised, was refused, timed out or crashed."""
        return self.outcome in ("error", "refused", "timeout", "crashed")


@attrs.frozen
class Replay:
    """What replaying a trajectory did."""

    calls: tuple[CallOutcome, ...]
    initial: Mapping[str, Any] = attrs.field(eq=False, repr=False)
    #: the state after each turn (None after the child died)
    states: tuple[Mapping[str, Any] | None, ...] = attrs.field(eq=False, repr=False)
    #: "ok", or "incomplete" (the child died: later calls were not run)
    status: str = "ok"
    detail: str = ""
    #: CPU seconds the child spent on the requests (loading the backends included), as the sandbox measured them
    cpu: float = 0.0

    @property
    def end(self) -> Mapping[str, Any] | None:
        """The backends' state after the last turn."""
        return self.states[-1] if self.states else self.initial

    def turn(self, t: int) -> list[CallOutcome]:
        return [c for c in self.calls if c.turn == t]

    def results_until(self, t: int) -> list[str]:
        """The results of every call that ran in turns 0..t (what BFCL's response check reads)."""
        return [c.result for c in self.calls if c.turn <= t and c.ran]


_sandbox_lock = threading.Lock()
_sandbox: Any = None


def sandbox() -> Any:
    """The process-wide sandbox replays run in (made once: backends staged, layer detected)."""
    global _sandbox
    with _sandbox_lock:
        if _sandbox is None:
            from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

            try:
                path = backends.staged_dir()
                _sandbox = Sandbox(
                    SandboxConfig(
                        memory_mb=MEMORY_MB,
                        per_call_timeout=CALL_CPU,
                        load_timeout=LOAD_CPU,
                        total_timeout=TOTAL_WALL,
                        wall_factor=WALL_FACTOR,
                        wall_slack=WALL_SLACK,
                        import_paths=(path,),
                    )
                )
            except SandboxUnavailable as exc:
                raise ReplayUnavailable(f"the sandbox replays run in is unavailable: {exc}") from exc
        return _sandbox


def _child_code() -> str:
    from importlib import resources

    return resources.files("vx.families.tools").joinpath("child.py").read_text(encoding="utf-8")


def check_call(call: Call, table: Mapping[str, str]) -> str:
    """Why a call must not run ('' when it may): a name outside the involved classes' public methods,
    or arguments that cannot be passed."""
    if call.problem:
        return call.problem
    if call.name.startswith("_") or call.name not in table:
        return f"{quote(call.name, 60)} is not a function of the task's backends"
    return ""


def replay(task: Mapping[str, Any], trajectory: Trajectory) -> Replay:
    """Replay ``trajectory`` on fresh backends loaded with ``task``'s initial state (see the module
    docstring). Raises :class:`ReplayUnavailable` when the backends or the sandbox are missing."""
    why = backends.missing()
    if why is not None:
        raise ReplayUnavailable(why)
    classes = backends.involved(task.get("involved_classes") or ())
    config = task.get("initial_config") or {}
    table = backends.dispatch_table(classes)
    requests: list[tuple[list[Any], dict[str, Any]]] = [(["load", classes, dict(config)], {}), (["state"], {})]
    plan: list[tuple[str, int, int, Call | None]] = []  # (kind, turn, step, call) per request after the first two
    outcomes: list[CallOutcome | None] = []
    for t, turn in enumerate(trajectory.turns):
        for s, step in enumerate(turn):
            dropped = any(c.drops_step for c in step)
            for c in step:
                if dropped:
                    why = c.problem or "its step holds a call whose arguments are not a JSON object"
                    outcomes.append(CallOutcome(t, s, c, "dropped", why))
                    continue
                refused = check_call(c, table)
                if refused:
                    outcomes.append(CallOutcome(t, s, c, "refused", refused))
                    continue
                outcomes.append(None)
                plan.append(("call", t, s, c))
                requests.append((["call", c.name, dict(c.args or {})], {}))
        plan.append(("state", t, -1, None))
        requests.append((["state"], {}))
    budgets = [LOAD_CPU] + [CALL_CPU] * (len(requests) - 1)
    rep = sandbox().run_calls(
        _child_code(),
        "vx_replay",
        requests,
        timeouts=budgets,
        cpu_limit=LOAD_CPU + CALL_CPU * len(requests) + 1,
        args_after=False,
    )
    if rep.status not in ("ok", "crashed", "timeout") or not rep.calls or rep.calls[0].status != "ok":
        first = rep.calls[0] if rep.calls else None
        detail = rep.load_error or rep.detail or (f"{first.exc_type}: {first.exc_message}" if first else rep.status)
        raise ReplayUnavailable(f"the backends could not be loaded in the sandbox ({rep.status}): {detail}")
    initial, last_digest = _snapshot(rep.calls[1])
    initial = initial or {}
    made: list[CallOutcome] = []
    states: list[Mapping[str, Any] | None] = []
    status, detail = "ok", ""
    for (kind, t, s, planned), out in zip(plan, rep.calls[2:], strict=True):
        if kind == "state":
            state, digest = _snapshot(out)
            states.append(state)
            last_digest = digest or last_digest
            continue
        assert planned is not None
        c = planned
        if out.status == "ok" and isinstance(out.value, (list, tuple)) and len(out.value) == 3:
            verdict, result, digest = out.value
            changed = digest != last_digest
            last_digest = digest
            made.append(CallOutcome(t, s, c, "ok" if verdict == "ok" else "error", str(result), changed))
        elif out.status == "timeout":
            made.append(CallOutcome(t, s, c, "timeout", f"vx stopped the call after {CALL_CPU:g} s of CPU", True))
            last_digest = ""  # unknown after an interrupted call
        elif out.status in ("crashed", "not_run"):
            made.append(
                CallOutcome(t, s, c, out.status, out.exc_message or rep.detail or out.status, out.status == "crashed")
            )
            status, detail = "incomplete", rep.detail or "the replay's process died"
        else:
            made.append(CallOutcome(t, s, c, "error", f"{out.exc_type}: {out.exc_message}"))
    it = iter(made)
    calls = tuple(o if o is not None else next(it) for o in outcomes)
    cpu = sum(float(c.cpu or 0.0) for c in rep.calls)
    return Replay(calls, initial, tuple(states), status, detail, cpu)


def _snapshot(out: Any) -> tuple[Mapping[str, Any] | None, str]:
    """A state request's answer: (the state, its digest), or (None, "") when it did not answer."""
    value = out.value if out.status == "ok" else None
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[1], dict):
        return value[1], str(value[0])
    return None, ""


def replay_calls(task: Mapping[str, Any], turns: Sequence[Sequence[Sequence[Call]]]) -> Replay:
    """Replay calls given directly (per turn, per step), e.g. a task's reference calls at build time."""
    return replay(task, Trajectory(tuple(tuple(tuple(step) for step in turn) for turn in turns)))
