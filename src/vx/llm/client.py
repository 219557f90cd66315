"""The one LLM client layer: the official `anthropic` SDK, cached, retried, bounded and budgeted.

Every call goes through `LLMClient.complete(role, ...)`:

1. the request is built from the role's model / max_tokens / temperature (`vx.llm.config`), with
   the shared prefix — the system prompt — marked for prompt caching (``cache_control``);
2. the disk cache (`vx.llm.cache`) is consulted: a hit costs nothing and makes no API call;
3. the run's budget is checked (tokens and USD, shared by all processes of the run through the
   ledger): a call that could overrun it is not made, and `BudgetExceeded` is raised;
4. at most ``concurrency`` calls are in flight per process; 429 / 529 / 5xx / timeouts / connection
   errors are retried with exponential backoff and full jitter (a ``retry-after`` header is honoured),
   a connection that cannot be made at all (no network, DNS) at most :data:`CONNECTION_RETRIES` times,
   each retry announced to ``on_retry`` (the command's status line);
5. the successful response is cached and its usage recorded; errors are recorded but never cached.

The SDK is imported only when a client is made, so the rest of vx works without it. With no key in
the environment, `active_client()` is None and every role is skipped (judge ops abstain).
"""

from __future__ import annotations

import functools
import inspect
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from vx.errors import VxError
from vx.llm.cache import ResponseCache, request_key
from vx.llm.config import OFF_MESSAGE, LLMConfig, has_credentials

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
BACKOFF_BASE = 1.0  # seconds; attempt n waits a uniform random time in [0, min(cap, base·2ⁿ)]
BACKOFF_CAP = 60.0
#: retries of a call whose connection could not be made (not a timeout, not an HTTP status): no network
#: is not a load spike, so a run without one fails in seconds instead of retrying for minutes
CONNECTION_RETRIES = 2


class LLMError(VxError):
    """Base class of the LLM layer's errors."""


class LLMUnavailable(LLMError):
    """LLM roles cannot run here: no credentials, or the `anthropic` package is not installed."""


class BudgetExceeded(LLMError):
    """The run's LLM budget is spent; no further calls are made. Loops catch this and carry on offline."""

    def __init__(self, spent_tokens: int, spent_usd: float, config: LLMConfig) -> None:
        self.spent_tokens, self.spent_usd = spent_tokens, spent_usd
        super().__init__(
            f"LLM budget reached: {spent_tokens:,} tokens / ${spent_usd:.4f} spent of "
            f"{config.budget_tokens:,} tokens / ${config.budget_usd:.2f}; no more LLM calls in this "
            "run (raise budget_usd / budget_tokens, or VX_LLM_BUDGET_USD, to allow more)"
        )


class LLMCallFailed(LLMError):
    """A call that failed for good (a non-retryable error, or retries exhausted)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


@attrs.frozen
class Completion:
    """One model answer (from the API or the cache)."""

    text: str
    role: str
    model: str
    key: str
    cached: bool
    stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0
    retries: int = 0


@functools.cache
def sdk_accepts(param: str) -> bool:
    """Whether the installed SDK's `messages.create` takes `param` (a request never carries one it does not)."""
    try:
        from anthropic.resources.messages import Messages
    except ImportError:
        return False
    return param in inspect.signature(Messages.create).parameters


def _sdk_error_types() -> tuple[type[Exception], type[Exception], type[Exception]]:
    import anthropic

    return anthropic.APIStatusError, anthropic.APIConnectionError, anthropic.APITimeoutError


def make_sdk_client(config: LLMConfig) -> Any:
    """An `anthropic.Anthropic` client with the SDK's own retries off (this layer retries)."""
    if not has_credentials():
        raise LLMUnavailable(OFF_MESSAGE)
    try:
        import anthropic
    except ImportError:
        raise LLMUnavailable("LLM roles need the anthropic package: pip install 'vx-verifiers[llm]'") from None
    return anthropic.Anthropic(max_retries=0, timeout=config.timeout)


