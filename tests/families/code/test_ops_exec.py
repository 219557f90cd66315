"""The code pack's exec ops on real code run in the real sandbox: drawback, clean and abstain.

Each candidate costs one sandboxed process (tens of ms); candidates that time out run with
shortened limits.
"""

from __future__ import annotations

import ast

import pytest

from vx.dsl.verdict import Verdict
from vx.families.code import ops as O
from vx.ops.core import Context

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available():
    from vx.sandbox import SandboxUnavailable

    try:
        O.sandbox()
    except SandboxUnavailable as exc:  # pragma: no cover - every Linux box has the rlimits layer
        pytest.skip(f"no sandbox layer works here: {exc}")


@pytest.fixture
def short_limits(monkeypatch):
    from vx.families.code.probes import budgets

    monkeypatch.setattr(budgets, "EXAMPLE_CPU", 0.1)
    monkeypatch.setattr(budgets, "PROBE_CPU_CAP", 0.2)
    monkeypatch.setattr(budgets, "LOAD_CPU", 0.3)
    monkeypatch.setattr(budgets, "RUN_CPU", 1.0)


def example(call: str, expected_src: str) -> dict:
    node = ast.parse(call, mode="eval").body
    args = tuple(ast.literal_eval(a) for a in node.args)
    return {
        "call": call,
        "function": node.func.id,
        "args": list(args),
        "expected": ast.literal_eval(expected_src),
        "args_src": repr(args),
        "expected_src": expected_src,
        "source": "assert",
    }


def task(entry, *examples, **extra) -> dict:
    return {"id": "T/1", "prompt": "", "entry_point": entry, "examples": list(examples), **extra}


TOTAL = task("total", example("total([1, 2, 3])", "6"))
GOOD_TOTAL = "def total(xs):\n    return sum(xs)\n"


def verdicts(t, src, *ops):
    """Run ops on one item with one shared context (as vx.ops.apply does)."""
    ctx = Context()
    O.parses(t, src, ctx)
    return [op(t, src, ctx) for op in ops]


def one(op, t, src):
    return verdicts(t, src, op)[0]


EXEC_OPS = (
    O.crash,
    O.fails_visible_example,
    O.returns_not_print_only,
    O.timeout,
    O.returns_wrong_type,
    O.mutates_argument,
    O.nondeterministic,
)


# --------------------------------------------------------------------------- sharing and honesty


def test_one_sandbox_run_serves_every_exec_op(monkeypatch):
    sb = O.sandbox()
    seen = []
    real = sb.run_calls

    def counting(code, entry, calls, *args, **kwargs):
        seen.append([a for a, _ in calls])
        return real(code, entry, calls, *args, **kwargs)

    monkeypatch.setattr(sb, "run_calls", counting)
    t = task("total", example("total([7, 8, 9])", "424242"))
    res = verdicts(t, GOOD_TOTAL, *EXEC_OPS)
    assert len(seen) == 1, "all exec ops of one item must share one sandbox run"
    assert len(seen[0]) > 3  # the example, its repeat, and mutations
    # the expected value never travels to the child
    assert "424242" not in repr(seen[0])
    assert res[1].verdict == D and "expected 424242" in res[1].message


def test_exec_ops_abstain_when_the_root_failed_or_no_example():
    for op in EXEC_OPS:
        assert one(op, TOTAL, "def summe(xs):\n    return sum(xs)\n").verdict == A, op.name
        assert one(op, TOTAL, "    return sum(xs)\n").verdict == A, op.name
    no_examples = task("total")
    for op in (
        O.crash,
        O.fails_visible_example,
        O.timeout,
        O.returns_wrong_type,
        O.mutates_argument,
        O.nondeterministic,
    ):
        res = one(op, no_examples, GOOD_TOTAL)
        assert res.verdict == A and "no usable example" in res.message, op.name


