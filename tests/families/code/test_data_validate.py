"""The evalplus cross-check's bookkeeping (vx.families.code.data.validate) on hand-made verdicts."""

from __future__ import annotations

from vx.families.code.data.groundtruth import PhaseResult, Truth
from vx.families.code.data.samples import Sample
from vx.families.code.data.tasks import Task
from vx.families.code.data.validate import EvalplusRun, _alias_line, compare, explain, vx_tasks


def sample(n: int, entry: str = "f", solution: str = "def f(x):\n    return x\n") -> Sample:
    return Sample(
        task_id=f"MBPP/{n}",
        model="m",
        prompt="",
        entry_point=entry,
        given_tests=(),
        solution=solution,
        is_solved=None,
        line=n,
    )


def truth(label: str, reason: str = "") -> Truth:
    first = {"phase": "plus", "index": 0, "input": "[1]", "reason": reason} if label == "fail" else None
    return Truth(label=label, phases=(PhaseResult("base", (label == "pass",), first),), first_failure=first)


def run(verdicts: dict) -> EvalplusRun:
    return EvalplusRun(
        {k: {"label": v[0], "base_status": v[1], "plus_status": v[2]} for k, v in verdicts.items()}, 0.0, 0.0
    )


def test_compare_counts_and_explains():
    samples = [sample(1), sample(2), sample(3), sample(4, solution="def f(x):\n    return math.floor(x)\n")]
    ours = {
        "Mbpp/1#m": truth("pass"),
        "Mbpp/2#m": truth("fail", "timeout: call exceeded 1 s"),
        "Mbpp/3#m": truth("fail", "load error (line 1): ModuleNotFoundError: No module named 'numpy'"),
        "Mbpp/4#m": truth("fail", "raised NameError: name 'math' is not defined"),
    }
    theirs = run(
        {
            "Mbpp/1#m": ("pass", "pass", "pass"),
            "Mbpp/2#m": ("pass", "pass", "pass"),
            "Mbpp/3#m": ("pass", "pass", "pass"),
            "Mbpp/4#m": ("fail", "fail", "fail"),
        }
    )
    agreement = compare(samples, ours, theirs)
    assert agreement.n == 4 and agreement.agree == 2 and agreement.rate == 0.5
    reasons = {d["sample"]: d["explanation"] for d in agreement.disagreements}
    assert "timeout" in reasons["Mbpp/2#m"] and "standard library" in reasons["Mbpp/3#m"]
    assert explain(
        sample(9), truth("pass"), {"label": "fail", "base_status": "pass", "plus_status": "fail"}
    ).startswith("unexplained")


def test_renamed_tasks_get_an_alias_for_evalplus_and_for_vx():
    plus = {
        "Mbpp/160": Task(
            id="Mbpp/160",
            dataset="mbpp+",
            prompt="",
            entry_point="find_solution",
            reference="def find_solution(a):\n    return a\n",
        )
    }
    s = sample(160, entry="solution")
    assert _alias_line(s, plus["Mbpp/160"]) == "\n\nfind_solution = solution\n"
    assert _alias_line(sample(160, entry="find_solution"), plus["Mbpp/160"]) == ""
    task = vx_tasks([s], plus)["Mbpp/160"]
    assert task.entry_point == "solution" and task.aliases == ("find_solution",)
    assert task.oracle_name == "find_solution"
