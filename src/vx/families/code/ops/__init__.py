"""The code family's ops, one concern per module.

``artifact`` (the root's parse of an output and the AST helpers ops read it with) · ``values``
(comparing and showing returned values) · ``static`` (the root ``parses`` and the static seed ops)
· ``run`` (the one shared sandboxed run of a candidate over its probes, :mod:`vx.families.code.probes`)
· ``exec`` (the exec seed ops) · ``peers`` (the peer ops: an attempt compared with the other attempts at
its task) · ``invariants`` (relations that hold on every visible example, checked on the generated probes:
``violates_example_invariant``) · ``taxonomy`` (the closed failure classes and the evidence classifier)
· ``templates`` (check templates and inducers for synthesis) · ``judge`` (the opt-in LLM judge op).

The seed ops are re-exported here (``from vx.families.code import ops; ops.crash``); the family's
:class:`~vx.families.pack.Pack` is :data:`vx.families.code.pack.PACK`.
"""

from vx.families.code.ops.agreement import AGREEMENT_OPS, outside_unanimity
from vx.families.code.ops.artifact import (
    Artifact,
    accepted_names,
    artifact_of,
    build_artifact,
    value_returns,
)
from vx.families.code.ops.exec import (
    crash,
    crashes_in_domain,
    fails_visible_example,
    mutates_argument,
    nondeterministic,
    returns_not_print_only,
    returns_wrong_type,
    timeout,
)
from vx.families.code.ops.invariants import violates_example_invariant
from vx.families.code.ops.peers import PEER_OPS, disagrees_with_peers, outside_dual_agreement, outside_plurality
from vx.families.code.ops.run import Execution, execution, sandbox
from vx.families.code.ops.static import (
    hardcodes_example,
    parses,
    reads_stdin,
    undefined_name,
    wrong_entry_point,
)
from vx.families.code.ops.taxonomy import TAXONOMY, classify_by_evidence
from vx.families.code.ops.values import same_value, short, trivial_value, type_mismatch

ROOT = "parses"
#: The seed ops, root first, in the order the family's pool lists them.
SEED_OPS = (
    parses,
    wrong_entry_point,
    reads_stdin,
    hardcodes_example,
    undefined_name,
    crash,
    fails_visible_example,
    returns_not_print_only,
    timeout,
    returns_wrong_type,
    mutates_argument,
    nondeterministic,
    *PEER_OPS,
    *AGREEMENT_OPS,
    violates_example_invariant,
    crashes_in_domain,
)

__all__ = [
    "AGREEMENT_OPS",
    "PEER_OPS",
    "outside_unanimity",
    "ROOT",
    "SEED_OPS",
    "disagrees_with_peers",
    "outside_dual_agreement",
    "outside_plurality",
    "TAXONOMY",
    "Artifact",
    "Execution",
    "accepted_names",
    "artifact_of",
    "build_artifact",
    "classify_by_evidence",
    "crash",
    "crashes_in_domain",
    "execution",
    "fails_visible_example",
    "hardcodes_example",
    "mutates_argument",
    "nondeterministic",
    "parses",
    "reads_stdin",
    "returns_not_print_only",
    "returns_wrong_type",
    "same_value",
    "sandbox",
    "short",
    "timeout",
    "trivial_value",
    "type_mismatch",
    "undefined_name",
    "value_returns",
    "violates_example_invariant",
    "wrong_entry_point",
]
