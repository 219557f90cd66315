"""Appending `del <entry_point>` to every failing output of the bundled
locked split must not lower the seed verifier's fail recall (it dropped from 0.78 to 0.33 when the
exec ops abstained on a run whose entry point was gone)."""

from __future__ import annotations

import attrs

from vx.metrics import agreement
from vx.verifier import Verifier

from .conftest import EXAMPLE, family_module


def _fail_recall(verifier, items, fail_weight: float) -> float:
    grading = verifier.grade_items(items, jobs=1, cache=None, progress=False)
    return agreement(grading.finals, [it.label for it in items], fail_weight=fail_weight).fail_recall


def test_deleting_the_entry_point_does_not_hide_failures() -> None:
    fam = family_module().Family(EXAMPLE)
    verifier = Verifier.load(EXAMPLE / "seed.vx", fam)
    items = list(fam.labeled("locked").items)
    weight = fam.objective["fail_weight"]
    hostile = [
        attrs.evolve(it, output=it.output.rstrip("\n") + f"\ndel {fam.tasks[it.task]['entry_point']}\n")
        if it.hard_label() == "fail"
        else it
        for it in items
    ]
    before, after = _fail_recall(verifier, items, weight), _fail_recall(verifier, hostile, weight)
    assert after >= before, f"fail recall {before:.3f} as given, {after:.3f} with `del <entry_point>` appended"
