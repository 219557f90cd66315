"""Peer methods of the quality benchmark (`vx.baselines`) on hand-made verdict matrices."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.baselines import (
    BestSingleOp,
    FitData,
    LogisticRegression,
    MajorityVote,
    MissingDependency,
    Spade,
    any_codes,
    dev_score,
    logistic_fit_numpy,
    majority_codes,
    run_peer,
)

D, C, A = 1, 0, -1
FAIL, PASS = 0.0, 1.0


def fit_data(dev, labels, train=None, forced=None, names=None):
    dev = np.array(dev, dtype=np.int8)
    k = dev.shape[1]
    train = np.zeros((0, k), dtype=np.int8) if train is None else np.array(train, dtype=np.int8)
    labels = np.array(labels, dtype=float)
    if forced is None:  # no row forced: the default
        return FitData(names or tuple("abcdefghij"[:k]), train, dev, labels)
    return FitData(names or tuple("abcdefghij"[:k]), train, dev, labels, forced)


# ---------------------------------------------------------------------------------------------- shared pieces


def test_majority_codes_counts_opining_ops_and_abstains_on_ties():
    votes = np.array([[D, D, C], [D, C, C], [D, C, A], [A, A, A], [D, A, A], [C, A, A]])
    assert majority_codes(votes).tolist() == [D, C, A, A, D, C]


def test_any_codes_follows_the_any_semantics():
    votes = np.array([[D, C], [C, A], [A, A], [A, D]])
    assert any_codes(votes, [0, 1]).tolist() == [D, C, A, D]
    assert any_codes(votes, [0]).tolist() == [D, C, A, A]
    assert any_codes(votes, []).tolist() == [C, C, C, C]


def test_dev_score_weights_missed_failures_twice():
    fail = np.array([True, True, False, False])
    # catches one of two failures, no false alarm: (2*0.5 + 1*1) / 3
    assert dev_score(np.array([D, C, C, C]), fail) == pytest.approx(2 / 3)
    # an abstention counts as pass; a forced row counts as fail
    assert dev_score(np.array([A, A, A, A]), fail, forced=np.array([True, False, False, True])) == pytest.approx(
        (2 * 0.5 + 0.5) / 3
    )


def test_fit_data_validates_its_inputs():
    with pytest.raises(ValueError, match="tri-state"):
        fit_data([[2]], [PASS])
    with pytest.raises(ValueError, match="columns"):
        FitData(("a", "b"), np.zeros((1, 1)), np.zeros((1, 1)), np.array([1.0]))
    with pytest.raises(ValueError, match="probabilities"):
        fit_data([[D]], [1.5])


# ---------------------------------------------------------------------------------------------- best single op


def test_best_single_op_picks_the_op_with_the_best_recall_weighted_dev_agreement():
    # a: catches both failures, one false alarm -> (2*1 + 0.5)/3 = .833
    # b: no false alarm, catches one failure -> (2*.5 + 1)/3 = .667
    # c: perfect on the items it opines on, abstains on a failure -> (2*.5 + 1)/3 = .667
    dev = [[D, D, D], [D, C, A], [D, C, C], [C, C, C]]
    fitted = BestSingleOp().fit(fit_data(dev, [FAIL, FAIL, PASS, PASS]))
    assert fitted.describe().startswith("a;")
    assert fitted.predict(np.array([[C, D, D], [A, D, D]])).tolist() == [C, A]


def test_best_single_op_breaks_ties_by_dev_then_train_coverage_then_name():
    dev = [[D, D, D], [C, A, C]]  # all three: same score (1.0); b opines on fewer dev items
    train = [[A, A, C], [A, A, C]]  # c opines on more train items than a
    fitted = BestSingleOp().fit(fit_data(dev, [FAIL, PASS], train=train))
    assert fitted.describe().startswith("c;")
    fitted = BestSingleOp().fit(fit_data(dev, [FAIL, PASS]))
    assert fitted.describe().startswith("a;")


# ---------------------------------------------------------------------------------------------- majority vote


def test_majority_vote_learns_nothing():
    fitted = MajorityVote().fit(fit_data([[D, C, C]], [FAIL]))
    assert fitted.predict(np.array([[D, D, C], [A, A, A]])).tolist() == [D, A]


# ---------------------------------------------------------------------------------------------- SPADE

LABELS5 = [FAIL] * 5 + [PASS] * 5


def test_spade_picks_the_smallest_conjunction_within_both_bounds():
    pytest.importorskip("scipy")
    #        a  b  c  d
    dev = [
        [D, C, D, C],  # five failures
        [D, C, D, C],
        [D, C, D, C],
        [C, D, D, C],
        [C, D, D, C],
        [C, C, D, D],  # five passes: c falsely fails two (40% > 25%), b one, d one
        [C, C, D, D],
        [C, D, C, C],
        [C, C, C, C],
        [C, C, C, C],
    ]
    fitted = Spade().fit(fit_data(dev, LABELS5))
    assert fitted.describe().startswith("(any a b)")
    assert fitted.predict(np.array(dev)).tolist() == [D] * 5 + [C, C, D, C, C]
    # a looser false-failure bound makes the single op c enough
    assert Spade(tau=0.4).fit(fit_data(dev, LABELS5)).describe().startswith("c;")
    # alpha 0.6 needs three of five failures: a alone does
    assert Spade(alpha=0.6).fit(fit_data(dev, LABELS5)).describe().startswith("a;")


def test_spade_counts_root_failed_rows_as_covered_and_as_false_failures():
    pytest.importorskip("scipy")
    dev = [[D, C]] * 3 + [[C, D]] * 2 + [[C, C]] * 5
    # the root already fails the two failures a misses: a alone covers 100%
    forced = np.array([False] * 3 + [True] * 2 + [False] * 5)
    assert Spade().fit(fit_data(dev, LABELS5, forced=forced)).describe().startswith("a;")
    # the root falsely fails two passes: 40% > 25% whatever is chosen -> empty set, flagged infeasible
    forced = np.array([False] * 5 + [True] * 2 + [False] * 3)
    text = Spade().fit(fit_data(dev, LABELS5, forced=forced)).describe()
    assert text.startswith("(no op") and "infeasible" in text


def test_spade_falls_back_to_the_best_coverage_within_tau_when_infeasible():
    pytest.importorskip("scipy")
    dev = [[D, C, D]] * 2 + [[C, D, C]] * 2 + [[C, C, C]] + [[C, C, D]] * 2 + [[C, C, C]] * 3
    # nothing catches failure #5, so coverage 90% is impossible; c falsely fails two passes
    text = Spade().fit(fit_data(dev, LABELS5)).describe()
    assert text.startswith("(any a b)") and "infeasible" in text


def _brute(dev, fail, forced, alpha, tau):
    n, k = dev.shape
    need = np.ceil(alpha * fail.sum() - 1e-9)
    budget = np.floor(tau * (~fail).sum() + 1e-9)
    best = None
    for size in range(k + 1):
        for cols in itertools.combinations(range(k), size):
            flagged = forced | ((dev[:, list(cols)] == D).any(axis=1) if cols else np.zeros(n, bool))
            cov, ff = int((flagged & fail).sum()), int((flagged & ~fail).sum())
            if cov >= need and ff <= budget:
                key = (size, -cov, ff)
                best = key if best is None or key < best else best
    return best


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda k: st.tuples(
            st.lists(st.lists(st.sampled_from([D, C, A]), min_size=k, max_size=k), min_size=10, max_size=10),
            st.lists(st.booleans(), min_size=10, max_size=10),
            st.sampled_from([0.6, 0.8, 0.9, 1.0]),
            st.sampled_from([0.0, 0.2, 0.25, 0.4]),
        )
    )
)
def test_spade_is_exact_against_brute_force(case):
    pytest.importorskip("scipy")
    from vx.baselines import spade_select

    rows, forced_list, alpha, tau = case
    dev = np.array(rows, dtype=np.int8)
    fail = np.array([True] * 5 + [False] * 5)
    forced = np.array(forced_list)
    x, feasible = spade_select(dev, fail, forced, alpha=alpha, tau=tau)
    best = _brute(dev, fail, forced, alpha, tau)
    assert feasible == (best is not None)
    if best is not None:
        flagged = forced | (any_codes(dev, np.flatnonzero(x)) == D)
        assert (int(x.sum()), -int((flagged & fail).sum()), int((flagged & ~fail).sum())) == best


# ---------------------------------------------------------------------------------------------- logistic regression


def test_logistic_regression_numpy_fits_the_dev_items_and_never_abstains():
    dev = [[D, C], [D, D], [D, C], [C, D], [C, C], [C, D]]
    labels = [FAIL, FAIL, FAIL, PASS, PASS, PASS]
    fitted = LogisticRegression(backend="numpy").fit(fit_data(dev, labels))
    assert fitted.predict(np.array(dev)).tolist() == [D, D, D, C, C, C]
    assert fitted.predict(np.array([[A, A]])).tolist() in ([D], [C])
    assert "numpy" in fitted.describe()


def test_logistic_regression_with_one_class_predicts_it():
    fitted = LogisticRegression(backend="numpy").fit(fit_data([[D], [C]], [PASS, PASS]))
    assert fitted.predict(np.array([[D], [A]])).tolist() == [C, C]
    # a forced (root-failed) failure is not a training row
    fitted = LogisticRegression(backend="numpy").fit(fit_data([[D], [C]], [FAIL, PASS], forced=[True, False]))
    assert fitted.predict(np.array([[D]])).tolist() == [C]


def test_numpy_newton_minimises_the_regularised_log_loss():
    rng = np.random.default_rng(3)
    X = rng.choice([-1.0, 0.0, 1.0], size=(10, 4))
    y = (rng.random(10) < 0.5).astype(float)
    w, b = logistic_fit_numpy(X, y, C=1.0)
    theta = np.append(w, b)
    z = X @ w + b
    p = 1 / (1 + np.exp(-z))
    grad = np.append(X.T @ (p - y) + w, np.sum(p - y))
    assert np.abs(grad).max() < 1e-6  # stationary point of a strictly convex objective = the minimum
    assert np.isfinite(theta).all()


def test_numpy_backend_matches_scikit_learn():
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(7)
    dev = rng.choice([D, C, A], size=(10, 6)).astype(np.int8)
    labels = np.array(LABELS5)
    a = LogisticRegression(backend="numpy").fit(fit_data(dev, labels))
    b = LogisticRegression(backend="sklearn").fit(fit_data(dev, labels))
    assert np.allclose(a.w, b.w, atol=1e-3) and a.b == pytest.approx(b.b, abs=1e-3)
    probe = rng.choice([D, C, A], size=(200, 6)).astype(np.int8)
    assert (a.predict(probe) == b.predict(probe)).mean() > 0.99


# ---------------------------------------------------------------------------------------------- Snorkel (bench extra)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.lists(st.sampled_from([D, C, A]), min_size=4, max_size=4), min_size=1, max_size=30))
def test_majority_vote_is_snorkels_majority_label_voter(rows):
    pytest.importorskip("snorkel")
    from vx.baselines import SnorkelMajority

    votes = np.array(rows, dtype=np.int8)
    data = fit_data(votes[:1], [PASS])
    ours = MajorityVote().fit(data).predict(votes)
    theirs = SnorkelMajority().fit(data).predict(votes)
    assert ours.tolist() == theirs.tolist()


def test_snorkel_label_model_recovers_labels_from_accurate_unlabeled_ops():
    pytest.importorskip("snorkel")
    from vx.baselines import SnorkelLabelModel

    rng = np.random.default_rng(0)
    truth = rng.random(600) < 0.4  # drawback
    cols = []
    for acc, cov in ((0.9, 0.9), (0.85, 0.8), (0.8, 0.9), (0.75, 0.7), (0.9, 0.5)):
        right = rng.random(600) < acc
        v = np.where(right, truth, ~truth).astype(np.int8)
        v[rng.random(600) > cov] = A
        cols.append(v)
    votes = np.stack(cols, axis=1)
    fitted = SnorkelLabelModel(seed=0).fit(FitData(tuple("abcde"), votes, votes[:2], np.array([PASS, PASS])))
    pred = fitted.predict(votes)
    assert ((pred == D) == truth)[pred != A].mean() > 0.85
    acc = dict(zip("abcde", fitted.model.get_weights()))
    assert acc["a"] > acc["d"] and acc["e"] > acc["d"]  # learned which ops are reliable, without labels


def test_snorkel_peers_say_what_to_install_when_missing(monkeypatch):
    import builtins

    from vx.baselines import SnorkelLabelModel

    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name.startswith("snorkel"):
            raise ImportError("No module named 'snorkel'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)
    import sys

    for mod in [m for m in sys.modules if m.startswith("snorkel")]:
        monkeypatch.delitem(sys.modules, mod)
    with pytest.raises(MissingDependency, match=r"vx-verifiers\[bench\]"):
        SnorkelLabelModel().fit(fit_data([[D]], [FAIL], train=[[D]]))


# ---------------------------------------------------------------------------------------------- run_peer


class Spy:
    name = "spy"

    def __init__(self):
        self.data = None

    def fit(self, data):
        self.data = data
        return self

    def predict(self, votes):
        return np.zeros(len(votes), dtype=np.int8)

    def describe(self):
        return "spy"


def test_run_peer_fits_on_train_and_dev_only_and_conjoins_the_root():
    votes = np.array([[D, C], [C, C], [D, D], [C, D], [A, A], [D, D]], dtype=np.int8)
    train = np.array([1, 1, 0, 0, 0, 0], bool)
    dev = np.array([0, 0, 1, 1, 0, 0], bool)  # rows 4-5: locked, predicted only
    root = np.array([C, D, C, D, D, C])
    spy = Spy()
    res = run_peer(spy, votes, ("a", "b"), train=train, dev=dev, dev_labels=[FAIL, PASS], root=root)
    assert spy.data.train.tolist() == [[D, C]]  # the root-failed train row is not the peer's business
    assert spy.data.dev.tolist() == [[D, D], [C, D]]
    assert spy.data.dev_forced.tolist() == [False, True]
    assert res.codes.tolist() == [C, D, C, D, D, C]
    with pytest.raises(ValueError, match="overlap"):
        run_peer(spy, votes, ("a", "b"), train=train, dev=train, dev_labels=[FAIL, PASS])
