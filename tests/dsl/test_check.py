import itertools

import numpy as np
import pytest
from hypothesis import given, settings

from vx.dsl.ast import OpRef
from vx.dsl.check import check
from vx.dsl.compile import evaluate
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse

from .strategies import matrices, trees


def codes(text, known=None):
    return [(p.severity, p.code, p.path) for p in check(parse(text), known)]


def test_clean_expression_has_no_problems():
    assert check(parse("(any crash (vote 2 a b c) (not d))"), ["crash", "a", "b", "c", "d"]) == []


def test_unknown_ops_with_nearest_names():
    problems = check(parse("(any crsh (not timeot) crsh)"), ["crash", "timeout"])
    assert [(p.code, p.path, p.hint) for p in problems if p.code == "unknown-op"] == [
        ("unknown-op", (0,), "did you mean 'crash'?"),
        ("unknown-op", (1, 0), "did you mean 'timeout'?"),
        ("unknown-op", (2,), "did you mean 'crash'?"),
    ]
    assert all(p.severity == "error" for p in problems if p.code == "unknown-op")


def test_without_known_ops_names_are_not_checked():
    assert codes("(any whatever other)") == []


def test_duplicate_children():
    problems = check(parse("(any a (not b) a (vote 2 c c d) (not b))"))
    dups = [(p.path, p.message) for p in problems if p.code == "duplicate-child"]
    assert dups == [
        ((2,), "a appears more than once in (any …); the repeat has no effect"),
        ((3, 1), "c appears more than once in (vote …) and is counted each time"),
        ((4,), "(not b) appears more than once in (any …); the repeat has no effect"),
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("(all x (not x))", [("warning", "never-fires", ())]),
        ("(any x (not x))", [("warning", "never-clean", ())]),
        ("(not (any x (not x)))", [("warning", "never-fires", ())]),
        ("(wvote 0 a@1 b@2)", [("warning", "never-clean", ())]),
        ("(wvote 5 a@1 b@2)", [("warning", "never-fires", ())]),
        ("(all a (all y (not y)))", [("warning", "never-fires", (1,))]),
        # abstain semantics: these look constant in two-valued logic but are not
        ("(any x (not y))", []),
        ("(vote 2 x (not x) y)", []),
        ("(wvote 1 a@1 b@-1)", []),
    ],
)
def test_constant_subtrees(text, expected):
    assert codes(text) == expected


def test_problems_come_in_tree_order():
    problems = check(parse("(any zz (all x (not x)) a a)"), ["a", "x"])
    assert [p.path for p in problems] == sorted(p.path for p in problems)


@settings(deadline=None)
@given(trees(max_leaves=8), matrices())
def test_constancy_warnings_are_sound(e, m):
    # whatever check claims about a subtree holds on any verdict matrix
    for problem in check(e):
        sub = e.at(problem.path)
        verdicts = evaluate(sub, m)
        if problem.code == "never-fires":
            assert not np.any(verdicts == 1)
        elif problem.code == "never-clean":
            assert not np.any(verdicts == 0)


@settings(deadline=None)
@given(trees(max_leaves=6))
def test_a_subtree_not_flagged_can_both_fire_and_be_clean(e):
    flagged = {p.path for p in check(e) if p.code in ("never-fires", "never-clean")}
    ops = e.op_names()
    if len(ops) > 6:
        return
    grid = np.array(list(itertools.product((-1, 0, 1), repeat=len(ops))), np.int8).reshape(-1, len(ops))
    m = VerdictMatrix.from_array(grid, op_names=ops)
    for path, sub in e.walk():
        if isinstance(sub, OpRef) or any(path[: len(f)] == f for f in flagged):
            continue
        verdicts = evaluate(sub, m)
        assert np.any(verdicts == 1) and np.any(verdicts == 0), (path, str(sub))
