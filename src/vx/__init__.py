"""vx: verifiers of AI-agent outputs as inspectable, evolvable expressions.

The main entry points are `vx.Verifier` (load a .vx file with its family, grade outputs) and the
`vx` command. Submodules load lazily so that `import vx` stays fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "Verifier": "vx.verifier",
    "evaluate": "vx.evaluation",
    "Evaluation": "vx.evaluation",
    "Family": "vx.families.family",
    "Item": "vx.ops.item",
    "Verdict": "vx.dsl.verdict",
    "Final": "vx.dsl.verdict",
    "op": "vx.ops.core",
    "parse": "vx.dsl.parse",
    "to_text": "vx.dsl.printer",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'vx' has no attribute {name!r}")


__all__ = sorted(_LAZY) + ["__version__"]
