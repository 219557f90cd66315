"""The report family's hooks for the skill loop (`vx ratchet`): the solver's instructions and view of a task
(title, purpose, caliber, evidence cards and ledger), its reply read as a markdown section, the format contract,
and the rubric as ground truth.

**Ground truth** -- the rubric (:mod:`vx.families.report.data.rubric`): the score is rubric/100 and a pass is
a score of at least 92. It is a partial proxy, as in the research; the final judge is the check on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.families.pack import RatchetHooks, first_block

SYSTEM = (
    "You write one markdown section of an analyst report from audited evidence. Reply with the section "
    "only, in markdown."
)
CONTRACT = (
    "A markdown section with a '#' title and a TL;DR line near the top. Every claim cites the evidence "
    "card it rests on as [E0103]; each registered key figure is written as its value followed by its "
    "ledger tag, e.g. '$4.2B {M03}'. Citations and tags are required output (the pipeline renders "
    "them), not clutter; a tag with no value beside it is a defect; figures found in neither the cards "
    "nor the ledger are fabricated; weak or disputed evidence must be hedged and conflicts shown from "
    "both sides; amounts follow the caliber (units, date, pools never summed)."
)


def render_task(task: Mapping[str, Any]) -> str:
    cal = task.get("caliber") or {}
    lines = [
        f"Section title: {task.get('title', '')}",
        f"Purpose: {task.get('purpose', '')}",
        "",
        f"Caliber: {cal.get('text', '') if isinstance(cal, Mapping) else cal}",
        "",
        "Evidence cards:",
    ]
    for c in task.get("cards") or []:
        lines.append(
            f'- [{c.get("id")}] {c.get("claim")} — quote: "{c.get("quote")}" — {c.get("source")}, '
            f"{c.get('date')}; stance {c.get('stance')}; credibility {c.get('credibility')}"
        )
    lines += ["", "Metric vocabulary (ledger):"]
    for m in task.get("vocabulary") or []:
        pool = f"; pool {m['pool']}" if m.get("pool") else ""
        lines.append(f"- {{{m.get('id')}}} {m.get('name')}: {m.get('value')} {m.get('unit', '')}{pool}")
    return "\n".join(lines)


def extract_output(reply: str) -> str:
    if "```" in (reply or ""):
        return first_block(reply, ("markdown", "md")).strip() + "\n"
    return (reply or "").strip() + "\n"


class Rubric:
    """The rubric (a partial proxy): score = rubric/100, pass at ≥ 92."""

    kind = "rubric"

    def __init__(self, family: Any, data_dirs: Sequence[Path] = ()) -> None:
        self._tasks = family.tasks

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "rubric": "vx.families.report.data.rubric"}

    def grade_many(self, pairs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        from vx.families.report.data.rubric import PASS_THRESHOLD, score  # here: every family load would pay

        out = []
        for tid, text in pairs:
            s = score(self._tasks[tid], text)
            out.append(
                {
                    "passed": s.total >= PASS_THRESHOLD,
                    "score": round(s.total / 100.0, 6),
                    "checks": [[f"rubric:{d}", f"-{p:g}: {why}"] for d, p, why in s.deductions],
                }
            )
        return out


HOOKS = RatchetHooks(
    name="report",
    solver_system=SYSTEM,
    format_contract=CONTRACT,
    render_task=render_task,
    extract_output=extract_output,
    ground_truth=Rubric,
)
