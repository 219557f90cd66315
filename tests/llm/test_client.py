"""The client layer on the real SDK with a fake HTTP transport: retries, budget, cache, accounting."""

from __future__ import annotations

import pytest

from vx.llm.client import BudgetExceeded, LLMCallFailed, sdk_accepts

from .fake import FakeAPI


def test_a_call_returns_text_usage_and_cost(make_client, fake_api):
    fake_api.reply("hello", input_tokens=1000, output_tokens=200)
    c = make_client()
    out = c.complete("judge", "hi", system="be brief")
    assert out.text == "hello" and not out.cached and out.retries == 0
    assert (out.input_tokens, out.output_tokens) == (1000, 200)
    assert out.cost_usd == pytest.approx((1000 * 1.0 + 200 * 5.0) / 1e6)  # claude-haiku-4-5 list price
    sent = fake_api.requests[0]
    assert sent["model"] == "claude-haiku-4-5" and sent["max_tokens"] == 200
    # the role's temperature is sent exactly when the installed SDK still takes one
    assert sent.get("temperature") == (0.0 if sdk_accepts("temperature") else None)
    # the shared prefix (system block) is marked for prompt caching
    assert sent["system"] == [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
    assert sent["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("failure", ["429", "529", "500", "timeout"])
def test_transient_failures_are_retried_with_backoff(make_client, fake_api, failure):
    for _ in range(3):
        if failure == "timeout":
            fake_api.timeout()
        else:
            fake_api.error(int(failure))
    fake_api.reply("ANSWER: YES")
    c = make_client()
    out = c.complete("judge", "q")
    assert out.text == "ANSWER: YES" and out.retries == 3
    assert len(fake_api.requests) == 4
    assert len(c.sleeps) == 3
    # full jitter within an exponentially growing cap: attempt n waits in [0, 2^n] seconds
    for n, s in enumerate(c.sleeps):
        assert 0.0 <= s <= 2.0**n
    assert c.usage()["retries"] == 3 and c.usage()["api_calls"] == 1


def test_retry_after_header_is_honoured(make_client, fake_api):
    fake_api.error(429, headers={"retry-after": "7"}).reply("ok")
    c = make_client()
    assert c.complete("judge", "q").text == "ok"
    assert c.sleeps == [7.0]


def test_retries_are_bounded_and_the_error_is_not_cached(make_client, fake_api):
    for _ in range(3):
        fake_api.error(529)
    c = make_client(max_retries=2)
    with pytest.raises(LLMCallFailed, match=r"after 3 attempts: HTTP 529"):
        c.complete("judge", "q")
    assert len(fake_api.requests) == 3
    assert len(c.cache) == 0  # errors are never cached
    # the next identical call goes to the API again (and succeeds)
    assert c.complete("judge", "q").text == "ANSWER: NO" and len(fake_api.requests) == 4
    u = c.usage()
    assert u["errors"] == 1 and u["api_calls"] == 1


@pytest.mark.parametrize("status", [400, 401, 404])
def test_non_retryable_errors_fail_at_once_with_a_hint(make_client, fake_api, status):
    fake_api.error(status)
    c = make_client()
    with pytest.raises(LLMCallFailed) as info:
        c.complete("judge", "q")
    assert info.value.status == status and len(fake_api.requests) == 1 and c.sleeps == []
    if status == 401:
        assert "ANTHROPIC_API_KEY" in str(info.value)
    if status == 404:
        assert "model id" in str(info.value)


def test_cache_hit_makes_no_call_and_costs_nothing(make_client, fake_api):
    c = make_client()
    a = c.complete("judge", "same question", system="s")
    b = c.complete("judge", "same question", system="s")
    assert len(fake_api.requests) == 1
    assert not a.cached and b.cached and b.text == a.text and b.cost_usd == 0.0
    u = c.usage()
    assert (u["api_calls"], u["cache_hits"]) == (1, 1)


def test_cache_key_covers_model_and_full_request(make_client, fake_api):
    c = make_client()
    c.complete("judge", "q")
    c.complete("judge", "q", max_tokens=17)  # a different request field
    c.complete("judge", "q", system="other prefix")  # a different system block
    c.complete("teacher", "q")  # a different model (and max_tokens)
    c.complete("judge", "q", tag="sample-2")  # the same request, another sample
    assert len(fake_api.requests) == 5
    c2 = make_client(**{"judge.model": "claude-sonnet-4-6"})
    c2.complete("judge", "q")
    assert len(fake_api.requests) == 6 and fake_api.requests[-1]["model"] == "claude-sonnet-4-6"


def test_a_rerun_with_a_new_run_id_is_free_and_identical(make_client, fake_api):
    answers = iter(["one", "two", "three"])
    fake_api.default = lambda req: next(answers)
    first = make_client(run_id="A")
    texts = [first.complete("composer", f"prompt {i}").text for i in range(3)]
    rerun = make_client(run_id="B")
    again = [rerun.complete("composer", f"prompt {i}").text for i in range(3)]
    assert again == texts and len(fake_api.requests) == 3
    assert rerun.usage()["api_calls"] == 0 and rerun.usage()["cache_hits"] == 3
    assert rerun.api_calls == 0


def test_budget_stops_cleanly_before_overspending(make_client, fake_api):
    fake_api.default = lambda req: "x"
    # each call: 100 input + 10 output tokens billed; the pre-check reserves estimate + max_tokens
    c = make_client(budget_tokens=1000, **{"judge.max_tokens": 100})
    made = 0
    with pytest.raises(BudgetExceeded, match="LLM budget reached") as info:
        for i in range(100):
            c.complete("judge", f"question {i}")
            made += 1
    spent_tokens, _ = c.cache.spent(c.run_id)
    assert spent_tokens <= 1000 and made >= 3
    assert info.value.spent_tokens == spent_tokens
    assert len(fake_api.requests) == made
    # cache hits stay free after the budget is spent
    assert c.complete("judge", "question 0").cached


def test_usd_budget(make_client, fake_api):
    fake_api.default = lambda req: "x"
    c = make_client(budget_usd=0.002, **{"final_judge.max_tokens": 10})  # opus: $5 / $25 per Mtok
    with pytest.raises(BudgetExceeded):
        for i in range(100):
            c.complete("final_judge", f"q{i}")
    # the pre-check estimates input tokens, so the last call may overshoot by its own cost, never more
    per_call = (100 * 5.0 + 10 * 25.0) / 1e6
    assert c.cache.spent(c.run_id)[1] - per_call <= 0.002


def test_budget_is_shared_by_clients_of_one_run(make_client, fake_api):
    """Worker processes of a run each have a client; the ledger makes them share one budget."""
    fake_api.default = lambda req: "x"
    a = make_client(run_id="R", budget_tokens=600, **{"judge.max_tokens": 50})
    b = make_client(run_id="R", budget_tokens=600, **{"judge.max_tokens": 50})
    calls = 0
    with pytest.raises(BudgetExceeded):
        for i in range(50):
            (a if i % 2 else b).complete("judge", f"q{i}")
            calls += 1
    assert a.cache.spent("R")[0] <= 600 and calls < 10


def test_complete_many_keeps_order_and_reports_errors(make_client):
    api = FakeAPI(default=lambda req: req["messages"][0]["content"].upper())
    api.error(400)
    c = make_client(api, concurrency=3)
    out = c.complete_many("judge", [{"messages": f"p{i}"} for i in range(6)])
    errors = [o for o in out if isinstance(o, Exception)]
    assert len(errors) == 1 and isinstance(errors[0], LLMCallFailed)
    texts = [o.text for o in out if not isinstance(o, Exception)]
    assert all(t == f"P{i}" for i, t in [(int(t[1:]), t) for t in texts])


def test_usage_summary_by_role(make_client, fake_api):
    fake_api.reply("a", input_tokens=10, output_tokens=5, cache_write=100).reply("b", cache_read=100)
    c = make_client()
    c.complete("judge", "1", system="shared")
    c.complete("judge", "2", system="shared")
    c.complete("judge", "1", system="shared")
    u = c.usage()
    assert u["api_calls"] == 2 and u["cache_hits"] == 1
    assert u["cache_write_tokens"] == 100 and u["cache_read_tokens"] == 100
    (row,) = u["by_role"]
    assert row["role"] == "judge" and row["model"] == "claude-haiku-4-5"
    # cache writes cost 1.25x input, cache reads 0.1x input
    assert u["cost_usd"] == pytest.approx((10 + 25 + 125 + 100 + 50 + 10) / 1e6)


def test_no_key_means_no_client_and_one_notice(monkeypatch):
    from vx.llm import client as mod
    from vx.llm.config import load_config

    monkeypatch.setattr(mod, "_NOTICE_SHOWN", [False])
    mod.activate(load_config())
    assert not mod.enabled() and mod.active_client() is None
    said: list[str] = []
    assert mod.notice_off_once(said.append) is True
    assert mod.notice_off_once(said.append) is False
    assert said == [
        "LLM roles are off: set ANTHROPIC_API_KEY to enable the judge ops, teacher, composer and "
        "synthesizer (see docs: LLM roles)"
    ]
    with pytest.raises(mod.LLMUnavailable, match="ANTHROPIC_API_KEY"):
        mod.make_sdk_client(load_config())


def test_with_a_key_roles_are_on_and_no_notice(monkeypatch):
    from vx.llm import client as mod
    from vx.llm.config import load_config

    monkeypatch.setattr(mod, "_NOTICE_SHOWN", [False])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    mod.activate(load_config())
    assert mod.enabled()
    assert mod.notice_off_once(lambda m: None) is False
    mod.deactivate()  # back to "auto": still on, since the key is set
    assert mod.enabled()
    mod.disable()  # --no-llm
    assert not mod.enabled() and mod.notice_off_once(lambda m: None) is True


def test_a_malformed_response_is_a_clean_failure_and_not_cached(make_client, fake_api):
    from .fake import http

    fake_api.queue.append(
        lambda req: http.Response(200, content=b"<html>not json</html>", headers={"content-type": "application/json"})
    )
    c = make_client()
    with pytest.raises(LLMCallFailed, match="judge call to claude-haiku-4-5 failed"):
        c.complete("judge", "q")
    assert len(c.cache) == 0 and c.usage()["errors"] == 1
