"""Where op application runs: this machine's worker processes, or a Dask cluster.

``apply_ops`` (and everything built on it: ``Verifier.grade_items``, ``vx eval``, evolution) decides
what must be computed (cache look-ups happen in the driver), hands the items to an executor, and
records the verdicts it returns (the driver alone writes the verdict cache and the run file). An
executor only maps ``run_item`` over items:

* :class:`LocalExecutor` -- forked worker processes on this machine (the default), which survive
  crashing and hanging ops (``vx.ops.workers``);
* :class:`DaskExecutor` -- a Dask distributed cluster: an existing one (``address``, or
  ``$VX_DASK_SCHEDULER``), or a local one it starts and stops itself.

Why Dask rather than Ray: Dask distributed is pure Python (it installs in seconds as an optional
extra, ``vx-verifiers[dask]``), a local cluster starts in about a second with ordinary worker
processes, and its scheduler already re-runs the tasks of a worker that dies; Ray brings a large
binary runtime (object store, raylet, GCS) that vx would not use.

Shipping: the ops travel as specs or pack references (``vx.ops.core.Op.__reduce__``) and are
rebuilt on each worker, which checks their versions; tasks travel once per worker (scattered).
Items go in chunks; each chunk's verdicts come back to the driver, which records an item once
(the first result wins; a chunk re-run after a worker died never doubles anything). A chunk whose
task fails repeatedly (e.g. ``KilledWorker``) is re-submitted, and as a last resort run in the
driver, so no item is ever lost.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vx.ops.running import run_item
from vx.ops.workers import run_parallel

EXECUTORS = ("local", "dask")
SCHEDULER_ENV = "VX_DASK_SCHEDULER"

Job = Any  # (Item, [op indices]) as built by apply_ops
OnDone = Callable[[int, dict], None]


class ExecutorError(RuntimeError):
    """An executor that cannot run (engine not installed, cluster unreachable)."""


class Executor:
    """Runs ``run_item(ops[need], tasks[item.task], item.output, timeout)`` for every job and calls
    ``on_done(j, {k: Outcome})`` once per job, in the driver."""

    name = "executor"

    def run(
        self,
        jobs: Sequence[Job],
        ops: Sequence[Any],
        tasks: Mapping[str, Mapping[str, Any]],
        timeout: float,
        on_done: OnDone,
    ) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        return self.name

    def close(self) -> None:
        """Release what the executor started (a local cluster)."""


class LocalExecutor(Executor):
    """This machine: ``jobs`` forked worker processes (1: in this process)."""

    name = "local"

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = jobs

    def run(self, jobs, ops, tasks, timeout, on_done) -> None:
        n = self.jobs if self.jobs is not None else (os.cpu_count() or 1)
        if n <= 1 or len(jobs) == 1:
            for j, (it, need) in enumerate(jobs):
                on_done(j, run_item([ops[c] for c in need], tasks[it.task], it.output, timeout))
        elif jobs:
            run_parallel(list(jobs), list(ops), tasks, timeout, n, on_done)

    def describe(self) -> str:
        return f"local ({self.jobs or os.cpu_count() or 1} worker processes)"


# --------------------------------------------------------------------------------------------
# Dask


_PAYLOADS: dict[str, tuple[list[Any], dict[str, Any]]] = {}
_PAYLOAD_LOCK = threading.Lock()


def _unpack(token: str, blob: bytes) -> tuple[list[Any], dict[str, Any]]:
    with _PAYLOAD_LOCK:
        found = _PAYLOADS.get(token)
        if found is None:
            found = pickle.loads(blob)
            _PAYLOADS.clear()  # one run's payload at a time per worker
            _PAYLOADS[token] = found
        return found


def _run_chunk(
    token: str, blob: bytes, chunk: list[tuple[int, str, Any, list[int]]], timeout: float
) -> list[tuple[int, dict]]:
    """On a worker: run one chunk of items (the unit Dask schedules and re-runs)."""
    ops, tasks = _unpack(token, blob)
    return [
        (j, run_item([ops[c] for c in need], tasks[task_id], output, timeout)) for j, task_id, output, need in chunk
    ]


class DaskExecutor(Executor):
    """A Dask distributed cluster.

    ``address``: a scheduler to connect to (``tcp://host:8786``); None: ``$VX_DASK_SCHEDULER``,
    else a local cluster of ``n_workers`` processes started here (and closed by ``close()``).
    ``client``: an existing ``distributed.Client`` to use instead. ``chunk``: items per task.
    """

    name = "dask"

    def __init__(
        self,
        address: str | None = None,
        *,
        n_workers: int | None = None,
        client: Any = None,
        chunk: int = 8,
        retries: int = 3,
    ) -> None:
        try:
            import distributed
        except ImportError:
            raise ExecutorError("the dask executor needs Dask distributed: pip install 'vx-verifiers[dask]'") from None
        self._distributed = distributed
        self.chunk = max(1, chunk)
        self.retries = retries
        self._own: list[Any] = []
        if client is not None:
            self.client = client
        else:
            address = address or os.environ.get(SCHEDULER_ENV) or None
            if address:
                try:
                    self.client = distributed.Client(address, timeout=30)
                except (OSError, TimeoutError) as exc:
                    raise ExecutorError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
            else:
                cluster = distributed.LocalCluster(
                    n_workers=n_workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    silence_logs=40,
                )
                self.client = distributed.Client(cluster)
                self._own = [self.client, cluster]
            self._own = self._own or [self.client]

    def describe(self) -> str:
        info = self.client.scheduler_info()
        return f"dask ({len(info.get('workers', {}))} workers at {info.get('address', '?')})"

    def run(self, jobs, ops, tasks, timeout, on_done) -> None:
        if not jobs:
            return
        distributed = self._distributed
        needed = {it.task for it, _ in jobs}
        blob = pickle.dumps((list(ops), {t: dict(tasks[t]) for t in needed}), protocol=pickle.HIGHEST_PROTOCOL)
        token = hashlib.sha256(blob).hexdigest()[:16]
        [shared] = self.client.scatter([blob], broadcast=True, hash=False)
        chunks = [
            [
                (j, jobs[j][0].task, jobs[j][0].output, list(jobs[j][1]))
                for j in range(start, min(start + self.chunk, len(jobs)))
            ]
            for start in range(0, len(jobs), self.chunk)
        ]
        recorded: set[int] = set()
        attempts = [0] * len(chunks)
        futures = {}

        def submit(index: int) -> Any:
            fut = self.client.submit(_run_chunk, token, shared, chunks[index], timeout, pure=False)
            futures[fut] = index
            return fut

        for index in range(len(chunks)):
            submit(index)
        pending = distributed.as_completed(list(futures), with_results=False)
        local_fallback: list[int] = []
        for fut in pending:
            index = futures.pop(fut)
            try:
                results = fut.result()
            except Exception:  # the worker died (KilledWorker) or the task failed: run it again
                attempts[index] += 1
                if attempts[index] <= self.retries:
                    pending.add(submit(index))
                else:
                    local_fallback.append(index)
                continue
            for j, outcome in results:
                if j not in recorded:  # a re-run chunk never records an item twice
                    recorded.add(j)
                    on_done(j, outcome)
        if local_fallback:
            for index in local_fallback:
                for j, task_id, output, need in chunks[index]:
                    if j not in recorded:
                        recorded.add(j)
                        on_done(j, run_item([ops[c] for c in need], tasks[task_id], output, timeout))
        missing = set(range(len(jobs))) - recorded
        if missing:  # pragma: no cover - every chunk either returned or ran here
            raise ExecutorError(f"{len(missing)} items got no result from the cluster")

    def close(self) -> None:
        for obj in self._own:
            try:
                obj.close()
            except Exception:  # noqa: BLE001 - closing a half-dead cluster: nothing left to do
                pass
        self._own = []


EXECUTOR_ENV = "VX_EXECUTOR"


def make_executor(spec: str | Executor | None, *, jobs: int | None = None, address: str | None = None) -> Executor:
    """``"local"`` (this machine, ``jobs`` processes), ``"dask"`` (``address``, or
    ``$VX_DASK_SCHEDULER``, else a local cluster of ``jobs`` workers), or an Executor as is.
    None: ``$VX_EXECUTOR`` (so commands without an --executor option, e.g. `vx evolve`, can be
    pointed at a cluster), else local."""
    if isinstance(spec, Executor):
        return spec
    if spec is None:
        spec = os.environ.get(EXECUTOR_ENV, "").strip() or None
    if spec in (None, "local"):
        return LocalExecutor(jobs)
    if spec == "dask":
        return DaskExecutor(address, n_workers=jobs)
    raise ExecutorError(f"unknown executor {spec!r}; choose one of {', '.join(EXECUTORS)}")
