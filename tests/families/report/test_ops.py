"""The seed ops: clean on every golden section, firing on their own failure class, quoting the sentence."""

import functools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.report import ops as O
from vx.families.report.data.degrade import degrade
from vx.ops.core import Context

OWN_CLASS = {
    "uncited_claims": "uncited_claim",
    "cites_unknown_card": "unknown_citation",
    "ledger_metric_uncovered": "metric_uncovered",
    "value_erasure": "value_erasure",
    "value_mismatch": "value_mismatch",
    "low_credibility_card_overclaimed": "overclaimed_weak_evidence",
    "one_sided_conflict": "one_sided_conflict",
    "missing_tldr": "missing_tldr",
    "caliber_unit_violation": "caliber_unit_violation",
    "fabricated_figure": "fabricated_figure",
    "summed_across_pools": "summed_across_pools",
    "has_title": "no_title_or_not_markdown",
}


def test_pack_shape():
    assert len(O.SEED_OPS) == 12 and O.ROOT == "has_title"
    assert {o.name for o in O.SEED_OPS} == set(OWN_CLASS)
    assert all(o.tier == "static" and o.description for o in O.SEED_OPS)


def test_no_op_fires_on_any_golden_section(bundled_tasks, run_op):
    for t in bundled_tasks.values():
        for o in O.SEED_OPS:
            r = run_op(o, t, t.golden)
            assert r.verdict != 1, (t.id, o.name, r.message)


@pytest.mark.parametrize("op_name", sorted(OWN_CLASS))
def test_each_op_catches_its_class_wherever_it_applies(bundled_tasks, op_name, run_op):
    op, cls = getattr(O, op_name), OWN_CLASS[op_name]
    made = caught = 0
    for t in bundled_tasks.values():
        out = degrade(t, cls, random.Random(f"test:{t.id}"))
        if out is None:
            continue
        made += 1
        r = run_op(op, t, out)
        caught += r.verdict == 1
        if r.verdict == 1 and op_name not in (
            "has_title",
            "missing_tldr",
            "one_sided_conflict",
            "ledger_metric_uncovered",
        ):
            assert "line " in r.message and "“" in r.message  # the offending sentence is quoted
    assert made >= 5
    # value_erasure can be masked when another numeral sits within the window (then value_mismatch fires)
    assert caught >= made - (3 if op_name == "value_erasure" else 0), (caught, made)


def test_value_erasure_quotes_the_gamed_sentence(task, run_op):
    text = task.golden.replace("$5.9B {M01}", "{M01}")
    r = run_op(O.value_erasure, task, text)
    assert r.verdict == 1
    assert "“TL;DR: New utility-scale installations were a {M01} market in 2025 [E0501]" in r.message
    assert "5.9 USD billion" in r.message
    assert run_op(O.value_erasure, task, task.golden).verdict == 0


def test_value_mismatch_and_fabrication(task, run_op):
    text = task.golden.replace("$2.4B {M02}", "$2.9B {M02}")
    r = run_op(O.value_mismatch, task, text)
    assert r.verdict == 1 and "“$2.9B” is written beside M02" in r.message
    assert run_op(O.fabricated_figure, task, text).verdict == 1


def test_summing_pools_is_caught_and_sourced_figures_are_not(task, run_op):
    text = task.golden.replace("[E0504].", "[E0504]. Together the pools are worth $8.3B [E0501].")
    r = run_op(O.summed_across_pools, task, text)
    assert r.verdict == 1 and "M01 (utility-scale" in r.message and "M02 (behind-the-meter" in r.message


def test_caliber_currency_and_unit(bundled_tasks, task, run_op):
    r = run_op(O.caliber_unit_violation, task, task.golden.replace("$5.9B", "€5.4B"))
    assert r.verdict == 1 and "EUR" in r.message and "USD" in r.message
    storage = bundled_tasks["storage-01"]
    r = run_op(O.caliber_unit_violation, storage, storage.golden.replace("18.4 GWh {M01} in", "18,400 MWh {M01} in"))
    assert r.verdict == 1 and "MWh" in r.message and "GWh" in r.message


def test_abstentions(bundled_tasks, task):
    # no pools to sum when the caliber does not forbid it; no weak cards → no opinion on hedging
    rec = task.record()
    rec["caliber"]["no_sum_across_pools"] = False
    assert O.summed_across_pools(rec, task.golden, Context()).verdict == -1
    rec = task.record()
    rec["cards"] = [c for c in rec["cards"] if c["stance"] != "opposing"]
    assert O.one_sided_conflict(rec, task.golden, Context()).verdict == -1


def test_root(task, run_op):
    assert run_op(O.has_title, task, task.golden).verdict == 0
    assert "no title" in run_op(O.has_title, task, "Just text.\n").message
    assert run_op(O.has_title, task, "").verdict == 1
    assert "not markdown" in run_op(O.has_title, task, {"x": 1}).message


