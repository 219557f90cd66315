"""The SQL family's ops, one concern per module.

``item`` (what ops read from a task; the shared parse and execution) · ``analysis`` (static analysis
of parsed SQL and of questions) · ``static`` (the root ``parses`` and six static seed ops) · ``exec``
(four exec seed ops) · ``taxonomy`` (failure classes and the evidence classifier) · ``templates``
(check templates and inducers for synthesis) · ``judge`` (the opt-in LLM judge op).

The seed ops are re-exported here; the family's Pack is :data:`vx.families.sql.pack.PACK`.
"""

from vx.families.sql.ops.exec import (
                                        empty_result,
                                        execution_error,
                                        null_heavy_result,
                                        timeout,
)
from vx.families.sql.ops.static import (
                                        cartesian_join,
                                        date_as_string_compare,
                                        missing_group_by,
                                        parses,
                                        select_star,
                                        top_n_missing_limit,
                                        unknown_identifier,
)
from vx.families.sql.ops.taxonomy import TAXONOMY, classify_by_evidence

ROOT = "parses"
#: The seed ops, root first, in the order the family's pool lists them.
SEED_OPS = (parses, missing_group_by, select_star, top_n_missing_limit, unknown_identifier, cartesian_join,
            date_as_string_compare, execution_error, empty_result, null_heavy_result, timeout)

__all__ = ["ROOT", "SEED_OPS", "TAXONOMY", "cartesian_join", "classify_by_evidence", "date_as_string_compare",
           "empty_result", "execution_error", "missing_group_by", "null_heavy_result", "parses", "select_star",
           "timeout", "top_n_missing_limit", "unknown_identifier"]
