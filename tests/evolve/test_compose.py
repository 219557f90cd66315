"""Laws of the candidate generators: normal form, mutation, crossover, enumeration."""

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.ast import Node
from vx.dsl.semantics import evaluate_item
from vx.dsl.verdict import Verdict
from vx.evolve.compose import (
    CompositionContext,
    Elite,
    EnumerativeComposer,
    EvolutionaryComposer,
    crossover,
    mutate,
    normalize,
    prune_op,
)

from .test_objective import trees

OPS = ["a", "b", "c", "d"]
ALL_ROWS = [
    dict(zip(OPS, vs)) for vs in itertools.product([Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN], repeat=len(OPS))
]
ALL_ROWS = [{"r": Verdict.CLEAN, **row} for row in ALL_ROWS]


def same_semantics(x: Node, y: Node) -> bool:
    return all(evaluate_item(x, row) == evaluate_item(y, row) for row in ALL_ROWS)


@settings(max_examples=150, deadline=None)
@given(trees())
def test_normal_form_keeps_the_meaning_and_is_idempotent(node):
    n = normalize(node)
    assert same_semantics(node, n)
    assert normalize(n) == n
    assert n.size() <= node.size()


@settings(max_examples=100, deadline=None)
@given(trees(), trees(), st.integers(0, 2**32 - 1))
def test_mutation_and_crossover_give_valid_trees_over_the_allowed_ops(a, b, seed):
    rng = np.random.default_rng(seed)
    for _ in range(5):
        m = mutate(a, OPS, rng)
        if m is not None:
            assert set(m.op_names()) <= set(OPS) | set(a.op_names())
            normalize(m)  # valid by construction: building it raised nothing
    c = crossover(a, b, rng)
    assert set(c.op_names()) <= set(a.op_names()) | set(b.op_names())


@given(trees(), st.sampled_from(OPS))
def test_pruning_removes_exactly_that_op(node, name):
    p = prune_op(node, name)
    if p is None:
        assert set(node.op_names()) == {name}
    else:
        assert name not in p.op_names() and set(p.op_names()) == set(node.op_names()) - {name}


def ctx(ops, seed=0, elites=()):
    return CompositionContext(1, tuple(ops), None, tuple(elites), rng=np.random.default_rng(seed))


def test_enumeration_is_complete_when_it_fits():
    got = EnumerativeComposer(max_size=3, budget=10_000).propose(ctx(OPS))
    texts = {str(n) for n in got}
    assert {"a", "(any a b)", "(all c d)", "(vote 2 a b c)", "(any b c d)"} <= texts
    # 4 singles + 6 pairs x (any, all) + 4 triples x (any, all, vote 2)
    assert len(got) == 4 + 12 + 12


def test_enumeration_samples_within_budget_deterministically():
    ops = [f"o{i}" for i in range(30)]
    a = EnumerativeComposer(max_size=3, budget=2000).propose(ctx(ops, seed=7))
    b = EnumerativeComposer(max_size=3, budget=2000).propose(ctx(ops, seed=7))
    c = EnumerativeComposer(max_size=3, budget=2000).propose(ctx(ops, seed=8))
    assert [str(x) for x in a] == [str(x) for x in b] != [str(x) for x in c]
    assert len(a) <= 30 + 2000


def test_evolutionary_composer_only_uses_selectable_ops():
    from vx.dsl.parse import parse

    elites = [Elite(parse("(any a b)"), 0.5), Elite(parse("(vote 2 a c d)"), 0.4), Elite(parse("(any a zz)"), 0.9)]
    out = EvolutionaryComposer(mutations_per_elite=30, crossovers=30).propose(ctx(OPS, elites=elites))
    assert out and all(set(n.op_names()) <= set(OPS) for n in out)


def test_wvote_is_written_in_its_simplest_equal_form():
    from vx.dsl.parse import parse
    from vx.dsl.printer import to_text

    for text, simple in (
        ("(wvote 1 a@1 b@3)", "(any a b)"),
        ("(wvote 2 a@1 b@1 c@1)", "(vote 2 a b c)"),
        ("(wvote 0.5 a@1)", "a"),
        ("(wvote 1.5 a@1 b@2)", "(wvote 1.5 a@1 b@2)"),
    ):
        node = parse(text)
        assert to_text(normalize(node)) == simple
        assert same_semantics(node, normalize(node))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(OPS), min_size=1, max_size=4, unique=True),
    st.floats(0.1, 4, allow_nan=False).map(lambda x: round(x, 2)),
    st.data(),
)
def test_wvote_simplification_keeps_the_meaning(names, theta, data):
    from vx.dsl.ast import OpRef, WVote

    weights = data.draw(
        st.lists(st.sampled_from([theta, 1.0, 2.0, round(theta / 2, 2), 0.5]), min_size=len(names), max_size=len(names))
    )
    node = WVote(theta, [OpRef(n) for n in names], weights)
    assert same_semantics(node, normalize(node))
