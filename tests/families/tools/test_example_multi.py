"""The bundled multi-turn example: it loads, its seed grades it, and it is exactly what its builder makes
from bfcl-eval's data files (BFCL's tasks; trajectories mutated from the ground truth, no model output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.families.tools import backends

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "tools-multi"
needs_backends = pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed")


def test_the_example_loads_and_names_every_mutation():
    fam = Family(EXAMPLE)
    assert fam.pack().root == "reads_trajectory"
    kinds = {json.loads(line)["id"].split("#")[1] for line in (EXAMPLE / "locked.jsonl").read_text().splitlines()}
    assert kinds <= {"reference", "one_step", "extra_read", "silent", "wrong_value", "skipped_read", "garbled_name"}
    tasks = [json.loads(line) for line in (EXAMPLE / "tasks.jsonl").read_text().splitlines()]
    assert all("ground_truth" not in t for t in tasks)


@needs_backends
def test_the_seed_grades_the_examples_dev_split():
    from vx.evaluation import evaluate
    from vx.verifier import Verifier

    ev = evaluate(Verifier.load(EXAMPLE / "seed.vx", family=EXAMPLE), "dev", jobs=1)
    assert ev.metrics is not None and ev.metrics.fail_recall >= 0.8 and ev.metrics.pass_recall == 1.0


@needs_backends
@pytest.mark.slow
def test_the_example_is_what_its_builder_makes(tmp_path):
    from vx.families.tools.data.example_multi import build_example

    build_example(tmp_path / "ex")
    for name in ("tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "peers.jsonl", "seed.vx"):
        assert (tmp_path / "ex" / name).read_text() == (EXAMPLE / name).read_text(), name
