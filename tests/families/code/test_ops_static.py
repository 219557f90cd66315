"""The code pack's root and static ops on real code snippets: drawback, clean and abstain."""

from __future__ import annotations

import pytest

from vx.dsl.verdict import Verdict
from vx.families.code import ops as O
from vx.ops.core import Context

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN


def example(call: str, expected_src: str, function: str | None = None) -> dict:
    import ast

    node = ast.parse(call, mode="eval").body
    args = tuple(ast.literal_eval(a) for a in node.args)
    return {
        "call": call,
        "function": function or node.func.id,
        "args": list(args),
        "expected": ast.literal_eval(expected_src),
        "args_src": repr(args),
        "expected_src": expected_src,
        "source": "assert",
    }


def task(entry="add", examples=(), **extra) -> dict:
    return {
        "id": "T/1",
        "prompt": f"def {entry}(...):",
        "entry_point": entry,
        "examples": list(examples),
        "reference": "def must_never_be_read(): pass",
        **extra,
    }


ADD = task("add", [example("add(2, 3)", "5")])


def run(op, t, output):
    return op(t, output, Context())


# --------------------------------------------------------------------------- root


@pytest.mark.parametrize(
    "output, needle",
    [
        ("def add(a, b):\n    return a +\n", "SyntaxError at line 2"),
        ("    return a + b\n", "line 1 is indented"),
        ("\n# helper\n    x = 1\n", "line 3 is indented"),
        ("", "empty"),
        ("   \n", "empty"),
        ("return 3\n", "SyntaxError"),  # parses, but compile() rejects a return outside a function
        ("def plus(a, b):\n    return a + b\n", "defines no function named add; it defines plus"),
        ("x = 1\n", "no module-level function at all"),
        ("class add:\n    pass\n", "no module-level function at all"),
    ],
)
def test_root_fires_and_names_the_problem(output, needle):
    res = run(O.parses, ADD, output)
    assert res.verdict == D
    assert needle in res.message


def test_root_non_string_output():
    res = run(O.parses, ADD, {"code": "def add(): pass"})
    assert res.verdict == D and "dict" in res.message


def test_root_clean_stores_the_artifact():
    ctx = Context()
    src = "import math\n\ndef helper(x):\n    return x\n\ndef add(a, b):\n    return helper(a) + b\n"
    res = O.parses(ADD, src, ctx)
    assert res.verdict == C and "add (line 6)" in res.message
    art = ctx["artifact"]
    assert isinstance(art, O.Artifact) and art.ok
    assert art.name == "add" and art.function.name == "add" and art.defined == ("helper", "add")


def test_root_accepts_an_alias_and_the_last_definition_wins():
    t = task("new_name", [example("old_name(1)", "1")], aliases=["old_name"])
    ctx = Context()
    assert O.parses(t, "def old_name(x):\n    return x\n", ctx).verdict == C
    assert ctx["artifact"].name == "old_name"
    ctx = Context()
    src = "def add(a):\n    return 0\n\ndef add(a, b):\n    return a + b\n"
    assert O.parses(ADD, src, ctx).verdict == C
    assert len(ctx["artifact"].function.args.args) == 2


def test_root_accepts_module_level_bindings():
    ctx = Context()
    assert O.parses(ADD, "def plus(a, b):\n    return a + b\n\nadd = plus\n", ctx).verdict == C
    assert ctx["artifact"].function.name == "plus"
    ctx = Context()
    assert O.parses(ADD, "add = lambda a, b: a + b\n", ctx).verdict == C
    assert ctx["artifact"].name == "add" and len(O.value_returns(ctx["artifact"].function)) == 1
    assert O.hardcodes_example(ADD, "add = lambda a, b: 5\n", Context()).verdict == D
    # rebinding the name to something else undefines the function
    assert O.parses(ADD, "def add(a, b):\n    return a + b\n\nadd = 3\n", Context()).verdict == D
    # wrapping keeps the function
    src = "import functools\ndef add(a, b):\n    return a + b\nadd = functools.lru_cache(None)(add)\n"
    assert O.parses(ADD, src, Context()).verdict == C


