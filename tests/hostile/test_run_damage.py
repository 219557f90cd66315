"""Silent success on a damaged run, in the attacker's words: "`vx runs verify` exits 0
on a run whose family directory is gone, whose best expression does not parse, whose trace holds a lone
surrogate, whose event reason is 5 MB, or whose status is still 'running'; `vx evolve --resume` carries on
with rc 0 on such files; a ratchet run whose `rounds.state` is '[1]' is accepted"."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures"
FIVE_MB = "UPDATE events SET reason = (SELECT hex(zeroblob(2500000))) WHERE id = (SELECT MIN(id) FROM events)"
SURROGATE = "UPDATE traces SET message = CAST(X'61EDB080' AS TEXT) WHERE rowid = (SELECT MIN(rowid) FROM traces)"

#: damage → (statement, what the error names); each one also refused by vx evolve --resume
DAMAGE = {
    "the best expression does not parse": (
        "UPDATE meta SET value = '(any' WHERE key = 'best_expression'",
        "meta.best_expression",
    ),
    "an elite names an op the run never had": (
        "UPDATE elites SET expression = '(any no_such_op)' WHERE rank = 0",
        "elites.expression",
    ),
    "a candidate is not an expression": (
        "UPDATE candidates SET expression = ')(' WHERE rank = 0",
        "candidates.expression",
    ),
    "a trace message holds a lone surrogate": (SURROGATE, "not UTF-8|decode"),
    "an event reason is 5 MB": (FIVE_MB, "events.reason"),
    "the expressions summary is a list": (
        "UPDATE summary SET value = '[1]' WHERE key = 'expressions'",
        "summary.expressions",
    ),
}
#: damage → (statement, what the error names); vx evolve --resume may continue these (they are what it is for,
#: or the family is given on its command line)
VERIFY_ONLY = {
    "the status is still running": ("UPDATE meta SET value = 'running' WHERE key = 'status'", "did not finish"),
    "the family directory is gone": (
        "UPDATE meta SET value = '/nonexistent/evo' WHERE key = 'family_dir'",
        "/nonexistent/evo",
    ),
}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    fam = root / "evo"
    shutil.copytree(FIXTURE / "evo", fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    run = root / "a.vxrun.sqlite"
    res = CliRunner().invoke(
        main,
        ["evolve", str(fam), "--rounds", "2", "--seed", "1", "-j", "1", "--out", str(run), "--quiet", "--no-cache"],
    )
    assert res.exit_code == 0, res.output
    return fam, run


def damaged(pristine, tmp_path: Path, statement: str) -> Path:
    copy = tmp_path / "copy.vxrun.sqlite"
    shutil.copy(pristine[1], copy)
    db = sqlite3.connect(copy)
    db.execute(statement)
    db.commit()
    db.close()
    return copy


def refused(res, needle: str) -> None:
    import re

    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code != 0, res.output[-2000:]
    assert "Traceback" not in res.output
    assert re.search(needle, " ".join(res.output.split())), res.output[-2000:]


def test_the_pristine_run_verifies(pristine):
    res = CliRunner().invoke(main, ["runs", "verify", str(pristine[1])])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("damage", list(DAMAGE) + list(VERIFY_ONLY))
def test_verify_fails_on_the_damage(pristine, tmp_path, damage):
    statement, needle = {**DAMAGE, **VERIFY_ONLY}[damage]
    refused(CliRunner().invoke(main, ["runs", "verify", str(damaged(pristine, tmp_path, statement))]), needle)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_resume_refuses_the_damaged_file_and_leaves_it_as_it_was(pristine, tmp_path, damage):
    statement, needle = DAMAGE[damage]
    run = damaged(pristine, tmp_path, statement)
    before = run.read_bytes()
    res = CliRunner().invoke(
        main, ["evolve", str(pristine[0]), "--resume", str(run), "--rounds", "3", "-j", "1", "--quiet", "--no-cache"]
    )
    refused(res, needle)
    assert run.read_bytes() == before


def test_resume_without_the_family_refuses_a_run_whose_family_is_gone(pristine, tmp_path):
    statement, needle = VERIFY_ONLY["the family directory is gone"]
    run = damaged(pristine, tmp_path, statement)
    from vx.errors import VxError
    from vx.evolve.run import evolve_family

    with pytest.raises(VxError, match=needle):
        evolve_family(None, resume=run, rounds=3)


def test_a_ratchet_run_whose_state_is_a_list_is_refused(tmp_path, isolated_llm):
    notes = tmp_path / "notes"
    shutil.copytree(FIXTURE / "ratchet", notes, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    out = tmp_path / "demo.vxratchet.sqlite"
    res = CliRunner().invoke(
        main, ["ratchet", str(notes), "--demo", "--schedule", "0:2", "--out", str(out), "-j", "1", "-q"]
    )
    assert res.exit_code == 0, res.output
    for state, needle in (
        ("[1]", "rounds.state of row .* is a JSON list, expected an object"),
        ('{"bank": [], "removed": []}', "rounds.state of row .* has no 'rollback_ref'"),
    ):
        copy = tmp_path / "copy.vxratchet.sqlite"
        shutil.copy(out, copy)
        db = sqlite3.connect(copy)
        db.execute("UPDATE rounds SET state = ? WHERE round = 1", (state,))
        db.commit()
        db.close()
        refused(CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / "page.html")]), needle)
        resumed = CliRunner().invoke(
            main, ["ratchet", str(notes), "--demo", "--schedule", "0:3", "--resume", str(copy), "-j", "1", "-q"]
        )
        refused(resumed, needle)
