"""Applying ops to items: the verdict matrix of a split, in parallel, cached and fault tolerant.

For each item the family's root op runs first (it stores the parsed artifact in the item's
context), then every other runnable op, in pool order, sharing that context. An op that raises
yields ABSTAIN on that item with its error recorded; an op that exceeds its time limit is
interrupted (SIGALRM) or, if it will not stop, its worker process is killed and replaced — the op
abstains on that item and the rest of the item's ops still run. Nothing is lost, and serial and
parallel application produce identical matrices (same per-item function, results put in place by
index). Identical attempts (the same task record and output: the verdict cache's key) run once; the
others take copies of the outcomes (``Application.shared`` counts them).

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
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

import attrs
import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.verdict import Verdict
from vx.errors import ArgumentError
from vx.ops.cache import VerdictCache, attempt_set_hash, item_hash, peer_key
from vx.ops.core import Context, Op, Result, observer_op
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.text import clean

DEFAULT_TIMEOUT = 10.0  # seconds per op call
KILL_GRACE = 2.0  # extra seconds before a worker that ignores the soft timeout is killed


class OpTimeout(BaseException):
    """Raised inside an op that overran its time limit (BaseException: `except Exception` in an
    op cannot swallow it)."""


@attrs.frozen
class OpFailure:
    item: str
    op: str
    kind: str  # "error" | "timeout" | "died"
    error: str


@attrs.frozen
class Outcome:
    """One op on one item."""

    verdict: int
    message: str = ""
    duration: float = 0.0
    error: str | None = None
    kind: str | None = None  # None, "error", "timeout", "died"
    evidence: Any = None  # an observer's observation (observer pseudo-ops only)


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

    def message(self, item_id: str, op_name: str) -> str:
        return self.messages.get((item_id, op_name), "")

    def failure_summary(self) -> dict[tuple[str, str], list[OpFailure]]:
        out: dict[tuple[str, str], list[OpFailure]] = {}
        for f in self.failures:
            out.setdefault((f.op, f.kind), []).append(f)
        return out


# --------------------------------------------------------------------------------------------
# running one item (shared by the serial path and the workers)


def _alarm(signum, frame):  # pragma: no cover - exercised through timeouts
    raise OpTimeout()


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


def _run_op(o: Op, task: Mapping[str, Any], output: Any, ctx: Context, timeout: float | None) -> Outcome:
    t0 = time.perf_counter()
    use_alarm = bool(timeout) and _can_alarm()
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
    try:
        if use_alarm:  # armed inside the try: a limit that expires at once is a timeout, not an escape
            signal.setitimer(signal.ITIMER_REAL, timeout)
        res = o(task, output, ctx)
        evidence = res.evidence if o.provenance.get("observes") else None
        return Outcome(int(res.verdict), _clip(res.message), time.perf_counter() - t0, evidence=evidence)
    except OpTimeout:
        return Outcome(int(Verdict.ABSTAIN), "", time.perf_counter() - t0, f"timed out after {timeout:g}s", "timeout")
    except Exception as exc:  # an op bug: abstain on this item, record what happened
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        return Outcome(
            int(Verdict.ABSTAIN),
            "",
            time.perf_counter() - t0,
            f"{type(exc).__name__}: {_clip(str(exc), 300)}{where}",
            "error",
        )
    finally:
        if use_alarm:
            _disarm()
            signal.signal(signal.SIGALRM, old)


def _disarm() -> None:
    """Stop the op's timer; an alarm that fires while it is being stopped is absorbed here."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        except OpTimeout:
            continue


def _can_alarm() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


def _clip(text: str, n: int = 500) -> str:
    """Op messages and errors as vx keeps them: clipped, and valid Unicode (an op may quote the
    candidate, whose text can carry unpaired surrogates that no cache or terminal accepts)."""
    text = clean(str(text))
    return text if len(text) <= n else text[: n - 1] + "…"


#: The largest output (characters of a text, bytes of a bytes value) ops are run on. A larger one is
#: judged without running an op: the root op reports the drawback ``output_too_large`` and the other
#: ops abstain, so no parser, sandbox run or comparison ever works on megabytes of candidate text (a
#: 3.2 MB output used to cost 66 s of parent-side work, and then the root abstained).
MAX_OUTPUT_CHARS = 256 * 1024
OUTPUT_TOO_LARGE = "output_too_large"