def test_the_examined_function_is_the_one_the_example_calls():
    # the entry point names a helper the prompt started with; the example calls another function
    t = task("merge", [example("merge_sort([2, 1])", "[1, 2]")])
    src = "def merge(a, b):\n    return sorted(a + b)\n\ndef merge_sort(xs):\n    return merge(xs[:1], xs[1:])\n"
    ctx = Context()
    assert O.parses(t, src, ctx).verdict == C
    assert ctx["artifact"].name == "merge_sort" and ctx["artifact"].function.name == "merge_sort"
    # only the entry point defined: examined as before
    ctx = Context()
    assert O.parses(t, "def merge(a, b):\n    return a + b\n", ctx).verdict == C
    assert ctx["artifact"].name == "merge"


def test_ops_recompute_the_artifact_without_the_root():
    res = run(O.wrong_entry_point, ADD, "def add(a, b):\n    return a + b\n")
    assert res.verdict == C


# --------------------------------------------------------------------------- wrong_entry_point


def test_wrong_entry_point_fires_on_another_name():
    res = run(O.wrong_entry_point, ADD, "def addition(a, b):\n    return a + b\n")
    assert res.verdict == D
    assert "add(2, 3)" in res.message and "addition" in res.message


def test_wrong_entry_point_clean_when_the_example_name_is_defined():
    # the example calls the old name; MBPP+ renamed the entry point
    t = task("new_name", [example("old_name(1)", "1")])
    assert run(O.wrong_entry_point, t, "def old_name(x):\n    return x\n").verdict == C
    # a module-level alias binding also defines the name
    assert run(O.wrong_entry_point, ADD, "def plus(a, b):\n    return a + b\nadd = plus\n").verdict == C


def test_wrong_entry_point_abstains():
    assert run(O.wrong_entry_point, ADD, "def add(:\n").verdict == A  # does not parse
    assert run(O.wrong_entry_point, ADD, "x = 3\n").verdict == A  # defines no function at all


# --------------------------------------------------------------------------- reads_stdin


@pytest.mark.parametrize(
    "src, needle",
    [
        ("def add(a, b):\n    n = int(input())\n    return a + n\n", "line 2 calls input()"),
        ("import sys\ndef add(a, b):\n    return int(sys.stdin.readline()) + a\n", "sys.stdin"),
        ("from sys import stdin\ndef add(a, b):\n    return len(stdin.read())\n", "stdin"),
        ("def add(a, b):\n    return len(open(0).read())\n", "opens standard input"),
        (
            "import fileinput\ndef add(a, b):\n    for line in fileinput.input():\n        return line\n",
            "fileinput.input",
        ),
        ("a, b = map(int, input().split())\ndef add(a, b):\n    return a + b\n", "line 1 calls input()"),
    ],
)
def test_reads_stdin_fires(src, needle):
    res = run(O.reads_stdin, ADD, src)
    assert res.verdict == D and needle in res.message


def test_reads_stdin_ignores_the_main_guard_and_other_uses():
    src = "def add(a, b):\n    return a + b\n\nif __name__ == '__main__':\n    print(add(int(input()), 2))\n"
    assert run(O.reads_stdin, ADD, src).verdict == C
    # a local variable or attribute called input is not standard input
    src = "def add(a, b):\n    input = a\n    return input + b\n"
    assert run(O.reads_stdin, ADD, src).verdict == C


def test_reads_stdin_abstains_when_unparsable():
    assert run(O.reads_stdin, ADD, "def add(a, b) return a\n").verdict == A


# --------------------------------------------------------------------------- hardcodes_example


def test_hardcodes_example_unconditional_literal():
    res = run(O.hardcodes_example, ADD, "def add(a, b):\n    return 5\n")
    assert res.verdict == D and "always returns 5" in res.message and "add(2, 3)" in res.message


def test_hardcodes_example_if_chain_on_the_example_arguments():
    t = task("total", [example("total([4, 5, 6])", "15")])
    src = "def total(xs):\n    if xs == [4, 5, 6]:\n        return 15\n    return 0\n"
    res = run(O.hardcodes_example, t, src)
    assert res.verdict == D and "tests xs == [4, 5, 6]" in res.message and "returns 15" in res.message


def test_hardcodes_example_exact_types():
    # the example expects a tuple; returning the list literal is not the example's value
    t = task("pair", [example("pair(1)", "(1, 2)")])
    assert run(O.hardcodes_example, t, "def pair(x):\n    return (1, 2)\n").verdict == D
    assert run(O.hardcodes_example, t, "def pair(x):\n    return [1, 2]\n").verdict == C


