"""The laws of the vx language (docs/design.md §2), each as its own property test.

"e1 ≡ e2" means: the same verdict on every item of a random verdict matrix (with some
columns abstaining everywhere). Every evaluation goes through both evaluators and checks
that they agree, so each law also exercises fast == reference.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from vx.dsl.ast import All, Any, Node, Not, OpRef, Vote, WVote
from vx.dsl.compile import BatchEvaluator, evaluate
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.dsl.printer import to_text
from vx.dsl.semantics import evaluate_item
from vx.dsl.verdict import Verdict

from .strategies import combinators, identifiers, matrices, trees

ABSTAIN = int(Verdict.ABSTAIN)


def reference(node: Node, m: VerdictMatrix) -> np.ndarray:
    rows = m.to_array()
    return np.array([int(evaluate_item(node, dict(zip(m.op_names, map(int, row))))) for row in rows], dtype=np.int8)


def verdicts(node: Node, m: VerdictMatrix) -> np.ndarray:
    fast = evaluate(node, m)
    np.testing.assert_array_equal(fast, reference(node, m))
    return fast


def same(e1: Node, e2: Node, m: VerdictMatrix) -> None:
    np.testing.assert_array_equal(verdicts(e1, m), verdicts(e2, m))


small_trees = trees(max_leaves=6)


@settings(deadline=None)
@given(trees(max_leaves=16), matrices())
def test_fast_evaluator_equals_reference_on_every_item(e, m):
    fast = evaluate(e, m)
    assert fast.dtype == np.int8 and fast.shape == (m.n_items,)
    np.testing.assert_array_equal(fast, reference(e, m))


@settings(deadline=None)
@given(st.lists(trees(max_leaves=10), min_size=1, max_size=6), matrices(), st.sampled_from([0, 64, 10**9]))
def test_batch_evaluator_with_shared_memo_equals_reference(es, m, memo_bytes):
    ev = BatchEvaluator(m, memo_bytes=memo_bytes)  # no memo, constant eviction, everything kept
    for _ in range(2):  # the second pass is served from the memo
        for e in es:
            np.testing.assert_array_equal(ev.evaluate_int8(e), reference(e, m))


@settings(deadline=None)
@given(trees(names=identifiers, max_leaves=16), st.integers(20, 120))
def test_parse_of_print_is_identity(e, width):
    assert parse(to_text(e, width=width)) == e


@settings(deadline=None)
@given(trees(names=identifiers, max_leaves=16), st.integers(20, 120))
def test_printer_is_idempotent(e, width):
    once = to_text(e, width=width)
    assert to_text(parse(once), width=width) == once


def _shuffled(e: Node, rnd) -> Node:
    if isinstance(e, OpRef):
        return e
    kids = [_shuffled(c, rnd) for c in e.children]
    order = list(range(len(kids)))
    rnd.shuffle(order)
    if isinstance(e, WVote):
        return WVote(e.threshold, [kids[i] for i in order], [e.weights[i] for i in order])
    return e.with_children([kids[i] for i in order])


@settings(deadline=None)
@given(trees(max_leaves=12), matrices(), st.randoms(use_true_random=False))
def test_children_order_never_changes_a_verdict(e, m, rnd):
    same(e, _shuffled(e, rnd), m)


@settings(deadline=None)
@given(small_trees, matrices())
def test_any_and_all_of_one_child_are_the_child(e, m):
    same(Any([e]), e, m)
    same(All([e]), e, m)


@settings(deadline=None)
@given(st.lists(small_trees, min_size=1, max_size=5), matrices())
def test_vote_1_is_any(es, m):
    same(Vote(1, es), Any(es), m)


@settings(deadline=None)
@given(st.lists(small_trees, min_size=1, max_size=5), matrices())
def test_vote_k_of_k_is_all_where_no_child_abstains(es, m):
    opining = np.all([verdicts(c, m) != ABSTAIN for c in es], axis=0)
    v, a = verdicts(Vote(len(es), es), m), verdicts(All(es), m)
    np.testing.assert_array_equal(v[opining], a[opining])


@settings(deadline=None)
@given(small_trees, matrices())
def test_double_negation(e, m):
    same(Not(Not(e)), e, m)


@settings(deadline=None)
@given(st.lists(small_trees, min_size=1, max_size=5), matrices())
def test_de_morgan_not_any_is_all_of_nots(es, m):
    same(Not(Any(es)), All([Not(c) for c in es]), m)


@settings(deadline=None)
@given(st.lists(small_trees, min_size=1, max_size=5), matrices())
def test_de_morgan_not_all_is_any_of_nots(es, m):
    same(Not(All(es)), Any([Not(c) for c in es]), m)


@settings(deadline=None)
@given(combinators(), matrices())
def test_a_node_whose_children_all_abstain_abstains(e, m):
    children = np.array([verdicts(c, m) for c in e.children])
    silent = np.all(children == ABSTAIN, axis=0)
    assert np.all(verdicts(e, m)[silent] == ABSTAIN)


@settings(deadline=None)
@given(trees(max_leaves=8), st.integers(1, 130))
def test_an_expression_over_always_abstaining_ops_abstains_everywhere(e, n):
    silent = VerdictMatrix.from_array(np.full((n, 1), -1, np.int8), op_names=["mute"])
    assert np.all(verdicts(_rename_all(e, "mute"), silent) == ABSTAIN)


def _rename_all(e: Node, name: str) -> Node:
    if isinstance(e, OpRef):
        return OpRef(name)
    return e.with_children(_rename_all(c, name) for c in e.children)


def _without(e: Node, i: int) -> Node:
    kids = e.children[:i] + e.children[i + 1 :]
    if isinstance(e, WVote):
        return WVote(e.threshold, kids, e.weights[:i] + e.weights[i + 1 :])
    if isinstance(e, Vote):
        return Vote(e.k, kids)
    return e.with_children(kids)


@settings(deadline=None)
@given(combinators(min_children=2), matrices(), st.data())
def test_an_abstaining_child_changes_nothing_versus_removing_it(e, m, data):
    # vote K of K children cannot lose a child (K would exceed k); all other shapes can
    assume(not (isinstance(e, Vote) and e.k == len(e.children)))
    i = data.draw(st.integers(0, len(e.children) - 1))
    child_abstains = verdicts(e.children[i], m) == ABSTAIN
    full, reduced = verdicts(e, m), verdicts(_without(e, i), m)
    np.testing.assert_array_equal(full[child_abstains], reduced[child_abstains])


@settings(deadline=None)
@given(st.lists(small_trees, min_size=1, max_size=5), st.data(), matrices())
def test_wvote_with_unit_weights_is_vote(es, data, m):
    k = data.draw(st.integers(1, len(es)))
    same(WVote(k, es, [1] * len(es)), Vote(k, es), m)
