"""The ops on hand-written, natural sections (bullets, tables, free wording) — not degradations."""

import pytest

from vx.families.report import ops as O
from vx.families.report.data import rubric
from vx.ops.core import Context

GOOD_WITH_LIST_AND_TABLE = """# Deployment volumes by pool

## TL;DR

- Utility-scale storage set a record with 18.4 GWh {M01} added in 2025 [E0101].
- Behind-the-meter systems added 3.1 GWh {M02}, a separate market [E0102].

## Detail

| Pool | 2025 additions | Source |
|---|---|---|
| Utility-scale | 18.4 GWh {M01} | [E0101] |
| Behind-the-meter | 3.1 GWh {M02} | [E0102] |

Two states dominate: Texas and California took 71% {M03} of utility-scale capacity [E0105].

Not every project arrived on time, as about 33% of 2025 projects slipped into 2026 [E0103]. Survey respondents
suggest 2026 could bring as much as 26 GWh, though the figure is self-reported [E0104].
"""

TYPICAL_WEAK_DRAFT = """## Storage deployment overview

The US storage market is booming. In total, 21.5 GWh of storage was installed in 2025, split between
utility-scale projects at 18.4 GWh {M01} [E0101] and smaller systems [E0102].

Texas and California account for most of the growth [E0105]. Developers expect 26 GWh in 2026 [E0104].
"""

GAMED_BULLETS = """## Deployment volumes

**TL;DR:** Utility-scale additions reached {M01} while behind-the-meter added {M02} [E0101] [E0102].

- Utility-scale: {M01} [E0101]
- Behind-the-meter: {M02} [E0102]
- Texas and California share: {M03} [E0105]

Interconnection delays slowed about a third of projects [E0103], and a survey suggests more may come [E0104].
"""


@pytest.fixture
def t(bundled_tasks):
    return bundled_tasks["storage-01"]


def fired(t, text):
    rec, ctx = t.record(), Context()
    return {o.name: o(rec, text, ctx) for o in O.SEED_OPS if o(rec, text, ctx).verdict == 1}


def test_a_natural_good_section_with_list_and_table_is_clean(t):
    assert fired(t, GOOD_WITH_LIST_AND_TABLE) == {}
    assert rubric.score(t, GOOD_WITH_LIST_AND_TABLE).total == 100.0


def test_a_typical_weak_draft_is_flagged_for_what_is_wrong(t):
    got = fired(t, TYPICAL_WEAK_DRAFT)
    assert set(got) == {
        "uncited_claims",
        "ledger_metric_uncovered",
        "low_credibility_card_overclaimed",
        "one_sided_conflict",
        "missing_tldr",
        "summed_across_pools",
        "fabricated_figure",
    }
    assert "“The US storage market is booming.”" in got["uncited_claims"].message
    assert (
        "21.5 GWh" in got["summed_across_pools"].message and "M01 (utility-scale" in got["summed_across_pools"].message
    )
    missing = " ".join(got["ledger_metric_uncovered"].evidence["all"])
    assert "{M02} never appears" in missing and "{M03} never appears" in missing and "{M01}" not in missing
    assert "E0104 (low)" in got["low_credibility_card_overclaimed"].message
    assert rubric.score(t, TYPICAL_WEAK_DRAFT).total < rubric.PASS_THRESHOLD


def test_gamed_bullets_are_caught_only_by_value_erasure(t):
    got = fired(t, GAMED_BULLETS)
    assert set(got) == {"value_erasure"}
    assert "(+4 more)" in got["value_erasure"].message  # all five bare tags are found
    assert rubric.score(t, GAMED_BULLETS, naive_tags=True).total >= rubric.PASS_THRESHOLD  # the gaming pays
    assert rubric.score(t, GAMED_BULLETS).total < rubric.PASS_THRESHOLD
