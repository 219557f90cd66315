"""Splitting labelled items into train / dev / locked, disjoint by task, reproducibly by seed (every
family's builder: code, SQL).

Splits are disjoint **by task**, not only by item: no task contributes items to two splits, so a
verifier cannot do well on the locked split by having seen another output for the same task.

Procedure (``random.Random`` seeded with ``"vx-split:<seed>"``):

1. shuffle the task ids (sorted first, so the input order does not matter);
2. **dev**: walk the shuffled tasks and take at most one item per task -- a failure while fewer
   than ``n_dev_fail`` are taken, else a *clean positive* (teacher label pass) while fewer than
   ``n_dev_pass`` are taken. Which failures, is the *dev draw* (``dev_draw``):

   * ``"gross"`` -- *clear* failures: teacher label fail with teacher agreement ≤ ``fail_max_agreement``
     (the failures most inputs expose; in practice nearly all fail a visible example);
   * ``"stratified"`` -- failures stratified by the teacher's evidence class (``teacher.evidence``, a
     family's own names, given in the order the places are dealt as ``strata``; the code family's are
     *passes its visible example but differs from the reference*, *fails a visible example* and
     *crashes*): the ``n_dev_fail`` places are dealt round-robin, so that the anchor can credit a
     detector of subtle failures; a stratum the tasks cannot fill gives its places to the others.

   A dev task's other items leave the labelled splits: they are kept, unlabeled, as the
   dev item's *peers* (``Splits.dev_peers``; the other attempts peer ops compare it with);
3. **locked**: the next tasks, all their items, until at least ``n_locked`` items;
4. **train**: every remaining task's items (stored without labels).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.errors import VxError


class SplitError(VxError, ValueError):
    """The items cannot fill the requested splits (the message says which and what to do)."""


DEV_DRAWS = ("gross", "stratified")


def dev_quotas(dev_draw: str, n_fail: int, n_pass: int, strata: Sequence[str] = ()) -> dict[str, int]:
    """How many dev items of each kind a draw takes: ``{"fail": n, "pass": m}`` for the gross draw,
    ``{"fail:<stratum>": …, "pass": m}`` (places dealt round-robin over ``strata``) for the stratified one."""
    if dev_draw not in DEV_DRAWS:
        raise SplitError(f"unknown dev draw {dev_draw!r}; choose one of {', '.join(DEV_DRAWS)}")
    if dev_draw == "gross":
        return {"fail": n_fail, "pass": n_pass}
    if not strata:
        raise SplitError("the stratified dev draw needs the teacher's evidence classes (strata)")
    quotas = {f"fail:{s}": 0 for s in strata}
    for k in range(n_fail):
        quotas[f"fail:{strata[k % len(strata)]}"] += 1
    return {**quotas, "pass": n_pass}


@attrs.define
class LabelledItem:
    """One output to grade. ``truth`` (hidden tests) is set before splitting; ``teacher`` (the
    execution teacher's label, an object with ``label``, ``agreement`` and ``meta()``) is filled
    in lazily, only for the items considered for the dev split."""

    id: str
    task: str
    output: Any  # as the family's ops read it (text; the multi-turn tools family's turns of steps)
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

    def truth(self) -> dict[str, str]:
        """Every labelled split's items' hidden-test labels, by item id (train, dev and locked)."""
        return {it.id: it.truth for split in (self.train, self.dev, self.locked) for it in split}

    def counts(self, *, with_hidden_labels: bool = False) -> dict[str, Any]:
        """Sizes per split. Class balances of the locked and train splits come only with
        `with_hidden_labels` (for the console report), never in files evolution can read."""

        def classes(items: Sequence[LabelledItem], attr: str) -> dict[str, int]:
            out: dict[str, int] = defaultdict(int)
            for item in items:
                out[getattr(item, attr)] += 1
            return dict(sorted(out.items()))

        counts: dict[str, Any] = {
            "train_items": len(self.train),
            "train_tasks": len(self.tasks["train"]),
            "dev_items": len(self.dev),
            "dev_tasks": len(self.tasks["dev"]),
            "locked_items": len(self.locked),
            "locked_tasks": len(self.tasks["locked"]),
            "dropped_dev_task_items": self.dropped,
            "dev_peer_items": len(self.dev_peers),
            "dev_labels": classes(self.dev, "teacher_label"),
            "dev_strata": dict(
                sorted(
                    Counter(
                        getattr(it.teacher, "evidence", "") or "unknown"
                        for it in self.dev
                        if it.teacher_label == "fail"
                    ).items()
                )
            ),
        }
        if with_hidden_labels:
            counts["dev_truth"] = classes(self.dev, "truth")
            counts["locked_truth"] = classes(self.locked, "truth")
            counts["train_truth"] = classes(self.train, "truth")
        return counts


def _assign_dev(
    order: Sequence[str],
    shuffled: Mapping[str, Sequence[LabelledItem]],
    teacher: Callable,
    *,
    need_fail: int,
    need_pass: int,
    fail_max_agreement: float,
) -> dict[str, LabelledItem] | None:
    """One dev item per task, 5 + 5, when a task may offer both classes (several attempts per task):
    single-class tasks first (in the seeded order), then the mixed tasks to whichever class is
    short. None when even this cannot fill both classes."""

    def offers(task: str) -> tuple[list[LabelledItem], list[LabelledItem]]:
        for it in shuffled[task]:
            if it.teacher is None:
                it.teacher = teacher(it)
        fails = [
            it for it in shuffled[task] if it.teacher.label == "fail" and it.teacher.agreement <= fail_max_agreement
        ]
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


def _tasks_in_seeded_order(
    items: Sequence[LabelledItem], seed: int
) -> tuple[dict[str, list[LabelledItem]], list[str], random.Random]:
    """Items by task, the task ids in the seed's order (sorted first: the input order does not matter),
    and the generator the draw goes on with."""
    by_task: dict[str, list[LabelledItem]] = defaultdict(list)
    for item in items:
        by_task[item.task].append(item)
    rng = random.Random(f"vx-split:{seed}")
    order = sorted(by_task)
    rng.shuffle(order)
    return by_task, order, rng


def _dev_key(item: LabelledItem, dev_draw: str, fail_max_agreement: float, default: str = "") -> str | None:
    """Which dev quota an item would fill (None: it may not enter dev under this draw)."""
    if item.teacher.label == "pass":
        return "pass"
    if item.teacher.label != "fail":
        return None
    if dev_draw == "gross":
        return "fail" if item.teacher.agreement <= fail_max_agreement else None
    evidence = getattr(item.teacher, "evidence", "") or default
    return f"fail:{evidence}"


def split_by_task(
    items: Sequence[LabelledItem],
    *,
    seed: int,
    teacher: Callable[[LabelledItem], Any],
    n_dev_fail: int = 5,
    n_dev_pass: int = 5,
    n_locked: int = 40,
    fail_max_agreement: float = 0.5,
    dev_draw: str = "gross",
    strata: Sequence[str] = (),
) -> Splits:
    """Split `items` (see the module docstring); `teacher(item)` labels a dev candidate. ``strata``: the
    teacher's evidence classes, for the stratified draw (a failure without one counts as the first)."""
    if dev_draw != "gross":
        return _split_stratified(
            items,
            seed=seed,
            teacher=teacher,
            n_dev_fail=n_dev_fail,
            n_dev_pass=n_dev_pass,
            n_locked=n_locked,
            dev_draw=dev_draw,
            fail_max_agreement=fail_max_agreement,
            strata=strata,
        )
    by_task, order, rng = _tasks_in_seeded_order(items, seed)

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
        repaired = _assign_dev(
            order, shuffled, teacher, need_fail=n_dev_fail, need_pass=n_dev_pass, fail_max_agreement=fail_max_agreement
        )
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
            "mutants) or use a larger task subset"
        )

    return _rest(by_task, remaining, dev, dev_tasks, dropped, n_locked)


