"""The task data model: validation with every problem listed, and what a verifier may see."""

import pytest

from vx.families.report.model import ReportTask, TaskError


def good_task(**over):
    t = {
        "id": "t1",
        "title": "A title",
        "purpose": "Why",
        "caliber": {
            "text": "USD, 2026 Q2",
            "currency": "USD",
            "units": ["GWh"],
            "as_of": "2026 Q2",
            "no_sum_across_pools": True,
        },
        "cards": [
            {
                "id": "E0101",
                "claim": "c",
                "quote": "q",
                "source": "s",
                "date": "2026-01-02",
                "stance": "supporting",
                "credibility": "high",
            }
        ],
        "vocabulary": [{"id": "M01", "name": "n", "value": 4.2, "unit": "USD billion", "pool": "a"}],
        "golden": "## A title\n\nBody.",
    }
    t.update(over)
    return t


def test_valid_task_round_trips_through_its_record():
    rt = ReportTask.from_dict(good_task())
    rec = rt.record()
    assert "golden" not in rec  # the reference answer is not part of what a verifier sees
    again = ReportTask.from_dict(rec)
    assert again.cards == rt.cards and again.vocabulary == rt.vocabulary and again.caliber == rt.caliber
    assert rt.metric("M01").display() == "4.2 USD billion" and rt.metric("M01").tag == "{M01}"
    assert rt.card("E0101").weak is False and rt.card("E9999") is None


def test_every_problem_is_listed_with_where_it_is():
    bad = good_task(
        cards=[
            {
                "id": "E01",
                "claim": "c",
                "quote": "q",
                "source": "s",
                "date": "2026-01-02",
                "stance": "supporting",
                "credibility": "high",
            },
            {
                "id": "E0102",
                "claim": "",
                "quote": "q",
                "source": "s",
                "date": "yesterday",
                "stance": "pro",
                "credibility": "great",
            },
        ],
        vocabulary=[
            {"id": "M1", "name": "n", "value": 1, "unit": ""},
            {"id": "M02", "name": "n", "value": "4.2", "unit": ""},
        ],
        title="",
    )
    with pytest.raises(TaskError) as e:
        ReportTask.from_dict(bad)
    msg = str(e.value)
    for needle in (
        "'title' must be",
        "cards[0].id must look like E0103",
        "E0102.claim",
        "E0102.date",
        "E0102.stance must be one of supporting, opposing, neutral",
        "E0102.credibility",
        "vocabulary[0].id must look like M03",
        "M02.value must be a finite number",
    ):
        assert needle in msg, needle
    assert len(e.value.problems) == 8


def test_caliber_checks():
    with pytest.raises(TaskError, match="three-letter ISO code"):
        ReportTask.from_dict(good_task(caliber={"text": "x", "currency": "dollars"}))
    with pytest.raises(TaskError, match="unknown key"):
        ReportTask.from_dict(good_task(caliber={"text": "x", "currancy": "USD"}))
    assert ReportTask.from_dict(good_task(caliber="all amounts in USD")).caliber.text == "all amounts in USD"


def test_duplicate_ids_are_rejected():
    t = good_task()
    t["cards"] = t["cards"] * 2
    with pytest.raises(TaskError, match="duplicate card id"):
        ReportTask.from_dict(t)


def test_bundled_tasks_are_many_and_varied(bundled_tasks):
    assert len(bundled_tasks) >= 30
    assert len({t.topic for t in bundled_tasks.values()}) >= 5
    for t in bundled_tasks.values():
        assert t.golden and t.vocabulary and len(t.cards) >= 3
