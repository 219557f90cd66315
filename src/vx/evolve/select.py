"""Select (docs/design.md §6, step 3): the round's candidates, scored in one batch, and the replacement rule.

Candidates: the incumbent, the seed, the elites, every composer's proposals, the **known rules** (seed ∨
each peer op, the label model's wvote, SPADE: `vx.evolve.rules`) and the anchor cover; all normalised
and de-duplicated. The incumbent is replaced only by a strictly better selectable candidate (ties:
`vx.evolve.guards.best_index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Any as AnyNode
from vx.dsl.ast import Node, OpRef
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import to_text
from vx.evolve.compose import Composer, CompositionContext, Elite, normalize
from vx.evolve.config import EvolveConfig
from vx.evolve.guards import best_index, rank_key
from vx.evolve.objective import Objective, Scores
from vx.evolve.rules import known_rules
from vx.evolve.state import RunSetup, RunState
from vx.evolve.synthesize import Cluster

__all__ = ["Selection", "candidates", "ranked_elites", "rules", "select", "shortcomings", "top_candidates"]


@attrs.frozen
class Selection:
    """What Select did: the candidates, their scores, whether the incumbent was replaced and by how much."""

    nodes: tuple[Node, ...]
    scores: Scores
    replaced: bool
    gain: float
    top: tuple[dict[str, Any], ...]


def select(
    state: RunState,
    setup: RunSetup,
    r: int,
    rng: np.random.Generator,
    obj: Objective,
    gaps: np.ndarray,
    clusters: Sequence[Cluster],
    *,
    composers: Sequence[Composer],
    config: EvolveConfig,
) -> tuple[Selection, RunState]:
    """Score the round's candidates, replace the incumbent by a strictly better one, update the elites.
    Returns what Select did and the state with its incumbent and elites."""
    nodes, origin = candidates(state, setup, r, rng, obj, gaps, clusters, composers=composers, config=config)
    scores = obj.score(nodes)
    inc_score = scores.get(0)
    best_i = best_index(scores, nodes, incumbent=0)
    replaced = False
    gain = 0.0
    incumbent = state.incumbent
    if best_i is not None and best_i != 0:
        cand = scores.get(best_i)
        better = (not inc_score.selectable) or round(cand.objective, 12) > round(inc_score.objective, 12)
        if better:
            gain = cand.objective - inc_score.objective if inc_score.selectable else float("inf")
            incumbent = nodes[best_i]
            replaced = True
    elites = ranked_elites(nodes, scores, config.elite_size)
    top = tuple(top_candidates(nodes, origin, scores, config.record_candidates))
    return Selection(tuple(nodes), scores, replaced, gain, top), attrs.evolve(state, incumbent=incumbent, elites=elites)


def candidates(
    state: RunState,
    setup: RunSetup,
    r: int,
    rng: np.random.Generator,
    obj: Objective,
    gaps: np.ndarray,
    clusters: Sequence[Cluster],
    *,
    composers: Sequence[Composer],
    config: EvolveConfig,
) -> tuple[list[Node], list[str]]:
    """The round's candidates, normalised and de-duplicated, and where each came from: the incumbent
    first, the seed (when it is still selectable), the elites, every composer's proposals, the known
    rules and the anchor cover."""
    sel = state.selectable(setup.root)
    allowed = set(sel)
    gap_summary = ({"gaps": int(gaps.sum()), "clusters": [c.summary() for c in clusters]},)
    elites = tuple(attrs.evolve(e, shortcomings=shortcomings(setup, obj, e.node)) for e in state.elites)
    ctx = CompositionContext(r, tuple(sel), state.incumbent, elites, tuple(state.pool.catalog()), gap_summary, rng)
    found: dict[Node, str] = {state.incumbent: "incumbent"}
    if set(setup.seed.op_names()) <= allowed:
        found.setdefault(setup.seed, "seed")
    for e in state.elites:
        found.setdefault(e.node, "elite")
    for comp in composers:
        for p in comp.propose(ctx):
            if isinstance(p, str):
                try:
                    p = parse(p, known_ops=sel)
                except VxSyntaxError:
                    continue
            if not set(p.op_names()) <= allowed:
                continue
            found.setdefault(normalize(p), comp.name)
    for node, rule in rules(state, setup, obj) if config.known_rules else ():
        found.setdefault(normalize(node), f"known rule: {rule}")
    # the anchor cover: the fewest selectable ops that flag every dev failure the pool can flag without
    # flagging a dev pass, alone and added to the incumbent -- so some candidate always meets the guard
    cover = [OpRef(n) for n in obj.guard_cover()]
    if cover:
        found.setdefault(normalize(AnyNode(cover)), "anchor cover")
        found.setdefault(normalize(AnyNode([state.incumbent, *cover])), "anchor cover")
    return list(found), list(found.values())


def rules(state: RunState, setup: RunSetup, obj: Objective) -> list[tuple[Node, str]]:
    """seed ∨ each peer op, the label model's wvote, SPADE (`vx.evolve.rules`), over the selectable ops."""
    sel = state.selectable(setup.root)
    peers = [o.name for o in state.pool if o.is_peer and not o.baseline and o.name in sel]
    return known_rules(obj, setup.seed, sel, peers)


def shortcomings(setup: RunSetup, obj: Objective, node: Node) -> tuple[dict[str, Any], ...]:
    """The dev items an expression gets wrong (what an LLM composer is shown about an elite)."""
    codes = obj.final_codes(node)
    out = []
    for i in np.flatnonzero(obj.data.dev).tolist():
        fail_label = setup.dev_p[i] < 0.5
        says_fail = codes[i] == 1
        if fail_label != says_fail:
            out.append({"item": setup.items[i].id, "kind": "missed drawback" if fail_label else "false alarm"})
    return tuple(out)


def ranked_elites(nodes: Sequence[Node], scores: Scores, size: int) -> tuple[Elite, ...]:
    """The best ``size`` selectable candidates (`vx.evolve.guards.rank_key`), as the elite archive."""
    sel = np.flatnonzero(scores.selectable)
    if len(sel) == 0:
        return ()
    order = sel[np.lexsort((scores.size[sel], -np.round(scores.objective[sel], 12)))]
    head = order[: size * 4].tolist()
    ranked = sorted(head, key=lambda i: rank_key(float(scores.objective[i]), int(scores.size[i]), to_text(nodes[i])))
    return tuple(
        Elite(nodes[i], float(scores.objective[i]), float(scores.a_dev[i]), float(scores.a_train[i]))
        for i in ranked[:size]
    )


def top_candidates(nodes: Sequence[Node], origin: Sequence[str], scores: Scores, k: int) -> list[dict[str, Any]]:
    """The best ``k`` candidates of the round (selectable first, then by objective, size and text), as recorded."""
    if k <= 0:
        return []
    key = np.where(scores.selectable, np.round(scores.objective, 12), -np.inf)
    order = np.lexsort((scores.size, -key))[: k * 2].tolist()
    ranked = sorted(order, key=lambda i: (-key[i], int(scores.size[i]), to_text(nodes[i])))[:k]
    out = []
    for i in ranked:
        s = scores.get(i)
        out.append(
            {
                "expression": to_text(nodes[i]),
                "composer": origin[i],
                "objective": s.objective,
                "a_dev": s.a_dev,
                "a_train": s.a_train,
                "cost": s.cost,
                "selectable": s.selectable,
                "reason": s.reason,
            }
        )
    return out
