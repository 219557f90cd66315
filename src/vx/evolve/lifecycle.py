"""The op lifecycle: birth gate, shadow tier, promotion, retirement (docs/design.md §6, steps 2 and 4).

* **Birth gate.** A synthesized op is admitted when it fires on at least half of its cluster and
  stays clean on known-good outputs. *Known* good means labelled: the dev items labelled pass (and,
  for the inducers, the dev golden references) — the op must not fire on any of them. Train items
  that the incumbent passes and the weighted pool consensus calls clean are only *presumed* good:
  a failure class that no op detects yet hides precisely there, so the op may fire on up to
  ``good_tolerance`` (25 %) of them; beyond that it is rejected as indiscriminate. An op whose
  verdicts on train ∪ dev equal an existing op's on at least ``redundancy`` (95 %) of the items is
  rejected as a (near-)duplicate: a bloc of near-copies would only inflate the consensus.
  **Real support**: the op must fire on at least ``min_support`` (2) cluster items, so "1 of a
  2-item cluster" is not enough. **Syntax-presence ops** (templates marked ``presence``: a call,
  an AST node, an import is present) need evidence that the construct goes with the failure class
  rather than with code in general: at least ``min_support`` cluster items from at least two
  tasks, firing on at most ``presence_tolerance`` (5 %) of the presumed-good train items, and a
  firing rate on the cluster at least ``presence_lift`` (3x) the rate on presumed-good items. This
  is statistical evidence of association (vx cannot run counterfactuals on a construct); it is
  what stops "a lambda is present" from being born out of one miss.
* **Clean on pseudo-positives.** A born op fires on at most ``pseudo_positive_tolerance`` (1 %) of the
  train split's known-good pseudo-positives (`vx.evolve.estimates.PassEvidence.known_good`: outputs that
  every other attempt behaves like and that pass their visible example).
* **Tiers.** Born from a cluster holding an anchored miss → *active* (selectable); born only from
  unlabeled gaps → *shadow* (applied and recorded, not selectable, not in the consensus).
* **Promotion.** A shadow is promoted when adding it to the incumbent as a disjunct strictly raises
  A_dev. Baselines (`Op.baseline`: what a person could use instead, kept to be compared with) are
  shadows that are never promoted.
* **Retirement: only on evidence of harm.** An active op retires when, for more than the two-round
  grace (three consecutive rounds), the evidence says it hurts: it fires on a dev item labelled pass
  that the root leaves open (a false alarm on the anchor; such an op cannot be in a guarded
  expression anyway), or it is in the incumbent and removing it raises S. A zero marginal on the
  dev items is *not* such evidence: with ten items, whatever a first detector already flags gives every
  second detector a marginal of 0, whatever it catches elsewhere (retiring on it removed the peer op
  from real families and made the written verifier worse). A retired op is pruned from the
  incumbent and the elites, keeps its verdicts on record and stays in the train consensus's reference
  (`vx.evolve.objective.engine_objective`). The last op of the incumbent never retires, nor the root.
  The anchored leave-one-out marginal m_o = A_dev(e) − A_dev(e with o abstaining everywhere) is still
  measured every round: it sets the op's vote weight in the per-class consensus and is recorded.

The *no-lifecycle* ablation turns the birth gate, the shadow tier and retirement off: every
synthesized op that can be built enters active, and nothing retires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Node, OpRef
from vx.dsl.compile import ABSTAIN_OP
from vx.evolve.objective import Objective

__all__ = [
    "LifecyclePolicy",
    "OpRecord",
    "Event",
    "GateResult",
    "birth_gate",
    "marginals",
    "leave_out",
    "update_streaks",
    "promotable",
]


@attrs.frozen
class LifecyclePolicy:
    birth_gate: bool = True
    shadow_tier: bool = True
    retirement: bool = True
    grace: int = 2
    good_tolerance: float = 0.25
    redundancy: float = 0.95  # a new op agreeing with an existing one on this share of items is redundant
    min_support: int = 2  # cluster items the new op must fire on
    presence_tolerance: float = 0.05  # syntax-presence ops: at most this share of presumed-good train items
    presence_lift: float = 3.0  # syntax-presence ops: cluster rate / presumed-good rate
    pseudo_positive_tolerance: float = 0.01  # a born op fires on at most this share of the pseudo-positives

    @classmethod
    def off(cls) -> LifecyclePolicy:
        """The no-lifecycle ablation."""
        return cls(birth_gate=False, shadow_tier=False, retirement=False)


@attrs.define
class OpRecord:
    """The engine's view of one op of the pool (stored in the run's state)."""

    name: str
    status: str  # active | shadow | retired
    origin: str  # seed | synthesized
    born_round: int = 0
    streak: int = 0  # consecutive rounds with evidence of harm (`update_streaks`)
    marginal: float | None = None  # last anchored leave-one-out marginal (None: not in the incumbent)

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Event:
    """One lifecycle event: seed, born, rejected, promoted, retired."""

    round: int
    op: str
    kind: str
    status: str = ""
    reason: str = ""
    evidence: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class GateResult:
    admitted: bool
    reason: str
    fired_cluster: int
    n_cluster: int
    fired_labelled_good: int
    n_labelled_good: int
    fired_unlabeled_good: int
    n_unlabeled_good: int
    fired_pseudo_positive: int = 0
    n_pseudo_positive: int = 0

    def evidence(self) -> dict[str, Any]:
        return {k: v for k, v in attrs.asdict(self).items() if k not in ("admitted", "reason")}


def birth_gate(
    column: np.ndarray,
    cluster: np.ndarray,
    labelled_good: np.ndarray,
    unlabeled_good: np.ndarray,
    *,
    tolerance: float = 0.25,
    min_support: int = 1,
    presence: bool = False,
    cluster_tasks: np.ndarray | None = None,
    presence_tolerance: float = 0.05,
    presence_lift: float = 3.0,
    pseudo_positive: np.ndarray | None = None,
    pseudo_positive_tolerance: float = 0.01,
) -> GateResult:
    """Gate one new op from its ``int8`` verdict column and boolean item masks.

    `presence` marks a syntax-presence op (see the module docstring); `cluster_tasks` (one task id
    per item) lets the gate count the distinct tasks the op fires on in its cluster."""
    fires = column == 1
    fc, nc = int((fires & cluster).sum()), int(cluster.sum())
    fl, nl = int((fires & labelled_good).sum()), int(labelled_good.sum())
    fu, nu = int((fires & unlabeled_good).sum()), int(unlabeled_good.sum())
    pp = np.zeros_like(fires) if pseudo_positive is None else np.asarray(pseudo_positive, dtype=bool)
    fp, npp = int((fires & pp).sum()), int(pp.sum())
    if nc == 0:
        reason = "empty cluster"
    elif 2 * fc < nc:
        reason = f"fires on {fc} of {nc} cluster items (needs at least half)"
    elif fc < min_support:
        reason = f"fires on {fc} cluster item(s) (needs at least {min_support}: one miss is not a recurring class)"
    elif fl:
        reason = f"fires on {fl} dev item(s) labelled pass"
    elif fu > tolerance * nu:
        reason = f"fires on {fu} of {nu} known-good train items (tolerance {tolerance:.0%})"
    elif npp and fp > pseudo_positive_tolerance * npp:
        reason = (
            f"fires on {fp} of {npp} pseudo-positives ({fp / npp:.1%}; a born op stays clean on at least "
            f"{1 - pseudo_positive_tolerance:.0%} of the outputs independent evidence calls correct)"
        )
    else:
        reason = ""
    if not reason and presence:
        tasks_hit = len(set(np.asarray(cluster_tasks)[fires & cluster].tolist())) if cluster_tasks is not None else 2
        good_rate = fu / nu if nu else 0.0
        if tasks_hit < 2:
            reason = "a syntax-presence op needs its construct in failing outputs of at least two tasks"
        elif nu and fu > presence_tolerance * nu:
            reason = (
                f"a syntax-presence op may fire on at most {presence_tolerance:.0%} of the known-good train "
                f"items; it fires on {fu} of {nu}"
            )
        elif good_rate > 0 and (fc / nc) < presence_lift * good_rate:
            reason = (
                f"the construct is not specific to the failure: it is in {fc / nc:.0%} of the cluster and "
                f"{good_rate:.0%} of the known-good train items (needs {presence_lift:g}x)"
            )
    return GateResult(not reason, reason, fc, nc, fl, nl, fu, nu, fp, npp)


def redundancy_reason(same: np.ndarray, names: Sequence[str], *, limit: float) -> str:
    """Why a new op is redundant with an existing one ("" when it is not): ``same[k]`` is the share
    of train and dev items on which it agrees with op ``names[k]``; at or above ``limit``, it adds
    nothing the pool does not already say."""
    if not len(same):
        return ""
    k = int(np.argmax(same))
    if same[k] < limit:
        return ""
    if same[k] == 1.0:
        return f"duplicate of {names[k]} (identical verdicts on every train and dev item)"
    return (
        f"near-duplicate of {names[k]} (same verdict on {same[k]:.0%} of train and dev items; the limit is {limit:.0%})"
    )


def admission_reason(gate: GateResult, same: np.ndarray, names: Sequence[str], policy: LifecyclePolicy) -> str:
    """Why a synthesized op is not born ("" when it is): the birth gate first, then redundancy.
    Both are off in the no-lifecycle ablation."""
    if not policy.birth_gate:
        return ""
    return gate.reason or redundancy_reason(same, names, limit=policy.redundancy)


def leave_out(node: Node, name: str) -> Node:
    """``node`` with the op ``name`` replaced by an op that abstains everywhere."""
    if isinstance(node, OpRef):
        return OpRef(ABSTAIN_OP) if node.name == name else node
    return node.with_children([leave_out(c, name) for c in node.children])


def marginals(objective: Objective, incumbent: Node) -> dict[str, float]:
    """Anchored leave-one-out marginal of every op of ``incumbent`` (sorted by name)."""
    names = list(incumbent.op_names())
    if not names:
        return {}
    scores = objective.score([incumbent] + [leave_out(incumbent, n) for n in names])
    base = float(scores.a_dev[0])
    out = {}
    for i, n in enumerate(names, 1):
        without = float(scores.a_dev[i])
        if objective.guards.fail_closed and not bool(scores.usable[i]):
            without = 0.0
        out[n] = base - without
    return out


def update_streaks(
    records: Mapping[str, OpRecord],
    margins: Mapping[str, float],
    harm: Mapping[str, str],
    *,
    policy: LifecyclePolicy,
    protected: frozenset[str] = frozenset(),
) -> list[str]:
    """Record each op's anchored marginal (None outside the incumbent) and update its *harm streak*:
    consecutive rounds with evidence that it hurts (``harm``: op → why). Return the names due to
    retire (sorted): active ops whose streak has outlived the grace. A zero or negative marginal alone
    is not evidence of harm (ten dev items cannot show what a second detector adds)."""
    due: list[str] = []
    for name, rec in sorted(records.items()):
        rec.marginal = float(margins[name]) if name in margins else None
        rec.streak = rec.streak + 1 if name in harm and rec.status == "active" else 0
        if policy.retirement and rec.status == "active" and rec.streak > policy.grace and name not in protected:
            due.append(name)
    return due


def promotable(objective: Objective, incumbent: Node, shadows: list[str]) -> list[tuple[str, float, float, Node]]:
    """Shadows whose verdicts raise dev agreement: ``(name, A_dev before, A_dev after, trial)`` for each
    shadow ``s`` (in the given order) such that A_dev of ``(any incumbent s)`` strictly exceeds the
    incumbent's."""
    from vx.dsl.ast import Any as AnyNode
    from vx.evolve.compose import normalize

    if not shadows:
        return []
    trials = [normalize(AnyNode([incumbent, OpRef(s)])) for s in shadows]
    scores = objective.score([incumbent] + trials)
    base = float(scores.a_dev[0])
    return [
        (s, base, float(scores.a_dev[i]), trials[i - 1])
        for i, s in enumerate(shadows, 1)
        if round(float(scores.a_dev[i]), 12) > round(base, 12)
    ]