def output_too_large(output: Any) -> str | None:
    """The ``output_too_large`` drawback message for an output over :data:`MAX_OUTPUT_CHARS`, else None."""
    if isinstance(output, (str, bytes, bytearray)) and len(output) > MAX_OUTPUT_CHARS:
        unit = "characters" if isinstance(output, str) else "bytes"
        return (
            f"{OUTPUT_TOO_LARGE}: the output has {len(output):,} {unit}, more than the {MAX_OUTPUT_CHARS:,} vx judges"
        )
    return None


def run_item(
    ops: Sequence[Op],
    task: Mapping[str, Any],
    output: Any,
    timeout: float | None,
    on_start: Callable[[int], None] | None = None,
    skip: frozenset[int] = frozenset(),
    ctx: Context | None = None,
) -> dict[int, Outcome]:
    """Run `ops` (root first) on one item with one shared context; keyed by index in `ops`. An output
    over :data:`MAX_OUTPUT_CHARS` runs no op: the root's verdict is the drawback ``output_too_large``,
    every other op abstains (see :func:`output_too_large`)."""
    ctx = ctx if ctx is not None else Context()
    out: dict[int, Outcome] = {}
    too_large = output_too_large(output)
    if too_large is not None:
        # the root reports it (with no root in the pool, every op does); a peer op's observer observes
        # nothing (the peer op abstains on this attempt, and its peers are compared without it)
        has_root = any(o.provenance.get("root") for o in ops)
        for k, o in enumerate(ops):
            if k in skip or o.provenance.get("observes"):
                continue
            fires = bool(o.provenance.get("root")) or not has_root
            out[k] = Outcome(
                int(Verdict.DRAWBACK if fires else Verdict.ABSTAIN),
                too_large if fires else f"not run: {OUTPUT_TOO_LARGE}",
                0.0,
            )
        return out
    for k, o in enumerate(ops):
        if k in skip:
            continue
        if on_start is not None:
            on_start(k)
        out[k] = _run_op(o, task, output, ctx, o.timeout or timeout)
    return out


# --------------------------------------------------------------------------------------------
# the worker pool (fork; the parent can kill a stuck worker and carry on)

_STATE: dict[str, Any] = {}

#: The parent's ends of every live worker's pipe. A forked worker inherits copies of all of them
#: and closes them first: otherwise a worker holding another's parent end keeps that pipe open
#: after the parent dies, so neither ever sees end of file and both live on forever.
_PARENT_ENDS: set[Connection] = set()


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this worker when the parent dies (Linux), whatever it is doing
    (a long op, a sandbox run): end of file on the pipe is only noticed between items."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pipe's end of file still ends the worker
        pass
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(0)


def _worker_main(conn: Connection, parent: int, running: Any) -> None:
    for end in list(_PARENT_ENDS):
        end.close()  # this process's copies only
    _PARENT_ENDS.clear()
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    jobs = _STATE["jobs"]
    ops_list = _STATE["ops"]
    tasks = _STATE["tasks"]
    timeout = _STATE["timeout"]
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        if msg is None:
            return
        j, skip = msg
        item, op_idx = jobs[j]
        ops = [ops_list[i] for i in op_idx]
        running.value = 0
        try:
            res = run_item(
                ops,
                tasks[item.task],
                item.output,
                timeout,
                on_start=lambda k: setattr(running, "value", _running_code(j, k)),
                skip=frozenset(skip),
            )
            conn.send(("done", j, res))
        except BaseException as exc:  # a failure outside any op (pickling a result, ...)
            conn.send(("fatal", j, f"{type(exc).__name__}: {exc}"))


def _running_code(j: int, k: int) -> int:
    """What a worker writes in its ``running`` slot as it starts op ``k`` (an index in the job's op list) of
    job ``j``: one 64-bit word (written and read whole), 0 before the job's first op."""
    return (j + 1) << 20 | k


