"""Applying ops to items: the verdict matrix of a split, in parallel, cached and fault tolerant.

This module is the driver's side: it reads the verdict cache, decides which ops each item still needs,
hands those jobs to an executor (`vx.ops.executors`: this machine's worker processes, `vx.ops.workers`,
or a cluster), and records what comes back. For each item the family's root op runs first (it stores
the parsed artifact in the item's context), then every other runnable op, in pool order, sharing that
context (`vx.ops.running.run_item`). An op that raises yields ABSTAIN on that item with its error
recorded; an op that exceeds its time limit is interrupted (SIGALRM) or, if it will not stop, its
worker process is killed and replaced — the op abstains on that item and the rest of the item's ops
still run. Nothing is lost, and serial and parallel application produce identical matrices (same
per-item function, results put in place by index). Identical attempts (the same task record and
output: the verdict cache's key) run once; the others take copies of the outcomes
(``Application.shared`` counts them).

**Peer ops** (:func:`vx.ops.core.peer_op`) are applied in two phases. Phase 1 runs each peer op's
observer on every attempt, as one more op of the item (sharing its context, so an observer can reuse
the item's sandbox run), and also on the *extra peers* a caller passes (``peers=``: unlabeled attempts
of the same tasks that are not graded, e.g. the other attempts of a dev task). Phase 2, in the parent,
judges each peer op for each item from its observation and those of the other attempts at its task
(the items of the batch with that task, plus the extra peers). Observations are cached by (observer,
version, item hash); peer verdicts by (op, version, hash of the item and of its task's attempt set),
so adding one attempt re-judges that task only.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.verdict import Verdict
from vx.errors import ArgumentError
from vx.ops.cache import VerdictCache, attempt_set_hash, item_hash, peer_key
from vx.ops.core import Context, Op, Result, observer_op
from vx.ops.executors import make_executor
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.ops.progress import Reporter
from vx.ops.running import MAX_OUTPUT_CHARS, OUTPUT_TOO_LARGE, Outcome, clip, failure_text, output_too_large, run_item

DEFAULT_TIMEOUT = 10.0  # seconds per op call


@attrs.frozen
class OpFailure:
    item: str
    op: str
    kind: str  # "error" | "timeout" | "died"
    error: str


@attrs.define
class Application:
    """The result of applying a pool to a list of items."""

    matrix: VerdictMatrix
    messages: dict[tuple[str, str], str]  # (item id, op) -> message (only non-empty ones)
    failures: list[OpFailure]
    calls: int  # op calls actually made (cache misses)
    cache_hits: int
    seconds: float
    durations: dict[str, float] = attrs.field(factory=dict)  # op -> total seconds of the calls made
    # item id -> seconds of its op calls (an identical attempt's: the calls that gave it its verdicts)
    item_seconds: dict[str, float] = attrs.field(factory=dict)
    shared: int = 0  # verdicts copied from an identical attempt of the batch (same task and output)
    #: what the peer ops' observers saw: observer name -> task id -> attempt id -> observation (the graded
    #: items and the extra peers, ``peer:<task>:<k>``; an attempt whose observation failed is absent)
    observations: dict[str, dict[str, dict[str, Any]]] = attrs.field(factory=dict)

    def message(self, item_id: str, op_name: str) -> str:
        return self.messages.get((item_id, op_name), "")

    def failure_summary(self) -> dict[tuple[str, str], list[OpFailure]]:
        out: dict[tuple[str, str], list[OpFailure]] = {}
        for f in self.failures:
            out.setdefault((f.op, f.kind), []).append(f)
        return out


def check_timeout(timeout: Any, name: str = "timeout") -> float:
    """A time limit in seconds as the API takes it: a finite number > 0 (else an ArgumentError)."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ArgumentError(f"{name} must be a number of seconds, not {type(timeout).__name__} {timeout!r}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ArgumentError(f"{name} must be a finite number of seconds > 0, not {timeout!r}")
    return float(timeout)


def check_jobs(jobs: Any) -> int | None:
    """Worker processes as the API takes them: None (CPU count) or an int >= 1 (else an ArgumentError)."""
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int):
        raise ArgumentError(f"jobs must be an int >= 1 or None (the CPU count), not {type(jobs).__name__} {jobs!r}")
    if jobs < 1:
        raise ArgumentError(f"jobs must be >= 1 (1: in this process), not {jobs}")
    return jobs


