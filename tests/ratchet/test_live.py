"""Opt-in live test: a short co-evolution on the bundled HumanEval family against the real API.

    ANTHROPIC_API_KEY=... pytest -m live tests/ratchet/test_live.py

Two arms (oracle, co), schedule 1,1:2,2 (two verifier phases of one round, two skill phases of two rounds),
four training tasks per round, the final judge on the cheapest model; capped at $1 by the budget. The
rerun of the same command must make zero API calls (everything is in the LLM cache).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (opt-in live test)"),
]


def test_short_co_evolution_on_humaneval_then_a_free_rerun(tmp_path, monkeypatch):
    pytest.importorskip("anthropic")
    from click.testing import CliRunner

    from vx.cli.main import main
    from vx.ratchet.store import RatchetStore

    monkeypatch.setenv("VX_LLM_CACHE", str(tmp_path / "llm.sqlite"))
    fam = tmp_path / "humaneval"
    shutil.copytree(EXAMPLE, fam, ignore=shutil.ignore_patterns("__pycache__", "runs"))

    def ratchet(out):
        return CliRunner().invoke(
            main,
            [
                "ratchet",
                str(fam),
                "--oracle",
                "--co",
                "--schedule",
                "1,1:2,2",
                "--batch-size",
                "4",
                "--llm-budget",
                "1.0",
                "--out",
                str(out),
                "-q",
                "--llm-model",
                "final_judge=claude-haiku-4-5",
                "--json",
                "--cache",
                str(tmp_path / "verdicts.sqlite"),
            ],
            catch_exceptions=False,
        )

    first = ratchet(tmp_path / "one.vxratchet.sqlite")
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    fig = out["figures"]
    assert fig["arms"]["oracle"]["rounds"] == 4 and fig["arms"]["co"]["rounds"] == 4
    assert "co" in fig["retention"] and len(fig["arms"]["co"]["verifier"]) == 2
    with RatchetStore(tmp_path / "one.vxratchet.sqlite") as s:
        assert len(s.attempts("oracle", kind="heldout")) == 15 * 5
        assert {r["role"] for r in s.meta()["llm_usage"]["by_role"]} >= {"solver", "skill_synthesizer"}
    assert out["usage"]["cost_usd"] <= 1.0
    second = ratchet(tmp_path / "two.vxratchet.sqlite")
    assert second.exit_code == 0, second.output
    assert json.loads(second.output)["usage"]["api_calls"] == 0
