"""The bundled tools example: it loads, grades offline, and is what its builder writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main
from vx.families.family import Family

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tools"


def test_the_example_loads_with_its_labels_and_no_ground_truth_in_its_tasks():
    fam = Family(EXAMPLE)
    assert len(fam.split("dev")) == 10 and len(fam.audit().labeled_split()) > 100
    assert {t["category"] for t in fam.tasks.values()} == {
        "simple",
        "multiple_function",
        "parallel_function",
        "parallel_multiple_function",
        "relevance",
    }
    text = (EXAMPLE / "tasks.jsonl").read_text(encoding="utf-8")
    assert "ground_truth" not in text and "possible_answer" not in text


def test_vx_eval_grades_the_example_offline():
    res = CliRunner().invoke(main, ["eval", str(EXAMPLE / "seed.vx"), "--dataset", "dev", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{") :])
    assert doc["family"] and doc["split"] == "dev" and doc["n"] == 10 and len(doc["items"]) == 10


def test_the_example_is_what_its_builder_writes(tmp_path):
    pytest.importorskip("bfcl_eval")
    from vx.families.tools.data.example import build_example

    build_example(tmp_path / "ex")
    for name in ("tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "peers.jsonl", "seed.vx"):
        assert (tmp_path / "ex" / name).read_text(encoding="utf-8") == (EXAMPLE / name).read_text(encoding="utf-8"), (
            name
        )


@pytest.mark.slow
def test_vx_evolve_runs_on_the_example_offline(tmp_path):
    res = CliRunner().invoke(
        main, ["evolve", str(EXAMPLE), "--rounds", "2", "--out", str(tmp_path / "run.vxrun.sqlite"), "--no-llm"]
    )
    assert res.exit_code == 0, res.output
