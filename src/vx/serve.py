"""`vx serve`: a verifier behind HTTP, for agent loops that are not Python (``vx-verifiers[serve]``).

    from vx.serve import make_app
    app = make_app(Verifier.load("examples/humaneval/seed.vx"))      # a Starlette (ASGI) app
    # or: vx serve examples/humaneval/seed.vx --port 8000

The verifier is loaded once. ``GET /health`` says it is up (the expression, the number of tasks, the
requests being graded). ``POST /grade`` takes ``{"task_id": ..., "solution": "..."}`` or ``{"task_id":
..., "solutions": ["...", ...]}`` -- a task's group, graded together so peer ops compare the attempts
-- and answers ``{"task_id", "results": [{"verdict", "drawbacks": [{"op", "message"}], "ops": {op:
{"verdict", "message", "error"?}}}]}`` (one result per solution, in order; ``"verdict"`` at the top too
for a single solution). A request larger than `max_body` bytes is refused (413), as is a group of more
than `max_solutions`; bad JSON or fields are a 400, an unknown task a 404, each with an ``"error"``
message. At most `max_concurrency` requests are graded at once (the others wait their turn, in
worker threads: the event loop keeps answering ``/health``); the server itself caps open connections
(``limit_concurrency``: 503 beyond) and, on SIGINT/SIGTERM, stops accepting, finishes the requests
in flight and exits 0.

Starlette and uvicorn are this module's optional extra: imported here at module level, and this
module is imported only by `vx serve` (and tests), never by the rest of vx.
"""

from __future__ import annotations

import json
import signal
import socket
import threading
from collections.abc import Mapping
from typing import Any

try:
    import anyio
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - the extra brings them
    from vx.errors import MissingDependency

    raise MissingDependency("vx serve needs Starlette and uvicorn: pip install 'vx-verifiers[serve]'") from exc

from vx.verifier import Grade, TraceNode, Verifier

MAX_BODY = 1_000_000  # bytes of one request
MAX_SOLUTIONS = 100  # solutions of one group
MAX_CONCURRENCY = 2  # requests graded at once
MAX_CONNECTIONS = 256  # open connections (uvicorn's limit_concurrency: 503 beyond)


class _TooLarge(Exception):
    pass


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _op_nodes(node: TraceNode) -> list[TraceNode]:
    out = [node] if node.kind == "op" else []
    for child in node.children:
        out += _op_nodes(child)
    return out


def grade_json(grade: Grade) -> dict[str, Any]:
    """One grade as the server answers it: the verdict, the checks that failed on a path to FAIL, and
    every op's verdict and message (the root first)."""
    ops: dict[str, dict[str, Any]] = {}
    for node in ([grade.root] if grade.root is not None else []) + _op_nodes(grade.trace):
        entry: dict[str, Any] = {"verdict": str(node.verdict), "message": node.message}
        if node.error:
            entry["error"] = node.error
        ops.setdefault(node.text, entry)
    return {
        "verdict": grade.verdict.value,
        "drawbacks": [{"op": o, "message": m} for o, m in grade.drawbacks],
        "ops": ops,
    }


async def _body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise _TooLarge
    return bytes(data)


def make_app(
    verifier: Verifier,
    *,
    max_body: int = MAX_BODY,
    max_solutions: int = MAX_SOLUTIONS,
    max_concurrency: int = MAX_CONCURRENCY,
    timeout: float = 10.0,
) -> Starlette:
    """The ASGI app serving `verifier` (see the module docstring)."""
    if max_body < 1 or max_solutions < 1 or max_concurrency < 1:
        raise ValueError("max_body, max_solutions and max_concurrency must be at least 1")
    state = {"in_flight": 0, "graded": 0}
    limiter: list[anyio.CapacityLimiter] = []  # made on the server's event loop, at the first request

    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "ok",
                "expression": verifier.text,
                "tasks": len(verifier.tasks),
                "in_flight": state["in_flight"],
                "graded": state["graded"],
            }
        )

    async def grade(request: Request) -> JSONResponse:
        try:
            raw = await _body(request, max_body)
        except _TooLarge:
            return _error(413, f"the request is larger than {max_body} bytes")
        try:
            doc = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error(400, f"the body is not JSON: {exc}")
        if not isinstance(doc, Mapping):
            return _error(400, 'the body is a JSON object: {"task_id", "solution"} or {"task_id", "solutions": [...]}')
        task_id = doc.get("task_id")
        if not isinstance(task_id, str):
            return _error(400, '"task_id" (a string: a task of the verifier\'s family) is required')
        if ("solution" in doc) == ("solutions" in doc):
            return _error(400, 'give exactly one of "solution" (a string) and "solutions" (a list of strings)')
        single = "solution" in doc
        outputs = [doc["solution"]] if single else doc["solutions"]
        if not isinstance(outputs, list) or not outputs or not all(isinstance(o, str) for o in outputs):
            return _error(400, '"solution" is a string, "solutions" a non-empty list of strings')
        if len(outputs) > max_solutions:
            return _error(413, f"{len(outputs)} solutions: at most {max_solutions} in one request")
        if task_id not in verifier.tasks:
            some = ", ".join(list(verifier.tasks)[:3])
            return _error(404, f"{task_id!r} is not a task of the verifier's family (ids like {some})")
        if not limiter:
            limiter.append(anyio.CapacityLimiter(max_concurrency))
        state["in_flight"] += 1
        try:
            grades = await anyio.to_thread.run_sync(
                lambda: verifier.grade_many(task_id, outputs, jobs=1, timeout=timeout), limiter=limiter[0]
            )
        finally:
            state["in_flight"] -= 1
        state["graded"] += len(grades)
        results = [grade_json(g) for g in grades]
        body: dict[str, Any] = {"task_id": task_id, "results": results}
        if single:
            body["verdict"] = results[0]["verdict"]
        return JSONResponse(body)

    return Starlette(routes=[Route("/health", health, methods=["GET"]), Route("/grade", grade, methods=["POST"])])


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


def serve(
    verifier: Verifier,
    sock: socket.socket,
    *,
    max_connections: int = MAX_CONNECTIONS,
    graceful: float = 30.0,
    log_level: str = "warning",
    **app_options: Any,
) -> None:
    """Serve `verifier` on the listening `sock` until SIGINT/SIGTERM (requests in flight finish, up
    to `graceful` seconds)."""
    config = uvicorn.Config(
        make_app(verifier, **app_options),
        limit_concurrency=max_connections,
        timeout_graceful_shutdown=graceful,
        log_level=log_level,
        access_log=False,
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
    "MAX_BODY",
    "MAX_CONCURRENCY",
    "MAX_CONNECTIONS",
    "MAX_SOLUTIONS",
    "grade_json",
    "listening_socket",
    "make_app",
    "serve",
]
