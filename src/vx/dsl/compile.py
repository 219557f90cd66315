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
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import cast

import attrs
import numpy as np

from vx.dsl.ast import All, Node, Not, OpRef, Vote, WVote
from vx.dsl.ast import Any as AnyNode
from vx.dsl.matrix import Packed, VerdictMatrix, pack_bits, unpack_bits

__all__ = [
    "ABSTAIN_OP",
    "ABSTAIN_SLOT",
    "BatchEvaluator",
    "BatchRows",
    "CompiledBatch",
    "Packed",
    "compile_candidates",
    "evaluate",
    "evaluate_batch",
    "shape_of",
]


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
        if isinstance(node, OpRef):
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
            if type(child) is OpRef:
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
        if isinstance(node, AnyNode):
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


# --------------------------------------------------------------------------- many candidates at once
#
# Many candidate expressions at once over one verdict matrix: the selection hot path.
#
# `vx.dsl.compile.BatchEvaluator` evaluates one expression per call (memoising shared subtrees);
# evolution scores thousands of candidates per round, and per-candidate Python would dominate.
# Here candidates are *compiled* first: each is reduced to a **shape** (the tree with its leaves
# replaced by slots, keeping combinators, K, weights and thresholds) plus the matrix column of
# each leaf. Candidates of one shape form a group, stored as an ``int32[n, n_leaves]`` index
# array, and every node of the shape is computed for the whole group at once on packed
# ``uint64[n, n_words]`` bit rows — the same bit rules as `vx.dsl.compile`:
#
#     any     opines = OR o_i     fires = OR f_i
#     all     opines = OR o_i     fires = opines AND NOT OR_i (o_i AND NOT f_i)
#     not     opines = o          fires = o XOR f
#     vote K  opines = OR o_i     fires = at least K of the f_i (bit-sliced running counts)
#     wvote   opines = OR o_i     fires = opines AND Σ W_i·f_i ≥ T   (exact integer sums)
#
# `tests/dsl/test_batch.py` checks this, item by item, against the reference interpreter
# `vx.dsl.semantics`. An extra all-abstain column (`ABSTAIN_SLOT`) is always available, so an op can
# be "left out" of an expression without rebuilding it (leave-one-out marginals).

#: Column index meaning "an op that abstains on every item" (one past the matrix's last op).
ABSTAIN_SLOT = -1
#: A reserved leaf name bound to `ABSTAIN_SLOT` (used to leave an op out of an expression).
ABSTAIN_OP = "__vx_abstain__"

# The working set of one vectorised step is bounded to about this many 64-bit words.
_CHUNK_WORDS = 1 << 22


_LEAF = ("L",)
_FLAT: dict[tuple, tuple] = {}  # (kind, k, n) -> shape of a flat node over n leaves


def _flat_shape(t: type, k: int, n: int) -> tuple:
    key = (t, k, n)
    shape = _FLAT.get(key)
    if shape is None:
        slots = (_LEAF,) * n
        shape = _FLAT[key] = ("any", slots) if t is AnyNode else ("all", slots) if t is All else ("vote", k, slots)
    return shape


def shape_of(node: Node) -> tuple[tuple, tuple[str, ...]]:
    """``(shape, leaf names)``: the tree with leaves as slots, and the leaves left to right."""
    leaves: list[str] = []
    append = leaves.append

    def go(n: Node) -> tuple:
        t = type(n)  # exact types, compared once (the hot path of scoring many candidates)
        if t is OpRef:
            append(cast(OpRef, n).name)
            return _LEAF
        if t is Not:
            return ("not", go(cast(Not, n).child))
        kids = n.children
        if t is not WVote and all(type(c) is OpRef for c in kids):  # flat: the common case
            for c in kids:
                append(cast(OpRef, c).name)
            return _flat_shape(t, cast(Vote, n).k if t is Vote else 0, len(kids))
        sub = tuple([go(c) for c in kids])
        if t is AnyNode:
            return ("any", sub)
        if t is All:
            return ("all", sub)
        if t is Vote:
            return ("vote", cast(Vote, n).k, sub)
        if t is WVote:
            w = cast(WVote, n)
            return ("wvote", w.threshold, w.weights, sub)
        raise TypeError(f"not a vx node: {n!r}")  # pragma: no cover

    return go(node), tuple(leaves)


@attrs.frozen
class CompiledBatch:
    """Candidates grouped by shape. ``groups[i] = (shape, leaf_columns int32[n, n_leaves],
    positions int64[n])``: ``positions`` are the candidates' indices in the original order."""

    groups: tuple[tuple[tuple, np.ndarray, np.ndarray], ...]
    n: int