#: Jobs a worker holds at once: the one it runs and the next, sent ahead, so that it starts the next one
#: without waiting for the parent to take its last result and answer (~1 ms an item at ``-j 2``, when
#: the parent is busy recording and judging peers). Jobs are sent ahead only while more are left than
#: the workers can hold: a job never waits behind another while a worker is idle, except at the very end,
#: where one sent ahead may wait for the (possibly slow) job before it.
WORKER_DEPTH = 2


class _Worker:
    """A worker process, its pipe (jobs in, results out) and its ``running`` slot: the job and op it is
    running, written by the worker into shared memory as each op starts and read by the parent when it
    wakes (on a result, or every 0.2 s), so that the parent can end an op that will not stop, without a
    message (and a wake-up of the parent) for every op of every item. The worker holds up to
    :data:`WORKER_DEPTH` jobs (``queue``, in the order it runs them): the first is the one running."""

    def __init__(self, ctx: mp.context.BaseContext) -> None:
        self.conn, child = ctx.Pipe()
        _PARENT_ENDS.add(self.conn)
        self.running = ctx.RawValue("q", 0)
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid(), self.running), daemon=True)
        self.proc.start()
        child.close()
        self.queue: list[int] = []  # the jobs sent to it and not yet answered, the running one first
        self.current: int | None = None  # index (in the job's op list) of the op running now, as last seen
        self.seen = 0  # the running slot's value when last read
        self.started = 0.0  # when the parent first saw the op running (never earlier than its start)
        self.task: str | None = None  # the task of the last item it was given (see _Pending)

    @property
    def job(self) -> int | None:
        """The job it runs now (the first it holds), None when it holds none."""
        return self.queue[0] if self.queue else None

    def assign(self, j: int, skip: set[int]) -> None:
        if not self.queue:
            self.current, self.started = None, time.monotonic()
        self.queue.append(j)
        self.conn.send((j, sorted(skip)))

    def answered(self, j: int) -> None:
        """Job ``j``, the one it ran, is answered: the next one it holds is running (the slot is read afresh,
        as it may already name the next job's op)."""
        assert self.queue and self.queue[0] == j, (self.queue, j)
        self.queue.pop(0)
        self.current, self.seen, self.started = None, 0, time.monotonic()

    def look(self, now: float) -> None:
        """Read the running slot: a new op of the current job starts its clock at ``now``."""
        code = self.running.value
        if code != self.seen:
            self.seen = code
            if self.job is not None and code >> 20 == self.job + 1:
                self.current, self.started = code & 0xFFFFF, now

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        _PARENT_ENDS.discard(self.conn)
        self.conn.close()


class _Pending:
    """The jobs not yet given to a worker, handed out with task affinity: a worker keeps the attempts of
    the task it is on, and a free worker starts the next task no other worker holds (the last attempts of
    a task are shared when nothing else is left). So each task's per-process work -- the code family's
    generated probes, its run budgets -- is done in one worker rather than in every worker."""

    def __init__(self, jobs: Sequence[tuple[Item, list[int]]]) -> None:
        self.by_task: dict[str, list[int]] = {}
        for j, (item, _) in enumerate(jobs):
            self.by_task.setdefault(item.task, []).append(j)
        for queue in self.by_task.values():
            queue.reverse()  # pop() takes them in order
        self.order = list(self.by_task)[::-1]
        self.n = len(jobs)

    def __bool__(self) -> bool:
        return self.n > 0

    def take(self, w: Any, held: Sequence[str | None]) -> int:
        queue = self.by_task.get(w.task) if w.task is not None else None
        if not queue:
            while self.order and not self.by_task.get(self.order[-1]):
                self.order.pop()
            free = next((t for t in reversed(self.order) if t not in held and self.by_task.get(t)), None)
            task = free if free is not None else next(t for t in reversed(self.order) if self.by_task.get(t))
            queue = self.by_task[task]
        self.n -= 1
        return queue.pop()


