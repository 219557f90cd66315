"""The execution teacher: dev labels from a weaker, anchored signal.

The method's teacher *compares a candidate with the task's golden reference*. Offline, vx does it
by differential execution, in the sandbox, never with the hidden tests' extra inputs:

1. the task's **base** inputs (never the plus inputs): the candidate's output on each is compared
   with the canonical solution's, using evalplus's comparison (:mod:`vx.families.code.compare`);
2. the task's **generated probes** (:mod:`vx.families.code.probes.generate`: classes mutant, boundary
   and large, made from the visible examples only): the reference runs on them once per task, the
   candidate in one more sandboxed process, and every probe on which the reference returns a value
   must get an equal value from the candidate (a probe the reference rejects says nothing).

The label is *pass* when everything agrees and *fail* otherwise; the fraction of agreeing inputs is
kept as ``agreement`` (in the dev item's meta) -- a soft signal, while the dev label stays hard. The probes
make the teacher stricter than the base inputs alone (docs/results/2026-12-02-probes-and-peers.md has how much).

For MBPP+ and HumanEval+ the teacher is still weaker than the locked ground truth (which adds the
plus inputs); for plain HumanEval the base inputs are those of ``check``.
"""

from __future__ import annotations

import threading
from typing import Any

import attrs

from vx.families.code.compare import Comparator
from vx.families.code.data.groundtruth import Grader, PhaseResult
from vx.families.code.data.tasks import Task
from vx.families.code.ops.values import short

#: Probe classes the teacher compares on (``edge`` probes are left out: their behaviour is often
#: undefined by the prompt, so correct programs differ from the reference there).
TEACHER_CLASSES = ("gen_mutant", "gen_boundary", "gen_large")
PROBE_CALL_TIMEOUT = 2.0
PROBE_RUN_TIMEOUT = 30.0


#: The teacher's evidence classes of a failure (a dev draw can be stratified by them, docs/design.md §4):
#: it fails a visible example (or the root: it does not parse), it raises or times out on an input
#: the reference answers, or it passes its visible examples but differs from the reference.
EVIDENCE = ("fails_visible_example", "crashes", "passes_example_differs")
#: The stratified dev draw deals its failure places in this order (`vx.families.split`): the subtle
#: failures first, which the gross draw leaves out.
DRAW_STRATA = ("passes_example_differs", "fails_visible_example", "crashes")


@attrs.frozen
class TeacherLabel:
    label: str  # "pass" | "fail"
    agreement: float  # fraction of compared inputs (base + probes) whose output matches the reference's
    n_inputs: int
    detail: dict[str, Any] = attrs.field(factory=dict)
    kind: str = "execution-base"
    evidence: str = ""  # for a failure: one of EVIDENCE ("" for a pass, or when not established)

    def meta(self) -> dict[str, Any]:
        return {
            "teacher": self.kind,
            "teacher_agreement": round(self.agreement, 4),
            "teacher_inputs": self.n_inputs,
            **({"teacher_evidence": self.evidence} if self.evidence else {}),
            **self.detail,
        }


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


_REFERENCE_RUNS: dict[tuple[str, str], list[Any]] = {}
_LOCK = threading.Lock()


def _probes(task: Task) -> list[Any]:
    from vx.families.code.probes.probe import generated

    return [p for p in generated(task.family_record())[0] if p.klass in TEACHER_CLASSES]


def _run(grader: Grader, code: str, entry: str, probes: list[Any]) -> Any:
    return grader.sandbox.run_calls(
        code,
        entry,
        [(list(p.args), {}) for p in probes],
        timeouts=[PROBE_CALL_TIMEOUT] * len(probes),
        total_timeout=PROBE_RUN_TIMEOUT,
        args_after=False,
    )


