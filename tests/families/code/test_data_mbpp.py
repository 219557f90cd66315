"""MBPP+ from real model outputs (../shared/data): the family builder and the evalplus cross-check.

Slow (minutes: every sample runs on all MBPP+ inputs, under vx and under evalplus), so marked
`slow` and `data`; skipped cleanly when ../shared/data is absent."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[4] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
GPT35 = DATA / "samples" / "mbpp" / "gpt-3.5-turbo-0613.jsonl"
CODELLAMA = DATA / "samples" / "mbpp" / "codellama.jsonl"
EVALPLUS = DATA / "evalplus"

pytestmark = [
    pytest.mark.data,
    pytest.mark.slow,
    pytest.mark.skipif(not (GPT35.is_file() and EVALPLUS.is_dir()), reason="../shared/data is absent"),
]


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader
    from vx.families.code.data.validate import evalplus_verdicts, mbpp_samples, vx_tasks, vx_verdicts

    plus = task_data.load_mbpp_plus(EVALPLUS)
    samples = mbpp_samples(GPT35, plus)
    tasks = vx_tasks(samples, plus)
    grader = Grader(
        tasks,
        version=task_data.plus_version("mbpp+", EVALPLUS),
        cache_dir=tmp_path_factory.mktemp("expected"),
        workers=2,
    )
    problems = grader.prepare()
    samples = [s for s in samples if s.plus_id not in problems]
    ours, _, _ = vx_verdicts(samples, tasks, grader)
    try:
        import evalplus  # noqa: F401  (the [bench] extra; not part of [code])
    except ImportError:
        theirs = None
    else:
        theirs = evalplus_verdicts(samples, EVALPLUS, alias=True, workers=2)
    return samples, tasks, grader, problems, ours, theirs


def needs_evalplus(theirs) -> None:
    if theirs is None:
        pytest.skip("evalplus is not installed (the cross-check needs the [bench] extra)")


@pytest.mark.timeout(1800)
def test_vx_labels_agree_with_evalplus(graded):
    from vx.families.code.data.validate import compare

    samples, tasks, _, problems, ours, theirs = graded
    needs_evalplus(theirs)
    assert len(samples) >= 220 and set(problems) <= {"Mbpp/255"}  # 1 GB reference output: see docs
    agreement = compare(samples, ours, theirs)
    for d in agreement.disagreements:  # every disagreement must come with a known cause
        assert not d["explanation"].startswith("unexplained"), d
    assert agreement.rate >= 0.98, agreement.disagreements


@pytest.mark.timeout(1800)
def test_mbpp_family_locked_labels_match_evalplus(graded, tmp_path):
    from vx.families.code.data.build import SamplesBuild, build_mbpp
    from vx.families.family import Family

    samples, _, grader, _, _, theirs = graded
    needs_evalplus(theirs)
    out = tmp_path / "mbpp-gpt35"
    report = build_mbpp([GPT35], out, SamplesBuild(seed=0, data_dir=EVALPLUS, subset="all", grader=grader))
    family = Family(out)
    assert family.name == "mbpp-plus"
    locked = read(out / "locked.jsonl")
    assert len(locked) >= 40
    verdicts = {key: v["label"] for key, v in theirs.verdicts.items()}
    mismatched = [row["id"] for row in locked if verdicts[row["id"]] != row["label"]]
    assert not mismatched
    dev = read(out / "dev.jsonl")
    assert sorted(row["label"] for row in dev) == ["fail"] * 5 + ["pass"] * 5
    assert all(row["reference"] for row in dev)
    config = tomllib.loads((out / "family.toml").read_text())
    prov = config["provenance"]
    assert prov["samples"][0]["sha256"] and prov["seed"] == 0
    assert {"Mbpp/160", "Mbpp/166", "Mbpp/167"} <= set(prov["renamed_tasks"])
    assert 20 <= len(prov["spec_drift_tasks"]) <= 30  # the data README counts 27
    tasks = {t["id"]: t for t in read(out / "tasks.jsonl")}
    for tid in prov["spec_drift_tasks_kept"]:
        assert tasks[tid]["meta"]["spec_drift"] is True
    assert report.counts["spec_drift_items"]["locked"] == sum(1 for r in locked if r["meta"].get("spec_drift"))
    assert prov["solution_flags"]["does_not_parse"] >= 1


@pytest.mark.timeout(3600)
@pytest.mark.skipif(not CODELLAMA.is_file(), reason="codellama samples absent")
def test_hard_subset_from_two_models(graded, tmp_path):
    from vx.families.code.data.build import SamplesBuild, build_mbpp

    _, _, grader, _, _, _ = graded
    out = tmp_path / "mbpp-hard"
    report = build_mbpp([GPT35, CODELLAMA], out, SamplesBuild(seed=1, data_dir=EVALPLUS, subset="hard", grader=grader))
    items = read(out / "train.jsonl") + read(out / "dev.jsonl") + read(out / "locked.jsonl")
    by_task: dict[str, list[dict]] = {}
    for row in items:
        by_task.setdefault(row["task"], []).append(row)
    assert {row["meta"]["model"] for row in items} == {"gpt-3.5-turbo-0613", "codellama"}
    # hard: no kept task is solved by every sample (checked on the locked split, whose labels we have)
    locked = read(out / "locked.jsonl")
    for task in {row["task"] for row in locked}:
        assert any(row["label"] == "fail" for row in locked if row["task"] == task)
    assert report.counts["locked_truth"].get("pass", 0) > 0
    assert report.provenance["subset"] == "hard"
