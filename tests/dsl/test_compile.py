import numpy as np
import pytest

from vx.dsl.ast import All, Any, Not, OpRef, Vote, WVote
from vx.dsl.compile import BatchEvaluator, evaluate
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse

# every pair of tri-state verdicts for ops a and b, plus c
GRID = np.array([[x, y, z] for x in (1, 0, -1) for y in (1, 0, -1) for z in (1, 0, -1)], np.int8)
M = VerdictMatrix.from_array(GRID, op_names=["a", "b", "c"])


def test_examples_against_the_design_table():
    a, b = GRID[:, 0], GRID[:, 1]
    got = evaluate(parse("(any a b)"), M)
    expected = np.where((a == -1) & (b == -1), -1, ((a == 1) | (b == 1)).astype(np.int8))
    np.testing.assert_array_equal(got, expected)
    got = evaluate(parse("(not a)"), M)
    np.testing.assert_array_equal(got, np.where(a == -1, -1, 1 - a))


def test_wvote_is_exact_where_floats_are_not():
    # 0.1 + 0.7 < 0.8 in floating point; the evaluator scales to integers and gets it right
    m = VerdictMatrix.from_array(np.array([[1, 1], [1, 0]], np.int8), op_names=["a", "b"])
    np.testing.assert_array_equal(evaluate(WVote("0.8", [OpRef("a"), OpRef("b")], ["0.1", "0.7"]), m), [1, 0])


def test_wvote_with_huge_weights_stays_exact():
    huge = 10**30
    m = VerdictMatrix.from_array(np.array([[1, 1], [1, 0], [0, 1]], np.int8), op_names=["a", "b"])
    node = WVote(2 * huge + 1, [OpRef("a"), OpRef("b")], [huge, huge + 1])
    np.testing.assert_array_equal(evaluate(node, m), [1, 0, 0])


def test_memo_reuses_shared_subtrees():
    ev = BatchEvaluator(M)
    shared = parse("(vote 2 a b c)")
    ev.evaluate(Any([shared, OpRef("a")]))
    misses = ev.misses
    result = ev.evaluate(All([shared, Not(OpRef("b"))]))
    assert ev.hits == 1 and ev.misses == misses + 2  # the vote is reused; all and not are new
    assert ev.evaluate(shared) is ev.evaluate(parse("(vote 2 a b c)"))  # equal trees share results
    np.testing.assert_array_equal(result.to_int8(), evaluate(All([shared, Not(OpRef("b"))]), M))


def test_memo_is_bounded():
    ev = BatchEvaluator(M, memo_bytes=3 * 16)  # room for three results of one word per row
    for k in range(1, 4):
        ev.evaluate(Vote(k, [OpRef("a"), OpRef("b"), OpRef("c")]))
    ev.evaluate(Not(OpRef("a")))
    assert ev.memo_entries == 3
    ev.clear()
    assert ev.memo_entries == 0
    assert BatchEvaluator(M, memo_bytes=0).evaluate(Not(OpRef("a"))).n_opines() == 18


def test_results_are_read_only():
    p = BatchEvaluator(M).evaluate(parse("(any a b)"))
    with pytest.raises(ValueError):
        p.opines[0] = 0


def test_unknown_op_names_the_nearest():
    with pytest.raises(KeyError, match="did you mean 'a'"):
        evaluate(parse("(any a2 b)"), M)


def test_empty_matrix():
    m = VerdictMatrix.from_array(np.zeros((0, 1), np.int8), op_names=["a"])
    assert evaluate(parse("(vote 1 a (not a))"), m).shape == (0,)


@pytest.mark.parametrize("scale", [1, 10**25])  # bit-sliced packed sums, and unpacked Python ints
@pytest.mark.parametrize(
    "threshold, weights",
    [
        ("1", ["1", "1", "1"]),
        ("0.5", ["0.25", "-0.5", "0.75"]),
        ("-1", ["-1", "-1", "0.5"]),
        ("3", ["1", "2", "0"]),
        ("0", ["-0.1", "0.2", "-0.3"]),
        ("2.5", ["1.5", "1", "0.1"]),
    ],
)
def test_wvote_matches_the_reference_on_every_combination(scale, threshold, weights):
    from fractions import Fraction

    from vx.dsl.semantics import evaluate_item

    node = WVote(
        Fraction(threshold) * scale, [OpRef("a"), OpRef("b"), OpRef("c")], [Fraction(w) * scale for w in weights]
    )
    expected = [int(evaluate_item(node, dict(zip("abc", map(int, row))))) for row in GRID]
    np.testing.assert_array_equal(evaluate(node, M), expected)
