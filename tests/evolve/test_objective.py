"""The objective and the guards against hand-computed cases, and the fast path against the spec."""

import numpy as np
import pytest
from dsl.strategies import NAMES
from dsl.strategies import small_trees as trees
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.evolve.guards import ALL_ABSTAIN, ALL_FAIL, ALL_PASS, VALID, Guards, best_index
from vx.evolve.objective import CONSENSUS_MODES, EvalData, Objective, ObjectiveConfig, reliability_weight

from .helpers import hand_data

CONS = ["a", "b", "c"]


def objective(guards=Guards(), **kw):
    return Objective(hand_data(), guards=guards, consensus_ops=CONS, **kw)


def test_hand_computed_single_op():
    s = objective().score_one(parse("a"))
    # dev finals: d0 FAIL, d1 PASS, d2 PASS, d3 ABSTAIN -> fail recall 1/2, pass recall 1/1
    assert s.a_dev == pytest.approx((2 * 0.5 + 1.0) / 3)
    # consensus: t0 FAIL (a fires: agree), t1 PASS (a clean: agree), t2 root, t3 tie
    assert s.a_train == pytest.approx(1.0)
    assert s.cost == 0 and s.objective == pytest.approx(2 / 3)
    assert s.selectable and s.validity == VALID


def test_hand_computed_missing_fail_evidence_and_weights():
    s = objective().score_one(parse("c"))
    # c opines on d0 (fail, says pass) and d2 (pass, says pass): fail recall 0, pass recall 1
    assert s.a_dev == pytest.approx(1 / 3)
    # reliability weights change the consensus: b at 1 + 10*0.2 = 3 outweighs a on t3 -> PASS
    w = {"a": 1.0, "b": reliability_weight(0.2), "c": 1.0}
    s2 = objective(consensus_weights=w).score_one(parse("a"))
    # t0: fire a+b = 4 vs clean c = 1 -> FAIL; t1 PASS; t3: fire a = 1 vs clean b = 3 -> PASS (a fires: disagree)
    assert s2.a_train == pytest.approx(2 / 3)


def test_abstaining_does_not_buy_agreement():
    #                      r  narrow  w
    rows = {"t0": [0, -1, 1], "t1": [0, 0, 0], "d0": [0, 1, 0], "d1": [0, -1, 1], "d2": [0, 0, 0], "d3": [0, -1, 0]}
    ids = list(rows)
    m = VerdictMatrix.from_array(np.array([rows[i] for i in ids], dtype=np.int8), ids, ["r", "narrow", "w"])
    data = EvalData(
        m,
        np.array([i.startswith("t") for i in ids]),
        np.array([{"d0": 0.0, "d1": 0.0, "d2": 1.0, "d3": 1.0}.get(i, np.nan) for i in ids]),
        "r",
    )
    node = parse("narrow")
    excl = Objective(
        data, consensus_ops=["w"], config=ObjectiveConfig(abstain="exclude", consensus="per-class")
    ).score_one(node)
    # only d0 (fail, fires) and d2 (pass, clean) are opined: perfect; t1 only on train: perfect
    assert (excl.a_dev, excl.a_train) == (1.0, 1.0)
    as_pass = Objective(data, consensus_ops=["w"], config=ObjectiveConfig(consensus="per-class")).score_one(node)
    # d1 (fail) abstained = passed: fail recall 1/2; t0 (consensus FAIL) abstained = passed
    assert as_pass.a_dev == pytest.approx((2 * 0.5 + 1.0) / 3)
    assert as_pass.a_train == pytest.approx(0.5)


def test_per_class_consensus_follows_drawback_semantics():
    # a and c detect class x, b detects y.  t0: x votes a=1 vs c=0 (tie), y: b fires -> FAIL
    # t1: everything clean -> PASS;  t3: x: a fires (c abstains) -> FAIL
    classes = {"a": "x", "b": "y", "c": "x"}
    obj = Objective(
        hand_data(), consensus_ops=CONS, consensus_classes=classes, config=ObjectiveConfig(consensus="per-class")
    )
    assert obj.cons_fail.tolist()[:4] == [True, False, False, True]
    assert obj.cons_pass.tolist()[:4] == [False, True, False, False]
    # the one-vote majority over the same ops calls t3 a tie
    maj = Objective(
        hand_data(), consensus_ops=CONS, consensus_classes=classes, config=ObjectiveConfig(consensus="majority")
    )
    assert maj.cons_fail.tolist()[:4] == [True, False, False, False]
    # b alone: fires on t0 (FAIL: agree), clean on t1 (PASS: agree), clean on t3 (FAIL: disagree)
    assert obj.score_one(parse("b")).a_train == pytest.approx(2 / 3)


def test_without_any_train_consensus_a_train_is_neutral():
    data = hand_data()
    no_train = EvalData(data.matrix, np.zeros_like(data.train), data.dev_p, "r")
    s = Objective(no_train, consensus_ops=CONS).score_one(parse("a"))
    assert s.a_train == 1.0 and s.objective == pytest.approx(s.a_dev)


def test_soft_labels_split_an_item_between_the_classes():
    data = hand_data({"d0": 0.0, "d1": 0.0, "d2": 0.8, "d3": 1.0})
    s = Objective(data, consensus_ops=CONS).score_one(parse("a"))
    # d2 (p=0.8) says PASS: pass class weight 0.8 recalled, fail class gets weight 0.2 unrecalled
    r_fail = 1.0 / (1 + 1 + 0.2)
    r_pass = 0.8 / 0.8
    assert s.a_dev == pytest.approx((2 * r_fail + r_pass) / 3)


