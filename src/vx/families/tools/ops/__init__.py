"""The tools family's single-turn ops, one concern per module.

``artifact`` (what ops read: the question, the offered functions, the decoded answer) · ``static`` (the
root ``decodes`` and the checks of calls against the docs) · ``taxonomy`` (failure classes and the
evidence classifier).

The multi-turn ops: ``turns`` (what they read: the user turns, the functions offered per turn, the
trajectory and its replay; the root ``reads_trajectory``) · ``executed`` (ops over the replay) · ``states``
(peer ops over replayed states and shown results, the baselines) · ``checks`` (evaluator-first state
checks: the template synthesis instantiates) · ``multi_taxonomy`` (their failure classes).

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

#: The multi-turn pack's root and ops (its pack is :data:`vx.families.tools.pack.MULTI`).
MULTI_ROOT = "reads_trajectory"


def multi_ops() -> tuple:
    """The multi-turn ops, root first (imported on demand: they need the replay modules)."""
    from vx.families.tools.ops.checks import SEED_SPEC
    from vx.families.tools.ops.executed import EXECUTED_OPS
    from vx.families.tools.ops.states import AGREEMENT_OPS, PEER_OPS
    from vx.families.tools.ops.turns import reads_trajectory
    from vx.ops.specs import op_from_spec

    return (reads_trajectory, *EXECUTED_OPS, *PEER_OPS, op_from_spec(SEED_SPEC), *AGREEMENT_OPS)


__all__ = [
    "MULTI_ROOT",
    "multi_ops",
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
