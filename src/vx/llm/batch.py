"""Large judge sweeps through the Message Batches API, at half the price, straight into the cache.

`prefetch(client, role, requests)` submits every request that is not cached yet as one (or more)
message batches, waits for them to end, and stores each successful result in the disk cache
under the same key the synchronous call would use. Afterwards the ops run as usual and find every
answer in the cache: no API call, same verdicts. A batch still running when the wait ends stays
on record (in the cache file) and is collected by the next `prefetch` — nothing is submitted twice.

Batch results are billed at 50 % of the list price; the run's budget is checked against the whole
batch's worst case before anything is submitted. Errored or expired requests are recorded in the
ledger and not cached (the op will call synchronously for them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.llm.cache import request_key
from vx.llm.client import (
    RETRY_STATUSES,
    BudgetExceeded,
    LLMCallFailed,
    LLMClient,
    _error_detail,
    _estimate_tokens,
    _sdk_error_types,
)

BATCH_DISCOUNT = 0.5
MAX_BATCH = 10_000  # requests per submitted batch


@attrs.define
class BatchReport:
    requested: int = 0
    cached: int = 0  # already in the cache before this prefetch
    submitted: int = 0
    succeeded: int = 0
    failed: int = 0
    batches: list[str] = attrs.field(factory=list)
    pending: list[str] = attrs.field(factory=list)  # batches still running when the wait ended
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _with_retries(client: LLMClient, what: str, fn: Callable[[], Any]) -> Any:
    status_error, connection_error, _ = _sdk_error_types()
    attempt = 0
    while True:
        try:
            return fn()
        except (status_error, connection_error) as exc:
            status = getattr(exc, "status_code", None)
            if (status is not None and status not in RETRY_STATUSES) or attempt >= client.config.max_retries:
                raise LLMCallFailed(
                    f"{what} failed: {f'HTTP {status}: ' if status else ''}{_error_detail(exc)}", status
                ) from None
            client._sleep(client._backoff(attempt, exc))
            attempt += 1


def _collect(
    client: LLMClient,
    batch_id: str,
    run: str,
    role: str,
    requests: Mapping[str, Mapping[str, Any]],
    report: BatchReport,
    *,
    poll_seconds: float,
    wait: list[float],
    say: Callable[[str], None] | None,
) -> bool:
    """Wait for one batch and store its results. False if it is still running when the wait allowance
    ``wait[0]`` (seconds, shared by all batches of one prefetch) is used up."""
    sdk = client.sdk
    while True:
        batch = _with_retries(client, f"polling batch {batch_id}", lambda: sdk.messages.batches.retrieve(batch_id))
        if batch.processing_status == "ended":
            break
        if poll_seconds > wait[0]:
            report.pending.append(batch_id)
            if say:
                say(f"batch {batch_id} is still running; run the prefetch again later to collect it")
            return False
        if say:
            c = batch.request_counts
            say(f"batch {batch_id}: {c.processing} processing, {c.succeeded} done, {c.errored} errored")
        client._sleep(poll_seconds)
        wait[0] -= poll_seconds
    for res in _with_retries(
        client, f"reading results of batch {batch_id}", lambda: list(sdk.messages.batches.results(batch_id))
    ):
        key = res.custom_id
        request = requests.get(key)
        if request is None:
            continue
        model = str(request["model"])
        result = res.result
        if result.type == "succeeded":
            message = result.message.model_dump(mode="json", exclude_none=True)
            cost = client.keep(run, role, key, request, message, discount=BATCH_DISCOUNT)
            report.succeeded += 1
            report.cost_usd += cost
        else:
            error = getattr(result, "error", None)
            detail = getattr(getattr(error, "error", None), "message", "") if error is not None else ""
            client.cache.record(run, role, model, key, cached=False, error=f"batch {result.type}: {detail}".strip())
            report.failed += 1
    client.cache.finish_batch(batch_id)
    return True


def prefetch(
    client: LLMClient,
    role: str,
    requests: Sequence[Mapping[str, Any]],
    *,
    poll_seconds: float = 30.0,
    max_wait: float = 24 * 3600.0,
    say: Callable[[str], None] | None = None,
) -> BatchReport:
    """Fill the cache with the answers to `requests` (built with `client.build_request(role, …)`) via batches."""
    report = BatchReport(requested=len(requests))
    wait = [float(max_wait)]
    for batch_id, run, brole, breqs in client.cache.pending_batches():  # finish what an earlier prefetch began
        if _collect(client, batch_id, run, brole, breqs, report, poll_seconds=poll_seconds, wait=wait, say=say):
            report.batches.append(batch_id)
    missing: dict[str, Mapping[str, Any]] = {}
    for r in requests:
        key = request_key(r)
        if client.cache.get(key) is None and key not in missing:
            missing[key] = r
    report.cached = len({request_key(r) for r in requests}) - len(missing)
    if not missing:
        return report
    tokens, usd = client.cache.spent(client.run_id)
    worst_tokens = sum(_estimate_tokens(r) + int(r["max_tokens"]) for r in missing.values())
    worst_usd = BATCH_DISCOUNT * sum(
        client.config.price(str(r["model"])).cost(_estimate_tokens(r), int(r["max_tokens"])) for r in missing.values()
    )
    if tokens + worst_tokens > client.config.budget_tokens or usd + worst_usd > client.config.budget_usd:
        raise BudgetExceeded(tokens, usd, client.config)
    items = list(missing.items())
    for start in range(0, len(items), MAX_BATCH):
        chunk = dict(items[start : start + MAX_BATCH])
        body = [{"custom_id": k, "params": dict(r)} for k, r in chunk.items()]

        def submit(body: list[dict[str, Any]] = body) -> Any:
            return client.sdk.messages.batches.create(requests=body)

        batch = _with_retries(client, "submitting a message batch", submit)
        client.cache.add_batch(batch.id, client.run_id, role, chunk)
        report.submitted += len(chunk)
        if say:
            say(f"submitted batch {batch.id} with {len(chunk)} request(s)")
        if _collect(
            client, batch.id, client.run_id, role, chunk, report, poll_seconds=poll_seconds, wait=wait, say=say
        ):
            report.batches.append(batch.id)
    return report
