"""Each family's extra declares what the family imports: a module-level import of a third-party
package in ``vx.families.<family>`` must come from the core dependencies or the family's own extra
(``pip install 'vx-verifiers[code]'`` must be enough to grade code). The quick start once failed on
every item because the code family's drawn probes imported hypothesis, which only ``dev`` declared."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "vx"
#: family folder -> the extra that installs it
FAMILY_EXTRAS = {"code": "code", "sql": "sql", "report": "report"}


def _names(reqs: list[str]) -> set[str]:
    return {re.split(r"[\s\[<>=!~;]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _top_level_imports(path: Path) -> set[str]:
    """Modules imported at module level (not inside a function or a try: those are optional)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("family", sorted(FAMILY_EXTRAS))
def test_a_family_s_module_level_imports_are_declared_by_its_extra(family):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = _names(project["dependencies"]) | _names(project["optional-dependencies"][FAMILY_EXTRAS[family]])
    dists = packages_distributions()
    missing = {}
    for path in sorted((SRC / "families" / family).rglob("*.py")):
        for mod in _top_level_imports(path) - set(sys.stdlib_module_names) - {"vx", "__future__"}:
            names = {d.lower().replace("_", "-") for d in dists.get(mod, [mod])}
            if not names & declared:
                missing.setdefault(mod, []).append(str(path.relative_to(ROOT)))
    assert not missing, (
        f"imported at module level by the {family} family but not in [{FAMILY_EXTRAS[family]}] "
        f"or the core dependencies: {missing}"
    )
