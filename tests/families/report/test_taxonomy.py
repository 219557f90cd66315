"""The closed taxonomy and the classifier that clusters failing items."""

import random

from vx.families.report.data.degrade import degrade
from vx.families.report.ops.taxonomy import TAXONOMY, classify_failure


def test_recorded_class_wins(task):
    assert classify_failure(task.record(), task.golden, {"degradation": "missing_tldr"}) == "missing_tldr"
    assert classify_failure(task.record(), task.golden, {"degradation": "not-a-class"}) is None


def test_unrecorded_failures_are_classified_by_what_fires(bundled_tasks):
    t = bundled_tasks["storage-01"]
    for cls in ("value_erasure", "unknown_citation", "missing_tldr", "no_title_or_not_markdown"):
        out = degrade(t, cls, random.Random(0))
        assert classify_failure(t.record(), out, {}) == cls
    assert classify_failure(t.record(), t.golden, None) is None
    assert set(TAXONOMY) >= {"value_erasure", "unhedged_forecast", "boilerplate_padding"}


def test_classes_without_a_seed_op_are_recognised_by_their_cues(bundled_tasks):
    t = bundled_tasks["cloud-03"]
    forecast = degrade(t, "unhedged_forecast", random.Random(5))
    assert classify_failure(t.record(), forecast, {}) == "unhedged_forecast"
    filler = degrade(t, "boilerplate_padding", random.Random(5))
    assert classify_failure(t.record(), filler, {}) == "uncited_claim"  # filler sentences are uncited claims
    forecast = t.golden.rstrip() + " Demand will certainly double [E0901].\n"
    assert classify_failure(t.record(), forecast, {}) == "unhedged_forecast"
    cut = t.golden.rstrip()[:-1]  # the last sentence loses its full stop, after its citation
    assert classify_failure(t.record(), cut, {}) == "truncated_section"