def test_missing_and_late_tldr(task, run_op):
    body = task.golden.split("\n\n")
    no_tldr = "\n\n".join(b for b in body if "TL;DR" not in b)
    assert run_op(O.missing_tldr, task, no_tldr).verdict == 1
    late = "\n\n".join([body[0]] + [b for b in body[1:] if "TL;DR" not in b] * 2 + [body[1]])
    r = run_op(O.missing_tldr, task, late)
    assert r.verdict == 1 and "late" in r.message


def test_hedging_required_for_weak_cards(bundled_tasks, run_op):
    t = bundled_tasks["storage-02"]
    assert run_op(O.low_credibility_card_overclaimed, t, t.golden).verdict == 0
    bad = t.golden.replace(
        "One integrator reportedly expects quotes under $200/kWh this year, a claim from a "
        "single interview that has not been verified [E0204].",
        "Quotes will fall under $200/kWh this year [E0204].",
    )
    r = run_op(O.low_credibility_card_overclaimed, t, bad)
    assert r.verdict == 1 and "E0204 (low)" in r.message


@functools.lru_cache(maxsize=1)
def _storage_05():
    from pathlib import Path

    from vx.families.report.data.build import load_sources

    src = Path(__file__).resolve().parents[3] / "examples" / "report" / "sources"
    return next(t for t in load_sources(src) if t.id == "storage-05").record()


_PIECES = [
    "## Title\n\n",
    "**TL;DR:** ",
    "The market grew 12% [E0501]. ",
    "It reached $5.9B {M01} [E0501]. ",
    "{M02} ",
    "[E9999] ",
    "- item {M03}\n",
    "\n\n",
    "It may rise [E0504]. ",
    "€3.1 billion ",
    "| a | b |\n",
    "Combined $8.3B. ",
    "# ",
    "```\ncode {M01}\n```\n",
    "2026 Q2 ",
    "—",
    "[E0501, E0502] ",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25).map("".join))
def test_ops_never_crash_and_always_give_a_verdict(text):
    rec = _storage_05()
    ctx = Context()
    for o in O.SEED_OPS:
        r = o(rec, text, ctx)
        assert int(r.verdict) in (-1, 0, 1)
        if r.verdict == 1:
            assert r.message


def test_versions_cover_the_shared_machinery(monkeypatch):
    """Changing the parser or the figure reader must invalidate cached verdicts of every op."""
    before = {o.name: o.version for o in O.SEED_OPS}
    assert len(set(before.values())) == len(before)
    from pathlib import Path

    from vx.families.report.ops.static import DEPENDS
    from vx.ops.core import source_version

    real = Path.read_text

    def patched(self, *a, **k):
        data = real(self, *a, **k)
        return data + "\n_changed = 1\n" if self.name == "figures.py" else data

    monkeypatch.setattr(Path, "read_text", patched)
    after = {o.name: source_version(o.fn, DEPENDS) for o in O.SEED_OPS}
    assert all(after[n] != before[n] for n in before)


def _ledger_task(value, unit):
    from vx.families.report.model import ReportTask

    return ReportTask.from_dict(
        {
            "id": "law",
            "title": "T",
            "purpose": "P",
            "caliber": {"text": "USD", "currency": "USD"},
            "cards": [
                {
                    "id": "E0101",
                    "claim": "c",
                    "quote": "q",
                    "source": "s",
                    "date": "2026-01-01",
                    "stance": "neutral",
                    "credibility": "high",
                }
            ],
            "vocabulary": [{"id": "M01", "name": "Figure", "value": value, "unit": unit}],
        }
    ).record()


@settings(max_examples=100, deadline=None)
@given(
    st.floats(min_value=0.1, max_value=9999, allow_nan=False),
    st.integers(0, 2),
    st.sampled_from(["USD billion", "%", "GWh", "units"]),
    st.sampled_from(["$", "", "about "]),
)
def test_law_value_with_tag_is_clean_and_bare_tag_is_erasure(value, decimals, unit, prefix):
    """Writing the registered value (rounded to any precision) before its tag satisfies both ledger
    checks; writing the tag alone is always an erasure."""
    rec = _ledger_task(value, unit)
    shown = f"{value:,.{decimals}f}"
    good = f"## T\n\nThe figure was {prefix}{shown} {{M01}} in 2025 [E0101].\n"
    bad = "## T\n\nThe figure was {M01} in 2025 [E0101].\n"
    assert O.value_erasure(rec, good, Context()).verdict == 0
    assert O.value_mismatch(rec, good, Context()).verdict == 0
    assert O.value_erasure(rec, bad, Context()).verdict == 1
    assert O.value_mismatch(rec, bad, Context()).verdict == -1  # no number to compare: no opinion
