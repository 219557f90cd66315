"""Judge ops for the SQL family (opt-in: add ``"sql-judge"`` to a family's packs).

``semantic_mismatch`` asks the judge model whether the query returns what the question asks for —
the failures no deterministic op sees (a flipped predicate, the wrong aggregate, the wrong join
key, an inverted order). The judge sees the task's ``prompt`` (schema, dialect, question) and the
query, never the gold SQL. It is a typed judge spec (``vx.ops.judge``): with LLM roles off it
abstains on every item and says why; answers are cached by model and request.
"""

from __future__ import annotations

import attrs

from vx.ops.judge import judge_spec
from vx.ops.specs import op_from_spec

JUDGE_TIMEOUT = 300.0  # seconds per call, retries and backoff included

semantic_mismatch = attrs.evolve(
    op_from_spec(
        judge_spec(
            "semantic_mismatch",
            "Does the SQL query return exactly what the question asks for, given the schema: the right "
            "columns, filters and comparison directions, joins, aggregates, grouping, ordering and row limit?",
            drawback_if="no",
            detects="wrong_result",
            description="An LLM judge finds that the query does not return what the question asks for",
        ),
        provenance={"origin": "seed", "module": __name__},
    ),
    timeout=JUDGE_TIMEOUT,
)

OPS = [semantic_mismatch]
