"""Build the report family directory from hand-written task sources.

Sources are TOML files (``sources/*.toml``), one per topic: a ``topic``, a default ``[caliber]``
and ``[[tasks]]`` with title, purpose, cards, vocabulary and a golden section (a task may
override caliber keys with its own ``caliber`` table). `build_family` validates every task, then
splits the *tasks* (never items of one task across splits) by a seeded shuffle:

* **dev** — 10 tasks: five golden sections (label pass) and five *drafts* (label fail) — two
  or three degradations compounded, the way a weak writer's first draft fails on several counts
  at once — chosen so that together they cover as many failure classes as
  possible (class-stratified; the tag-without-value gaming class always among them), each with
  its golden section as ``reference`` and its classes in ``meta``;
* **locked** — ≥ 40 items: per task its golden section and two drafts, drawn like dev's failures
  (dev and locked come from one population); labels come from the RAQS-style rubric
  (`rubric.label`), a partial proxy, with the rubric score and the construction label in ``meta``;
* **train** — the remaining tasks: golden, every applicable single-class degradation and three drafts,
  unlabeled and with no meta (nothing about how an item was made leaks into evolution).

Item ids are opaque (``storage-03#4``); the numbering is shuffled so an id says nothing of its label.
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import BuildError
from vx.families.build_report import BuildReport
from vx.families.family_files import write_jsonl
from vx.families.family_toml import write_family_toml
from vx.families.report.data import rubric
from vx.families.report.data.degrade import DEGRADATIONS, degrade
from vx.families.report.model import ReportTask, TaskError
from vx.text import file_lines

GAMING_CLASS = "value_erasure"
DEFAULT_SEED_EXPR = "(any uncited_claims ledger_metric_uncovered value_erasure missing_tldr)"


def load_sources(sources: str | Path) -> list[ReportTask]:
    """Every task of every ``*.toml`` file under `sources` (a directory or one file), validated."""
    src = Path(sources)
    files = sorted(src.glob("*.toml")) if src.is_dir() else [src]
    if not files or not all(f.is_file() for f in files):
        raise BuildError(f"{src}: no task source files (*.toml) found")
    problems: list[str] = []
    tasks: list[ReportTask] = []
    seen: dict[str, str] = {}
    for f in files:
        text = f.read_text(encoding="utf-8")
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            problems.append(f"{f}: invalid TOML: {exc}")
            continue
        topic = doc.get("topic", f.stem)
        default_cal = doc.get("caliber", {})
        raw = doc.get("tasks")
        if not isinstance(raw, list) or not raw:
            problems.append(f"{f}: no [[tasks]] found")
            continue
        for i, t in enumerate(raw):
            tid = t.get("id", f"#{i + 1}") if isinstance(t, dict) else f"#{i + 1}"
            task_line = _line_of(text, f'"{tid}"')
            where = f"{f}:{task_line}: task {tid}" if task_line else f"{f}: task {tid}"
            if not isinstance(t, dict):
                problems.append(f"{where}: expected a table")
                continue
            cal = t.get("caliber", {})
            merged = {**default_cal, **cal} if isinstance(cal, dict) and isinstance(default_cal, dict) else cal
            try:
                rt = ReportTask.from_dict({**t, "caliber": merged, "topic": t.get("topic", topic)})
            except TaskError as exc:
                for p in exc.problems:  # point at the card or metric the problem names, when it can be found
                    ref = re.match(r"([EM]\d{2,5})[.:]", p)
                    line = _line_of(text, f'"{ref.group(1)}"', after=task_line) if ref else 0
                    problems.append(f"{f}:{line}: task {tid}: {p}" if line else f"{where}: {p}")
                continue
            if rt.golden is None:
                problems.append(f"{where}: a bundled task needs a 'golden' section")
                continue
            if rt.id in seen:
                problems.append(f"{where}: duplicate task id (also in {seen[rt.id]})")
                continue
            seen[rt.id] = str(f)
            tasks.append(rt)
    if problems:
        raise BuildError(f"{len(problems)} problem(s) in the task sources:\n  " + "\n  ".join(problems))
    return tasks


def _line_of(text: str, needle: str, after: int = 0) -> int:
    """1-based line of the first occurrence of `needle` at or after line `after` (0 if absent)."""
    for n, line in enumerate(file_lines(text), 1):
        if n >= after and needle in line:
            return n
    return 0


def _variant(rt: ReportTask, cls: str, seed: int) -> str | None:
    return degrade(rt, cls, random.Random(f"{seed}:{rt.id}:{cls}"))


def _golden(rt: ReportTask) -> str:
    """A source task's golden section (every source task has one: `load_sources` checks)."""
    assert rt.golden is not None
    return rt.golden


