from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.ast import KEYWORDS, All, Any, Not, OpRef, Vote, WVote, to_fraction

from .strategies import trees

a, b, c = OpRef("a"), OpRef("b"), OpRef("c")
TREE = Any([a, Vote(2, [b, c, Not(a)]), WVote("0.5", [c], [1])])


def test_structural_equality_and_hash():
    twin = Any(
        (OpRef("a"), Vote(2, (OpRef("b"), OpRef("c"), Not(OpRef("a")))), WVote(Fraction(1, 2), [OpRef("c")], ["1"]))
    )
    assert TREE == twin and hash(TREE) == hash(twin)
    assert Any([a]) != All([a])
    assert len({TREE, twin, Any([a])}) == 2


def test_nodes_are_immutable():
    with pytest.raises(AttributeError):
        TREE.children = ()  # type: ignore[misc]


def test_measures():
    assert TREE.size() == 5
    assert TREE.leaves() == ("a", "b", "c", "a", "c")
    assert TREE.op_names() == ("a", "b", "c")
    assert TREE.depth() == 4
    assert a.depth() == 1 and a.size() == 1
    assert TREE.node_count() == 9


def test_walk_is_preorder_with_paths():
    walked = [(path, type(n).__name__) for path, n in TREE.walk()]
    assert walked == [
        ((), "Any"),
        ((0,), "OpRef"),
        ((1,), "Vote"),
        ((1, 0), "OpRef"),
        ((1, 1), "OpRef"),
        ((1, 2), "Not"),
        ((1, 2, 0), "OpRef"),
        ((2,), "WVote"),
        ((2, 0), "OpRef"),
    ]


def test_at_and_replace_at():
    assert TREE.at((1, 2, 0)) == a
    new = TREE.replace_at((1, 2, 0), OpRef("z"))
    assert new.at((1, 2, 0)) == OpRef("z")
    assert TREE.at((1, 2, 0)) == a  # the original is untouched
    assert new.children[0] is TREE.children[0]  # untouched subtrees are shared
    assert TREE.replace_at((), b) == b
    assert new.at((2,)) == TREE.at((2,))
    with pytest.raises(IndexError):
        TREE.at((5,))
    with pytest.raises(IndexError):
        TREE.replace_at((0, 0), b)


@settings(deadline=None)
@given(trees(), st.data())
def test_replace_at_every_path_changes_only_that_subtree(e, data):
    paths = [p for p, _ in e.walk()]
    path = data.draw(st.sampled_from(paths))
    new = e.replace_at(path, OpRef("replaced"))
    assert new.at(path) == OpRef("replaced")
    for p, node in e.walk():
        if p[: len(path)] != path and path[: len(p)] != p:  # neither inside nor above the path
            assert new.at(p) == node


@settings(deadline=None)
@given(trees())
def test_size_counts_leaves_and_walk_visits_every_node(e):
    assert e.size() == len(e.leaves()) == sum(1 for _, n in e.walk() if isinstance(n, OpRef))
    assert set(e.op_names()) == set(e.leaves())
    assert e.depth() == 1 + max(len(p) for p, _ in e.walk())


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: OpRef("any"), "reserved combinator keyword"),
        (lambda: OpRef("1abc"), "not a valid op name"),
        (lambda: OpRef("a b"), "not a valid op name"),
        (lambda: Any([]), r"\(any\) needs at least one child"),
        (lambda: All(()), r"\(all\) needs at least one child"),
        (lambda: Vote(0, [a]), "vote K=0 is out of range"),
        (lambda: Vote(3, [a, b]), "vote K=3 is out of range"),
        (lambda: WVote(1, [a, b], [1]), "2 children but 1 weights"),
        (lambda: WVote(Fraction(1, 3), [a], [1]), "no finite decimal expansion"),
        (lambda: WVote(1, [a], [float("nan")]), "must be finite"),
        (lambda: WVote(Decimal("Infinity"), [a], [1]), "not a number"),
        (lambda: WVote("abc", [a], [1]), "not a number"),
        (lambda: Not(a).with_children([a, b]), "exactly one child"),
    ],
)
def test_invalid_nodes_cannot_be_built(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize(
    "build",
    [lambda: OpRef(3), lambda: Any(["a"]), lambda: Vote(True, [a]), lambda: WVote(True, [a], [1]), lambda: Not("a")],
)
def test_wrong_types_are_rejected(build):
    with pytest.raises(TypeError):
        build()


def test_numbers_are_exact_fractions():
    assert to_fraction(0.1) == Fraction(1, 10)  # the float's shortest repr, not its binary value
    assert to_fraction("-1.25") == Fraction(-5, 4)
    assert WVote("0.3", [a, b], [0.1, "0.2"]).weights == (Fraction(1, 10), Fraction(1, 5))


def test_keywords():
    assert KEYWORDS == {"any", "all", "not", "vote", "wvote"}


def test_str_is_canonical_text():
    assert str(TREE) == "(any a (vote 2 b c (not a)) (wvote 0.5 c@1))"
