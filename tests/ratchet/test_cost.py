"""Cost control in a ratchet run: the budget stops a run cleanly (resumable), Message Batches give the same
record, and a rerun is free."""

from __future__ import annotations

import pytest
from llm.fake import FakeAPI

from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.store import RatchetStore

from .scripted import ScriptedModel, make_client

CFG = dict(arms=("oracle",), verifier_rounds=(0,), skill_rounds=(3,), batch_size=16, capacity=3, jobs=1)


def heldout_curve(path):
    with RatchetStore(path) as s:
        return [(r["round"], r["rollback_score"], r["report_score"], r["bank_size"]) for r in s.rounds("oracle")], [
            (a["round"], a["kind"], a["task"], a["output"]) for a in s.attempts("oracle")
        ]


def test_the_budget_stops_the_run_between_rounds_and_resume_finishes_it(notes, tmp_path):
    model = ScriptedModel()
    cache = tmp_path / "llm.sqlite"
    out = tmp_path / "b.vxratchet.sqlite"
    # one call at a time; a call is refused when what was spent plus its worst case (est. input + 2048 output
    # tokens on haiku, about $0.01) could pass $0.02 — after some 60 fake calls of $0.00015 each
    small = make_client(FakeAPI(default=model), cache, run_id="budgeted", budget_usd=0.02, concurrency=1)
    res = run_ratchet(notes, config=RatchetConfig(**CFG), out=out, client=small)
    assert res.stopped and "budget" in res.stopped
    with RatchetStore(out) as s:
        committed = s.rounds("oracle")
        assert s.meta()["status"] == "stopped"
    assert 1 <= len(committed) < 4  # whole rounds only
    big = make_client(FakeAPI(default=model), cache, run_id="budgeted", budget_usd=5.0)
    done = run_ratchet(notes, resume=out, client=big)
    assert done.stopped is None
    ref = run_ratchet(
        notes,
        config=RatchetConfig(**CFG),
        out=tmp_path / "ref.vxratchet.sqlite",
        client=make_client(FakeAPI(default=ScriptedModel()), tmp_path / "ref.sqlite"),
    )
    assert heldout_curve(out) == heldout_curve(ref.run_path)


def test_message_batches_give_the_same_record_and_a_rerun_makes_no_api_call(notes, tmp_path):
    api = FakeAPI(default=ScriptedModel())
    batched = run_ratchet(
        notes,
        config=RatchetConfig(**CFG, batch=True, poll_seconds=0.0),
        out=tmp_path / "batch.vxratchet.sqlite",
        client=make_client(api, tmp_path / "a.sqlite"),
    )
    assert api.batches and not [r for r in api.requests if "You keep a bank" not in r["system"][0]["text"]]
    sync = run_ratchet(
        notes,
        config=RatchetConfig(**CFG),
        out=tmp_path / "sync.vxratchet.sqlite",
        client=make_client(FakeAPI(default=ScriptedModel()), tmp_path / "b.sqlite"),
    )
    assert heldout_curve(batched.run_path) == heldout_curve(sync.run_path)
    again_api = FakeAPI(default=ScriptedModel())
    again = make_client(again_api, tmp_path / "b.sqlite", run_id="rerun")
    run_ratchet(notes, config=RatchetConfig(**CFG), out=tmp_path / "again.vxratchet.sqlite", client=again)
    assert again_api.requests == [] and again.usage()["api_calls"] == 0
    assert heldout_curve(tmp_path / "again.vxratchet.sqlite") == heldout_curve(sync.run_path)
    with RatchetStore(batched.run_path) as s:
        assert s.meta()["llm_usage"]["cost_usd"] == pytest.approx(
            sum(r["cost_usd"] for r in s.meta()["llm_usage"]["by_role"])
        )
