"""Laws of the probe generator (hypothesis: determinism, type preservation, bounds, domain) and worked examples."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from vx.families.code.ops import generate as pg

scalars = st.one_of(st.integers(-50, 50), st.floats(-100, 100, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 2)),
                    st.text("abcXYZ 019()", max_size=8), st.booleans())


def arg_strategy():
    return st.one_of(scalars, st.lists(st.integers(-20, 20), max_size=6), st.lists(st.text("ab", max_size=3), max_size=4),
                     st.tuples(st.integers(-5, 5), st.integers(-5, 5)), st.dictionaries(st.text("abc", min_size=1, max_size=2),
                                                                                        st.integers(0, 9), max_size=3))


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
                assert len(a) <= max(pg.MAX_STR, 200)
            if type(a) is int:
                assert abs(a) <= pg.MAX_INT
        if klass in ("mutant", "boundary"):
            assert pg.in_domain(args, dom, frozenset({"relations"}) if klass == "boundary" else frozenset())


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
