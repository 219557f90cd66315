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


def message(text: str, *, model: str = "claude-haiku-4-5", input_tokens: int = 100, output_tokens: int = 10,
            cache_write: int = 0, cache_read: int = 0) -> dict[str, Any]:
    """A Messages API response body, in the shape the API returns."""
    return {
        "id": "msg_01FAKE", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read},
    }


def error_body(status: int) -> dict[str, Any]:
    kind = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error", 400: "invalid_request_error",
            401: "authentication_error", 404: "not_found_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": f"fake {kind}"}}


class FakeAPI:
    def __init__(self, default: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.queue: list[Callable[[Any], Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.default = default or (lambda req: "ANSWER: NO")
        self.model_lookups: list[str] = []
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
            return http.Response(200, json={"type": "model", "id": model, "display_name": model.upper(),
                                            "created_at": "2025-10-01T00:00:00Z"})
        body = json.loads(request.content)
        self.requests.append(body)
        if self.queue:
            return self.queue.pop(0)(request)
        return http.Response(200, json=message(self.default(body), model=body.get("model", "?")))

    def sdk(self) -> Any:
        """A real `anthropic.Anthropic` whose HTTP goes to this fake (the SDK's own retries off)."""
        return anthropic.Anthropic(api_key="sk-test-not-a-real-key", max_retries=0,
                                   http_client=http.Client(transport=http.MockTransport(self)))
