"""`vx serve`: a verifier behind HTTP, for RL trainers and agent loops that are not Python (``vx-verifiers[serve]``).

    from vx.serve import make_app
    app = make_app(Verifier.load("examples/humaneval/seed.vx"))      # a Starlette (ASGI) app
    # or: vx serve examples/humaneval/seed.vx --port 8000 --warm

The verifier is loaded once, and a :class:`vx.reward.grader.GroupGrader` grades what is posted: a task's
group together (peer ops compare its completions), every request's groups on the same worker processes
(``jobs``), identical completions once (a verdict cache in memory, bounded), each group by its deadline.

Endpoints (every POST body is JSON, ``Content-Type: application/json``):

* ``POST /grade`` -- vx's own: ``{"task_id", "solution"}`` or ``{"task_id", "solutions": [...]}`` (and an
  optional ``"deadline"`` in seconds, at most the server's); answers ``{"task_id", "results": [{"verdict",
  "reason", "drawbacks", "ops"}]}`` (``"verdict"`` at the top too for a single solution). With ``"rank":
  true`` the group is also ranked (best of n, :meth:`vx.Verifier.rank`): each result gets ``"rank"``,
  ``"score"``, ``"support"`` and ``"rank_reason"``, and ``"best"`` is the index of the one ranked first.
* ``POST /openrlhf`` -- OpenRLHF's remote reward model (``--remote_rm_url http://HOST:PORT/openrlhf``).
* ``POST /verl`` -- a verl ``compute_score`` call as JSON (:mod:`vx.integrations.verl` sends it).

  Of a reply's text these two grade what the family's pack reads from it (``read_reply``: the tools family
  grades the whole reply), else its first fenced block, else the whole text.
* ``GET /health`` -- up, the expression, the tasks, what is in flight; ``GET /metrics`` -- Prometheus text.

Bodies and shapes are in :mod:`vx.reward.shapes`. **Backpressure**: at most ``max_queue`` completions are
admitted at once (queued or being graded); a request beyond that is answered 429 with ``Retry-After``.
**Deadlines**: a group not graded by its deadline comes back all the same, its completions not graded by
then abstaining with the reason ``"deadline"`` (a reward of 0 in the trainers' shapes).

**A web page cannot drive it.** Only JSON bodies are read (415 otherwise: no CSRF "simple request"); the
``Host`` header must name the address the server is bound to (a loopback name for a loopback address),
or one of ``allow_hosts`` (DNS rebinding), and an ``Origin``, when a browser sends one, must be one of
those hosts at the server's port or one of ``allow_origins`` (403 otherwise); with ``token`` every request
needs ``Authorization: Bearer TOKEN`` (401). Every malformed body is a 400 with a message -- nested
100,000 deep or a 5,000-digit number too -- and a client that goes away is not an error. Slow clients:
:func:`serve` closes a connection that has not sent its request's headers within ``header_timeout``
seconds, and a body not received within ``body_timeout`` seconds is a 408.

Starlette, uvicorn and prometheus_client are this module's optional extra: imported here at module level,
and this module is imported only by `vx serve` (and tests), never by the rest of vx.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import json
import math
import signal
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import attrs

try:
    import anyio
    import uvicorn
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
    from starlette.applications import Starlette
    from starlette.requests import ClientDisconnect, Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route
    from uvicorn.protocols.http.h11_impl import H11Protocol
except ImportError as exc:  # pragma: no cover - the extra brings them
    from vx.errors import MissingDependency

    raise MissingDependency(
        "vx serve needs Starlette, uvicorn and prometheus_client: pip install 'vx-verifiers[serve]'"
    ) from exc

from vx.reward.grader import DEFAULT_REWARDS, Graded, GroupGrader
from vx.reward.shapes import (
    Extract,
    Row,
    ShapeError,
    openrlhf_answer,
    openrlhf_rows,
    reply_reader,
    verl_rows,
    verl_score,
)
from vx.reward.tasks import TaskIndex
from vx.verifier import Grade, TraceNode, Verifier

MAX_BODY = 1_000_000  # bytes of one request
MAX_SOLUTIONS = 100  # solutions of one group
MAX_CONCURRENCY = 2  # worker processes shared by every request
MAX_CONNECTIONS = 1024  # open connections (uvicorn's limit_concurrency: 503 beyond)
MAX_QUEUE = 2048  # completions admitted at once (queued or being graded): 429 beyond
DEADLINE = 60.0  # seconds a request's groups may take
HEADER_TIMEOUT = 10.0  # seconds a connection may take to send a request's headers
BODY_TIMEOUT = 30.0  # seconds a request may take to send its body
#: threads waiting on groups being graded (they wait; the work is the shared workers')
GROUP_THREADS = 256
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, dict(headers or {})


class _Gone(Exception):
    """The client went away before its request was read."""


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=dict(headers or {}))


def _op_nodes(node: TraceNode) -> list[TraceNode]:
    out = [node] if node.kind == "op" else []
    for child in node.children:
        out += _op_nodes(child)
    return out


def grade_json(grade: Grade, reason: str | None = None) -> dict[str, Any]:
    """One grade as the server answers it: the verdict (and why, for an abstention), the checks that failed
    on a path to FAIL, and every op's verdict and message (the root first)."""
    ops: dict[str, dict[str, Any]] = {}
    for node in ([grade.root] if grade.root is not None else []) + _op_nodes(grade.trace):
        entry: dict[str, Any] = {"verdict": str(node.verdict), "message": node.message}
        if node.error:
            entry["error"] = node.error
        ops.setdefault(node.text, entry)
    return {
        "verdict": grade.verdict.value,
        "reason": reason,
        "drawbacks": [{"op": o, "message": m} for o, m in grade.drawbacks],
        "ops": ops,
    }