def _parallel(
    jobs: list[tuple[Item, list[int]]],
    ops: list[Op],
    tasks,
    timeout: float,
    n_workers: int,
    on_done: Callable[[int, dict[int, Outcome]], None],
) -> None:
    ctx = mp.get_context("fork")
    _STATE.update(jobs=jobs, ops=ops, tasks=tasks, timeout=timeout)
    pending = _Pending(jobs)
    retry: list[tuple[int, dict[int, Outcome], set[int]]] = []
    workers = [_Worker(ctx) for _ in range(min(n_workers, len(jobs)))]
    partial: dict[int, dict[int, Outcome]] = {}
    try:

        def feed(w: _Worker) -> None:
            while len(w.queue) < WORKER_DEPTH:
                if w.queue and len(retry) + pending.n <= len(workers) * WORKER_DEPTH:
                    return  # near the end, or few jobs: none sent ahead, so no worker waits idle for one
                if retry:
                    j, done, skip = retry.pop()
                    partial[j] = done
                    w.assign(j, skip)
                elif pending:
                    j = pending.take(w, [x.task for x in workers if x is not w])
                    partial[j] = {}
                    w.assign(j, set())
                    w.task = jobs[j][0].task
                else:
                    return

        for w in workers:
            feed(w)
        while any(w.job is not None for w in workers):
            busy = [w for w in workers if w.job is not None]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.2)
            now = time.monotonic()
            for i, w in enumerate(list(workers)):
                if w.job is None:
                    continue
                died = False
                try:
                    while w.conn in ready and w.conn.poll():
                        kind, j, payload = w.conn.recv()
                        if kind == "done":
                            w.answered(j)
                            partial[j].update(payload)
                            res = partial.pop(j)
                            feed(w)  # the worker's next job first: it need not wait while this one is recorded
                            on_done(j, res)
                            break
                        else:  # fatal: record on every op not yet done
                            raise RuntimeError(payload)
                except (EOFError, OSError, RuntimeError):
                    died = True
                job = w.job
                if job is None:
                    continue
                w.look(now)
                op_idx = jobs[job][1]
                limit = (
                    max(ops[op_idx[w.current]].timeout or timeout, 0) + KILL_GRACE if w.current is not None else None
                )
                stuck = limit is not None and now - w.started > limit
                if died or stuck or not w.proc.is_alive():
                    # the op running now gets ABSTAIN; the rest of the item continues in a new worker
                    k = w.current
                    done = partial.pop(job, {})
                    if k is not None:
                        kind = "timeout" if stuck else "died"
                        err = (
                            f"did not stop within {limit:g}s; its worker was killed"
                            if stuck
                            else f"its worker process died (exit code {w.proc.exitcode})"
                        )
                        done[k] = Outcome(int(Verdict.ABSTAIN), "", now - w.started, err, kind)
                    w.kill()
                    for q in w.queue[1:]:  # sent ahead, not started: another worker runs them
                        retry.append((q, partial.pop(q), set()))
                    workers[i] = _Worker(ctx)
                    skip = set(done)
                    if k is None and not done:
                        # died before starting any op: record the whole item rather than loop forever
                        for kk in range(len(op_idx)):
                            done[kk] = Outcome(int(Verdict.ABSTAIN), "", 0.0, "worker died before running", "died")
                        on_done(job, done)
                        feed(workers[i])
                    elif len(skip) >= len(op_idx):
                        on_done(job, done)
                        feed(workers[i])
                    else:
                        retry.append((job, done, skip))
                        feed(workers[i])
    finally:
        for w in workers:
            try:
                if w.proc.is_alive():
                    w.conn.send(None)
            except OSError:
                pass
        for w in workers:
            w.proc.join(1)
            w.kill()
        _STATE.clear()


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
    if peer_cols and peers:
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

    from vx.ops.executors import make_executor

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
    return Application(
        matrix, messages, failures, calls, hits, time.perf_counter() - t_start, durations, item_seconds, shared
    )


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
                out = Outcome(int(res.verdict), _clip(res.message), time.perf_counter() - t0)
            except Exception as exc:  # a judging bug: abstain on this item, record it
                tb = traceback.extract_tb(exc.__traceback__)
                where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
                out = Outcome(
                    int(Verdict.ABSTAIN),
                    "",
                    time.perf_counter() - t0,
                    f"{type(exc).__name__}: {_clip(str(exc), 300)}{where}",
                    "error",
                )
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