def _rest(
    by_task: Mapping[str, list[LabelledItem]],
    remaining: Sequence[str],
    dev: list[LabelledItem],
    dev_tasks: Sequence[str],
    dropped: int,
    n_locked: int,
) -> Splits:
    """Locked and train from the tasks left after the dev draw, and the dev tasks' other attempts as peers."""
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
        raise SplitError(
            f"only {len(locked)} items are left for the locked split (need {n_locked}); lower --n-locked or add outputs"
        )
    train = [it for task in train_tasks for it in sorted(by_task[task], key=lambda it: it.id)]
    if not train:
        raise SplitError("no tasks are left for the train split; lower --n-locked or add outputs")
    dev.sort(key=lambda it: (it.teacher_label, it.id))
    picked = {id(it) for it in dev}
    dev_peers = [
        it for task in sorted(dev_tasks) for it in sorted(by_task[task], key=lambda it: it.id) if id(it) not in picked
    ]
    return Splits(
        train=train,
        dev=dev,
        locked=locked,
        dropped=dropped,
        tasks={"train": sorted(train_tasks), "dev": sorted(dev_tasks), "locked": sorted(locked_tasks)},
        dev_peers=dev_peers,
    )


def _split_stratified(
    items: Sequence[LabelledItem],
    *,
    seed: int,
    teacher: Callable[[LabelledItem], Any],
    n_dev_fail: int,
    n_dev_pass: int,
    n_locked: int,
    dev_draw: str,
    fail_max_agreement: float,
    strata: Sequence[str],
) -> Splits:
    """The stratified dev draw (module docstring): the same seeded task order and one item per task;
    a failure enters dev when its stratum still has a place. A stratum no task can fill gives its
    places to the others (a second walk over the tasks not taken)."""
    by_task, order, rng = _tasks_in_seeded_order(items, seed)
    need = dev_quotas(dev_draw, n_dev_fail, n_dev_pass, strata)
    shuffled: dict[str, list[LabelledItem]] = {}
    picked: dict[str, LabelledItem] = {}

    def candidates(task: str) -> list[LabelledItem]:
        if task not in shuffled:
            c = sorted(by_task[task], key=lambda it: it.id)
            rng.shuffle(c)
            shuffled[task] = c
        return shuffled[task]

    def walk(accept: Callable[[str], bool]) -> None:
        for task in order:
            if task in picked or not any(need.values()):
                continue
            for item in candidates(task):
                if item.teacher is None:
                    item.teacher = teacher(item)
                key = _dev_key(item, dev_draw, fail_max_agreement, strata[0])
                if key is not None and accept(key):
                    picked[task] = item
                    take(key)
                    break

    def take(key: str) -> None:
        if need.get(key, 0) <= 0:  # the second walk: the place of a stratum the tasks could not fill
            key = next(k for k in need if k.startswith("fail:") and need[k] > 0)
        need[key] -= 1

    walk(lambda key: need.get(key, 0) > 0)
    short = sum(v for k, v in need.items() if k.startswith("fail:"))
    if short:  # give the places of strata the tasks cannot fill to the failures of any stratum
        walk(lambda key: key.startswith("fail:") and sum(v for k, v in need.items() if k.startswith("fail:")) > 0)
    if any(need.values()):
        missing_fail = sum(v for k, v in need.items() if k != "pass")
        raise SplitError(
            f"cannot fill the dev split with the {dev_draw} draw: still missing {missing_fail} failure(s) and "
            f"{need['pass']} clean positive(s) after scanning {len(order)} tasks; add outputs, use a larger task "
            "subset, or draw the gross failures (--dev-draw gross)"
        )
    dev_tasks = [t for t in order if t in picked]
    dev = [picked[t] for t in dev_tasks]
    dropped = sum(len(by_task[t]) - 1 for t in dev_tasks)
    remaining = [t for t in order if t not in picked]
    return _rest(by_task, remaining, dev, dev_tasks, dropped, n_locked)
