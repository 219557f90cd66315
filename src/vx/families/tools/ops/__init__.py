"""The tools family's single-turn ops, one concern per module.

``artifact`` (what ops read: the question, the offered functions, the decoded answer) · ``static`` (the
root ``decodes`` and the checks of calls against the docs) · ``taxonomy`` (failure classes and the
evidence classifier).

The family's packs are :data:`vx.families.tools.pack.PACK` (single-turn) and, beside it, the multi-turn
pack.
"""

from vx.families.tools.ops.static import (
    decodes,
    fenced_answer,
    missing_required,
    outside_enum,
    unknown_function,
    unknown_parameter,
    wrong_type,
)
from vx.families.tools.ops.taxonomy import TAXONOMY, classify_by_evidence

ROOT = "decodes"
#: The single-turn ops, root first, in the order the family's pool lists them.
SINGLE_OPS = (
    decodes,
    unknown_function,
    missing_required,
    unknown_parameter,
    wrong_type,
    outside_enum,
    fenced_answer,
)

__all__ = [
    "ROOT",
    "SINGLE_OPS",
    "TAXONOMY",
    "classify_by_evidence",
    "decodes",
    "fenced_answer",
    "missing_required",
    "outside_enum",
    "unknown_function",
    "unknown_parameter",
    "wrong_type",
]