def probe_agreement(grader: Grader, task: Task, solution: str) -> tuple[int, int, dict[str, Any] | None]:
    """(probes compared, probes agreeing, the first disagreement) of `solution` against the task's
    reference on its generated probes."""
    from vx.families.code.data.groundtruth import _entry_point_for
    from vx.families.code.ops.artifact import build_artifact

    def entry_of(code: str) -> str:
        art = build_artifact(task.family_record(), code)  # the function the examples call, as the exec ops do
        return art.name or _entry_point_for(code, task)

    probes = _probes(task)
    if not probes:
        return 0, 0, None
    key = (task.id, task.reference)
    with _LOCK:
        ref_calls = _REFERENCE_RUNS.get(key)
    if ref_calls is None:
        report = _run(grader, task.reference, entry_of(task.reference), probes)
        ref_calls = list(report.calls) if report.status == "ok" else []
        with _LOCK:
            _REFERENCE_RUNS[key] = ref_calls
    if not ref_calls:
        return 0, 0, None
    report = _run(grader, solution, entry_of(solution), probes)
    compared = agree = 0
    first = None
    comparator = Comparator(task.dataset, task.oracle_name, task.atol)
    for i, (p, ref) in enumerate(zip(probes, ref_calls)):
        if ref.status != "ok":
            continue  # the reference rejects this input: no expectation
        compared += 1
        mine = report.calls[i] if i < len(report.calls) else None
        ok = (
            mine is not None
            and mine.status == "ok"
            and comparator.check(list(p.args), mine.value, ref.value, out_type=mine.type_name).ok
        )
        if ok:
            agree += 1
        elif first is None:
            got = (
                ("load: " + str(report.status))
                if mine is None
                # short(): repr() refuses a huge int
                else (short(mine.value) if mine.status == "ok" else f"{mine.status} {mine.exc_type or ''}".strip())
            )
            first = {"probe": p.call, "class": p.klass, "reference": short(ref.value), "candidate": got}
    return compared, agree, first


def teach(grader: Grader, task: Task, solution: str, *, probes: bool = True) -> TeacherLabel:
    """Label `solution` against `task`'s reference: base inputs, then (with `probes`) the generated probes."""
    base = label_from_phase(grader.run_phase(task, solution, "base"))
    if not probes:
        if base.label == "fail":
            return attrs.evolve(
                base, evidence=failure_evidence(task, solution, base.detail.get("teacher_first_failure"), None)
            )
        return base
    compared, agree, first = probe_agreement(grader, task, solution)
    n_base = base.n_inputs
    n = n_base + compared
    agreement = (base.agreement * n_base + agree) / n if n else 0.0
    detail = dict(base.detail)
    detail["teacher_probes"] = compared
    if first is not None:
        detail["teacher_probe_disagreement"] = first
    label = "pass" if base.label == "pass" and agree == compared else "fail"
    evidence = (
        failure_evidence(task, solution, base.detail.get("teacher_first_failure"), first) if label == "fail" else ""
    )
    return TeacherLabel(
        label=label, agreement=agreement, n_inputs=n, detail=detail, kind="execution-base+probes", evidence=evidence
    )


_CRASH_REASONS = ("raised ", "timeout", "run timeout", "run crashed", "crashed", "returned a ")


def failure_evidence(
    task: Task, solution: str, base_failure: dict[str, Any] | None, probe_failure: dict[str, Any] | None
) -> str:
    """The evidence class of a failure (`EVIDENCE`): the code family's own `fails_visible_example`
    check decides the first (one more sandboxed run); then whether the first differing input made the
    candidate raise or time out; else it passes its examples and differs from the reference."""
    from vx.dsl.verdict import Verdict
    from vx.families.code.ops import fails_visible_example, parses
    from vx.ops.core import Context

    record = task.family_record()
    ctx = Context()
    if parses(record, solution, ctx).verdict is Verdict.DRAWBACK:
        return "fails_visible_example"
    if fails_visible_example(record, solution, ctx).verdict is Verdict.DRAWBACK:
        return "fails_visible_example"
    if base_failure is not None:
        reason = str(base_failure.get("reason", ""))
        crashed = reason.startswith(_CRASH_REASONS) or reason.startswith(("syntax error", "load error", "no entry"))
    elif probe_failure is not None:
        got = str(probe_failure.get("candidate", ""))
        crashed = got.startswith(("exception", "timeout", "crashed", "unserializable", "load:"))
    else:
        crashed = False
    return "crashes" if crashed else "passes_example_differs"
