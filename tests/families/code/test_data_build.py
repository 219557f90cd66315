"""Family builders (vx.families.code.data.build) and `vx data build`: a small HumanEval build end to end."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.families.code.data.build import SamplesBuild, build_humaneval, build_mbpp
from vx.families.code.data.groundtruth import Grader
from vx.families.code.data.tasks import DataError, humaneval_version, load_humaneval

TASK_IDS = [f"HumanEval/{i}" for i in range(0, 34)]  # includes HumanEval/32 and /38 (no literal inputs)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cache")
    out = tmp_path_factory.mktemp("family")
    stages = []
    grader = Grader(
        {tid: t for tid, t in load_humaneval().items() if tid in TASK_IDS and t.base_inputs},
        version=humaneval_version(),
        cache_dir=cache,
        workers=2,
    )
    report = build_humaneval(
        out,
        seed=3,
        n_mutants=3,
        n_locked=20,
        cache_dir=cache,
        task_ids=TASK_IDS,
        progress=lambda stage, total, n: stages.append(stage),
        grader=grader,
    )
    return out, report, cache, stages, grader


def test_family_files_and_loader(built):
    out, report, _, stages, _ = built
    from vx.families.family import Family

    family = Family(out)
    assert family.name == "humaneval" and family.packs == ["code"] and family.root_name == "parses"
    config = tomllib.loads((out / "family.toml").read_text())
    assert config["provenance"]["seed"] == 3
    assert config["provenance"]["tasks_without_literal_test_inputs"] == ["HumanEval/32"]
    assert config["provenance"]["visible_examples"]["found"]["doctest"] > 0
    assert config["seed"] == "seed.vx"  # a new family gets the default code seed, and the builder says so
    assert any("seed.vx" in note for note in report.notes)
    assert family.seed(family.pool().names).op_names() == (
        "crash",
        "fails_visible_example",
        "returns_not_print_only",
        "timeout",
        "wrong_entry_point",
    )
    assert "grading outputs (hidden tests)" in stages


def test_splits_are_disjoint_by_task_and_labelled(built):
    out = built[0]
    train, dev, locked = (read(out / f"{name}.jsonl") for name in ("train", "dev", "locked"))
    tasks = {t["id"]: t for t in read(out / "tasks.jsonl")}
    by_split = {
        name: {row["task"] for row in rows} for name, rows in (("train", train), ("dev", dev), ("locked", locked))
    }
    assert not (by_split["train"] & by_split["dev"]) and not (by_split["train"] & by_split["locked"])
    assert not (by_split["dev"] & by_split["locked"])
    assert sorted(row["label"] for row in dev) == ["fail"] * 5 + ["pass"] * 5
    assert len(locked) >= 20 and {row["label"] for row in locked} <= {"pass", "fail"}
    assert all("label" not in row for row in train)
    for row in dev:
        assert row["reference"] == tasks[row["task"]]["reference"] or row["reference"]
        assert "teacher_agreement" in row["meta"] and "operator" in row["meta"]
    for row in locked:
        assert row["meta"]["truth"] == "hidden-tests"
        if row["label"] == "fail":
            assert row["meta"]["first_failure"]["reason"]
        if row["meta"]["operator"] == "reference":
            assert row["label"] == "pass"  # the canonical solution passes its own tests
    for task in tasks.values():
        assert set(task) >= {"id", "prompt", "entry_point", "examples", "reference"}


def test_outputs_do_not_reveal_the_reference(built):
    out = built[0]
    rows = read(out / "train.jsonl")
    reference_numbers = {row["id"].split("#")[1] for row in rows if row["meta"]["operator"] == "reference"}
    assert len(reference_numbers) > 1  # ids are shuffled per task
    for row in rows:  # every output is ast.unparse'd: no comments survive in any of them
        assert "#" not in "".join(line.split("'")[0].split('"')[0] for line in row["output"].splitlines())


def test_reproducible_by_seed(built, tmp_path):
    # The same grader remembers its grades, so this checks the mutants, ids, splits and files.
    out, _, cache, _, grader = built
    again = tmp_path / "again"
    build_humaneval(again, seed=3, n_mutants=3, n_locked=20, cache_dir=cache, task_ids=TASK_IDS, grader=grader)
    for name in ("tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "family.toml"):
        assert (again / name).read_text() == (out / name).read_text(), name


def test_seed_expression_is_kept(built, tmp_path):
    _, _, cache, _, grader = built
    seed = tmp_path / "seed.vx"
    seed.write_text("; family: humaneval\n(any crash timeout)\n")
    out = tmp_path / "fam"
    build_humaneval(out, seed=3, n_locked=20, cache_dir=cache, task_ids=TASK_IDS, seed_expr=seed, grader=grader)
    assert (out / "seed.vx").read_text() == seed.read_text()
    assert tomllib.loads((out / "family.toml").read_text())["seed"] == "seed.vx"


def test_cli_errors_are_for_people(tmp_path):
    from vx.cli.main import main

    runner = CliRunner()
    result = runner.invoke(
        main,
        ["data", "build", "mbpp", "--samples", os.devnull, "--out", str(tmp_path / "x"), "--data-dir", str(tmp_path)],
    )
    assert result.exit_code == 2
    assert "no MbppPlus" in result.output or "no MbppPlus" in (result.stderr if result.stderr_bytes else "")
    with pytest.raises(DataError, match="subset"):
        build_mbpp([os.devnull], tmp_path, SamplesBuild(subset="some"))
    result = runner.invoke(main, ["data", "build", "--help"])
    assert result.exit_code == 0 and "humaneval" in result.output and "mbpp" in result.output


def test_samples_reader_and_flags(tmp_path):
    from vx.families.code.data.samples import read_samples, solution_flags

    path = tmp_path / "model-x.jsonl"
    path.write_text(
        json.dumps(
            {
                "task_id": "MBPP/11",
                "prompt": "def f(a):\n",
                "entry_point": "f",
                "given_tests": ["assert f(1) == 2"],
                "solution": "def f(a):\n    return a + 1\n",
                "is_solved": "True",
            }
        )
        + "\n\n"
    )
    [sample] = read_samples(path)
    assert sample.plus_id == "Mbpp/11" and sample.model == "model-x" and sample.is_solved is True
    assert solution_flags(sample.solution, "f") == []
    assert solution_flags("    return a + 1\n", "f") == ["does_not_parse"]
    assert solution_flags("def g(a):\n    return math.sqrt(a)\n", "f") == ["no_entry_point", "unimported_modules:math"]
    assert solution_flags("def g(a):\n    return a\n", "f", ("g",)) == []
    assert solution_flags("import math as m\ndef f(a):\n    return m.sqrt(a) + len(re)\nre = 1\n", "f") == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "MBPP/1"}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:1: missing field\(s\) solution"):
        read_samples(bad)
    with pytest.raises(DataError, match="not found"):
        read_samples(tmp_path / "nope.jsonl")


def test_single_class_locked_split_is_reported(tmp_path):
    from vx.families.code.data.build import write_family
    from vx.families.code.data.tasks import Task
    from vx.families.split import LabelledItem, split_by_task

    class Teacher:
        def __init__(self, item):
            self.label, self.agreement = item.truth, 1.0 if item.truth == "pass" else 0.0

        def meta(self):
            return {}

    tasks = [
        Task(id=f"T/{i}", dataset="humaneval", prompt="", entry_point="f", reference="def f():\n    pass\n")
        for i in range(20)
    ]
    items = [
        LabelledItem(id=f"T/{i}#0", task=f"T/{i}", output="x", truth="pass" if i < 5 else "fail") for i in range(20)
    ]
    splits = split_by_task(items, seed=0, teacher=Teacher, n_locked=4)
    notes = write_family(
        tmp_path,
        name="t",
        description="",
        tasks=tasks,
        splits=splits,
        references={t.id: t.reference for t in tasks},
        provenance={"seed": 0},
    )
    assert any("every locked item is labelled fail" in n for n in notes)


def test_provenance_with_unset_options_is_valid_toml():
    import tomllib

    from vx.families.family_toml import family_toml

    text = family_toml(
        name="f",
        description="d",
        packs=["code"],
        root="parses",
        provenance={
            "per_task": None,
            "seed": 0,
            "samples": [{"path": "a", "tests": None}],
            "dev_teacher_vs_truth": {"agree": 9, "items": 10},
            "tasks_dropped": {"HumanEval/15": "too large"},
        },
    )
    data = tomllib.loads(text)["provenance"]
    assert "per_task" not in data and data["samples"] == [{"path": "a"}]
    assert data["tasks_dropped"] == {"HumanEval/15": "too large"} and data["dev_teacher_vs_truth"]["agree"] == 9
