"""`vx grade` on samples an attacker wrote: "a task_id without '/' ("53", "add")
raises IndexError in plus_id and the whole grade is lost; 100,000 attempts at one task take half an hour
and 510 MB, and nothing says so before it starts"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import vx.grading
from vx.cli.main import main
from vx.families.code.data.attempts import read_attempts
from vx.families.code.data.samples import Sample

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def sample(task_id: str) -> Sample:
    return Sample(
        task_id=task_id,
        model="m",
        prompt="",
        entry_point="f",
        given_tests=(),
        solution="x = 1\n",
        is_solved=None,
        line=1,
    )


@pytest.mark.parametrize("task_id", ["53", "add", "", "MBPP"])
def test_a_task_id_without_a_slash_is_an_unknown_task_not_an_index_error(task_id):
    assert sample(task_id).plus_id == task_id
    assert sample("MBPP/11").plus_id == "Mbpp/11"


def test_samples_naming_unknown_tasks_are_listed_and_the_rest_graded(tmp_path):
    from collections import Counter

    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(json.dumps({"task_id": t, "solution": "x = 1\n"}) + "\n" for t in ("53", "add", "MBPP/2")),
        encoding="utf-8",
    )
    stats, unknown = Counter(), []
    attempts, _ = read_attempts([path], {}, codet_tasks=None, prepend_prompt=False, stats=stats, unknown=unknown)
    assert attempts == {} and stats["attempts_of_unknown_tasks"] == 3
    assert unknown == ["s.jsonl:1 '53'", "s.jsonl:2 'add'", "s.jsonl:3 'MBPP/2'"]


def test_vx_grade_on_humaneval_keeps_the_grade_and_names_the_bad_ids(tmp_path, monkeypatch):
    data = SHARED / "evalplus"
    if not (data / "HumanEvalPlus-v0.1.10.jsonl.gz").is_file():
        pytest.skip(f"{data} is absent (real third-party data lives in ../shared/data)")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    seed = Path(__file__).resolve().parents[2] / "examples" / "humaneval" / "seed.vx"
    path = tmp_path / "s.jsonl"
    rows = [
        {"task_id": "HumanEval/0", "solution": "def has_close_elements(numbers, threshold):\n    return False\n"},
        {"task_id": "53", "solution": "def add(x, y):\n    return x + y\n"},
        {"task_id": "add", "solution": "x = 1"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(
        main, ["grade", str(seed), str(path), "--tasks", "humaneval+", "--data-dir", str(data), "-j", "1"]
    )
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and "IndexError" not in res.output
    assert (
        "2 sample(s) name tasks that are not in this dataset: left out (s.jsonl:2 '53', s.jsonl:3 'add'" in res.output
    )
    assert "verdicts: PASS 0 · FAIL 1" in res.output


def test_many_attempts_at_one_task_are_announced_before_grading(tiny_family, tmp_path, monkeypatch):
    monkeypatch.setattr(vx.grading, "LARGE_TASK", 3)
    samples = tmp_path / "many.jsonl"
    samples.write_text(
        "".join(json.dumps({"task_id": "t1", "output": f"apple {k}"}) + "\n" for k in range(5)), encoding="utf-8"
    )
    res = CliRunner().invoke(
        main,
        ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks", str(tiny_family / "tasks.jsonl"), "-j", "1"],
    )
    assert res.exit_code == 0, res.output
    note = res.output.index("5 attempts at t1: the attempts at one task are graded together")
    assert note < res.output.index("pass@k")
