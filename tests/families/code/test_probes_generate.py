"""Laws of the probe generator (hypothesis: determinism, type preservation, bounds, domain) and worked examples."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.probes import domain as pd
from vx.families.code.probes import generate as pg

scalars = st.one_of(
    st.integers(-50, 50),
    st.floats(-100, 100, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 2)),
    st.text("abcXYZ 019()", max_size=8),
    st.booleans(),
)


def arg_strategy():
    return st.one_of(
        scalars,
        st.lists(st.integers(-20, 20), max_size=6),
        st.lists(st.text("ab", max_size=3), max_size=4),
        st.tuples(st.integers(-5, 5), st.integers(-5, 5)),
        st.dictionaries(st.text("abc", min_size=1, max_size=2), st.integers(0, 9), max_size=3),
    )


@st.composite
def example_sets(draw):
    n_args = draw(st.integers(1, 3))
    first = tuple(draw(arg_strategy()) for _ in range(n_args))
    # other examples: same types per position (as a task's examples have)
    more = []
    for _ in range(draw(st.integers(0, 2))):
        more.append(tuple(draw(_like(a)) for a in first))
    return [first] + more


def _like(v: Any):
    t = type(v)
    if t is bool:
        return st.booleans()
    if t is int:
        return st.integers(-50, 50)
    if t is float:
        return st.floats(-100, 100, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 2))
    if t is str:
        return st.text("abcXYZ 019()", max_size=8)
    if t is tuple:
        return st.tuples(*[_like(x) for x in v]) if v else st.just(())
    if t is list:
        return st.just(v)
    return st.just(v)


def _types(v: Any, out: set, path=()) -> None:
    out.add((path, type(v)))
    if type(v) in (list, set):
        for x in v:
            _types(x, out, path + ("e",))
    elif type(v) is tuple:
        for j, x in enumerate(v):
            _types(x, out, path + (j,))
    elif type(v) is dict:
        for k, x in v.items():
            _types(k, out, path + ("k",))
            _types(x, out, path + ("v",))


@settings(max_examples=150, deadline=None)
@given(example_sets(), st.text(max_size=5))
def test_deterministic(examples, seed):
    a = pg.generate_probes(examples, seed=seed)[0]
    b = pg.generate_probes(examples, seed=seed)[0]
    assert repr(a) == repr(b)


@settings(max_examples=150, deadline=None)
@given(example_sets())
def test_types_preserved_and_bounded(examples):
    probes, dom, why = pg.generate_probes(examples, seed="t")
    seen: set = set()
    for ex in examples:
        for i, a in enumerate(ex):
            _types(a, seen, (i,))
    for klass, args in probes:
        assert len(args) == len(examples[0])
        got: set = set()
        for i, a in enumerate(args):
            _types(a, got, (i,))
        assert got <= seen, (klass, args, got - seen)
        assert repr(args) not in {repr(e) for e in examples}
        for a in args:
            if isinstance(a, (str, list, tuple, dict)):
                assert len(a) <= max(pd.MAX_STR, 200)
            if type(a) is int:
                assert abs(a) <= pd.MAX_INT
        if klass in ("mutant", "boundary"):
            assert pd.in_domain(args, dom, frozenset({"relations"}) if klass == "boundary" else frozenset())


def test_preconditions_kept():
    # equal-length binary strings stay equal-length binary strings
    probes, dom, _ = pg.generate_probes([("010", "110")], seed="xor")
    assert probes
    for klass, (a, b) in probes:
        if klass == "mutant":
            assert len(a) == len(b) and set(a + b) <= {"0", "1"}
    # a base below the number stays below it, and positive
    probes, dom, _ = pg.generate_probes([(8, 3), (8, 2), (7, 2)], seed="base")
    for klass, (x, base) in probes:
        if klass == "mutant":
            assert 0 < base <= x
    # sorted lists stay sorted
    probes, _, _ = pg.generate_probes([([1, 2, 5, 9],), ([0, 3, 4],)], seed="s")
    for klass, (xs,) in probes:
        if klass == "mutant":
            assert xs == sorted(xs)


def test_no_probes_reasons():
    assert pg.generate_probes([], seed="")[2] == "the task shows no visible example call"
    assert "without arguments" in pg.generate_probes([()], seed="")[2]
    assert "opaque" in pg.generate_probes([(object(),)], seed="")[2]


def test_a_class_that_cannot_succeed_stops_early_without_changing_a_probe(monkeypatch):
    """HumanEval/129's square grids: no grid grown to 50-120 rows stays square, so the ``large`` class
    used to spend all its 1,500 tries growing grids (seconds per task). It now stops after
    STALL_TRIES tries without a probe; the probes are those of the full 1,500 tries."""
    gen = pg
    examples = [([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 3), ([[5, 9, 3], [4, 1, 6], [7, 8, 2]], 1)]
    calls = []
    real = gen._large
    monkeypatch.setattr(gen, "_large", lambda *a: calls.append(1) or real(*a))
    stalled = gen.generate_probes(examples, seed="HumanEval/129")[0]
    assert len(calls) <= gen.STALL_TRIES + 1 and not [k for k, _ in stalled if k == "large"]
    monkeypatch.setattr(gen, "STALL_TRIES", gen.MAX_TRIES)
    assert gen.generate_probes(examples, seed="HumanEval/129")[0] == stalled


def _value_ok_reference(v: Any, path, dom, records, relax=frozenset()) -> bool:
    """The domain check as first written (a field read per predicate, a path built per value): the
    oracle the compiled checks of ``_value_ok`` must agree with."""
    d = dom.paths.get(path)
    if d is None:
        return False
    t = type(v)
    if t not in d.types:
        return False
    if t in (int, float):
        if abs(v) > d.bound and "bound" not in relax:
            return False
        if ((d.positive and v <= 0) or (d.nonneg and v < 0) or (d.at_least_two and v < 2)) and "sign" not in relax:
            return False
        if d.closed_ints is not None and v not in d.closed_ints and "closed" not in relax:
            return False
    if t is str:
        if d.alphabet is not None and not set(v) <= d.alphabet:
            return False
        if d.strip and v != v.strip():
            return False
        if d.single_spaces and "  " in v:
            return False
        if d.balanced and not all(pd._balanced(v, {o: c}) for o, c in d.balanced):
            return False
        if d.pattern is not None and pd._digit_pattern(v) != d.pattern and not (v == "" and "empty" in relax):
            return False
    if t in (str, list, tuple, set, frozenset, dict):
        if len(v) > d.max_len and "bound" not in relax:
            return False
        if d.nonempty and len(v) == 0 and "empty" not in relax:
            return False
    if t in (list, tuple) and path not in records:
        if d.sorted and d.sorted not in pd.sorted_directions(v):
            return False
        if d.distinct and not pd.distinct(v):
            return False
        if d.rectangular and v and len({len(x) if type(x) in (list, tuple) else -1 for x in v}) != 1:
            return False
        return all(_value_ok_reference(x, path + ("elem",), dom, records, relax) for x in v)
    if t is tuple:
        return all(_value_ok_reference(x, path + (j,), dom, records, relax) for j, x in enumerate(v)) and all(
            path + (j,) in dom.paths for j in range(len(v))
        )
    if t in (set, frozenset):
        return all(_value_ok_reference(x, path + ("elem",), dom, records, relax) for x in v)
    if t is dict:
        return all(
            _value_ok_reference(k, path + ("key",), dom, records, relax)
            and _value_ok_reference(x, path + ("val",), dom, records, relax)
            for k, x in v.items()
        )
    return True


_RELAXES = [
    frozenset(),
    frozenset({"bound"}),
    frozenset({"relations"}),
    frozenset({"empty", "sign", "closed", "relations"}),
    frozenset({"bound", "sign", "empty", "closed"}),
]


#: Example sets of the shapes the generic strategy rarely makes: grids, digit patterns, brackets,
#: words, sorted and closed lists, records, dicts and sets.
_SHAPED = [
    [([[1, 2, 3], [4, 5, 6]], 2), ([[0, 1], [2, 3]], 1)],
    [("1/5", "5/1"), ("7/10", "10/2")],
    [("(()())",), ("()[]",)],
    [("hello world",), ("a b c",)],
    [([1, 2, 5, 9],), ([0, 3, 4],)],
    [([0, 1, 1, 0],), ([1, 1, 0, 0],)],
    [([(1, "a", 2.5), (2, "b", 3.0)],)],
    [({"a": 1, "b": 2},), ({"c": 3},)],
    [({1, 2, 3},), ({4, 5},)],
    [(7, 3), (9, 2), (12, 5)],
]


def _variants(v: Any) -> list:
    """`v` and values near the predicates' edges: emptied, padded, ragged, reversed, negated, widened."""
    out = [v]
    t = type(v)
    if t is str:
        out += ["", " " + v, v + "  x", v[::-1], v.replace("/", ""), v + ")"]
    elif t in (list, tuple):
        out += [t(), t(list(v)[::-1]), t(list(v) + list(v[:1])), t(list(v)[:1])]
        if v and type(v[0]) is list:
            out.append(t([v[0][:-1]] + list(v[1:])))  # ragged
    elif t is dict:
        out += [{}, {**v, "zz": -1}]
    elif t is set:
        out += [set(), v | {-3}]
    elif t in (int, float) and t is not bool:
        out += [-v, v * 1000, 0, 1]
    return out


