"""`vx fmt` and `vx check` through click's CliRunner."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MESSY = "; family: humaneval   \n\n\n(any   crash\n      (not timeout))\n"
CANONICAL = "; family: humaneval\n\n(any crash (not timeout))\n"


@pytest.fixture
def runner():
    return CliRunner()


def test_fmt_rewrites_in_place_keeping_the_header(runner, tmp_path):
    f = tmp_path / "seed.vx"
    f.write_text(MESSY)
    result = runner.invoke(main, ["fmt", str(f)])
    assert result.exit_code == 0, result.output
    assert f.read_text() == CANONICAL
    assert f"reformatted {f}" in result.stdout
    assert "1 file reformatted, 0 already canonical" in result.stderr
    result = runner.invoke(main, ["fmt", str(f)])
    assert result.exit_code == 0 and f.read_text() == CANONICAL
    assert "0 files reformatted, 1 already canonical" in result.stderr


def test_fmt_check_lists_non_canonical_files_and_changes_nothing(runner, tmp_path):
    (tmp_path / "sub").mkdir()
    messy, good = tmp_path / "sub" / "messy.vx", tmp_path / "good.vx"
    messy.write_text(MESSY)
    good.write_text(CANONICAL)
    (tmp_path / "notes.txt").write_text("(any")  # not a .vx file: ignored
    result = runner.invoke(main, ["fmt", "--check", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stdout == f"would reformat {messy}\n"
    assert messy.read_text() == MESSY
    result = runner.invoke(main, ["fmt", "--check", str(good)])
    assert result.exit_code == 0


def test_fmt_stdin_to_stdout(runner):
    result = runner.invoke(main, ["fmt", "-"], input=MESSY)
    assert result.exit_code == 0
    assert result.stdout == CANONICAL
    result = runner.invoke(main, ["fmt", "--check", "-"], input=MESSY)
    assert result.exit_code == 1 and result.stdout == ""
    result = runner.invoke(main, ["fmt", "--check", "-"], input=CANONICAL)
    assert result.exit_code == 0


def test_fmt_width(runner):
    result = runner.invoke(main, ["fmt", "--width", "20", "-"], input="(any crash (not timeout))")
    assert result.stdout == "(any\n  crash\n  (not timeout))\n"


def test_fmt_reports_syntax_errors_and_continues(runner, tmp_path):
    bad, good = tmp_path / "a_bad.vx", tmp_path / "b_good.vx"
    bad.write_text("(anyy a b)\n")
    good.write_text(MESSY)
    result = runner.invoke(main, ["fmt", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{bad}:1:2: error: unknown combinator 'anyy'" in result.stderr
    assert "hint: did you mean 'any'?" in result.stderr
    assert good.read_text() == CANONICAL
    assert bad.read_text() == "(anyy a b)\n"


def test_fmt_refuses_to_drop_a_comment(runner, tmp_path):
    f = tmp_path / "c.vx"
    f.write_text("(any a ; keep me\n  b)\n")
    result = runner.invoke(main, ["fmt", str(f)])
    assert result.exit_code == 1
    assert "would be lost by formatting" in result.stderr
    assert f.read_text() == "(any a ; keep me\n  b)\n"


def test_fmt_missing_file(runner, tmp_path):
    result = runner.invoke(main, ["fmt", str(tmp_path / "nope.vx")])
    assert result.exit_code == 1 and "cannot read" in result.stderr


def test_hello_example_is_canonical_and_checks_clean(runner):
    result = runner.invoke(main, ["fmt", "--check", str(EXAMPLES / "hello.vx")])
    assert result.exit_code == 0, result.output
    ops = "crash,wrong_output,raises_error,empty_output,fast_enough"
    result = runner.invoke(main, ["check", str(EXAMPLES / "hello.vx"), "--ops", ops])
    assert result.exit_code == 0, result.output
    assert "checked 1 file: 0 errors, 0 warnings" in result.stderr


def test_check_unknown_ops_exit_1_with_nearest_names(runner, tmp_path):
    f = tmp_path / "seed.vx"
    f.write_text("; family: x\n(any crsh\n  (not timeout))\n")
    result = runner.invoke(main, ["check", str(f), "--ops", "crash, timeout"])
    assert result.exit_code == 1
    assert result.stdout == (
        f"{f}:2:6: error: unknown op 'crsh'\n   2 | (any crsh\n     |      ^^^^\n  hint: did you mean 'crash'?\n"
    )
    assert "1 error, 0 warnings" in result.stderr


def test_check_warnings_alone_exit_0(runner, tmp_path):
    f = tmp_path / "w.vx"
    f.write_text("(any a a (all x (not x)))\n")
    result = runner.invoke(main, ["check", str(f)])
    assert result.exit_code == 0
    assert f"{f}:1:8: warning: a appears more than once in (any …)" in result.stdout
    assert f"{f}:1:10: warning: (all x (not x)) can never be a drawback" in result.stdout
    assert "0 errors, 2 warnings" in result.stderr


def test_check_syntax_error_and_vote_range(runner, tmp_path):
    f = tmp_path / "v.vx"
    f.write_text("(vote 4 a b c)\n")
    result = runner.invoke(main, ["check", str(f)])
    assert result.exit_code == 1
    assert f"{f}:1:7: error: vote K=4 but only 3 children" in result.stdout


def test_check_stdin_and_empty_ops(runner):
    result = runner.invoke(main, ["check", "-", "--ops", "a"], input="(any a b)")
    assert result.exit_code == 1 and "<stdin>:1:8: error: unknown op 'b'" in result.stdout
    result = runner.invoke(main, ["check", "-", "--ops", " , "], input="a")
    assert result.exit_code == 2 and "give at least one op name" in result.stderr


def test_fmt_keeps_the_file_mode(runner, tmp_path):
    f = tmp_path / "x.vx"
    f.write_text(MESSY)
    f.chmod(0o640)
    assert runner.invoke(main, ["fmt", str(f)]).exit_code == 0
    assert f.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["x.vx"]  # no temporary file left behind


def test_the_bundled_examples_are_canonical(runner):
    # CI gates on `vx fmt --check examples/`; this keeps the README's test command in step with it
    result = runner.invoke(main, ["fmt", "--check", str(EXAMPLES)])
    assert result.exit_code == 0, result.output + result.stderr
