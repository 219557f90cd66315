"""`vx ratchet` and `vx report` on a ratchet run: messages for people, no tracebacks, nothing sent without a key."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from llm.fake import FakeAPI
from vx.cli.main import main
from vx.ratchet import RatchetConfig, run_ratchet

from .scripted import ScriptedModel, make_client

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


def test_without_a_key_oracle_and_co_say_what_is_missing_and_exit_non_zero():
    for arm in ("--oracle", "--co"):
        r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE), arm])
        assert r.exit_code == 2, r.output
        assert "ANTHROPIC_API_KEY is not set" in r.output and "--dry-run" in r.output
        assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)


def test_no_arm_and_bad_schedule_are_user_errors():
    r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE)])
    assert r.exit_code == 2 and "choose the arms" in r.output
    r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE), "--oracle", "--schedule", "1,2:3", "--dry-run"])
    assert r.exit_code == 0  # "3" repeats for both phases
    r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE), "--oracle", "--schedule", "nonsense", "--dry-run"])
    assert r.exit_code == 2 and "--schedule" in r.output and "Traceback" not in r.output


def test_dry_run_prints_calls_and_worst_case_cost_and_sends_nothing():
    r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE), "--oracle", "--co", "--dry-run", "--schedule", "2,1:3,3"])
    assert r.exit_code == 0, r.output
    assert "solver" in r.output and "skill_synthesizer" in r.output and "final_judge" in r.output
    assert "worst-case USD" in r.output and "nothing was sent" in r.output
    r = CliRunner().invoke(main, ["ratchet", str(EXAMPLE), "--oracle", "--dry-run", "--json", "--schedule", "0:2",
                                  "--batch-size", "4"])
    import json

    p = json.loads(r.output)
    assert p["arms"][0]["roles"]["solver"]["calls"] == 15 * 3 + 4 * 2


def test_report_draws_a_ratchet_run(notes, tmp_path):
    client = make_client(FakeAPI(default=ScriptedModel()), tmp_path / "llm.sqlite")
    cfg = RatchetConfig(arms=("oracle", "co", "always-pass"), verifier_rounds=(1,), skill_rounds=(3,), batch_size=16,
                        capacity=3, jobs=1)
    res = run_ratchet(notes, config=cfg, out=tmp_path / "r.vxratchet.sqlite", client=client)
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", res.run_path, "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    for part in ("Learning curves: report part (5 tasks, read by no loop)", "Learning curves: rollback part",
                 "Two-part protocol", "The bank's life", "Final pairwise judge", "Verifier phases", "name-the-keyword",
                 "frozen solver", "vacuous"):
        assert part in page, part
    assert page.count("<svg") >= 4 and "Scripted demo" not in page


def test_resume_of_a_missing_or_foreign_file_is_a_user_error(tmp_path):
    bogus = tmp_path / "x.sqlite"
    bogus.write_text("not sqlite")
    r = CliRunner().invoke(main, ["ratchet", "--resume", str(bogus)])
    assert r.exit_code == 2 and "not a vx ratchet run file" in r.output and "Traceback" not in r.output
