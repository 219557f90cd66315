"""Spider 2.0 result comparison: one test per documented rule, plus laws as properties."""

import datetime as dt
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.sql.compare import columns_match, matches_any, normalize, tables_match, values_equal

GOLD = [(1, "a", 2.5), (2, "b", 3.5)]


def test_column_names_are_ignored():
    # only values are compared; tables_match never receives names, and different names cannot matter
    assert tables_match([(1, "a", 2.5), (2, "b", 3.5)], GOLD)


def test_each_gold_column_may_match_any_predicted_column_in_any_position():
    pred = [(2.5, 1, "a"), (3.5, 2, "b")]
    assert tables_match(pred, GOLD)


def test_extra_predicted_columns_are_allowed():
    pred = [("x", 1, "a", 2.5, None), ("y", 2, "b", 3.5, None)]
    assert tables_match(pred, GOLD)


def test_a_missing_gold_column_fails():
    assert not tables_match([(1, "a"), (2, "b")], GOLD)


def test_one_predicted_column_may_serve_two_equal_gold_columns():
    assert tables_match([(1,), (2,)], [(1, 1), (2, 2)])


def test_row_order_counts_unless_ignore_order():
    pred = [(2, "b", 3.5), (1, "a", 2.5)]
    assert not tables_match(pred, GOLD)
    assert tables_match(pred, GOLD, ignore_order=True)


def test_ignore_order_sorts_each_column_independently():
    # rows are not kept together: Spider 2.0 sorts every column on its own
    pred = [(1, "b"), (2, "a")]
    gold = [(1, "a"), (2, "b")]
    assert not tables_match(pred, gold)
    assert tables_match(pred, gold, ignore_order=True)


def test_numbers_equal_within_absolute_tolerance_1e_2():
    assert values_equal(1.0, 1.009)
    assert values_equal(100.0, 100.009)
    assert not values_equal(1.0, 1.011)
    assert not values_equal(1000.0, 1000.02)  # absolute, not relative
    assert tables_match([(0.3333,)], [(1 / 3,)])


def test_tolerance_survives_sorting_under_ignore_order():
    assert tables_match([(2.004,), (1.001,)], [(1.0,), (2.0,)], ignore_order=True)


def test_null_and_nan_are_zero():
    assert values_equal(None, 0)
    assert values_equal(float("nan"), 0)
    assert values_equal(None, float("nan"))
    assert not values_equal(None, 1)
    assert tables_match([(None,), (2,)], [(0,), (2,)])


def test_decimal_int_float_and_bool_compare_as_numbers():
    assert values_equal(Decimal("2.50"), 2.5)
    assert values_equal(3, 3.0)
    assert values_equal(True, 1)
    assert normalize(Decimal("1.5")) == 1.5


def test_text_compares_exactly():
    assert not values_equal("Alice", "alice")
    assert not values_equal("1", 1)


def test_dates_compare_by_iso_text():
    assert values_equal(dt.date(2021, 1, 5), "2021-01-05")
    assert values_equal(dt.datetime(2021, 1, 5, 10, 0), "2021-01-05 10:00:00")


def test_length_mismatch_fails():
    assert not columns_match([1, 2], [1, 2, 3])
    assert not tables_match([(1,)], [(1,), (1,)], ignore_order=True)


def test_several_gold_tables_any_match_passes():
    golds = [[("a",)], [(1,)]]
    assert matches_any([(1,)], golds)
    assert matches_any([("a",)], golds)
    assert not matches_any([("b",)], golds)
    assert not matches_any([("a",)], [])


def test_condition_cols_limit_which_gold_columns_must_match():
    gold = [(1, "x"), (2, "y")]
    assert not tables_match([(1,), (2,)], gold)
    assert tables_match([(1,), (2,)], gold, condition_cols=[0])


def test_empty_tables_need_widths():
    assert tables_match([], [], pred_width=2, gold_width=1)  # every gold column is an empty column
    assert not tables_match([], [(1,)], pred_width=1)
    assert not tables_match([(1,)], [], gold_width=1)


cells = st.one_of(
    st.integers(-1000, 1000),
    st.text(max_size=3),
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
)


@st.composite
def tables(draw):
    width = draw(st.integers(1, 4))
    return draw(st.lists(st.tuples(*[cells] * width), min_size=1, max_size=6))


@settings(max_examples=80, deadline=None)
@given(tables(), st.randoms())
def test_laws_reflexive_column_permutation_and_extra_columns(t, rnd):
    assert tables_match(t, t)
    order = list(range(len(t[0])))
    rnd.shuffle(order)
    permuted = [tuple(r[i] for i in order) for r in t]
    assert tables_match(permuted, t)
    widened = [r + ("extra",) for r in t]
    assert tables_match(widened, t)


@settings(max_examples=80, deadline=None)
@given(tables(), st.randoms())
def test_law_ignore_order_is_invariant_under_row_shuffles(t, rnd):
    shuffled = list(t)
    rnd.shuffle(shuffled)
    assert tables_match(shuffled, t, ignore_order=True)


@settings(max_examples=60, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(0, 0.0099))
def test_law_shift_below_tolerance_matches(x, d):
    assert values_equal(x, x + d)
    assert not values_equal(x, x + 0.011 + d)