# ------------------------------------------------------------------------------------------ who may ask


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
        return True
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None] | None:
    """(host, port) of a Host header or an origin's netloc; None when it does not parse."""
    try:
        parts = urlsplit("//" + value)
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None


class Guard:
    """Who may ask (see the module docstring): the Host and Origin checks, the token, JSON bodies only.

    ``bound``: the address the server listens on; ``port``: its port (None: any, for an app served
    elsewhere); ``allow_hosts`` / ``allow_origins``: more names (``example.org``) and origins
    (``https://example.org``) to accept."""

    def __init__(
        self,
        bound: str = "127.0.0.1",
        port: int | None = None,
        *,
        allow_hosts: Sequence[str] = (),
        allow_origins: Sequence[str] = (),
        token: str | None = None,
    ) -> None:
        self.bound = bound.strip("[]").lower()
        self.port = port
        self.loopback = is_loopback(self.bound)
        self.allow_hosts = {h.strip("[]").lower() for h in allow_hosts}
        self.allow_origins = {o.rstrip("/").lower() for o in allow_origins}
        self.token = token

    def host_ok(self, host: str) -> bool:
        if host in self.allow_hosts:
            return True
        if self.loopback:
            return is_loopback(host)
        if self.bound in ("0.0.0.0", "::"):
            return _is_ip(host)  # a name could be anyone's (DNS rebinding): an address, or an allowed name
        return host == self.bound

    def check(self, method: str, headers: Mapping[str, str]) -> None:
        """Raise _Refused when the request may not be served."""
        found = _split_host(headers.get("host", ""))
        if found is None or not found[0] or not self.host_ok(found[0]):
            raise _Refused(
                403,
                f"the Host header {headers.get('host', '')[:100]!r} does not name this server; "
                "vx serve answers only requests addressed to the address it is bound to "
                "(--allow-host NAME adds a name)",
            )
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self.allow_origins:
            parts = urlsplit(origin) if origin != "null" else None
            ok = False
            if parts is not None and parts.scheme in ("http", "https"):
                try:
                    oport = parts.port or (443 if parts.scheme == "https" else 80)
                except ValueError:
                    oport = -1
                ok = self.host_ok((parts.hostname or "").lower()) and (self.port is None or oport == self.port)
            if not ok:
                raise _Refused(
                    403,
                    f"requests from the web page {origin[:100]!r} are refused (a page must not make this server "
                    "run code); --allow-origin ORIGIN accepts one",
                )
        if self.token is not None:
            given = headers.get("authorization", "")
            if not hmac.compare_digest(given.encode("utf-8", "replace"), f"Bearer {self.token}".encode()):
                raise _Refused(401, "this server needs the header 'Authorization: Bearer TOKEN' (its --token)")
        if method == "POST":
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                raise _Refused(
                    415,
                    f"the body must be JSON with 'Content-Type: application/json', not {ctype[:60] or 'none'!r}",
                )


# ------------------------------------------------------------------------------------------ metrics


