"""The report family's pack: root ``has_title``, eleven static seed ops, the failure taxonomy, the
classifier, the check templates (tag ``"report"``) and the skill loop's hooks
(:mod:`vx.families.report.ratchet`: the rubric, the solver's prompt); ``JUDGE`` (``"report-judge"``)
holds the opt-in LLM judge ops."""

from __future__ import annotations

from vx.families.pack import Pack
from vx.families.report import ops, ratchet
from vx.families.report.ops import judge, templates
from vx.families.report.ops.taxonomy import TAXONOMY, classify_failure
from vx.families.schema import task_schema

#: A report task's top level (the cards, caliber and vocabulary inside are checked in depth by
#: ``vx.families.report.model.ReportTask.from_dict``, with the same messages as the builder's).
TASK_SCHEMA = task_schema(
    "vx report task",
    {
        "title": {"type": "string", "minLength": 1},
        "purpose": {"type": "string", "minLength": 1},
        "caliber": {"type": ["object", "string"], "description": "The contract the figures follow."},
        "cards": {"type": "array", "minItems": 1, "items": {"type": "object"}, "description": "Evidence cards."},
        "vocabulary": {"type": "array", "items": {"type": "object"}, "description": "The metrics the cards use."},
        "topic": {"type": "string"},
        "golden": {"type": "string", "description": "The reference section (hand-written sources only)."},
    },
    required=("title", "purpose", "caliber", "cards"),
)

PACK = Pack(
    name="report",
    ops=ops.SEED_OPS,
    root=ops.ROOT,
    taxonomy=tuple(TAXONOMY),
    classify_failure=classify_failure,
    templates=(templates.FAMILY,),
    description="Analyst-report sections written from evidence cards: grounding, ledger, calibration, caliber",
    task_schema=TASK_SCHEMA,
    output_language="markdown",
    ratchet=ratchet.HOOKS,
)

JUDGE = Pack(
    name="report-judge",
    ops=tuple(judge.OPS),
    taxonomy=tuple(TAXONOMY),
    templates=(templates.FAMILY,),
    description="The report family's opt-in LLM judge ops",
)
