"""Text from the candidate must not break the host: unpaired surrogates are
made valid where candidate text enters vx (the sandbox's reports, op messages, item outputs),
and nothing a candidate wrote is ever read as Rich markup when vx prints it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main
from vx.families.family import Family
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache, item_hash
from vx.ops.item import Item

from .conftest import code_family

ECHO_OP = '''

@op(detects="echo")
def echo(task, output, ctx):
    """Repeats the output in its message (as ops that quote model output do)."""
    return drawback("saw: " + output)
'''

MARKUP = "[/] [bold]x[/bold] [link=file:///etc/passwd]y[/link] vx-verifiers[code]"


@pytest.fixture
def echo_family(tiny_family: Path) -> Path:
    (tiny_family / "ops.py").write_text((tiny_family / "ops.py").read_text() + ECHO_OP)
    return tiny_family


@pytest.mark.parametrize("jobs", [1, 2])
def test_lone_surrogates_in_messages_and_outputs_reach_the_cache(echo_family: Path, tmp_path: Path, jobs: int) -> None:
    fam = Family(echo_family)
    items = [Item("s1", "t1", "apple \ud800 pie"), Item("s2", "t2", "pear \udfff")]
    with VerdictCache(tmp_path / "c.sqlite") as cache:
        app = apply_ops(fam.pool(), items, fam.tasks, jobs=jobs, cache=cache, progress=False)
        again = apply_ops(fam.pool(), items, fam.tasks, jobs=jobs, cache=cache, progress=False)
    assert app.message("s1", "echo") == "saw: apple \ufffd pie"
    assert again.cache_hits and again.message("s1", "echo") == app.message("s1", "echo")
    assert item_hash(fam.tasks["t1"], "x\ud800") != item_hash(fam.tasks["t1"], "x\udfff")


def _cli(args: list[str]):
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def test_markup_in_an_op_message_is_printed_as_text(echo_family: Path) -> None:
    rows = [json.loads(line) for line in (echo_family / "dev.jsonl").read_text().splitlines() if line.strip()]
    rows[0]["output"] = MARKUP
    (echo_family / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    seed = echo_family / "echo.vx"
    seed.write_text("(any echo missing_keyword)\n")
    result = _cli(["explain", str(seed), "--item", rows[0]["id"], "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "saw: " + MARKUP.lower() in result.output or "saw: " + MARKUP in result.output
    result = _cli(["eval", str(seed), "--no-cache", "-j", "1"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "[bold]x[/bold]" in flat and "vx-verifiers[code]" in flat


def test_a_candidate_returning_markup_does_not_crash_explain(tmp_path: Path) -> None:
    wrong = f"def flip_case(string: str) -> str:\n    return {MARKUP!r}\n"
    right = "def flip_case(string: str) -> str:\n    return string.swapcase()\n"
    rows = [("HumanEval/27", wrong, "fail")] * 5 + [("HumanEval/27", right, "pass")] * 5
    fam = code_family(tmp_path, ("HumanEval/27",), {"dev": rows, "train": rows[:1], "locked": rows[:2]})
    result = _cli(["explain", str(fam / "seed.vx"), "--family", str(fam), "--item", "dev-0", "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "FAIL" in result.output and "[/] [bold]x" in result.output


def test_a_candidate_raising_a_lone_surrogate_does_not_lose_the_eval(tmp_path: Path) -> None:
    wrong = "def flip_case(string: str) -> str:\n    raise ValueError('bad \\ud800 text [/]')\n"
    right = "def flip_case(string: str) -> str:\n    return string.swapcase()\n"
    # mislabelled on purpose, so that the wrong items are listed as disagreements with their messages
    rows = [("HumanEval/27", wrong, "pass")] * 5 + [("HumanEval/27", right, "fail")] * 5
    fam = code_family(tmp_path, ("HumanEval/27",), {"dev": rows, "train": rows[:1], "locked": rows[:2]})
    cache = tmp_path / "cache.sqlite"
    for _ in range(2):  # the second run is served from the cache
        result = _cli(["eval", str(fam / "seed.vx"), "--family", str(fam), "--cache", str(cache), "-j", "1"])
        assert result.exit_code == 0, result.output
        assert "bad \ufffd text [/]" in " ".join(result.output.split())


def test_error_hints_keep_their_brackets() -> None:
    from vx.cli.common import UserError, err_console

    with err_console.capture() as captured:
        UserError("install it: pip install 'vx-verifiers[code]' [/]").show()
    assert "vx-verifiers[code]" in captured.get() and "[/]" in captured.get()


def test_terminal_control_sequences_in_messages_are_shown_escaped(echo_family: Path) -> None:
    rows = [json.loads(line) for line in (echo_family / "dev.jsonl").read_text().splitlines() if line.strip()]
    rows[0]["output"] = "apple \x1b]0;owned\x07\x1b[2J gone"
    (echo_family / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    seed = echo_family / "echo.vx"
    seed.write_text("(any echo missing_keyword)\n")
    result = _cli(["explain", str(seed), "--item", rows[0]["id"], "--no-cache"])
    assert result.exit_code == 0, result.output
    assert "\x1b]0;" not in result.output and "\x07" not in result.output
    assert "\\x1b]0;owned\\x07" in result.output