def check_cache(cache: Any) -> VerdictCache | None:
    """A verdict cache as the API takes it: a VerdictCache or None (else an ArgumentError)."""
    if cache is None or isinstance(cache, VerdictCache):
        return cache
    hint = (
        f"; open one with vx.ops.cache.VerdictCache({os.fspath(cache)!r})"
        if isinstance(cache, (str, os.PathLike))
        else ""
    )
    raise ArgumentError(f"cache must be a VerdictCache or None, not {type(cache).__name__}{hint}")


# --------------------------------------------------------------------------------------------


def apply_ops(
    pool: OpPool,
    items: Sequence[Item],
    tasks: Mapping[str, Mapping[str, Any]],
    *,
    ops: Sequence[str] | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cache: VerdictCache | None = None,
    progress: bool | Reporter | None = None,
    description: str = "applying ops",
    executor: Any = None,
    peers: Mapping[str, Sequence[Any]] | None = None,
    observe: Sequence[str] = (),
) -> Application:
    """Build the verdict matrix of `items` × ops (default: the pool's runnable ops, root first).

    jobs: worker processes (default: CPU count; 1 = in this process). cache: a VerdictCache to read
    and fill (None = no caching). progress: a counted bar with ETA on stderr (default: when stderr is a
    terminal; True / False force it), or a `vx.ops.progress` reporter to draw it elsewhere.
    executor: where the items run: None / "local" (this machine, `jobs` processes), "dask", or a
    `vx.ops.executors.Executor` (e.g. `DaskExecutor("tcp://scheduler:8786")`). The matrix is the
    same whichever runs it; the cache is read and written here only.
    peers: extra attempts per task id (outputs that are not graded but that peer ops compare with;
    the items of the batch are each other's peers already). Peer ops run in two phases: their
    observers run on every attempt wherever the items run, then the peer verdicts are judged here, each
    task's as soon as all its attempts are in (while the workers go on with other tasks).
    observe: peer ops whose observers also run on every attempt (their observations are in
    ``Application.observations``) without the ops being judged or put in the matrix: what a ranking reads.
    """
    jobs, cache = check_jobs(jobs), check_cache(cache)
    timeout = check_timeout(timeout)
    t_start = time.perf_counter()
    plan = _plan(pool, items, tasks, ops, timeout, peers, observe)
    results = _Results.empty(len(items), len(plan.op_objs))
    todo = _from_cache(plan, results, cache)
    recorder = _Recorder(plan, results, todo, cache)
    # phase 2, peer verdicts in the parent: each task is judged once its last attempt is recorded
    judge = _PeerJudge(plan, results, todo, cache) if plan.peer_cols else None
    runner = make_executor(executor, jobs=jobs)
    show = progress if progress is not None else _stderr_is_tty()
    try:
        with _progress(show, description, len(todo.work) + sum(map(len, todo.copies.values()))) as advance:

            def done(j: int, res: dict[int, Outcome]) -> None:
                recorder.record(j, res)
                if judge is not None:
                    judge.recorded(todo.work[j][0].task)
                advance(1 + len(todo.copies.get(j, ())))

            runner.run(todo.work, plan.run_objs, tasks, timeout, done)
    finally:
        recorder.flush()  # what was computed is kept even when the run is interrupted: the next one resumes from it
        if runner is not executor:
            runner.close()  # an executor made here from a name: stop what it started
    if judge is not None:  # the tasks not judged yet (none of their attempts needed work)
        judged, judged_hits = judge.finish()
        results.calls += judged
        results.hits += judged_hits
    results.failures.sort(key=lambda f: (f.op, f.item))
    return Application(
        VerdictMatrix.from_array(results.arr, [it.id for it in items], plan.names),
        results.messages,
        results.failures,
        results.calls,
        results.hits,
        time.perf_counter() - t_start,
        results.durations,
        results.item_seconds,
        results.shared,
        _by_task(results.observations, plan.attempts),
    )


ObsKey = tuple[str, str]  # an observer's (name, version)


