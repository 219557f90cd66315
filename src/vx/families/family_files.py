"""The files a builder writes into a family directory beside ``family.toml``: the JSON-lines files of the
splits (``train``, ``dev``, ``locked`` and the dev tasks' unlabeled ``peers``) and the seed expression.

Every builder that splits with :func:`vx.families.split.split_by_task` writes its splits through
:func:`write_splits`, so that the rows of every family have one shape: train and peer rows carry no label
(and no meta that would give one away), dev rows the teacher's label (or the truth, where a builder's dev
labels are the truth) with the golden reference, locked rows the truth.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vx.families.split import LabelledItem, Splits
from vx.text import json_dumps

__all__ = ["attempt_row", "write_jsonl", "write_seed", "write_splits"]


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]], *, sort_keys: bool = False) -> None:
    """One JSON document a line (`vx.text.json_dumps`: UTF-8, an unpaired surrogate kept as its escape)."""
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json_dumps(row, sort_keys=sort_keys) + "\n")


def attempt_row(item: LabelledItem) -> dict[str, Any]:
    """An unlabeled row: the item's id, task and output."""
    return {"id": item.id, "task": item.task, "output": item.output}


def write_splits(
    out: Path,
    splits: Splits,
    *,
    references: Mapping[str, Any] | None = None,
    dev_truth: bool = False,
    train_meta: bool = False,
    locked_detail: bool = True,
) -> None:
    """``train.jsonl``, ``dev.jsonl``, ``locked.jsonl`` and ``peers.jsonl`` (removed when the split has no
    peers, so that a rebuild keeps no stale file). ``references``: the golden answer per task, written into
    each dev row; ``dev_truth``: dev rows are labelled with the truth rather than the teacher's label;
    ``train_meta``: train rows keep the item's meta; ``locked_detail``: locked rows' meta adds the truth's
    detail."""
    write_jsonl(out / "train.jsonl", [_train_row(it, train_meta) for it in splits.train])
    write_jsonl(out / "dev.jsonl", [_dev_row(it, references, dev_truth) for it in splits.dev])
    write_jsonl(out / "locked.jsonl", [_locked_row(it, locked_detail) for it in splits.locked])
    peers = out / "peers.jsonl"
    if splits.dev_peers:
        write_jsonl(peers, [attempt_row(it) for it in splits.dev_peers])
    else:
        peers.unlink(missing_ok=True)


def _train_row(item: LabelledItem, meta: bool) -> dict[str, Any]:
    return {**attempt_row(item), "meta": item.meta} if meta else attempt_row(item)


def _locked_row(item: LabelledItem, detail: bool) -> dict[str, Any]:
    return {
        **attempt_row(item),
        "label": item.truth,
        "meta": {**item.meta, **item.truth_detail} if detail else {**item.meta},
    }


def _dev_row(item: LabelledItem, references: Mapping[str, Any] | None, truth: bool) -> dict[str, Any]:
    row = {**attempt_row(item), "label": item.truth if truth else item.teacher_label}
    if references is not None:
        row["reference"] = references[item.task]
    row["meta"] = {**item.meta, **item.teacher_meta}
    return row


def write_seed(out: Path, seed_expr: str | os.PathLike[str] | None, default: str) -> bool:
    """``seed.vx``: a copy of `seed_expr` when one is given, else `default` where the directory has no seed
    yet (an existing one is kept). Returns whether the default was written."""
    seed_path = out / "seed.vx"
    if seed_expr is not None:
        seed_path.write_text(Path(seed_expr).read_text(encoding="utf-8"), encoding="utf-8")
        return False
    if seed_path.exists():
        return False
    seed_path.write_text(default, encoding="utf-8")
    return True
