"""False alarms without labels (`vx.evolve.estimates`) and the selection rules that use them: the
pass-recall floor, ties to estimated precision, the birth gate on known-good pseudo-positives, the known
rules as candidates, and the label model on one-op failure classes."""

from __future__ import annotations

import numpy as np
import pytest
from dsl.strategies import small_trees as trees
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.ast import Any as AnyNode
from vx.dsl.ast import OpRef, WVote
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.dsl.semantics import evaluate_item
from vx.dsl.verdict import Verdict
from vx.evolve.estimates import AGREEMENT, QUIET, header_estimates, op_estimates, parse_header_estimates, pass_evidence
from vx.evolve.guards import GUARD_PASS_FLOOR, Guards, best_index
from vx.evolve.labelmodel import fit_label_model
from vx.evolve.lifecycle import birth_gate
from vx.evolve.objective import EvalData, Objective, ObjectiveConfig, engine_objective
from vx.evolve.rules import label_model_vote, seed_or_peers, spade_rule

NAMES = ["r", "a", "b", "c", "d"]


def _matrix(rows, ops):
    return VerdictMatrix.from_array(np.array(rows, dtype=np.int8), [f"i{i}" for i in range(len(rows))], ops)


# ------------------------------------------------------------------------------------------------
# pseudo-positives


def test_pseudo_positives_need_agreement_and_the_gate_or_a_gate_and_quiet():
    ops = ["gate", "agree", "x", "y"]
    rows = [
        [0, 0, 1, 1],  # unanimous, passes its gate: pseudo-positive (agreement) though two ops flag it
        [1, 0, 0, 0],  # unanimous but fails its gate (every attempt prints instead of returning): no
        [0, 1, 0, 0],  # another attempt behaves otherwise: no evidence of a pass
        [0, -1, 1, 0],  # no agreement evidence; passes its gate, one op flags it: quiet
        [0, -1, 1, 1],  # ... two ops flag it: a corroborated failure, not a pass
        [-1, -1, 0, 0],
    ]  # the gate abstains: no quiet evidence
    m = _matrix(rows, ops)
    ev = pass_evidence(m, np.ones(6, bool), reference=["gate", "x", "y"], gate="gate", agreement="agree")
    assert ev.kind.tolist() == [AGREEMENT, 0, 0, QUIET, 0, 0]
    assert ev.known_good().tolist() == [True, False, False, False, False, False]
    # outside the scope (dev, root-failed) nothing is evidence
    scoped = pass_evidence(
        m, np.array([False, True, True, True, True, True]), reference=["x", "y"], gate="gate", agreement="agree"
    )
    assert scoped.kind[0] == 0


def test_without_a_gate_there_is_no_quiet_evidence():
    m = _matrix([[0, 0], [1, 0], [0, 0]], ["x", "y"])
    ev = pass_evidence(m, np.ones(3, bool), reference=["x", "y"])
    assert ev.n == 0 and np.isnan(ev.pass_recall(np.zeros(3, bool)))


def one_op_classes(n: int, k: int = 9, seed: int = 0):
    """A simulation of one-op failure classes: 30 % failures, each of one of ``k`` classes that one precise op detects,
    and one op firing on 25 % of the items at random. Returns (fail, the k precise columns, the random column, rng)."""
    rng = np.random.default_rng(seed)
    fail = rng.random(n) < 0.3
    cls = rng.integers(0, k, n)
    cols = [np.where(fail & (cls == j), rng.random(n) < 0.9, rng.random(n) < 0.005) for j in range(k)]
    return fail, cols, rng.random(n) < 0.25, rng


def test_an_op_that_fires_at_random_is_charged_its_rate_by_the_pseudo_positives():
    n, k = 4000, 9
    fail, cols, rand, rng = one_op_classes(n, k)
    gate = np.where(fail, rng.random(n) < 0.5, rng.random(n) < 0.01)  # the visible example
    votes = np.stack([gate, *cols, rand], axis=1).astype(np.int8)
    names = ["gate"] + [f"o{j}" for j in range(k)] + ["rand"]
    m = VerdictMatrix.from_array(votes, [f"i{i}" for i in range(n)], names)
    ev = pass_evidence(m, np.ones(n, bool), reference=names, gate="gate")
    est = op_estimates(m, ev, names)
    true_rand = rand[~fail].mean()
    assert est["rand"].rate == pytest.approx(true_rand, abs=0.04)
    for j in range(k):  # a precise op is estimated precise
        assert est[f"o{j}"].rate < 0.03


