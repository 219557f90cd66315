"""The time limits of a candidate's sandboxed run over its probes, and when a call used too much.

Every limit is CPU time of the candidate's own process (the sandbox's ITIMER_PROF and RLIMIT_CPU), so a
busy machine does not turn a correct program into a timeout; wall-clock time only backstops code that
sleeps or blocks (the sandbox's ``wall_for``: 10 x the budget + 2 s). :func:`run_budgets` is the one
place where vx decides a run's budgets; :func:`against_peers` judges one call's CPU against the other
attempts' on the same probe. The numbers were measured on the labelled CodeT (HumanEval+) and MBPP+
attempts (docs/timelimits.md).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.families.code.probes.probe import DOMAIN_CLASSES, PEER_CLASSES, Probe

__all__ = [
    "EXAMPLE_CPU",
    "LOAD_CPU",
    "OWN_CPU_CAP",
    "OWN_FACTOR",
    "PEER_FACTOR",
    "PEER_FLOOR",
    "PROBE_CPU",
    "PROBE_CPU_CAP",
    "RUN_CPU",
    "SEED_CPU",
    "SEED_POOL",
    "STOPPED_FACTOR",
    "STOPPED_FLOOR",
    "Budgets",
    "against_peers",
    "run_budgets",
    "seeded",
    "size_ratio",
]

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
#: that runs out of time on every one of them (a timeout there counts once, :data:`.run.TIMEOUT_STRIKES`) thus
#: cannot spend the run's time before the generated probes, which the peer ops and ``crashes_in_domain``
#: read -- however much CPU it takes on the examples to raise its own-pace budgets (the attack in
#: tests/families/code/test_ops_evasion.py).
SEED_CPU = 0.5
#: The sandbox's name of that pool (``CallBudget.pool``).
SEED_POOL = "seed"
#: Judged against its peers (:func:`against_peers`), a call that *answered* is out of time only where a
#: hidden-test grader would reject it too: when it used more than PEER_FACTOR x the median CPU of the other
#: attempts that answered the same probe, and more than PEER_FLOOR seconds -- evalplus's rule for a hidden
#: input, ``max(1 s, 4 x the reference's time)`` (the family's ground truth uses it:
#: ``data.groundtruth.MIN_TIME_LIMIT``, ``TIME_LIMIT_FACTOR``), with the peers' median standing for the
#: reference. A correct program that spends 60 ms a call beside peers that take 0.1 ms was accused under
#: ``max(50 ms, 10 x median)``, which evalplus passes.
PEER_FACTOR = 4.0
PEER_FLOOR = 1.0
#: A call vx *stopped* at its budget did not answer at all: it is out of time when that budget was at least
#: STOPPED_FACTOR x the peers' median and STOPPED_FLOOR seconds (below, it is unknown: merely slower than its
#: own pace). Waiting a grader's second for every endless loop would cost the loops' runs 4x the CPU; on the
#: CodeT and HumanEval samples no correct attempt is stopped past this line (docs/timelimits.md).
STOPPED_FACTOR = 10.0
STOPPED_FLOOR = 0.05


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


def run_budgets(task: Mapping[str, Any], probes: list[Probe], wall_for: Callable[[float], float]) -> Budgets:
    """The budgets of one candidate's run over ``probes`` -- the one place where vx decides them.

    A visible example call (and its repeat and re-orderings) gets :data:`EXAMPLE_CPU`; the CPU they use
    is the run's reference R. Any other probe, whose input is r times the size of its example
    (:func:`size_ratio`), gets ``min(OWN_CPU_CAP, max(min(PROBE_CPU_CAP, PROBE_CPU x r), OWN_FACTOR x r x R))``:
    a program judged by its own pace on the examples, with more room for larger inputs; a probe of the
    generated in-domain classes (:data:`.probe.DOMAIN_CLASSES`, where ``crashes_in_domain`` judges timeouts)
    gets at least :data:`EXAMPLE_CPU` -- a correct program's constant cost per call (a search that needs
    25-36 ms on any input, HumanEval/75) is not accused by a floor sized for tiny calls. The seed probes
    outside the domain draw from :data:`SEED_CPU` (the pool :data:`SEED_POOL`), the others from
    :data:`RUN_CPU`; each may overrun by one call, hence the process's limit. ``wall_for`` is the sandbox's
    wall-clock backstop of a CPU budget (``SandboxConfig.wall_for``)."""
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
                floor, per_reference=OWN_FACTOR * r, cap=max(floor, OWN_CPU_CAP), pool=SEED_POOL if seeded(p) else ""
            )
        )
    largest = max((b.ceiling for b in calls), default=0.0)
    pools = {SEED_POOL: SEED_CPU} if any(b.pool for b in calls) else {}
    cpu_limit = LOAD_CPU + RUN_CPU + (SEED_CPU if pools else 0.0) + 2 * largest
    return Budgets(tuple(calls), RUN_CPU, cpu_limit, wall_for(cpu_limit), pools)


def seeded(p: Probe) -> bool:
    """Whether a probe draws from the seed pool (:data:`SEED_CPU`): a seed class outside the domain."""
    return not p.in_domain and p.klass not in PEER_CLASSES


def against_peers(
    cpu: float | None, budget: float | None, timed_out: bool, peer_cpu: Sequence[float]
) -> tuple[str, str]:
    """One call judged against the other attempts at the same probe (``peer_cpu``: the CPU seconds of
    those that answered it): ``("timeout", why)`` when it answered after more than the grader's line
    ``max(PEER_FLOOR, PEER_FACTOR x their median)``, or was stopped at a budget of at least
    ``max(STOPPED_FLOOR, STOPPED_FACTOR x their median)``; ``("unknown", why)`` when it was stopped at its own
    budget below that (merely slower than its own pace: never an accusation); ``("", "")`` when the call
    stands as the run reported it (too few peers: fewer than 3)."""
    if len(peer_cpu) < 3:
        return "", ""
    median = statistics.median(peer_cpu)
    of_peers = f"the median of {len(peer_cpu)} other attempts is {median * 1000:.2g} ms"
    if timed_out:
        line = max(STOPPED_FLOOR, STOPPED_FACTOR * median)
        numbers = f"{of_peers}; the line is {STOPPED_FACTOR:g}x that, at least {STOPPED_FLOOR * 1000:g} ms"
        if budget is not None and budget + 1e-9 >= line:
            return "timeout", f"stopped at its CPU budget of {budget * 1000:.3g} ms; {numbers}"
        return "unknown", f"stopped at its own CPU budget of {(budget or 0) * 1000:.3g} ms, below the line: {numbers}"
    line = max(PEER_FLOOR, PEER_FACTOR * median)
    if cpu is not None and cpu > line:
        numbers = f"{of_peers}; a grader's line is {PEER_FACTOR:g}x that, at least {PEER_FLOOR:g} s"
        return "timeout", f"used {cpu * 1000:.3g} ms of CPU; {numbers}"
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
