"""Drawn probes (hypothesis strategies built from the inferred domain): laws and worked examples."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.probes import domain as pd
from vx.families.code.probes import draw
from vx.families.code.probes import probe as P

from .test_probes_generate import example_sets


@settings(max_examples=60, deadline=None)
@given(example_sets(), st.text(max_size=5))
def test_drawing_is_deterministic_and_nests_inside_given(examples, seed):
    """Same examples and seed, same inputs -- also when called from inside another @given test (a user's
    test that grades code), which hypothesis's public @given API could not do."""
    dom = pd.infer_domain(examples) if examples[0] else None
    a = draw.draw_probes(examples, dom, seed=seed, n=20)
    b = draw.draw_probes(examples, dom, seed=seed, n=20)
    assert repr(a) == repr(b)


@settings(max_examples=80, deadline=None)
@given(example_sets())
def test_every_drawn_input_satisfies_every_inferred_predicate(examples):
    if not examples[0]:
        return
    dom = pd.infer_domain(examples)
    got, _ = draw.draw_probes(examples, dom, seed="t", n=30)
    shown = {repr(tuple(e)) for e in examples}
    assert len({repr(g) for g in got}) == len(got), "drawn inputs are distinct"
    for args in got:
        assert pd.in_domain(args, dom), args
        assert repr(args) not in shown, "never a visible example again"
    wide, _ = draw.draw_probes(examples, dom, seed="t", n=30, wide=True)
    for args in wide:
        assert pd.in_domain(args, draw.widened(dom)), args


def test_relations_and_structure_hold_on_a_worked_example():
    # two equal-length binary strings; an int at most a list's length; a sorted list of distinct ints
    examples = [("0101", "1100", [1, 3, 7], 2), ("111", "000", [2, 5, 9, 12], 4)]
    dom = pd.infer_domain(examples)
    got, why = draw.draw_probes(examples, dom, seed="x", n=60)
    assert len(got) >= 30, why
    for a, b, xs, k in got:
        assert len(a) == len(b) and set(a + b) <= {"0", "1"}
        assert xs == sorted(xs) and len(set(xs)) == len(xs) and k <= len(xs)
    # hypothesis reaches the small and extreme values the examples do not show
    assert any(k == 2 for *_, k in got) and any(len(a) == 1 for a, *_ in got)  # k >= 2: every example is


def test_digit_patterns_and_balanced_brackets_are_drawn_not_filtered_away():
    dom = pd.infer_domain([("5 apples and 6 oranges",), ("0 apples and 1 oranges",)])
    got, _ = draw.draw_probes([("5 apples and 6 oranges",), ("0 apples and 1 oranges",)], dom, seed="f", n=20)
    assert len(got) == 20 and all(pd._digit_pattern(s) == "# apples and # oranges" for (s,) in got)
    ex = [("(()())",), ("((()))",), ("()",)]
    got, _ = draw.draw_probes(ex, pd.infer_domain(ex), seed="b", n=60)
    assert len(got) >= 5 and all(pd._balanced(s, {"(": ")"}) for (s,) in got)


def test_wide_probes_go_past_the_examples_magnitude():
    ex = [([-1, 11, -11],), ([1, 1, 2],)]
    dom = pd.infer_domain(ex)
    narrow, _ = draw.draw_probes(ex, dom, seed="w", n=40)
    wide, _ = draw.draw_probes(ex, dom, seed="w", n=40, wide=True)
    assert max(abs(x) for (xs,) in narrow for x in xs) <= dom.paths[(0, "elem")].bound
    assert max(abs(x) for (xs,) in wide for x in xs) > dom.paths[(0, "elem")].bound


def test_the_task_probes_carry_the_drawn_classes_after_the_mutants():
    task = {
        "id": "T/1",
        "entry_point": "below",
        "examples": [
            {"call": "below([1, 2, 4, 10], 100)", "function": "below", "args": [[1, 2, 4, 10], 100], "expected": True},
            {"call": "below([1, 20, 4, 10], 5)", "function": "below", "args": [[1, 20, 4, 10], 5], "expected": False},
        ],
    }
    gen = P.generated(task)[0]
    classes = [p.klass for p in gen]
    assert classes.count("gen_drawn") == draw.N_DRAWN and classes.count("gen_wide") <= draw.N_WIDE
    assert classes.index("gen_drawn") > max(i for i, c in enumerate(classes) if c == "gen_large")
    assert len(gen) <= P.MAX_GENERATED
    assert len({repr(p.args) for p in gen}) == len(gen), "no input twice"


def _faithful_and_lean(examples, seed, wide):
    dom = pd.infer_domain(examples) if examples and examples[0] else None
    lean = draw.draw_probes(examples, dom, seed=seed, n=20, wide=wide)
    faithful = draw.draw_probes(examples, dom, seed=seed, n=20, wide=wide, faithful=True)
    return lean, faithful


@settings(max_examples=80, deadline=None)
@given(example_sets(), st.text(max_size=5), st.booleans())
def test_the_lean_draw_gives_the_inputs_of_hypothesis_own_conjecture_data(examples, seed, wide):
    """The lean ConjectureData drops only records hypothesis's engine reads: drawing through it must give
    exactly what drawing through hypothesis's own gives, why-none included."""
    lean, faithful = _faithful_and_lean(examples, seed, wide)
    assert repr(lean) == repr(faithful)


def test_the_lean_draw_gives_the_same_inputs_on_every_bundled_task():
    """The same law on real domains: every task of the bundled HumanEval family (its lists of strings,
    nested lists, floats, dicts, digit patterns), with the reason a draw failed if one did."""
    import json
    from pathlib import Path

    rows = [
        json.loads(line)
        for line in (Path(__file__).resolve().parents[3] / "examples" / "humaneval" / "tasks.jsonl").open()
    ]
    checked = 0
    for task in rows:
        examples = P.visible_examples(task)
        if not examples or len({ex.function for ex in examples}) != 1:
            continue
        lean, faithful = _faithful_and_lean([ex.args for ex in examples], str(task["id"]), False)
        assert repr(lean) == repr(faithful), task["id"]
        assert not lean[1].startswith("drawing from the domain failed"), (task["id"], lean[1])
        checked += bool(lean[0])
    assert checked >= 0.9 * len(rows)
