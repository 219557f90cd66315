"""The report family's closed failure taxonomy, and the classifier that clusters failing items.

Each class is one way a section breaks the task's contract. The bundled family's degraded
outputs are each made by one degradation of one class (see `degrade`), recorded in the item's
``meta["degradation"]``; `classify_failure` trusts that record and otherwise asks the seed ops,
most specific first, which class they see — and, for the classes no seed op covers, looks for the
rubric's lexical cues (certainty wording, filler phrases, an unfinished last sentence).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# class -> what it means (closed: the synthesizer clusters misses and gaps into these only)
TAXONOMY: dict[str, str] = {
    "no_title_or_not_markdown": "the section is empty, not text, or does not open with a title heading",
    "uncited_claim": "a sentence asserting a figure, a tag or a trend cites no evidence card",
    "unknown_citation": "a citation names a card id the task does not have",
    "metric_uncovered": "a key figure registered in the ledger never appears with its tag",
    "value_erasure": "a ledger tag stands in place of its number (tag without value; rubric gaming)",
    "value_mismatch": "the number beside a ledger tag differs from the registered value",
    "overclaimed_weak_evidence": "a low-credibility or disputed card is cited without hedging",
    "one_sided_conflict": "the evidence disagrees but only one side is cited",
    "missing_tldr": "no TL;DR at the top of the section",
    "caliber_unit_violation": "a figure is in a currency or unit the caliber contract forbids",
    "fabricated_figure": "a figure that no card and no ledger entry supports",
    "summed_across_pools": "market pools are added up although the caliber forbids it",
    "unhedged_forecast": "an invented, confidently stated forecast (fabricated conviction)",
    "boilerplate_padding": "generic filler sentences that carry no evidence",
    "truncated_section": "the section stops before covering its purpose",
}

# op name -> class, for outputs without a recorded degradation (checked in this order)
_OP_CLASS = (
    ("has_title", "no_title_or_not_markdown"),
    ("value_erasure", "value_erasure"),
    ("cites_unknown_card", "unknown_citation"),
    ("summed_across_pools", "summed_across_pools"),
    ("caliber_unit_violation", "caliber_unit_violation"),
    ("value_mismatch", "value_mismatch"),
    ("fabricated_figure", "fabricated_figure"),
    ("ledger_metric_uncovered", "metric_uncovered"),
    ("low_credibility_card_overclaimed", "overclaimed_weak_evidence"),
    ("one_sided_conflict", "one_sided_conflict"),
    ("missing_tldr", "missing_tldr"),
    ("uncited_claims", "uncited_claim"),
)


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """The failure class of a failing item: its recorded degradation, else the first seed op that
    fires (in a fixed order, most specific first), else None."""
    cls = (meta or {}).get("degradation")
    if isinstance(cls, str) and cls in TAXONOMY:
        return cls
    from vx.families.report.ops import static as ops
    from vx.ops.core import Context

    ctx = Context()
    if ops.has_title(task, output, ctx).verdict == 1:
        return "no_title_or_not_markdown"
    for name, klass in _OP_CLASS[1:]:
        try:
            if getattr(ops, name)(task, output, ctx).verdict == 1:
                return klass
        except Exception:  # a malformed task: no class rather than a crash in clustering
            continue
    # classes no seed op covers: recognised by the rubric's lexical cues
    from vx.families.report.lexicon import CERTAINTY, FILLER, unfinished

    sec = ctx.artifact
    body = list(sec.body()) if sec is not None else []
    if any(CERTAINTY.search(s.text) for s in body):
        return "unhedged_forecast"
    if any(FILLER.search(s.text) for s in body):
        return "boilerplate_padding"
    if sec is not None and unfinished(sec) is not None:
        return "truncated_section"
    return None
