"""The shared sandboxed run of a candidate over its probes (``ctx["exec"]``).

The code family's exec ops share one sandbox run per item: the first exec op that needs it runs
every probe call of the candidate in one sandboxed process (:func:`execution`) and leaves the
result in ``ctx["exec"]``. Probes are the visible example calls and type-preserving mutations of
them (:mod:`vx.families.code.probes.probe`). Expected values stay in the parent; every comparison
happens there.
"""

from __future__ import annotations

import functools
import statistics
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.families.code.compare import Comparator
from vx.families.code.ops.artifact import Artifact, artifact_of
from vx.families.code.ops.values import _a, _clip, _loose_equal
from vx.families.code.probes.probe import DOMAIN_CLASSES, LATE_CLASSES, PEER_CLASSES, Probe, probes_for
from vx.ops.core import Context, Result, abstain, drawback

EXEC_OP_TIMEOUT = 60.0  # the op-level limit for exec ops (the first one pays for the run)

# --------------------------------------------------------------------------- time budgets
# Every limit below is CPU time of the candidate's own process (the sandbox's ITIMER_PROF and
# RLIMIT_CPU), so a busy machine does not turn a correct program into a timeout; wall-clock time only
# backstops code that sleeps or blocks (SandboxConfig.wall_for: 10 x the budget + 2 s). The numbers
# were measured on the labelled CodeT (HumanEval+) and MBPP+ attempts (docs/timelimits.md).

#: CPU seconds of a visible example call, its repeat and its re-orderings (the examples are small).
EXAMPLE_CPU = 0.25
#: Any other probe call: PROBE_CPU per unit of its input's size relative to its example
#: (:func:`size_ratio`), at most PROBE_CPU_CAP ...
PROBE_CPU = 0.05
PROBE_CPU_CAP = 0.1
#: ... or, when more, OWN_FACTOR x the size ratio x the CPU the candidate itself needed on its slowest
#: visible example call (a correct but slow program judged by its own pace), at most OWN_CPU_CAP.
OWN_FACTOR = 20.0
OWN_CPU_CAP = 1.0
#: CPU seconds of the candidate's module-level code.
LOAD_CPU = 2.0
#: CPU seconds of all probe calls of one run together, the seed probes outside the domain aside: past
#: it, the run stops.
RUN_CPU = 1.0
#: CPU seconds the seed probes outside the domain (the empty, single, zero, negative and large classes)
#: may use together, apart from :data:`RUN_CPU`: once they did, the rest of them are skipped. A candidate
#: that runs out of time on every one of them (a timeout there counts once, :data:`TIMEOUT_STRIKES`) thus
#: cannot spend the run's time before the generated probes, which the peer ops and ``crashes_in_domain``
#: read -- however much CPU it takes on the examples to raise its own-pace budgets (the attack in
#: tests/families/code/test_ops_evasion.py).
SEED_CPU = 0.5
#: The sandbox's name of that pool (``CallBudget.pool``).
SEED_POOL = "seed"
#: A run stops after this many calls out of time (on peer probes; one on a seed probe counts once).
TIMEOUT_STRIKES = 2
#: Judged against its peers (:func:`against_peers`), a call is out of time when it used more than
#: PEER_FACTOR x the median CPU of the other attempts that answered the same probe, and more than
#: PEER_FLOOR seconds (timer granularity and interpreter noise are below it).
PEER_FACTOR = 10.0
PEER_FLOOR = 0.05
#: Why a run's peer probes were not run: it timed out on a visible example (which `timeout` reports),
#: so its verdicts are settled; probing it further would only cost budgets for timeouts.
SKIPPED_PEER_PROBES = "the run timed out on a seed probe, so the generated probes were not run"

_sandbox_lock = threading.Lock()
_sandbox_instance: Any = None


