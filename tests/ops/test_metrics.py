import numpy as np
import pytest

from vx.dsl.verdict import Final
from vx.metrics import agreement, bootstrap_ci, conflict_matrix, op_summary, paired_permutation_test

F, P, A = Final.FAIL, Final.PASS, Final.ABSTAIN


def test_agreement_against_hand_computed_values():
    verdicts = [F, F, P, A, P, F, P]
    labels = [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, None]
    a = agreement(verdicts, labels)
    # labeled: (F,fail)=tp (F,pass)=fp (P,pass)=tn (A,fail)=fn (P,fail)=fn (F,fail)=tp
    assert (a.tp, a.fp, a.tn, a.fn, a.abstained, a.n) == (2, 1, 1, 2, 1, 6)
    assert a.accuracy == pytest.approx(3 / 6)
    assert a.fail_recall == pytest.approx(2 / 4)
    assert a.pass_recall == pytest.approx(1 / 2)
    assert a.recall_weighted == pytest.approx((2 * 0.5 + 0.5) / 3)
    assert a.balanced_accuracy == pytest.approx(0.5)
    assert a.coverage == pytest.approx(5 / 6)
    # κ: po = .5, p(fail verdict) = 3/6, p(fail label) = 4/6 → pe = .5*.667 + .5*.333 = .5 → κ = 0
    assert a.kappa == pytest.approx(0.0)


def test_recall_weighted_with_one_class_uses_it():
    a = agreement([F, P], [0.0, 0.0])
    assert a.recall_weighted == pytest.approx(0.5)


def test_op_summary_hand_computed():
    # 4 items x 2 ops
    arr = np.array([[1, 0], [1, 1], [-1, 0], [0, -1]], dtype=np.int8)
    labels = [0.0, 0.0, 1.0, 1.0]
    a, b = op_summary(arr, ["a", "b"], labels)
    assert a.coverage == 0.75 and a.fire_rate == 0.5
    assert a.polarity == ("drawback", "clean")
    assert a.overlaps == 0.5  # items 0, 1
    assert a.conflicts == 0.25  # item 0: a fires, b clean
    assert a.accuracy == 1.0 and a.n_labeled == 3
    assert b.accuracy == pytest.approx(2 / 3)  # item0 clean on fail (wrong), item1 right, item2 right
    cm = conflict_matrix(arr)
    assert cm[0, 1] == cm[1, 0] == 0.25 and cm[0, 0] == 0


def test_permutation_test_detects_a_real_difference_and_not_a_null():
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(40), 3)
    a = rng.random(120) < 0.9
    b = rng.random(120) < 0.5
    assert paired_permutation_test(a, b, clusters, n_permutations=2000).p_value < 0.01
    same = paired_permutation_test(a, a, clusters, n_permutations=2000)
    assert same.p_value == 1.0 and same.diff == 0


def test_permutation_respects_clusters():
    # one huge cluster carries the whole difference: with clustering, n_clusters is tiny and p is large
    a = [True] * 10 + [True] * 2
    b = [False] * 10 + [True] * 2
    t = paired_permutation_test(a, b, ["x"] * 10 + ["y", "z"], n_permutations=2000)
    assert t.n_clusters == 3 and t.p_value > 0.2


def test_bootstrap_ci_brackets_the_mean():
    m, lo, hi = bootstrap_ci([0.6, 0.7, 0.8, 0.75, 0.65])
    assert lo <= m <= hi and m == pytest.approx(0.7)
