"""The Dawid–Skene label model of the op pool (`vx.evolve.labelmodel`)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.evolve.labelmodel import fit_label_model


def simulate(n, sens, fpr, prior, seed=0, abstain=0.0):
    rng = np.random.default_rng(seed)
    fail = rng.random(n) < prior
    p = np.where(fail[:, None], np.array(sens)[None, :], np.array(fpr)[None, :])
    votes = (rng.random((n, len(sens))) < p).astype(np.int8)
    votes[rng.random(votes.shape) < abstain] = -1
    return votes, fail


def test_it_recovers_sensitivity_and_false_alarm_rates_of_independent_detectors():
    sens, fpr = [0.8, 0.6, 0.3, 0.9], [0.02, 0.05, 0.01, 0.10]
    votes, fail = simulate(4000, sens, fpr, 0.6, abstain=0.1)
    n = len(fail)
    lm = fit_label_model(votes, list("abcd"), modelled=np.ones(n, bool), anchors=np.full(n, np.nan))
    assert lm.converged
    assert lm.sens == pytest.approx(sens, abs=0.05)
    assert lm.fpr == pytest.approx(fpr, abs=0.03)
    assert lm.prior == pytest.approx(0.6, abs=0.04)
    acc = ((lm.q >= 0.5) == fail).mean()
    assert acc > 0.9


@pytest.mark.parametrize("classes", [None, ["x", "y"]])
def test_anchored_items_keep_their_label_and_unmodelled_items_have_none(classes):
    votes, fail = simulate(200, [0.8, 0.5], [0.05, 0.05], 0.5, seed=1)
    n = len(fail)
    anchors = np.full(n, np.nan)
    anchors[:10] = fail[:10].astype(float)
    modelled = np.ones(n, bool)
    modelled[-5:] = False
    lm = fit_label_model(votes, ["a", "b"], modelled=modelled, anchors=anchors, classes=classes)
    assert lm.q[:10].tolist() == fail[:10].astype(float).tolist()
    assert np.isnan(lm.q[-5:]).all() and not np.isnan(lm.q[:-5]).any()


def test_a_dev_pass_charges_the_false_alarm_rate_of_a_lone_detector():
    # one op alone in its class: unlabeled data cannot tell its precision; dev passes it fires on can
    rng = np.random.default_rng(5)
    votes = (rng.random((300, 1)) < 0.2).astype(np.int8)
    anchors = np.full(300, np.nan)
    fired = np.flatnonzero(votes[:, 0] == 1)[:10]
    anchors[fired] = 0.0  # ten of its drawbacks are on outputs labelled pass
    lm = fit_label_model(votes, ["lone"], modelled=np.ones(300, bool), anchors=anchors, classes=["x"])
    free = fit_label_model(votes, ["lone"], modelled=np.ones(300, bool), anchors=np.full(300, np.nan), classes=["x"])
    assert lm.fpr[0] > free.fpr[0] + 0.02


def test_an_op_that_fires_where_nothing_else_agrees_is_charged_for_it():
    # three agreeing detectors, and "lone", which fires on 30 % of the items at random
    votes, fail = simulate(3000, [0.8, 0.7, 0.75], [0.02, 0.02, 0.02], 0.5, seed=2)
    rng = np.random.default_rng(3)
    lone = (rng.random(len(fail)) < 0.3).astype(np.int8)[:, None]
    lm = fit_label_model(
        np.hstack([votes, lone]), list("abcl"), modelled=np.ones(len(fail), bool), anchors=np.full(len(fail), np.nan)
    )
    assert lm.fpr[3] > 0.2 and lm.fpr[:3].max() < 0.05
    # its drawback alone does not make an item fail
    alone = (votes.sum(axis=1) == 0) & (lone[:, 0] == 1)
    assert (lm.q[alone] < 0.5).all()


def test_a_precise_specialist_is_believed_where_it_fires_alone_by_the_class_conditional_model():
    # "spec" catches a kind of failure nothing else sees, and (almost) never fires on passes
    rng = np.random.default_rng(4)
    n = 3000
    fail = rng.random(n) < 0.6
    gross = fail & (rng.random(n) < 0.7)  # failures the others see
    subtle = fail & ~gross
    a = np.where(gross, rng.random(n) < 0.9, rng.random(n) < 0.01)
    b = np.where(gross, rng.random(n) < 0.8, rng.random(n) < 0.02)
    spec = np.where(subtle, rng.random(n) < 0.5, np.where(gross, rng.random(n) < 0.5, rng.random(n) < 0.005))
    votes = np.stack([a, b, spec], axis=1).astype(np.int8)
    alone = ~a & ~b & spec
    assert alone.sum() > 50 and fail[alone].mean() > 0.9
    # class-conditional: a's and b's clean verdicts say nothing about spec's class
    lm = fit_label_model(
        votes,
        ["a", "b", "spec"],
        modelled=np.ones(n, bool),
        anchors=np.full(n, np.nan),
        classes=["gross", "gross", "subtle"],
    )
    assert (lm.q[alone] > 0.5).mean() > 0.9
    # a class of one op has no other op to be compared with: it shares the pooled latent
    assert lm.classes == ("gross", "*pooled*")
    # the classic one-latent model explains the data by the gross failures alone and charges spec
    # for the subtle ones (conditional independence is broken: a and b see only gross failures)
    flat = fit_label_model(votes, ["a", "b", "spec"], modelled=np.ones(n, bool), anchors=np.full(n, np.nan))
    assert (flat.q[alone] < 0.5).all() and flat.fpr[2] > 0.1 > lm.fpr[2]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.sampled_from([-1, 0, 1]), min_size=3, max_size=3), min_size=n, max_size=n),
            st.lists(st.sampled_from([np.nan, 0.0, 1.0]), min_size=n, max_size=n),
            st.permutations(list(range(n))),
        )
    )
)
def test_posteriors_are_probabilities_and_follow_the_items(case):
    rows, anchors, perm = case
    votes = np.array(rows, dtype=np.int8)
    anchors = np.array(anchors, dtype=float)
    n = len(rows)
    classes = [None, ["x", "y", "x"]][len(rows) % 2]
    lm = fit_label_model(votes, ["a", "b", "c"], modelled=np.ones(n, bool), anchors=anchors, classes=classes)
    assert ((lm.q >= 0) & (lm.q <= 1)).all()
    assert ((lm.sens > 0) & (lm.sens < 1) & (lm.fpr > 0) & (lm.fpr < 1)).all()
    perm = np.array(perm)
    again = fit_label_model(
        votes[perm], ["a", "b", "c"], modelled=np.ones(n, bool), anchors=anchors[perm], classes=classes
    )
    assert again.q == pytest.approx(lm.q[perm], abs=1e-6)
