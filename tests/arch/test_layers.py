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


#: The one import cycle between modules allowed: `Node.__str__` imports the printer when it is called (the
#: printer imports the tree at its top). `str(node)` is the canonical text every message and f-string uses,
#: and the printer (layout, widths, exact decimals) is its own concern; the import runs at the first
#: ``str()``, never while either module loads.
ALLOWED_CYCLE_IMPORTS = {("vx.dsl.ast", "vx.dsl.printer")}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    groups: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_no_import_cycle_between_modules(graph):
    """Every import grimp sees counts (at the top, inside a function, under TYPE_CHECKING): a module that
    imports another which imports it back, however far round, is one job split in two or two jobs
    tangled; pass what a function needs instead, or move the shared part down."""
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    for importer, imported in ALLOWED_CYCLE_IMPORTS:
        edges[importer].discard(imported)
    found = _cycles(edges)
    assert not found, "import cycles between modules: " + "; ".join(" <-> ".join(g) for g in found)


def test_the_cycle_finder_finds_a_cycle_however_long():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e2"}, "e2": {"e"}}
    assert sorted(_cycles(edges)) == [["a", "b", "c"], ["e", "e2"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
