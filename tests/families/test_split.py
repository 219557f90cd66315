"""Splitting by task (vx.families.split): laws as properties."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.split import LabelledItem, SplitError, split_by_task


@attrs.frozen
class FakeTeacher:
    label: str
    agreement: float

    def meta(self):
        return {"teacher_agreement": self.agreement}


def teacher(item):
    # Deterministic in the item: its "truth" with a soft agreement.
    return FakeTeacher(item.truth, 1.0 if item.truth == "pass" else 0.0)


def make_items(spec):
    """spec: list of per-task lists of labels."""
    return [
        LabelledItem(id=f"T{t}#{k}", task=f"T{t}", output=f"out {t} {k}", truth=label)
        for t, labels in enumerate(spec)
        for k, label in enumerate(labels)
    ]


task_spec = st.lists(st.lists(st.sampled_from(["pass", "fail"]), min_size=1, max_size=4), min_size=30, max_size=60)


@settings(max_examples=40, deadline=None)
@given(spec=task_spec, seed=st.integers(0, 1000))
def test_split_laws(spec, seed):
    items = make_items(spec)
    try:
        splits = split_by_task(items, seed=seed, teacher=teacher, n_locked=15)
    except SplitError:
        fails = sum("fail" in labels for labels in spec)
        passes = sum("pass" in labels for labels in spec)
        assert fails < 5 or passes < 5 or len(spec) < 10 + 2
        return
    dev_tasks, locked_tasks, train_tasks = (set(splits.tasks[k]) for k in ("dev", "locked", "train"))
    # disjoint by task, and items follow their task
    assert not (dev_tasks & locked_tasks) and not (dev_tasks & train_tasks) and not (locked_tasks & train_tasks)
    assert {it.task for it in splits.dev} == dev_tasks and {it.task for it in splits.locked} == locked_tasks
    assert {it.task for it in splits.train} == train_tasks
    # dev: 5 + 5, one item per task; locked big enough; every item accounted for
    assert sorted(it.teacher_label for it in splits.dev) == ["fail"] * 5 + ["pass"] * 5
    assert len(splits.dev) == len(dev_tasks) == 10
    assert len(splits.locked) >= 15
    assert len(splits.train) + len(splits.dev) + len(splits.locked) + splits.dropped == len(items)
    # deterministic by seed, whatever the input order
    again = split_by_task(list(reversed(make_items(spec))), seed=seed, teacher=teacher, n_locked=15)
    assert [it.id for it in again.dev] == [it.id for it in splits.dev]
    assert [it.id for it in again.locked] == [it.id for it in splits.locked]
    assert [it.id for it in again.train] == [it.id for it in splits.train]


def test_teacher_runs_only_on_scanned_items():
    items = make_items([["fail", "pass"]] * 40)
    calls = []

    def counting(item):
        calls.append(item.id)
        return teacher(item)

    splits = split_by_task(items, seed=3, teacher=counting, n_locked=10)
    assert len(calls) < len(items) / 2
    assert all(it.teacher is not None for it in splits.dev)


def test_clear_failures_only_for_dev():
    # Fails with agreement 0.9 are not "clear": dev cannot fill its fail quota.
    items = make_items([["fail"]] * 20 + [["pass"]] * 20)

    def soft(item):
        return FakeTeacher(item.truth, 1.0 if item.truth == "pass" else 0.9)

    with pytest.raises(SplitError, match="clear failure"):
        split_by_task(items, seed=0, teacher=soft, n_locked=5)
    assert split_by_task(items, seed=0, teacher=soft, n_locked=5, fail_max_agreement=0.95).dev


def test_not_enough_for_locked_or_train():
    items = make_items([["fail"]] * 6 + [["pass"]] * 6)
    with pytest.raises(SplitError, match="locked"):
        split_by_task(items, seed=0, teacher=teacher, n_locked=5)
    items = make_items([["fail"]] * 5 + [["pass"]] * 5 + [["pass"]] * 2)
    with pytest.raises(SplitError, match="train"):
        split_by_task(items, seed=0, teacher=teacher, n_locked=2)


def test_counts_hide_locked_and_train_labels_unless_asked():
    items = make_items([["fail", "pass"]] * 30)
    splits = split_by_task(items, seed=1, teacher=teacher, n_locked=10)
    assert "locked_truth" not in splits.counts() and "train_truth" not in splits.counts()
    assert set(splits.counts(with_hidden_labels=True)) >= {"locked_truth", "train_truth", "dev_truth"}


@pytest.mark.parametrize("seed", range(20))
def test_tasks_with_both_classes_do_not_use_up_the_scarce_one(seed):
    # Several attempts per task: the only failures are in 5 tasks that also have passing attempts.
    # A greedy pick could spend them on passes; the dev split must still get 5 + 5.
    spec = [["pass", "fail", "pass"]] * 5 + [["pass"]] * 25
    splits = split_by_task(make_items(spec), seed=seed, teacher=teacher, n_locked=15)
    assert sorted(it.teacher_label for it in splits.dev) == ["fail"] * 5 + ["pass"] * 5


# ------------------------------------------------------------------------------------------------
# the stratified dev draw


@attrs.frozen
class EvidenceTeacher:
    label: str
    agreement: float
    evidence: str = ""

    def meta(self):
        return {"teacher_agreement": self.agreement, "teacher_evidence": self.evidence}


STRATA_OF = {"f1": "fails_visible_example", "f2": "passes_example_differs", "f3": "crashes"}
STRATA = ("passes_example_differs", "fails_visible_example", "crashes")  # the code family's order


def evidence_teacher(item):
    # item.truth is "pass" or "f1"/"f2"/"f3" (a failure of that stratum); subtle failures agree often
    if item.truth == "pass":
        return EvidenceTeacher("pass", 1.0)
    return EvidenceTeacher("fail", 0.9 if item.truth == "f2" else 0.1, STRATA_OF[item.truth])


strata_spec = st.lists(
    st.lists(st.sampled_from(["pass", "f1", "f2", "f3"]), min_size=1, max_size=3), min_size=30, max_size=60
)


@settings(max_examples=40, deadline=None)
@given(spec=strata_spec, seed=st.integers(0, 1000))
def test_stratified_draw_laws(spec, seed):
    items = make_items(spec)
    try:
        splits = split_by_task(
            items, seed=seed, teacher=evidence_teacher, n_locked=15, dev_draw="stratified", strata=STRATA
        )
    except SplitError as exc:
        assert "stratified draw" in str(exc) or "locked" in str(exc) or "train" in str(exc)
        return
    assert sorted(it.teacher_label for it in splits.dev) == ["fail"] * 5 + ["pass"] * 5
    assert len({it.task for it in splits.dev}) == 10
    strata = splits.counts()["dev_strata"]
    assert sum(strata.values()) == 5
    # the round-robin places are (2, 2, 1); a stratum takes more only when another could not fill its own
    quota = {"passes_example_differs": 2, "fails_visible_example": 2, "crashes": 1}
    over = sum(max(0, strata.get(k, 0) - q) for k, q in quota.items())
    under = sum(max(0, q - strata.get(k, 0)) for k, q in quota.items())
    assert over == under
    if under:  # an under-filled stratum had no candidate left in the tasks the draw did not take
        short = [k for k, q in quota.items() if strata.get(k, 0) < q]
        taken = {it.task for it in splits.dev}
        for k in short:
            code = next(c for c, st_ in STRATA_OF.items() if st_ == k)
            assert not any(code in labels for t, labels in enumerate(spec) if f"T{t}" not in taken)
    again = split_by_task(
        list(reversed(make_items(spec))),
        seed=seed,
        teacher=evidence_teacher,
        n_locked=15,
        dev_draw="stratified",
        strata=STRATA,
    )
    assert [it.id for it in again.dev] == [it.id for it in splits.dev]


def test_the_stratified_draw_takes_subtle_failures_the_gross_draw_leaves_out():
    spec = [["f2", "pass"], ["f1"], ["f3"], ["pass"]] * 10
    items = make_items(spec)
    gross = split_by_task(items, seed=1, teacher=evidence_teacher, n_locked=15)
    strat = split_by_task(
        make_items(spec), seed=1, teacher=evidence_teacher, n_locked=15, dev_draw="stratified", strata=STRATA
    )
    assert "passes_example_differs" not in gross.counts()["dev_strata"]  # agreement 0.9 > 0.5: not "clear"
    assert strat.counts()["dev_strata"] == {"crashes": 1, "fails_visible_example": 2, "passes_example_differs": 2}


def test_a_stratum_the_tasks_cannot_fill_gives_its_places_to_the_others():
    spec = [["f1"], ["f2"], ["pass"], ["pass"]] * 10  # no crashes at all
    splits = split_by_task(
        make_items(spec), seed=2, teacher=evidence_teacher, n_locked=15, dev_draw="stratified", strata=STRATA
    )
    strata = splits.counts()["dev_strata"]
    assert sum(strata.values()) == 5 and "crashes" not in strata and strata["passes_example_differs"] >= 2


def test_an_unknown_dev_draw_is_an_error():
    with pytest.raises(SplitError, match="unknown dev draw 'random'"):
        split_by_task(make_items([["pass"], ["fail"]] * 10), seed=0, teacher=teacher, dev_draw="random")