@attrs.define
class _Plan:
    """What one application runs, decided before anything runs: the ops (root first), the observers of
    its peer ops (phase 1 pseudo-ops, one per distinct name and version, after the ops in ``run_objs``),
    and the attempts -- the graded items, then the extra peers of the tasks with peer ops to judge --
    with their content hashes (the verdict cache's key)."""

    names: list[str]
    op_objs: list[Op]
    run_objs: list[Op]
    peer_cols: list[int]
    plain_cols: list[int]
    op_observer: dict[int, ObsKey]  # peer op column -> its observer
    obs_keys: list[ObsKey]
    obs_col: dict[ObsKey, int]  # observer -> its column in run_objs
    attempts: list[Item]
    n_items: int  # the graded attempts (the first n_items)
    hashes: list[str]
    tasks: Mapping[str, Mapping[str, Any]]
    root: str | None
    #: observers whose observations the caller asked for (``observe``): kept after their task is judged
    returned: frozenset[ObsKey] = frozenset()

    @property
    def n_ops(self) -> int:
        return len(self.op_objs)


def _plan(
    pool: OpPool,
    items: Sequence[Item],
    tasks: Mapping[str, Mapping[str, Any]],
    ops: Sequence[str] | None,
    timeout: float,
    peers: Mapping[str, Sequence[Any]] | None,
    observe: Sequence[str],
) -> _Plan:
    root = pool.root_name
    names = list(ops) if ops is not None else [o.name for o in pool.runnable()]
    if root is not None and root not in names:
        names.insert(0, root)
    elif root is not None:
        names.remove(root)
        names.insert(0, root)
    op_objs = [pool[n] for n in names]
    n_ops = len(names)
    peer_cols = [c for c, o in enumerate(op_objs) if o.is_peer]
    plain_cols = [c for c in range(n_ops) if c not in peer_cols]
    attempts: list[Item] = list(items)
    watched = [pool[n] for n in observe]
    for o in watched:
        if o.observer is None:
            raise ArgumentError(f"observe: {o.name!r} is not a peer op (it has no observer to run)")
    if (peer_cols or watched) and peers:
        batch_tasks = {it.task for it in items}
        for task_id in sorted(batch_tasks):
            for k, output in enumerate(peers.get(task_id, ())):
                attempts.append(Item(id=f"peer:{task_id}:{k}", task=task_id, output=output))
    observers: dict[ObsKey, Op] = {}
    op_observer: dict[int, ObsKey] = {}
    for c in peer_cols:
        obs = op_objs[c].observer
        assert obs is not None  # a peer op has an observer
        key = (obs.name, obs.version)
        limit = max([op_objs[k].timeout or timeout for k in peer_cols if op_objs[k].observer is obs] + [timeout])
        observers.setdefault(key, observer_op(obs, limit, op_objs[c]))
        op_observer[c] = key
    for o in watched:  # observed only: no verdict to judge
        obs = o.observer
        assert obs is not None
        observers.setdefault((obs.name, obs.version), observer_op(obs, o.timeout or timeout, o))
    obs_keys = list(observers)
    return _Plan(
        names=names,
        op_objs=op_objs,
        run_objs=op_objs + [observers[k] for k in obs_keys],
        peer_cols=peer_cols,
        plain_cols=plain_cols,
        op_observer=op_observer,
        obs_keys=obs_keys,
        obs_col={k: n_ops + i for i, k in enumerate(obs_keys)},
        attempts=attempts,
        n_items=len(items),
        hashes=[item_hash(tasks[it.task], it.output) for it in attempts],
        tasks=tasks,
        root=root,
        returned=frozenset((o.observer.name, o.observer.version) for o in watched if o.observer is not None),
    )


@attrs.define
class _Results:
    """What the application found, filled in place as outcomes arrive (from the cache, the workers and the
    peer judge): the verdicts, messages, failures, time spent, the observations, and the counts."""

    arr: np.ndarray  # int8[n_items, n_ops]
    messages: dict[tuple[str, str], str]
    failures: list[OpFailure]
    durations: dict[str, float]  # op -> seconds of the calls made
    item_seconds: dict[str, float]
    observations: dict[tuple[ObsKey, int], Any]  # (observer, attempt row) -> observation
    obs_errors: dict[tuple[ObsKey, int], str]
    #: attempts whose verdicts depend on more than their task and output (``Outcome.volatile``): none of their
    #: observations is cached, nor any peer verdict of their task
    volatile: set[int] = attrs.field(factory=set)
    calls: int = 0
    hits: int = 0
    shared: int = 0

    @classmethod
    def empty(cls, n_items: int, n_ops: int) -> _Results:
        return cls(np.full((n_items, n_ops), int(Verdict.ABSTAIN), dtype=np.int8), {}, [], {}, {}, {}, {})


@attrs.define
class _Jobs:
    """The work left once the cache was read: one job per attempt that needs an op run (its item and the
    columns it needs), the attempt row each job is for, and the rows of identical attempts that copy it."""

    work: list[tuple[Item, list[int]]]
    rows: list[int]
    copies: dict[int, list[int]]


