"""Example invariants (vx.families.code.ops.invariants): the inference laws (hypothesis), named examples, and the
op and its template end to end through the sandbox."""

from __future__ import annotations

import ast
import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.verdict import Verdict
from vx.families.code import ops as O
from vx.families.code.ops import invariants as I
from vx.ops.core import Context
from vx.ops.specs import TEMPLATES, SpecError, op_from_spec

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN


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


def task(entry, *examples, tid="T/inv") -> dict:
    return {"id": tid, "prompt": "", "entry_point": entry, "examples": list(examples)}


def kinds(pairs, **kw) -> dict:
    return {(i.kind, i.arg): i for i in I.infer_from(pairs, **kw)}


# --------------------------------------------------------------------------- the laws (hypothesis)

_scalars = st.integers(-20, 20)
_lists = st.lists(_scalars, max_size=6)
_FUNCS = {
    "sorted": lambda xs: sorted(xs),
    "reversed": lambda xs: xs[::-1],
    "len": lambda xs: len(xs),
    "sum": lambda xs: sum(xs),
    "positives": lambda xs: [x for x in xs if x > 0],
    "identity": lambda xs: list(xs),
    "constant": lambda xs: 3,
    "head": lambda xs: xs[:2],
    "doubled": lambda xs: xs + xs,
}


@st.composite
def example_sets(draw):
    """(arguments, expected) pairs of one list argument: a real function's, or arbitrary outputs."""
    inputs = draw(st.lists(_lists, min_size=1, max_size=5))
    if draw(st.booleans()):
        fn = _FUNCS[draw(st.sampled_from(sorted(_FUNCS)))]
        return [((xs,), fn(xs)) for xs in inputs]
    outs = draw(st.lists(st.one_of(_scalars, _lists, st.text(max_size=4)), min_size=len(inputs), max_size=len(inputs)))
    return [((xs,), o) for xs, o in zip(inputs, outs)]


@settings(max_examples=300, deadline=None)
@given(example_sets())
def test_every_inferred_invariant_holds_on_every_example(pairs):
    for inv in I.infer_from(pairs):
        assert inv.support >= I.MIN_SUPPORT
        for args, out in pairs:
            assert I.check_value(inv, args, out) is not False, (inv, args, out)
        if inv.kind == "monotone":
            got = I._monotone_direction(pairs, inv.arg)
            assert got is not None and got[0] == inv.detail


@settings(max_examples=300, deadline=None)
@given(example_sets())
def test_inference_is_deterministic_and_reads_only_its_input(pairs):
    before = copy.deepcopy(pairs)
    first = I.infer_from(pairs)
    assert pairs == before
    assert I.infer_from(copy.deepcopy(pairs)) == first


@settings(max_examples=200, deadline=None)
@given(_lists, st.one_of(_scalars, _lists, st.text(max_size=4)))
def test_one_example_supports_nothing(xs, out):
    assert I.infer_from([((xs,), out)]) == ()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 6), st.lists(st.integers(-5, 5), min_size=2, max_size=5), st.data())
def test_lengths_that_never_vary_support_no_length_relation(n, seeds, data):
    """All arguments of one length: the output's length may just be a constant ("length is 3")."""
    pairs = []
    for s in seeds:
        xs = data.draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n))
        pairs.append(((xs,), [s] * n))
    found = {k for k, _ in kinds(pairs)}
    assert not found & {"length_eq_arg", "length_le_arg", "length_ge_arg"}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=2), min_size=2, max_size=5))
def test_outputs_that_cannot_be_unsorted_support_no_sorted(outs):
    """Outputs of at most two elements: sorted by chance too often to be evidence."""
    pairs = [(([1, 2, 3, i],), o) for i, o in enumerate(outs)]
    assert "sorted" not in {k for k, _ in kinds(pairs)}


# --------------------------------------------------------------------------- named examples


def test_three_lists_of_three_do_not_make_length_three():
    pairs = [(([1, 2, 3],), [3, 2, 1]), (([4, 5, 6],), [6, 5, 4]), (([7, 8, 9],), [9, 8, 7])]
    found = kinds(pairs)
    assert ("length_eq_arg", 0) not in found
    assert ("permutation_arg", 0) in found  # the elements relation does have support


def test_sort_even_invariants():
    pairs = [(([1, 2, 3],), [1, 2, 3]), (([5, 6, 3, 4],), [3, 6, 5, 4])]
    found = kinds(pairs)
    assert found[("length_eq_arg", 0)].text == "every example returns a list as long as its argument"
    assert ("permutation_arg", 0) in found and ("sub_multiset_arg", 0) in found
    assert "sorted" not in {k for k, _ in found}  # [3, 6, 5, 4] is not sorted
    assert ("equals_arg", 0) not in found


