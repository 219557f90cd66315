import pytest

from vx.dsl.check import check
from vx.dsl.parse import parse


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