def test_good_code_is_clean_everywhere():
    for res, op in zip(verdicts(TOTAL, GOOD_TOTAL, *EXEC_OPS), EXEC_OPS):
        assert res.verdict == C, (op.name, res.message)


# --------------------------------------------------------------------------- crash


def test_crash_on_the_example_names_the_call_and_exception():
    res = one(O.crash, TOTAL, "def total(xs):\n    return xs[3]\n")
    assert res.verdict == D
    assert "total([1, 2, 3]) raised IndexError" in res.message and "visible example" in res.message


def test_crash_on_a_reordering_only():
    src = "def total(xs):\n    return sum(xs) + [0, 0][xs[0] - 1]\n"
    assert one(O.fails_visible_example, TOTAL, src).verdict == C
    res = one(O.crash, TOTAL, src)
    assert res.verdict == D and "total([3, 2, 1])" in res.message and "reversed" in res.message


def test_crash_ignores_deliberate_rejection_of_a_reordering():
    src = (
        "def total(xs):\n    if xs != sorted(xs):\n        raise ValueError('needs sorted input')\n    return sum(xs)\n"
    )
    assert one(O.crash, TOTAL, src).verdict == C


def test_crash_while_loading():
    src = "def total(xs):\n    return sum(xs)\n\nprint(total(undefined_name))\n"
    res = one(O.crash, TOTAL, src)
    assert res.verdict == D and "loading the code raised NameError" in res.message and "line 4" in res.message
    res = one(O.fails_visible_example, TOTAL, src)
    assert res.verdict == D and "cannot run" in res.message
    # the candidate kept every op from judging it: evidence against it, never an abstention
    for op in (O.returns_wrong_type, O.mutates_argument, O.nondeterministic, O.timeout):
        res = one(op, TOTAL, src)
        assert res.verdict == D and "cannot run" in res.message


def test_crash_missing_import():
    t = task("root", example("root(16)", "4.0"))
    res = one(O.crash, t, "def root(x):\n    return math.sqrt(x)\n")
    assert res.verdict == D and "NameError" in res.message and "math" in res.message


def test_crash_process_death():
    res = one(O.crash, TOTAL, "import os\ndef total(xs):\n    os._exit(3)\n")
    assert res.verdict == D and "killed its process" in res.message


# --------------------------------------------------------------------------- fails_visible_example


def test_fails_visible_example_wrong_value():
    res = one(O.fails_visible_example, TOTAL, "def total(xs):\n    return sum(xs[1:])\n")
    assert res.verdict == D and res.message == "total([1, 2, 3]) returned 5, expected 6"


def test_fails_visible_example_float_tolerance():
    t = task("third", example("third(0.9)", "0.3"))
    assert one(O.fails_visible_example, t, "def third(x):\n    return 0.1 + 0.2\n").verdict == C
    assert one(O.fails_visible_example, t, "def third(x):\n    return 0.31\n").verdict == D


def test_fails_visible_example_types_matter():
    t = task("pair", example("pair(1)", "(1, 2)"))
    res = one(O.fails_visible_example, t, "def pair(x):\n    return [x, x + 1]\n")
    assert res.verdict == D and "[1, 2]" in res.message
    assert one(O.fails_visible_example, t, "def pair(x):\n    return (x, x + 1)\n").verdict == C


def test_fails_visible_example_exception():
    res = one(O.fails_visible_example, TOTAL, "def total(xs):\n    raise RuntimeError('nope')\n")
    assert res.verdict == D and "RuntimeError: nope" in res.message and "expected 6" in res.message


def test_fails_visible_example_all_examples_checked():
    t = task("sq", example("sq(1)", "1"), example("sq(3)", "9"))
    assert one(O.fails_visible_example, t, "def sq(x):\n    return x * x\n").verdict == C
    res = one(O.fails_visible_example, t, "def sq(x):\n    return x + x - 1\n")
    assert res.verdict == D and "sq(3) returned 5, expected 9" in res.message


# --------------------------------------------------------------------------- returns_not_print_only


