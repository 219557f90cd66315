"""vx eval -o / --html / --metric, and vx report on an evaluation."""

from __future__ import annotations

import json
import sys

from click.testing import CliRunner

from vx.cli.main import main


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_eval_exports_rows_and_report_renders_them(tiny_family, tmp_path):
    seed = tiny_family / "seed.vx"
    r = run("eval", seed, "-j", 1, "-o", tmp_path / "dev.jsonl", "--html", tmp_path / "dev.html")
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in (tmp_path / "dev.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["split"] == "dev" and "verdict:nonempty" in rows[0]
    page = (tmp_path / "dev.html").read_text()
    assert "id='items'" in page and page.count("<tbody class='item") == 6
    r = run("eval", seed, "-j", 1, "--export", tmp_path / "dev.csv")
    assert r.exit_code == 0 and (tmp_path / "dev.csv").read_text().startswith("id,task,split,label,verdict,")
    # vx report on the JSON document and on the .jsonl export
    (tmp_path / "dev.json").write_text(run("eval", seed, "-j", 1, "--json").stdout)
    r = run("report", tmp_path / "dev.json")
    assert r.exit_code == 0 and (tmp_path / "dev.html").is_file()
    r = run("report", tmp_path / "dev.jsonl", "--out", tmp_path / "rows.html")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "rows.html").read_text().count("<tbody class='item") == 6


def test_bad_export_names_and_missing_pyarrow_are_clean_errors(tiny_family, tmp_path, monkeypatch):
    r = CliRunner().invoke(main, ["eval", str(tiny_family / "seed.vx"), "-o", str(tmp_path / "x.xlsx")])
    assert r.exit_code == 2 and "name a .csv, .jsonl or .parquet file" in r.output
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    r = CliRunner().invoke(main, ["eval", str(tiny_family / "seed.vx"), "-o", str(tmp_path / "x.parquet")])
    assert r.exit_code == 2 and "needs pyarrow" in r.output and "Traceback" not in r.output
    (tmp_path / "bad.json").write_text('{"schema": "nope"}')
    r = CliRunner().invoke(main, ["report", str(tmp_path / "bad.json")])
    assert r.exit_code == 2 and "not a vx evaluation" in r.output


def test_fail_under_gates_on_the_chosen_metric(tiny_family):
    (tiny_family / "weak.vx").write_text("shouting\n")
    weak = str(tiny_family / "weak.vx")
    doc = json.loads(run("eval", weak, "-d", "locked", "-j", 1, "--json").stdout)["metrics"]
    for metric, key in (
        ("accuracy", "accuracy"),
        ("balanced", "balanced_accuracy"),
        ("recall-weighted", "recall_weighted"),
        ("kappa", "kappa"),
    ):
        value = doc[key]
        below = CliRunner().invoke(
            main, ["eval", weak, "-d", "locked", "-j", "1", "--metric", metric, "--fail-under", str(value + 0.01)]
        )
        assert below.exit_code == 1 and f"{metric} {value:.3f} is below" in below.output, metric
        at = CliRunner().invoke(
            main, ["eval", weak, "-d", "locked", "-j", "1", "--metric", metric, "--fail-under", str(value - 1e-9)]
        )
        assert at.exit_code == 0, (metric, at.output)


def test_metric_choices_match_the_api():
    from vx.cli.eval import METRIC_CHOICES
    from vx.evaluation import METRICS

    assert tuple(METRICS) == METRIC_CHOICES
