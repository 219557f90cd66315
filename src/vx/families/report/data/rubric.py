"""A RAQS-style rubric scorer for report sections (0–100) — a partial proxy, not the truth.

Five dimensions, each starting from its weight and losing points per defect found:

==================  ======  ===============================================================
dimension           weight  deductions
==================  ======  ===============================================================
evidence grounding  30      uncited claim sentence 6 · unknown card cited 10 · under half of
                            the cards cited 6
tag discipline      25      registered figure never tagged 12 · tag without a value nearby 10 ·
                            value beside a tag differs from the ledger 12
claim calibration   20      weak card stated without a hedge 10 · conflict shown one-sided 12 ·
                            figure no card or ledger supports 10 · pools summed 12 ·
                            certainty wording ("will certainly", "guaranteed") 6
structure           15      no title 15 · no TL;DR 12 (late TL;DR 6) · last sentence unfinished 10
style               10      currency/unit outside the caliber 10 · filler phrase 4 ·
                            body under 60 words 5
==================  ======  ===============================================================

Like the rubric in the research, it scores *lexical and structural proxies* of the task's
requirements. It cannot tell whether a cited card really supports its sentence, whether the
section answers its purpose, or whether the prose is any good; and the proxies can be gamed.
`naive_tags=True` reproduces the flaw the research documents: tag discipline then *counts tags*
and ignores whether a value stands beside them, so a section that writes ``{M03}`` in place of
``$4.2B {M03}`` loses nothing. The bundled family labels its locked split with this rubric
(default, value-aware mode) — a reference signal for measuring transfer, never ground truth.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vx.families.report.figures import matches_value, numeral_near
from vx.families.report.lexicon import CERTAINTY, FILLER, unfinished
from vx.families.report.model import ReportTask, task_of
from vx.families.report.parse import Section, parse_section

WEIGHTS = {"grounding": 30, "tags": 25, "calibration": 20, "structure": 15, "style": 10}
PASS_THRESHOLD = 92.0  # score ≥ this → "pass": a section may lose at most one minor slip (golden: 100)


@attrs.frozen
class RubricScore:
    total: float
    dimensions: Mapping[str, float]
    deductions: tuple[tuple[str, float, str], ...]  # (dimension, points, why)

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "dimensions": dict(self.dimensions),
            "deductions": [{"dimension": d, "points": p, "why": w} for d, p, w in self.deductions],
        }


def score(task: Mapping[str, Any] | ReportTask, text: str, *, naive_tags: bool = False) -> RubricScore:
    """Score one section 0–100 against its task (see the module docstring)."""
    from vx.families.report.ops import static as ops
    from vx.ops.core import Context

    rt = task_of(task) if not isinstance(task, ReportTask) else task
    rec = rt.record()
    ded: list[tuple[str, float, str]] = []
    if not isinstance(text, str) or not text.strip():
        return RubricScore(0.0, {k: 0.0 for k in WEIGHTS}, (("structure", 100.0, "empty section"),))
    sec: Section = parse_section(text)
    ctx = Context(artifact=sec)

    def hits(op) -> list[str]:
        r = op(rec, text, ctx)
        if r.verdict != 1:
            return []
        ev = r.evidence if isinstance(r.evidence, dict) else {}
        return list(ev.get("all") or [r.message])

    # evidence grounding
    for why in hits(ops.uncited_claims):
        ded.append(("grounding", 6, why))
    for why in hits(ops.cites_unknown_card):
        ded.append(("grounding", 10, why))
    known = {c for c in sec.cited_cards() if rt.card(c) is not None}
    if rt.cards and len(known) < len(rt.cards) / 2:
        ded.append(("grounding", 6, f"cites {len(known)} of {len(rt.cards)} cards"))

    # tag discipline
    for why in hits(ops.ledger_metric_uncovered):
        ded.append(("tags", 12, why))
    if not naive_tags:
        for s in sec.sentences:
            for t in s.tags:
                m = rt.metric(t.metric)
                if m is None or m.value is None:
                    continue
                f = numeral_near(s.text, t.start, t.end)
                if f is None:
                    ded.append(("tags", 10, f"{s.quote()}: {t.metric} has no value beside it"))
                elif not matches_value(f, m.value, m.unit):
                    ded.append(("tags", 12, f"{s.quote()}: {f.text} beside {t.metric} is not {m.display()}"))

    # claim calibration
    for why in hits(ops.low_credibility_card_overclaimed):
        ded.append(("calibration", 10, why))
    for why in hits(ops.one_sided_conflict):
        ded.append(("calibration", 12, why))
    for why in hits(ops.fabricated_figure):
        ded.append(("calibration", 10, why))
    for why in hits(ops.summed_across_pools):
        ded.append(("calibration", 12, why))
    for s in sec.body():
        for hit in CERTAINTY.finditer(s.text):
            ded.append(("calibration", 6, f"{s.quote()}: certainty wording “{hit.group(0)}”"))

    # structure
    if sec.title is None:
        ded.append(("structure", 15, "no title heading"))
    for why in hits(ops.missing_tldr):
        ded.append(("structure", 6 if "late" in why else 12, why))
    cut = unfinished(sec)
    if cut is not None:
        ded.append(("structure", 10, f"{cut.quote()} is unfinished"))

    # style
    for why in hits(ops.caliber_unit_violation):
        ded.append(("style", 10, why))
    for s in sec.body():
        for hit in FILLER.finditer(s.text):
            ded.append(("style", 4, f"{s.quote()}: filler “{hit.group(0)}”"))
    if sec.word_count() < 60:
        ded.append(("style", 5, f"the body has only {sec.word_count()} words"))

    dims = {}
    for k, w in WEIGHTS.items():
        lost = sum(p for d, p, _ in ded if d == k)
        dims[k] = float(max(0.0, w - lost))
    return RubricScore(round(sum(dims.values()), 1), dims, tuple(ded))


def label(task: Mapping[str, Any] | ReportTask, text: str, threshold: float = PASS_THRESHOLD) -> str:
    """ "pass" when the rubric score reaches the threshold, else "fail"."""
    return "pass" if score(task, text).total >= threshold else "fail"


__all__ = ["CERTAINTY", "FILLER", "PASS_THRESHOLD", "RubricScore", "WEIGHTS", "label", "score", "unfinished"]