def sandbox() -> Any:
    """The process-wide sandbox (layer detection runs once per process)."""
    global _sandbox_instance
    with _sandbox_lock:
        if _sandbox_instance is None:
            from vx.sandbox import Sandbox, SandboxConfig

            _sandbox_instance = Sandbox(SandboxConfig(per_call_timeout=EXAMPLE_CPU, load_timeout=LOAD_CPU))
        return _sandbox_instance


def _size(value: Any, top: bool = True) -> int:
    """How big an argument is, for budgets: an int's magnitude (as a top-level argument: loops run to
    it), a string's length, a container's total size of its elements (scalars inside count 1)."""
    t = type(value)
    if t is int:
        return max(1, min(abs(value), 10**9)) if top else 1
    if t in (str, bytes):
        return max(1, len(value))
    if t in (list, tuple, set, frozenset):
        return max(1, sum(_size(v, False) for v in value))
    if t is dict:
        return max(1, sum(_size(k, False) + _size(v, False) for k, v in value.items()))
    return 1


def size_ratio(probe: Probe, examples: Sequence[Probe]) -> float:
    """How many times larger the probe's input is than the visible example it derives from (a generated
    probe: than the largest visible example, argument by argument): the largest ratio over the
    arguments, at least 1, at most 1000."""
    own = [e for e in examples if e.example == probe.example] if probe.example >= 0 else []
    same = [e for e in (own or examples) if len(e.args) == len(probe.args)]
    if not same:
        return 1.0
    ratios = [_size(a) / max(_size(e.args[i]) for e in same) for i, a in enumerate(probe.args)]
    return float(min(1000.0, max([1.0, *ratios])))


@attrs.frozen
class Budgets:
    """The time limits of one candidate's sandboxed run, decided by :func:`run_budgets` (CPU seconds of
    the candidate's process, except ``wall``)."""

    calls: tuple[Any, ...]  # one vx.sandbox.CallBudget per probe
    run_cpu: float  # all calls together (the seed pool's aside): the run stops once they used more
    cpu_limit: float  # RLIMIT_CPU of the process: load + run_cpu + the seed pool + the largest call twice
    wall: float  # the wall-clock backstop of the whole run
    pools: Mapping[str, float] = attrs.field(factory=dict)  # the CPU pools of the calls (SEED_POOL)


def run_budgets(task: Mapping[str, Any], probes: list[Probe]) -> Budgets:
    """The budgets of one candidate's run over ``probes`` -- the one place where vx decides them.

    A visible example call (and its repeat and re-orderings) gets :data:`EXAMPLE_CPU`; the CPU they use
    is the run's reference R. Any other probe, whose input is r times the size of its example
    (:func:`size_ratio`), gets ``min(OWN_CPU_CAP, max(min(PROBE_CPU_CAP, PROBE_CPU x r), OWN_FACTOR x r x R))``:
    a program judged by its own pace on the examples, with more room for larger inputs; a probe of the
    generated in-domain classes (:data:`.probe.DOMAIN_CLASSES`, where ``crashes_in_domain`` judges timeouts)
    gets at least :data:`EXAMPLE_CPU` -- a correct program's constant cost per call (a search that needs
    25-36 ms on any input, HumanEval/75) is not accused by a floor sized for tiny calls. The seed probes
    outside the domain draw from :data:`SEED_CPU` (the pool :data:`SEED_POOL`), the others from
    :data:`RUN_CPU`; each may overrun by one call, hence the process's limit."""
    from vx.sandbox import CallBudget

    examples = [p for p in probes if p.klass == "example"]
    calls = []
    for p in probes:
        if p.in_domain:
            calls.append(CallBudget(EXAMPLE_CPU, reference=True))
            continue
        r = size_ratio(p, examples)
        floor = min(PROBE_CPU_CAP, PROBE_CPU * r)
        if p.klass in DOMAIN_CLASSES:
            floor = max(floor, EXAMPLE_CPU)
        calls.append(
            CallBudget(
                floor, per_reference=OWN_FACTOR * r, cap=max(floor, OWN_CPU_CAP), pool=SEED_POOL if _seeded(p) else ""
            )
        )
    largest = max((b.ceiling for b in calls), default=0.0)
    pools = {SEED_POOL: SEED_CPU} if any(b.pool for b in calls) else {}
    cpu_limit = LOAD_CPU + RUN_CPU + (SEED_CPU if pools else 0.0) + 2 * largest
    box = sandbox()
    return Budgets(tuple(calls), RUN_CPU, cpu_limit, box.config.wall_for(cpu_limit), pools)