def draft(rt: ReportTask, seed: int, k: int = 0) -> tuple[list[str], str] | None:
    """A compounded degradation: two or three distinct classes applied in turn (no title loss)."""
    rng = random.Random(f"{seed}:{rt.id}:draft:{k}")
    classes = [c for c in DEGRADATIONS if c != "no_title_or_not_markdown"]
    rng.shuffle(classes)
    want = rng.choice((2, 3))
    text: str = _golden(rt)
    used: list[str] = []
    for c in classes:
        out = degrade(rt, c, random.Random(f"{seed}:{rt.id}:draft:{k}:{c}"), text=text)
        if out is not None:
            text, used = out, used + [c]
        if len(used) == want:
            return used, text
    return (used, text) if len(used) >= 2 else None


def build_family(
    sources: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    dev_pairs: int = 5,
    n_locked: int = 40,
    locked_variants: int = 2,
    train_drafts: int = 3,
    seed_expr: str | None = None,
    progress: Callable[[str, int | None, int], None] | None = None,
) -> BuildReport:
    """Write family.toml, tasks.jsonl, train/dev/locked.jsonl (and seed.vx when absent) to `out_dir`."""
    tasks = sorted(load_sources(sources), key=lambda t: t.id)
    rng = random.Random(seed)
    order = tasks[:]
    rng.shuffle(order)
    n_dev = 2 * dev_pairs
    per_locked = 1 + locked_variants
    n_locked_tasks = math.ceil(n_locked / per_locked)
    if len(order) < n_dev + n_locked_tasks + 1:
        raise BuildError(
            f"{len(order)} tasks are too few: dev needs {n_dev}, locked {n_locked_tasks} "
            f"(for {n_locked} items) and train at least 1"
        )
    dev_tasks, locked_tasks = order[:n_dev], order[n_dev : n_dev + n_locked_tasks]
    train_tasks = order[n_dev + n_locked_tasks :]
    tick = progress or (lambda stage, total, advance: None)
    dev, covered = _dev_items(dev_tasks, dev_pairs, seed, tick)
    locked = _locked_items(locked_tasks, locked_variants, seed, tick)
    train = _train_items(train_tasks, train_drafts, seed, tick)
    for name, items in (("dev", dev), ("locked", locked), ("train", train)):
        _number(items, random.Random(f"{seed}:ids:{name}"))
    out_path = Path(out_dir)
    out_path.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_path / "tasks.jsonl", [rt.record() for rt in tasks])
    write_jsonl(out_path / "dev.jsonl", dev)
    write_jsonl(out_path / "locked.jsonl", locked)
    write_jsonl(out_path / "train.jsonl", train)
    seed_path = out_path / "seed.vx"
    notes: list[str] = []
    if not seed_path.exists():
        text = (
            Path(seed_expr).read_text(encoding="utf-8")
            if seed_expr
            else (
                "; family: report\n; the default seed composition (vx.families.report.data.build)\n"
                + DEFAULT_SEED_EXPR
                + "\n"
            )
        )
        seed_path.write_text(text, encoding="utf-8")
    else:
        notes.append(f"kept the existing {seed_path}")

    agree = sum((it["label"] == "fail") == (it["meta"]["construction"] == "fail") for it in locked)
    counts = {
        "tasks": len(tasks),
        "topics": len({t.topic for t in tasks}),
        "train": len(train),
        "dev": len(dev),
        "locked": len(locked),
        "locked pass (rubric)": sum(it["label"] == "pass" for it in locked),
        "locked fail (rubric)": sum(it["label"] == "fail" for it in locked),
    }
    provenance = {
        "builder": "vx.families.report.data.build",
        "seed": seed,
        "sources": str(Path(sources)),
        "tasks": len(tasks),
        "topics": sorted({t.topic for t in tasks}),
        "dev_tasks": [t.id for t in dev_tasks],
        "locked_tasks": [t.id for t in locked_tasks],
        "train_tasks": [t.id for t in train_tasks],
        "dev_failure_classes": sorted(covered),
        "locked_labels": (
            f"rubric >= {rubric.PASS_THRESHOLD:g} is pass (vx.families.report.data.rubric, a partial proxy)"
        ),
        "locked_rubric_vs_construction": round(agree / len(locked), 3),
        "degradations": sorted(DEGRADATIONS),
    }
    _write_family_toml(out_path / "family.toml", provenance)
    if agree < len(locked):
        notes.append(
            f"the rubric disagrees with how {len(locked) - agree} of {len(locked)} locked items were "
            "made (a degraded section it still passes, or the reverse): it is a partial proxy"
        )
    return BuildReport(out_path, counts, provenance, notes)


