"""Many candidate expressions at once over one verdict matrix: the selection hot path.

`vx.dsl.compile.BatchEvaluator` evaluates one expression per call (memoising shared subtrees);
evolution scores thousands of candidates per round, and per-candidate Python would dominate.
Here candidates are *compiled* first: each is reduced to a **shape** (the tree with its leaves
replaced by slots, keeping combinators, K, weights and thresholds) plus the matrix column of
each leaf. Candidates of one shape form a group, stored as an ``int32[n, n_leaves]`` index
array, and every node of the shape is computed for the whole group at once on packed
``uint64[n, n_words]`` bit rows — the same bit rules as `vx.dsl.compile`:

    any     opines = OR o_i     fires = OR f_i
    all     opines = OR o_i     fires = opines AND NOT OR_i (o_i AND NOT f_i)
    not     opines = o          fires = o XOR f
    vote K  opines = OR o_i     fires = at least K of the f_i (bit-sliced running counts)
    wvote   opines = OR o_i     fires = opines AND Σ W_i·f_i ≥ T   (exact integer sums)

`tests/evolve/test_batch.py` checks this, item by item, against the reference interpreter
`vx.dsl.semantics`. An extra all-abstain column (`ABSTAIN_SLOT`) is always available, so an op can
be "left out" of an expression without rebuilding it (leave-one-out marginals).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import attrs
import numpy as np

from vx.dsl.ast import All, Any, Node, Not, Op, Vote, WVote
from vx.dsl.compile import at_least
from vx.dsl.matrix import VerdictMatrix, pack_bits, unpack_bits

__all__ = ["BatchRows", "CompiledBatch", "ABSTAIN_OP", "ABSTAIN_SLOT", "compile_candidates", "evaluate_batch", "shape_of"]

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
        shape = _FLAT[key] = ("any", slots) if t is Any else ("all", slots) if t is All else ("vote", k, slots)
    return shape


def shape_of(node: Node) -> tuple[tuple, tuple[str, ...]]:
    """``(shape, leaf names)``: the tree with leaves as slots, and the leaves left to right."""
    leaves: list[str] = []
    append = leaves.append

    def go(n: Node) -> tuple:
        t = type(n)
        if t is Op:
            append(n.name)
            return _LEAF
        if t is Not:
            return ("not", go(n.child))
        kids = n.children
        if t is not WVote and all(type(c) is Op for c in kids):  # flat: the common case
            for c in kids:
                append(c.name)
            return _flat_shape(t, n.k if t is Vote else 0, len(kids))
        sub = tuple([go(c) for c in kids])
        if t is Any:
            return ("any", sub)
        if t is All:
            return ("all", sub)
        if t is Vote:
            return ("vote", n.k, sub)
        if t is WVote:
            return ("wvote", n.threshold, n.weights, sub)
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
        c = cols[:, start:start + len(kids)]
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
    opines = _or(os_)
    if kind == "any":
        return opines, _or(fs), nxt
    if kind == "all":
        clean = _or([np.bitwise_xor(o, f) for o, f in zip(os_, fs)])
        return opines, np.bitwise_and(opines, np.bitwise_not(clean)), nxt
    if kind == "vote":
        return opines, at_least(shape[1], fs), nxt
    if kind == "wvote":
        return opines, _weighted(shape[1], shape[2], opines, fs, rows.n_items), nxt
    raise TypeError(f"unknown shape {kind!r}")  # pragma: no cover


def _or(rows: list[np.ndarray]) -> np.ndarray:
    out = rows[0].copy()
    for r in rows[1:]:
        np.bitwise_or(out, r, out=out)
    return out


def _weighted(threshold: Fraction, weights: tuple[Fraction, ...], opines: np.ndarray, fs: list[np.ndarray],
              n_items: int) -> np.ndarray:
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


def evaluate_batch(batch: CompiledBatch, matrix: VerdictMatrix, *, rows: BatchRows | None = None
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
            o, f, _ = _eval_shape(shape, cols[a:a + per], 0, rows)
            opines[where[a:a + per]] = o
            fires[where[a:a + per]] = f
    return opines, fires
