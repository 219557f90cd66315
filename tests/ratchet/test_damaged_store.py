"""A damaged ratchet run file: `vx report` and `vx ratchet --resume` used to
traceback on five kinds of damage. Each damage below is made with sqlite3 on a real (scripted demo)
run; the commands exit non-zero naming the file and the table.column, and never traceback."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main

DAMAGE = {
    "a score is text": ("UPDATE rounds SET rollback_score = 'high' WHERE round = 1", "rounds.rollback_score"),
    "a round's state is not JSON": ("UPDATE rounds SET state = '{' WHERE round = 1", "rounds.state"),
    "an attempt's checks are not JSON": ("UPDATE attempts SET checks = '[' WHERE rowid = 1", "attempts.checks"),
    "passed is text": ("UPDATE attempts SET passed = 'yes'", "attempts.passed"),
    "a skill's birth round is text": ("UPDATE skills SET born = 'early'", "skills.born"),
    "the config is not JSON": ("UPDATE meta SET value = '{' WHERE key = 'config'", "meta.config"),
    "the config is a list": ("UPDATE meta SET value = '[1]' WHERE key = 'config'", "meta.config"),
    "an event's evidence is not JSON": (
        "UPDATE events SET evidence = '[' WHERE id = (SELECT MIN(id) FROM events)",
        "events.evidence",
    ),
    "the judge table is gone": ("DROP TABLE judge", "judge"),
    "a judge round is text": ("UPDATE judge SET old_round = 'zero'", "judge.old_round"),
}


@pytest.fixture
def demo_run(notes: Path, tmp_path: Path) -> Path:
    out = tmp_path / "demo.vxratchet.sqlite"
    res = CliRunner().invoke(
        main, ["ratchet", str(notes), "--demo", "--schedule", "0:2", "--out", str(out), "-j", "1", "-q"]
    )
    assert res.exit_code == 0, res.output
    return out


def test_every_damage(demo_run: Path, tmp_path: Path) -> None:
    """One demo run, copied once per damage (a run takes seconds: each damage does not need its own)."""
    for damage, (statement, where) in DAMAGE.items():
        copy = tmp_path / f"{len(list(tmp_path.iterdir()))}.vxratchet.sqlite"
        shutil.copy(demo_run, copy)
        db = sqlite3.connect(copy)
        db.execute(statement)
        db.commit()
        db.close()
        res = CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / "page.html")])
        assert res.exception is None or isinstance(res.exception, SystemExit), (damage, repr(res.exception))
        text = " ".join(res.output.split())
        assert res.exit_code != 0, f"vx report accepted a ratchet run where {damage}"
        assert str(copy) in text and where in text, (damage, text)
