"""`vx ratchet` and `vx report` on a ratchet run: messages for people, no tracebacks, nothing sent without a key;
with a key (the real SDK against the fake transport) the command runs end to end, is killed and resumes, and
stops cleanly when the budget runs out."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from llm.fake import FakeAPI

from vx.cli.main import main
from vx.families.family import Family
from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.store import RatchetStore

from .scripted import ScriptedModel, make_client

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "humaneval"


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
    r = CliRunner().invoke(
        main, ["ratchet", str(EXAMPLE), "--oracle", "--dry-run", "--json", "--schedule", "0:2", "--batch-size", "4"]
    )
    import json

    p = json.loads(r.output)
    assert p["arms"][0]["roles"]["solver"]["calls"] == 15 * 3 + 4 * 2


def test_report_draws_a_ratchet_run(notes, tmp_path):
    client = make_client(FakeAPI(default=ScriptedModel()), tmp_path / "llm.sqlite")
    cfg = RatchetConfig(
        arms=("oracle", "co", "always-pass"), verifier_rounds=(1,), skill_rounds=(3,), batch_size=16, capacity=3, jobs=1
    )
    res = run_ratchet(notes, config=cfg, out=tmp_path / "r.vxratchet.sqlite", client=client)
    out = tmp_path / "r.html"
    r = CliRunner().invoke(main, ["report", res.run_path, "-o", str(out)])
    assert r.exit_code == 0, r.output
    page = out.read_text()
    for part in (
        "Learning curves: report part (5 tasks, read by no loop)",
        "Learning curves: rollback part",
        "Two-part protocol",
        "The bank's life",
        "Final pairwise judge",
        "Verifier phases",
        "name-the-keyword",
        "frozen solver",
        "vacuous",
    ):
        assert part in page, part
    assert page.count("<svg") >= 4 and "Scripted demo" not in page


def test_resume_of_a_missing_or_foreign_file_is_a_user_error(tmp_path):
    bogus = tmp_path / "x.sqlite"
    bogus.write_text("not sqlite")
    r = CliRunner().invoke(main, ["ratchet", "--resume", str(bogus)])
    assert r.exit_code == 2 and "not a vx ratchet run file" in r.output and "Traceback" not in r.output


def test_a_run_file_of_the_first_format_is_refused_by_name(tmp_path):
    import sqlite3

    old = tmp_path / "old.vxratchet.sqlite"
    db = sqlite3.connect(old)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT INTO meta VALUES ('format', 'vx-ratchet/1')")
    db.commit()
    db.close()
    for args in (["report", str(old)], ["ratchet", "--resume", str(old)]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2 and "a vx-ratchet/1 run file, written by an older vx" in r.output, r.output
        assert r.exception is None or isinstance(r.exception, SystemExit)


CLI_ARMS = [
    "--oracle",
    "--co",
    "--always-pass",
    "--schedule",
    "1,1:2,2",
    "--batch-size",
    "16",
    "--capacity",
    "3",
    "-j",
    "1",
]


def _with_key(monkeypatch, model, cache):
    """`vx` with an API key set, the LLM cache at `cache`, and the real SDK talking to the fake transport."""
    from vx.llm import client as llm_client

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("VX_LLM_CACHE", str(cache))
    api = FakeAPI(default=model)
    monkeypatch.setattr(llm_client, "make_sdk_client", lambda config: api.sdk())
    return api


def test_the_cli_runs_with_a_key_then_a_killed_run_resumes_to_the_same_record(notes, tmp_path, monkeypatch):
    import json
    import os
    import subprocess
    import sys

    from .test_resume import record

    whole = tmp_path / "whole.vxratchet.sqlite"
    model = ScriptedModel()
    api = _with_key(monkeypatch, model, tmp_path / "a.sqlite")
    r = CliRunner().invoke(main, ["ratchet", str(notes), *CLI_ARMS, "--out", str(whole), "--json", "-q"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["stopped"] is None and out["usage"]["api_calls"] == len(api.requests) > 0
    assert set(out["figures"]["arms"]) == {"oracle", "co", "always-pass"}
    assert out["figures"]["retention"]["always-pass"]["verifier_validity"] == "vacuous"
    assert model.calls["verifier_loop"] > 0  # with a key the co arm's verifier loop gets the LLM roles too
    solver_calls = model.calls["solver"]

    killed = tmp_path / "killed.vxratchet.sqlite"
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1] / "src"), "VX_LLM_CACHE": str(tmp_path / "b.sqlite")}
    env.pop("ANTHROPIC_API_KEY", None)  # the child sets its own (fake) key
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "scripted.py"),
            "cli",
            f"solver:{solver_calls * 2 // 3}",
            "ratchet",
            str(notes),
            *CLI_ARMS,
            "--out",
            str(killed),
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    with RatchetStore(killed) as s:
        assert s.meta()["status"] == "running" and s.rounds()  # killed mid-run, some rounds committed

    _with_key(monkeypatch, ScriptedModel(), tmp_path / "b.sqlite")
    r = CliRunner().invoke(main, ["ratchet", "--resume", str(killed), "--json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["stopped"] is None
    a, b = record(whole), record(killed)
    for table in a:
        assert a[table] == b[table], table


def test_the_budget_running_out_stops_at_the_last_whole_round_and_resume_finishes(notes, tmp_path, monkeypatch):
    """The run stops when a call is refused: every committed round and the figures so far are recorded, the
    status is 'stopped', the exit status 1 and the message says how to continue; the resumed run (a larger
    budget) pays nothing twice and ends with the record of an uninterrupted run."""
    import json

    from .test_resume import dump

    args = [
        "ratchet",
        str(notes),
        "--oracle",
        "--always-pass",
        "--schedule",
        "0:3",
        "--batch-size",
        "16",
        "--capacity",
        "3",
        "-j",
        "1",
        "--llm-model",
        "skill_synthesizer=claude-haiku-4-5",
        "--llm-model",
        "final_judge=claude-haiku-4-5",
    ]
    # one call at a time; a call is refused when what was spent plus its worst case (est. input + max_tokens
    # output on haiku, about $0.01) could pass $0.025 — after some 100 fake calls of $0.00015: the always-pass arm
    monkeypatch.setenv("VX_LLM_CONCURRENCY", "1")
    api = _with_key(monkeypatch, ScriptedModel(), tmp_path / "b.sqlite")
    out = tmp_path / "b.vxratchet.sqlite"
    r = CliRunner().invoke(main, [*args, "--out", str(out), "--llm-budget", "0.025", "-q"])
    assert r.exit_code == 1, r.output
    assert "stopped early: the LLM budget ran out (always-pass round" in r.output and f"--resume {out}" in r.output
    assert "--llm-budget" in r.output and "Traceback" not in r.output
    with RatchetStore(out) as s:
        meta, rounds = s.meta(), s.rounds()
        assert meta["status"] == "stopped" and "LLM budget reached" in meta["stopped"]
        assert s.summary()["arms"]["oracle"]["rounds"] == 3  # the figures of what was recorded
    last = max(r["round"] for r in rounds if r["arm"] == "always-pass")
    assert last < 3 and sorted(r["round"] for r in rounds if r["arm"] == "always-pass") == list(range(last + 1))
    paid = len(api.requests)

    api2 = _with_key(monkeypatch, ScriptedModel(), tmp_path / "b.sqlite")
    r = CliRunner().invoke(main, ["ratchet", "--resume", str(out), "--llm-model", "solver=claude-opus-4-6"])
    assert r.exit_code == 2 and "a resumed run keeps its roles" in r.output  # the frozen solver stays the same
    r = CliRunner().invoke(main, ["ratchet", "--resume", str(out), "--llm-budget", "5", "--json", "-q"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["stopped"] is None
    ref = tmp_path / "ref.vxratchet.sqlite"
    _with_key(monkeypatch, ScriptedModel(), tmp_path / "ref.sqlite")
    assert CliRunner().invoke(main, [*args, "--out", str(ref), "-q"]).exit_code == 0
    tables = ["rounds", "attempts", "capsules", "skills", "events", "judge"]
    skip = {"rounds": {"seconds"}, "events": {"id"}}
    assert dump(out, skip, tables) == dump(ref, skip, tables)
    assert paid > 0 and not set(map(repr, api2.requests)) & set(map(repr, api.requests))  # nothing paid twice


def test_run_ratchet_takes_an_llm_session_as_evolve_family_does(notes, tmp_path):
    """The CLI builds nothing the API cannot: `run_ratchet(llm=session)` uses a started session as is (not
    closed), and the co arm's verifier loop gets the session's LLM composer and synthesizer."""
    import pytest

    from vx.evolve.roles.session import start_session
    from vx.llm import client as llm_client
    from vx.ratchet.config import RatchetError

    cfg = RatchetConfig(
        arms=("oracle", "co"), verifier_rounds=(1,), skill_rounds=(2,), batch_size=16, capacity=3, jobs=1, judge=False
    )
    with pytest.raises(RatchetError, match="ANTHROPIC_API_KEY is not set.*--demo"):  # no key, no factory
        run_ratchet(notes, config=cfg, out=tmp_path / "none.vxratchet.sqlite")
    with pytest.raises(RatchetError, match="LLM roles off"):
        run_ratchet(notes, config=cfg, out=tmp_path / "off.vxratchet.sqlite", llm=False)
    assert not (tmp_path / "none.vxratchet.sqlite").exists() and not (tmp_path / "off.vxratchet.sqlite").exists()

    model = ScriptedModel()
    api = FakeAPI(default=model)
    session = start_session(
        Family(notes),
        mode=True,
        run_id="api-session",
        factory=lambda config, rid: make_client(api, tmp_path / "llm.sqlite", run_id=rid),
    )
    res = run_ratchet(notes, config=cfg, out=tmp_path / "s.vxratchet.sqlite", llm=session)
    assert res.stopped is None and res.usage["run"] == "api-session"
    assert model.calls["verifier_loop"] > 0 and model.calls["solver"] > 0
    assert llm_client.active_client() is not None  # the caller's session is left open
    session.close()
    with RatchetStore(res.run_path) as s:
        assert s.meta()["llm"]["run"] == "api-session"
