"""Judge sweeps through the Message Batches API (fake transport): results land in the cache."""

from __future__ import annotations

import pytest

from vx.dsl.verdict import Verdict
from vx.llm import client as llm_client
from vx.llm.batch import BATCH_DISCOUNT, prefetch
from vx.llm.client import BudgetExceeded
from vx.ops.judge import judge_sweep_requests

PAIRS = [
    ({"id": f"T{i}", "prompt": f"def f{i}(x):\n    'Return x + {i}.'\n"}, f"def f{i}(x):\n    return x + {i}\n")
    for i in range(5)
]


def judge_op():
    from vx.families.code.ops.judge import spec_mismatch

    return spec_mismatch


def test_prefetch_fills_the_cache_then_ops_make_no_calls(make_client, fake_api, monkeypatch):
    fake_api.default = lambda req: "ANSWER: YES"
    fake_api.batch_polls = 2
    fake_api.batch_failures = set()
    c = make_client()
    reqs = judge_sweep_requests(c, [judge_op()], PAIRS)
    assert len(reqs) == 5
    said = []
    rep = prefetch(c, "judge", reqs, poll_seconds=5, say=said.append)
    assert (rep.submitted, rep.succeeded, rep.failed, rep.cached) == (5, 5, 0, 0)
    assert rep.batches == ["msgbatch_001"] and c.sleeps == [5] and any("submitted" in s for s in said)
    assert fake_api.requests == []  # nothing went through the synchronous endpoint
    u = c.usage()
    assert u["api_calls"] == 5 and u["cost_usd"] == pytest.approx(BATCH_DISCOUNT * 5 * (100 * 1.0 + 10 * 5.0) / 1e6)
    # the judge op now finds every answer in the cache
    llm_client.activate(c.config, run_id=c.run_id, factory=lambda cfg, rid: c)
    for task, out in PAIRS:
        assert judge_op()(task, out).verdict == Verdict.CLEAN
    assert fake_api.requests == []
    # a second prefetch has nothing to do
    again = prefetch(c, "judge", reqs)
    assert (again.submitted, again.cached) == (0, 5) and len(fake_api.batches) == 1


def test_a_batch_still_running_is_collected_by_the_next_prefetch(make_client, fake_api):
    fake_api.batch_polls = 100
    c = make_client()
    reqs = judge_sweep_requests(c, [judge_op()], PAIRS[:2])
    rep = prefetch(c, "judge", reqs, poll_seconds=10, max_wait=25)
    assert rep.pending == ["msgbatch_001"] and rep.succeeded == 0 and len(c.cache) == 0
    fake_api.batches["msgbatch_001"]["polls_left"] = 0
    rep = prefetch(c, "judge", reqs)
    assert rep.batches == ["msgbatch_001"] and rep.succeeded == 2 and rep.submitted == 0
    assert len(fake_api.batches) == 1 and len(c.cache) == 2


def test_errored_requests_are_not_cached(make_client, fake_api):
    c = make_client()
    reqs = judge_sweep_requests(c, [judge_op()], PAIRS[:3])
    from vx.llm.cache import request_key

    fake_api.batch_failures = {request_key(reqs[1])}
    rep = prefetch(c, "judge", reqs, poll_seconds=0)
    assert (rep.succeeded, rep.failed) == (2, 1) and len(c.cache) == 2
    assert c.usage()["errors"] == 1


def test_the_whole_batch_must_fit_the_budget(make_client, fake_api):
    c = make_client(budget_tokens=500)
    reqs = judge_sweep_requests(c, [judge_op()], PAIRS)
    with pytest.raises(BudgetExceeded):
        prefetch(c, "judge", reqs)
    assert fake_api.batches == {}


def test_vx_llm_prefetch_then_evaluation_makes_no_judge_calls(tiny_family, monkeypatch):
    from click.testing import CliRunner

    from vx.cli.main import main
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    from .fake import FakeAPI

    toml = tiny_family / "family.toml"
    toml.write_text(toml.read_text().replace('packs = ["ops.py"]', 'packs = ["ops.py", "code-judge"]'))
    api = FakeAPI(default=lambda req: "ANSWER: YES")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr(llm_client, "make_sdk_client", lambda config: api.sdk())
    r = CliRunner().invoke(main, ["llm", "prefetch", str(tiny_family), "--poll", "0"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    fam = Family(tiny_family)
    items = [*fam.split("train").items, *fam.split("dev").items, *fam.audit().split.items]
    n_unique = len({(it.task, it.output) for it in items})
    assert f"{n_unique} submitted, {n_unique} answered, 0 failed" in r.stdout
    assert api.requests == []
    llm_client.deactivate()  # "auto" with the key, as under `vx eval`
    app = apply_ops(fam.pool(), items, fam.tasks, jobs=1, progress=False)
    assert (app.matrix.column("spec_mismatch") == 0).all() and api.requests == []
