"""The docs/design.md §2 table, item by item, for the reference interpreter."""

import pytest

from vx.dsl.ast import All, Any, Not, OpRef, Vote, WVote
from vx.dsl.semantics import evaluate_item, final_verdict
from vx.dsl.verdict import Final, Verdict

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN
a, b, c = OpRef("a"), OpRef("b"), OpRef("c")


def ev(node, **verdicts):
    return evaluate_item(node, verdicts)


@pytest.mark.parametrize(
    "va, vb, any_, all_",
    [
        (D, D, D, D),
        (D, C, D, C),
        (C, C, C, C),
        (D, A, D, D),
        (C, A, C, C),
        (A, A, A, A),
    ],
)
def test_any_and_all(va, vb, any_, all_):
    assert ev(Any([a, b]), a=va, b=vb) is any_
    assert ev(All([a, b]), a=va, b=vb) is all_


@pytest.mark.parametrize("v, expected", [(D, C), (C, D), (A, A)])
def test_not(v, expected):
    assert ev(Not(a), a=v) is expected


@pytest.mark.parametrize(
    "va, vb, vc, vote2",
    [
        (D, D, C, D),
        (D, C, C, C),
        (D, A, A, C),
        (D, D, A, D),
        (A, A, A, A),
        (C, A, A, C),
    ],
)
def test_vote_counts_opining_drawbacks(va, vb, vc, vote2):
    assert ev(Vote(2, [a, b, c]), a=va, b=vb, c=vc) is vote2


def test_wvote_is_exact():
    # 0.1 + 0.7 is 0.7999999999999999 in floating point; vx sums exactly.
    node = WVote("0.8", [a, b], ["0.1", "0.7"])
    assert ev(node, a=D, b=D) is D
    assert ev(node, a=D, b=C) is C
    assert ev(node, a=A, b=A) is A


def test_wvote_negative_weights_and_thresholds():
    node = WVote("-0.5", [a, b], ["1", "-1"])
    assert ev(node, a=C, b=D) is C  # -1 < -0.5
    assert ev(node, a=C, b=C) is D  # 0 >= -0.5: the sum over opining children, firing or not
    assert ev(node, a=D, b=A) is D


def test_missing_op_names_the_op():
    with pytest.raises(KeyError, match="op 'b' has no verdict"):
        ev(Any([a, b]), a=D)


def test_int_codes_are_accepted():
    assert evaluate_item(Not(a), {"a": 1}) is C


@pytest.mark.parametrize(
    "root, expr, final",
    [
        (D, D, Final.FAIL),
        (D, C, Final.FAIL),
        (D, A, Final.FAIL),
        (C, D, Final.FAIL),
        (C, C, Final.PASS),
        (C, A, Final.ABSTAIN),
        (A, D, Final.FAIL),
        (A, C, Final.PASS),
        (A, A, Final.ABSTAIN),
    ],
)
def test_final_verdict(root, expr, final):
    assert final_verdict(root, expr) is final


def test_verdict_codes():
    assert (int(D), int(C), int(A)) == (1, 0, -1)
    assert Final.PASS == "pass" and str(Final.FAIL) == "fail"
