"""The verdict matrix: items × ops, tri-state, stored as two packed bitsets per op.

For every op the matrix keeps two bit rows over the items:

    opines  bit i set ⇔ the op does not abstain on item i
    fires   bit i set ⇔ the op found a drawback on item i        (fires ⊆ opines)

so CLEAN is (1, 0), DRAWBACK is (1, 1) and ABSTAIN is (0, 0). Bits are packed
little-endian into bytes (``np.packbits(bitorder="little")``) and padded to whole 64-bit
words, which the evaluator combines with ``np.bitwise_*`` on ``uint64`` views: one word
holds 64 items, so a combinator over a million items touches 250 kB per row. Padding bits
past the last item are always 0 in both rows, an invariant every evaluator step keeps
(each result is masked by an ``opines`` row).

The matrix is immutable; ``take``, ``select_ops`` and ``with_ops`` return new matrices.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Iterable, Mapping, Sequence

import attrs
import numpy as np

from vx.dsl.verdict import Verdict

__all__ = ["Packed", "VerdictMatrix", "pack_bits", "unpack_bits", "n_words_for"]

_WORD = np.uint64


def n_words_for(n_items: int) -> int:
    """Number of 64-bit words that hold ``n_items`` bits."""
    return (n_items + 63) // 64


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """Pack a bool array ``[..., n]`` into ``uint64[..., n_words]`` (little-endian bit order)."""
    bits = np.asarray(bits, dtype=bool)
    n = bits.shape[-1]
    packed = np.packbits(bits, axis=-1, bitorder="little")
    pad = n_words_for(n) * 8 - packed.shape[-1]
    if pad:
        widths = [(0, 0)] * (packed.ndim - 1) + [(0, pad)]
        packed = np.pad(packed, widths)
    return np.ascontiguousarray(packed).view(_WORD)


def unpack_bits(words: np.ndarray, n: int) -> np.ndarray:
    """Inverse of `pack_bits`: ``uint64[..., n_words]`` → bool ``[..., n]``."""
    as_bytes = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(as_bytes, axis=-1, count=n, bitorder="little").view(bool)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@attrs.frozen(eq=False)
class Packed:
    """Tri-state verdicts of one op or one expression over ``n`` items, as two bit rows."""

    opines: np.ndarray  # uint64[n_words]
    fires: np.ndarray  # uint64[n_words], a subset of opines
    n: int

    @classmethod
    def from_int8(cls, verdicts: np.ndarray) -> Packed:
        """Pack an ``int8[n]`` array of verdict codes (1, 0, -1)."""
        v = _validated_codes(np.asarray(verdicts))
        if v.ndim != 1:
            raise ValueError(f"expected a 1-D array of verdict codes, got shape {v.shape}")
        return cls(_readonly(pack_bits(v != -1)), _readonly(pack_bits(v == 1)), len(v))

    def to_int8(self) -> np.ndarray:
        """``int8[n]`` verdict codes: DRAWBACK = 1, CLEAN = 0, ABSTAIN = -1."""
        o = unpack_bits(self.opines, self.n).view(np.int8)
        f = unpack_bits(self.fires, self.n).view(np.int8)
        return f + o - np.int8(1)

    def n_opines(self) -> int:
        """Number of items the verdict is not ABSTAIN on."""
        return _popcount(self.opines)

    def n_fires(self) -> int:
        """Number of items the verdict is DRAWBACK on."""
        return _popcount(self.fires)


if hasattr(np, "bitwise_count"):  # numpy >= 2.0

    def _popcount(words: np.ndarray) -> int:
        return int(np.bitwise_count(words).sum(dtype=np.int64))

else:  # pragma: no cover - numpy 1.x

    def _popcount(words: np.ndarray) -> int:
        return int(np.unpackbits(np.ascontiguousarray(words).view(np.uint8)).sum(dtype=np.int64))


def _validated_codes(a: np.ndarray) -> np.ndarray:
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"verdict codes must be integers (1, 0, -1), not {a.dtype}")
    bad = (a < -1) | (a > 1)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"verdict codes must be 1 (drawback), 0 (clean) or -1 (abstain); found {a[where]} at index {where}"
        )
    return a.astype(np.int8, copy=False)


def _unique(names: Iterable[Hashable], what: str) -> tuple:
    out = tuple(names)
    if len(set(out)) != len(out):
        seen: set = set()
        dup = next(x for x in out if x in seen or seen.add(x))  # type: ignore[func-returns-value]
        raise ValueError(f"duplicate {what} {dup!r}")
    return out


class VerdictMatrix:
    """Verdicts of ``n_ops`` ops on ``n_items`` items (immutable).

    Build it with `from_array`, `from_rows` or `from_columns`; read it with `column`,
    `get`, `to_array` or, for evaluators, `packed`.
    """

    __slots__ = ("_opines", "_fires", "_item_ids", "_op_names", "_op_index", "_item_index")

    def __init__(
        self,
        opines: np.ndarray,
        fires: np.ndarray,
        item_ids: Sequence[Hashable],
        op_names: Sequence[str],
    ) -> None:
        """Low-level constructor from packed rows ``uint64[n_ops, n_words]``; prefer the
        ``from_*`` class methods."""
        self._item_ids = _unique(item_ids, "item id")
        self._op_names = _unique(op_names, "op name")
        n_words = n_words_for(len(self._item_ids))
        shape = (len(self._op_names), n_words)
        for name, rows in (("opines", opines), ("fires", fires)):
            if rows.dtype != _WORD or rows.shape != shape:
                raise ValueError(f"{name} must be uint64{list(shape)}, got {rows.dtype}{list(rows.shape)}")
        self._opines = _readonly(np.ascontiguousarray(opines))
        self._fires = _readonly(np.ascontiguousarray(fires & opines))
        self._op_index = {name: i for i, name in enumerate(self._op_names)}
        self._item_index: dict[Hashable, int] | None = None

    # --- construction ----------------------------------------------------------------
    @classmethod
    def from_array(
        cls,
        verdicts: np.ndarray,
        item_ids: Sequence[Hashable] | None = None,
        op_names: Sequence[str] | None = None,
    ) -> VerdictMatrix:
        """From ``int[n_items, n_ops]`` verdict codes. Item ids default to ``"0", "1", …``
        and op names to ``"op0", "op1", …``."""
        a = _validated_codes(np.asarray(verdicts))
        if a.ndim != 2:
            raise ValueError(f"expected a 2-D array [items, ops], got shape {a.shape}")
        n_items, n_ops = a.shape
        item_ids = tuple(str(i) for i in range(n_items)) if item_ids is None else tuple(item_ids)
        op_names = tuple(f"op{j}" for j in range(n_ops)) if op_names is None else tuple(op_names)
        if len(item_ids) != n_items:
            raise ValueError(f"{len(item_ids)} item ids for {n_items} rows")
        if len(op_names) != n_ops:
            raise ValueError(f"{len(op_names)} op names for {n_ops} columns")
        t = a.T
        return cls(pack_bits(t != -1), pack_bits(t == 1), item_ids, op_names)

    @classmethod
    def from_columns(
        cls, columns: Mapping[str, np.ndarray | Sequence[int]], item_ids: Sequence[Hashable] | None = None
    ) -> VerdictMatrix:
        """From ``{op name: int[n_items] verdict codes}``."""
        names = list(columns)
        if not names:
            n = 0 if item_ids is None else len(item_ids)
            return cls.from_array(np.zeros((n, 0), np.int8), item_ids, [])
        cols = [np.asarray(columns[name]) for name in names]
        lengths = {len(c) for c in cols}
        if len(lengths) != 1:
            raise ValueError(f"columns have different lengths: {sorted(lengths)}")
        return cls.from_array(np.stack(cols, axis=1), item_ids, names)

    @classmethod
    def from_rows(
        cls,
        rows: Sequence[Mapping[str, Verdict | int | None]],
        item_ids: Sequence[Hashable] | None = None,
        op_names: Sequence[str] | None = None,
    ) -> VerdictMatrix:
        """From one mapping per item (op name → verdict). An op missing from a row, or
        given as ``None``, abstains on that item. Without ``op_names`` the columns are the
        ops in order of first appearance."""
        if op_names is None:
            seen: dict[str, None] = {}
            for row in rows:
                seen.update(dict.fromkeys(row))
            op_names = list(seen)
        index = {name: j for j, name in enumerate(op_names)}
        a = np.full((len(rows), len(index)), -1, dtype=np.int8)
        for i, row in enumerate(rows):
            for name, v in row.items():
                if name not in index:
                    raise KeyError(f"row {i} has a verdict for {name!r}, which is not in op_names")
                if v is not None:
                    a[i, index[name]] = int(Verdict(v))
        return cls.from_array(a, item_ids, op_names)

    # --- shape and names -------------------------------------------------------------
    @property
    def item_ids(self) -> tuple:
        return self._item_ids

    @property
    def op_names(self) -> tuple[str, ...]:
        return self._op_names

    @property
    def n_items(self) -> int:
        return len(self._item_ids)

    @property
    def n_ops(self) -> int:
        return len(self._op_names)

    @property
    def opines_words(self) -> np.ndarray:
        """Read-only ``uint64[n_ops, n_words]`` opines rows (for evaluators)."""
        return self._opines

    @property
    def fires_words(self) -> np.ndarray:
        """Read-only ``uint64[n_ops, n_words]`` fires rows (for evaluators)."""
        return self._fires

    def __contains__(self, op: object) -> bool:
        return op in self._op_index

    def __repr__(self) -> str:
        return f"<VerdictMatrix {self.n_items} items × {self.n_ops} ops>"

    def op_index(self, op: str) -> int:
        """Column index of ``op``; ``KeyError`` naming the nearest known ops otherwise."""
        try:
            return self._op_index[op]
        except KeyError:
            raise KeyError(self._unknown_op_message(op)) from None

    def item_index(self, item_id: Hashable) -> int:
        if self._item_index is None:
            self._item_index = {item: i for i, item in enumerate(self._item_ids)}
        try:
            return self._item_index[item_id]
        except KeyError:
            raise KeyError(f"item {item_id!r} is not in the verdict matrix") from None

    def _unknown_op_message(self, op: str) -> str:
        near = difflib.get_close_matches(op, self._op_names, n=3)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        return f"op {op!r} is not in the verdict matrix ({self.n_ops} ops){hint}"

    # --- reading ---------------------------------------------------------------------
    def packed(self, op: str) -> Packed:
        """The packed rows of one op (read-only views, no copy)."""
        j = self.op_index(op)
        return Packed(self._opines[j], self._fires[j], self.n_items)

    def column(self, op: str) -> np.ndarray:
        """``int8[n_items]`` verdict codes of one op."""
        return self.packed(op).to_int8()

    def get(self, item_id: Hashable, op: str) -> Verdict:
        """The verdict of ``op`` on the item ``item_id``."""
        i, j = self.item_index(item_id), self.op_index(op)
        word, bit = divmod(i, 64)
        mask = _WORD(1) << _WORD(bit)
        if not self._opines[j, word] & mask:
            return Verdict.ABSTAIN
        return Verdict.DRAWBACK if self._fires[j, word] & mask else Verdict.CLEAN

    def row(self, item_id: Hashable) -> dict[str, Verdict]:
        """All op verdicts on one item (the input the reference interpreter takes)."""
        return {op: self.get(item_id, op) for op in self._op_names}

    def to_array(self) -> np.ndarray:
        """``int8[n_items, n_ops]`` verdict codes."""
        o = unpack_bits(self._opines, self.n_items).view(np.int8)
        f = unpack_bits(self._fires, self.n_items).view(np.int8)
        return np.ascontiguousarray((f + o - np.int8(1)).T)

    # --- deriving --------------------------------------------------------------------
    def take(self, item_indices: Sequence[int] | np.ndarray) -> VerdictMatrix:
        """The rows at ``item_indices`` (positions, in the given order). Positions must be
        distinct, since item ids stay unique; to resample with replacement (bootstrap), index
        the ``int8`` arrays from `to_array` / `column` instead."""
        idx = np.asarray(item_indices, dtype=np.intp).reshape(-1)
        if idx.size and (idx.min() < -self.n_items or idx.max() >= self.n_items):
            raise IndexError(f"item index out of range for {self.n_items} items")
        ids = [self._item_ids[i] for i in idx.tolist()]
        opines = np.zeros((self.n_ops, n_words_for(len(idx))), dtype=_WORD)
        fires = np.zeros_like(opines)
        for j in range(self.n_ops):  # one op at a time: memory stays O(n_items)
            opines[j] = pack_bits(unpack_bits(self._opines[j], self.n_items)[idx])
            fires[j] = pack_bits(unpack_bits(self._fires[j], self.n_items)[idx])
        return VerdictMatrix(opines, fires, ids, self._op_names)

    def select_ops(self, ops: Sequence[str]) -> VerdictMatrix:
        """A matrix with only the columns ``ops``, in that order."""
        js = [self.op_index(op) for op in ops]
        return VerdictMatrix(self._opines[js], self._fires[js], self._item_ids, ops)

    def with_ops(self, other: VerdictMatrix) -> VerdictMatrix:
        """This matrix with the columns of ``other`` appended. Both must have the same item
        ids in the same order, and no op may appear in both."""
        if other.item_ids != self.item_ids:
            raise ValueError("with_ops needs matrices over the same item ids in the same order")
        clash = sorted(set(self._op_names) & set(other.op_names))
        if clash:
            raise ValueError(f"ops present in both matrices: {', '.join(clash)}")
        return VerdictMatrix(
            np.concatenate([self._opines, other.opines_words]),
            np.concatenate([self._fires, other.fires_words]),
            self._item_ids,
            self._op_names + other.op_names,
        )
