"""The RAQS-style rubric: golden sections score 100, each failure class costs points, and the
tag-counting mode is gameable exactly as the research describes."""

import random

from vx.families.report.data import rubric
from vx.families.report.data.degrade import DEGRADATIONS, degrade


def test_golden_sections_score_full_marks(bundled_tasks):
    for t in bundled_tasks.values():
        s = rubric.score(t, t.golden)
        assert s.total == 100.0, (t.id, s.deductions)
        assert rubric.label(t, t.golden) == "pass"


def test_every_failure_class_costs_points(bundled_tasks):
    for cls in DEGRADATIONS:
        losses = []
        for t in bundled_tasks.values():
            out = degrade(t, cls, random.Random(f"r:{t.id}"))
            if out is not None:
                s = rubric.score(t, out)
                assert 0 <= s.total < 100, (cls, t.id)
                assert all(0 <= v <= rubric.WEIGHTS[k] for k, v in s.dimensions.items())
                losses.append(100 - s.total)
        assert losses and min(losses) > 0, cls


def test_naive_tag_counting_is_gamed_by_value_erasure(bundled_tasks):
    """Erased values cost points under the value-aware rubric and nothing under tag counting."""
    gamed = 0
    for t in bundled_tasks.values():
        out = degrade(t, "value_erasure", random.Random(f"g:{t.id}"))
        aware, naive = rubric.score(t, out), rubric.score(t, out, naive_tags=True)
        assert naive.total >= aware.total
        gamed += naive.total == 100.0 and aware.total < rubric.PASS_THRESHOLD
    assert gamed >= len(bundled_tasks) // 2


def test_empty_and_deductions_explained(bundled_tasks):
    t = bundled_tasks["storage-01"]
    assert rubric.score(t, "").total == 0
    s = rubric.score(t, t.golden.replace("18.4 GWh {M01} in", "{M01} in"))
    assert any(d == "tags" and "M01 has no value beside it" in why for d, _, why in s.deductions)
    assert s.as_dict()["total"] == s.total
