"""The generated probes kept on disk between processes (`vx.families.code.probes.store`)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.probes import probe as P
from vx.families.code.probes import store as S

TASK = {
    "id": "store/1",
    "entry_point": "add",
    "examples": [
        {"call": "add([1, 2], 3)", "args_src": "([1, 2], 3)", "expected_src": "[4, 5]"},
        {"call": "add([5], -1)", "args_src": "([5], -1)", "expected_src": "[4]"},
    ],
}


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_PROBE_CACHE", str(tmp_path / "probes"))
    P._GENERATED_CACHE.clear()
    yield tmp_path / "probes"
    P._GENERATED_CACHE.clear()


def _signature(result):
    probes, domain, why = result
    return (
        [(p.klass, p.function, repr(p.args), p.example, p.detail, p.expected, p.exact_types) for p in probes],
        domain,
        why,
    )


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json"))


def test_a_later_process_reads_the_probes_instead_of_generating_them(store, monkeypatch):
    fresh = P.generated(TASK)
    assert fresh[0] and len(_files(store)) == 1
    P._GENERATED_CACHE.clear()  # as a new process: nothing in memory
    monkeypatch.setattr(P, "_generate", lambda task: pytest.fail("generated again although stored"))
    again = P.generated(TASK)
    assert _signature(again) == _signature(fresh)
    assert [type(a) for p in again[0] for a in p.args] == [type(a) for p in fresh[0] for a in p.args]


def test_another_process_really_finds_them(store, tmp_path):
    """The store is for other processes: a second interpreter reads what the first one wrote."""
    code = (
        "import json, sys; from vx.families.code.probes import probe as P; "
        "t = json.loads(sys.argv[1]); g = P.generated(t); "
        "print(json.dumps([[p.klass, repr(p.args)] for p in g[0]]))"
    )
    env = {"VX_PROBE_CACHE": str(store), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if os.environ.get("PYTHONPATH"):  # the same vx as this process (a work tree's, not the installed one)
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    first = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TASK)], env=env, capture_output=True, text=True, check=True
    ).stdout
    (path,) = _files(store)
    stamp = path.stat().st_mtime_ns
    second = subprocess.run(
        [sys.executable, "-c", code, json.dumps(TASK)], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert first == second and json.loads(first) and path.stat().st_mtime_ns == stamp  # read, not rewritten


def test_a_new_generator_version_is_a_miss_never_a_stale_probe(store, monkeypatch):
    P.generated(TASK)
    P._GENERATED_CACHE.clear()
    monkeypatch.setattr(S, "_version", "another-generator")
    calls = []
    real = P._generate
    monkeypatch.setattr(P, "_generate", lambda task: calls.append(1) or real(task))
    P.generated(TASK)
    assert calls == [1] and len(_files(store)) == 2


def test_the_version_follows_the_generator_source_and_hypothesis(monkeypatch):
    monkeypatch.setattr(S, "_version", None)
    before = S.generator_version()
    monkeypatch.setattr(S, "_version", None)
    monkeypatch.setattr(S, "GENERATOR_MODULES", S.GENERATOR_MODULES[:-1])
    assert S.generator_version() != before
    monkeypatch.setattr(S, "_version", None)
    monkeypatch.setattr(S, "GENERATOR_MODULES", S.GENERATOR_MODULES + ("vx.families.code.ops.values",))
    import hypothesis

    monkeypatch.setattr(hypothesis, "__version__", "0.0.0")
    assert S.generator_version() not in (before, None)


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{",
        b"\xff\xfe",
        b"[]",
        b'{"format": 99}',
        b"null",
        b'{"format": 1, "key": "not-this-one", "probes": [], "domain": [], "why": ""}',
    ],
)
def test_a_damaged_or_foreign_file_is_a_miss_and_is_replaced(store, damage):
    fresh = P.generated(TASK)
    (path,) = _files(store)
    path.write_bytes(damage)
    P._GENERATED_CACHE.clear()
    assert _signature(P.generated(TASK)) == _signature(fresh)
    assert json.loads(path.read_text())["probes"], "the good generation was written back"


def test_a_file_whose_rows_are_not_probes_is_refused(store):
    """The attack: a planted file with the right key but rows that are not (class, function, args, detail);
    nothing in it is trusted beyond plain data, and a wrong shape is a miss."""
    fresh = P.generated(TASK)
    (path,) = _files(store)
    good = json.loads(path.read_text())
    for rows in (
        [["gen_mutant", "add", [1, 2], "x"]],  # args not a tuple
        [["gen_mutant", "add", {"tuple": [1]}]],  # a field short
        [["gen_mutant", 7, {"tuple": [1]}, "x"]],  # the function not a name
        [["gen_mutant", "add", {"pickle": "gASVAAAA"}, "x"]],
    ):  # no such tag
        path.write_text(json.dumps(dict(good, probes=rows)))
        assert S.load(P._task_key(TASK)) is None
    path.write_text(json.dumps(dict(good, domain="not lines")))
    assert S.load(P._task_key(TASK)) is None
    P._GENERATED_CACHE.clear()
    assert _signature(P.generated(TASK)) == _signature(fresh)


def test_turned_off_it_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("VX_PROBE_CACHE", "off")
    P._GENERATED_CACHE.clear()
    assert P.generated(TASK)[0] and S.directory() is None and not list(tmp_path.rglob("*.json"))
    monkeypatch.delenv("VX_PROBE_CACHE")
    assert S.directory() == tmp_path / "vx" / "probes"


def test_an_unwritable_store_warns_once_and_grading_goes_on(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("VX_PROBE_CACHE", str(blocker / "probes"))
    monkeypatch.setattr(S, "_warned", False)
    P._GENERATED_CACHE.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert P.generated(TASK)[0]
        P._GENERATED_CACHE.clear()
        assert P.generated(TASK)[0]
    texts = [str(w.message) for w in seen if "VX_PROBE_CACHE" in str(w.message)]
    assert len(texts) == 1 and "cannot be kept" in texts[0]


def test_probes_that_are_not_plain_data_are_not_stored(store):
    assert not S.store("k", [("gen_mutant", "f", (b"bytes",), "x")], (), "")
    assert not S.store("k", [("gen_mutant", "f", (1 + 2j,), "x")], (), "")
    assert not _files(store)


_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=4),
)
_PLAIN = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(st.integers(), st.text(max_size=3)), inner, max_size=3),
        st.frozensets(st.integers(), max_size=3),
        st.sets(st.text(max_size=2), max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_PLAIN), min_size=1, max_size=4), st.lists(st.text(max_size=20), max_size=3))
def test_what_is_stored_is_read_back_exactly(tmp_path_factory, rows, domain):
    """Law: probe arguments come back with the same values and the same types at every depth (a tuple stays
    a tuple, True stays a bool, -0.0 and NaN stay themselves, lone surrogates survive), or are not stored."""
    root = tmp_path_factory.mktemp("probes")
    import os

    old = os.environ.get("VX_PROBE_CACHE")
    os.environ["VX_PROBE_CACHE"] = str(root)
    try:
        probes = [("gen_drawn", "f", args, "drawn") for args in rows]
        if not S.store("law", probes, domain, ""):
            return  # too large an int for JSON, say: generated again next time, never wrong
        back, dom, why = S.load("law")
    finally:
        os.environ["VX_PROBE_CACHE"] = old if old is not None else "off"

    def shape(v):
        if type(v) is float:
            return ("float", "nan" if math.isnan(v) else repr(v))
        if type(v) in (list, tuple):
            return (type(v).__name__, [shape(x) for x in v])
        if type(v) in (set, frozenset):
            return (type(v).__name__, sorted(map(repr, map(shape, v))))
        if type(v) is dict:
            return ("dict", [(shape(k), shape(x)) for k, x in v.items()])
        return (type(v).__name__, v)

    assert [shape(a) for _, _, a, _ in back] == [shape(a) for _, _, a, _ in probes]
    assert list(dom) == domain and why == ""