def _estimate_tokens(request: Mapping[str, Any]) -> int:
    """A deliberately generous input-token estimate (≈3 characters per token) for the budget pre-check."""
    chars = len(str(request.get("system", ""))) + len(str(request.get("messages", "")))
    return chars // 3 + 16


class LLMClient:
    """Calls models by role. Thread-safe; one per process (see `active_client`)."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        run_id: str | None = None,
        sdk: Any = None,
        cache: ResponseCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self._sdk = sdk
        self.cache = cache if cache is not None else ResponseCache(config.cache)
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._lock = threading.Lock()  # serialises budget check + accounting within this process
        self._reserved: tuple[int, float] = (0, 0.0)  # worst case of the calls in flight in this process
        self.api_calls = 0  # made by this object (the ledger has the run's total)
        #: hears "<role> call to <model>: <what>; retry n of m in s seconds" before each retry's wait
        self.on_retry: Callable[[str], None] | None = None

    # --- requests -----------------------------------------------------------------------------
    def build_request(
        self,
        role: str,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        rc = self.config.role(role)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
        req: dict[str, Any] = {
            "model": rc.model,
            "max_tokens": int(max_tokens or rc.max_tokens),
            "messages": [dict(m) for m in messages],
        }
        if sdk_accepts("temperature"):  # recent SDKs (anthropic >= 2) no longer take sampling parameters
            req["temperature"] = float(rc.temperature if temperature is None else temperature)
        if system:
            # The system block is the prefix shared by many calls (instructions, catalog, question):
            # mark it for prompt caching.
            req["system"] = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        return req

    def complete(
        self,
        role: str,
        messages: str | Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        tag: str | None = None,
    ) -> Completion:
        """Ask `role`'s model. `tag` separates cache entries of identical requests (e.g. sample index)."""
        request = self.build_request(role, messages, system=system, max_tokens=max_tokens, temperature=temperature)
        return self.send(role, request, tag=tag)

    def complete_many(self, role: str, prompts: Sequence[Mapping[str, Any]]) -> list[Completion | LLMError]:
        """Run many `complete` calls (each a dict of its keyword arguments, ``messages`` required), at most
        ``concurrency`` at a time; the result list is in input order, a failed call gives its error."""

        def one(kw: Mapping[str, Any]) -> Completion | LLMError:
            kw = dict(kw)
            try:
                return self.complete(role, kw.pop("messages"), **kw)
            except LLMError as exc:
                return exc

        if len(prompts) <= 1:
            return [one(p) for p in prompts]
        with ThreadPoolExecutor(max_workers=self.config.concurrency) as ex:
            return list(ex.map(one, prompts))

    def send(self, role: str, request: Mapping[str, Any], *, tag: str | None = None) -> Completion:
        key = request_key(request, tag)
        model = str(request["model"])
        hit = self.cache.get(key)
        if hit is not None:
            self.cache.record(self.run_id, role, model, key, cached=True)
            return self._completion(role, key, hit, cached=True, cost=0.0, retries=0)
        with self._slots:
            with self._lock:
                reserved = self._check_budget(request)
                self._reserved = (self._reserved[0] + reserved[0], self._reserved[1] + reserved[1])
            try:
                response, retries = self._call_with_retries(role, model, key, request)
            finally:
                with self._lock:
                    self._reserved = (self._reserved[0] - reserved[0], self._reserved[1] - reserved[1])
        with self._lock:
            self.api_calls += 1
            cost = self.keep(self.run_id, role, key, request, response, retries=retries)
        return self._completion(role, key, response, cached=False, cost=cost, retries=retries)

    def keep(
        self,
        run: str,
        role: str,
        key: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any],
        *,
        discount: float = 1.0,
        retries: int = 0,
    ) -> float:
        """A response the API gave to `request` (cache `key`): stored in the cache and its cost, from its
        token usage at the model's prices (times `discount`: a batch's), recorded in the ledger of `run`.
        Returns the cost."""
        model = str(request["model"])
        usage = response.get("usage") or {}
        cw, cr = int(usage.get("cache_creation_input_tokens") or 0), int(usage.get("cache_read_input_tokens") or 0)
        it, ot = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
        cost = self.config.price(model).cost(it, ot, cw, cr) * discount
        self.cache.put(key, request, response)
        self.cache.record(
            run,
            role,
            model,
            key,
            cached=False,
            input_tokens=it,
            output_tokens=ot,
            cache_write_tokens=cw,
            cache_read_tokens=cr,
            cost_usd=cost,
            retries=retries,
        )
        return cost

    # --- internals ----------------------------------------------------------------------------
    @staticmethod
    def _completion(
        role: str, key: str, response: Mapping[str, Any], *, cached: bool, cost: float, retries: int
    ) -> Completion:
        text = "".join(b.get("text", "") for b in response.get("content") or [] if b.get("type") == "text")
        u = response.get("usage") or {}
        return Completion(
            text=text,
            role=role,
            model=str(response.get("model", "")),
            key=key,
            cached=cached,
            stop_reason=response.get("stop_reason"),
            input_tokens=int(u.get("input_tokens") or 0),
            output_tokens=int(u.get("output_tokens") or 0),
            cache_write_tokens=int(u.get("cache_creation_input_tokens") or 0),
            cache_read_tokens=int(u.get("cache_read_input_tokens") or 0),
            cost_usd=cost,
            retries=retries,
        )

    def _check_budget(self, request: Mapping[str, Any]) -> tuple[int, float]:
        """Refuse a call whose worst case (estimated input + max_tokens output) could overrun the budget,
        counting what the run spent and what this process has in flight. Returns the worst case."""
        tokens, usd = self.cache.spent(self.run_id)
        est_in, max_out = _estimate_tokens(request), int(request["max_tokens"])
        worst_usd = self.config.price(str(request["model"])).cost(est_in, max_out)
        if (
            tokens + self._reserved[0] + est_in + max_out > self.config.budget_tokens
            or usd + self._reserved[1] + worst_usd > self.config.budget_usd
        ):
            raise BudgetExceeded(tokens, usd, self.config)
        return est_in + max_out, worst_usd

    @property
    def sdk(self) -> Any:
        if self._sdk is None:
            self._sdk = make_sdk_client(self.config)
        return self._sdk

    def _call_with_retries(self, role: str, model: str, key: str, request: Mapping[str, Any]) -> tuple[dict, int]:
        status_error, connection_error, timeout_error = _sdk_error_types()
        attempt = 0
        while True:
            try:
                message = self.sdk.messages.create(**request)
                return message.model_dump(mode="json", exclude_none=True), attempt
            except (status_error, connection_error) as exc:
                status = getattr(exc, "status_code", None)
                retryable = isinstance(exc, connection_error) or status in RETRY_STATUSES
                unreachable = isinstance(exc, connection_error) and not isinstance(exc, timeout_error)
                what = (
                    f"HTTP {status}"
                    if status is not None
                    else ("timed out" if isinstance(exc, timeout_error) else "connection failed")
                )
                limit = min(self.config.max_retries, CONNECTION_RETRIES) if unreachable else self.config.max_retries
                if not retryable or attempt >= limit:
                    detail = _error_detail(exc)
                    self.cache.record(
                        self.run_id, role, model, key, cached=False, retries=attempt, error=f"{what}: {detail}"
                    )
                    network = " (is the network up? vx doctor checks the API)" if unreachable else ""
                    hint = network if status is None else _HINTS.get(status, network)
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise LLMCallFailed(
                        f"{role} call to {model} failed{tries}: {what}: {detail}{hint}", status
                    ) from None
                delay = self._backoff(attempt, exc)
                if self.on_retry is not None:
                    self.on_retry(f"{role} call to {model}: {what}; retry {attempt + 1} of {limit} in {delay:.1f}s")
                self._sleep(delay)
                attempt += 1
            except Exception as exc:  # anything else the SDK raises (a malformed response, a credentials problem)
                detail = f"{type(exc).__name__}: {str(exc)[:300]}"
                self.cache.record(self.run_id, role, model, key, cached=False, retries=attempt, error=detail)
                raise LLMCallFailed(f"{role} call to {model} failed: {detail}") from None

    def _backoff(self, attempt: int, exc: Exception) -> float:
        delay = self._rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt))
        response = getattr(exc, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        try:
            return max(delay, min(BACKOFF_CAP, float(retry_after))) if retry_after else delay
        except ValueError:
            return delay

    def usage(self) -> dict[str, Any]:
        """This run's usage (all processes): API calls, cache hits, errors, tokens, cost, per role and model."""
        return self.cache.usage(self.run_id)


_HINTS = {
    401: " (check ANTHROPIC_API_KEY)",
    403: " (the key lacks permission for this model)",
    404: " (unknown model id? change it in the LLM configuration, e.g. VX_LLM_JUDGE_MODEL)",
    400: " (the request was rejected; see the message)",
}


def _error_detail(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        err = body.get("error")
        if isinstance(err, Mapping) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc)[:300] or type(exc).__name__


# ------------------------------------------------------------------------------------------------
# the process-wide client (judge ops run in worker processes and find it here)
#
# Three states: "on" (`activate`: a run set up its configuration and run id), "off" (`disable`,
# e.g. --no-llm) and "auto" (the default): with a key in the environment, roles turn themselves on
# at first use with the family-less configuration (defaults, user file, environment) — so judge ops
# work under `vx eval` or the Python API too. In "auto" the run id is $VX_LLM_RUN (the `vx` command
# sets one per invocation, so its worker processes share one budget), else one per process.

RUN_ENV = "VX_LLM_RUN"
_ACTIVE: dict[str, Any] = {
    "state": "auto",
    "config": None,
    "run_id": None,
    "client": None,
    "pid": None,
    "factory": None,
}
_NOTICE_SHOWN = [False]


def activate(
    config: LLMConfig, *, run_id: str | None = None, factory: Callable[[LLMConfig, str], LLMClient] | None = None
) -> str:
    """Turn LLM roles on for this process and the worker processes it forks. Returns the run id.

    `factory(config, run_id)` builds the client (tests pass one with a fake transport)."""
    run_id = run_id or uuid.uuid4().hex[:12]
    _ACTIVE.update(state="on", config=config, run_id=run_id, client=None, pid=None, factory=factory)
    return run_id


def disable() -> None:
    """Turn LLM roles off for this process and its workers, even with a key set (``--no-llm``)."""
    _ACTIVE.update(state="off", config=None, run_id=None, client=None, pid=None, factory=None)


def deactivate() -> None:
    """Back to the default ("auto": on at first use when a key is set)."""
    _ACTIVE.update(state="auto", config=None, run_id=None, client=None, pid=None, factory=None)


def enabled() -> bool:
    """Whether LLM roles are on (or would turn on at first use)."""
    if _ACTIVE["state"] == "off":
        return False
    if _ACTIVE["state"] == "on":
        return _ACTIVE["factory"] is not None or has_credentials()
    return has_credentials()


def active_client() -> LLMClient | None:
    """The client of this process (made on first use, again after a fork), or None when roles are off."""
    if not enabled():
        return None
    if _ACTIVE["config"] is None:  # "auto" with a key: configure from defaults, user file and environment
        from vx.llm.config import load_config

        _ACTIVE["config"] = load_config()
        _ACTIVE["run_id"] = os.environ.get(RUN_ENV) or uuid.uuid4().hex[:12]
    if _ACTIVE["client"] is None or _ACTIVE["pid"] != os.getpid():
        factory = _ACTIVE["factory"] or (lambda cfg, rid: LLMClient(cfg, run_id=rid))
        _ACTIVE["client"] = factory(_ACTIVE["config"], _ACTIVE["run_id"])
        _ACTIVE["pid"] = os.getpid()
    return _ACTIVE["client"]


def notice_off_once(say: Callable[[str], None]) -> bool:
    """Say once per process that LLM roles are off (when they are). Returns True if it said it."""
    if enabled() or _NOTICE_SHOWN[0]:
        return False
    _NOTICE_SHOWN[0] = True
    say(OFF_MESSAGE)
    return True
