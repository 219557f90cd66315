"""Unanimity among the attempts at a question: the agreement evidence of the label-free false-alarm
estimates (`vx.evolve.estimates`).

``outside_unanimity`` is clean when at least two other attempts are in the batch and every one of them
runs and returns this attempt's result on every database they share (the task's and its neighbours;
the observation of `vx.families.sql.ops.peers.results`, shared with the peer ops); a drawback when one
differs. It is a baseline (kept in shadow, never selected): on real Spider predictions a query that
agrees with all three other systems is correct 95 % of the time, one that agrees with none 16 %, so its
clean verdict is what the pack names as its ``agreement`` evidence.
"""

from __future__ import annotations

from vx.families.sql.ops.peers import DEPENDS as PEER_DEPENDS
from vx.families.sql.ops.peers import PEER_TIMEOUT, _results, results
from vx.ops.core import abstain, clean, drawback, peer_op

DEPENDS = (__name__, *PEER_DEPENDS)


@peer_op(observe=results, detects="wrong_result", timeout=PEER_TIMEOUT, depends=DEPENDS)
def outside_unanimity(task, mine, peers, ctx):
    """Unanimity: clean when at least two other attempts are in the batch and every one of them runs and
    returns this attempt's result on every database they share; a drawback when one differs (a
    baseline: its clean verdict is evidence that the query is correct)."""
    ran, me, note = _results(mine)
    if not ran:
        return abstain(note or "the attempt does not run: no result to compare")
    if len(peers) < 2:
        return abstain(f"{len(peers)} other attempt(s) in the batch: unanimity needs at least two")
    mine_by = {r.label: r.answer for r in me}
    for k, p in enumerate(peers, 1):
        ok, rs, _ = _results(p)
        theirs = {r.label: r.answer for r in rs}
        shared = [lab for lab in mine_by if lab in theirs]
        if not ok or not shared:
            return drawback(f"another attempt ({k} of {len(peers)}) does not run")
        differs = [lab for lab in shared if theirs[lab] != mine_by[lab]]
        if differs:
            return drawback(f"another attempt ({k} of {len(peers)}) returns a different result on {differs[0]}")
    return clean(f"every one of the {len(peers)} other attempts returns the same result")


AGREEMENT_OPS = (outside_unanimity.as_baseline(),)

__all__ = ["AGREEMENT_OPS", "DEPENDS", "outside_unanimity"]