def test_prints_instead_of_returning():
    res = one(O.returns_not_print_only, TOTAL, "def total(xs):\n    print(sum(xs))\n")
    assert res.verdict == D
    assert "returned None and printed '6' (the expected value)" in res.message


def test_print_static_fallback_without_examples():
    t = task("total")
    res = one(O.returns_not_print_only, t, "def total(xs):\n    print(sum(xs))\n")
    assert res.verdict == D and "never returns a value but calls print" in res.message
    assert one(O.returns_not_print_only, t, "def total(xs):\n    print(xs)\n    return sum(xs)\n").verdict == C


def test_print_clean_and_abstain():
    src = "def total(xs):\n    print('debug', xs)\n    return sum(xs)\n"
    assert one(O.returns_not_print_only, TOTAL, src).verdict == C
    assert one(O.returns_not_print_only, TOTAL, "def add(xs):\n    print(xs)\n").verdict == A


# --------------------------------------------------------------------------- timeout


def test_timeout_fires_on_an_endless_example(short_limits):
    res = one(O.timeout, TOTAL, "def total(xs):\n    while True:\n        pass\n")
    assert res.verdict == D and "total([1, 2, 3]) did not return" in res.message


def test_timeout_while_loading(short_limits):
    src = "while True:\n    pass\n\ndef total(xs):\n    return sum(xs)\n"
    res, crashed = verdicts(TOTAL, src, O.timeout, O.crash)
    assert res.verdict == D and "loading the code did not finish" in res.message
    assert crashed.verdict == D and "loading the code did not finish" in crashed.message


def test_timeout_clean_reports_the_slowest_call():
    res = one(O.timeout, TOTAL, GOOD_TOTAL)
    assert res.verdict == C and "slowest took" in res.message


# --------------------------------------------------------------------------- returns_wrong_type


@pytest.mark.parametrize(
    "src, needle",
    [
        ("def total(xs):\n    return str(sum(xs))\n", "a str where the example expects an int"),
        ("def total(xs):\n    return None\n", "a NoneType where the example expects an int"),
        ("def total(xs):\n    return map(int, xs)\n", "returned a map object"),
    ],
)
def test_returns_wrong_type_fires(src, needle):
    res = one(O.returns_wrong_type, TOTAL, src)
    assert res.verdict == D and needle in res.message


def test_returns_wrong_type_nested_and_compatible_numbers():
    t = task("pairs", example("pairs(2)", "[(0, 1), (1, 2)]"))
    res = one(O.returns_wrong_type, t, "def pairs(n):\n    return [[i, i + 1] for i in range(n)]\n")
    assert res.verdict == D and "a list where the example expects a tuple (at index 0)" in res.message
    assert one(O.returns_wrong_type, TOTAL, "def total(xs):\n    return float(sum(xs)) + 1\n").verdict == C


def test_returns_wrong_type_fires_when_nothing_returned():
    res = one(O.returns_wrong_type, TOTAL, "def total(xs):\n    raise ValueError\n")
    assert res.verdict == D and "no example call returned a value" in res.message


# --------------------------------------------------------------------------- mutates_argument


def test_mutates_argument():
    res = one(O.mutates_argument, TOTAL, "def total(xs):\n    xs.append(0)\n    return sum(xs)\n")
    assert res.verdict == D and "changed its argument 1 from [1, 2, 3] to [1, 2, 3, 0]" in res.message
    res = one(O.mutates_argument, TOTAL, "def total(xs):\n    xs.sort(reverse=True)\n    return sum(xs)\n")
    assert res.verdict == D


def test_mutates_argument_clean_and_abstain():
    assert one(O.mutates_argument, TOTAL, "def total(xs):\n    ys = sorted(xs)\n    return sum(ys)\n").verdict == C
    t = task("add", example("add(1, 2)", "3"))
    assert one(O.mutates_argument, t, "def add(a, b):\n    return a + b\n").verdict == A


