"""The execution teacher: dev labels from a weaker, anchored signal.

The teacher runs a candidate on the task's **base** inputs only (never the plus inputs) and
compares each output with the canonical solution's output, using evalplus's comparison
(:mod:`vx.families.code.compare`). Its label is *pass* when every base input agrees and *fail*
otherwise; the fraction of agreeing inputs is kept as ``agreement`` (stored in the dev item's
meta) -- a soft signal, while the dev label itself stays hard.

For MBPP+ and HumanEval+ the teacher is strictly weaker than the locked ground truth (which
adds the plus inputs); for plain HumanEval both read the same inputs (those of ``check``), so
there the teacher coincides with the hidden tests.
"""

from __future__ import annotations

from typing import Any

import attrs

from vx.families.code.data.groundtruth import Grader, PhaseResult
from vx.families.code.data.tasks import Task


@attrs.frozen
class TeacherLabel:
    label: str  # "pass" | "fail"
    agreement: float  # fraction of base inputs whose output matches the reference's
    n_inputs: int
    detail: dict[str, Any] = attrs.field(factory=dict)

    def meta(self) -> dict[str, Any]:
        return {"teacher": "execution-base", "teacher_agreement": round(self.agreement, 4),
                "teacher_inputs": self.n_inputs, **self.detail}


def label_from_phase(result: PhaseResult) -> TeacherLabel:
    """The teacher's label for a run of the base inputs (all inputs run, none skipped)."""
    n = len(result.outcomes)
    agree = sum(1 for ok in result.outcomes if ok)
    agreement = agree / n if n else 0.0
    detail: dict[str, Any] = {}
    if result.first_failure is not None:
        detail["teacher_first_failure"] = result.first_failure
    label = "pass" if n and agree == n else "fail"
    return TeacherLabel(label=label, agreement=agreement, n_inputs=n, detail=detail)


def teach(grader: Grader, task: Task, solution: str) -> TeacherLabel:
    """Run `solution` on `task`'s base inputs in the sandbox and label it against the reference."""
    return label_from_phase(grader.run_phase(task, solution, "base"))