def test_sorted_needs_outputs_that_could_be_unsorted():
    assert ("sorted", -1) in kinds([(([3, 1, 2],), [1, 2, 3]), (([9, 7, 8, 5],), [5, 7, 8, 9])])
    assert ("sorted", -1) not in kinds([(([3, 1],), [1, 3]), (([9, 7],), [7, 9])])  # 1/2 x 1/2 by chance


def test_length_is_int_argument_and_le_relation():
    found = kinds([((3,), [1, 2, 3]), ((5,), [1, 2, 3, 4, 5])])
    assert ("length_is_arg", 0) in found
    le = kinds([(([1, -2, 3],), [1, 3]), (([4, 5],), [4, 5]), (([-1],), [])])
    assert ("length_le_arg", 0) in le and ("sub_multiset_arg", 0) in le
    assert ("subsequence_arg", 0) not in le  # [1, 3] keeps its order by chance one time in two
    kept = kinds([(([5, -1, 4, 3, -2, 2, 1],), [5, 4, 3, 2, 1]), (([4, 5],), [4, 5]), (([-1],), [])])
    assert ("subsequence_arg", 0) in kept and ("permutation_arg", 0) not in kept


def test_numeric_invariants_and_monotone():
    found = kinds([((1,), 1), ((2,), 2), ((3,), 6), ((4,), 24), ((5,), 120)])
    assert found[("sign", -1)].detail == "nonneg"
    assert found[("monotone", 0)].detail == "inc"
    # three outputs rise with the argument by chance one time in six
    assert ("monotone", 0) not in kinds([((1,), 1), ((2,), 2), ((3,), 5)])
    assert ("monotone", 1) not in kinds([((1, 1), 1), ((2, 5), 2), ((3, 3), 5), ((4, 2), 9)])  # no equal others


def test_json_examples_merge_list_and_tuple():
    typed = kinds([(([1],), (1, 2)), (([2],), (3, 4))], exact=False)[("type", -1)]
    assert I.check_value(typed, ([1],), [5, 6], exact=False) is True
    exact = kinds([(([1],), (1, 2)), (([2],), (3, 4))])[("type", -1)]
    assert I.check_value(exact, ([1],), [5, 6]) is False


def test_one_visible_example_abstains_with_the_reason():
    inferred = I.infer(task("f", example("f([1, 2])", "[2, 1]")))
    assert inferred.invariants == () and "at least 2" in inferred.why


# --------------------------------------------------------------------------- end to end (sandbox)


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available():
    from vx.sandbox import SandboxUnavailable

    try:
        O.sandbox()
    except SandboxUnavailable as exc:  # pragma: no cover
        pytest.skip(f"no sandbox layer works here: {exc}")


SORT_EVEN = task(
    "sort_even", example("sort_even([1, 2, 3])", "[1, 2, 3]"), example("sort_even([5, 6, 3, 4])", "[3, 6, 5, 4]")
)
GOOD = "def sort_even(l):\n    out = list(l)\n    out[::2] = sorted(l[::2])\n    return out\n"
# passes both visible examples (a lookup), then drops an element everywhere else
SHORT = (
    "def sort_even(l):\n    if l == [1, 2, 3]:\n        return [1, 2, 3]\n    if l == [5, 6, 3, 4]:\n"
    "        return [3, 6, 5, 4]\n    out = list(l)\n    out[::2] = sorted(l[::2])\n    return out[:-1]\n"
)


def run_op(op, t, src):
    ctx = Context()
    O.parses(t, src, ctx)
    return op(t, src, ctx)


def test_a_wrong_attempt_that_passes_its_examples_breaks_the_length_invariant():
    assert run_op(O.fails_visible_example, SORT_EVEN, SHORT).verdict == C
    res = run_op(I.violates_example_invariant, SORT_EVEN, SHORT)
    assert res.verdict == D
    assert "every example returns a list as long as its argument" in res.message
    assert res.message.startswith("sort_even([")  # names the input
    assert ("length_eq_arg", 0) in res.evidence["broken"]


def test_a_correct_attempt_is_clean():
    res = run_op(I.violates_example_invariant, SORT_EVEN, GOOD)
    assert res.verdict == C, res.message


def test_a_second_attempt_at_the_task_tests_no_probe_against_the_domain_again(monkeypatch):
    """Whether the domain accepts a probe is the task's, not the attempt's: remembered per (domain, probe),
    so grading a second attempt calls no domain check, and its verdict is unchanged."""
    from vx.families.code.probes import domain

    I._ACCEPTED.clear()
    first = run_op(I.violates_example_invariant, SORT_EVEN, SHORT)
    checks = []
    real = domain.in_domain
    monkeypatch.setattr(domain, "in_domain", lambda *a, **k: checks.append(1) or real(*a, **k))
    again = run_op(I.violates_example_invariant, SORT_EVEN, SHORT)
    good = run_op(I.violates_example_invariant, SORT_EVEN, GOOD)
    assert (again.verdict, again.message) == (first.verdict, first.message) == (D, first.message)
    assert good.verdict == C and not checks
    I._ACCEPTED.clear()
    assert run_op(I.violates_example_invariant, SORT_EVEN, GOOD).verdict == C and checks


