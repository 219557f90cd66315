"""The shared sandboxed run of a candidate over its probes (``ctx["exec"]``), under the budgets of
:mod:`vx.families.code.probes.budgets`.

The code family's exec ops share one sandbox run per item: the first exec op that needs it runs
every probe call of the candidate in one sandboxed process (:func:`execution`) and leaves the
result in ``ctx["exec"]``. Probes are the visible example calls and type-preserving mutations of
them (:mod:`vx.families.code.probes.probe`). Expected values stay in the parent; every comparison
happens there.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vx.families.code.compare import Comparator
from vx.families.code.ops.artifact import Artifact, artifact_of
from vx.families.code.ops.values import _a, _clip, _loose_equal
from vx.families.code.probes import budgets as limits
from vx.families.code.probes.budgets import Budgets, run_budgets, seeded
from vx.families.code.probes.probe import LATE_CLASSES, PEER_CLASSES, Probe, probes_for
from vx.memo import MISSING, IdentityMemo, Memo, size_of
from vx.ops.core import Context, Result, abstain, drawback

EXEC_OP_TIMEOUT = 60.0  # the op-level limit for exec ops (the first one pays for the run)

#: A run stops after this many calls out of time (on peer probes; one on a seed probe counts once).
TIMEOUT_STRIKES = 2
#: Why a run's peer probes were not run: it timed out on a visible example (which `timeout` reports),
#: so its verdicts are settled; probing it further would only cost budgets for timeouts.
SKIPPED_PEER_PROBES = "the run timed out on a seed probe, so the generated probes were not run"

#: Parent memory (MiB, the sandbox's decode estimate) the values of one run's calls may take together: a
#: call returning more comes back "unserializable" (``SandboxConfig.max_run_decode_mb``). Measured on real
#: attempts (docs/hostile.md): half of the runs take under 0.15 MiB, the largest of a correct attempt 43 MiB
#: (an MBPP+ ``combinations_colors`` whose large probe returns every combination), the largest of any 80 MiB
#: (a wrong CodeT attempt that grows its argument on every call).
RUN_DECODE_MB = 256

_sandbox_lock = threading.Lock()
_sandbox_instance: Any = None


def sandbox() -> Any:
    """The process-wide sandbox (layer detection runs once per process)."""
    global _sandbox_instance
    with _sandbox_lock:
        if _sandbox_instance is None:
            from vx.sandbox import Sandbox, SandboxConfig

            _sandbox_instance = Sandbox(
                SandboxConfig(
                    per_call_timeout=limits.EXAMPLE_CPU, load_timeout=limits.LOAD_CPU, max_run_decode_mb=RUN_DECODE_MB
                )
            )
        return _sandbox_instance


def example_comparator(task: Mapping[str, Any]) -> Comparator:
    """evalplus's comparison for the task's visible examples (its special oracles are keyed by its own
    function names: MBPP+ renamed a few, ``meta.evalplus_entry_point``)."""
    found = task.get("meta")
    meta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    dataset = str(task.get("dataset") or "")
    if not dataset:
        tid = str(task.get("id", ""))
        dataset = "mbpp+" if tid.startswith("Mbpp/") else ("humaneval+" if tid.startswith("HumanEval") else "")
    entry = str(meta.get("evalplus_entry_point") or task.get("entry_point") or "")
    return Comparator(dataset, entry, float(task.get("atol") or 0.0))


def fails_example(compare: Comparator, p: Probe, outcome: Any) -> bool:
    """Whether a visible example call's outcome misses its expected value (``fails_visible_example``'s
    rule: types lost in JSON do not count)."""
    if outcome.status != "ok":
        return True
    if compare.check(p.args, outcome.value, p.expected).ok:
        return False
    return p.exact_types or not _loose_equal(outcome.value, p.expected, False)


#: A run stopped for its CPU budget (:data:`.budgets.RUN_CPU`) with probes left unrun was *starved* by the
#: candidate -- evidence against it (probes it prevented from running are no abstention) --
#: when at least this share of the budget went on the candidate's own choices on the calls its visible
#: examples show (the example, repeat and permuted classes): calls that returned within their budgets (a
#: burn under the example budget), and the part of a timed-out call's budget its own pace on the examples
#: bought (above vx's fixed floor). A correct program uses a few ms per example call (docs/timelimits.md:
#: 6.9 ms at most on CodeT and MBPP+). CPU spent on probes the examples do not show never counts: a correct
#: but slow program spends its budget there (HumanEval/75's canonical solution on large drawn inputs).
STARVE_SHARE = 0.5


class StopRule:
    """When a run's verdicts are settled, or its budget is spent (the sandbox's ``stop`` callback, called
    as each call's report arrives): a call on a visible example out of time (``timeout`` fires; nothing
    later changes that, and an endless loop would only cost more budgets: :data:`SKIPPED_PEER_PROBES`);
    :data:`TIMEOUT_STRIKES` calls out of time, counting peer probes each and the other seed probes once
    (so a candidate that loops on the ``large`` seed probes still meets the peer probes); more than
    :data:`.budgets.RUN_CPU` spent by the calls outside the seed pool (:data:`.budgets.SEED_CPU`, which the
    sandbox enforces itself by skipping the pool's later calls); or, given the `task`, a visible example
    missed its expected value (compared in the parent: the child never sees it) by the time the drawn probes
    (:data:`.probe.LATE_CLASSES`, run last) begin -- the verdict is settled, and they are most of the calls.

    After the run, ``reason`` says why it stopped ("" when it did not: "settled", "example_timeout",
    "strikes", "spent") and ``own`` how much CPU the candidate spent by its own choice (see
    :data:`STARVE_SHARE`); :attr:`starved` whether the candidate starved its own probes."""

    def __init__(
        self, probes: list[Probe], task: Mapping[str, Any] | None = None, budgets: Budgets | None = None
    ) -> None:
        self.probes = probes
        self.floors = [None if b.reference else b.cpu for b in budgets.calls] if budgets is not None else None
        self.late = next((i for i, p in enumerate(probes) if p.klass in LATE_CLASSES), None)
        self.seeded = [seeded(p) for p in probes]
        self.compare = example_comparator(task) if task is not None and self.late is not None else None
        self.spent = self.own = self.seed_spent = 0.0
        self.peer_timeouts = self.seed_timeouts = 0
        self.failed = False
        self.reason = ""
        self.at = -1

    @property
    def starved(self) -> bool:
        return self.reason == "spent" and self.own >= STARVE_SHARE * limits.RUN_CPU and self.at + 1 < len(self.probes)

    def _stop(self, i: int, reason: str) -> bool:
        self.reason, self.at = reason, i
        return True

    def __call__(self, i: int, outcome: Any) -> bool:
        cpu = outcome.cpu or 0.0
        p = self.probes[i]
        if self.seeded[i]:
            self.seed_spent += cpu  # the seed pool's: the sandbox skips the rest of them past SEED_CPU
        else:
            self.spent += cpu
        if not p.in_domain:
            pass  # a probe the examples do not show: a correct slow program may spend its budget there
        elif outcome.status != "timeout":
            self.own += cpu
        elif self.floors is not None and i < len(self.floors) and (floor := self.floors[i]) is not None:
            self.own += max(0.0, cpu - floor)  # the part of its budget its own pace bought
        if self.compare is not None and p.klass == "example" and not self.failed:
            try:
                self.failed = fails_example(self.compare, p, outcome)
            except Exception:  # a value the comparison cannot read: fails_visible_example judges it
                self.failed = True
        if self.failed and self.late is not None and i + 1 >= self.late:
            return self._stop(i, "settled")  # it fails a visible example; the drawn probes would only cost calls
        if outcome.status == "timeout":
            if p.in_domain:
                return self._stop(i, "example_timeout")
            if p.klass in PEER_CLASSES:
                self.peer_timeouts += 1
            else:
                self.seed_timeouts += 1
            if self.peer_timeouts + min(1, self.seed_timeouts) >= TIMEOUT_STRIKES:
                return self._stop(i, "strikes")
        if self.spent > limits.RUN_CPU:
            return self._stop(i, "spent")
        return False


def stop_rule(probes: list[Probe], task: Mapping[str, Any] | None = None, budgets: Budgets | None = None) -> StopRule:
    """The run's early stop (:class:`StopRule`)."""
    return StopRule(probes, task, budgets)


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
    #: The candidate starved its own probes (:attr:`StopRule.starved`): "" or what it spent.
    starved: str = ""

    @property
    def loaded(self) -> bool:
        return self.load == "ok"

    def pairs(self, *classes: str) -> list[tuple[Probe, Any]]:
        """(probe, outcome) of the calls that ran, optionally only of some probe classes."""
        return [
            (p, c)
            for p, c in zip(self.probes, self.calls)
            if c.status != "not_run" and (not classes or p.klass in classes)
        ]

    def in_domain(self) -> list[tuple[Probe, Any]]:
        return [(p, c) for p, c in self.pairs() if p.in_domain]

    def ended(self) -> tuple[int, str] | None:
        """(index, what happened) when the *candidate* ended its run early: its process died on a call
        (``os._exit``, a signal it sent itself, the memory limit: "crashed"), or it swallowed a
        timeout's interruption so that the sandbox killed it (the run "timeout", not stopped by
        :func:`stop_rule`). None when the run ended normally or vx's stop rule ended it -- probes
        left unrun then say nothing against the candidate; after a candidate's own ending they do.
        Spending the run's CPU budget by its own choice (:data:`STARVE_SHARE`) is such an ending too."""
        for i, c in enumerate(self.calls):
            if c.status == "crashed":
                return i, f"{self.probes[i].call} killed its process (os._exit, a signal or the memory limit)"
        if getattr(self.report, "status", "") == "timeout" and not getattr(self.report, "stopped", False):
            last = [i for i, c in enumerate(self.calls) if c.status == "timeout"]
            if last and any(c.status == "not_run" for c in self.calls[last[-1] + 1 :]):
                i = last[-1]
                return (
                    i,
                    f"{self.probes[i].call} did not return and would not be interrupted, so its process was killed",
                )
        if self.starved:
            ran = [i for i, c in enumerate(self.calls) if c.status != "not_run"]
            if ran and ran[-1] + 1 < len(self.calls):
                return ran[-1], self.starved
        return None


def _load_state(report: Any, art: Artifact) -> tuple[str, str]:
    status = report.status
    ran = any(c.status != "not_run" for c in report.calls)
    line = f" (line {report.load_error_line})" if report.load_error_line else ""
    if status == "load_error":
        return "error", f"loading the code raised {report.load_error}{line}"
    if status in ("syntax_error", "no_entry_point"):
        # vx only runs code that it compiled and in which it found the function: a run that says
        # otherwise was sabotaged by the candidate (evidence against it, not a reason to abstain)
        where = f" (line {art.function.lineno})" if art.function is not None else ""
        what = (
            "found no callable " + str(art.name) if status == "no_entry_point" else "reported that it does not compile"
        )
        return "sabotaged", (
            f"sabotaged harness: the code defines {art.name}{where}, but when it ran the "
            f"sandbox {what} ({report.load_error or status}): the candidate deleted or rebound "
            "its entry point while loading, or forged the sandbox's report"
        )
    if status == "timeout" and not ran:
        return "timeout", f"loading the code did not finish: {report.detail or 'deadline passed'}"
    if status == "crashed" and not ran:
        return "died", f"the process died while loading the code: {report.detail or 'no report'}"
    return "ok", ""


#: Argument types whose change by a call the exec ops check (``mutates_argument``, the ``no_mutation``
#: invariant): the run asks for the arguments after a call only where one of these is passed.
MUTABLE = (list, dict, set, bytearray)


#: Sandbox runs already made in this process: an item's run is computed once and reused by every op,
#: inducer and the failure classifier that asks for it (evolution asks again every round; forked workers
#: inherit what the parent has). Keyed by the candidate's code and entry point and by the digest of
#: everything the run and the ops' reading of it depend on (:func:`_plan`: the probes with their expected
#: values, the budgets, the example comparison), never by a task id: two task records that share an id but
#: not their examples get runs of their own. Bounded in entries and in bytes (the run's decoded results,
#: :func:`vx.memo.size_of`): a run whose results take more than :data:`RUN_MEMO_ENTRY_BYTES` is not kept
#: (a candidate returning ``list(range(200000))`` from every call would otherwise keep ~400 MB here).
RUN_MEMO_SIZE = 4096
RUN_MEMO_BYTES = 64 << 20
RUN_MEMO_ENTRY_BYTES = 4 << 20
_runs = Memo(RUN_MEMO_SIZE, RUN_MEMO_BYTES, RUN_MEMO_ENTRY_BYTES)
_runs_lock = threading.Lock()


#: Per task's probe objects: (their budgets, the digest of what a run over them depends on, their calls
#: prepared for the sandbox with the arguments asked back where a call passes a :data:`MUTABLE`) -- the
#: same for every attempt at the task, so computed once per task and process (:func:`_plan`).
_plans = IdentityMemo(RUN_MEMO_SIZE, RUN_MEMO_BYTES)


def _comparison(task: Mapping[str, Any]) -> tuple[str, str, float]:
    """What of the task record the stop rule's example comparison reads (:func:`example_comparator`)."""
    c = example_comparator(task)
    return c.dataset, c.entry_point, c.atol


def _plan(task: Mapping[str, Any], probes: list[Probe]) -> tuple[Budgets, str, Any]:
    """The budgets of ``probes``, the digest of what a run over them depends on (every probe's class,
    function, arguments, expected value and whether its types are exact, and the budgets) and their calls
    (``Sandbox.prepare_calls``; the arguments come back only from calls passing a :data:`MUTABLE`: no op
    reads the others'), reused while the same probe objects come back (``probes_for`` returns a task's
    cached probes to every attempt)."""
    with _runs_lock:
        hit = _plans.get(*probes)
    if hit is not MISSING:
        return hit
    budgets = run_budgets(task, probes, sandbox().config.wall_for)
    text = repr([(p.klass, p.function, p.args, p.expected, p.exact_types) for p in probes]) + repr(budgets)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    after = tuple(any(isinstance(a, MUTABLE) for a in p.args) for p in probes)
    # The probes' own argument objects, copied once: the request is marshalled without object references
    # (serialize.MARSHAL_VERSION), so every call gets fresh objects in the child and no call's mutation
    # reaches another.
    calls = sandbox().prepare_calls([(list(p.args), {}) for p in probes], args_after=after)
    plan = (budgets, digest, calls)
    with _runs_lock:
        # the probes are held (and counted) by the memo; the prepared copies take about their marshal size
        # twice over (the copies and the bytes)
        _plans.put(plan, *probes, size=3 * len(calls.blob) + 1024)
    return plan


def run_probes(task: Mapping[str, Any], art: Artifact, probes: list[Probe]) -> Execution:
    """Run every probe of one candidate in one sandboxed process (once per process, code and what the run
    depends on: :func:`_plan`), with the budgets of :func:`run_budgets`, stopped early by :func:`stop_rule`."""
    budgets, digest, calls = _plan(task, probes)
    key = (art.source, art.name, digest, _comparison(task))
    found = _runs.get(key)
    if found is not MISSING:
        return found
    report = sandbox().run_calls(
        art.source,
        art.name,
        calls,
        timeouts=budgets.calls,
        total_timeout=budgets.wall,
        cpu_limit=budgets.cpu_limit,
        load_timeout=limits.LOAD_CPU,
        pools=budgets.pools,
        stop=(rule := stop_rule(probes, task, budgets)),
    )
    load, message = _load_state(report, art)
    starved = ""
    if rule.starved and getattr(report, "stopped", False):
        shown = sum(c.cpu or 0.0 for p, c in zip(probes, report.calls) if p.in_domain and c.status != "not_run")
        starved = (
            f"it used the run's CPU budget of {limits.RUN_CPU:g} s ({rule.spent:.2f} s; {shown:.2f} s of it on the "
            f"visible examples and their repeats) before its other probes"
        )
    result = Execution(tuple(probes), tuple(report.calls), report, load, message, starved)
    # what keeping it costs: the candidate's results (values, arguments after, printed text), its source
    size = size_of(report.calls, RUN_MEMO_ENTRY_BYTES) + 2 * len(art.source) + 512
    return _runs.put(key, result, size)


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


def judges_the_run(
    body: Callable[..., Result] | None = None, *, applies: Callable[[Mapping[str, Any], Execution], bool] | None = None
) -> Any:
    """Make an exec op out of ``body(task, output, ctx, run)``, which reads the shared run.

    The rule (docs/design.md §11): anything the candidate did that prevents judging is evidence against it.
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
                return drawback(
                    run.load_message if run.load == "sabotaged" else f"the code cannot run: {run.load_message}"
                )
            try:
                return body(task, output, ctx, run)
            except Exception as exc:  # reading what the candidate produced failed
                return drawback(
                    f"sabotaged harness: the candidate's results cannot be judged "
                    f"({type(exc).__name__}: {_clip(str(exc), 100)})"
                )

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
