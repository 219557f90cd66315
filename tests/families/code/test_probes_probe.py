"""Probe inputs: visible examples with exact types, and type-preserving mutations (laws as properties)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.probes import probe as P


def record(call, args_src=None, expected_src=None, **extra):
    rec = {"call": call, **extra}
    if args_src is not None:
        rec["args_src"] = args_src
    if expected_src is not None:
        rec["expected_src"] = expected_src
    return rec


def test_visible_examples_keep_exact_types():
    t = {
        "entry_point": "f",
        "examples": [
            record(
                "f((1, 2), {3})",
                args_src="((1, 2), {3})",
                expected_src="(4,)",
                function="f",
                args=[[1, 2], [3]],
                expected=[4],
            ),
        ],
    }
    (ex,) = P.visible_examples(t)
    assert ex.args == ((1, 2), {3}) and ex.expected == (4,) and type(ex.expected) is tuple
    assert ex.exact_types and ex.function == "f" and ex.call == "f((1, 2), {3})"


def test_visible_examples_fallbacks():
    t = {
        "entry_point": "f",
        "examples": [
            # args from the call text, expected only as JSON: types of the expected value are not exact
            {"call": "g((1, 2))", "expected": [3]},
            # nothing but JSON
            {"args": [[1, 2]], "expected": 3, "function": "f"},
            # unreadable records are skipped
            {"call": "f(x)", "expected": 1},
            "not a record",
            {"args_src": "((", "expected_src": "1", "call": "f(1)"},
        ],
    }
    exs = P.visible_examples(t)
    assert [(e.function, e.args, e.exact_types) for e in exs] == [("g", ((1, 2),), False), ("f", ([1, 2],), False)]


def test_visible_examples_are_parsed_once_per_task_and_again_when_they_change(monkeypatch):
    """A dozen ops of every attempt read the task's examples: parsed once per task and process;
    the list is new on every call, and a task with other examples is read anew."""
    parsed = []
    real = P._literal
    monkeypatch.setattr(P, "_literal", lambda text: parsed.append(text) or real(text))
    t = {"id": "once", "entry_point": "f", "examples": [record("f([1, 2])", args_src="([1, 2],)", expected_src="3")]}
    a, b = P.visible_examples(t), P.visible_examples(dict(t))
    assert a == b and a is not b and len(parsed) == 2
    a.clear()
    assert len(P.visible_examples(t)) == 1 and len(parsed) == 2
    changed = dict(t, examples=[record("f([5])", args_src="([5],)", expected_src="5")])
    assert P.visible_examples(changed)[0].args == ([5],) and len(parsed) == 4


def test_probe_order_and_content():
    t = {"entry_point": "f", "examples": [record("f([3, 1, 2], 5)", args_src="([3, 1, 2], 5)", expected_src="9")]}
    probes = P.probes_for(t)
    classes = [p.klass for p in probes]
    assert classes[:3] == ["example", "repeat", "permuted"]
    assert classes == sorted(classes, key=list(P.CLASSES).index), "probes run in class order"
    assert probes[0].expected == 9 and probes[1].expected == 9
    assert all(p.expected is None for p in probes[2:]), "only example calls carry an expected value"
    by_class = {p.klass: p for p in probes}
    assert by_class["permuted"].args == ([2, 1, 3], 5)
    assert by_class["empty"].args == ([], 5)
    assert by_class["single"].args == ([3], 5)
    assert by_class["zero"].args == ([3, 1, 2], 0)
    assert by_class["negative"].args == ([3, 1, 2], -5)
    large = [p.args for p in probes if p.klass == "large"]
    assert ([3, 1, 2] * 17, 5) in large and ([3, 1, 2], 100) in large
    assert probes[0].call == "f([3, 1, 2], 5)" and probes[0].in_domain and not by_class["empty"].in_domain
    assert P.probes_for(t) == probes, "deterministic"


def test_probe_limit_keeps_the_examples():
    exs = [record(f"f({i})", args_src=f"({i},)", expected_src=str(i)) for i in range(1, 20)]
    probes = P.probes_for({"entry_point": "f", "examples": exs}, limit=24)
    base = [p for p in probes if p.klass not in P.PEER_CLASSES]
    assert len(base) == 24, "the limit bounds the seed exec ops' probes"
    assert [p.klass for p in probes[:19]] == ["example"] * 19
    assert all(p.klass in P.GENERATED for p in probes[24:]), "generated probes come after, unbounded by the limit"
    assert 0 < len(probes) - 24 <= P.MAX_GENERATED


def test_no_examples_no_probes():
    assert P.probes_for({"entry_point": "f", "examples": []}) == []
    assert P.probes_for({"entry_point": "f"}) == []


def test_call_text_is_shortened():
    text = P.call_text("f", [list(range(200))])
    assert len(text) <= 120 and text.startswith("f([0, 1") and " ... " in text


scalars = st.one_of(
    st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False), st.text(max_size=8), st.booleans()
)
values = st.one_of(
    scalars,
    st.lists(st.integers(-100, 100), max_size=8),
    st.lists(st.text(max_size=3), max_size=5),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=4),
)


def _element_types(v):
    return {type(x) for x in v} if isinstance(v, (list, tuple)) else set()


@settings(max_examples=200, deadline=None)
@given(
    args=st.lists(values, min_size=1, max_size=4),
    klass=st.sampled_from([c for c in P.CLASSES if c not in ("example", "repeat") and c not in P.PEER_CLASSES]),
)
def test_mutations_preserve_types(args, klass):
    for new, detail in P.mutations(args, klass):
        assert len(new) == len(args) and detail
        changed = [i for i, (a, b) in enumerate(zip(args, new)) if not (type(a) is type(b) and a == b)]
        assert changed, "a mutation changes something"
        if klass != "permuted":
            assert len(changed) == 1, "edge classes change one argument at a time"
        for a, b in zip(args, new):
            assert type(a) is type(b), (klass, a, b)
            assert _element_types(b) <= _element_types(a), (klass, a, b)
            if isinstance(b, (list, tuple, str)) and klass == "large":
                assert len(b) <= 1000
            if type(b) is int and klass == "large":
                assert abs(b) <= max(10_000, abs(a))


@settings(max_examples=100, deadline=None)
@given(args=st.lists(values, min_size=1, max_size=4))
def test_permutation_keeps_the_multiset(args):
    for new, _ in P.mutations(args, "permuted"):
        for a, b in zip(args, new):
            if isinstance(a, (list, tuple, str)):
                assert sorted(map(repr, a)) == sorted(map(repr, b))


def test_permuted_only_reverses_flat_homogeneous_sequences():
    reversed_args = [
        new
        for new, _ in P.mutations(
            ([3, 1, 2], (1.5, 2.5), "abc", (True, [], 5, "x"), [[1, 2], [3]], [1, "a"]), "permuted"
        )
    ]
    assert reversed_args == [([2, 1, 3], (2.5, 1.5), "abc", (True, [], 5, "x"), [[1, 2], [3]], [1, "a"])]