class Metrics:
    """The server's Prometheus metrics, in a registry of its own."""

    def __init__(self, queue_depth: Callable[[], float], waiting: Callable[[], float]) -> None:
        r = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("vx_requests", "HTTP requests answered", ["endpoint", "status"], registry=r)
        self.groups = Counter("vx_groups", "groups graded", registry=r)
        self.completions = Counter("vx_completions", "completions graded", ["verdict"], registry=r)
        self.abstentions = Counter("vx_abstentions", "completions that abstained, by reason", ["reason"], registry=r)
        self.latency = Histogram(
            "vx_group_seconds", "seconds from a group's arrival to its answer", buckets=_LATENCY_BUCKETS, registry=r
        )
        self.cache_hits = Counter("vx_cache_hits", "verdicts served by the verdict cache", registry=r)
        self.shared = Counter("vx_shared_verdicts", "verdicts copied from an identical completion", registry=r)
        self.calls = Counter("vx_op_calls", "op calls made", registry=r)
        self.rejected = Counter("vx_rejected", "requests refused for a full queue (429)", registry=r)
        depth = Gauge("vx_queue_depth", "completions admitted and not answered yet", registry=r)
        depth.set_function(queue_depth)
        jobs = Gauge("vx_jobs_waiting", "completions waiting for a worker", registry=r)
        jobs.set_function(waiting)
        self.prepared = Gauge("vx_tasks_prepared", "tasks prepared at start (--warm)", registry=r)
        self.cache_bytes = Gauge("vx_cache_bytes", "bytes the verdict cache holds", registry=r)
        self.cache_entries = Gauge("vx_cache_entries", "entries the verdict cache holds", registry=r)

    def group(self, graded: Sequence[Graded], seconds: float, calls: int, hits: int, shared: int) -> None:
        self.groups.inc()
        self.latency.observe(seconds)
        self.calls.inc(calls)
        self.cache_hits.inc(hits)
        self.shared.inc(shared)
        for g in graded:
            self.completions.labels(g.verdict).inc()
            if g.reason is not None:
                self.abstentions.labels(g.reason).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)


# ------------------------------------------------------------------------------------------ the app


async def _body(request: Request, limit: int, seconds: float) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refused(413, f"the request is larger than {limit} bytes")
    data = bytearray()
    try:
        with anyio.fail_after(seconds):
            async for chunk in request.stream():
                data += chunk
                if len(data) > limit:
                    raise _Refused(413, f"the request is larger than {limit} bytes")
    except TimeoutError:
        raise _Refused(408, f"the body was not received within {seconds:g} s") from None
    except ClientDisconnect:
        raise _Gone from None
    return bytes(data)


def _decode(raw: bytes) -> Any:
    """The JSON document in a body, or _Refused(400) saying why not -- whatever the body is."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise _Refused(400, "the body is not JSON vx reads: nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise _Refused(400, f"the body is not JSON: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _Refused(400, f"the body is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # a number Python refuses to convert (more than sys.get_int_max_str_digits())
        raise _Refused(400, f"the body is not JSON vx reads: {str(exc)[:200]}") from None


class _Admission:
    """The bounded queue: completions admitted (queued or being graded), at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.admitted = 0
        self._lock = threading.Lock()
        self._done = 0
        self._t0 = time.monotonic()

    def take(self, n: int) -> None:
        with self._lock:
            if self.admitted + n > self.limit and self.admitted > 0:
                rate = self._done / max(1e-3, time.monotonic() - self._t0)
                wait = self.admitted / rate if rate > 0 else 5.0
                retry = str(max(1, min(120, math.ceil(wait))))
                raise _Refused(
                    429,
                    f"{self.admitted} completions are waiting to be graded (at most {self.limit}): try again later",
                    {"Retry-After": retry},
                )
            self.admitted += n

    def give(self, n: int) -> None:
        with self._lock:
            self.admitted -= n
            self._done += n


