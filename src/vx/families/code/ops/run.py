"""The shared sandboxed run of a candidate over its probes (``ctx["exec"]``).

The code family's exec ops share one sandbox run per item: the first exec op that needs it runs
every probe call of the candidate in one sandboxed process (:func:`execution`) and leaves the
result in ``ctx["exec"]``. Probes are the visible example calls and type-preserving mutations of
them (:mod:`vx.families.code.ops.probe`). Expected values stay in the parent; every comparison
happens there.
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vx.families.code.ops.artifact import Artifact, artifact_of
from vx.families.code.ops.probe import PEER_CLASSES, Probe, probes_for
from vx.families.code.ops.values import _a, _clip
from vx.ops.core import Context, Result, abstain, drawback

EXAMPLE_CALL_TIMEOUT = 2.0  # seconds per in-domain probe call (the examples are small)
EDGE_CALL_TIMEOUT = 1.0  # seconds per edge-class probe call
RUN_TIMEOUT = 4.0  # the whole sandboxed run of one candidate (start-up, load, every probe)
PEER_CALL_TIMEOUT = 1.0  # seconds per generated / model-test probe call
PEER_RUN_BUDGET = 6.0  # extra seconds for a run that includes the peer ops' probes
PEER_TIMEOUTS_STOP = 2  # a run ends after this many timeouts (on peer probes; one on a seed probe counts once)
#: Why a run's peer probes were not run: it timed out on a visible example (which `timeout` reports)
#: or spent the seed probes' budget timing out on them. Probing such a candidate further would cost
#: up to the whole peer budget (most of the quick start's run time went there) for timeouts.
SKIPPED_PEER_PROBES = "the run timed out on a seed probe, so the generated probes were not run"
EXEC_OP_TIMEOUT = 60.0  # the op-level limit for exec ops (the first one pays for the run)

_sandbox_lock = threading.Lock()
_sandbox_instance: Any = None


def sandbox() -> Any:
    """The process-wide sandbox (layer detection runs once per process)."""
    global _sandbox_instance
    with _sandbox_lock:
        if _sandbox_instance is None:
            from vx.sandbox import Sandbox, SandboxConfig

            _sandbox_instance = Sandbox(SandboxConfig(per_call_timeout=EXAMPLE_CALL_TIMEOUT,
                                                      total_timeout=RUN_TIMEOUT))
        return _sandbox_instance


@attrs.frozen(eq=False)
class Execution:
    """One sandboxed run of a candidate over its probes: ``ctx["exec"]``.

    ``calls[i]`` is the sandbox's CallOutcome for ``probes[i]``. ``load`` is "ok", "error"
    (module-level code raised), "timeout" (loading never finished), "died" (the process died
    while loading) or "sabotaged": the sandboxed run reports that the code does not compile or
    defines no entry point, although vx compiled it and found the function before running it --
    the candidate deleted or rebound its entry point at load time, or forged the report.
    """

    probes: tuple[Probe, ...]
    calls: tuple[Any, ...]
    report: Any
    load: str
    load_message: str = ""

    @property
    def loaded(self) -> bool:
        return self.load == "ok"

    def pairs(self, *classes: str) -> list[tuple[Probe, Any]]:
        """(probe, outcome) of the calls that ran, optionally only of some probe classes."""
        return [(p, c) for p, c in zip(self.probes, self.calls)
                if c.status != "not_run" and (not classes or p.klass in classes)]

    def in_domain(self) -> list[tuple[Probe, Any]]:
        return [(p, c) for p, c in self.pairs() if p.in_domain]


def _load_state(report: Any, art: Artifact) -> tuple[str, str]:
    status = report.status
    ran = any(c.status != "not_run" for c in report.calls)
    line = f" (line {report.load_error_line})" if report.load_error_line else ""
    if status == "load_error":
        return "error", f"loading the code raised {report.load_error}{line}"
    if status in ("syntax_error", "no_entry_point"):
        # vx only runs code that it compiled and in which it found the function: a run that says
        # otherwise was sabotaged by the candidate (issue 15: evidence against it, not a reason
        # to abstain)
        where = f" (line {art.function.lineno})" if art.function is not None else ""
        what = ("found no callable " + str(art.name) if status == "no_entry_point"
                else "reported that it does not compile")
        return "sabotaged", (f"sabotaged harness: the code defines {art.name}{where}, but when it ran the "
                             f"sandbox {what} ({report.load_error or status}): the candidate deleted or rebound "
                             "its entry point while loading, or forged the sandbox's report")
    if status == "timeout" and not ran:
        return "timeout", f"loading the code did not finish: {report.detail or 'deadline passed'}"
    if status == "crashed" and not ran:
        return "died", f"the process died while loading the code: {report.detail or 'no report'}"
    return "ok", ""


#: Sandbox runs already made in this process, by (code, entry point, probe set): an item's run is
#: computed once and reused by every op, inducer and the failure classifier that asks for it
#: (evolution asks again every round). Forked workers inherit what the parent has.
RUN_MEMO_SIZE = 4096
_runs: OrderedDict[tuple[str, str, str], Execution] = OrderedDict()
_runs_lock = threading.Lock()


def run_probes(task: Mapping[str, Any], art: Artifact, probes: list[Probe]) -> Execution:
    """Run every probe of one candidate in one sandboxed process (once per process and probe set)."""
    peer = [p.klass in PEER_CLASSES for p in probes]
    timeouts = [PEER_CALL_TIMEOUT if is_peer else EXAMPLE_CALL_TIMEOUT if p.in_domain else EDGE_CALL_TIMEOUT
                for p, is_peer in zip(probes, peer)]
    key = (art.source, art.name, repr([(p.klass, p.args) for p in probes]) + repr(timeouts))
    with _runs_lock:
        found = _runs.get(key)
        if found is not None:
            _runs.move_to_end(key)
            return found
    # Fresh argument objects per call: objects shared between calls in the parent would stay
    # shared in the child (marshal keeps references), so one call's mutation would leak into another.
    calls = [(copy.deepcopy(list(p.args)), {}) for p in probes]
    timed_out: list[int] = []
    base_timeouts: list[int] = []
    last_base = max((i for i, is_peer in enumerate(peer) if not is_peer), default=-1)

    started = time.monotonic()

    def stop(i: int, outcome: Any) -> bool:
        if outcome.status == "timeout":
            (timed_out if peer[i] else base_timeouts).append(i)
        if not peer[i] and base_timeouts:
            # a candidate that loops on a visible example (what `timeout` reports) gets no peer
            # probes (SKIPPED_PEER_PROBES); one that loops on a seed probe gets no more than the seed
            # probes' own budget before them
            if i == last_base and any(probes[k].in_domain for k in base_timeouts):
                return True
            return time.monotonic() - started > RUN_TIMEOUT
        # one that loops on the peer probes would eat the whole budget: two strikes end the run (a
        # timeout on a seed probe is the first)
        return len(timed_out) + min(1, len(base_timeouts)) >= PEER_TIMEOUTS_STOP

    total = RUN_TIMEOUT + (PEER_RUN_BUDGET if any(peer) else 0.0)
    report = sandbox().run_calls(art.source, art.name, calls, timeouts=timeouts, total_timeout=total,
                                 args_after=True, stop=stop if any(peer) else None)
    load, message = _load_state(report, art)
    result = Execution(tuple(probes), tuple(report.calls), report, load, message)
    with _runs_lock:
        _runs[key] = result
        while len(_runs) > RUN_MEMO_SIZE:
            _runs.popitem(last=False)
    return result


def execution(task: Mapping[str, Any], output: Any, ctx: Context) -> tuple[Execution | None, str]:
    """The item's shared execution (computed once, by the first exec op that asks), or
    (None, why not) when there is nothing to run."""
    cached = ctx.get("exec")
    if isinstance(cached, Execution):
        return cached, ""
    if isinstance(cached, tuple):  # (None, reason) or a recorded sandbox failure
        if isinstance(cached[0], BaseException):
            raise cached[0]
        return None, cached[1]
    art = artifact_of(task, output, ctx)
    if art.function is None:
        result: tuple[Execution | None, str] = (None, "the root failed: " + (art.problem or "no entry point"))
    else:
        probes = probes_for(task)
        if not probes:
            result = (None, "the task shows no usable example call")
        else:
            try:
                result = (run_probes(task, art, probes), "")
            except Exception as exc:  # the sandbox itself failed: every exec op reports it once
                ctx["exec"] = (exc, "")
                raise
    ctx["exec"] = result[0] if result[0] is not None else result
    return result


def judges_the_run(body: Callable[..., Result] | None = None, *,
                   applies: Callable[[Mapping[str, Any], Execution], bool] | None = None) -> Any:
    """Make an exec op out of ``body(task, output, ctx, run)``, which reads the shared run.

    The rule of issue 15: anything the candidate did that prevents judging is evidence against it.
    So the op abstains only when it has no opinion on this kind of task (nothing to run: the root
    failed or the task shows no example; or ``applies(task, run)`` is false, e.g. no call takes a
    list for ``mutates_argument``). A run the candidate kept from loading -- sabotaged (the entry
    point gone, a forged load report), raising, dying or hanging at load -- is a drawback of every
    exec op, and so is any exception raised while the op reads the candidate's results (a value vx
    cannot render, a report it cannot compare). An op whose calls all failed to give it something
    to check says so as a drawback too (in its body). Failures of the sandbox itself still
    raise (they are vx's, not the candidate's: the op errs and the evaluation reports it)."""

    def make(body: Callable[..., Result]) -> Callable[..., Result]:
        @functools.wraps(body)
        def op_fn(task: Mapping[str, Any], output: Any, ctx: Context) -> Result:
            run, why = execution(task, output, ctx)
            if run is None:
                return abstain(why)
            if applies is not None and not applies(task, run):
                return abstain("no opinion on this kind of task")
            if run.load != "ok":  # sabotaged, or the code raised, died or hung while loading
                return drawback(run.load_message if run.load == "sabotaged"
                                else f"the code cannot run: {run.load_message}")
            try:
                return body(task, output, ctx, run)
            except Exception as exc:  # reading what the candidate produced failed
                return drawback(f"sabotaged harness: the candidate's results cannot be judged "
                                f"({type(exc).__name__}: {_clip(str(exc), 100)})")

        return op_fn

    return make(body) if body is not None else make


def _what(p: Probe) -> str:
    return "the visible example" if p.klass in ("example", "repeat") else p.detail


def _failure_text(call: Any) -> str:
    if call.status == "exception":
        return f"raised {call.exc_type}: {_clip(call.exc_message or '', 100)}".rstrip(": ")
    if call.status == "timeout":
        return f"did not return ({call.exc_message or 'timed out'})"
    if call.status == "crashed":
        return "killed its process (os._exit, a signal or the memory limit)"
    if call.status == "unserializable":
        return f"returned {_a(str(call.type_name))} object, which is not plain data ({call.exc_message})"
    return call.status


