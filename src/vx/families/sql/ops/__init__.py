"""The SQL family's ops, one concern per module.

``item`` (what ops read from a task; the shared parse and execution) · ``analysis`` (static analysis
of parsed SQL and of questions) · ``static`` (the root ``parses`` and seven static ops) · ``exec``
(seven exec ops) · ``peers`` (the peer op ``disagrees_with_peers`` and the self-consistency baseline) ·
``taxonomy`` (failure classes and the evidence classifier) · ``templates`` (check templates and
inducers for synthesis) · ``judge`` (the opt-in LLM judge op).

The seed ops are re-exported here; the family's Pack is :data:`vx.families.sql.pack.PACK`.
"""

from vx.families.sql.ops.agreement import AGREEMENT_OPS, outside_unanimity
from vx.families.sql.ops.exec import (
    empty_result,
    execution_error,
    limit_over_ties,
    literal_not_in_column,
    null_heavy_result,
    timeout,
    unused_join,
)
from vx.families.sql.ops.peers import PEER_OPS, disagrees_with_peers, outside_plurality
from vx.families.sql.ops.static import (
    cartesian_join,
    date_as_string_compare,
    extra_aggregate_column,
    missing_group_by,
    parses,
    select_star,
    top_n_missing_limit,
    unknown_identifier,
)
from vx.families.sql.ops.taxonomy import TAXONOMY, classify_by_evidence

ROOT = "parses"
#: The seed ops, root first, in the order the family's pool lists them.
SEED_OPS = (
    parses,
    missing_group_by,
    select_star,
    top_n_missing_limit,
    unknown_identifier,
    cartesian_join,
    date_as_string_compare,
    execution_error,
    empty_result,
    null_heavy_result,
    timeout,
)
#: Detectors of the failure classes real predictions show (measured on Spider: docs/sql.md), and the
#: peer ops. Shadow ops are applied and recorded, never selected: the self-consistency baseline, and
#: ``limit_over_ties``, whose firing rate on Spider's failures is the base rate (a tie under a LIMIT is
#: a risk the gold query usually shares, not a failure by Spider's rule).
REAL_OPS = (extra_aggregate_column, unused_join, literal_not_in_column, limit_over_ties.with_status("shadow"))
OPS = SEED_OPS + REAL_OPS + PEER_OPS + AGREEMENT_OPS

__all__ = [
    "AGREEMENT_OPS",
    "OPS",
    "PEER_OPS",
    "outside_unanimity",
    "REAL_OPS",
    "ROOT",
    "SEED_OPS",
    "TAXONOMY",
    "cartesian_join",
    "classify_by_evidence",
    "date_as_string_compare",
    "disagrees_with_peers",
    "empty_result",
    "execution_error",
    "extra_aggregate_column",
    "limit_over_ties",
    "literal_not_in_column",
    "missing_group_by",
    "null_heavy_result",
    "outside_plurality",
    "parses",
    "select_star",
    "timeout",
    "top_n_missing_limit",
    "unknown_identifier",
    "unused_join",
]
