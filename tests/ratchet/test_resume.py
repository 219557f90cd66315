"""A ratchet run killed with SIGKILL mid-round and resumed writes the same record as an uninterrupted run."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from llm.fake import FakeAPI

from vx.ratchet import run_ratchet

from .scripted import ScriptedModel, make_client, resume_config

HERE = Path(__file__).resolve().parent
SKIP = {"rounds": {"seconds"}, "events": {"id"}}


def dump(path: Path, skip: dict[str, set[str]], tables: list[str] | None = None) -> dict[str, list]:
    db = sqlite3.connect(path)
    out = {}
    names = tables or [
        r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
    ]
    for t in names:
        cols = [r[1] for r in db.execute(f"PRAGMA table_info({t})") if r[1] not in skip.get(t, set())]
        out[t] = sorted(db.execute(f"SELECT {','.join(repr(c) for c in cols)} FROM {t}").fetchall(), key=repr)
    db.close()
    return out


def record(run: Path) -> dict:
    r = dump(run, SKIP)
    r["meta"] = [row for row in r["meta"] if row[0] not in ("llm_usage", "llm")]
    ver = run.with_name(run.name.replace(".vxratchet.sqlite", ".co.verifier.vxrun.sqlite"))
    r["verifier"] = dump(
        ver,
        {"rounds": {"seconds"}, "events": {"id"}},
        ["rounds", "ops", "events", "elites", "candidates", "verdicts", "matrix"],
    )
    return r


@pytest.mark.parametrize("kill_at", ["solver:40", "round:co:4"])  # inside oracle round 2; after co round 4
def test_kill_9_then_resume_gives_the_identical_record(notes, tmp_path, kill_at):
    whole = tmp_path / "whole.vxratchet.sqlite"
    run_ratchet(
        notes,
        config=resume_config(),
        out=whole,
        client=make_client(FakeAPI(default=ScriptedModel()), tmp_path / "a.sqlite"),
    )

    killed = tmp_path / "killed.vxratchet.sqlite"
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1] / "src")}
    proc = subprocess.run(
        [sys.executable, str(HERE / "scripted.py"), str(notes), str(killed), str(tmp_path / "b.sqlite"), str(kill_at)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == -9, proc.stderr[-2000:]
    assert killed.exists()
    resumed = run_ratchet(
        notes, resume=killed, client=make_client(FakeAPI(default=ScriptedModel()), tmp_path / "b.sqlite")
    )
    assert resumed.stopped is None
    a, b = record(whole), record(killed)
    for table in a:
        assert a[table] == b[table], table