def _from_cache(plan: _Plan, results: _Results, cache: VerdictCache | None) -> _Jobs:
    """Put the cached verdicts and observations in place and return the jobs left. Identical attempts (the
    same task record and output: the same item hash) with the same ops to run are one job."""
    # LLM-calling ops bypass the verdict cache: their answers are cached by vx.llm, keyed by model and
    # full request, so a changed model is never served a stale verdict and "LLM off" is never stored.
    op_objs, hashes = plan.op_objs, plan.hashes
    cached = (
        cache.get_many(
            (op_objs[c].name, op_objs[c].version, h)
            for c in plan.plain_cols
            if not op_objs[c].uses_llm
            for h in set(hashes[: plan.n_items])
        )
        if cache
        else {}
    )
    cached_obs = (
        cache.get_observations((name, version, h) for name, version in plan.obs_keys for h in set(hashes))
        if cache and plan.obs_keys
        else {}
    )
    todo = _Jobs([], [], {})
    first_job: dict[tuple[str, tuple[int, ...]], int] = {}
    for r, it in enumerate(plan.attempts):
        need = []
        if r < plan.n_items:
            for c in plan.plain_cols:
                o = op_objs[c]
                hit = cached.get((o.name, o.version, hashes[r]))
                if hit is None:
                    need.append(c)
                    continue
                results.hits += 1
                results.arr[r, c] = hit.verdict
                if hit.message:
                    results.messages[(it.id, o.name)] = hit.message
        for key in plan.obs_keys:
            if (key[0], key[1], hashes[r]) in cached_obs:
                results.observations[(key, r)] = cached_obs[(key[0], key[1], hashes[r])]
            else:
                need.append(plan.obs_col[key])
        if need:
            if plan.root is not None and 0 not in need:
                need.insert(0, 0)  # the root re-runs so that the others find its artifact in ctx
            key2 = (hashes[r], tuple(need))
            j = first_job.get(key2)
            if j is not None:
                todo.copies.setdefault(j, []).append(r)
                continue
            first_job[key2] = len(todo.work)
            todo.work.append((it, need))
            todo.rows.append(r)
    return todo


#: Verdicts are written to the cache in batches of this many while the workers run.
CACHE_BATCH = 500
#: Observations written to the cache at a time (each may be tens of KB: not held until the batch ends).
OBS_BATCH = 100


class _Recorder:
    """Puts each job's outcomes in place -- for its attempt and for the identical attempts that copy it --
    and keeps what is to be cached (verdicts only: a failure may be the environment's, a missing
    dependency), written in batches and at :meth:`flush`."""

    def __init__(self, plan: _Plan, results: _Results, todo: _Jobs, cache: VerdictCache | None) -> None:
        self.plan, self.results, self.todo, self.cache = plan, results, todo, cache
        self.to_cache: list[tuple[Any, ...]] = []
        self.obs_to_cache: list[tuple[Any, ...]] = []

    def record(self, j: int, res: dict[int, Outcome]) -> None:
        it, need = self.todo.work[j]
        self._row(self.todo.rows[j], it, need, res, made=True)
        for r in self.todo.copies.get(j, ()):
            self._row(r, self.plan.attempts[r], need, res, made=False)
        if self.cache is not None and len(self.to_cache) >= CACHE_BATCH:
            self.cache.put_many(self.to_cache)
            self.to_cache.clear()
        if self.cache is not None and len(self.obs_to_cache) >= OBS_BATCH:  # not held until the batch ends
            self.cache.put_observations(self.obs_to_cache)
            self.obs_to_cache.clear()

    def flush(self) -> None:
        if self.cache is not None and self.to_cache:
            self.cache.put_many(self.to_cache)
        if self.cache is not None and self.obs_to_cache:
            self.cache.put_observations(self.obs_to_cache)
        self.to_cache, self.obs_to_cache = [], []

    def _row(self, r: int, it: Item, need: list[int], res: dict[int, Outcome], made: bool) -> None:
        """Row `r` gets the outcomes `res`: computed for it (`made`), or for an identical attempt (then
        nothing is counted as computed, timed or cached twice)."""
        plan, out_ = self.plan, self.results
        out_.item_seconds[it.id] = out_.item_seconds.get(it.id, 0.0) + sum(out.duration for out in res.values())
        for k, out in res.items():
            c = need[k]
            o = plan.run_objs[c]
            if c >= plan.n_ops:  # an observer
                key = plan.obs_keys[c - plan.n_ops]
                if made:
                    out_.durations[o.name] = out_.durations.get(o.name, 0.0) + out.duration
                if out.error:
                    out_.obs_errors[(key, r)] = out.error
                    continue
                out_.observations[(key, r)] = out.evidence
                if out.volatile:
                    out_.volatile.add(r)
                elif self.cache is not None and made:
                    self.obs_to_cache.append((key[0], key[1], plan.hashes[r], out.evidence))
                continue
            if r >= plan.n_items:  # the root of an extra peer: not part of the matrix
                continue
            out_.arr[r, c] = out.verdict
            if out.message:
                out_.messages[(it.id, o.name)] = out.message
            if out.error:
                out_.failures.append(OpFailure(it.id, o.name, out.kind or "error", out.error))
            if not made:
                out_.shared += 1
                continue
            out_.calls += 1
            out_.durations[o.name] = out_.durations.get(o.name, 0.0) + out.duration
            if (
                self.cache is not None
                and not o.uses_llm
                and out.error is None
                and not out.volatile
                and OUTPUT_TOO_LARGE not in out.message
            ):
                self.to_cache.append(
                    (o.name, o.version, plan.hashes[r], out.verdict, out.message, out.duration, out.error)
                )


