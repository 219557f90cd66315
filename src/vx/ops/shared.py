"""Long-lived worker processes shared by many concurrent applications: the executor of a grading service.

``apply_ops`` hands each call's jobs to an executor. :class:`~vx.ops.executors.LocalExecutor` forks its
workers for that one call, so two requests of a server graded at once would each need their own
workers, and every call pays the forks and the per-process warm-up again (the sandbox's fork server,
the code family's probes). :class:`SharedWorkers` starts ``n`` workers once and lets any number of
threads call :meth:`run` at the same time: every call's jobs go into one queue, first come first
served, and whichever worker is free takes the next. So concurrent groups share the workers instead
of each waiting for a whole request to finish.

A call may carry a **deadline** (:meth:`deadline`, for the calling thread): when it passes, the call's
jobs still queued are dropped, the workers running one of them are killed and replaced, and every job
not answered yet is recorded as an abstention of kind ``"deadline"`` with the reason -- the call
returns on time, never hangs, and the jobs answered before keep their verdicts. Outcomes of kind
``"deadline"`` carry an error, so no cache keeps them.

As in ``vx.ops.workers``' pool, an op that will not stop is found through the worker's running slot
(shared memory the worker writes as each op starts) and its worker killed after its time limit plus
:data:`~vx.ops.workers.KILL_GRACE`: that op abstains and the item's other ops go on in a fresh worker; a
worker that dies is replaced the same way. Workers are forked from this process (so what it prepared
before -- a task's generated probes -- is theirs at no cost) by its dispatcher thread, die with it
(``PR_SET_PDEATHSIG``, which follows the forking thread: the dispatcher lives as long as the pool), and
keep the ops and tasks they were sent, bounded in number, so a repeated task reaches the same
per-process memos.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import multiprocessing as mp
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from vx.dsl.verdict import Verdict
from vx.ops.executors import Executor
from vx.ops.running import run_item

#: Ops lists and task records a worker keeps (each sent once per worker, then named by its digest).
WORKER_KEEPS = 256
#: Jobs a worker holds at once (the one running and the next), so it never waits for the parent between two.
DEPTH = 2
#: Jobs a worker answers before it is replaced by a fresh fork (between two jobs): whatever per-process memos
#: grow in a worker (the code family's run plans and runs), a long-running server's workers stay the size of
#: a fresh one, for one fork every so many jobs.
RECYCLE_AFTER = 400
#: The largest output sent ahead to a busy worker (characters); a larger one waits for an idle worker.
SEND_AHEAD_CHARS = 8192
DEADLINE = "deadline"


def _worker_main(conn: Connection, parent: int, running: Any) -> None:
    from vx.ops import workers

    for end in list(workers._PARENT_ENDS) + list(_PARENT_ENDS):
        with contextlib.suppress(OSError):
            end.close()
    workers._PARENT_ENDS.clear()
    _PARENT_ENDS.clear()
    workers._die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    ops_by_token: collections.OrderedDict[str, list[Any]] = collections.OrderedDict()
    tasks_by_hash: collections.OrderedDict[str, Mapping[str, Any]] = collections.OrderedDict()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        kind = msg[0]
        if kind == "ops":
            _, token, blob = msg
            ops_by_token[token] = pickle.loads(blob)
            while len(ops_by_token) > WORKER_KEEPS:
                ops_by_token.popitem(last=False)
            continue
        if kind == "task":
            _, h, task = msg
            tasks_by_hash[h] = task  # one object per task content: per-process memos keyed by it stay small
            while len(tasks_by_hash) > WORKER_KEEPS:
                tasks_by_hash.popitem(last=False)
            continue
        _, jid, token, h, output, need, skip, timeout = msg
        running.value = 0

        def started(k: int, jid: int = jid) -> None:
            running.value = (jid + 1) << 20 | k

        try:
            ops = ops_by_token[token]
            res = run_item(
                [ops[c] for c in need], tasks_by_hash[h], output, timeout, on_start=started, skip=frozenset(skip)
            )
            conn.send(("done", jid, res))
        except BaseException as exc:  # noqa: BLE001 - a failure outside any op: reported, the worker goes on
            conn.send(("fatal", jid, f"{type(exc).__name__}: {exc}"))


#: The parent's ends of the shared workers' pipes (closed in every forked child, as vx.ops.workers does).
_PARENT_ENDS: set[Connection] = set()


class _Job:
    __slots__ = (
        "call",
        "j",
        "jid",
        "need",
        "skip",
        "done",
        "output",
        "task_hash",
        "task",
        "token",
        "timeout",
        "limits",
    )

    def __init__(self, call: _Call, j: int, need: list[int], output: Any, task_hash: str, task: Any) -> None:
        self.call, self.j, self.need, self.output = call, j, need, output
        self.task_hash, self.task = task_hash, task
        self.skip: set[int] = set()
        self.done: dict[int, Any] = {}
        self.token = call.token
        self.timeout = call.timeout
        self.limits = call.limits
        self.jid = -1

    def small(self) -> bool:
        """Small enough to send ahead to a busy worker: the pipe's buffer holds it, so the parent never
        blocks writing while the worker blocks writing its result back."""
        out = self.output
        return not isinstance(out, (str, bytes, bytearray)) or len(out) <= SEND_AHEAD_CHARS


class _Call:
    """One :meth:`SharedWorkers.run`: its results come back to the calling thread through ``results``."""

    def __init__(self, token: str, timeout: float, limits: list[float], deadline: float | None, budget: float) -> None:
        self.token, self.timeout, self.limits, self.deadline, self.budget = token, timeout, limits, deadline, budget
        self.results: queue.SimpleQueue[tuple[int, dict[int, Any]]] = queue.SimpleQueue()
        self.closed = False


class _Proc:
    def __init__(self, ctx: Any) -> None:
        from vx.ops import workers

        self.conn, child = ctx.Pipe()
        _PARENT_ENDS.add(self.conn)
        workers._PARENT_ENDS.add(self.conn)
        self.running = ctx.RawValue("q", 0)
        self.proc = ctx.Process(target=_worker_main, args=(child, os.getpid(), self.running), daemon=True)
        self.proc.start()
        child.close()
        self.jobs: list[_Job] = []  # sent and not answered, the running one first
        self.tokens: set[str] = set()
        self.tasks: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.current: int | None = None
        self.seen = 0
        self.started = time.monotonic()
        self.ids: dict[int, _Job] = {}
        self.answered_n = 0

    def send(self, job: _Job, jid: int, blobs: Mapping[str, bytes]) -> None:
        if job.token not in self.tokens:
            self.conn.send(("ops", job.token, blobs[job.token]))
            self.tokens.add(job.token)
        if job.task_hash in self.tasks:
            self.tasks.move_to_end(job.task_hash)
        else:
            self.conn.send(("task", job.task_hash, job.task))
            self.tasks[job.task_hash] = None
            while len(self.tasks) > WORKER_KEEPS:
                self.tasks.popitem(last=False)
        if not self.jobs:
            self.current, self.started = None, time.monotonic()
        self.jobs.append(job)
        self.ids[jid] = job
        self.conn.send(("job", jid, job.token, job.task_hash, job.output, job.need, sorted(job.skip), job.timeout))

    def answered(self) -> None:
        self.answered_n += 1
        self.jobs.pop(0)
        self.current, self.seen, self.started = None, 0, time.monotonic()

    def look(self, now: float) -> None:
        code = self.running.value
        if code != self.seen:
            self.seen = code
            if self.jobs and code >> 20 == self.jobs[0].jid + 1:
                self.current, self.started = code & 0xFFFFF, now

    def kill(self) -> None:
        from vx.ops import workers

        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        _PARENT_ENDS.discard(self.conn)
        workers._PARENT_ENDS.discard(self.conn)
        with contextlib.suppress(OSError):
            self.conn.close()


def deadline_outcome(seconds: float) -> Any:
    """The outcome of an op a deadline left unrun: an abstention that says why (never cached: it has an error)."""
    from vx.ops.running import Outcome

    return Outcome(int(Verdict.ABSTAIN), "", 0.0, f"not graded within the request's deadline ({seconds:g} s)", DEADLINE)


class SharedWorkers(Executor):
    """``n`` worker processes shared by every thread that calls :meth:`run` (see the module docstring)."""

    name = "shared"

    def __init__(self, n: int = 2, *, recycle_after: int = RECYCLE_AFTER) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"SharedWorkers needs at least one worker, not {n!r}")
        self.n = n
        self.recycle_after = recycle_after
        self.recycled = 0  # workers replaced after recycle_after jobs
        self._ctx = mp.get_context("fork")
        self._lock = threading.Lock()
        self._queue: collections.deque[_Job] = collections.deque()
        self._blobs: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._tokens: dict[tuple[tuple[str, str, float | None], ...], str] = {}
        self._local = threading.local()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closed = False
        self._next_id = 0
        self.restarts = 0  # workers replaced (killed at a deadline or a stuck op, or died)
        # PR_SET_PDEATHSIG kills a worker when the *thread* that forked it ends, not the process: every worker
        # is forked by the dispatcher thread, which lives as long as the pool, so a pool first used from a
        # short-lived thread (anyio's worker threads, asyncio.run's executor) keeps its workers after it.
        self._procs: list[_Proc] = []
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._thread = threading.Thread(target=self._dispatch, name="vx-shared-workers", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            self._closed = True
            raise self._start_error

    # ---------------------------------------------------------------- the caller's side

    @contextlib.contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Calls of :meth:`run` from this thread inside the block end ``seconds`` from now (None: never)."""
        old = getattr(self._local, "deadline", None)
        self._local.deadline = None if seconds is None else (time.monotonic() + seconds, seconds)
        try:
            yield
        finally:
            self._local.deadline = old

    @property
    def queued(self) -> int:
        """Jobs waiting for a worker."""
        return len(self._queue)

    def describe(self) -> str:
        return f"shared ({self.n} worker processes)"

    def _token(self, ops: Sequence[Any]) -> str:
        key = tuple((o.name, o.version, o.timeout) for o in ops)
        with self._lock:
            token = self._tokens.get(key)
            if token is not None and token in self._blobs:
                return token
        blob = pickle.dumps(list(ops), protocol=pickle.HIGHEST_PROTOCOL)
        token = hashlib.sha256(blob).hexdigest()[:24]
        with self._lock:
            self._tokens[key] = token
            self._blobs[token] = blob
            while len(self._blobs) > WORKER_KEEPS // 2:
                old, _ = self._blobs.popitem(last=False)
                for p in self._procs:
                    p.tokens.discard(old)
            if len(self._tokens) > WORKER_KEEPS:
                self._tokens.clear()
        return token

    def run(
        self,
        jobs: Sequence[Any],
        ops: Sequence[Any],
        tasks: Mapping[str, Mapping[str, Any]],
        timeout: float,
        on_done: Callable[[int, dict], None],
    ) -> None:
        if not jobs:
            return
        if self._closed:
            raise RuntimeError("these shared workers are closed")
        deadline, budget = getattr(self._local, "deadline", None) or (None, 0.0)
        limits = [(o.timeout or timeout) for o in ops]
        call = _Call(self._token(ops), timeout, limits, deadline, budget)
        from vx.ops.cache import item_hash

        digests: dict[str, str] = {}
        made = []
        for j, (item, need) in enumerate(jobs):
            h = digests.get(item.task)
            if h is None:
                h = digests[item.task] = item_hash(tasks[item.task], None)
            made.append(_Job(call, j, list(need), item.output, h, tasks[item.task]))
        with self._lock:
            self._queue.extend(made)
        self._wake()
        answered: set[int] = set()
        try:
            while len(answered) < len(made):
                wait_for = None if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    j, res = call.results.get(timeout=wait_for)
                except queue.Empty:
                    break
                if j in answered:
                    continue
                answered.add(j)
                on_done(j, res)
        finally:
            call.closed = True
            with self._lock:
                left = [job for job in self._queue if job.call is call]
                for job in left:
                    self._queue.remove(job)
            self._wake()
        if len(answered) < len(made):  # the deadline passed: what is left abstains, saying why
            out = deadline_outcome(budget)
            for job in made:
                if job.j not in answered:
                    on_done(job.j, {**job.done, **{k: out for k in range(len(job.need)) if k not in job.done}})

    # ---------------------------------------------------------------- the dispatcher thread

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            os.write(self._wake_w, b"x")

    def _dispatch(self) -> None:
        try:
            self._procs = [_Proc(self._ctx) for _ in range(self.n)]
        except BaseException as exc:  # noqa: BLE001 - the constructor raises it
            self._start_error = exc
            return
        finally:
            self._started.set()
        while not self._closed:
            try:
                self._step()
            except Exception:  # noqa: BLE001 - the dispatcher must outlive any one bad message
                import traceback

                traceback.print_exc()
                time.sleep(0.05)

    def _step(self) -> None:
        from vx.ops.running import Outcome
        from vx.ops.workers import KILL_GRACE

        busy = [p for p in self._procs if p.jobs]
        watch: list[Any] = [self._wake_r] + [p.conn for p in busy] + [p.proc.sentinel for p in busy]
        try:
            ready = wait(watch, timeout=0.2)
        except OSError:
            ready = []
        if self._wake_r in ready:
            with contextlib.suppress(BlockingIOError, OSError):
                os.read(self._wake_r, 4096)
        if self._closed:
            return
        now = time.monotonic()
        for i, p in enumerate(list(self._procs)):
            died = False
            try:
                while p.jobs and p.conn.poll():
                    kind, jid, payload = p.conn.recv()
                    job = p.ids.pop(jid, None)
                    if job is None:
                        continue
                    p.answered()
                    if kind == "fatal":
                        payload = {
                            k: Outcome(int(Verdict.ABSTAIN), "", 0.0, payload, "error")
                            for k in range(len(job.need))
                            if k not in job.skip
                        }
                    if not job.call.closed:
                        job.call.results.put((job.j, {**job.done, **payload}))
            except (EOFError, OSError):
                died = True
            if not p.jobs:
                continue
            p.look(now)
            job = p.jobs[0]
            limit = job.limits[job.need[p.current]] + KILL_GRACE if p.current is not None else None
            stuck = limit is not None and now - p.started > limit
            expired = job.call.closed  # its call's deadline passed: the worker is freed for the others
            if died or stuck or expired or not p.proc.is_alive():
                self._replace(i, p, now, stuck=stuck, limit=limit)
        self._feed()

    def _replace(self, i: int, p: _Proc, now: float, *, stuck: bool, limit: float | None) -> None:
        """Kill worker ``i`` and start another: the op it was running abstains, its job's other ops and the
        jobs it held go back to the front of the queue (a job of a closed call is dropped)."""
        from vx.ops.running import Outcome

        p.kill()
        self.restarts += 1
        requeue: list[_Job] = []
        for n, job in enumerate(p.jobs):
            if job.call.closed:
                continue
            if n == 0 and p.current is not None:
                k = p.current
                if stuck:
                    err = f"did not stop within {limit:g}s; its worker was killed"
                    job.done[k] = Outcome(int(Verdict.ABSTAIN), "", now - p.started, err, "timeout")
                else:
                    err = f"its worker process died (exit code {p.proc.exitcode})"
                    job.done[k] = Outcome(int(Verdict.ABSTAIN), "", now - p.started, err, "died")
                job.skip = set(job.done)
            elif n == 0:  # died before starting an op: the whole item, rather than loop forever
                for k in range(len(job.need)):
                    job.done.setdefault(k, Outcome(int(Verdict.ABSTAIN), "", 0.0, "worker died before running", "died"))
                job.skip = set(job.done)
            if len(job.skip) >= len(job.need):
                job.call.results.put((job.j, dict(job.done)))
            else:
                requeue.append(job)
        with self._lock:
            self._queue.extendleft(reversed(requeue))
        self._procs[i] = _Proc(self._ctx)

    def _feed(self) -> None:
        with self._lock:
            for i, p in enumerate(list(self._procs)):
                if not p.jobs and p.answered_n >= self.recycle_after and self._queue:
                    with contextlib.suppress(OSError):
                        p.conn.send(None)  # it ends between two jobs; a fresh fork takes its place
                    p.proc.join(1)
                    p.kill()
                    p = self._procs[i] = _Proc(self._ctx)
                    self.recycled += 1
                while len(p.jobs) < DEPTH and self._queue:
                    if p.jobs and len(self._queue) <= sum(1 for q in self._procs if not q.jobs):
                        break  # a free worker will take it: none is sent ahead while another waits idle
                    if p.jobs and p.answered_n + len(p.jobs) >= self.recycle_after:
                        break  # due to be replaced: it finishes what it holds first
                    job = self._queue[0]
                    if job.call.closed:
                        self._queue.popleft()
                        continue
                    if p.jobs and not (job.small() and job.token in p.tokens and job.task_hash in p.tasks):
                        break
                    self._queue.popleft()
                    jid = job.jid = self._next_id = (self._next_id + 1) % (1 << 40)
                    try:
                        p.send(job, jid, self._blobs)
                    except (OSError, ValueError):
                        self._queue.appendleft(job)
                        break

    def close(self) -> None:
        """Stop the dispatcher and the workers (calls still running get their deadline outcomes)."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        self._thread.join(5)
        for p in self._procs:
            with contextlib.suppress(OSError):
                p.conn.send(None)
        for p in self._procs:
            p.proc.join(1)
            p.kill()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> SharedWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["DEADLINE", "SharedWorkers", "deadline_outcome"]
