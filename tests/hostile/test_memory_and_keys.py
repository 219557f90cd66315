"""What a hostile output can make the grader keep, and whose verdict it can borrow.

Each test is the attack in the attacker's words, on the default sandbox layer:

* **"I return ``list(range(100000))`` from every call"**: the code family's run memo kept up to 4,096
  runs with every returned value and no byte bound (a 79-byte solution kept ~400 MB per grade, and a
  long-lived grader kept it). Now a run's decoded values are bounded (``RUN_DECODE_MB``), the memo is
  bounded in bytes, and a run whose results are large is not kept at all.
* **"I share my task's id"**: the run memo's key held the probes' arguments but not their expected
  values, so the same text graded at two task records that share an id but not their examples got the
  first record's verdict -- a wrong PASS in one order, a wrong FAIL in the other.
"""

from __future__ import annotations

import copy

import pytest

from vx.verifier import Verifier

from .conftest import EXAMPLE


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available():
    from vx.families.code.ops import run
    from vx.sandbox import SandboxUnavailable

    try:
        run.sandbox()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox: {exc}")


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(EXAMPLE / "seed.vx")


def test_my_memory_bomb_fails_and_the_grader_keeps_none_of_it(verifier: Verifier) -> None:
    from vx.families.code.ops import run

    task = verifier.tasks["HumanEval/0"]
    bomb = f"def {task['entry_point']}(*args):\n    return list(range(100000))\n"
    before = len(run._runs)
    grade = verifier.grade(task, bomb)
    assert grade.verdict.value == "fail"
    assert len(run._runs) == before, "a run holding ~100 MB of results was kept in the memo"
    assert run._runs.bytes <= run.RUN_MEMO_BYTES


def test_the_memo_keeps_an_honest_run_and_serves_it_again(verifier: Verifier) -> None:
    from vx.families.code.ops import run

    task = verifier.tasks["HumanEval/53"]
    code = "def add(x, y):\n    return x + y\n"
    assert verifier.grade(task, code).verdict.value == "pass"
    kept = len(run._runs)
    assert verifier.grade(task, code).verdict.value == "pass"
    assert len(run._runs) == kept and 0 < run._runs.bytes <= run.RUN_MEMO_BYTES


def _twins(verifier: Verifier) -> tuple[dict, dict]:
    """HumanEval/53 (``add``), and a task record with the same id whose examples multiply."""
    adds = copy.deepcopy(dict(verifier.tasks["HumanEval/53"]))
    multiplies = copy.deepcopy(adds)
    for ex in multiplies["examples"]:
        x, y = ex["args"]
        ex["expected"], ex["expected_src"] = x * y, repr(x * y)
    return adds, multiplies


@pytest.mark.parametrize("first", ["adds", "multiplies"])
def test_my_text_graded_at_a_task_sharing_an_id_gets_that_tasks_verdict(first: str) -> None:
    # The same text at two task records sharing the id "HumanEval/53", graded by new Verifier objects in
    # one process: in the order (adds, multiplies) the multiplying task borrowed the PASS (a wrong PASS);
    # in the other order the adding task borrowed the FAIL (a wrong FAIL).
    code = "def add(x, y):\n    return x + y\n"
    fresh = Verifier.load(EXAMPLE / "seed.vx")
    adds, multiplies = _twins(fresh)
    order = [adds, multiplies] if first == "adds" else [multiplies, adds]
    verdicts = {}
    for task in order:
        grade = Verifier.load(EXAMPLE / "seed.vx").grade(task, code)
        verdicts["adds" if task is adds else "multiplies"] = grade.verdict.value
    assert verdicts == {"adds": "pass", "multiplies": "fail"}


def test_two_tasks_sharing_an_id_in_one_batch_are_each_graded_by_their_own_examples() -> None:
    from vx.ops.item import Item

    fresh = Verifier.load(EXAMPLE / "seed.vx")
    adds, multiplies = _twins(fresh)
    code = "def add(x, y):\n    return x + y\n"
    items = [Item("a", "adds", code), Item("m", "multiplies", code)]
    grading = fresh.grade_items(items, tasks={"adds": adds, "multiplies": multiplies}, jobs=1, progress=False)
    assert [f.value for f in grading.finals] == ["pass", "fail"]
