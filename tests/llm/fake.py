"""A fake Anthropic HTTP endpoint for tests: the real SDK, a mock transport, recorded-shape responses.

`FakeAPI` is an httpx(2) MockTransport handler. Queue replies with `.reply(text)`, `.error(status)`,
`.timeout()`; when the queue is empty it answers with `default(request_json)`. Every request body
the SDK sent is kept in `.requests`.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")


def _http_module():
    """The HTTP library the installed SDK is built on (httpx, or httpx2 for anthropic >= 2)."""
    base = importlib.import_module("anthropic._base_client")
    for name in ("httpx2", "httpx"):
        if hasattr(base, name):
            return getattr(base, name)
    return importlib.import_module("httpx")


http = _http_module()


def message(
    text: str,
    *,
    model: str = "claude-haiku-4-5",
    input_tokens: int = 100,
    output_tokens: int = 10,
    cache_write: int = 0,
    cache_read: int = 0,
) -> dict[str, Any]:
    """A Messages API response body, in the shape the API returns."""
    return {
        "id": "msg_01FAKE",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
        },
    }


def error_body(status: int) -> dict[str, Any]:
    kind = {
        429: "rate_limit_error",
        529: "overloaded_error",
        500: "api_error",
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
    }.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"fake {kind}"}}


class FakeAPI:
    def __init__(self, default: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.queue: list[Callable[[Any], Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.default = default or (lambda req: "ANSWER: NO")
        self.model_lookups: list[str] = []
        self.batches: dict[str, dict[str, Any]] = {}  # id -> {"requests": [...], "polls_left": n}
        self.batch_polls = 1  # retrieve() answers "in_progress" this many times before "ended"
        self.batch_failures: set[str] = set()  # custom ids that come back errored
        self.unknown_models: set[str] = set()

    # --- scripting ------------------------------------------------------------------------------
    def reply(self, text: str, **usage: int) -> FakeAPI:
        self.queue.append(lambda req: http.Response(200, json=message(text, model=self._model(req), **usage)))
        return self

    def error(self, status: int, headers: dict[str, str] | None = None) -> FakeAPI:
        self.queue.append(lambda req: http.Response(status, json=error_body(status), headers=headers or {}))
        return self

    def timeout(self) -> FakeAPI:
        def raise_timeout(req):
            raise http.ReadTimeout("fake read timeout", request=req)

        self.queue.append(raise_timeout)
        return self

    @staticmethod
    def _model(req) -> str:
        return json.loads(req.content).get("model", "claude-haiku-4-5")

    # --- the transport handler --------------------------------------------------------------------
    def __call__(self, request) -> Any:
        if request.method == "GET" and request.url.path.startswith("/v1/models/"):
            model = request.url.path.rsplit("/", 1)[1]
            self.model_lookups.append(model)
            if model in self.unknown_models:
                return http.Response(404, json=error_body(404))
            return http.Response(
                200,
                json={
                    "type": "model",
                    "id": model,
                    "display_name": model.upper(),
                    "created_at": "2025-10-01T00:00:00Z",
                },
            )
        path = request.url.path
        if path.startswith("/v1/messages/batches"):
            return self._batches(request, path)
        body = json.loads(request.content)
        self.requests.append(body)
        if self.queue:
            return self.queue.pop(0)(request)
        return http.Response(200, json=message(self.default(body), model=body.get("model", "?")))

    def _batch_json(self, bid: str) -> dict[str, Any]:
        b = self.batches[bid]
        ended = b["polls_left"] <= 0
        n = len(b["requests"])
        failed = sum(1 for r in b["requests"] if r["custom_id"] in self.batch_failures)
        return {
            "id": bid,
            "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {
                "processing": 0 if ended else n,
                "succeeded": n - failed if ended else 0,
                "errored": failed if ended else 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2025-10-01T00:00:00Z",
            "expires_at": "2025-10-02T00:00:00Z",
            "ended_at": "2025-10-01T01:00:00Z" if ended else None,
            "results_url": f"https://api.anthropic.com/v1/messages/batches/{bid}/results" if ended else None,
        }

    def _batches(self, request, path: str) -> Any:
        if request.method == "POST" and path == "/v1/messages/batches":
            bid = f"msgbatch_{len(self.batches) + 1:03d}"
            self.batches[bid] = {"requests": json.loads(request.content)["requests"], "polls_left": self.batch_polls}
            return http.Response(200, json=self._batch_json(bid))
        parts = path.split("/")  # ['', 'v1', 'messages', 'batches', id, ('results')]
        bid = parts[4]
        if len(parts) == 6 and parts[5] == "results":
            lines = []
            for r in self.batches[bid]["requests"]:
                if r["custom_id"] in self.batch_failures:
                    res = {
                        "type": "errored",
                        "error": {"type": "error", "error": {"type": "api_error", "message": "fake failure"}},
                    }
                else:
                    params = r["params"]
                    res = {"type": "succeeded", "message": message(self.default(params), model=params["model"])}
                lines.append(json.dumps({"custom_id": r["custom_id"], "result": res}))
            return http.Response(
                200, content=("\n".join(lines) + "\n").encode(), headers={"content-type": "application/binary"}
            )
        self.batches[bid]["polls_left"] -= 1
        return http.Response(200, json=self._batch_json(bid))

    def sdk(self) -> Any:
        """A real `anthropic.Anthropic` whose HTTP goes to this fake (the SDK's own retries off)."""
        return anthropic.Anthropic(
            api_key="sk-test-not-a-real-key", max_retries=0, http_client=http.Client(transport=http.MockTransport(self))
        )
