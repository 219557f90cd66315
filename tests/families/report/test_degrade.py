"""Degradations: deterministic, one documented class each, and they really break the section."""

import random

from vx.families.report.data.degrade import DEGRADATIONS, applicable, degrade
from vx.families.report.figures import find_figures
from vx.families.report.ops.taxonomy import TAXONOMY
from vx.families.report.parse import TAG, parse_section


def test_every_degradation_is_a_documented_class():
    assert set(DEGRADATIONS) == set(TAXONOMY)
    assert all(d.description for d in DEGRADATIONS.values())


def test_deterministic_and_different_from_the_golden(bundled_tasks):
    for t in list(bundled_tasks.values())[:8]:
        for cls in DEGRADATIONS:
            a = degrade(t, cls, random.Random(1))
            b = degrade(t, cls, random.Random(1))
            assert a == b
            if a is not None:
                assert a.strip() != t.golden.strip()


def test_most_classes_apply_to_most_tasks(bundled_tasks):
    counts = {c: 0 for c in DEGRADATIONS}
    for t in bundled_tasks.values():
        for c in applicable(t):
            counts[c] += 1
    n = len(bundled_tasks)
    assert counts["summed_across_pools"] >= 5  # only tasks with pools in the ledger
    assert all(v >= n // 2 for c, v in counts.items() if c != "summed_across_pools"), counts


def test_value_erasure_leaves_bare_tags(bundled_tasks):
    """The gaming pattern: at least one tag loses its number, the tags themselves all stay."""
    t = bundled_tasks["dc-01"]
    out = degrade(t, "value_erasure", random.Random(0))
    assert len(TAG.findall(out)) == len(TAG.findall(t.golden))
    bare = 0
    for s in parse_section(out).sentences:
        for tag in s.tags:
            if not any(0 <= tag.start - f.end <= 4 for f in find_figures(s.text)):
                bare += 1
    assert bare >= 1


def test_inapplicable_degradations_return_none(bundled_tasks):
    t = bundled_tasks["cloud-02"]  # no pools in its ledger
    assert degrade(t, "summed_across_pools", random.Random(0)) is None