def _seeded(p: Probe) -> bool:
    """Whether a probe draws from the seed pool (:data:`SEED_CPU`): a seed class outside the domain."""
    return not p.in_domain and p.klass not in PEER_CLASSES


def example_comparator(task: Mapping[str, Any]) -> Comparator:
    """evalplus's comparison for the task's visible examples (its special oracles are keyed by its own
    function names: MBPP+ renamed a few, ``meta.evalplus_entry_point``)."""
    meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
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


#: A run stopped for its CPU budget (:data:`RUN_CPU`) with probes left unrun was *starved* by the
#: candidate -- evidence against it (issue 33: probes it prevented from running are no abstention) --
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
    :data:`RUN_CPU` spent by the calls outside the seed pool (:data:`SEED_CPU`, which the sandbox
    enforces itself by skipping the pool's later calls); or, given the `task`, a visible example missed its expected
    value (compared in the parent: the child never sees it) by the time the drawn probes
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
        self.seeded = [_seeded(p) for p in probes]
        self.compare = example_comparator(task) if task is not None and self.late is not None else None
        self.spent = self.own = self.seed_spent = 0.0
        self.peer_timeouts = self.seed_timeouts = 0
        self.failed = False
        self.reason = ""
        self.at = -1

    @property
    def starved(self) -> bool:
        return self.reason == "spent" and self.own >= STARVE_SHARE * RUN_CPU and self.at + 1 < len(self.probes)

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
        elif self.floors is not None and i < len(self.floors) and self.floors[i] is not None:
            self.own += max(0.0, cpu - self.floors[i])  # the part of its budget its own pace bought
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
        if self.spent > RUN_CPU:
            return self._stop(i, "spent")
        return False


def stop_rule(probes: list[Probe], task: Mapping[str, Any] | None = None, budgets: Budgets | None = None) -> StopRule:
    """The run's early stop (:class:`StopRule`)."""
    return StopRule(probes, task, budgets)


def against_peers(
    cpu: float | None, budget: float | None, timed_out: bool, peer_cpu: Sequence[float]
) -> tuple[str, str]:
    """One call judged against the other attempts at the same probe (``peer_cpu``: the CPU seconds of
    those that answered it): ``("timeout", why)`` when it used, or was stopped at, more than the line
    ``max(PEER_FLOOR, PEER_FACTOR x their median)``; ``("unknown", why)`` when it was stopped at its own
    budget below that line (merely slower than its own pace: never an accusation); ``("", "")`` when the
    call stands as the run reported it (too few peers: fewer than 3)."""
    if len(peer_cpu) < 3:
        return "", ""
    median = statistics.median(peer_cpu)
    line = max(PEER_FLOOR, PEER_FACTOR * median)
    numbers = (
        f"the median of {len(peer_cpu)} other attempts is {median * 1000:.2g} ms; the line is "
        f"{PEER_FACTOR:g}x that, at least {PEER_FLOOR * 1000:g} ms"
    )
    if timed_out:
        if budget is not None and budget + 1e-9 >= line:
            return "timeout", f"stopped at its CPU budget of {budget * 1000:.3g} ms; {numbers}"
        return "unknown", f"stopped at its own CPU budget of {(budget or 0) * 1000:.3g} ms, below the line: {numbers}"
    if cpu is not None and cpu > line:
        return "timeout", f"used {cpu * 1000:.3g} ms of CPU; {numbers}"
    return "", ""


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
        # otherwise was sabotaged by the candidate (issue 15: evidence against it, not a reason
        # to abstain)
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


#: Sandbox runs already made in this process, by (code, entry point, probe set): an item's run is
#: computed once and reused by every op, inducer and the failure classifier that asks for it
#: (evolution asks again every round). Forked workers inherit what the parent has.
RUN_MEMO_SIZE = 4096
_runs: OrderedDict[tuple[str, str, str], Execution] = OrderedDict()
_runs_lock = threading.Lock()


#: Per task: (its probes, their budgets, their text for the runs memo's key, their calls prepared for the
#: sandbox with the arguments asked back where a call passes a :data:`MUTABLE`) -- the same for every
#: attempt at the task, so computed once per task and process (:func:`_plan`).
_plans: OrderedDict[int, tuple[tuple[Probe, ...], Budgets, str, Any]] = OrderedDict()


def _plan(task: Mapping[str, Any], probes: list[Probe]) -> tuple[Budgets, str, Any]:
    """The budgets of ``probes``, their key text and their calls (``Sandbox.prepare_calls``; the arguments
    come back only from calls passing a :data:`MUTABLE`: no op reads the others'), reused while the same
    probe objects come back (``probes_for`` returns a task's cached probes to every attempt)."""
    first = id(probes[0]) if probes else 0
    with _runs_lock:
        hit = _plans.get(first)
    if hit is not None and len(hit[0]) == len(probes) and all(a is b for a, b in zip(hit[0], probes)):
        return hit[1], hit[2], hit[3]
    budgets = run_budgets(task, probes)
    text = repr([(p.klass, p.args) for p in probes]) + repr(budgets)
    after = tuple(any(isinstance(a, MUTABLE) for a in p.args) for p in probes)
    # The probes' own argument objects, copied once: the request is marshalled without object references
    # (serialize.MARSHAL_VERSION), so every call gets fresh objects in the child and no call's mutation
    # reaches another.
    calls = sandbox().prepare_calls([(list(p.args), {}) for p in probes], args_after=after)
    with _runs_lock:
        _plans[first] = (tuple(probes), budgets, text, calls)
        while len(_plans) > RUN_MEMO_SIZE:
            _plans.popitem(last=False)
    return budgets, text, calls


def run_probes(task: Mapping[str, Any], art: Artifact, probes: list[Probe]) -> Execution:
    """Run every probe of one candidate in one sandboxed process (once per process and probe set), with
    the budgets of :func:`run_budgets`, stopped early by :func:`stop_rule`."""
    budgets, text, calls = _plan(task, probes)
    key = (art.source, art.name, text)
    with _runs_lock:
        found = _runs.get(key)
        if found is not None:
            _runs.move_to_end(key)
            return found
    report = sandbox().run_calls(
        art.source,
        art.name,
        calls,
        timeouts=budgets.calls,
        total_timeout=budgets.wall,
        cpu_limit=budgets.cpu_limit,
        load_timeout=LOAD_CPU,
        pools=budgets.pools,
        stop=(rule := stop_rule(probes, task, budgets)),
    )
    load, message = _load_state(report, art)
    starved = ""
    if rule.starved and getattr(report, "stopped", False):
        shown = sum(c.cpu or 0.0 for p, c in zip(probes, report.calls) if p.in_domain and c.status != "not_run")
        starved = (
            f"it used the run's CPU budget of {RUN_CPU:g} s ({rule.spent:.2f} s; {shown:.2f} s of it on the "
            f"visible examples and their repeats) before its other probes"
        )
    result = Execution(tuple(probes), tuple(report.calls), report, load, message, starved)
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


def judges_the_run(
    body: Callable[..., Result] | None = None, *, applies: Callable[[Mapping[str, Any], Execution], bool] | None = None
) -> Any:
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
