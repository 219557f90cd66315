"""Birth gate, leave-one-out marginals and retirement."""

import numpy as np
import pytest

from vx.dsl.parse import parse
from vx.evolve.lifecycle import LifecyclePolicy, OpRecord, birth_gate, leave_out, marginals, update_streaks
from vx.evolve.objective import Objective

from .helpers import hand_data


def masks(n, *idx):
    m = np.zeros(n, dtype=bool)
    m[list(idx)] = True
    return m


def test_birth_gate_needs_half_the_cluster():
    col = np.array([1, 1, 0, 0, 0, 0, 0, 0], dtype=np.int8)
    cluster = masks(8, 0, 1, 2, 3)
    good = masks(8, 4)
    unl = masks(8, 5, 6, 7)
    assert birth_gate(col, cluster, good, unl).admitted  # 2 of 4 is half
    col2 = np.array([1, 0, 0, 0, 0, 0, 0, 0], dtype=np.int8)
    r = birth_gate(col2, cluster, good, unl)
    assert not r.admitted and "1 of 4" in r.reason


def test_birth_gate_stays_clean_on_known_good():
    cluster = masks(8, 0, 1)
    col = np.array([1, 1, 0, 0, 1, 0, 0, 0], dtype=np.int8)
    r = birth_gate(col, cluster, masks(8, 4), masks(8, 5, 6, 7))
    assert not r.admitted and "labelled pass" in r.reason
    # presumed-good train items: up to the tolerance
    col = np.array([1, 1, 0, 0, 0, 1, 0, 0], dtype=np.int8)
    assert birth_gate(col, cluster, masks(8, 4), masks(8, 5, 6, 7), tolerance=0.34).admitted
    assert not birth_gate(col, cluster, masks(8, 4), masks(8, 5, 6, 7), tolerance=0.25).admitted
    # abstaining on known-good is fine
    col = np.array([1, 1, 0, 0, -1, -1, -1, -1], dtype=np.int8)
    assert birth_gate(col, cluster, masks(8, 4), masks(8, 5, 6, 7)).admitted


def test_leave_one_out_marginals_hand_computed():
    obj = Objective(hand_data(), consensus_ops=["a", "b", "c"])
    m = marginals(obj, parse("(any a c)"))
    # A_dev((any a c)) = 2/3; without a it is c alone = 1/3; without c it is a alone = 2/3
    assert m["a"] == pytest.approx(1 / 3)
    assert m["c"] == pytest.approx(0.0)
    # a sole leaf left out leaves no usable dev opinion: fail-closed scores that 0
    assert marginals(obj, parse("a"))["a"] == pytest.approx(obj.score_one(parse("a")).a_dev)
    assert "__vx_abstain__" in str(leave_out(parse("(any a c)"), "a"))


def test_retirement_only_on_harm_after_a_two_round_grace():
    recs = {"a": OpRecord("a", "active", "seed"), "c": OpRecord("c", "active", "seed")}
    pol = LifecyclePolicy()
    # a zero or negative marginal is no evidence of harm: nothing ever becomes due
    for _ in range(6):
        assert update_streaks(recs, {"a": 0.3, "c": 0.0}, {}, policy=pol) == []
    assert update_streaks(recs, {"a": 0.3, "c": -0.1}, {}, policy=pol) == []
    assert recs["c"].streak == 0 and recs["c"].marginal == -0.1
    harm = {"c": "fires on 1 dev item(s) labelled pass (d2)"}
    assert update_streaks(recs, {"a": 0.3, "c": 0.0}, harm, policy=pol) == []
    assert update_streaks(recs, {"a": 0.3}, harm, policy=pol) == []
    assert recs["c"].streak == 2 and recs["c"].marginal is None
    assert update_streaks(recs, {}, harm, policy=pol) == ["c"]
    # a round without harm resets the streak
    recs["c"].streak = 0
    update_streaks(recs, {}, harm, policy=pol)
    update_streaks(recs, {}, {}, policy=pol)
    assert recs["c"].streak == 0


def test_protected_ops_and_the_no_lifecycle_policy_never_retire():
    recs = {"c": OpRecord("c", "active", "seed", streak=5)}
    harm = {"c": "removing it from the incumbent raises S"}
    assert update_streaks(recs, {"c": 0.0}, harm, policy=LifecyclePolicy(), protected=frozenset({"c"})) == []
    assert update_streaks(recs, {"c": 0.0}, harm, policy=LifecyclePolicy.off()) == []


def test_a_shadow_is_promoted_only_when_it_raises_dev_agreement():
    from vx.evolve.lifecycle import promotable

    obj = Objective(hand_data(), consensus_ops=["a", "b", "c"])
    got = promotable(obj, parse("c"), ["a", "z"])
    # (any a c) has A_dev 2/3 > 1/3; z abstains on every dev item and changes nothing
    assert [(name, round(before, 4), round(after, 4)) for name, before, after, _ in got] == [("a", 0.3333, 0.6667)]


def test_birth_gate_needs_real_support():
    # "fires on 1 of a 2-item cluster" is half, but one miss is not a recurring failure class
    col = np.array([1, 0, 0, 0, 0, 0, 0, 0], dtype=np.int8)
    r = birth_gate(col, masks(8, 0, 1), masks(8, 4), masks(8, 5, 6, 7), min_support=2)
    assert not r.admitted and "at least 2" in r.reason
    col = np.array([1, 1, 0, 0, 0, 0, 0, 0], dtype=np.int8)
    assert birth_gate(col, masks(8, 0, 1), masks(8, 4), masks(8, 5, 6, 7), min_support=2).admitted
    assert LifecyclePolicy().min_support == 2


def test_syntax_presence_ops_need_evidence_of_association():
    n = 40
    cluster = masks(n, 0, 1, 2, 3)
    good = masks(n, 4)
    unl = masks(n, *range(10, 40))  # 30 presumed-good train items
    tasks = np.array(["T1", "T1", "T2", "T2"] + ["T9"] * (n - 4), dtype=object)
    col = np.zeros(n, dtype=np.int8)
    col[[0, 1, 2]] = 1
    ok = birth_gate(col, cluster, good, unl, min_support=2, presence=True, cluster_tasks=tasks)
    assert ok.admitted, ok.reason
    # the same construct in failing outputs of one task only: no evidence it goes with the class
    one_task = np.array(["T1"] * n, dtype=object)
    r = birth_gate(col, cluster, good, unl, min_support=2, presence=True, cluster_tasks=one_task)
    assert not r.admitted and "two tasks" in r.reason
    # common in presumed-good code too (a lambda, len(), append()): rejected, while a non-presence op passes
    col2 = col.copy()
    col2[[10, 11, 12, 13, 14]] = 1  # 5 of 30 = 17 %: under the general 25 % tolerance
    assert birth_gate(col2, cluster, good, unl, min_support=2, cluster_tasks=tasks).admitted
    r = birth_gate(col2, cluster, good, unl, min_support=2, presence=True, cluster_tasks=tasks)
    assert not r.admitted and "at most 5%" in r.reason
    # in 2 of 4 cluster items and 1 of 30 good ones: a lift of 15, under a required lift of 20
    col3 = np.zeros(n, dtype=np.int8)
    col3[[0, 2, 10]] = 1
    r = birth_gate(col3, cluster, good, unl, min_support=2, presence=True, cluster_tasks=tasks, presence_lift=20)
    assert not r.admitted and "not specific" in r.reason
