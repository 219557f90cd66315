"""Groups of completions graded at the speed of the grader: shared workers, a verdict cache, deadlines.

    grader = GroupGrader(Verifier.load("seed.vx"), workers=2, deadline=30.0)
    grader.warm()                                   # every task's probes built once, now
    result = grader.grade_group("HumanEval/0", completions)
    [g.verdict for g in result.graded]              # "pass" / "fail" / "abstain", in order
    [g.reason for g in result.graded]               # why an abstention: "deadline", "timeout", ... or None

**A group is graded together**: one call of ``apply_ops`` for the group, so peer ops compare its
completions (and nothing else: no stored attempts of the family join them, as in ``vx grade``).
**Concurrent groups share the workers**: every call's jobs go to one :class:`~vx.ops.shared.SharedWorkers`
pool, first come first served, instead of each group waiting for whole others to finish. **Identical
completions of one task are graded once**: within a group (``apply_ops`` runs identical attempts once)
and across groups and epochs through a :class:`~vx.ops.memcache.MemoryVerdictCache`, keyed by the task
record's content and the output's, bounded in entries and bytes. **A task's probes are built once**:
the workers are forked after :meth:`GroupGrader.warm` prepared every task (the pack's ``prepare_task``),
and the code family keeps them in its probe store for the next process.

**Deadlines.** A group not graded by its deadline is answered all the same: each completion not graded
by then is an abstention whose reason is ``"deadline"``, and the completions graded before keep their
verdicts. Other reasons for an abstention: ``"timeout"`` (an op that would not stop), ``"died"`` (its
worker died), ``"error"`` (an op raised), ``"no_opinion"`` (every check abstained). A trainer's reward
for an abstention is its own convention (:data:`DEFAULT_REWARDS`: 0.0, as a failure).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.dsl.verdict import Final
from vx.memo import forget_all
from vx.ops.item import Item
from vx.ops.memcache import MemoryVerdictCache
from vx.ops.shared import DEADLINE, SharedWorkers
from vx.selection import Placement
from vx.verifier import Grade, Verifier

#: What a reward pays for each verdict unless told otherwise: an abstention is no evidence that the
#: completion is right, so it earns what a failure earns.
DEFAULT_REWARDS: Mapping[str, float] = {"pass": 1.0, "fail": 0.0, "abstain": 0.0}
#: Groups after which the grader's process forgets its identity memos (vx.memo.forget_all): they hold the
#: decoded observations of groups graded before, which no later group asks for.
FORGET_EVERY = 64
#: Why a completion abstained, in the order they are told apart.
REASONS = (DEADLINE, "timeout", "died", "error", "no_opinion")


@attrs.frozen
class Graded:
    """One completion of a group: the verifier's grade, its verdict, and why it abstained (None otherwise)."""

    grade: Grade
    reason: str | None
    #: where it ranks among its group and why (``grade_group(rank=True)``), else None
    placement: Placement | None = None

    @property
    def verdict(self) -> str:
        return self.grade.verdict.value


@attrs.frozen
class GroupResult:
    """A group's grades in the order of its completions, and what grading it cost."""

    task_id: str
    graded: tuple[Graded, ...]
    seconds: float
    calls: int  # op calls made (cache misses)
    cache_hits: int  # verdicts served by the verdict cache
    shared: int  # verdicts copied from an identical completion of the group


@attrs.define
class Stats:
    """What a grader has done since it started (read by ``vx serve``'s ``/metrics``)."""

    groups: int = 0
    completions: int = 0
    verdicts: dict[str, int] = attrs.field(factory=lambda: {"pass": 0, "fail": 0, "abstain": 0})
    abstentions: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(REASONS, 0))
    calls: int = 0
    cache_hits: int = 0
    shared: int = 0
    prepared: int = 0  # tasks prepared by warm()


def _reason(grade: Grade, kinds: set[str]) -> str | None:
    if grade.verdict is not Final.ABSTAIN:
        return None
    for reason in REASONS[:-1]:
        if reason in kinds:
            return reason
    return "no_opinion"