def _agree(examples, others, relax) -> None:
    probes, dom, _ = pg.generate_probes(examples, seed="c", sizes={"mutant": 6, "edge": 3, "large": 2})
    if dom is None:
        return
    for args in list(examples) + [a for _, a in probes] + [tuple(others)]:
        for i, a in enumerate(args):
            for x in _variants(a):
                for path in [(i,), (i, "elem"), (i, 0), (i, "key"), (i, "val")]:
                    assert pd._value_ok(x, path, dom, dom.records, relax) == _value_ok_reference(
                        x, path, dom, dom.records, relax
                    ), (x, path, relax)


@settings(max_examples=150, deadline=None)
@given(example_sets(), st.lists(arg_strategy(), min_size=1, max_size=4), st.sampled_from(_RELAXES))
def test_the_compiled_domain_checks_agree_with_the_predicates_as_written(examples, others, relax):
    """``_value_ok`` (compiled per path) says what the plain reading of each predicate says, on the
    examples, their generated probes, values near each predicate's edge and unrelated values, under
    every relaxation the classes use."""
    _agree(examples, others, relax)


def test_the_compiled_domain_checks_agree_on_grids_patterns_records_and_collections():
    for examples in _SHAPED:
        for relax in _RELAXES:
            _agree(examples, [[[1, 2], [3]], "(]", -4, {"a": "b"}], relax)


