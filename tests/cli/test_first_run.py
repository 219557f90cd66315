"""What a first run of vx runs into, each as a person would hit it: `vx evolve
--from`, plain progress lines in a pipe, `vx runs show` at 80 columns, `vx explain` showing the graded
output, early option checks, the messages of missing files and extras."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from vx.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HUMANEVAL = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


@pytest.fixture
def evo(tmp_path) -> Path:
    dst = tmp_path / "evo"
    shutil.copytree(FIXTURES / "evo", dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    return dst


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def run(evo, tmp_path):
    """A short run started --from a hand-written expression, in a pipe (not a terminal)."""
    start = tmp_path / "mine.vx"
    start.write_text("; my own start\n(any shouting)\n")
    out = tmp_path / "r.vxrun.sqlite"
    res = invoke("evolve", evo, "--from", start, "--rounds", 3, "--patience", 1, "-j", 1, "--out", out)
    assert res.exit_code == 0, res.output
    return out, res


def test_evolve_from_a_hand_written_expression(run):
    from vx.evolve.store import RunStore

    out, res = run
    with RunStore(out) as store:
        assert store.meta()["seed_text"].strip().endswith("(any shouting)")
        assert store.rounds()[0]["incumbent"] == "(any shouting)"


def test_evolve_in_a_pipe_prints_plain_progress_and_says_when_it_stops_early(run):
    _, res = run
    lines = res.stderr.splitlines()
    assert any(line.startswith("round 0 (") and "seed: (any shouting)" in line for line in lines), res.stderr
    assert any(line.startswith("round 1 (") for line in lines)
    assert "\x1b[" not in res.stderr  # no control codes in a log file
    rounds = [line for line in lines if line.startswith("round ") and " (" in line.split(":")[0]]
    if any("incumbent unchanged" in line for line in rounds):
        assert any(line.startswith("early stop after round") for line in lines)


def test_evolve_from_names_the_unknown_op(evo, tmp_path):
    start = tmp_path / "bad.vx"
    start.write_text("(any shoutin)\n")
    res = invoke("evolve", evo, "--from", start, "--rounds", 1, "-q", "--out", tmp_path / "x.vxrun.sqlite")
    assert res.exit_code == 2 and "unknown op 'shoutin'" in res.output and "shouting" in res.output
    assert not (tmp_path / "x.vxrun.sqlite").exists()  # checked before any file is written
    res = invoke("evolve", evo, "--from", start, "--resume", start)
    assert res.exit_code == 2 and "give one of them" in res.output


def test_runs_show_is_readable_at_80_columns(run):
    from vx.cli.runs import history_table, incumbent_lines
    from vx.evolve.store import RunStore

    out, _ = run
    with RunStore(out) as store:
        rounds = store.rounds()
    buf = io.StringIO()
    console = Console(file=buf, width=80, color_system=None)
    console.print(history_table(rounds, 80))
    for line in incumbent_lines(rounds):
        console.print(line)
    text = buf.getvalue()
    assert max(map(len, text.splitlines())) <= 80
    assert "…" not in text.split("incumbents")[0]  # no figure cut to 0.…
    assert "(any shouting)" in text  # the incumbent whole, on its own line
    res = invoke("runs", "show", out)
    assert res.exit_code == 0 and "(any shouting)" in res.output and "objective" in res.output


def test_runs_export_needs_no_flag(run):
    out, _ = run
    res = invoke("runs", "export", out, "--no-verdicts")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["schema"] == "vx-run/1"


def test_explain_shows_the_graded_output_plain_in_a_pipe_and_in_json():
    res = invoke("explain", HUMANEVAL / "seed.vx", "--item", "HumanEval/30#0", "-j", 1)
    assert res.exit_code == 0, res.output
    assert "output:\ndef get_positive(l: list):" in res.output and "\x1b[" not in res.output
    res = invoke("explain", HUMANEVAL / "seed.vx", "--item", "HumanEval/30#0", "-j", 1, "--json")
    assert json.loads(res.output)["output"].startswith("def get_positive(l: list):")


def test_explain_on_a_task_id_names_its_items():
    res = invoke("explain", HUMANEVAL / "seed.vx", "--item", "HumanEval/0")
    assert res.exit_code == 2
    assert "'HumanEval/0' is a task, not an item" in res.output and "HumanEval/0#0" in res.output
    assert "HumanEval/9#0" not in res.output


def test_fail_under_is_checked_before_grading(tiny_family):
    seed = tiny_family / "seed.vx"
    res = invoke("eval", seed, "--fail-under", "1.5")
    assert res.exit_code == 2 and "1.5 is outside the range of accuracy" in res.output
    assert "give a number from 0 to 1" in res.output and "verdicts" not in res.output  # nothing was graded
    res = invoke("eval", seed, "--fail-under", "-0.5", "--metric", "kappa", "-j", 1)
    assert res.exit_code == 0, res.output  # κ may be negative
    res = invoke("eval", seed, "--dataset", "train", "--fail-under", "0.5")
    assert res.exit_code == 2 and "unlabeled" in res.output


def test_a_syntax_error_is_printed_once_not_error_error(tiny_family):
    bad = tiny_family / "bad.vx"
    bad.write_text("(any missing_keyword\n")
    res = invoke("eval", bad)
    assert res.exit_code == 2 and res.output.count("error:") == 1 and "never closed" in res.output


def test_eval_counts_what_was_computed_and_what_came_from_the_cache(tiny_family, tmp_path):
    cache = tmp_path / "c.sqlite"
    first = invoke("eval", tiny_family / "seed.vx", "-j", 1, "--cache", cache)
    again = invoke("eval", tiny_family / "seed.vx", "-j", 1, "--cache", cache)
    assert "computed, 0 from the cache" in first.output
    assert "24 verdicts: 0 computed, 24 from the cache" in again.output


def test_eval_matrix_option_and_the_old_name(tiny_family, tmp_path):
    res = invoke("eval", tiny_family / "seed.vx", "-j", 1, "--matrix", tmp_path / "m.json")
    assert res.exit_code == 0 and (tmp_path / "m.json").exists()
    res = invoke("eval", tiny_family / "seed.vx", "-j", 1, "--out", tmp_path / "m2.json")
    assert res.exit_code == 0 and (tmp_path / "m2.json").exists() and "now --matrix" in res.output


def test_an_export_page_is_titled_by_its_file(tiny_family, tmp_path):
    rows = tmp_path / "dev.jsonl"
    assert invoke("eval", tiny_family / "seed.vx", "-j", 1, "-o", rows).exit_code == 0
    res = invoke("report", rows, "--out", tmp_path / "rows.html")
    assert res.exit_code == 0, res.output
    page = (tmp_path / "rows.html").read_text()
    assert "<title>vx eval — dev.jsonl · dev</title>" in page and "?" not in page.split("<title>")[1][:40]
    assert "expression <code></code>" not in page


def test_verifier_load_on_a_missing_file_says_so(tmp_path):
    from vx.dsl.vxfile import VxFileError
    from vx.verifier import Verifier

    with pytest.raises(VxFileError, match="no such .vx file"):
        Verifier.load(tmp_path / "nope.vx")


def test_a_missing_extra_is_named_for_its_own_family(monkeypatch):
    from vx.families.pack import missing_module_message

    assert "vx-verifiers[sql]" in missing_module_message("sql", "duckdb")
    assert "vx-verifiers[sql]" in missing_module_message("sql-judge", "sqlglot")
    assert "[code]" not in missing_module_message("mine", "foo") and "provides foo" in missing_module_message(
        "mine", "foo"
    )


def test_an_op_that_never_fires_has_no_accuracy():
    import numpy as np

    from vx.metrics import op_summary

    a = np.array([[0, 1], [0, 0], [0, 1], [0, 0]], dtype=np.int8)  # op a: always clean; op b: fires on the fails
    s = {x.op: x for x in op_summary(a, ["a", "b"], [0.0, 1.0, 0.0, 1.0])}
    assert np.isnan(s["a"].accuracy) and s["b"].accuracy == 1.0


def test_doctor_brief_is_one_line_and_the_warnings(monkeypatch):
    res = invoke("doctor", "--brief")
    assert res.exit_code in (0, 1)
    lines = res.output.splitlines()
    assert lines[0].startswith("vx doctor: model code runs in ")
    assert all(" warn " in f" {line} " or " fail " in f" {line} " for line in lines[1:])


def test_compare_names_the_fixed_and_broken_items(evo, tmp_path):
    better = tmp_path / "b.vx"
    better.write_text("(any too_long shouting missing_keyword)\n")
    res = invoke(
        "compare", evo / "seed.vx", better, "--family", evo, "--dataset", "locked", "-j", 1, "--permutations", 200
    )
    assert res.exit_code == 0, res.output
    data = json.loads(
        invoke(
            "compare",
            evo / "seed.vx",
            better,
            "--family",
            evo,
            "--dataset",
            "locked",
            "-j",
            1,
            "--permutations",
            200,
            "--json",
        ).output
    )
    assert len(data["fixed_items"]) == data["fixed"] and len(data["broken_items"]) == data["broken"]
    for item in (data["fixed_items"] + data["broken_items"])[:3]:
        assert item in res.output


def test_plain_progress_lines_are_counted_and_sparse():
    from vx.ops.progress import Lines

    now = [0.0]
    buf = io.StringIO()
    lines = Lines(buf, every=10.0, clock=lambda: now[0])
    with lines.task("grading 100 items", 100) as advance:
        for _ in range(100):
            now[0] += 0.5
            advance()
    out = buf.getvalue().splitlines()
    assert out[0] == "grading 100 items: 0/100" and out[-1] == "grading 100 items: 100/100 done in 50s"
    assert 3 <= len(out) <= 8  # a line every 10 s or 25 %, not one per item
    assert "(20%), 10s, about 40s left" in out[1]