def test_hardcodes_example_allows_base_cases_and_real_computation():
    t = task("fact", [example("fact(1)", "1"), example("fact(5)", "120")])
    src = "def fact(n):\n    if n == 1:\n        return 1\n    return n * fact(n - 1)\n"
    assert run(O.hardcodes_example, t, src).verdict == C
    assert run(O.hardcodes_example, ADD, "def add(a, b):\n    return a + b\n").verdict == C


def test_hardcodes_example_abstains():
    assert run(O.hardcodes_example, task("add"), "def add(a, b):\n    return 5\n").verdict == A  # no example
    assert run(O.hardcodes_example, ADD, "def plus(a, b):\n    return 5\n").verdict == A  # no entry point


def test_static_ops_never_read_the_reference():
    class Guard(dict):
        def __getitem__(self, key):
            assert key != "reference", "an op read the task's reference"
            return super().__getitem__(key)

        def get(self, key, default=None):
            assert key != "reference", "an op read the task's reference"
            return super().get(key, default)

    t = Guard(ADD)
    for op in (O.parses, O.wrong_entry_point, O.reads_stdin, O.hardcodes_example):
        op(t, "def add(a, b):\n    return a + b\n", Context())


def test_trivial_values_and_same_value():
    assert all(O.trivial_value(v) for v in (None, True, 0, 1, 2, -1, "", "a", [], {}, ()))
    assert not any(O.trivial_value(v) for v in (3, 2.5, "ab", [0], (1, 2)))
    assert O.same_value([1, (2, 3)], [1, (2, 3)])
    assert not O.same_value([1, (2, 3)], [1, [2, 3]])
    assert not O.same_value(1, 1.0) and not O.same_value(True, 1)
    assert O.same_value(float("nan"), float("nan"))


# --------------------------------------------------------------------------- undefined_name


def test_undefined_name_fires_on_a_missing_import():
    res = run(O.undefined_name, ADD, "def add(a, b):\n    return math.floor(a) + b\n")
    assert res.verdict == D and "math (line 2)" in res.message and "NameError" in res.message


def test_undefined_name_follows_helpers_and_module_code():
    src = "def helper(x):\n    return heapq.nlargest(1, x)\n\ndef add(a, b):\n    return helper([a, b])[0]\n"
    res = run(O.undefined_name, ADD, src)
    assert res.verdict == D and "heapq (line 2)" in res.message
    assert run(O.undefined_name, ADD, "X = undefined_thing\ndef add(a, b):\n    return a + b\n").verdict == D


def test_undefined_name_ignores_unreachable_code_and_defined_names():
    src = (
        "import math\nfrom collections import Counter\nN = 3\n\n"
        "def unused():\n    return numpy.zeros(3)\n\n"
        "def add(a, b):\n    c = Counter([a])\n"
        "    return math.floor(a) + b + N + len(c) - 1 + sum([x for x in [0]])\n\n"
        "if __name__ == '__main__':\n    print(add(zzz, 1))\n"
    )
    res = run(O.undefined_name, ADD, src)
    assert res.verdict == C, res.message
    assert run(O.undefined_name, ADD, "def add(a b):\n").verdict == A


# --------------------------------------------------------------------------- totality (property)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FRAGMENTS = [
    "def add(a, b):\n",
    "    return a + b\n",
    "    return 5\n",
    "    print(a)\n",
    "import math\n",
    "add = lambda a, b: a\n",
    "if a == [2, 3]:\n",
    "    x = input()\n",
    "while True:\n",
    "    pass\n",
    "class C:\n",
    "\n",
    "  ",
    "(",
    ")",
    "'",
    '"""',
    "#",
    "\x00",
    "global g\n",
    "    yield a\n",
]


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=80), st.lists(st.sampled_from(_FRAGMENTS), max_size=8).map("".join)))
def test_static_ops_are_total(source):
    ctx = Context()
    for op in (O.parses, O.wrong_entry_point, O.reads_stdin, O.hardcodes_example, O.undefined_name):
        res = op(ADD, source, ctx)
        assert res.verdict in (D, C, A)
        if op is O.parses and res.verdict == D:
            assert res.message
