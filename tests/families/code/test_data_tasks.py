"""Task loaders (vx.families.code.data.tasks): plain HumanEval offline, evalplus datasets from local files."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from vx.families.code.data.tasks import DataError, find_plus_file, literal_check_inputs, load, load_humaneval

EVALPLUS_DIR = Path(__file__).resolve().parents[4] / "shared" / "data" / "evalplus"
if not EVALPLUS_DIR.is_dir():
    EVALPLUS_DIR = Path("/work/shared/data/evalplus")
needs_data = pytest.mark.skipif(not EVALPLUS_DIR.is_dir(), reason="../shared/data/evalplus is absent")


def test_literal_check_inputs_in_source_order_deduplicated():
    test = """
def check(candidate):
    assert candidate([1, 2], 3) == True
    for i in range(3):
        assert candidate([i], 1)
    assert abs(candidate([0.5], 1) - 1.0) < 1e-6
    assert candidate([1, 2], 3) == True
"""
    inputs, skipped = literal_check_inputs(test)
    assert inputs == [[[1, 2], 3], [[0.5], 1]]
    assert skipped == 1


def test_plain_humaneval_loads_offline():
    tasks = load_humaneval()
    assert len(tasks) == 164
    task = tasks["HumanEval/0"]
    assert task.entry_point == "has_close_elements"
    assert task.reference.startswith(task.prompt)
    assert task.base_inputs[0] == [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3]
    assert task.plus_inputs == ()
    assert task.examples and task.examples[0].source == "doctest"
    record = task.family_record()
    assert set(record) >= {"id", "prompt", "entry_point", "examples", "reference"}
    # randomised check functions have no literal inputs
    assert tasks["HumanEval/38"].base_inputs == ()


@needs_data
def test_mbpp_plus_through_evalplus_from_data_dir():
    tasks = load("mbpp+", EVALPLUS_DIR)
    assert len(tasks) == 378
    task = tasks["Mbpp/2"]
    assert task.base_inputs[0] == [(3, 4, 5, 6), (5, 7, 4, 10)]  # evalplus deserialised tuples
    assert task.plus_inputs and task.examples[0].function == "similar_elements"


@needs_data
def test_humaneval_plus_via_override_variable_and_plain_jsonl(tmp_path, monkeypatch):
    [gz] = sorted(EVALPLUS_DIR.glob("HumanEvalPlus-*.jsonl.gz"))
    plain = tmp_path / gz.name.replace(".gz", "")
    with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", str(plain))
    assert find_plus_file("humaneval+", None) == plain
    tasks = load("humaneval+")
    assert len(tasks) == 164 and tasks["HumanEval/0"].plus_inputs


def test_bad_data_dir_is_reported(tmp_path):
    with pytest.raises(DataError, match="no MbppPlus"):
        find_plus_file("mbpp+", tmp_path)
    with pytest.raises(DataError, match="no such directory"):
        find_plus_file("mbpp+", tmp_path / "missing")
    with pytest.raises(DataError, match="unknown dataset"):
        load("apps")


def test_missing_override_file_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", os.fspath(tmp_path / "nope.jsonl"))
    with pytest.raises(DataError, match="MBPP_OVERRIDE_PATH"):
        find_plus_file("mbpp+", None)


@needs_data
@pytest.mark.data
def test_humaneval_plus_ground_truth_with_find_zero_oracle(tmp_path):
    from vx.families.code.data.groundtruth import Grader

    tasks = load("humaneval+", EVALPLUS_DIR)
    chosen = {tid: tasks[tid] for tid in ("HumanEval/0", "HumanEval/32")}
    grader = Grader(chosen, version="he-plus-test", cache_dir=tmp_path, workers=2)
    assert grader.prepare() == {}
    for task in chosen.values():
        assert grader.grade(task, task.reference).label == "pass", task.id
    find_zero = chosen["HumanEval/32"]
    wrong = find_zero.prompt + "    return 0.5\n"
    truth = grader.grade(find_zero, wrong)
    assert truth.label == "fail" and "poly" in truth.first_failure["reason"]


def test_failed_download_is_explained(monkeypatch):
    import evalplus.data.mbpp as mbpp_module

    from vx.families.code.data import tasks as task_data

    monkeypatch.delenv("MBPP_OVERRIDE_PATH", raising=False)
    monkeypatch.setattr(mbpp_module, "MBPP_OVERRIDE_PATH", None)

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(mbpp_module, "_ready_mbpp_plus_path", offline)
    with pytest.raises(DataError, match="could not fetch MbppPlus.*--data-dir"):
        task_data.load_mbpp_plus()
    with pytest.raises(DataError, match="could not fetch MbppPlus"):
        task_data.plus_version("mbpp+")