# --------------------------------------------------------------------------- nondeterministic


def test_nondeterministic_random():
    src = "import random\ndef total(xs):\n    return sum(xs) + random.random()\n"
    res = one(O.nondeterministic, TOTAL, src)
    assert res.verdict == D and "the first time" in res.message and "uses random" in res.message


def test_nondeterministic_state_between_calls():
    src = "def total(xs, seen=[]):\n    seen.extend(xs)\n    return sum(seen)\n"
    res = one(O.nondeterministic, TOTAL, src)
    assert res.verdict == D and "gave 6 the first time and 12 the second time" in res.message


def test_nondeterministic_clean_and_abstain(short_limits):
    src = "import random\ndef total(xs):\n    random.seed(1)\n    return sum(xs) + random.randint(0, 0)\n"
    assert one(O.nondeterministic, TOTAL, src).verdict == C
    res = one(O.nondeterministic, TOTAL, "def total(xs):\n    while True: pass\n")
    assert res.verdict == D and "finished twice" in res.message
    # no example (so no repeated call): no opinion on this kind of task
    assert one(O.nondeterministic, task("add"), "def add(a, b):\n    return a + b\n").verdict == A


def test_every_message_of_a_drawback_is_specific():
    src = "def total(xs):\n    print(xs)\n"
    for res in verdicts(TOTAL, src, *EXEC_OPS):
        if res.verdict == D:
            assert "total([1, 2, 3])" in res.message


def test_fails_visible_example_uses_evalplus_special_oracles():
    # MBPP+ compares similar_elements' output as a set, also when the task was renamed
    ex = example("similar_elements((3, 4, 5, 6), (5, 7, 4, 10))", "(4, 5)")
    src = "def {name}(a, b):\n    return tuple(sorted(set(a) & set(b), reverse=True))\n"
    plus = task("similar_elements", ex, id="Mbpp/2")
    assert one(O.fails_visible_example, plus, src.format(name="similar_elements")).verdict == C
    renamed = dict(plus, entry_point="common", meta={"evalplus_entry_point": "similar_elements"})
    renamed["examples"] = [dict(ex, call=ex["call"].replace("similar_elements", "common"), function="common")]
    assert one(O.fails_visible_example, renamed, src.format(name="common")).verdict == C
    # elsewhere, order matters
    other = task("similar_elements", ex, id="T/9")
    assert one(O.fails_visible_example, other, src.format(name="similar_elements")).verdict == D


def test_exec_ops_call_the_function_the_example_calls():
    t = task("merge", example("merge_sort([3, 1, 2])", "[1, 2, 3]"))
    src = "def merge(a, b):\n    return sorted(a + b)\n\ndef merge_sort(xs):\n    return merge(xs[:1], xs[1:])\n"
    crashed, failed = verdicts(t, src, O.crash, O.fails_visible_example)
    assert crashed.verdict == C and failed.verdict == C, (crashed.message, failed.message)


@pytest.mark.parametrize(
    "tail",
    ["del total\n", "globals().pop('total')\n", "total = object()\n", "exec('del total')\n"],
    ids=["del", "globals-pop", "rebind", "exec-del"],
)
def test_a_vanished_entry_point_is_sabotage_not_an_abstention(tail):
    # the attack: the root saw `total`, the run did not: every exec op says so as a drawback
    src = "def total(xs):\n    return 0\n" + tail
    for res in verdicts(TOTAL, src, *EXEC_OPS):
        assert res.verdict == D and "sabotaged harness" in res.message, res
    from vx.families.code.ops.taxonomy import classify_by_evidence

    assert classify_by_evidence(TOTAL, src) == "sabotaged_harness"


def test_a_value_vx_cannot_show_is_judged_not_abstained():
    res = one(O.fails_visible_example, TOTAL, "def total(xs):\n    return 10 ** 5000\n")
    assert res.verdict == D and "digits" in res.message