def test_the_op_abstains_without_support():
    one = task("sort_even", example("sort_even([5, 6, 3, 4])", "[3, 6, 5, 4]"))
    assert run_op(I.violates_example_invariant, one, GOOD).verdict == A


def test_the_op_is_in_the_code_pool():
    from vx.families.code.pack import PACK

    assert "violates_example_invariant" in [o.name for o in PACK.ops]


def _spec(kind, arg):
    return {
        "kind": "exec",
        "check": "violates_invariant",
        "params": {"kind": kind, "arg": arg},
        "detects": "wrong_logic",
    }


def test_template_one_invariant():
    assert "violates_invariant" in TEMPLATES
    length = op_from_spec(_spec("length_eq_arg", 0))
    assert run_op(length.fn, SORT_EVEN, SHORT).verdict == D
    assert run_op(length.fn, SORT_EVEN, GOOD).verdict == C
    # the examples do not support "sorted" for this task: no opinion
    assert run_op(op_from_spec(_spec("sorted", -1)).fn, SORT_EVEN, SHORT).verdict == A


def test_template_refuses_bad_parameters():
    with pytest.raises(SpecError, match="unknown kind"):
        op_from_spec(_spec("longer", 0))
    with pytest.raises(SpecError, match="argument index"):
        op_from_spec(_spec("length_eq_arg", -1))
    with pytest.raises(SpecError, match="no argument"):
        op_from_spec(_spec("sorted", 0))


def test_inducer_proposes_the_broken_invariant():
    induce = TEMPLATES["violates_invariant"].induce
    other = SHORT.replace("out[:-1]", "out[1:]")
    proposals = induce([(SORT_EVEN, SHORT), (SORT_EVEN, other)], [(SORT_EVEN, GOOD)])
    assert {"kind": "length_eq_arg", "arg": 0} in proposals
    assert induce([(SORT_EVEN, GOOD)], [(SORT_EVEN, GOOD)]) == []


def test_a_selector_relates_to_no_single_argument():
    """total_match returns whichever list has fewer characters: its examples return argument 1 or argument 2
    whole, so "only elements of argument 2" holds on them by coincidence."""
    pairs = [
        (([], []), []),
        ((["hi", "admin"], ["hI", "Hi"]), ["hI", "Hi"]),
        ((["hi", "admin"], ["hi", "hi", "admin", "project"]), ["hi", "admin"]),
        ((["4"], ["1", "2", "3", "4", "5"]), ["4"]),
    ]
    assert not {k for k in kinds(pairs) if k[1] >= 0 and k[0] != "no_mutation"}


def test_a_string_is_not_as_long_as_a_list():
    """concatenate(['a', 'b', 'c']) == 'abc': the lengths agree only because the elements have one character."""
    pairs = [(([],), ""), ((["a", "b", "c"],), "abc")]
    assert ("length_eq_arg", 0) not in kinds(pairs)


class _Outcome:
    def __init__(self, value):
        self.status, self.value, self.args_after = "ok", value, None


class _Run:
    """The two things check_run reads of a run: its (probe, outcome) pairs."""

    def __init__(self, rows):
        self.rows = rows

    def pairs(self, *classes):
        return [(p, c) for p, c in self.rows if not classes or p.klass in classes]


def test_edge_probes_are_never_held_to_the_invariants():
    """A task may leave an edge input undefined (the two closest elements of a one-element list): an answer there
    breaks nothing, even where the inferred domain accepts the input."""
    from vx.families.code.probes.probe import Probe

    inferred = I.infer(SORT_EVEN)
    edge = Probe("single", "sort_even", ([5],), 0, "argument 1 cut to one element")
    mutant = Probe("gen_mutant", "sort_even", ([5, 6, 3],), -1, "generated (mutant)")
    assert I.accepted(inferred, edge.args) and I.accepted(inferred, mutant.args)
    broken, checked = I.check_run(inferred, _Run([(edge, _Outcome([]))]))
    assert broken == [] and checked == 0
    broken, checked = I.check_run(inferred, _Run([(edge, _Outcome([])), (mutant, _Outcome([3, 6]))]))
    assert checked == 1 and broken[0].invariant.key == ("length_eq_arg", 0)
    assert broken[0].message == (
        "sort_even([5, 6, 3]) returned [3, 6]; every example returns a list as long as its argument"
    )