def make_app(
    verifier: Verifier | GroupGrader,
    *,
    max_body: int = MAX_BODY,
    max_solutions: int = MAX_SOLUTIONS,
    max_concurrency: int = MAX_CONCURRENCY,
    timeout: float = 10.0,
    deadline: float = DEADLINE,
    max_queue: int = MAX_QUEUE,
    guard: Guard | None = None,
    body_timeout: float = BODY_TIMEOUT,
    rewards: Mapping[str, float] = DEFAULT_REWARDS,
    gather: int = 1,
    gather_wait: float = 2.0,
) -> Starlette:
    """The ASGI app serving `verifier` (a Verifier, or a GroupGrader already made; see the module docstring).
    ``max_concurrency``: the worker processes of the grader made here. ``gather``: the completions of one
    task that ``POST /openrlhf`` gathers from separate requests into one group (OpenRLHF sends one
    completion per request), waiting at most ``gather_wait`` seconds for a group to fill."""
    if max_body < 1 or max_solutions < 1 or max_concurrency < 1 or max_queue < 1:
        raise ValueError("max_body, max_solutions, max_concurrency and max_queue must be at least 1")
    if not (deadline > 0 and math.isfinite(deadline)):
        raise ValueError("deadline must be a finite number of seconds > 0")
    if gather < 1 or not (gather_wait > 0 and math.isfinite(gather_wait)):
        raise ValueError("gather must be at least 1 and gather_wait a finite number of seconds > 0")
    grader = (
        verifier
        if isinstance(verifier, GroupGrader)
        else GroupGrader(verifier, workers=max_concurrency, timeout=timeout, deadline=deadline, start=False)
    )
    service = _Service(
        grader,
        _Limits(max_body, max_solutions, deadline, body_timeout),
        guard or Guard(),
        _Admission(max_queue),
        rewards,
    )
    gatherer = _Gatherer(service, gather, gather_wait)

    async def openrlhf(request: Request) -> Response:
        doc = await service.body(request)
        try:
            rows = openrlhf_rows(doc, service.index, extract=service.reader)
        except ShapeError as exc:
            raise _Refused(400, str(exc)) from None
        if gather > 1:
            graded = await gatherer.gathered(rows)
        else:
            graded = await service.grade_rows(rows, service.request_deadline(doc if isinstance(doc, Mapping) else {}))
        return JSONResponse(openrlhf_answer(graded, rewards))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await anyio.to_thread.run_sync(grader.close)  # the workers stop with the server

    routes = [
        Route("/health", service.endpoint("health", service.health), methods=["GET"]),
        Route("/metrics", service.endpoint("metrics", service.metrics_text), methods=["GET"]),
        Route("/grade", service.endpoint("grade", service.grade), methods=["POST"]),
        Route("/openrlhf", service.endpoint("openrlhf", openrlhf), methods=["POST"]),
        Route("/verl", service.endpoint("verl", service.verl), methods=["POST"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.grader = grader
    return app


@attrs.frozen
class _Limits:
    """What one request may ask: its body's bytes, its solutions, its deadline; how long its body may take."""

    max_body: int
    max_solutions: int
    deadline: float
    body_timeout: float


class _Service:
    """The endpoints over one grader: the guard, the bounded queue, the metrics and the counts /health shows."""

    def __init__(
        self,
        grader: GroupGrader,
        limits: _Limits,
        guard: Guard,
        admission: _Admission,
        rewards: Mapping[str, float],
    ) -> None:
        self.grader, self.limits, self.guard, self.admission, self.rewards = grader, limits, guard, admission, rewards
        self.verifier = grader.verifier
        self.index = TaskIndex(self.verifier.tasks)
        self.reader: Extract = reply_reader(self.verifier)  # what is graded of a trainer's reply text
        self.metrics = Metrics(lambda: admission.admitted, lambda: grader.queued)
        self.metrics.prepared.set(grader.stats.prepared)
        if grader.cache is not None:
            cache = grader.cache
            self.metrics.cache_bytes.set_function(lambda: cache.bytes)
            self.metrics.cache_entries.set_function(lambda: len(cache))
        self.limiter: anyio.CapacityLimiter | None = None  # made on the server's event loop, at the first request
        self.in_flight = 0
        self.graded = 0

    def endpoint(
        self, name: str, fn: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """`fn` behind the guard, its refusals answered as JSON errors, every answer counted."""

        async def handle(request: Request) -> Response:
            try:
                self.guard.check(request.method, request.headers)
                response = await fn(request)
            except _Refused as refused:
                response = _error(refused.status, refused.message, refused.headers)
            except _Gone:
                response = Response(status_code=400)  # nobody reads it: the client went away
            self.metrics.requests.labels(name, str(response.status_code)).inc()
            return response

        return handle

    async def grade_rows(self, rows: Sequence[Row], budget: float, rank: bool = False) -> list[Graded]:
        """Every row graded, each task's rows as one group, the groups side by side; the answers in order."""
        groups: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault(row.task_id, []).append(i)
        self.admission.take(len(rows))
        out: list[Graded | None] = [None] * len(rows)
        if self.limiter is None:
            self.limiter = anyio.CapacityLimiter(GROUP_THREADS)
        limiter = self.limiter
        self.in_flight += len(rows)

        async def one(task_id: str, idx: list[int]) -> None:
            t0 = time.perf_counter()
            result = await anyio.to_thread.run_sync(
                lambda: self.grader.grade_group(task_id, [rows[i].output for i in idx], deadline=budget, rank=rank),
                limiter=limiter,
            )
            for i, g in zip(idx, result.graded):
                out[i] = g
            self.metrics.group(result.graded, time.perf_counter() - t0, result.calls, result.cache_hits, result.shared)

        try:
            async with anyio.create_task_group() as tg:
                for task_id, idx in groups.items():
                    tg.start_soon(one, task_id, idx)
        finally:
            self.admission.give(len(rows))
            self.in_flight -= len(rows)
        self.graded += len(rows)
        return [g for g in out if g is not None]

    def request_deadline(self, doc: Mapping[str, Any]) -> float:
        asked = doc.get("deadline")
        if asked is None:
            return self.limits.deadline
        if isinstance(asked, bool) or not isinstance(asked, (int, float)) or not (0 < asked < math.inf):
            raise _Refused(400, '"deadline" is a number of seconds > 0')
        return float(min(asked, self.limits.deadline))

    async def body(self, request: Request) -> Any:
        """The request's JSON document, within the body's limits."""
        return _decode(await _body(request, self.limits.max_body, self.limits.body_timeout))

    async def health(self, request: Request) -> Response:
        return JSONResponse(
            {
                "status": "ok",
                "expression": self.verifier.text,
                "tasks": len(self.verifier.tasks),
                "in_flight": self.in_flight,
                "graded": self.graded,
                "workers": self.grader.n_workers,
                "tasks_prepared": self.grader.stats.prepared,
            }
        )

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def grade(self, request: Request) -> Response:
        doc = await self.body(request)
        task_id, outputs, single, rank = self._grade_request(doc)
        graded = await self.grade_rows([Row(task_id, o) for o in outputs], self.request_deadline(doc), rank)
        results = [grade_json(g.grade, g.reason) for g in graded]
        body: dict[str, Any] = {"task_id": task_id, "results": results}
        placed = [g.placement for g in graded]
        if rank and all(p is not None for p in placed):
            for res, p in zip(results, placed):
                assert p is not None
                res.update({"rank": p.rank, "score": round(p.score, 6), "support": p.support, "rank_reason": p.reason})
            body["best"] = next(i for i, p in enumerate(placed) if p is not None and p.rank == 1)
        if single:
            body["verdict"] = results[0]["verdict"]
        return JSONResponse(body)

    def _grade_request(self, doc: Any) -> tuple[str, list[str], bool, bool]:
        """A /grade body checked: the task id, the solutions, whether one was sent alone, whether to rank."""
        if not isinstance(doc, Mapping):
            raise _Refused(400, 'the body is a JSON object: {"task_id", "solution"} or {"task_id", "solutions": [...]}')
        task_id = doc.get("task_id")
        if not isinstance(task_id, str):
            raise _Refused(400, '"task_id" (a string: a task of the verifier\'s family) is required')
        if ("solution" in doc) == ("solutions" in doc):
            raise _Refused(400, 'give exactly one of "solution" (a string) and "solutions" (a list of strings)')
        single = "solution" in doc
        outputs = [doc["solution"]] if single else doc["solutions"]
        if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) for o in outputs):
            raise _Refused(400, '"solution" is a string, "solutions" a non-empty list of strings')
        if len(outputs) > self.limits.max_solutions:
            raise _Refused(413, f"{len(outputs)} solutions: at most {self.limits.max_solutions} in one request")
        if task_id not in self.verifier.tasks:
            some = ", ".join(list(self.verifier.tasks)[:3])
            raise _Refused(404, f"{task_id[:100]!r} is not a task of the verifier's family (ids like {some})")
        rank = doc.get("rank", False)
        if not isinstance(rank, bool):
            raise _Refused(400, '"rank" is true (rank the group: best of n) or false')
        return task_id, outputs, single, rank

    async def verl(self, request: Request) -> Response:
        doc = await self.body(request)
        try:
            rows, plural = verl_rows(doc, self.index, extract=self.reader)
        except ShapeError as exc:
            raise _Refused(400, str(exc)) from None
        graded = await self.grade_rows(rows, self.request_deadline(doc if isinstance(doc, Mapping) else {}))
        scores = [verl_score(g, self.rewards) for g in graded]
        return JSONResponse({"scores": scores} if plural else scores[0])


class _Gatherer:
    """``POST /openrlhf``'s groups: the completions of one task gathered from separate requests until `gather`
    of them wait or the first has waited `wait` seconds, then graded as one group; each request gets its
    own result."""

    def __init__(self, service: _Service, gather: int, wait: float) -> None:
        self.service, self.gather, self.wait = service, gather, wait
        self.pending: dict[str, list[tuple[Row, asyncio.Future[Graded]]]] = {}
        self.running: set[asyncio.Task[None]] = set()

    def flush(self, task_id: str) -> None:
        """Grade the completions gathered for `task_id` as one group; each request gets its own result."""
        waiting = self.pending.pop(task_id, [])
        if not waiting:
            return

        async def run() -> None:
            try:
                graded = await self.service.grade_rows([row for row, _ in waiting], self.service.limits.deadline)
            except Exception as exc:  # noqa: BLE001 - every request of the group hears it (a full queue: 429)
                for _, fut in waiting:
                    if not fut.done():
                        fut.set_exception(exc)
                return
            for (_, fut), g in zip(waiting, graded):
                if not fut.done():
                    fut.set_result(g)

        self.running.add(task := asyncio.get_running_loop().create_task(run()))
        task.add_done_callback(self.running.discard)

    def flush_if_still(self, task_id: str, group: list[tuple[Row, asyncio.Future[Graded]]]) -> None:
        """A group's wait is over: grade it, unless it was graded when it filled (a new group waits on its own)."""
        if self.pending.get(task_id) is group:
            self.flush(task_id)

    async def gathered(self, rows: Sequence[Row]) -> list[Graded]:
        loop = asyncio.get_running_loop()
        futures = []
        for row in rows:
            fut: asyncio.Future[Graded] = loop.create_future()
            group = self.pending.setdefault(row.task_id, [])
            group.append((row, fut))
            futures.append(fut)
            if len(group) >= self.gather:
                self.flush(row.task_id)
            elif len(group) == 1:  # the group's wait starts with its first completion (and ends with it)
                loop.call_later(self.wait, self.flush_if_still, row.task_id, group)
        return list(await asyncio.gather(*futures))


# ------------------------------------------------------------------------------------------ the server


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) and listening (port 0: a free port), so the port is known before
    the server starts."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    return sock


def _protocol(header_timeout: float) -> type[H11Protocol]:
    class HeaderTimedProtocol(H11Protocol):
        """uvicorn's HTTP/1.1 protocol, closing a connection whose next request's headers have not all
        arrived within ``header_timeout`` seconds of its opening or of the end of its last response
        (slowloris: a client that sends a header line now and then keeps its connection only that long)."""

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def _arm(self) -> None:
            old = getattr(self, "_header_timer", None)
            if old is not None:
                old.cancel()
            self._header_timer = self.loop.call_later(header_timeout, self._headers_due)

        def _headers_due(self) -> None:
            import h11

            # still waiting for a request's headers (h11: the client's side is IDLE until they are complete)
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # half a request: no answer is owed

        def connection_lost(self, exc: Exception | None) -> None:
            timer = getattr(self, "_header_timer", None)
            if timer is not None:
                timer.cancel()
            super().connection_lost(exc)

    return HeaderTimedProtocol


def serve(
    verifier: Verifier | GroupGrader,
    sock: socket.socket,
    *,
    max_connections: int = MAX_CONNECTIONS,
    graceful: float = 30.0,
    log_level: str = "warning",
    header_timeout: float = HEADER_TIMEOUT,
    **app_options: Any,
) -> None:
    """Serve `verifier` on the listening `sock` until SIGINT/SIGTERM (requests in flight finish, up
    to `graceful` seconds)."""
    config = uvicorn.Config(
        make_app(verifier, **app_options),
        limit_concurrency=max_connections,
        timeout_graceful_shutdown=math.ceil(graceful),
        timeout_keep_alive=min(5, int(header_timeout)) or 1,
        log_level=log_level,
        access_log=False,
        http=_protocol(header_timeout),
    )
    # uvicorn handles SIGINT/SIGTERM (stop accepting, finish what is in flight), then raises the signal
    # again for the handler that was there before it: here one that does nothing, so that a stop asked
    # for is a normal return (exit 0), not a death by the signal.
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = [
    "BODY_TIMEOUT",
    "DEADLINE",
    "HEADER_TIMEOUT",
    "MAX_BODY",
    "MAX_CONCURRENCY",
    "MAX_CONNECTIONS",
    "MAX_QUEUE",
    "MAX_SOLUTIONS",
    "Guard",
    "grade_json",
    "is_loopback",
    "listening_socket",
    "make_app",
    "serve",
]
