"""Judge ops for the code family (opt-in: add ``"code-judge"`` to a family's packs).

``spec_mismatch`` asks the judge model whether the code does what the specification asks. It is a
typed judge spec (``vx.ops.judge``), so it needs LLM roles on; with them off it abstains on every
item and says why. Its answers are cached by model and request, so reruns cost nothing.
"""

from __future__ import annotations

import attrs

from vx.ops.judge import judge_spec
from vx.ops.specs import op_from_spec

JUDGE_TIMEOUT = 300.0  # seconds per call, retries and backoff included (the default op limit is far shorter)

spec_mismatch = attrs.evolve(
    op_from_spec(
        judge_spec(
            "spec_mismatch",
            "Does the code do what the specification asks, for every input the specification allows?",
            drawback_if="no",
            detects="spec_mismatch",
            description="An LLM judge finds that the code does not do what the specification asks",
        ),
        provenance={"origin": "seed", "module": __name__},
    ),
    timeout=JUDGE_TIMEOUT,
)

OPS = [spec_mismatch]
