"""Judge ops for the report family (opt-in: add ``"report-judge"`` to a family's packs).

The static seed ops check the section's *form* against the contract; they cannot tell whether a
cited card really says what the sentence claims. These judge ops ask one narrow yes/no question
each. They are typed judge specs (``vx.ops.llm.judge``), so they need LLM roles on; with roles off
they abstain on every item and say why, and evolution never selects an op that always abstains.
The judge sees the task record (title, purpose, caliber, cards, vocabulary) and the section, never
the golden section.
"""

from __future__ import annotations

import attrs

from vx.ops.judge import judge_spec
from vx.ops.specs import op_from_spec

JUDGE_TIMEOUT = 300.0  # seconds per call, retries and backoff included


def _judge(name: str, question: str, detects: str, description: str):
    return attrs.evolve(
        op_from_spec(
            judge_spec(name, question, drawback_if="no", detects=detects, description=description),
            provenance={"origin": "seed", "module": __name__},
        ),
        timeout=JUDGE_TIMEOUT,
    )


card_unsupported = _judge(
    "card_unsupported",
    "Does every sentence that cites evidence cards (written like [E0103]) state only what the cited cards' "
    "claims and quotes support, without stretching, inverting or adding to them?",
    "claim_not_supported_by_card",
    "An LLM judge finds a sentence claiming more than (or other than) the cards it cites",
)

purpose_unmet = _judge(
    "purpose_unmet",
    "Does the section accomplish the purpose stated in the task, using the evidence cards provided?",
    "purpose_unmet",
    "An LLM judge finds that the section does not accomplish its stated purpose",
)

OPS = [card_unsupported, purpose_unmet]
