"""The report family's opt-in judge ops: typed judge specs that abstain (and say why) with LLM roles off."""

import os

import pytest

from vx.dsl.verdict import Verdict
from vx.families.pack import pool_from_packs


@pytest.fixture(autouse=True)
def _llm_off(tmp_path, monkeypatch):
    """Roles off whatever the environment: no key, no user config or cache, no active client."""
    from vx.llm import client as llm_client

    for var in list(os.environ):
        if var.startswith("VX_LLM_") or var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("VX_LLM_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("VX_LLM_CACHE", str(tmp_path / "llm.sqlite"))
    llm_client.deactivate()
    yield
    llm_client.deactivate()


def test_judge_ops_are_typed_judge_specs():
    from vx.families.report.ops.judge import OPS, card_unsupported

    assert [o.name for o in OPS] == ["card_unsupported", "purpose_unmet"]
    assert all(o.tier == "judge" and o.uses_llm and o.spec["check"] == "llm_yes_no" for o in OPS)
    assert "[E0103]" in card_unsupported.spec["params"]["question"]


def test_judge_ops_abstain_offline(task):
    from vx.families.report.ops.judge import card_unsupported

    r = card_unsupported(task.record(), task.golden)
    assert r.verdict == Verdict.ABSTAIN and "LLM roles are off" in r.message


def test_a_family_can_opt_in():
    pool = pool_from_packs(["report", "report-judge"])
    assert pool.root_name == "has_title" and "card_unsupported" in pool.selectable()
