"""Parent-side work on an output is bounded: an output of 3.2 MB of statements
used to cost 66 s in the parent (the root parsed it, then abstained) and 16 MB ran past 8 minutes at
4 GB. Over `vx.ops.apply.MAX_OUTPUT_CHARS` no op runs: the root reports the named drawback
``output_too_large`` (a FAIL, never an abstention) and the failure class is ``output_too_large``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from vx.dsl.verdict import Final
from vx.families.code.ops.taxonomy import TAXONOMY, classify_by_evidence
from vx.ops.apply import MAX_OUTPUT_CHARS, OUTPUT_TOO_LARGE
from vx.verifier import Verifier

from .conftest import EXAMPLE, example_tasks

TASK = example_tasks("HumanEval/0")["HumanEval/0"]
RIGHT = (
    "def has_close_elements(numbers, threshold):\n"
    "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n"
)


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(EXAMPLE / "seed.vx", EXAMPLE)


@pytest.mark.parametrize("size_mb", [3.2, 16])
def test_a_huge_output_is_a_named_fail_judged_at_once(verifier: Verifier, size_mb: float) -> None:
    output = RIGHT + "x = 1\n" * int(size_mb * 2**20 / 6)  # a correct function buried in statements
    start = time.process_time()
    grades = verifier.grade_many(TASK, [output, RIGHT], jobs=1)
    assert time.process_time() - start < 30  # CPU seconds, generous (it takes well under one)
    big, small = grades
    assert big.verdict is Final.FAIL and small.verdict is Final.PASS
    assert big.drawbacks and big.drawbacks[0][1].startswith(OUTPUT_TOO_LARGE)
    assert verifier.grade(TASK, output).verdict is Final.FAIL


def test_the_limit_is_a_failure_class_of_the_code_taxonomy() -> None:
    assert OUTPUT_TOO_LARGE in TAXONOMY
    assert classify_by_evidence(TASK, "#" * (MAX_OUTPUT_CHARS + 1)) == OUTPUT_TOO_LARGE
    assert classify_by_evidence(TASK, RIGHT) is None


def test_an_output_at_the_limit_is_judged_as_usual(verifier: Verifier) -> None:
    output = RIGHT + "#" * (MAX_OUTPUT_CHARS - len(RIGHT) - 1) + "\n"
    assert len(output) == MAX_OUTPUT_CHARS
    assert verifier.grade(TASK, output).verdict is Final.PASS


def test_vx_eval_on_a_family_with_a_huge_output(tmp_path: Path) -> None:
    import json
    import shutil

    from .test_bad_input import run

    fam = tmp_path / "fam"
    shutil.copytree(EXAMPLE, fam)
    rows = [json.loads(line) for line in (fam / "locked.jsonl").read_text(encoding="utf-8").splitlines()][:3]
    rows[0] = {**rows[0], "output": rows[0]["output"] + "\n" + "y = 2\n" * 600_000, "label": "fail"}
    (fam / "locked.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = run("eval", fam / "seed.vx", "--family", fam, "-d", "locked", "-j", "1", "--no-cache", "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    first = next(it for it in doc["items"] if it["id"] == rows[0]["id"])
    assert first["verdict"] == "fail"
    assert any(d["message"].startswith(OUTPUT_TOO_LARGE) for d in first["drawbacks"])
