"""Select-step candidates: the `Composer` interface and the offline composers.

A composer proposes candidate expressions over the *selectable* ops (active, not the root). The
loop takes a list of composers, pools their proposals, normalises and de-duplicates them and
scores all of them in one batch. Offline composers:

* `EnumerativeComposer` — "subset seeding": every single op, and ``any`` / ``all`` /
  ``vote K`` over subsets of up to ``max_size`` ops (sampled with the round's generator when the
  full enumeration exceeds ``budget``);
* `EvolutionaryComposer` — mutations of the elite archive (add / drop / replace a leaf, change a
  combinator, change K, wrap or unwrap ``not``, adjust a weight) and crossovers (swap subtrees
  between two elites).

An LLM composer implements the same two-line interface (``name`` and ``propose``); it may return
expression text, which the loop parses (unparseable or unknown-op proposals are dropped and counted).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, Protocol, cast, runtime_checkable

import attrs
import numpy as np

from vx.dsl.ast import All, Node, Not, OpRef, Vote, WVote
from vx.dsl.ast import Any as AnyNode
from vx.dsl.printer import to_text

__all__ = [
    "Composer",
    "CompositionContext",
    "Elite",
    "EnumerativeComposer",
    "EvolutionaryComposer",
    "normalize",
    "prune_op",
    "mutate",
    "crossover",
]


@attrs.frozen
class Elite:
    """An archived expression with its objective (under the round it was last scored in)."""

    node: Node
    objective: float
    a_dev: float = float("nan")
    a_train: float = float("nan")
    shortcomings: tuple[dict[str, Any], ...] = ()  # dev items it gets wrong (filled in for composers)

    @property
    def text(self) -> str:
        return to_text(self.node)


@attrs.frozen
class CompositionContext:
    """What a composer may see: the selectable ops and their catalog, the incumbent, the elites
    with their scores and *shortcomings* (the dev items each gets wrong — dev is the anchor
    evolution learns from), and ``gaps`` (how many unlabeled train gaps there are and the
    round's clusters of misses and gaps). Nothing of the locked split is in here."""

    round: int
    selectable: tuple[str, ...]
    incumbent: Node | None
    elites: tuple[Elite, ...]
    catalog: tuple[dict[str, Any], ...] = ()
    gaps: tuple[dict[str, Any], ...] = ()
    rng: np.random.Generator = attrs.field(factory=lambda: np.random.default_rng(0), eq=False)


@runtime_checkable
class Composer(Protocol):
    """Proposes candidate expressions (nodes or vx text) for one Select step."""

    name: str

    def propose(self, ctx: CompositionContext) -> Iterable[Node | str]: ...


# ------------------------------------------------------------------------------------------------
# normal form


def _key(node: Node) -> str:
    return to_text(node, width=10**9)


def normalize(node: Node) -> Node:
    """A semantically equal, canonical tree: nested any/all flattened, children of commutative
    nodes sorted, duplicate any/all children removed, single-child any/all/vote removed,
    ``(vote 1 …)`` written as ``any``, double negation removed, a ``wvote`` that is an ``any`` or a
    ``vote`` written as one (:func:`_simpler_wvote`)."""
    if isinstance(node, OpRef):
        return node
    if isinstance(node, Not):
        inner = normalize(node.child)
        return inner.child if isinstance(inner, Not) else Not(inner)
    kids = [normalize(c) for c in node.children]
    if isinstance(node, (AnyNode, All)):
        flat: list[Node] = []
        for c in kids:
            flat.extend(c.children if type(c) is type(node) else (c,))
        uniq = sorted({_key(c): c for c in flat}.items())
        kids = [c for _, c in uniq]
        return kids[0] if len(kids) == 1 else type(node)(kids)
    if isinstance(node, Vote):
        if len(kids) == 1:
            return kids[0]
        if node.k == 1:
            return normalize(AnyNode(kids))
        kids.sort(key=_key)
        return Vote(node.k, kids)
    if isinstance(node, WVote):
        simpler = _simpler_wvote(node.threshold, kids, list(node.weights))
        if simpler is not None:
            return simpler
        pairs = sorted(zip(kids, node.weights), key=lambda p: (_key(p[0]), p[1]))
        return WVote(node.threshold, [p[0] for p in pairs], [p[1] for p in pairs])
    raise TypeError(f"not a vx node: {node!r}")  # pragma: no cover


def _simpler_wvote(threshold: Fraction, kids: list[Node], weights: list[Fraction]) -> Node | None:
    """An equal, simpler form of ``(wvote θ k1@w1 …)`` when there is one: every weight at least θ > 0
    → ``(any …)`` (one drawback suffices: ``(wvote 1 a@1 b@3)`` is ``(any a b)``); all weights equal
    w > 0 → ``(vote K …)`` with K = ⌈θ / w⌉ when 1 ≤ K ≤ the number of children. Both keep the
    abstention rule (only opining children count; all abstain → abstain)."""
    if threshold <= 0 or not weights:
        return None
    if all(w >= threshold for w in weights):
        return normalize(AnyNode(kids)) if len(kids) > 1 else kids[0]
    w0 = weights[0]
    if w0 > 0 and all(w == w0 for w in weights):
        import math

        k = math.ceil(threshold / w0 - 1e-12)
        if 1 <= k <= len(kids):
            return normalize(Vote(k, kids)) if len(kids) > 1 else kids[0]
    return None


def prune_ops(node: Node, names: Iterable[str]) -> Node | None:
    """``node`` with every leaf of each op in ``names`` removed, then in normal form (`normalize`); None if
    nothing is left. What retiring ops does to an incumbent, an elite or a held expression."""
    for name in names:
        pruned = prune_op(node, name)
        if pruned is None:
            return None
        node = pruned
    return normalize(node)


def prune_op(node: Node, name: str) -> Node | None:
    """``node`` with every leaf ``name`` removed (K and weights adjusted); None if nothing is left."""
    if isinstance(node, OpRef):
        return None if node.name == name else node
    if isinstance(node, Not):
        inner = prune_op(node.child, name)
        return None if inner is None else Not(inner)
    kept = [(c, i) for c, i in ((prune_op(c, name), i) for i, c in enumerate(node.children)) if c is not None]
    if not kept:
        return None
    kids = [c for c, _ in kept]
    if isinstance(node, Vote):
        return Vote(min(node.k, len(kids)), kids)
    if isinstance(node, WVote):
        return WVote(node.threshold, kids, [node.weights[i] for _, i in kept])
    return node.with_children(kids)


# ------------------------------------------------------------------------------------------------
# enumeration ("subset seeding")


@attrs.define
class EnumerativeComposer:
    """Every single op, plus any/all/vote-K over subsets of up to ``max_size`` selectable ops."""

    max_size: int = 3
    budget: int = 4000
    name: str = "enumerate"

    def propose(self, ctx: CompositionContext) -> list[Node]:
        ops = sorted(ctx.selectable)
        out: list[Node] = [OpRef(o) for o in ops]
        forms_per = {k: 1 + (k >= 2) + max(0, k - 2) for k in range(2, self.max_size + 1)}  # any, all, vote 2..k-1
        total = sum(math.comb(len(ops), k) * forms_per[k] for k in range(2, self.max_size + 1))
        if total <= self.budget:
            for k in range(2, self.max_size + 1):
                for subset in itertools.combinations(ops, k):
                    out.extend(_forms(subset))
            return out
        # too many: all pairs if they fit, then random subsets of the larger sizes
        left = self.budget
        for k in range(2, self.max_size + 1):
            n_sub = math.comb(len(ops), k)
            if n_sub * forms_per[k] <= left:
                for subset in itertools.combinations(ops, k):
                    out.extend(_forms(subset))
                left -= n_sub * forms_per[k]
                continue
            want = left // forms_per[k]
            seen: set[tuple[int, ...]] = set()
            tries = 0
            while len(seen) < want and tries < 20 * want + 100:
                tries += 1
                pick = tuple(sorted(ctx.rng.choice(len(ops), size=k, replace=False).tolist()))
                if pick not in seen:
                    seen.add(pick)
                    out.extend(_forms(tuple(ops[i] for i in pick)))
            left = 0
        return out


def _forms(subset: Sequence[str]) -> list[Node]:
    leaves = [OpRef(o) for o in subset]
    forms: list[Node] = [AnyNode(leaves), All(leaves)]
    forms += [Vote(k, leaves) for k in range(2, len(leaves))]
    return forms


# ------------------------------------------------------------------------------------------------
# mutation and crossover

_WEIGHTS = [Fraction(1, 2), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(3)]


def _pick(rng: np.random.Generator, seq: Sequence) -> Any:
    return seq[int(rng.integers(len(seq)))]


def mutate(node: Node, ops: Sequence[str], rng: np.random.Generator) -> Node | None:
    """One random structural mutation of ``node`` over the op names ``ops`` (None if the drawn
    operator does not apply)."""
    paths = [p for p, _ in node.walk()]
    kind = _pick(rng, ["add", "drop", "replace", "combinator", "k", "not", "weight"])
    combinators = [p for p in paths if not isinstance(node.at(p), (OpRef, Not))]
    leaves = [p for p in paths if isinstance(node.at(p), OpRef)]
    if kind == "add" and ops:
        new = OpRef(_pick(rng, ops))
        if combinators and rng.random() < 0.7:
            p = _pick(rng, combinators)
            target = node.at(p)
            if isinstance(target, WVote):
                grown: Node = WVote(target.threshold, target.children + (new,), target.weights + (Fraction(1),))
            elif isinstance(target, Vote):
                grown = Vote(target.k, target.children + (new,))
            else:
                grown = target.with_children(target.children + (new,))
            return node.replace_at(p, grown)
        p = _pick(rng, paths)
        return node.replace_at(p, AnyNode([node.at(p), new]))
    if kind == "drop":
        cands = [p for p in leaves if p and len(node.at(p[:-1]).children) > 1]
        if not cands:
            return None
        p = _pick(rng, cands)
        parent = node.at(p[:-1])
        i = p[-1]
        kids = parent.children[:i] + parent.children[i + 1 :]
        if isinstance(parent, Vote):
            smaller: Node = Vote(min(parent.k, len(kids)), kids)
        elif isinstance(parent, WVote):
            smaller = WVote(parent.threshold, kids, parent.weights[:i] + parent.weights[i + 1 :])
        else:
            smaller = parent.with_children(kids)
        return node.replace_at(p[:-1], smaller)
    if kind == "replace" and leaves and ops:
        return node.replace_at(_pick(rng, leaves), OpRef(_pick(rng, ops)))
    if kind == "combinator" and combinators:
        p = _pick(rng, combinators)
        kids = node.at(p).children
        choices: list[Node] = [AnyNode(kids), All(kids)] + [Vote(k, kids) for k in range(2, len(kids) + 1)]
        choices.append(WVote(Fraction(1), kids, [Fraction(1)] * len(kids)))
        return node.replace_at(p, _pick(rng, choices))
    if kind == "k":
        votes = [p for p in combinators if isinstance(node.at(p), Vote)]
        if not votes:
            return None
        p = _pick(rng, votes)
        v = cast(Vote, node.at(p))
        k = v.k + (1 if rng.random() < 0.5 else -1)
        if not 1 <= k <= len(v.children):
            return None
        return node.replace_at(p, Vote(k, v.children))
    if kind == "not":
        p = _pick(rng, paths)
        target = node.at(p)
        return node.replace_at(p, target.child if isinstance(target, Not) else Not(target))
    if kind == "weight":
        wv = [p for p in combinators if isinstance(node.at(p), WVote)]
        if not wv:
            return None
        p = _pick(rng, wv)
        w = cast(WVote, node.at(p))
        if rng.random() < 0.3:
            return node.replace_at(p, WVote(_pick(rng, _WEIGHTS), w.children, w.weights))
        i = int(rng.integers(len(w.weights)))
        weights = list(w.weights)
        weights[i] = _pick(rng, _WEIGHTS)
        return node.replace_at(p, WVote(w.threshold, w.children, weights))
    return None


def crossover(a: Node, b: Node, rng: np.random.Generator) -> Node:
    """``a`` with a random subtree replaced by a random subtree of ``b``."""
    pa = _pick(rng, [p for p, _ in a.walk()])
    sub = _pick(rng, [n for _, n in b.walk()])
    return a.replace_at(pa, sub)


@attrs.define
class EvolutionaryComposer:
    """Mutations and crossovers of the elite archive (and the incumbent)."""

    mutations_per_elite: int = 40
    crossovers: int = 200
    max_leaves: int = 8
    name: str = "evolve"

    def propose(self, ctx: CompositionContext) -> list[Node]:
        ops = sorted(ctx.selectable)
        allowed = set(ops)
        parents = [e.node for e in ctx.elites]
        if ctx.incumbent is not None and ctx.incumbent not in parents:
            parents.insert(0, ctx.incumbent)
        parents = [p for p in parents if set(p.op_names()) <= allowed]
        out: list[Node] = []
        for parent in parents:
            for _ in range(self.mutations_per_elite):
                child = mutate(parent, ops, ctx.rng)
                if child is not None and child.size() <= self.max_leaves:
                    out.append(child)
        if len(parents) >= 2:
            for _ in range(self.crossovers):
                i, j = ctx.rng.choice(len(parents), size=2, replace=False).tolist()
                child = crossover(parents[i], parents[j], ctx.rng)
                if child.size() <= self.max_leaves:
                    out.append(child)
        return out
