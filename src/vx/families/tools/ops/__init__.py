"""The tools family's single-turn ops, one concern per module.

``artifact`` (what ops read: the question, the offered functions, the decoded answer) · ``static`` (the
root ``decodes``, the checks of calls against the docs, the answer's format problems) · ``text`` (words and numbers
of questions and docs) · ``question`` (calls against the question: a function that fits nothing asked, a
value grounded nowhere, an enumeration left short) · ``peers`` (an answer against the other answers to the
question, in normal form, and the baselines) · ``taxonomy`` (failure classes and the evidence classifier).

The multi-turn ops: ``turns`` (what they read: the user turns, the functions offered per turn, the
trajectory and its replay; the root ``reads_trajectory``) · ``executed`` (ops over the replay) · ``states``
(peer ops over replayed states and shown results, the baselines) · ``checks`` (evaluator-first state
checks: the template synthesis instantiates) · ``multi_taxonomy`` (their failure classes).

The family's packs are :data:`vx.families.tools.pack.PACK` (single-turn) and, beside it, the multi-turn
pack.
"""

from vx.families.tools.ops.peers import (
    PEER_OPS,
    disagrees_on_arguments,
    disagrees_on_calls,
    disagrees_with_peers,
    misformatted,
    outside_consensus,
    outside_exact_plurality,
    outside_normal_plurality,
)
from vx.families.tools.ops.question import missed_enumerated, no_function_fits, ungrounded_value
from vx.families.tools.ops.static import (
    breaks_contract,
    decodes,
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
    breaks_contract.with_status("shadow"),
    no_function_fits,
    ungrounded_value,
    missed_enumerated,
    *PEER_OPS,
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
    "PEER_OPS",
    "ROOT",
    "SINGLE_OPS",
    "TAXONOMY",
    "classify_by_evidence",
    "decodes",
    "disagrees_on_arguments",
    "disagrees_on_calls",
    "disagrees_with_peers",
    "misformatted",
    "missed_enumerated",
    "missing_required",
    "no_function_fits",
    "outside_consensus",
    "outside_enum",
    "outside_exact_plurality",
    "outside_normal_plurality",
    "ungrounded_value",
    "unknown_function",
    "unknown_parameter",
    "breaks_contract",
    "wrong_type",
]
