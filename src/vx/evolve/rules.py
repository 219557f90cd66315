"""The rules a person would use instead of an evolved expression, written as vx expressions so that
evolution scores them with its own objective and starts from the best (docs/design.md §6, Select).

* **seed ∨ peer op** -- the hand-written seed with one peer op (`Op.is_peer`, not a baseline) OR-ed in,
  for each such op: on multi-attempt data the fixed rule a careful user writes first;
* **label model** -- the flat label model of the reference pool (`vx.evolve.labelmodel`, one latent
  "fails"), fitted on the unlabeled train items and anchored on dev, written as an inspectable
  ``wvote``: each op weighs its log likelihood ratio ``log(sens / fpr)`` when it fires, rounded to two
  decimals, and the threshold is the smallest that the model's own decision rule implies when every
  op of the vote opines (so the weights and the threshold can be read and checked by a person);
* **SPADE** -- the smallest ``(any …)`` of active ops that covers at least ``alpha`` of the dev
  failures and falsely fails at most ``tau`` of the dev passes (`vx.baselines.spade_select`; needs
  scipy, and is left out, with the reason, without it).

Each comes back with the name of its rule, so the run record says where a candidate came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from vx.baselines import MissingDependency, spade_select
from vx.dsl.ast import Any as AnyNode
from vx.dsl.ast import Node, OpRef, WVote
from vx.evolve.labelmodel import fit_label_model
from vx.evolve.objective import Objective

__all__ = ["known_rules", "label_model_vote", "seed_or_peers", "spade_rule"]

MAX_WEIGHT = 20.0  # a weight above this (an op that never falsely fires) is capped: one such vote decides


def seed_or_peers(seed: Node, peers: Sequence[str]) -> list[tuple[Node, str]]:
    base = list(seed.children) if isinstance(seed, AnyNode) else [seed]
    out: list[tuple[Node, str]] = []
    for p in sorted(peers):
        if p in seed.op_names():
            continue
        out.append((AnyNode([*base, OpRef(p)]), f"seed ∨ {p}"))
    return out


def _decimal(x: float, places: int = 2) -> Fraction:
    return Fraction(round(float(x) * 10**places), 10**places)


def label_model_vote(obj: Objective, ops: Sequence[str]) -> Node | None:
    """The flat label model of ``ops`` as a ``wvote`` (None when no op carries evidence of failure)."""
    d = obj.data
    ops = [o for o in ops if o in d.matrix.op_names]
    if not ops:
        return None
    votes = d.matrix.select_ops(ops).to_array()
    modelled = (d.train | d.dev) & obj.decide
    anchors = np.where(d.dev, 1.0 - d.dev_p, np.nan)
    lm = fit_label_model(votes, ops, modelled=modelled, anchors=anchors)
    w_fire = np.clip(np.log(lm.sens) - np.log(lm.fpr), 0.0, MAX_WEIGHT)
    w_clean = np.log1p(-lm.sens) - np.log1p(-lm.fpr)
    keep = [j for j in range(len(ops)) if _decimal(w_fire[j]) > 0]
    if not keep:
        return None
    prior = min(max(lm.prior, 1e-6), 1 - 1e-6)
    # the model says FAIL when log(prior/(1-prior)) + Σ_fired w_fire + Σ_clean w_clean > 0; with every op of
    # the vote opining, Σ_clean w_clean = Σ_all w_clean − Σ_fired w_clean, so the threshold on Σ_fired
    # (w_fire − w_clean) is −log(prior/(1-prior)) − Σ_all w_clean
    weights = [_decimal(w_fire[j] - w_clean[j]) for j in keep]
    theta = -np.log(prior / (1 - prior)) - float(np.sum(w_clean[keep]))
    threshold = max(_decimal(theta), min(weights))
    return WVote(threshold, [OpRef(ops[j]) for j in keep], weights)


def spade_rule(obj: Objective, ops: Sequence[str], *, alpha: float = 0.9, tau: float = 0.25) -> tuple[Node | None, str]:
    """SPADE's minimal conjunction over ``ops`` on the dev items, or (None, why not)."""
    d = obj.data
    ops = [o for o in ops if o in d.matrix.op_names]
    dev = np.flatnonzero(d.dev)
    if not ops or len(dev) == 0:
        return None, "no ops or no dev items"
    votes = d.matrix.select_ops(ops).to_array()[dev]
    fail = d.dev_p[dev] < 0.5
    forced = ~obj.decide[dev]
    try:
        x, _feasible = spade_select(votes, fail, forced, alpha=alpha, tau=tau)
    except MissingDependency as exc:
        return None, str(exc)
    chosen = [OpRef(ops[j]) for j in np.flatnonzero(x)]
    if not chosen:
        return None, "SPADE selects no op"
    return (chosen[0] if len(chosen) == 1 else AnyNode(chosen)), ""


def known_rules(obj: Objective, seed: Node, selectable: Sequence[str], peers: Sequence[str]) -> list[tuple[Node, str]]:
    """Every known rule over the ``selectable`` ops, with the rule's name."""
    allowed = set(selectable)
    out: list[tuple[Node, str]] = []
    if set(seed.op_names()) <= allowed:
        out += seed_or_peers(seed, [p for p in peers if p in allowed])
    lm = label_model_vote(obj, sorted(allowed))
    if lm is not None:
        out.append((lm, "label model (wvote)"))
    node, _why = spade_rule(obj, sorted(allowed))
    if node is not None:
        out.append((node, "SPADE"))
    return out