def test_complexity_cost_counts_leaves_beyond_three_and_llm_leaves():
    obj = objective(llm_ops=["c"])
    s = obj.score_one(parse("(any a b c a b)"))
    assert s.size == 5
    assert s.cost == pytest.approx(0.001 * 2 + 0.002 * 1)
    assert s.objective == pytest.approx(s.a_dev * s.a_train - s.cost)
    cfg = ObjectiveConfig(w=0.25, op_cost=0.01, op_floor=1)
    s3 = objective(config=cfg).score_one(parse("(any a b)"))
    assert s3.cost == pytest.approx(0.01)
    assert s3.objective == pytest.approx(s3.a_dev * s3.a_train**0.25 - 0.01)


def test_validity_gate_drops_all_pass_all_fail_all_abstain():
    obj = objective()
    never = obj.score_one(parse("(all a (not a))"))  # a and (not a) always disagree: never fires
    assert never.validity == ALL_PASS and not never.selectable
    always = obj.score_one(parse("(any a (not a))"))
    assert always.validity == ALL_FAIL and not always.selectable
    naive = objective(guards=Guards.naive())
    assert naive.score_one(parse("(all a (not a))")).selectable


def test_fail_closed_anchoring_and_the_naive_ablation():
    # z opines on train items only: no usable dev opinion
    closed = objective()
    z = closed.score_one(parse("z"))
    assert not z.usable and not z.selectable
    assert z.a_dev == 0.0
    assert "dev opinion" in z.reason
    nodes = [parse(t) for t in ("a", "c", "z", "(all a (not a))")]
    assert best_index(closed.score(nodes), nodes) == 0  # `a` wins with the guards on
    naive = objective(guards=Guards.naive())
    zs = naive.score_one(parse("z"))
    assert zs.selectable and zs.a_dev == 1.0 and zs.a_train == 1.0  # fail-open: vacuous but perfect
    assert best_index(naive.score(nodes), nodes) == 2  # the naive ablation selects it


def test_a_candidate_abstaining_everywhere_is_invalid():
    base = hand_data()
    arr = base.matrix.to_array()
    arr[:, 4] = -1
    data = base.with_matrix(VerdictMatrix.from_array(arr, base.matrix.item_ids, base.matrix.op_names))
    s = Objective(data, consensus_ops=CONS).score_one(parse("z"))
    assert s.validity == ALL_ABSTAIN and not s.selectable


def test_ties_keep_the_incumbent_then_prefer_small_then_text():
    obj = objective()
    nodes = [parse("(any a a)"), parse("a"), parse("(all a a)")]
    sc = obj.score(nodes)
    assert best_index(sc, nodes, incumbent=0) == 0
    assert best_index(sc, nodes) == 1


# ------------------------------------------------------------------------------------------------
# the vectorised objective equals the per-item reference definition


@st.composite
def datasets(draw):
    n = draw(st.integers(1, 80))
    arr = np.array(
        draw(st.lists(st.lists(st.sampled_from([-1, 0, 1]), min_size=5, max_size=5), min_size=n, max_size=n)),
        dtype=np.int8,
    )
    train = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    p = draw(st.lists(st.sampled_from([0.0, 0.3, 0.5, 1.0]), min_size=n, max_size=n))
    dev_p = np.where(train, np.nan, np.array(p))
    m = VerdictMatrix.from_array(arr, [f"i{i}" for i in range(n)], NAMES)
    return EvalData(m, train, dev_p, "r")


@settings(max_examples=100, deadline=None)
@given(
    datasets(),
    st.lists(trees(), min_size=1, max_size=6),
    st.booleans(),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from([1.0, 2.0, 3.5])),
    st.sampled_from(["pass", "exclude"]),
    st.sampled_from(list(CONSENSUS_MODES)),
    st.lists(st.sampled_from(["x", "y"]), min_size=4, max_size=4),
)
def test_batch_scores_equal_the_reference(data, nodes, closed, weights, abstain, consensus, classes):
    guards = Guards() if closed else Guards.naive()
    obj = Objective(
        data,
        guards=guards,
        consensus_ops=["a", "b", "c", "d"],
        consensus_weights=weights,
        consensus_classes=dict(zip("abcd", classes)),
        llm_ops=["d"],
        config=ObjectiveConfig(abstain=abstain, consensus=consensus),
    )
    scores = obj.score(nodes)
    for i, node in enumerate(nodes):
        ref = obj.reference(node)
        got = scores.get(i)
        assert got.a_dev == pytest.approx(ref.a_dev, abs=1e-12)
        assert got.a_train == pytest.approx(ref.a_train, abs=1e-12)
        assert got.cost == pytest.approx(ref.cost)
        assert got.objective == pytest.approx(ref.objective, abs=1e-12)
        assert (got.usable, got.validity, got.guard, got.selectable) == (
            ref.usable,
            ref.validity,
            ref.guard,
            ref.selectable,
        )


def test_the_corroborated_consensus_takes_no_side_on_a_lone_drawback():
    # t0: a and b fire (FAIL); t3: a fires alone (per-class: FAIL; corroborated: no consensus)
    classes = {"a": "x", "b": "y", "c": "x"}
    per = Objective(
        hand_data(), consensus_ops=CONS, consensus_classes=classes, config=ObjectiveConfig(consensus="per-class")
    )
    cor = Objective(
        hand_data(), consensus_ops=CONS, consensus_classes=classes, config=ObjectiveConfig(consensus="corroborated")
    )
    assert per.cons_fail.tolist()[:4] == [True, False, False, True]
    assert cor.cons_fail.tolist()[:4] == [True, False, False, False]
    assert cor.cons_pass.tolist()[:4] == per.cons_pass.tolist()[:4]
    # a fires on t0 (agree) and t3 (uncounted now); b is clean on t3: no longer a disagreement
    assert cor.score_one(parse("b")).a_train == pytest.approx(1.0)
