"""The Python API validates its arguments: each call below used to end in an
internal error (`OpTimeout` escaping `grade_many(timeout=1e-9)`, a bare `KeyError` for an unknown
task id, a string of outputs graded character by character, raw errors for `jobs="2"` or
`cache="path"`); each is now an `ArgumentError` (a `VxError`) saying what the argument takes."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from vx.dsl.verdict import Final
from vx.errors import ArgumentError, VxError
from vx.evaluation import evaluate
from vx.grading import grade_samples, open_tasks
from vx.verifier import Verifier

from .conftest import EXAMPLE, example_tasks
from .test_bad_input import run

TASK = example_tasks("HumanEval/0")["HumanEval/0"]
RIGHT = (
    "def has_close_elements(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(EXAMPLE / "seed.vx", EXAMPLE)


def test_a_timeout_that_expires_at_once_times_ops_out_instead_of_escaping(verifier: Verifier, layer: str) -> None:
    grades = verifier.grade_many(TASK, [RIGHT, RIGHT.replace("<", ">")], timeout=1e-9, jobs=1)
    assert len(grades) == 2 and all(g.verdict in tuple(Final) for g in grades)
    assert verifier.grade(TASK, RIGHT, timeout=1e-9).verdict in tuple(Final)


BAD_CALLS = {
    "negative timeout": lambda v: v.grade_many(TASK, [RIGHT], timeout=-1),
    "nan timeout": lambda v: v.grade_many(TASK, [RIGHT], timeout=math.nan),
    "inf timeout": lambda v: v.grade(TASK, RIGHT, timeout=math.inf),
    "text timeout": lambda v: v.grade(TASK, RIGHT, timeout="10"),
    "text jobs": lambda v: v.grade_many(TASK, [RIGHT], jobs="2"),
    "zero jobs": lambda v: v.grade_many(TASK, [RIGHT], jobs=0),
    "path cache": lambda v: v.grade_many(TASK, [RIGHT], cache="verdicts.sqlite"),
    "str outputs": lambda v: v.grade_many(TASK, RIGHT),
    "str peers": lambda v: v.grade_many(TASK, [RIGHT], peers=RIGHT),
    "unknown task id (grade)": lambda v: v.grade("HumanEval/9999", RIGHT),
    "unknown task id (grade_many)": lambda v: v.grade_many("HumanEval/9999", [RIGHT]),
    "task of the wrong type": lambda v: v.grade(17, RIGHT),
    "evaluate with a nan timeout": lambda v: evaluate(v, "dev", timeout=math.nan),
    "grade_samples with one path": lambda v: grade_samples(
        v, open_tasks(str(EXAMPLE / "tasks.jsonl")), str(EXAMPLE / "dev.jsonl")
    ),
}
NEEDLES = {
    "negative timeout": "> 0",
    "nan timeout": "finite",
    "inf timeout": "finite",
    "text timeout": "number",
    "text jobs": "int",
    "zero jobs": ">= 1",
    "path cache": "VerdictCache(",
    "str outputs": "list of outputs",
    "str peers": "list of outputs",
    "unknown task id (grade)": "unknown task id 'HumanEval/9999'",
    "unknown task id (grade_many)": "unknown task id",
    "task of the wrong type": "task record",
    "evaluate with a nan timeout": "finite",
    "grade_samples with one path": "list of samples files",
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_bad_argument_is_a_clear_vx_error(verifier: Verifier, case: str) -> None:
    with pytest.raises(ArgumentError) as info:
        BAD_CALLS[case](verifier)
    assert isinstance(info.value, VxError) and NEEDLES[case] in str(info.value)


def test_a_verifier_has_a_readable_repr(verifier: Verifier) -> None:
    text = repr(verifier)
    assert text.startswith("Verifier('(") and "root='parses'" in text and "family='humaneval'" in text
    assert "ops" in text and "tasks" in text and len(text) < 300


def test_vx_eval_with_a_timeout_that_expires_at_once(fam: Path) -> None:  # noqa: F811
    res = run("eval", fam / "seed.vx", "--family", fam, "-d", "locked", "-j", "1", "--no-cache", "--timeout", "1e-9")
    assert res.exit_code in (0, 3), res.output  # 3: ops failed (timed out) on more items than --max-op-failures
    assert "Traceback" not in res.output
