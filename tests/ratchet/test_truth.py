"""The families' ground truth (each family's pack hook), rebuilt at ratchet time, reproduces the locked labels
the builders computed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.ratchet.config import RatchetError
from vx.ratchet.graders import ground_truth_for
from vx.ratchet.run import split_tasks

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("VX_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _agreement(truth, fam):
    locked = fam.labeled("locked").items  # a person's audit view: the test compares, the loop never reads it
    judged = truth.grade_many([(it.task, it.output) for it in locked])
    return [(it.id, it.hard_label(), "pass" if j.passed else "fail") for it, j in zip(locked, judged)]


def test_humaneval_hidden_tests_are_regenerated_from_the_dataset_and_match_the_locked_labels():
    fam = Family(ROOT / "examples" / "humaneval")
    truth = ground_truth_for(fam)
    assert truth.kind == "hidden-tests" and truth.describe()["dataset_version"] == fam.provenance["dataset_version"]
    rows = _agreement(truth, fam)
    assert len(rows) == 60 and all(want == got for _, want, got in rows)
    task = fam.tasks["HumanEval/0"]
    bad = truth.grade_many([("HumanEval/0", "def has_close_elements(numbers, threshold):\n    return 1 / 0\n")])[0]
    assert not bad.passed and bad.checks[0][0] == "hidden_tests" and "ZeroDivisionError" in bad.checks[0][1]
    good = truth.grade_many([("HumanEval/0", task["reference"])])[0]
    assert good.passed and good.score == 1.0


def test_a_family_built_from_another_dataset_version_is_refused(tmp_path):
    src = ROOT / "examples" / "humaneval"
    dst = tmp_path / "he"
    shutil.copytree(src, dst)
    toml = dst / "family.toml"
    toml.write_text(toml.read_text().replace('dataset_version = "humaneval-', 'dataset_version = "humaneval-0000'))
    with pytest.raises(RatchetError, match="was built from"):
        ground_truth_for(Family(dst))


def test_report_rubric_truth_matches_the_locked_labels():
    fam = Family(ROOT / "examples" / "report")
    truth = ground_truth_for(fam)
    assert truth.kind == "rubric"
    rows = _agreement(truth, fam)
    assert rows and all(want == got for _, want, got in rows)
    j = truth.grade_many([(fam.labeled("locked").items[0].task, "no title, nothing")])[0]
    assert not j.passed and any(c[0].startswith("rubric:") for c in j.checks)


@pytest.mark.data
def test_sql_execution_truth_matches_the_locked_labels():
    csv = SHARED / "sql" / "defog_questions_gen_postgres.csv"
    if not csv.is_file():
        pytest.skip(f"{csv} is absent (real third-party data lives in ../shared/data)")
    pytest.importorskip("duckdb")
    fam = Family(ROOT / "examples" / "sql")
    with pytest.raises(RatchetError, match="--data-dir"):
        ground_truth_for(fam)
    truth = ground_truth_for(fam, data_dir=SHARED)
    rows = _agreement(truth, fam)
    assert len(rows) == len(fam.audit()) and all(want == got for _, want, got in rows)


def test_example_families_split_into_disjoint_training_and_held_out_tasks():
    for name, (n_train, n_held) in {"humaneval": (136, 15), "report": (8, 14)}.items():
        train, held = split_tasks(Family(ROOT / "examples" / name))
        assert (len(train), len(held)) == (n_train, n_held) and not set(train) & set(held)


def test_a_family_without_a_ground_truth_hook_says_what_to_add(tmp_path):
    src = ROOT / "tests" / "fixtures" / "tiny"
    dst = tmp_path / "tiny"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(RatchetError, match=r"\[ratchet\] ground_truth"):
        ground_truth_for(Family(dst))
