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
    progress: bool | None = None,
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
    root = pool.root_name
    names = list(ops) if ops is not None else [o.name for o in pool.runnable()]
    if root is not None and root not in names:
        names.insert(0, root)
    elif root is not None:
        names.remove(root)
        names.insert(0, root)
    op_objs = [pool[n] for n in names]
    n_items, n_ops = len(items), len(names)
    arr = np.full((n_items, n_ops), int(Verdict.ABSTAIN), dtype=np.int8)
    messages: dict[tuple[str, str], str] = {}
    failures: list[OpFailure] = []
    durations: dict[str, float] = {}
    peer_cols = [c for c, o in enumerate(op_objs) if o.is_peer]
    plain_cols = [c for c in range(n_ops) if c not in peer_cols]

    # the attempts: the items, then the extra peers of the tasks that have peer ops to judge
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
    hashes = [item_hash(tasks[it.task], it.output) for it in attempts]

    # observers (phase 1 pseudo-ops): one per distinct (name, version) among the peer ops
    observers: dict[tuple[str, str], Op] = {}
    op_observer: dict[int, tuple[str, str]] = {}
    for c in peer_cols:
        obs = op_objs[c].observer
        key = (obs.name, obs.version)
        limit = max([op_objs[k].timeout or timeout for k in peer_cols if op_objs[k].observer is obs] + [timeout])
        observers.setdefault(key, observer_op(obs, limit, op_objs[c]))
        op_observer[c] = key
    for o in watched:  # observed only: no verdict to judge
        obs = o.observer
        assert obs is not None
        observers.setdefault((obs.name, obs.version), observer_op(obs, o.timeout or timeout, o))
    obs_keys = list(observers)
    run_objs = op_objs + [observers[k] for k in obs_keys]  # phase-1 op list: ops, then observers
    obs_col = {k: n_ops + i for i, k in enumerate(obs_keys)}
    observations: dict[tuple[tuple[str, str], int], Any] = {}
    obs_errors: dict[tuple[tuple[str, str], int], str] = {}
    item_seconds: dict[str, float] = {}

    # LLM-calling ops bypass the verdict cache: their answers are cached by vx.llm, keyed by model and
    # full request, so a changed model is never served a stale verdict and "LLM off" is never stored.
    cached = (
        cache.get_many(
            (op_objs[c].name, op_objs[c].version, h)
            for c in plain_cols
            if not op_objs[c].uses_llm
            for h in set(hashes[:n_items])
        )
        if cache
        else {}
    )
    cached_obs = (
        cache.get_observations((name, version, h) for name, version in obs_keys for h in set(hashes))
        if cache and obs_keys
        else {}
    )
    hits = 0
    work: list[tuple[Item, list[int]]] = []
    work_rows: list[int] = []
    # Identical attempts (the same task record and output: the same item hash, the key the verdict cache
    # gives them too) with the same ops to run are run once: the others take copies of its outcomes.
    first_job: dict[tuple[str, tuple[int, ...]], int] = {}
    copies: dict[int, list[int]] = {}  # job -> the rows of the identical attempts that copy it
    for r, it in enumerate(attempts):
        need = []
        if r < n_items:
            for c in plain_cols:
                o = op_objs[c]
                hit = cached.get((o.name, o.version, hashes[r]))
                if hit is None:
                    need.append(c)
                    continue
                hits += 1
                arr[r, c] = hit.verdict
                if hit.message:
                    messages[(it.id, o.name)] = hit.message
        for key in obs_keys:
            if (key[0], key[1], hashes[r]) in cached_obs:
                observations[(key, r)] = cached_obs[(key[0], key[1], hashes[r])]
            else:
                need.append(obs_col[key])
        if need:
            if root is not None and 0 not in need:
                need.insert(0, 0)  # the root re-runs so that the others find its artifact in ctx
            key = (hashes[r], tuple(need))
            j = first_job.get(key)
            if j is not None:
                copies.setdefault(j, []).append(r)
                continue
            first_job[key] = len(work)
            work.append((it, need))
            work_rows.append(r)

    to_cache: list[tuple] = []
    obs_to_cache: list[tuple] = []
    calls = shared = 0

    def record(j: int, res: dict[int, Outcome]) -> None:
        it, need = work[j]
        record_row(work_rows[j], it, need, res, made=True)
        for r in copies.get(j, ()):
            record_row(r, attempts[r], need, res, made=False)
        if cache is not None and len(to_cache) >= 500:
            cache.put_many(to_cache)
            to_cache.clear()

    def record_row(r: int, it: Item, need: list[int], res: dict[int, Outcome], made: bool) -> None:
        """Row `r` gets the outcomes `res`: computed for it (`made`), or for an identical attempt (then
        nothing is counted as computed, timed or cached twice)."""
        nonlocal calls, shared
        item_seconds[it.id] = item_seconds.get(it.id, 0.0) + sum(out.duration for out in res.values())
        for k, out in res.items():
            c = need[k]
            o = run_objs[c]
            if c >= n_ops:  # an observer
                key = obs_keys[c - n_ops]
                if made:
                    durations[o.name] = durations.get(o.name, 0.0) + out.duration
                if out.error:
                    obs_errors[(key, r)] = out.error
                    continue
                observations[(key, r)] = out.evidence
                if cache is not None and made:
                    obs_to_cache.append((key[0], key[1], hashes[r], out.evidence))
                continue
            if r >= n_items:  # the root of an extra peer: not part of the matrix
                continue
            arr[r, c] = out.verdict
            if out.message:
                messages[(it.id, o.name)] = out.message
            if out.error:
                failures.append(OpFailure(it.id, o.name, out.kind or "error", out.error))
            if not made:
                shared += 1
                continue
            calls += 1
            durations[o.name] = durations.get(o.name, 0.0) + out.duration
            # only verdicts are cached: a failure may be the environment's (a missing dependency)
            if cache is not None and not o.uses_llm and out.error is None and OUTPUT_TOO_LARGE not in out.message:
                to_cache.append((o.name, o.version, hashes[r], out.verdict, out.message, out.duration, out.error))

    runner = make_executor(executor, jobs=jobs)
    show = progress if progress is not None else _stderr_is_tty()
    # phase 2, peer verdicts in the parent: each task is judged once its last attempt is recorded
    judge = (
        _PeerJudge(
            op_objs,
            peer_cols,
            op_observer,
            attempts,
            n_items,
            hashes,
            tasks,
            observations,
            obs_errors,
            arr,
            messages,
            failures,
            durations,
            cache,
            work,
        )
        if peer_cols
        else None
    )
    try:
        with _progress(show, description, len(work) + sum(map(len, copies.values()))) as advance:

            def done(j, res):
                record(j, res)
                if judge is not None:
                    judge.recorded(work[j][0].task)
                advance(1 + len(copies.get(j, ())))

            runner.run(work, run_objs, tasks, timeout, done)
    finally:
        # what was computed is kept even when the run is interrupted: the next one resumes from it
        if cache is not None and to_cache:
            cache.put_many(to_cache)
        if cache is not None and obs_to_cache:
            cache.put_observations(obs_to_cache)
        if runner is not executor:
            runner.close()  # an executor made here from a name: stop what it started

    if judge is not None:  # the tasks not judged yet (none of their attempts needed work)
        judged, judged_hits = judge.finish()
        calls += judged
        hits += judged_hits
    failures.sort(key=lambda f: (f.op, f.item))
    matrix = VerdictMatrix.from_array(arr, [it.id for it in items], names)
    seen = _by_task(observations, attempts)
    return Application(
        matrix, messages, failures, calls, hits, time.perf_counter() - t_start, durations, item_seconds, shared, seen
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

    def __init__(
        self,
        op_objs: Sequence[Op],
        peer_cols: Sequence[int],
        op_observer: Mapping[int, tuple[str, str]],
        attempts: Sequence[Item],
        n_items: int,
        hashes: Sequence[str],
        tasks: Mapping[str, Mapping[str, Any]],
        observations: Mapping[tuple[tuple[str, str], int], Any],
        obs_errors: Mapping[tuple[tuple[str, str], int], str],
        arr: np.ndarray,
        messages: dict,
        failures: list,
        durations: dict,
        cache: VerdictCache | None,
        work: Sequence[tuple[Item, list[int]]],
    ):
        self.op_objs, self.peer_cols, self.op_observer = op_objs, peer_cols, op_observer
        self.attempts, self.tasks, self.observations, self.obs_errors = attempts, tasks, observations, obs_errors
        self.arr, self.messages, self.failures, self.durations, self.cache = arr, messages, failures, durations, cache
        self.by_task: dict[str, list[int]] = {}
        for r, it in enumerate(attempts):
            self.by_task.setdefault(it.task, []).append(r)
        set_hash = {t: attempt_set_hash([hashes[r] for r in rows]) for t, rows in self.by_task.items()}
        self.keys = {(c, r): peer_key(hashes[r], set_hash[attempts[r].task]) for c in peer_cols for r in range(n_items)}
        self.cached = (
            cache.get_many((op_objs[c].name, op_objs[c].version, self.keys[(c, r)]) for c, r in self.keys)
            if cache
            else {}
        )
        self.waiting: dict[str, int] = {}
        for it, _ in work:
            self.waiting[it.task] = self.waiting.get(it.task, 0) + 1
        self.judged: set[str] = set()
        self.to_cache: list[tuple] = []
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
        for c in self.peer_cols:
            o = self.op_objs[c]
            obs_key = self.op_observer[c]
            complete = all((obs_key, q) in self.observations for q in rows)
            for r in rows:
                if (c, r) in self.keys:  # a graded item (the extra peers only take part)
                    self._judge_one(c, r, o, obs_key, rows, complete)

    def _judge_one(self, c: int, r: int, o: Op, obs_key: tuple[str, str], rows: Sequence[int], complete: bool) -> None:
        it = self.attempts[r]
        key = self.keys[(c, r)]
        hit = self.cached.get((o.name, o.version, key))
        if hit is not None:
            self.hits += 1
            self.arr[r, c] = hit.verdict
            if hit.message:
                self.messages[(it.id, o.name)] = hit.message
            if hit.error:
                self.failures.append(OpFailure(it.id, o.name, "error", hit.error))
            return
        t0 = time.perf_counter()
        if output_too_large(it.output) is not None:  # observed nothing (run_item): no opinion, no failure
            out = Outcome(int(Verdict.ABSTAIN), f"not run: {OUTPUT_TOO_LARGE}", 0.0)
        elif (obs_key, r) not in self.observations:
            why = self.obs_errors.get((obs_key, r), "not computed")
            out = Outcome(int(Verdict.ABSTAIN), "", 0.0, f"observing this attempt failed: {why}", "error")
        else:
            mine = self.observations[(obs_key, r)]
            others = [self.observations[(obs_key, q)] for q in rows if q != r and (obs_key, q) in self.observations]
            try:
                res = o.judge(self.tasks[it.task], mine, others, Context())
                out = Outcome(int(res.verdict), clip(res.message), time.perf_counter() - t0)
            except Exception as exc:  # a judging bug: abstain on this item, record it
                out = Outcome(int(Verdict.ABSTAIN), "", time.perf_counter() - t0, failure_text(exc), "error")
        self.calls += 1
        self.arr[r, c] = out.verdict
        self.durations[o.name] = self.durations.get(o.name, 0.0) + out.duration
        if out.message:
            self.messages[(it.id, o.name)] = out.message
        if out.error:
            self.failures.append(OpFailure(it.id, o.name, out.kind or "error", out.error))
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
