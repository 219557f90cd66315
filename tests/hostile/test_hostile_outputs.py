"""The hostile-output suite: wrong candidates that each try to look right must get FAIL
from the bundled seed verifier (examples/humaneval/seed.vx) *and* from ground-truth labelling, on
every available sandbox layer, within a time bound, and without an exception escaping vx.

The attacks are in :mod:`tests.hostile.attacks` (what each one tries is in its ``trick``). The
layers come from the sandbox's own list, so a new layer is attacked as soon as it is listed.
"""

from __future__ import annotations

import time

import pytest
from conftest import TIME_MARGIN

from .attacks import ATTACKS, HIDDEN, Attack
from .conftest import EXAMPLE, family_module, groundtruth_module, layer_sandbox, tasks_module


@pytest.fixture(scope="module")
def seed_verifier():
    from vx.verifier import Verifier

    fam = family_module().Family(EXAMPLE)
    return Verifier.load(EXAMPLE / "seed.vx", fam), fam


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    gt, tasks = groundtruth_module(), tasks_module()
    fam = family_module().Family(EXAMPLE)
    records = {tid: fam.tasks[tid] for tid in HIDDEN}
    task_objs = {
        tid: tasks.Task(
            id=tid,
            dataset="humaneval",
            prompt=r["prompt"],
            entry_point=r["entry_point"],
            reference=r["reference"],
            base_inputs=HIDDEN[tid],
        )
        for tid, r in records.items()
    }
    cache = tmp_path_factory.mktemp("expected")
    return gt, task_objs, cache


def _params():
    out = []
    for a in ATTACKS:
        marks = [pytest.mark.xfail(strict=True, reason=a.open_issue)] if a.open_issue else []
        out.append(pytest.param(a, id=a.name, marks=marks))
    return out


@pytest.mark.parametrize("attack", _params())
def test_hostile_output_fails_the_seed_verifier_and_the_ground_truth(
    attack: Attack, layer: str, seed_verifier, grader
) -> None:
    verifier, fam = seed_verifier
    start = time.monotonic()
    grade = verifier.grade(fam.tasks[attack.task], attack.code)
    seed_seconds = time.monotonic() - start
    gt, tasks, cache = grader
    g = gt.Grader(
        tasks, version="hostile-suite", cache_dir=cache, workers=1, sandbox=layer_sandbox(layer, memory_mb=gt.MEMORY_MB)
    )
    start = time.monotonic()
    truth = g.grade(tasks[attack.task], attack.code)
    gt_seconds = time.monotonic() - start
    why = "; ".join(f"{op}: {msg}" for op, msg in grade.drawbacks) or str(grade.trace.verdict)
    assert grade.verdict.value == "fail", f"{attack.trick}: the seed verifier says {grade.verdict.value} ({why})"
    assert truth.label == "fail", f"{attack.trick}: ground truth says {truth.label}"
    assert seed_seconds + gt_seconds < attack.seconds * TIME_MARGIN, (
        f"{attack.trick}: judging took {seed_seconds + gt_seconds:.1f} s"
    )


def test_the_suite_is_large_enough() -> None:
    assert len(ATTACKS) >= 30
    assert len({a.trick for a in ATTACKS}) == len(ATTACKS)


def test_the_references_pass(seed_verifier, grader) -> None:
    """The harness is not simply failing everything: the tasks' own solutions pass both judges."""
    verifier, fam = seed_verifier
    gt, tasks, cache = grader
    g = gt.Grader(tasks, version="hostile-suite", cache_dir=cache, workers=1)
    for tid, task in tasks.items():
        assert verifier.grade(fam.tasks[tid], task.reference).verdict.value == "pass"
        assert g.grade(task, task.reference).label == "pass"