def test_op_estimates_count_only_the_pseudo_positives_an_op_opines_on():
    m = _matrix([[0, 1], [0, -1], [0, 0], [0, 0]], ["gate", "x"])
    ev = pass_evidence(m, np.ones(4, bool), reference=["gate", "x"], gate="gate")
    e = op_estimates(m, ev, ["x"])["x"]
    assert (e.fires, e.n) == (1.0, 3.0) and e.rate == pytest.approx(1 / 3)


def test_the_header_round_trips_the_estimates():
    rows = [{"op": "a", "rate": 0.0523, "n": 310.0}, {"op": "b", "rate": None, "n": 0.0}]
    text = header_estimates(rows)
    assert parse_header_estimates(text) == {"a": (0.0523, 310.0)}
    assert parse_header_estimates("garbage, a x (n y)") == {}


# ------------------------------------------------------------------------------------------------
# the objective: the vectorised estimates equal the per-item reference, and the floor


@st.composite
def datasets(draw):
    n = draw(st.integers(1, 60))
    arr = np.array(
        draw(st.lists(st.lists(st.sampled_from([-1, 0, 1]), min_size=5, max_size=5), min_size=n, max_size=n)),
        dtype=np.int8,
    )
    train = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    p = draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
    m = VerdictMatrix.from_array(arr, [f"i{i}" for i in range(n)], NAMES)
    return EvalData(m, train, np.where(train, np.nan, np.array(p)), "r")


@settings(max_examples=80, deadline=None)
@given(
    datasets(),
    st.lists(trees(), min_size=1, max_size=5),
    st.sampled_from(["pseudo-positives", "label-model"]),
    st.sampled_from([0.0, 0.01, 0.2]),
)
def test_estimated_pass_recall_and_precision_equal_the_reference(data, nodes, estimator, tol):
    statuses = {o: "active" for o in NAMES}
    obj = engine_objective(
        data,
        statuses=statuses,
        marginals={},
        classes={},
        gate="a",
        agreement="b",
        config=ObjectiveConfig(estimator=estimator, pass_tolerance=tol),
        floor_node=nodes[0],
    )
    scores = obj.score(nodes)
    for i, node in enumerate(nodes):
        ref = obj.reference(node)
        got = scores.get(i)
        assert got.pass_recall == pytest.approx(ref.pass_recall, abs=1e-9, nan_ok=True)
        assert got.precision == pytest.approx(ref.precision, abs=1e-9, nan_ok=True)
        assert (got.guard, got.selectable) == (ref.guard, ref.selectable)
    first = scores.get(0)
    assert first.guard != GUARD_PASS_FLOOR  # the floor's own node always meets it


def _floor_data():
    # gate g, ops x (precise) and noisy (fires on correct outputs), the root r; 10 train items, 2 dev items
    ops = ["r", "g", "x", "noisy"]
    rows = [[0, 0, 0, 1]] * 3 + [[0, 0, 0, 0]] * 5 + [[0, 1, 1, 0]] * 2 + [[0, 0, 1, 1], [0, 0, 0, 0]]
    m = _matrix(rows, ops)
    train = np.array([True] * 10 + [False, False])
    dev_p = np.array([np.nan] * 10 + [0.0, 1.0])
    return EvalData(m, train, dev_p, "r")


def test_a_candidate_below_the_pass_recall_floor_is_not_selectable():
    data = _floor_data()
    statuses = {"r": "active", "g": "active", "x": "active", "noisy": "active"}
    seed = parse("(any g x)")
    obj = engine_objective(data, statuses=statuses, marginals={}, classes={}, gate="g", floor_node=seed)
    assert obj.pass_floor == pytest.approx(1.0 - 0.01)
    noisy = obj.score_one(parse("(any g x noisy)"))
    assert noisy.pass_recall == pytest.approx(1 - 3 / 8)  # fires on 3 of the 8 quiet pseudo-positives
    assert noisy.guard == GUARD_PASS_FLOOR and not noisy.selectable
    assert "pass-recall floor" in noisy.reason
    # the tolerance is configurable: 1 turns the floor off
    loose = engine_objective(
        data,
        statuses=statuses,
        marginals={},
        classes={},
        gate="g",
        floor_node=seed,
        config=ObjectiveConfig(pass_tolerance=1.0),
    )
    assert loose.score_one(parse("(any g x noisy)")).selectable
    # and the naive ablation has no floor
    naive = engine_objective(
        data, statuses=statuses, marginals={}, classes={}, gate="g", floor_node=seed, guards=Guards.naive()
    )
    assert naive.score_one(parse("(any g x noisy)")).guard != GUARD_PASS_FLOOR


