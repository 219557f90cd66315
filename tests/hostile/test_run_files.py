"""Run files: a damaged run file gives a clear error naming the file, table and
round, with a non-zero exit, in `vx runs show/verify/export` and `vx evolve --resume`; opening a
run file never changes it (missing tables are an error, not silently recreated), and
`vx runs verify` does not pass a file that records no rounds."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    fam = root / "evo"
    shutil.copytree(FIXTURE, fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    run = root / "a.vxrun.sqlite"
    res = CliRunner().invoke(
        main,
        ["evolve", str(fam), "--rounds", "2", "--seed", "1", "-j", "1", "--out", str(run), "--quiet", "--no-cache"],
    )
    assert res.exit_code == 0, res.output
    return fam, run


@pytest.fixture
def run_file(pristine, tmp_path) -> Path:
    copy = tmp_path / "copy.vxrun.sqlite"
    shutil.copy(pristine[1], copy)
    return copy


def sql(path: Path, statement: str) -> None:
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def commands(run: Path, fam: Path) -> list[list]:
    return [
        ["runs", "show", run, "--events"],
        ["runs", "verify", run],
        ["runs", "export", run, "--json"],
        ["evolve", fam, "--resume", run, "--rounds", "3", "-j", "1", "--quiet", "--no-cache"],
    ]


DAMAGE = {
    "state is not JSON": ("UPDATE rounds SET state = '{\"ops\": [' WHERE round = 2", "rounds.state"),
    "state is not an object": ("UPDATE rounds SET state = '[1, 2]' WHERE round = 2", "rounds.state"),
    "state lacks a field": ("UPDATE rounds SET state = '{\"ops\": []}' WHERE round = 2", "rounds.state"),
    "audit is not JSON": ("UPDATE rounds SET audit = 'nope' WHERE round = 1", "rounds.audit"),
    "config is not JSON": ("UPDATE meta SET value = '{' WHERE key = 'config'", "meta.config"),
    "an event's evidence is not JSON": ("UPDATE events SET evidence = '[' WHERE id = 1", "events.evidence"),
    "a spec is not JSON": ("UPDATE ops SET spec = '{' WHERE name = (SELECT name FROM ops LIMIT 1)", "ops.spec"),
    "a summary is not JSON": (
        "UPDATE summary SET value = '{' WHERE key = (SELECT key FROM summary LIMIT 1)",
        "summary",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_damaged_json_is_a_clear_error(pristine, run_file: Path, damage: str) -> None:
    statement, where = DAMAGE[damage]
    sql(run_file, statement)
    failed = 0
    for args in commands(run_file, pristine[0]):
        res = invoke(*args)
        if res.exit_code != 0:
            failed += 1
            assert str(run_file) in res.output and where in res.output, (args, res.output)
    assert failed, f"no command noticed that {damage}"


@pytest.mark.parametrize(
    "table", ["rounds", "meta", "ops", "events", "elites", "candidates", "verdicts", "traces", "summary"]
)
def test_a_missing_table_is_an_error_and_is_not_recreated(pristine, run_file: Path, table: str) -> None:
    sql(run_file, f"DROP TABLE {table}")
    before = run_file.read_bytes()
    for args in commands(run_file, pristine[0])[:3]:
        res = invoke(*args)
        assert res.exit_code != 0, (args, res.output)
        assert str(run_file) in res.output and (table in res.output or "not a vx run file" in res.output), res.output
    db = sqlite3.connect(run_file)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    db.close()
    assert table not in tables, "opening the run file recreated the table"
    assert run_file.read_bytes() == before, "reading the damaged run file changed it"


def test_verify_does_not_pass_a_run_without_rounds(run_file: Path) -> None:
    sql(run_file, "DELETE FROM rounds")
    res = invoke("runs", "verify", run_file)
    assert res.exit_code != 0 and "no rounds" in res.output, res.output


def test_garbage_is_not_a_run_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.vxrun.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 20)
    for args in (["runs", "show", bad], ["runs", "verify", bad], ["runs", "export", bad, "--json"]):
        res = invoke(*args)
        assert res.exit_code != 0 and "not a vx run file" in res.output, res.output


# Every field `vx runs verify` and `vx report` read is checked where it is read. Each
# damage below is made with sqlite3 on a real run file; the commands that read the damaged field exit
# non-zero naming the file and the table.column (or what is missing), and none tracebacks.
TYPED_DAMAGE = {
    "objective is text": ("UPDATE rounds SET objective = 'high' WHERE round = 1", "rounds.objective", "verify"),
    "A_dev is text": ("UPDATE rounds SET a_dev = 'x' WHERE round = 2", "rounds.a_dev", "verify"),
    "a matrix verdict is no verdict": ("UPDATE matrix SET verdict = 99", "matrix.verdict", "verify"),
    "a dev label is text": ("UPDATE verdicts SET label = 'pass' WHERE split = 'dev'", "verdicts.label", "verify"),
    "an event's round is text": ("UPDATE events SET round = 'x' WHERE id = 1", "events.round", "verify"),
    "uses_llm is text": ("UPDATE ops SET uses_llm = 'yes'", "ops.uses_llm", "verify"),
    "a final verdict is none": ("UPDATE verdicts SET final = 'maybe'", "verdicts.final", "verify"),
    "a trace verdict is 99": ("UPDATE traces SET verdict = 99", "traces.verdict", "report"),
    "an elite's objective is text": ("UPDATE elites SET objective = 'x'", "elites.objective", "export"),
    "a candidate's cost is text": ("UPDATE candidates SET cost = 'cheap'", "candidates.cost", "export"),
}
STRUCTURAL_DAMAGE = {
    "a round is missing": ("DELETE FROM rounds WHERE round = 1", "round 1 is missing"),
    "a matrix verdict is missing": (
        "DELETE FROM matrix WHERE op = (SELECT MIN(op) FROM matrix) AND item = (SELECT MIN(item) FROM matrix)",
        "no verdict of op",
    ),
    "no dev verdicts": ("DELETE FROM verdicts WHERE split = 'dev'", "no dev verdicts"),
    "a dev label is NULL": ("UPDATE verdicts SET label = NULL WHERE split = 'dev'", "verdicts.label"),
    "the config is gone": ("DELETE FROM meta WHERE key = 'config'", "meta.config"),
    "an incumbent names an op the matrix lacks": (
        "UPDATE rounds SET incumbent = '(any no_such_op)' WHERE round = 1",
        "no_such_op",
    ),
    "the pool state lacks its marginals": (
        "UPDATE rounds SET state = json_set(state, '$.ops', json('[{\"name\": 1}]')) WHERE round = 0",
        "rounds.state of round 0",
    ),
}


def _report(run: Path, tmp: Path):
    return invoke("report", run, "-o", tmp / "page.html")


@pytest.mark.parametrize("damage", list(TYPED_DAMAGE), ids=list(TYPED_DAMAGE))
def test_a_field_of_the_wrong_kind_is_a_clear_error(pristine, run_file: Path, tmp_path: Path, damage: str) -> None:
    statement, where, reader = TYPED_DAMAGE[damage]
    sql(run_file, statement)
    results = {
        "verify": invoke("runs", "verify", run_file),
        "report": _report(run_file, tmp_path),
        "export": invoke("runs", "export", run_file),
        "show": invoke("runs", "show", run_file),
    }
    assert results[reader].exit_code != 0, f"vx {reader} accepted a run file where {damage}"
    for name, res in results.items():
        if res.exit_code != 0:
            text = " ".join(res.output.split())
            assert str(run_file) in text and where in text, (name, text)


@pytest.mark.parametrize("damage", list(STRUCTURAL_DAMAGE), ids=list(STRUCTURAL_DAMAGE))
def test_verify_names_what_a_damaged_run_lacks(run_file: Path, damage: str) -> None:
    statement, needle = STRUCTURAL_DAMAGE[damage]
    sql(run_file, statement)
    res = invoke("runs", "verify", run_file)
    text = " ".join(res.output.split())
    assert res.exit_code != 0 and str(run_file) in text and needle in text, text


def test_a_bare_missing_key_is_never_the_whole_message() -> None:
    import click

    from vx.cli.common import UserError, friendly_errors

    @friendly_errors
    def lookup() -> None:
        raise KeyError(101)

    with pytest.raises(UserError) as info:
        lookup()
    assert info.value.message != "101" and "101" in info.value.message and "missing" in info.value.message
    assert isinstance(info.value, click.ClickException)
