"""Anchor labels for the corrected pass@1 (``vx grade --labels``), in the attacker's words:

* **"I label one sample 1,000 times"**: every row was counted, so one sample weighed 1,000 times and moved
  the corrected pass@1 from 0.684 to 0.468 (true 0.692). Now a sample is counted once, and a note says how
  many rows were left out; two rows giving one sample different labels are an error naming both lines.
* **"My labelled output holds a raw U+2028"**: the labels reader split lines with ``str.splitlines()`` and
  refused the line as malformed JSON. It reads through vx's bounded reader now, split at ``\\n`` only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def graded(tiny_family: Path, tmp_path: Path) -> tuple[list[str], Path]:
    samples = _write(
        tmp_path / "model.jsonl",
        [
            {"task_id": "t1", "output": "an apple a day"},
            {"task_id": "t1", "output": "a banana"},
            {"task_id": "t2", "output": "one pear"},
            {"task_id": "t2", "output": "A PEAR!!!"},
        ],
    )
    args = ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks", str(tiny_family / "tasks.jsonl")]
    return [*args, "-j", "1", "--json"], tmp_path


def _anchor(args: list[str], *labels: Path) -> dict:
    extra = [x for path in labels for x in ("--labels", str(path))]
    res = CliRunner().invoke(main, [*args, *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_one_sample_labelled_a_thousand_times_counts_once(graded) -> None:
    args, tmp = graded
    once = _anchor(args, _write(tmp / "once.jsonl", [{"id": "t2#1", "label": "pass"}]))
    many = _anchor(args, _write(tmp / "many.jsonl", [{"id": "t2#1", "label": "pass"}] * 1000))
    assert many["anchor"]["n"] == once["anchor"]["n"] == 7
    assert many["corrected_pass_at_1"]["corrected"] == pytest.approx(once["corrected_pass_at_1"]["corrected"], abs=0.02)
    assert "999 label(s) of samples already labelled counted once (the first at " in " ".join(many["anchor"]["sources"])
    # the same across two files, and for a labelled output given twice
    twice = [{"task": "t3", "output": "a plum", "label": "fail"}]
    doc = _anchor(args, _write(tmp / "a.jsonl", twice), _write(tmp / "b.jsonl", twice))
    assert doc["anchor"]["n"] == 7 and "1 label(s) of samples already labelled counted once" in str(doc["anchor"])


def test_a_sample_labelled_both_pass_and_fail_is_refused_naming_both_lines(graded) -> None:
    args, tmp = graded
    bad = _write(
        tmp / "bad.jsonl",
        [{"id": "t1#0", "label": "pass"}, {"id": "t1#1", "label": "fail"}] + [{"id": "t1#0", "label": "fail"}],
    )
    res = CliRunner().invoke(main, [*args, "--labels", str(bad)])
    assert res.exit_code == 2, res.output
    said = " ".join(res.output.split())
    assert "bad.jsonl:3: sample 't1#0' is labelled fail here and pass in " in said and "bad.jsonl:1;" in said
    assert "Traceback" not in res.output


def test_a_labelled_output_that_is_a_dev_item_counts_once_and_may_not_contradict_it(graded, tiny_family) -> None:
    args, tmp = graded
    dev = [json.loads(line) for line in (tiny_family / "dev.jsonl").read_text(encoding="utf-8").split("\n") if line]
    item = dev[0]
    same = _write(tmp / "same.jsonl", [{"task": item["task"], "output": item["output"], "label": item["label"]}])
    doc = _anchor(args, same)
    assert doc["anchor"]["n"] == 6, "a dev item labelled again through --labels was counted twice"
    flipped = "fail" if item["label"] in ("pass", 1, 1.0) else "pass"
    other = _write(tmp / "other.jsonl", [{"task": item["task"], "output": item["output"], "label": flipped}])
    res = CliRunner().invoke(main, [*args, "--labels", str(other)])
    assert res.exit_code == 2 and "the family's dev split" in res.output, res.output


def test_a_labelled_output_with_a_raw_line_separator_is_read(graded) -> None:
    args, tmp = graded
    path = _write(tmp / "sep.jsonl", [{"task": "t3", "output": "a plum\u2028and a pear\u2029", "label": "fail"}])
    assert "\u2028" in path.read_text(encoding="utf-8")  # written raw, as vx writes it
    assert _anchor(args, path)["anchor"]["n"] == 7


def test_a_fifo_as_the_labels_file_is_refused_not_read(graded) -> None:
    args, tmp = graded
    fifo = tmp / "labels.fifo"
    os.mkfifo(fifo)
    res = CliRunner().invoke(main, [*args, "--labels", str(fifo)])
    assert res.exit_code == 2 and "FIFO" in res.output, res.output