def compile_candidates(nodes: Sequence[Node], columns: dict[str, int]) -> CompiledBatch:
    """Group ``nodes`` by shape; ``columns`` maps op name → matrix column (``ABSTAIN_SLOT``
    allowed). Raises ``KeyError`` for an op the matrix does not have."""
    by_shape: dict[tuple, tuple[list[list[int]], list[int]]] = {}
    for pos, node in enumerate(nodes):
        shape, leaves = shape_of(node)
        try:
            cols = [columns[name] for name in leaves]
        except KeyError as exc:
            raise KeyError(f"op {exc.args[0]!r} is not in the verdict matrix") from None
        rows, where = by_shape.setdefault(shape, ([], []))
        rows.append(cols)
        where.append(pos)
    groups = tuple(
        (shape, np.asarray(rows, dtype=np.int32).reshape(len(rows), -1), np.asarray(where, dtype=np.int64))
        for shape, (rows, where) in by_shape.items()
    )
    return CompiledBatch(groups, len(nodes))


def _leaf_count(shape: tuple) -> int:
    if shape[0] == "L":
        return 1
    if shape[0] == "not":
        return _leaf_count(shape[1])
    return sum(_leaf_count(k) for k in shape[-1])


class BatchRows:
    """The matrix's opines/fires rows plus one all-abstain row at index ``n_ops``."""

    def __init__(self, matrix: VerdictMatrix) -> None:
        n_words = matrix.opines_words.shape[1]
        zero = np.zeros((1, n_words), dtype=np.uint64)
        self.O = np.concatenate([matrix.opines_words, zero])
        self.F = np.concatenate([matrix.fires_words, zero])
        self.n_items = matrix.n_items
        self.n_words = n_words


def _eval_shape(shape: tuple, cols: np.ndarray, start: int, rows: BatchRows) -> tuple[np.ndarray, np.ndarray, int]:
    """Evaluate ``shape`` for every candidate row of ``cols`` (leaf slots from ``start``);
    returns ``(opines, fires, next_slot)`` with arrays ``uint64[n, n_words]``."""
    kind = shape[0]
    if kind == "L":
        c = cols[:, start]
        return rows.O[c], rows.F[c], start + 1
    if kind == "not":
        o, f, nxt = _eval_shape(shape[1], cols, start, rows)
        return o, np.bitwise_xor(o, f), nxt
    kids = shape[-1]
    if all(k[0] == "L" for k in kids) and kind in ("any", "all"):
        # flat node over leaves: one gather and one reduction per row
        c = cols[:, start : start + len(kids)]
        o_k, f_k = rows.O[c], rows.F[c]  # [n, k, words]
        opines = np.bitwise_or.reduce(o_k, axis=1)
        if kind == "any":
            return opines, np.bitwise_or.reduce(f_k, axis=1), start + len(kids)
        clean = np.bitwise_or.reduce(np.bitwise_xor(o_k, f_k), axis=1)
        return opines, np.bitwise_and(opines, np.bitwise_not(clean)), start + len(kids)
    os_: list[np.ndarray] = []
    fs: list[np.ndarray] = []
    nxt = start
    for k in kids:
        o, f, nxt = _eval_shape(k, cols, nxt, rows)
        os_.append(o)
        fs.append(f)
    opines = _or_all(os_)
    if kind == "any":
        return opines, _or_all(fs), nxt
    if kind == "all":
        clean = _or_all([np.bitwise_xor(o, f) for o, f in zip(os_, fs)])
        return opines, np.bitwise_and(opines, np.bitwise_not(clean)), nxt
    if kind == "vote":
        return opines, at_least(shape[1], fs), nxt
    if kind == "wvote":
        return opines, _weighted_batch(shape[1], shape[2], opines, fs, rows.n_items), nxt
    raise TypeError(f"unknown shape {kind!r}")  # pragma: no cover


def _weighted_batch(
    threshold: Fraction, weights: tuple[Fraction, ...], opines: np.ndarray, fs: list[np.ndarray], n_items: int
) -> np.ndarray:
    scale = math.lcm(threshold.denominator, *(w.denominator for w in weights))
    ws = [int(w * scale) for w in weights]
    t = int(threshold * scale)
    exact = sum(abs(w) for w in ws) + abs(t) < 2**62
    dtype = np.int64 if exact else object
    sums = np.zeros((opines.shape[0], n_items), dtype=dtype)
    for w, f in zip(ws, fs):
        if w:
            sums += np.where(unpack_bits(f, n_items), w, 0).astype(dtype)
    return np.bitwise_and(pack_bits(sums >= t), opines)


def evaluate_batch(
    batch: CompiledBatch, matrix: VerdictMatrix, *, rows: BatchRows | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Packed verdicts of every candidate: ``(opines, fires)``, each ``uint64[n, n_words]``,
    in the order the candidates were compiled."""
    rows = rows or BatchRows(matrix)
    opines = np.zeros((batch.n, rows.n_words), dtype=np.uint64)
    fires = np.zeros_like(opines)
    for shape, cols, where in batch.groups:
        cols = np.where(cols == ABSTAIN_SLOT, rows.O.shape[0] - 1, cols)
        per = max(1, _CHUNK_WORDS // max(1, _leaf_count(shape) * rows.n_words))
        for a in range(0, len(cols), per):
            o, f, _ = _eval_shape(shape, cols[a : a + per], 0, rows)
            opines[where[a : a + per]] = o
            fires[where[a : a + per]] = f
    return opines, fires
