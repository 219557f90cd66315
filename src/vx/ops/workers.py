"""The pool of forked worker processes that op application runs items in, surviving crashing and hanging ops.

`run_parallel(jobs, ops, tasks, timeout, n_workers, on_done)` runs every job (an item and the indices of
the ops it needs) with `vx.ops.running.run_item` in ``n_workers`` forked processes and calls
``on_done(j, outcomes)`` in the parent once per job. A worker whose op will not stop within its limit
(plus :data:`KILL_GRACE`) or that dies is killed and replaced: the op running abstains, and the rest of
the item's ops go on in a new worker. Jobs go out with task affinity (`_Pending`), and each worker holds
up to :data:`WORKER_DEPTH` of them.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from vx.dsl.verdict import Verdict
from vx.ops.core import Op
from vx.ops.item import Item
from vx.ops.running import Outcome, run_item

__all__ = ["KILL_GRACE", "WORKER_DEPTH", "run_parallel"]

KILL_GRACE = 2.0  # extra seconds before a worker that ignores the soft timeout is killed


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

        def started(k: int, j: int = j) -> None:
            running.value = _running_code(j, k)

        try:
            res = run_item(ops, tasks[item.task], item.output, timeout, on_start=started, skip=frozenset(skip))
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

    def __init__(self, ctx: mp.context.ForkContext) -> None:
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


def run_parallel(
    jobs: list[tuple[Item, list[int]]],
    ops: list[Op],
    tasks: Mapping[str, Mapping[str, Any]],
    timeout: float,
    n_workers: int,
    on_done: Callable[[int, dict[int, Outcome]], None],
) -> None:
    """Run every job in ``n_workers`` forked processes; ``on_done(j, outcomes)`` once per job, in this process."""
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
