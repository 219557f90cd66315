"""Splitting labelled code items into train / dev / locked, disjoint by task, reproducibly by seed.

Splits are disjoint **by task**, not only by item: no task contributes items to two splits, so a
verifier cannot do well on the locked split by having seen another output for the same task.

Procedure (``random.Random`` seeded with ``"vx-split:<seed>"``):

1. shuffle the task ids (sorted first, so the input order does not matter);
2. **dev**: walk the shuffled tasks and take at most one item per task -- a *clear failure*
   (teacher agreement ≤ ``fail_max_agreement``, hard label fail) while fewer than ``n_dev_fail``
   are taken, else a *clean positive* (teacher label pass) while fewer than ``n_dev_pass`` are
   taken. A dev task's other items leave the labelled splits: they are kept, unlabeled, as the
   dev item's *peers* (``Splits.dev_peers``; the other attempts peer ops compare it with);
3. **locked**: the next tasks, all their items, until at least ``n_locked`` items;
4. **train**: every remaining task's items (stored without labels).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.errors import VxError


class SplitError(VxError, ValueError):
    """The items cannot fill the requested splits (the message says which and what to do)."""


@attrs.define
class LabelledItem:
    """One output to grade. ``truth`` (hidden tests) is set before splitting; ``teacher`` (the
    execution teacher's label, an object with ``label``, ``agreement`` and ``meta()``) is filled
    in lazily, only for the items considered for the dev split."""

    id: str
    task: str
    output: str
    meta: dict[str, Any] = attrs.field(factory=dict)
    truth: str = ""  # "pass" | "fail"
    truth_detail: dict[str, Any] = attrs.field(factory=dict)
    teacher: Any = None

    @property
    def teacher_label(self) -> str:
        return self.teacher.label

    @property
    def teacher_meta(self) -> dict[str, Any]:
        return self.teacher.meta()


@attrs.define
class Splits:
    train: list[LabelledItem]
    dev: list[LabelledItem]
    locked: list[LabelledItem]
    dropped: int
    tasks: dict[str, list[str]]  # split name -> task ids
    dev_peers: list[LabelledItem] = attrs.field(factory=list)  # the other attempts of the dev tasks (unlabeled)

    def counts(self, *, with_hidden_labels: bool = False) -> dict[str, Any]:
        """Sizes per split. Class balances of the locked and train splits come only with
        `with_hidden_labels` (for the console report), never in files evolution can read."""

        def classes(items: Sequence[LabelledItem], attr: str) -> dict[str, int]:
            out: dict[str, int] = defaultdict(int)
            for item in items:
                out[getattr(item, attr)] += 1
            return dict(sorted(out.items()))

        counts: dict[str, Any] = {
            "train_items": len(self.train), "train_tasks": len(self.tasks["train"]),
            "dev_items": len(self.dev), "dev_tasks": len(self.tasks["dev"]),
            "locked_items": len(self.locked), "locked_tasks": len(self.tasks["locked"]),
            "dropped_dev_task_items": self.dropped,
            "dev_peer_items": len(self.dev_peers),
            "dev_labels": classes(self.dev, "teacher_label"),
        }
        if with_hidden_labels:
            counts["dev_truth"] = classes(self.dev, "truth")
            counts["locked_truth"] = classes(self.locked, "truth")
            counts["train_truth"] = classes(self.train, "truth")
        return counts


def _assign_dev(order: Sequence[str], shuffled: Mapping[str, Sequence[LabelledItem]], teacher: Callable, *,
                need_fail: int, need_pass: int, fail_max_agreement: float) -> dict[str, LabelledItem] | None:
    """One dev item per task, 5 + 5, when a task may offer both classes (several attempts per task):
    single-class tasks first (in the seeded order), then the mixed tasks to whichever class is
    short. None when even this cannot fill both classes."""

    def offers(task: str) -> tuple[list[LabelledItem], list[LabelledItem]]:
        for it in shuffled[task]:
            if it.teacher is None:
                it.teacher = teacher(it)
        fails = [it for it in shuffled[task] if it.teacher.label == "fail" and it.teacher.agreement <= fail_max_agreement]
        passes = [it for it in shuffled[task] if it.teacher.label == "pass"]
        return fails, passes

    need = {"fail": need_fail, "pass": need_pass}
    picked: dict[str, LabelledItem] = {}
    mixed: list[str] = []
    for task in order:
        fails, passes = offers(task)
        if fails and passes:
            mixed.append(task)
        elif fails and need["fail"]:
            picked[task], need["fail"] = fails[0], need["fail"] - 1
        elif passes and need["pass"]:
            picked[task], need["pass"] = passes[0], need["pass"] - 1
    for task in mixed:
        fails, passes = offers(task)
        if need["fail"]:
            picked[task], need["fail"] = fails[0], need["fail"] - 1
        elif need["pass"]:
            picked[task], need["pass"] = passes[0], need["pass"] - 1
    return None if need["fail"] or need["pass"] else picked


def split_by_task(items: Sequence[LabelledItem], *, seed: int, teacher: Callable[[LabelledItem], Any],
                  n_dev_fail: int = 5, n_dev_pass: int = 5, n_locked: int = 40,
                  fail_max_agreement: float = 0.5) -> Splits:
    """Split `items` (see the module docstring); `teacher(item)` labels a dev candidate."""
    by_task: dict[str, list[LabelledItem]] = defaultdict(list)
    for item in items:
        by_task[item.task].append(item)
    rng = random.Random(f"vx-split:{seed}")
    order = sorted(by_task)
    rng.shuffle(order)

    dev: list[LabelledItem] = []
    dev_tasks: list[str] = []
    dropped = 0
    need = {"fail": n_dev_fail, "pass": n_dev_pass}
    remaining: list[str] = []
    shuffled: dict[str, list[LabelledItem]] = {}  # each visited task's candidates, in their seeded order
    for task in order:
        if need["fail"] == 0 and need["pass"] == 0:
            remaining.append(task)
            continue
        candidates = sorted(by_task[task], key=lambda it: it.id)
        rng.shuffle(candidates)
        shuffled[task] = candidates
        pick = None
        for item in candidates:
            if item.teacher is None:
                item.teacher = teacher(item)
            label = item.teacher.label
            if label == "fail" and need["fail"] and item.teacher.agreement <= fail_max_agreement:
                pick = item
                break
            if label == "pass" and need["pass"]:
                pick = item
                break
        if pick is None:
            remaining.append(task)
            continue
        need[pick.teacher_label] -= 1
        dev.append(pick)
        dev_tasks.append(task)
        dropped += len(candidates) - 1
    if need["fail"] or need["pass"]:
        # Tasks with both failing and passing attempts may have used up the scarce class: assign
        # single-class tasks first, then the mixed ones to whichever class is still short.
        repaired = _assign_dev(order, shuffled, teacher, need_fail=n_dev_fail, need_pass=n_dev_pass,
                               fail_max_agreement=fail_max_agreement)
        if repaired is not None:
            dev = [repaired[t] for t in order if t in repaired]
            dev_tasks = [t for t in order if t in repaired]
            dropped = sum(len(by_task[t]) - 1 for t in dev_tasks)
            remaining = [t for t in order if t not in repaired]
            need = {"fail": 0, "pass": 0}
    if need["fail"] or need["pass"]:
        raise SplitError(
            f"cannot fill the dev split: still missing {need['fail']} clear failure(s) and {need['pass']} "
            f"clean positive(s) after scanning {len(order)} tasks; add outputs (another samples file, more "
            "mutants) or use a larger task subset")

    locked: list[LabelledItem] = []
    locked_tasks: list[str] = []
    train_tasks: list[str] = []
    for task in remaining:
        if len(locked) < n_locked:
            locked.extend(sorted(by_task[task], key=lambda it: it.id))
            locked_tasks.append(task)
        else:
            train_tasks.append(task)
    if len(locked) < n_locked:
        raise SplitError(f"only {len(locked)} items are left for the locked split (need {n_locked}); "
                         "lower --n-locked or add outputs")
    train = [it for task in train_tasks for it in sorted(by_task[task], key=lambda it: it.id)]
    if not train:
        raise SplitError("no tasks are left for the train split; lower --n-locked or add outputs")
    dev.sort(key=lambda it: (it.teacher_label, it.id))
    picked = {id(it) for it in dev}
    dev_peers = [it for task in sorted(dev_tasks) for it in sorted(by_task[task], key=lambda it: it.id)
                 if id(it) not in picked]
    return Splits(train=train, dev=dev, locked=locked, dropped=dropped,
                  tasks={"train": sorted(train_tasks), "dev": sorted(dev_tasks), "locked": sorted(locked_tasks)},
                  dev_peers=dev_peers)
