"""The report family's pack: root ``has_title``, eleven static seed ops, the failure taxonomy, the
classifier and the check templates (tag ``"report"``); ``JUDGE`` (``"report-judge"``) holds the
opt-in LLM judge ops."""

from __future__ import annotations

from vx.families.pack import Pack
from vx.families.report import ops
from vx.families.report.ops import judge, templates
from vx.families.report.ops.taxonomy import TAXONOMY, classify_failure

PACK = Pack(
    name="report",
    ops=ops.SEED_OPS,
    root=ops.ROOT,
    taxonomy=tuple(TAXONOMY),
    classify_failure=classify_failure,
    templates=(templates.FAMILY,),
    description="Analyst-report sections written from evidence cards: grounding, ledger, calibration, caliber",
)

JUDGE = Pack(name="report-judge", ops=tuple(judge.OPS), taxonomy=tuple(TAXONOMY), templates=(templates.FAMILY,),
             description="The report family's opt-in LLM judge ops")