class GroupGrader:
    """A verifier grading groups of completions for a trainer (see the module docstring).

    ``workers``: worker processes shared by every group; ``timeout``: seconds per op call; ``deadline``:
    seconds a group may take by default (None: no deadline); ``cache_entries`` / ``cache_bytes``: the
    verdict cache's bounds (``cache_entries=0``: no cache)."""

    def __init__(
        self,
        verifier: Verifier,
        *,
        workers: int = 2,
        timeout: float = 10.0,
        deadline: float | None = 60.0,
        cache_entries: int = 200_000,
        cache_bytes: int = 256 * 1024 * 1024,
        start: bool = True,
    ) -> None:
        self.verifier = verifier
        self.timeout = timeout
        self.deadline = deadline
        self.cache = MemoryVerdictCache(cache_entries, cache_bytes) if cache_entries > 0 else None
        self.n_workers = workers
        self.stats = Stats()
        self._lock = threading.Lock()
        self._pool: SharedWorkers | None = SharedWorkers(workers) if start else None

    @property
    def pool(self) -> SharedWorkers:
        """The shared workers, started at the first group when the grader was made with ``start=False``
        (so that :meth:`warm` runs before they are forked and they inherit what it prepared)."""
        with self._lock:
            if self._pool is None:
                self._pool = SharedWorkers(self.n_workers)
            return self._pool

    @property
    def queued(self) -> int:
        """Jobs (completions with ops to run) waiting for a worker."""
        return self._pool.queued if self._pool is not None else 0

    def warm(self, on_progress: Callable[[int, int], None] | None = None) -> int:
        """Prepare every task of the verifier's family now (the pack's ``prepare_task``: the code family's
        generated probes); ``on_progress(done, total)`` after each. Returns the number prepared. Call it
        before the first group, so the workers, forked then, start with every task prepared."""
        family = self.verifier.family
        prepare = family.pack().prepare_task if family is not None else None
        tasks = list(self.verifier.tasks.values())
        if prepare is None:
            return 0
        for n, task in enumerate(tasks, 1):
            prepare(task)
            if on_progress is not None:
                on_progress(n, len(tasks))
        with self._lock:
            self.stats.prepared = len(tasks)
        return len(tasks)

    def grade_group(
        self,
        task: str | Mapping[str, Any],
        outputs: Sequence[Any],
        *,
        deadline: float | None = None,
        rank: bool = False,
    ) -> GroupResult:
        """Grade `outputs` (one task's group) together; ``deadline``: seconds, else the grader's. ``rank``:
        also rank the group (best of n, `vx.selection`): each completion's ``placement``."""
        record = self.verifier._task(task)
        tid = str(record.get("id") or "task")
        items = [Item(id=f"{tid}#{k}", task=tid, output=o) for k, o in enumerate(outputs)]
        budget = deadline if deadline is not None else self.deadline
        t0 = time.perf_counter()
        with self.pool.deadline(budget):
            grading = self.verifier.grade_items(
                items,
                tasks={tid: record},
                executor=self.pool,
                timeout=self.timeout,
                cache=self.cache,
                progress=False,
                peers={},
                rank=rank,
            )
        app = grading.application
        placed = self.verifier.placements(grading, items, tasks={tid: record}) if rank else [None] * len(items)
        kinds: dict[str, set[str]] = {}
        for f in app.failures:
            kinds.setdefault(f.item, set()).add(f.kind)
        graded = []
        for it, place in zip(items, placed):
            grade = self.verifier.explain(it, grading)
            graded.append(Graded(grade, _reason(grade, kinds.get(it.id, set())), place))
        result = GroupResult(tid, tuple(graded), time.perf_counter() - t0, app.calls, app.cache_hits, app.shared)
        with self._lock:
            s = self.stats
            if (s.groups + 1) % FORGET_EVERY == 0:
                forget_all()
            s.groups += 1
            s.completions += len(graded)
            s.calls += app.calls
            s.cache_hits += app.cache_hits
            s.shared += app.shared
            for g in graded:
                s.verdicts[g.verdict] += 1
                if g.reason is not None:
                    s.abstentions[g.reason] += 1
        return result

    def close(self) -> None:
        """Stop the workers."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def __enter__(self) -> GroupGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def reward_of(graded: Graded, rewards: Mapping[str, float] = DEFAULT_REWARDS) -> float:
    """The reward a completion earns by its verdict."""
    return float(rewards[graded.verdict])


__all__ = ["DEFAULT_REWARDS", "REASONS", "GroupGrader", "GroupResult", "Graded", "Stats", "reward_of"]