def _by_task(
    observations: Mapping[tuple[tuple[str, str], int], Any], attempts: Sequence[Item]
) -> dict[str, dict[str, dict[str, Any]]]:
    """The observations of :func:`apply_ops` (by observer key and attempt row) as observer name -> task id ->
    attempt id -> observation."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for ((name, _version), r), observation in observations.items():
        it = attempts[r]
        out.setdefault(name, {}).setdefault(it.task, {})[it.id] = observation
    return out


class _PeerJudge:
    """Phase 2 of :func:`apply_ops`: judges every peer op on every item from the observations, one task
    at a time, as soon as every attempt of the task that had work has been recorded (:meth:`recorded`),
    so that the judging overlaps the workers still running other tasks instead of following them all;
    :meth:`finish` judges the tasks left (those none of whose attempts needed work).
    A verdict is cached only when every attempt of its task was observed (a failed observation must not
    freeze a verdict computed without it). A task's verdicts depend on its attempts' observations only,
    so the order in which tasks are judged changes nothing."""

    def __init__(self, plan: _Plan, results: _Results, todo: _Jobs, cache: VerdictCache | None) -> None:
        self.plan, self.results, self.cache = plan, results, cache
        attempts, hashes = plan.attempts, plan.hashes
        self.by_task: dict[str, list[int]] = {}
        for r, it in enumerate(attempts):
            self.by_task.setdefault(it.task, []).append(r)
        set_hash = {t: attempt_set_hash([hashes[r] for r in rows]) for t, rows in self.by_task.items()}
        self.keys = {
            (c, r): peer_key(hashes[r], set_hash[attempts[r].task]) for c in plan.peer_cols for r in range(plan.n_items)
        }
        self.cached = (
            cache.get_many((plan.op_objs[c].name, plan.op_objs[c].version, self.keys[(c, r)]) for c, r in self.keys)
            if cache
            else {}
        )
        self.waiting: dict[str, int] = {}
        for it, _ in todo.work:
            self.waiting[it.task] = self.waiting.get(it.task, 0) + 1
        self.judged: set[str] = set()
        self.to_cache: list[tuple[Any, ...]] = []
        self.calls = self.hits = 0

    def recorded(self, task_id: str) -> None:
        """One job of `task_id` has been recorded; judge the task once its last one has."""
        left = self.waiting[task_id] - 1
        self.waiting[task_id] = left
        if left == 0:
            self._judge(task_id)

    def finish(self) -> tuple[int, int]:
        """Judge every task not judged yet, store what is to be cached; (judgements made, cache hits)."""
        for task_id in self.by_task:
            if task_id not in self.judged:
                self._judge(task_id)
        if self.cache is not None and self.to_cache:
            self.cache.put_many(self.to_cache)
            self.to_cache.clear()
        return self.calls, self.hits

    def _judge(self, task_id: str) -> None:
        self.judged.add(task_id)
        rows = self.by_task[task_id]
        for c in self.plan.peer_cols:
            o = self.plan.op_objs[c]
            obs_key = self.plan.op_observer[c]
            # cached only when every attempt was observed, and none of them may vary from one grading to the next
            complete = all((obs_key, q) in self.results.observations for q in rows) and not (
                self.results.volatile.intersection(rows)
            )
            for r in rows:
                if (c, r) in self.keys:  # a graded item (the extra peers only take part)
                    self._judge_one(c, r, o, obs_key, rows, complete)
        # the task's observations have been read by every peer op: they are not kept for the rest of the batch
        # (unless the caller asked for them: ``observe``)
        for key in {self.plan.op_observer[c] for c in self.plan.peer_cols} - self.plan.returned:
            for r in rows:
                self.results.observations.pop((key, r), None)

    def _judge_one(self, c: int, r: int, o: Op, obs_key: ObsKey, rows: Sequence[int], complete: bool) -> None:
        it = self.plan.attempts[r]
        key = self.keys[(c, r)]
        found = self.results
        hit = self.cached.get((o.name, o.version, key))
        if hit is not None:
            self.hits += 1
            found.arr[r, c] = hit.verdict
            if hit.message:
                found.messages[(it.id, o.name)] = hit.message
            if hit.error:
                found.failures.append(OpFailure(it.id, o.name, "error", hit.error))
            return
        t0 = time.perf_counter()
        observations = found.observations
        if output_too_large(it.output) is not None:  # observed nothing (run_item): no opinion, no failure
            out = Outcome(int(Verdict.ABSTAIN), f"not run: {OUTPUT_TOO_LARGE}", 0.0)
        elif (obs_key, r) not in observations:
            why = found.obs_errors.get((obs_key, r), "not computed")
            out = Outcome(int(Verdict.ABSTAIN), "", 0.0, f"observing this attempt failed: {why}", "error")
        else:
            mine = observations[(obs_key, r)]
            others = [observations[(obs_key, q)] for q in rows if q != r and (obs_key, q) in observations]
            try:
                res = o.judge(self.plan.tasks[it.task], mine, others, Context())
                out = Outcome(int(res.verdict), clip(res.message), time.perf_counter() - t0)
            except Exception as exc:  # a judging bug: abstain on this item, record it
                out = Outcome(int(Verdict.ABSTAIN), "", time.perf_counter() - t0, failure_text(exc), "error")
        self.calls += 1
        found.arr[r, c] = out.verdict
        found.durations[o.name] = found.durations.get(o.name, 0.0) + out.duration
        if out.message:
            found.messages[(it.id, o.name)] = out.message
        if out.error:
            found.failures.append(OpFailure(it.id, o.name, out.kind or "error", out.error))
        if self.cache is not None and complete and out.kind is None:
            self.to_cache.append((o.name, o.version, key, out.verdict, out.message, out.duration, out.error))


def _stderr_is_tty() -> bool:
    import sys

    return sys.stderr.isatty()


class _progress:
    """A counted progress bar with ETA over items (`vx.ops.progress`), as a context manager yielding
    `advance(n)`. `show`: False (nothing), True (bars on stderr) or a reporter with ``task()`` (e.g. the
    bars `vx evolve` embeds in its live display)."""

    def __init__(self, show: Any, description: str, total: int) -> None:
        from vx.ops.progress import reporter_for

        self.reporter = reporter_for(bool(show) if isinstance(show, bool) or show is None else show)
        self.description, self.total = description, total
        self._cm: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if self.reporter is None or self.total <= 0:
            return lambda n: None
        self._cm = self.reporter.task(self.description, self.total)
        return self._cm.__enter__()

    def __exit__(self, *exc: object) -> None:
        if self._cm is not None:
            self._cm.__exit__(*exc)


def single(
    pool: OpPool,
    task: Mapping[str, Any],
    output: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    ops: Sequence[str] | None = None,
) -> dict[str, Outcome]:
    """Apply ops to one (task, output) in this process: op name → Outcome (root first)."""
    timeout = check_timeout(timeout)
    names = list(ops) if ops is not None else [o.name for o in pool.runnable()]
    if pool.root_name is not None:
        names = [pool.root_name] + [n for n in names if n != pool.root_name]
    op_objs = [pool[n] for n in names]
    res = run_item(op_objs, task, output, timeout)
    return {names[k]: v for k, v in res.items()}


__all__ = [
    "Application",
    "MAX_OUTPUT_CHARS",
    "OUTPUT_TOO_LARGE",
    "OpFailure",
    "Outcome",
    "Result",
    "apply_ops",
    "output_too_large",
    "run_item",
    "single",
]