def test_ties_go_to_the_higher_estimated_precision_not_to_names():
    data = _floor_data()
    obj = Objective(
        data,
        consensus_ops=["g", "x", "noisy"],
        guards=Guards(anchor=False),
        evidence=pass_evidence(data.matrix, data.train, reference=["g", "x", "noisy"], gate="g"),
    )
    nodes = [parse("noisy"), parse("x")]
    sc = obj.score(nodes)
    sc = type(sc)(
        np.zeros(2),
        sc.a_dev,
        sc.a_train,
        sc.cost,
        sc.size,
        sc.usable,
        sc.validity,
        np.ones(2, bool),
        sc.guard,
        sc.pass_recall,
        sc.precision,
    )  # force a tie on the objective
    assert sc.precision[1] > sc.precision[0]
    assert best_index(sc, nodes) == 1  # x: "noisy" would win on the name


# ------------------------------------------------------------------------------------------------
# the birth gate


def test_a_born_op_must_stay_clean_on_the_known_good_pseudo_positives():
    n = 400
    cluster = np.zeros(n, bool)
    cluster[:10] = True
    good = np.zeros(n, bool)
    good[100:300] = True
    column = np.zeros(n, np.int8)
    column[:10] = 1
    column[100:104] = 1  # 4 of 200 known-good pseudo-positives: 2 %
    g = birth_gate(column, cluster, np.zeros(n, bool), np.zeros(n, bool), pseudo_positive=good)
    assert not g.admitted and "pseudo-positives" in g.reason and g.fired_pseudo_positive == 4
    column[101:104] = 0  # 1 of 200: 0.5 %
    assert birth_gate(column, cluster, np.zeros(n, bool), np.zeros(n, bool), pseudo_positive=good).admitted


# ------------------------------------------------------------------------------------------------
# the known rules


def test_seed_or_each_peer_op():
    rules = seed_or_peers(parse("(any a b)"), ["p", "a"])
    assert [str(r) for _, r in rules] == ["seed ∨ p"]
    assert rules[0][0] == AnyNode([OpRef("a"), OpRef("b"), OpRef("p")])


def test_the_label_model_vote_reads_as_its_decision_where_every_op_opines():
    rng = np.random.default_rng(1)
    n = 600
    fail = rng.random(n) < 0.4
    a = np.where(fail, rng.random(n) < 0.8, rng.random(n) < 0.02)
    b = np.where(fail, rng.random(n) < 0.6, rng.random(n) < 0.05)
    c = np.where(fail, rng.random(n) < 0.3, rng.random(n) < 0.2)
    arr = np.stack([np.zeros(n, bool), a, b, c], axis=1).astype(np.int8)
    m = VerdictMatrix.from_array(arr, [f"i{i}" for i in range(n)], ["r", "a", "b", "c"])
    data = EvalData(m, np.ones(n, bool), np.full(n, np.nan), "r")
    obj = Objective(data, consensus_ops=["a", "b", "c"])
    vote = label_model_vote(obj, ["a", "b", "c"])
    assert isinstance(vote, WVote)
    lm = fit_label_model(arr[:, 1:], ["a", "b", "c"], modelled=np.ones(n, bool), anchors=np.full(n, np.nan))
    says = np.array(
        [
            evaluate_item(vote, {o: Verdict(int(v)) for o, v in zip("abc", row)}) is Verdict.DRAWBACK
            for row in arr[:, 1:]
        ]
    )
    agree = (says == (lm.q > 0.5)).mean()
    assert agree > 0.97  # two-decimal weights: the same decision on (almost) every item


def test_spade_rule_covers_the_dev_failures_within_its_bound():
    pytest.importorskip("scipy")
    rows = [[0, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]]
    m = _matrix(rows, ["r", "a", "b"])
    data = EvalData(m, np.zeros(4, bool), np.array([0.0, 0.0, 1.0, 1.0]), "r")
    node, why = spade_rule(Objective(data, consensus_ops=["a", "b"]), ["a", "b"])
    assert why == "" and node == AnyNode([OpRef("a"), OpRef("b")])


# ------------------------------------------------------------------------------------------------
# the label model on one-op failure classes


def test_one_op_classes_share_a_pooled_latent_so_the_failure_rate_is_not_every_firing():
    n, k = 2000, 9
    _fail, cols, rand, _rng = one_op_classes(n, k)
    votes = np.stack([*cols, rand], axis=1).astype(np.int8)
    names = [f"o{j}" for j in range(k + 1)]
    lm = fit_label_model(
        votes,
        names,
        modelled=np.ones(n, bool),
        anchors=np.full(n, np.nan),
        classes=[f"c{j}" for j in range(k)] + ["random"],
    )
    # before pooling, every one-op class was its own latent and the model said 0.81-0.90 of the items fail
    assert lm.prior < 0.5
