"""The tools family's data side: builders of families from BFCL's data (``vx data build tools``).

``single`` builds the single-turn family (:func:`vx.families.tools.data.single.build_single`); ``bfcl``
imports BFCL's own checker, guarded, to re-derive labels. :func:`build` is what the command calls: it
builds the single-turn family, the multi-turn one, or both (``kind``), each into its own directory.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from vx.errors import BuildError

KINDS = ("single", "multi", "both")


def out_dirs(kind: str, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Where each half is written: ``out`` itself for one kind; ``out/single`` and ``out/multi`` for both."""
    if kind not in KINDS:
        raise BuildError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    base = Path(out)
    if kind == "both":
        return {"single": base / "single", "multi": base / "multi"}
    return {kind: base}


def build(kind: str, data_dir: str | os.PathLike[str], out: str | os.PathLike[str], **options: Any) -> list[Any]:
    """Build the families `kind` names from `data_dir` (see :func:`out_dirs`); one report per family.
    ``options`` go to every builder (``seed``, ``n_locked``, ``progress``...); ``single`` and ``multi``
    hold each builder's own options."""
    reports = []
    own = {k: options.pop(k, None) or {} for k in ("single", "multi")}
    for half, target in out_dirs(kind, out).items():
        if half == "single":
            from vx.families.tools.data.single import build_single

            reports.append(build_single(data_dir, target, **options, **own["single"]))
        else:
            try:
                module = importlib.import_module("vx.families.tools.data.multi")
            except ModuleNotFoundError as exc:
                if exc.name != "vx.families.tools.data.multi":
                    raise
                raise BuildError(
                    "this vx has no multi-turn tools builder (vx.families.tools.data.multi); build --kind single"
                ) from None
            reports.append(module.build_multi(data_dir, target, **options, **own["multi"]))
    return reports


__all__ = ["KINDS", "build", "out_dirs"]
