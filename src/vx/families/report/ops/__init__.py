"""The report family's ops, one concern per module.

``static`` (the root ``has_title`` and the eleven static seed ops) · ``taxonomy`` (the closed failure
classes and the classifier) · ``templates`` (check templates and inducers for synthesis) · ``judge``
(the opt-in LLM judge ops).

The seed ops are re-exported here; the family's Pack is :data:`vx.families.report.pack.PACK`.
"""

from vx.families.report.ops.static import (
    caliber_unit_violation,
    cites_unknown_card,
    fabricated_figure,
    has_title,
    ledger_metric_uncovered,
    low_credibility_card_overclaimed,
    missing_tldr,
    one_sided_conflict,
    summed_across_pools,
    uncited_claims,
    value_erasure,
    value_mismatch,
)
from vx.families.report.ops.taxonomy import TAXONOMY, classify_failure

ROOT = "has_title"
#: The seed ops, root first, in the order the family's pool lists them.
SEED_OPS = (
    has_title,
    uncited_claims,
    cites_unknown_card,
    ledger_metric_uncovered,
    value_erasure,
    value_mismatch,
    low_credibility_card_overclaimed,
    one_sided_conflict,
    missing_tldr,
    caliber_unit_violation,
    fabricated_figure,
    summed_across_pools,
)

__all__ = [
    "ROOT",
    "SEED_OPS",
    "TAXONOMY",
    "caliber_unit_violation",
    "cites_unknown_card",
    "classify_failure",
    "fabricated_figure",
    "has_title",
    "ledger_metric_uncovered",
    "low_credibility_card_overclaimed",
    "missing_tldr",
    "one_sided_conflict",
    "summed_across_pools",
    "uncited_claims",
    "value_erasure",
    "value_mismatch",
]