def test_grown_lists_stay_distinct_as_the_domain_counts_distinct():
    """HumanEval/81's GPAs ``[4.0, 3, 1.7, 2, 3.5]`` are distinct. Growing them kept ``4`` and ``4.0``
    apart (their reprs differ), which `_distinct` counts as one value, so every grown list failed the
    domain and the ``large`` class made no probe in 500 tries. It now makes all of them."""
    probes, dom, _ = pg.generate_probes([([4.0, 3, 1.7, 2, 3.5],)], seed="HumanEval/81")
    large = [a for k, a in probes if k == "large"]
    assert len(large) == pg.CLASS_SIZES["large"]
    for (xs,) in large:
        assert len(xs) >= 50 and pd.distinct(xs) and pd.in_domain((xs,), dom, frozenset({"bound"}))


def _counted(mut, calls):
    real = mut.mutate

    def mutate(*a):
        calls.append(1)
        return real(*a)

    mut.mutate = mutate
    return mut


def test_a_grid_grows_by_rows_of_its_width_and_stops_when_no_new_row_is_left():
    """HumanEval/115's 0/1 grids: rows of other widths broke the grid, and with four cells there are
    only 16 distinct rows, so growth to 50+ never finished: 2,400 mutations a try, 356 tries a task.
    Rows now keep the width, and growth stops `GROW_STALL` tries after the last new row."""
    import random

    examples = [
        ([[0, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1]], 1),
        ([[0, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 1, 1]], 2),
    ]
    dom = pd.infer_domain(examples)
    assert dom.paths[(0,)].rectangular and dom.paths[(0,)].distinct
    calls: list = []
    mut = _counted(pg._Mutator(dom, random.Random(7)), calls)
    grid = pg._grow(examples[0][0], 0, 1000, dom, mut.rng, mut)
    assert {len(row) for row in grid} == {4} and len({tuple(r) for r in grid}) == len(grid) <= 16
    assert len(calls) <= 16 * (pg.GROW_STALL + 1)  # not the 20,000 tries of a target of 1,000
    assert pd.in_domain((grid, 1), dom, frozenset({"bound"}))