def _dev_items(
    dev_tasks: Sequence[ReportTask], dev_pairs: int, seed: int, tick: Callable[[str, int | None, int], None]
) -> tuple[list[dict[str, Any]], set[str]]:
    """Dev: five goldens and five drafts whose classes together cover as much of the taxonomy as they can
    (class-stratified); the first draft always contains the tag-without-value gaming class. Returns the
    items and the failure classes they cover."""
    dev: list[dict[str, Any]] = []
    tick("dev", len(dev_tasks), 0)
    covered: set[str] = set()
    for rt in dev_tasks[:dev_pairs]:
        dev.append(_item(rt, _golden(rt), "pass", None, reference=_golden(rt)))
        tick("dev", None, 1)
    for j, rt in enumerate(dev_tasks[dev_pairs:]):
        options = [d for k in range(24) for d in [draft(rt, seed, 100 + k)] if d]
        if j == 0:
            options = [d for d in options if GAMING_CLASS in d[0]] or options
        if not options:
            raise BuildError(f"task {rt.id}: no two degradations apply; cannot make a dev failure")
        classes_, out = max(options, key=lambda d: len(set(d[0]) - covered))
        if j == 0 and GAMING_CLASS in classes_:  # name the gaming class first: it is why the draft exists
            classes_ = [GAMING_CLASS] + [c for c in classes_ if c != GAMING_CLASS]
        covered |= set(classes_)
        dev.append(_item(rt, out, "fail", list(classes_), reference=_golden(rt)))
        tick("dev", None, 1)
    return dev, covered


def _locked_items(
    locked_tasks: Sequence[ReportTask], locked_variants: int, seed: int, tick: Callable[[str, int | None, int], None]
) -> list[dict[str, Any]]:
    """Locked: golden + drafts, the same kind of failure as dev's; labels from the rubric."""
    locked: list[dict[str, Any]] = []
    tick("locked", len(locked_tasks) * (1 + locked_variants), 0)
    for rt in locked_tasks:
        made: list[tuple[Any, str]] = [(None, _golden(rt))]
        made += [
            (d[0], d[1])
            for k in range(4 * locked_variants)
            for d in [draft(rt, seed, k)]
            if d and all(d[1] != m for _, m in made)
        ][:locked_variants]
        for cls, out in made:
            sc = rubric.score(rt, out)
            lab = "pass" if sc.total >= rubric.PASS_THRESHOLD else "fail"
            locked.append(_item(rt, out, lab, cls, rubric_score=sc.total))
            tick("locked", None, 1)
    return locked


def _train_items(
    train_tasks: Sequence[ReportTask], train_drafts: int, seed: int, tick: Callable[[str, int | None, int], None]
) -> list[dict[str, Any]]:
    """Train: golden + every applicable degradation, unlabeled, no meta."""
    train: list[dict[str, Any]] = []
    tick("train", len(train_tasks), 0)
    for rt in train_tasks:
        outs = [_golden(rt)] + [o for c in DEGRADATIONS for o in [_variant(rt, c, seed)] if o is not None]
        outs += [d[1] for k in range(train_drafts) for d in [draft(rt, seed, k + 1)] if d]
        train.extend({"task": rt.id, "output": o} for o in outs)
        tick("train", None, 1)
    return train


def _item(
    rt: ReportTask,
    output: str,
    label: str,
    cls: str | list[str] | None,
    *,
    reference: str | None = None,
    rubric_score: float | None = None,
) -> dict[str, Any]:
    """An item; `cls` is the failure class, a draft's list of classes, or None for the golden."""
    item: dict[str, Any] = {"task": rt.id, "output": output, "label": label}
    if reference is not None:
        item["reference"] = reference
    meta: dict[str, Any] = {"degradation": cls[0] if isinstance(cls, list) else cls}
    if isinstance(cls, list):
        meta["classes"] = list(cls)
    if rubric_score is not None:
        meta["rubric"] = rubric_score
    meta["construction"] = "pass" if cls is None else "fail"
    item["meta"] = meta
    return item


def _number(items: list[dict[str, Any]], rng: random.Random) -> None:
    """Give items opaque ids `<task>#<k>` with k shuffled within each task; keep file order stable."""
    by_task: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        by_task.setdefault(it["task"], []).append(it)
    for tid, group in by_task.items():
        ks = list(range(len(group)))
        rng.shuffle(ks)
        for it, k in zip(group, ks, strict=True):
            it["id"] = f"{tid}#{k}"
    items.sort(key=lambda it: (it["task"], it["id"]))
    for i, it in enumerate(items):
        items[i] = {"id": it["id"], **{k: v for k, v in it.items() if k != "id"}}


def _write_family_toml(path: Path, provenance: Mapping[str, Any]) -> None:
    write_family_toml(
        path,
        comments=[
            "Generated by `vx data build report` (vx.families.report.data.build); edit the sources, not this file.",
            "objective: w = 0.25, as op consensus is a weaker regularizer on reports (docs/design.md §5)",
        ],
        name="report",
        description="Analyst-report sections written from audited evidence cards (caliber, cards, metric "
        "vocabulary); outputs are golden sections and systematic degradations",
        packs=["report"],
        root="has_title",
        objective={"w": 0.25, "fail_weight": 2.0},
        provenance=provenance,
    )
