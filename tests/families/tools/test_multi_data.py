"""The multi-turn family built from the shared files: split by task, the ground truth never a task field,
the dev references in the output's shape, and the family loads with the tools-multi pack."""

from __future__ import annotations

import json

import pytest
from conftest import shared_data

from vx.families.family import Family
from vx.families.tools import backends
from vx.families.tools.data import multi


@pytest.mark.data
def test_build_multi_splits_by_task_and_keeps_the_ground_truth_out_of_tasks(tmp_path):
    src = shared_data("tools", "multi")
    report = multi.build_multi(src.parent, tmp_path / "fam", seed=0, relabel=False)
    c = report.counts
    assert c["dev_labels"] == {"fail": 5, "pass": 5}
    assert c["train_tasks"] + c["dev_tasks"] + c["locked_tasks"] == 300
    assert c["train_items"] + c["dev_items"] + c["locked_items"] + c["dev_peer_items"] == 2100
    tasks = [json.loads(line) for line in (tmp_path / "fam" / "tasks.jsonl").read_text().splitlines()]
    assert all("ground_truth" not in t and "possible_answer" not in t for t in tasks)
    splits = {}
    for name in ("train", "dev", "locked"):
        rows = [json.loads(line) for line in (tmp_path / "fam" / f"{name}.jsonl").read_text().splitlines()]
        splits[name] = {r["task"] for r in rows}
        if name == "train":
            assert all("label" not in r for r in rows)
        if name == "dev":
            ref = rows[0]["reference"]
            assert isinstance(ref, list) and all(isinstance(step, list) for turn in ref for step in turn)
    assert not (splits["train"] & splits["dev"]) and not (splits["train"] & splits["locked"])
    assert not (splits["dev"] & splits["locked"])
    fam = Family(tmp_path / "fam")
    assert fam.pack().root == "reads_trajectory" and fam.peers


@pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed")
def test_a_reference_call_is_read_never_evaluated(tmp_path):
    marker = tmp_path / "pwned"
    with pytest.raises(multi.DataError, match="non-literal"):
        multi.reference_call(f"cd(folder=__import__('os').system('touch {marker}'))", ["GorillaFileSystem"])
    assert not marker.exists()
    call = multi.reference_call("mean([1, 2])", ["MathAPI"])
    assert call.name == "mean" and call.args == {"numbers": [1, 2]}