def test_a_square_grid_is_not_grown_but_as_many_records_as_fields_are():
    """A square grid (HumanEval/129) cannot stay square by gaining rows: it is not grown (the drawn
    class makes square grids of other sizes). Three records of three fields only look square."""
    import random

    square = pd.infer_domain([([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 3), ([[5, 9, 3], [4, 1, 6], [7, 8, 2]], 1)])
    assert square.paths[(0,)].square
    mut = pg._Mutator(square, random.Random(1))
    assert pg._grow([[1, 2, 3], [4, 5, 6], [7, 8, 9]], 0, 60, square, mut.rng, mut) is None
    records = [([(1, "Rash", 21), (2, "Varsha", 20), (3, "Kil", 19)],)]
    dom = pd.infer_domain(records)
    assert dom.paths[(0,)].square and (0, "elem") in dom.records
    mut = pg._Mutator(dom, random.Random(1))
    grown = pg._grow(records[0][0], 0, 60, dom, mut.rng, mut)
    assert grown is not None and len(grown) == 60


def test_a_task_whose_growth_keeps_stalling_stops_at_its_growth_budget(monkeypatch):
    """Distinct records with an ordered pair of small fields (MBPP's interval lists): few such records
    exist within the domain, so each ``large`` try grew for ~200 mutations and found nothing, and the
    class's 500 stalled tries spent 140,000 mutations (over a second of CPU). The task's growth now
    stops at GROW_BUDGET; below the budget the probes are those of an unbounded run."""
    examples = [([(3, 4), (5, 6), (9, 10), (4, 5)], [(5, 4), (3, 4), (6, 5), (9, 11)])]
    spent: list = []
    real = pg._grow

    def grow(v, i, target, dom, rng, mut):
        out = real(v, i, target, dom, rng, mut)
        spent.append(mut.grown)
        return out

    monkeypatch.setattr(pg, "_grow", grow)
    bounded = pg.generate_probes(examples, seed="T/473")[0]
    assert spent and max(spent) <= pg.GROW_BUDGET
    assert max(spent) > pg.GROW_BUDGET // 2, "the task is one the budget is for"
    monkeypatch.setattr(pg, "GROW_BUDGET", 10**9)
    spent.clear()
    unbounded = pg.generate_probes(examples, seed="T/473")[0]
    assert max(spent) > 100_000, "unbounded, it grows far longer"
    assert [p for p in bounded if p[0] != "large"] == [p for p in unbounded if p[0] != "large"]
    assert set(map(repr, bounded)) <= set(map(repr, unbounded))


def test_the_growth_budget_changes_no_probe_of_the_bundled_tasks(monkeypatch):
    """On every task of the bundled HumanEval family the budget is never what ends the ``large`` class:
    the probes are those of an unbounded run (so its default was not bought with probes there)."""
    import json
    from pathlib import Path

    from vx.families.code.probes import probe as P

    rows = [
        json.loads(line)
        for line in (Path(__file__).resolve().parents[3] / "examples" / "humaneval" / "tasks.jsonl").open()
    ]
    args = [[ex.args for ex in P.visible_examples(t)] for t in rows]
    args = [(t["id"], a) for t, a in zip(rows, args) if a and len({len(x) for x in a}) == 1]
    bounded = [pg.generate_probes(a, seed=tid)[0] for tid, a in args]
    monkeypatch.setattr(pg, "GROW_BUDGET", 10**9)
    assert [pg.generate_probes(a, seed=tid)[0] for tid, a in args] == bounded
