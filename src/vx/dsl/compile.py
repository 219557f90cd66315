"""The fast evaluator: whole-dataset verdicts of an expression over a `VerdictMatrix`.

Each node is computed for all items at once as a `Packed` pair of bit rows (see
`vx.dsl.matrix`), 64 items per machine word:

    any     opines = OR o_i              fires = OR f_i
    all     opines = OR o_i              fires = opines AND NOT (OR_i (o_i XOR f_i))
    not     opines = o                   fires = o XOR f            (f ⊆ o)
    vote K  opines = OR o_i              fires = "at least K of the f_i", a running bit-sliced
                                         count c_j = "j children fired so far" for j ≤ K
    wvote θ opines = OR o_i              fires = opines AND (Σ W_i·f_i ≥ T), where W_i and T are
                                         the weights and threshold scaled to integers by the lcm
                                         of their denominators — exact, no float ties — summed
                                         bit-sliced in packed form (see `_weighted`)

Because every f_i ⊆ o_i, abstaining children drop out of each rule by construction, and a
node with no opining child has opines = 0 (ABSTAIN). `tests/dsl` checks this item by item
against the reference interpreter `vx.dsl.semantics`.

`BatchEvaluator` keeps the results of combinator nodes in a memo keyed by the (hashable,
structurally compared) node, so scoring many candidate expressions that share subtrees over
the same matrix — what evolution does — computes each distinct subtree once. The memo is an
LRU bounded in bytes.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from vx.dsl.ast import All, Any, Node, Not, Op, Vote, WVote
from vx.dsl.matrix import Packed, VerdictMatrix, pack_bits, unpack_bits

__all__ = ["BatchEvaluator", "Packed", "evaluate"]


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _or_all(rows: list[np.ndarray]) -> np.ndarray:
    out = np.bitwise_or(rows[0], rows[1]) if len(rows) > 1 else rows[0].copy()
    for r in rows[2:]:
        np.bitwise_or(out, r, out=out)
    return out


class BatchEvaluator:
    """Evaluates expressions over one verdict matrix, reusing shared subtrees across calls.

    Example::

        ev = BatchEvaluator(matrix)
        for candidate in candidates:
            verdicts = ev.evaluate(candidate).to_int8()

    ``memo_bytes`` bounds the memory the memo may hold (least recently used results are
    dropped first); 0 disables memoisation.
    """

    def __init__(self, matrix: VerdictMatrix, *, memo_bytes: int = 256 * 2**20) -> None:
        self.matrix = matrix
        self.memo_bytes = memo_bytes
        self._memo: OrderedDict[Node, Packed] = OrderedDict()
        self._memo_size = 0
        self.hits = 0
        self.misses = 0
        # one read-only row view per op, made once: indexing a 2-D array per leaf costs more
        # than OR-ing a small row
        self._orows = list(matrix.opines_words)
        self._frows = list(matrix.fires_words)
        self._n = matrix.n_items

    # --- public ----------------------------------------------------------------------
    def evaluate(self, node: Node) -> Packed:
        """Verdicts of ``node`` on every item. Raises ``KeyError`` (with the nearest names)
        when the expression uses an op the matrix does not have."""
        if not isinstance(node, Node):
            raise TypeError(f"expected a vx Node, not {type(node).__name__}")
        return self._eval(node)

    def evaluate_int8(self, node: Node) -> np.ndarray:
        """``int8[n_items]`` verdict codes of ``node`` (1 drawback, 0 clean, -1 abstain)."""
        return self._eval(node).to_int8()

    def evaluate_many(self, nodes: Iterable[Node]) -> list[Packed]:
        return [self.evaluate(node) for node in nodes]

    def clear(self) -> None:
        """Forget all memoised results."""
        self._memo.clear()
        self._memo_size = 0

    @property
    def memo_entries(self) -> int:
        return len(self._memo)

    # --- internals -------------------------------------------------------------------
    def _eval(self, node: Node) -> Packed:
        if isinstance(node, Op):
            j = self.matrix.op_index(node.name)
            return Packed(self._orows[j], self._frows[j], self._n)
        memo = self._memo
        hit = memo.get(node)
        if hit is not None:
            memo.move_to_end(node)
            self.hits += 1
            return hit
        self.misses += 1
        opines, fires = self._compute(node)
        result = Packed(_readonly(opines), _readonly(fires), self._n)
        if self.memo_bytes > 0:
            memo[node] = result
            self._memo_size += opines.nbytes + fires.nbytes
            while self._memo_size > self.memo_bytes and memo:
                _, old = memo.popitem(last=False)
                self._memo_size -= old.opines.nbytes + old.fires.nbytes
        return result

    def _rows(self, children: tuple[Node, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Opines and fires rows of the children, in order."""
        os: list[np.ndarray] = []
        fs: list[np.ndarray] = []
        for child in children:
            if type(child) is Op:
                j = self.matrix.op_index(child.name)
                os.append(self._orows[j])
                fs.append(self._frows[j])
            else:
                p = self._eval(child)
                os.append(p.opines)
                fs.append(p.fires)
        return os, fs

    def _compute(self, node: Node) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(node, Not):
            p = self._eval(node.child)
            return p.opines, np.bitwise_xor(p.opines, p.fires)  # rows are read-only: share

        os, fs = self._rows(node.children)
        opines = _or_all(os)
        if isinstance(node, Any):
            return opines, _or_all(fs)
        if isinstance(node, All):
            # a child blocks the conjunction where it opines and does not fire: o & ~f = o ^ f
            blocked = np.bitwise_xor(os[0], fs[0])
            scratch = np.empty_like(blocked)
            for o, f in zip(os[1:], fs[1:], strict=True):
                np.bitwise_or(blocked, np.bitwise_xor(o, f, out=scratch), out=blocked)
            return opines, np.bitwise_and(opines, np.bitwise_not(blocked, out=blocked), out=blocked)
        if isinstance(node, Vote):
            return opines, at_least(node.k, fs)
        if isinstance(node, WVote):
            return opines, self._weighted(node, opines, fs)
        raise TypeError(f"not a vx node: {node!r}")  # pragma: no cover

    def _weighted(self, node: WVote, opines: np.ndarray, fs: list[np.ndarray]) -> np.ndarray:
        """Bits set where the weights of the firing children sum to at least the threshold.

        Weights and threshold are scaled to integers by the lcm of their denominators. A
        negative weight w contributes w·f = |w|·(1 − f) − |w|, so with ``target = T + Σ|w<0|``
        the test becomes a sum of non-negative terms ``Σ_{w>0} w·f + Σ_{w<0} |w|·¬f ≥ target``,
        computed bit-sliced: one bit row per binary digit of the per-item sum, ripple-carry
        additions, then a most-significant-first comparison with ``target``. Exact, and it never
        leaves the packed form. Sums wider than 64 bits use unpacked Python integers instead.
        """
        scale = math.lcm(node.threshold.denominator, *(w.denominator for w in node.weights))
        weights = [int(w * scale) for w in node.weights]
        target = int(node.threshold * scale) + sum(-w for w in weights if w < 0)
        max_sum = sum(abs(w) for w in weights)
        if target <= 0:
            return opines.copy()
        if target > max_sum:
            return np.zeros_like(opines)
        if max_sum.bit_length() > 64:
            return self._weighted_unpacked(weights, target, opines, fs)

        planes: list[np.ndarray] = []  # planes[j]: bit j of each item's running sum
        reach = 0  # the largest running sum so far
        for w, f in zip(weights, fs, strict=True):
            if w == 0:
                continue
            row = f if w > 0 else np.bitwise_not(f)
            a = abs(w)
            reach += a
            while len(planes) < reach.bit_length():
                planes.append(np.zeros_like(opines))
            for b in range(a.bit_length()):
                if not (a >> b) & 1:
                    continue
                carry = row
                for j in range(b, reach.bit_length()):
                    new_carry = np.bitwise_and(planes[j], carry)
                    np.bitwise_xor(planes[j], carry, out=planes[j])
                    carry = new_carry
        greater = np.zeros_like(opines)
        equal = np.bitwise_not(greater)
        for j in range(len(planes) - 1, -1, -1):
            if (target >> j) & 1:
                np.bitwise_and(equal, planes[j], out=equal)
            else:
                np.bitwise_or(greater, np.bitwise_and(equal, planes[j]), out=greater)
                np.bitwise_and(equal, np.bitwise_not(planes[j]), out=equal)
        return np.bitwise_and(np.bitwise_or(greater, equal), opines)

    def _weighted_unpacked(
        self, weights: list[int], target: int, opines: np.ndarray, fs: list[np.ndarray]
    ) -> np.ndarray:
        """The same test on unpacked per-item Python integer sums (for huge weights)."""
        sums = np.zeros(self._n, dtype=object)
        for w, f in zip(weights, fs, strict=True):
            if w:
                bits = unpack_bits(f, self._n)
                np.add(sums, abs(w), out=sums, where=bits if w > 0 else ~bits)
        return np.bitwise_and(pack_bits(sums >= target), opines)


def at_least(k: int, fs: list[np.ndarray]) -> np.ndarray:
    """Bits set where at least ``k`` of the bit rows ``fs`` are set (bit-sliced counting; rows may
    be stacked: any shape, elementwise)."""
    counts: list[np.ndarray] = []  # counts[j-1]: at least j rows seen so far are set
    for i, f in enumerate(fs):
        for j in range(min(k, i + 1), 1, -1):
            if j - 1 == len(counts):
                counts.append(np.bitwise_and(counts[j - 2], f))
            else:
                np.bitwise_or(counts[j - 1], np.bitwise_and(counts[j - 2], f), out=counts[j - 1])
        if counts:
            np.bitwise_or(counts[0], f, out=counts[0])
        else:
            counts.append(f.copy())
    return counts[k - 1]


def evaluate(node: Node, matrix: VerdictMatrix) -> np.ndarray:
    """``int8[n_items]`` verdict codes of ``node`` over ``matrix`` (a one-off evaluation)."""
    return BatchEvaluator(matrix, memo_bytes=0).evaluate_int8(node)
