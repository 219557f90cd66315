"""Unanimity among the attempts at a task: the agreement evidence of the label-free false-alarm
estimates (`vx.evolve.estimates`).

``outside_unanimity`` is clean when at least two other attempts are in the batch and every one of them
behaves exactly as this one on the visible examples and every peer probe (the observation of
`vx.families.code.ops.peers.behaviour`, shared with the peer ops, so it costs no sandbox run); a
drawback when one differs. It is a baseline (kept in shadow, never selected): what it gives evolution
is evidence that an output is correct -- on HumanEval+ with five models an attempt in a unanimous
behaviour cluster passes the hidden tests 90 % of the time -- which the pack names as its
``agreement`` op.
"""

from __future__ import annotations

from vx.families.code.ops.peers import (
    DEPENDS as PEER_DEPENDS,
)
from vx.families.code.ops.peers import (
    EXEC_OP_TIMEOUT,
    Behaviour,
    behaviour,
    behaviour_clusters,
)
from vx.ops.core import abstain, clean, drawback, peer_op

DEPENDS = (__name__, *PEER_DEPENDS)


@peer_op(observe=behaviour, detects="wrong_logic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def outside_unanimity(task, mine, peers, ctx):
    """Unanimity: clean when at least two other attempts are in the batch and every one of them behaves
    exactly as this one on the visible examples and every peer probe; a drawback when one differs (a
    baseline: its clean verdict is evidence that the output is correct)."""
    if len(peers) < 2:
        return abstain(f"{len(peers)} other attempt(s) in the batch: unanimity needs at least two")
    everyone = [Behaviour.from_data(mine)] + [Behaviour.from_data(p) for p in peers]
    if not everyone[0].loaded:
        return abstain("the attempt does not load: no behaviour to compare")
    clusters = behaviour_clusters(everyone)
    if len(clusters) == 1:
        return clean(f"every one of the {len(peers)} other attempts behaves the same")
    mine_cluster = next(c for c in clusters if 0 in c)
    return drawback(f"{len(everyone) - len(mine_cluster)} of the {len(peers)} other attempts behave differently")


AGREEMENT_OPS = (outside_unanimity.as_baseline(),)

__all__ = ["AGREEMENT_OPS", "DEPENDS", "outside_unanimity"]
