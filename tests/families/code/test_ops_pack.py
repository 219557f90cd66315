"""The code op pack as a family loads it: family.toml → pool → verdict matrix; taxonomy; classify_failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx.dsl.verdict import Verdict
from vx.families.code import ops as O
from vx.families.code.pack import PACK as pack
from vx.families.family import Family
from vx.ops.apply import apply_ops

D, C, A = int(Verdict.DRAWBACK), int(Verdict.CLEAN), int(Verdict.ABSTAIN)

TASKS = [
    {
        "id": "T/1",
        "prompt": "def total(xs):\n    '''Sum a list.'''\n",
        "entry_point": "total",
        "examples": [
            {
                "call": "total([1, 2, 3])",
                "function": "total",
                "args": [[1, 2, 3]],
                "expected": 6,
                "args_src": "([1, 2, 3],)",
                "expected_src": "6",
                "source": "assert",
            }
        ],
        "reference": "def total(xs):\n    return sum(xs)\n",
    },
    {
        "id": "T/2",
        "prompt": "def shout(s):\n    '''Upper-case s.'''\n",
        "entry_point": "shout",
        "examples": [
            {
                "call": "shout('hi')",
                "function": "shout",
                "args": ["hi"],
                "expected": "HI",
                "args_src": "('hi',)",
                "expected_src": "'HI'",
                "source": "assert",
            }
        ],
        "reference": "def shout(s):\n    return s.upper()\n",
    },
]
OUTPUTS = {
    "good1": ("T/1", "def total(xs):\n    return sum(xs)\n", "pass"),
    "good2": ("T/2", "def shout(s):\n    return s.upper()\n", "pass"),
    "print": ("T/1", "def total(xs):\n    print(sum(xs))\n", "fail"),
    "name": ("T/2", "def yell(s):\n    return s.upper()\n", "fail"),
    "crash": ("T/2", "def shout(s):\n    return s[5].upper()\n", "fail"),
    "body": ("T/1", "    return sum(xs)\n", "fail"),
}


@pytest.fixture
def family_dir(tmp_path: Path) -> Path:
    d = tmp_path / "fam"
    d.mkdir()
    (d / "family.toml").write_text(
        'name = "tiny-code"\npacks = ["code"]\nroot = "parses"\nseed = "seed.vx"\n', encoding="utf-8"
    )
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TASKS), encoding="utf-8")
    rows = [
        {"id": k, "task": t, "output": o, "label": lab, "reference": TASKS[int(t[-1]) - 1]["reference"]}
        for k, (t, o, lab) in OUTPUTS.items()
    ]
    (d / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (d / "train.jsonl").write_text(
        json.dumps({"id": "tr1", "task": "T/1", "output": "def total(xs): return 0"}) + "\n", encoding="utf-8"
    )
    (d / "locked.jsonl").write_text(
        json.dumps({"id": "l1", "task": "T/2", "output": "def shout(s): return s", "label": "fail"}) + "\n",
        encoding="utf-8",
    )
    (d / "seed.vx").write_text(
        "(any crash fails_visible_example returns_not_print_only wrong_entry_point timeout)\n", encoding="utf-8"
    )
    return d


def test_the_pack_loads_through_family_toml(family_dir):
    fam = Family(family_dir)
    pool = fam.pool()
    assert pool.root_name == "parses"
    assert pool.names == [o.name for o in pack.ops]
    assert len(pool.names) == 18 and all(o.provenance.get("origin") == "seed" for o in pool)
    assert [o.name for o in pool if o.is_peer] == [
        "disagrees_with_peers",
        "outside_plurality",
        "outside_dual_agreement",
        "outside_unanimity",
    ]
    assert fam.seed(pool.names) is not None


def test_apply_builds_the_matrix_with_messages(family_dir):
    fam = Family(family_dir)
    pool = fam.pool()
    dev = fam.split("dev")
    app = apply_ops(pool, list(dev.items), fam.tasks, jobs=1, progress=False)
    assert not app.failures, app.failures
    m = app.matrix
    assert m.get("good1", "parses") == C and m.get("good2", "fails_visible_example") == C
    assert m.get("print", "returns_not_print_only") == D
    assert m.get("name", "parses") == D and m.get("name", "wrong_entry_point") == D
    assert m.get("name", "crash") == A
    assert m.get("crash", "crash") == D and "shout('hi') raised IndexError" in app.message("crash", "crash")
    assert m.get("body", "parses") == D and "indented" in app.message("body", "parses")


def test_apply_in_worker_processes_matches_serial(family_dir):
    fam = Family(family_dir)
    items = list(fam.split("dev").items)
    serial = apply_ops(fam.pool(), items, fam.tasks, jobs=1, progress=False)
    parallel = apply_ops(fam.pool(), items, fam.tasks, jobs=2, progress=False)
    assert (serial.matrix.to_array() == parallel.matrix.to_array()).all()


def test_taxonomy_covers_every_op_and_mutation_class():
    from vx.families.code.data.mutate import OPERATORS

    assert pack.taxonomy == O.TAXONOMY and len(set(O.TAXONOMY)) == len(O.TAXONOMY)
    for o in pack.ops:
        assert o.detects in O.TAXONOMY, o.name
    for op in OPERATORS.values():
        assert op.failure_class in O.TAXONOMY or op.benign, op.name


def test_classify_failure_from_provenance_and_evidence():
    t = TASKS[0]
    assert pack.classify_failure(t, "anything", {"failure_class": "off_by_one"}) == "off_by_one"
    assert pack.classify_failure(t, "anything", {"operator": "print_not_return"}) == "returns_not_print_only"
    assert pack.classify_failure(t, "def total(xs) return 1", {}) == "does_not_parse"
    assert pack.classify_failure(t, "def summe(xs):\n    return sum(xs)\n", None) == "wrong_entry_point"
    assert pack.classify_failure(t, "def total(xs):\n    print(sum(xs))\n", {}) == "returns_not_print_only"
    assert pack.classify_failure(t, "def total(xs):\n    return xs[7]\n", {"operator": "reference"}) == "crash"
    assert pack.classify_failure(t, "def total(xs):\n    return sum(xs) - 1\n", {}) == "fails_visible_example"
    assert pack.classify_failure(t, "def total(xs):\n    return sum(xs)\n", {}) is None


def test_op_versions_follow_the_shared_machinery():
    from vx.ops.core import source_version

    fn = O.crash.fn
    a = source_version(fn, [O.crash.fn.__module__, "vx.families.code.ops.run"])
    b = source_version(fn, [O.crash.fn.__module__, "vx.families.code.ops.artifact"])
    assert a != b  # the version follows the helpers the op depends on
    assert source_version(fn, [O.crash.fn.__module__, "vx.families.code.ops.run"]) == a
    assert O.crash.version == source_version(fn, __import__("vx.families.code.ops.exec", fromlist=["x"]).DEPENDS)
    assert len({o.version for o in pack.ops}) == len(pack.ops)


def test_every_op_that_runs_the_probes_is_versioned_by_the_modules_that_make_them():
    """An op whose verdict comes from the sandboxed run over a task's probes (its module depends on
    `run`) must go stale when the probes change: the modules that make them (every module of the
    probes package that `probe` imports, at the top or inside a function, and every one those import)
    are in its version; so are they in the probe store's."""
    import ast
    import importlib
    import pkgutil

    from vx.families.code.probes import store

    def probe_imports(module_name: str) -> set[str]:
        tree = ast.parse(Path(importlib.import_module(module_name).__file__).read_text())
        found = {
            f"vx.families.code.probes.{a.name}"
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module == "vx.families.code.probes"
            for a in n.names
        }
        found |= {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("vx.families.code.probes.")
        }
        return found - {"vx.families.code.probes.store"}  # where probes are kept, not how they are made

    makers = probe_imports("vx.families.code.probes.probe")
    todo = list(makers)
    while todo:
        for found in probe_imports(todo.pop()) - makers:
            makers.add(found)
            todo.append(found)
    assert {"vx.families.code.probes.generate", "vx.families.code.probes.draw"} <= makers
    assert "vx.families.code.probes.domain" in makers
    assert makers | {"vx.families.code.probes.probe"} <= set(store.GENERATOR_MODULES)

    def name(dep):
        return dep if isinstance(dep, str) else getattr(dep, "__name__", "")

    checked = 0
    for info in pkgutil.iter_modules(O.__path__):
        module = importlib.import_module(f"vx.families.code.ops.{info.name}")
        deps = {name(d) for d in getattr(module, "DEPENDS", ())}
        if "vx.families.code.ops.run" in deps:
            checked += 1
            assert makers <= deps, f"{info.name}.DEPENDS lacks {sorted(makers - deps)}"
            assert "vx.families.code.probes.budgets" in deps, f"{info.name}.DEPENDS lacks the run's budgets"
    assert checked >= 4  # exec, peers, invariants, templates (and agreement, through peers)
