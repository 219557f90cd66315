"""The module map (docs/ARCHITECTURE.md) as a test: imports only point down the layers, siblings
in one layer stay independent, and no subpackage imports another in a circle (grimp)."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")

#: Top to bottom; a tuple is one layer of siblings that must not import each other.
LAYERS = (
    ("vx.cli", "vx.integrations"),
    "vx.serve",
    "vx.reward",
    "vx.ratchet",
    ("vx.evolve", "vx.grading"),
    "vx.evaluation",
    ("vx.verifier", "vx.baselines", "vx.doctor"),
    "vx.selection",
    "vx.metrics",
    "vx.families",
    "vx.ops",
    ("vx.llm", "vx.sandbox"),
    "vx.dsl",
    ("vx.grammar", "vx.pages", "vx.inputs"),
    ("vx.errors", "vx.text", "vx.memo"),
)

#: Inside every family: the pack assembles ops and data; data (builders, ground truth) may use the
#: ops; ops never reach the data side; modules at the family's top (its domain model) are below both.
FAMILY_LAYERS = ("pack", "data", "ops", "probes")
FAMILIES = ("vx.families.code", "vx.families.sql", "vx.families.report", "vx.families.tools")


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("vx")


def _layers(spec):
    out = []
    for layer in spec:
        names = layer if isinstance(layer, tuple) else (layer,)
        out.append(grimp.Layer(*names, independent=True))
    return out


def _explain(found) -> str:
    lines = []
    for dep in found:
        for route in dep.routes:
            chain = " -> ".join((*route.heads, *route.middle, *route.tails))
            lines.append(f"{dep.importer} imports {dep.imported} (upward): {chain}")
    return "\n".join(lines)


def _present(graph, spec):
    keep = []
    for layer in spec:
        names = tuple(n for n in (layer if isinstance(layer, tuple) else (layer,)) if n in graph.modules)
        if names:
            keep.append(names if len(names) > 1 else names[0])
    return keep


def test_imports_only_point_down_the_layers(graph):
    found = graph.find_illegal_dependencies_for_layers(layers=_layers(_present(graph, LAYERS)))
    assert not found, _explain(found)


def test_every_subpackage_is_placed_in_a_layer(graph):
    placed = {n for layer in LAYERS for n in (layer if isinstance(layer, tuple) else (layer,))}
    top = {".".join(m.split(".")[:2]) for m in graph.modules if m.count(".") >= 1}
    assert top <= placed, f"place these in LAYERS (and in docs/ARCHITECTURE.md): {sorted(top - placed)}"


def test_a_family_s_ops_never_import_its_data_side(graph):
    found = graph.find_illegal_dependencies_for_layers(layers=list(FAMILY_LAYERS), containers=set(FAMILIES))
    assert not found, _explain(found)


def test_no_import_cycle_between_subpackages(graph):
    packages = sorted(
        {
            ".".join(m.split(".")[:3])
            for m in graph.modules
            if m.count(".") >= 2 and graph.find_children(".".join(m.split(".")[:3]))
        }
    )
    cycles = []
    for i, a in enumerate(packages):
        for b in packages[i + 1 :]:
            if a.startswith(b + ".") or b.startswith(a + "."):
                continue
            if graph.chain_exists(importer=a, imported=b, as_packages=True) and graph.chain_exists(
                importer=b, imported=a, as_packages=True
            ):
                cycles.append(f"{a} <-> {b}")
    assert not cycles, "import cycles: " + ", ".join(cycles)
