import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vx.dsl.matrix import Packed, VerdictMatrix, pack_bits, unpack_bits
from vx.dsl.verdict import Verdict

from .strategies import matrices

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN
CODES = np.array([[1, 0], [-1, 1], [0, -1]], dtype=np.int8)


def small() -> VerdictMatrix:
    return VerdictMatrix.from_array(CODES, ["i0", "i1", "i2"], ["crash", "slow"])


@settings(deadline=None)
@given(hnp.arrays(np.int8, st.tuples(st.integers(0, 200), st.integers(0, 5)), elements=st.integers(-1, 1)))
def test_array_round_trip(codes):
    m = VerdictMatrix.from_array(codes)
    np.testing.assert_array_equal(m.to_array(), codes)
    assert (m.n_items, m.n_ops) == codes.shape
    for j, op in enumerate(m.op_names):
        np.testing.assert_array_equal(m.column(op), codes[:, j])


@settings(deadline=None)
@given(hnp.arrays(bool, st.integers(0, 300)))
def test_pack_unpack(bits):
    words = pack_bits(bits)
    assert words.dtype == np.uint64 and words.shape == ((len(bits) + 63) // 64,)
    np.testing.assert_array_equal(unpack_bits(words, len(bits)), bits)


@settings(deadline=None)
@given(matrices())
def test_fires_within_opines_and_padding_is_zero(m):
    o, f = m.opines_words, m.fires_words
    assert not np.any(f & ~o)
    n = m.n_items
    if n % 64:
        pad_mask = ~np.uint64((1 << (n % 64)) - 1)
        assert not np.any(o[:, -1] & pad_mask)


def test_lookups():
    m = small()
    assert m.get("i0", "crash") is D and m.get("i1", "crash") is A and m.get("i2", "crash") is C
    assert m.row("i1") == {"crash": A, "slow": D}
    assert "crash" in m and "nope" not in m
    assert repr(m) == "<VerdictMatrix 3 items × 2 ops>"
    p = m.packed("slow")
    assert (p.n, p.n_opines(), p.n_fires()) == (3, 2, 1)


def test_unknown_op_and_item_errors_name_them():
    m = small()
    with pytest.raises(KeyError, match="op 'crsh' is not in the verdict matrix .*did you mean 'crash'"):
        m.column("crsh")
    with pytest.raises(KeyError, match="item 'i9'"):
        m.get("i9", "crash")


def test_from_rows_missing_is_abstain():
    m = VerdictMatrix.from_rows([{"a": D}, {"b": C, "a": None}, {}], item_ids=["x", "y", "z"])
    assert m.op_names == ("a", "b")
    np.testing.assert_array_equal(m.to_array(), [[1, -1], [-1, 0], [-1, -1]])
    with pytest.raises(KeyError, match="not in op_names"):
        VerdictMatrix.from_rows([{"c": D}], op_names=["a"])


def test_from_columns():
    m = VerdictMatrix.from_columns({"a": [1, 0, -1], "b": np.array([0, 0, 1])}, item_ids=["x", "y", "z"])
    np.testing.assert_array_equal(m.column("b"), [0, 0, 1])
    with pytest.raises(ValueError, match="different lengths"):
        VerdictMatrix.from_columns({"a": [1], "b": [1, 0]})


def test_take_select_with_ops():
    m = small()
    t = m.take([2, 0])
    assert t.item_ids == ("i2", "i0")
    np.testing.assert_array_equal(t.to_array(), CODES[[2, 0]])
    s = m.select_ops(["slow"])
    np.testing.assert_array_equal(s.to_array(), CODES[:, [1]])
    extra = VerdictMatrix.from_columns({"new": [1, 1, -1]}, item_ids=m.item_ids)
    both = m.with_ops(extra)
    assert both.op_names == ("crash", "slow", "new")
    np.testing.assert_array_equal(both.column("new"), [1, 1, -1])
    with pytest.raises(ValueError, match="present in both"):
        m.with_ops(s)
    with pytest.raises(ValueError, match="same item ids"):
        m.with_ops(t.select_ops(["crash"]))
    with pytest.raises(IndexError):
        m.take([3])


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: VerdictMatrix.from_array(np.array([[2]])), ValueError, "found 2 at index"),
        (lambda: VerdictMatrix.from_array(np.array([[True]])), TypeError, "must be integers"),
        (lambda: VerdictMatrix.from_array(np.array([[0.5]])), TypeError, "must be integers"),
        (lambda: VerdictMatrix.from_array(np.zeros(3, np.int8)), ValueError, "2-D"),
        (lambda: VerdictMatrix.from_array(np.zeros((2, 1), np.int8), ["x", "x"]), ValueError, "duplicate item id 'x'"),
        (
            lambda: VerdictMatrix.from_array(np.zeros((1, 2), np.int8), op_names=["a", "a"]),
            ValueError,
            "duplicate op name",
        ),
        (lambda: VerdictMatrix.from_array(np.zeros((2, 1), np.int8), ["x"]), ValueError, "1 item ids for 2 rows"),
    ],
)
def test_bad_input_is_explained(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_matrix_is_read_only():
    m = small()
    with pytest.raises(ValueError):
        m.opines_words[0, 0] = 0


def test_packed_from_int8_round_trip():
    codes = np.array([1, 0, -1, 1] * 20, np.int8)
    p = Packed.from_int8(codes)
    np.testing.assert_array_equal(p.to_int8(), codes)
    assert (p.n_opines(), p.n_fires()) == (60, 40)


@settings(deadline=None)
@given(matrices(), st.data())
def test_take_matches_the_array(m, data):
    idx = data.draw(st.lists(st.integers(-m.n_items, m.n_items - 1), max_size=80))
    if len({i % m.n_items for i in idx}) != len(idx):  # item ids must stay unique
        with pytest.raises(ValueError, match="duplicate item id"):
            m.take(idx)
        return
    t = m.take(idx)
    np.testing.assert_array_equal(t.to_array(), m.to_array()[idx].reshape(len(idx), m.n_ops))
    assert t.item_ids == tuple(m.item_ids[i] for i in idx)
