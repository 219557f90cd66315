"""A person's labels for the anchor: moving an unlabeled item into the dev split (``vx anchor label``).

For a family without ground truth, choosing what to label is the hardest step (`vx.evolve.anchor`
suggests items). Labelling an item here:

* moves it from ``train.jsonl`` (or ``peers.jsonl``) into ``dev.jsonl`` with the label (and the
  task's golden reference, when the family's dev items carry one for that task);
* moves the item's task-mates from train into ``peers.jsonl`` -- splits stay disjoint by task, and a
  peer op still sees every attempt at the task (``[splits] peers`` is added to family.toml when new);
  in a family whose splits share tasks with the locked split, such task-mates stay in train;
* relabels an item already in dev (the previous label is recorded);
* never touches the locked split;
* records every label in ``anchor.jsonl`` (time, item, task, label, previous label, note, what moved).

The dev split must hold both classes (`vx.families.family`): while it would hold only one, a label is
kept *pending* in ``anchor.jsonl`` and the item stays where it is; the label that brings the other class
moves every pending item in. After a move the family is loaded again; if it no longer loads, every file
is restored and the error is raised.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from vx.families.family import Family, FamilyError
from vx.inputs import read_json_lines
from vx.ops.item import parse_label
from vx.text import file_lines

__all__ = ["ANCHOR_LOG", "AnchorError", "Labelled", "anchor_log", "cli_label", "label_item"]

ANCHOR_LOG = "anchor.jsonl"


class AnchorError(FamilyError):
    """A label that cannot be recorded (unknown item, a locked item, a bad label)."""

    def __init__(self, message: str, directory: str = "") -> None:
        super().__init__([message], directory)


@attrs.frozen
class Labelled:
    """What `label_item` did."""

    item: str
    task: str
    label: str
    previous: str | None  # the item's earlier label (a relabel), or None
    moved: bool  # the item is in dev now (False: pending until dev has both classes)
    peers_moved: int  # its task-mates moved from train to peers.jsonl
    pending_moved: tuple[str, ...] = ()  # earlier pending labels that moved in with this one

    def summary(self) -> str:
        if not self.moved:
            return (
                f"{self.item}: labelled {self.label} (pending: the dev split needs a pass and a fail; it moves "
                "into dev with the first label of the other class)"
            )
        what = "relabelled" if self.previous is not None else "moved into dev"
        extra = f"; {self.peers_moved} other attempt(s) of {self.task} moved to peers" if self.peers_moved else ""
        pend = f"; with it, pending {', '.join(self.pending_moved)}" if self.pending_moved else ""
        prev = f" (was {self.previous})" if self.previous is not None else ""
        return f"{self.item}: {what} as {self.label}{prev}{extra}{pend}"


def anchor_log(directory: str | Path) -> list[dict[str, Any]]:
    """The family's recorded labels, oldest first (empty when none). A record that is not one vx wrote
    (not JSON, not an object, no item, a label that is none of pass/fail/P(pass), an unknown status) is
    an AnchorError naming its line."""
    path = Path(directory) / ANCHOR_LOG
    if not os.path.lexists(path):
        return []
    fix = "fix or delete that line (it is only the record; the labels themselves are in dev.jsonl)"
    rows = read_json_lines(path, "anchor log", error=AnchorError, hint=fix)
    return [_log_record(path, n, row) for n, row, _ in rows]


def _log_record(path: Path, n: int, rec: Any) -> dict[str, Any]:
    fix = "fix or delete that line (it is only the record; the labels themselves are in dev.jsonl)"
    if not isinstance(rec, dict):
        raise AnchorError(f"{path}:{n}: expected a label record (a JSON object), got {type(rec).__name__}; {fix}")
    if not isinstance(rec.get("item"), str):
        raise AnchorError(f'{path}:{n}: a label record needs the item\'s id as a string ("item"); {fix}')
    if rec.get("status") not in ("pending", "moved"):
        raise AnchorError(f'{path}:{n}: status {rec.get("status")!r} is neither "pending" nor "moved"; {fix}')
    try:
        parse_label(rec.get("label"))
    except ValueError as exc:
        raise AnchorError(f"{path}:{n}: {exc}; {fix}") from None
    pending = rec.get("with_pending")
    if pending is not None and not (isinstance(pending, list) and all(isinstance(p, str) for p in pending)):
        raise AnchorError(f'{path}:{n}: "with_pending" must be a list of item ids; {fix}')
    return rec


def _lines(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(line text, record) of a split file's items (none when it is absent)."""
    if not os.path.lexists(path):
        return []
    rows = []
    for n, obj, line in read_json_lines(path, "split file", error=AnchorError):
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not isinstance(obj.get("task"), str):
            raise AnchorError(f'{path}:{n}: an item needs string "id" and "task"')
        rows.append((line, obj))
    return rows


def cli_label(text: str) -> str | float:
    """A label as typed on the command line: ``pass``, ``fail`` or a probability of pass (``0.7``), as
    dev.jsonl holds it (docs/design.md §4: ``"label": "fail" | "pass" | 0.8``). Raises AnchorError."""
    word = text.strip().lower()
    if word in ("pass", "fail"):
        return word
    try:
        value = float(word)
    except ValueError:
        value = None
    try:
        return parse_label(value if value is not None else text)
    except ValueError:
        raise AnchorError(
            f"{text!r} is not a label: use pass, fail or a probability of pass in [0, 1] (such as 0.7)"
        ) from None


@contextmanager
def _exclusive(d: Path) -> Iterator[None]:
    """Hold the family directory locked (``flock`` on the directory itself, so no lock file is left
    behind): one label at a time reads and rewrites the family's files."""
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise AnchorError(f"{d}: cannot open the family directory ({exc.strerror})") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _dump(row: Mapping[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=True)  # ASCII: any str Python holds, lone surrogates included


def _write(path: Path, lines: list[str]) -> None:
    """Replace a file by `lines` atomically (a temporary file renamed into place)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    os.replace(tmp, path)


def label_item(directory: str | Path, item_id: str, label: str | float, *, note: str | None = None) -> Labelled:
    """Label ``item_id`` of the family at ``directory`` as ``label`` ("pass", "fail" or a P(pass), also as
    text: "0.7"). Labels of one family are recorded one at a time (a lock on its anchor log), so
    concurrent calls all succeed, in some order."""
    d = Family(directory).dir
    text_label: Any = cli_label(label) if isinstance(label, str) else label
    try:
        p = parse_label(text_label)
    except ValueError as exc:
        raise AnchorError(
            f"{label!r} is not a label: {exc} (use pass, fail or a probability of pass)", str(d)
        ) from None
    with _exclusive(d):
        return _label(Family(d), item_id, text_label, p, note)


def _label(fam: Family, item_id: str, text_label: Any, p: float, note: str | None) -> Labelled:
    d = fam.dir
    hard = "pass" if p >= 0.5 else "fail"
    if item_id in fam.audit().split.ids:
        raise AnchorError(
            f"{item_id} is a locked item: the locked split only audits, it is never labelled "
            "or moved (choose a train item; `vx anchor suggest` proposes some)",
            str(d),
        )
    cfg_splits = fam.config.get("splits") or {}
    paths = {name: d / str(cfg_splits.get(name, f"{name}.jsonl")) for name in ("train", "dev")}
    paths["peers"] = fam.peers_path or d / "peers.jsonl"
    rows = {name: _lines(path) for name, path in paths.items()}
    where, obj = _find(d, item_id, rows)
    task = obj["task"]
    previous = None
    if where == "dev":
        previous = obj.get("label")
        previous = previous if isinstance(previous, str) else str(previous)
    pending = _pending(anchor_log(d), rows)
    dev_classes = {
        ("pass" if parse_label(o["label"]) >= 0.5 else "fail") for _, o in rows["dev"] if o.get("id") != item_id
    }
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "item": item_id,
        "task": task,
        "label": text_label,
        "previous": previous,
        "note": note,
        "from": where,
    }
    to_move = {item_id: (text_label, hard)}
    if {hard} | dev_classes != {"pass", "fail"}:
        _append_log(d, {**record, "status": "pending"})
        return Labelled(item_id, task, hard, previous, False, 0)
    for pid, lab in pending.items():  # pending labels move in now that dev has both classes
        to_move.setdefault(pid, (lab, "pass" if parse_label(lab) >= 0.5 else "fail"))
    new, peers_moved = _moved(fam, rows, {k: v[0] for k, v in to_move.items()})
    _rewrite(d, paths, new, add_peers="peers" not in cfg_splits)
    _append_log(
        d,
        {
            **record,
            "status": "moved",
            "peers_moved": peers_moved,
            "with_pending": sorted(p for p in to_move if p != item_id),
        },
    )
    return Labelled(item_id, task, hard, previous, True, peers_moved, tuple(sorted(p for p in to_move if p != item_id)))


_Rows = Mapping[str, list[tuple[str, dict[str, Any]]]]


def _find(d: Path, item_id: str, rows: _Rows) -> tuple[str, dict[str, Any]]:
    """The split (train, dev or peers) holding `item_id`, and its row; an unknown id is an error naming the
    nearest ids."""
    for name, rs in rows.items():
        for _, obj in rs:
            if obj.get("id") == item_id:
                return name, obj
    import difflib

    known = [obj["id"] for rs in rows.values() for _, obj in rs]
    near = difflib.get_close_matches(item_id, known, n=3)
    raise AnchorError(
        f"no train, dev or peer item {item_id!r} in {d}" + (f" -- did you mean {', '.join(near)}?" if near else ""),
        str(d),
    )


def _moved(fam: Family, rows: _Rows, labels: Mapping[str, Any]) -> tuple[dict[str, list[str]], int]:
    """The new lines of train, peers and dev once the items `labels` names move into dev with their labels
    (and the golden reference of their task); the number of task-mates moved from train to peers."""
    references = {o["task"]: o.get("reference") for _, o in rows["dev"] if o.get("reference") is not None}
    task_refs = {t: v.get("reference") for t, v in fam.tasks.items() if isinstance(v, dict) and "reference" in v}
    locked_tasks = {it.task for it in fam.audit().split.items}
    # a task of the locked split keeps its train attempts where they are: peers.jsonl holds dev tasks'
    # attempts only (a family whose splits are not disjoint by task stays as it was in that respect)
    moved_tasks = {
        rows_obj["task"] for name in ("train", "peers") for _, rows_obj in rows[name] if rows_obj.get("id") in labels
    } - locked_tasks
    new_dev = [line if o.get("id") not in labels else _dump({**o, "label": labels[o["id"]]}) for line, o in rows["dev"]]
    peers_moved = 0
    new_train, new_peers = [], [line for line, o in rows["peers"] if o.get("id") not in labels]
    for line, o in rows["train"]:
        if o.get("id") in labels:
            continue
        if o.get("task") in moved_tasks:  # a task-mate: unlabeled, it becomes a dev peer
            new_peers.append(_dump({"id": o["id"], "task": o["task"], "output": o["output"]}))
            peers_moved += 1
            continue
        new_train.append(line)
    for name in ("train", "peers"):
        for _, o in rows[name]:
            if o.get("id") in labels:
                ref = references.get(o["task"], task_refs.get(o["task"]))
                row = {
                    "id": o["id"],
                    "task": o["task"],
                    "output": o["output"],
                    "label": labels[o["id"]],
                    **({"reference": ref} if ref is not None else {}),
                    **({"meta": o["meta"]} if o.get("meta") else {}),
                }
                new_dev.append(_dump(row))
    return {"train": new_train, "peers": new_peers, "dev": new_dev}, peers_moved


def _rewrite(d: Path, paths: Mapping[str, Path], new: Mapping[str, list[str]], *, add_peers: bool) -> None:
    """Write the new train, peers and dev files (family.toml names peers.jsonl when `add_peers` and it is
    written); if anything fails, or the family no longer loads, every file is put back as it was."""
    files = {**paths, "toml": d / "family.toml"}
    originals = {name: path.read_bytes() if path.is_file() else None for name, path in files.items()}
    try:
        _write(paths["train"], new["train"])
        if new["peers"] or paths["peers"].is_file():
            _write(paths["peers"], new["peers"])
            if add_peers:
                _add_peers_to_toml(d / "family.toml", paths["peers"].name)
        _write(paths["dev"], new["dev"])
        Family(d)  # the family still loads, or everything is put back
    except Exception:
        for name, path in files.items():
            original = originals[name]
            if original is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(original)
        raise


def _pending(log: list[dict[str, Any]], rows: Mapping[str, list[tuple[str, dict[str, Any]]]]) -> dict[str, Any]:
    """Labels recorded as pending that no later move carried out (the latest label of an item wins)."""
    known = {o.get("id") for rs in rows.values() for _, o in rs}
    out: dict[str, Any] = {}
    for rec in log:
        if rec.get("status") == "pending" and rec.get("item") in known:
            out[rec["item"]] = rec["label"]
        elif rec.get("status") == "moved":
            out.pop(str(rec.get("item")), None)
            for p in rec.get("with_pending") or ():
                out.pop(p, None)
    return out


def _append_log(d: Path, record: Mapping[str, Any]) -> None:
    with (d / ANCHOR_LOG).open("a", encoding="utf-8") as fh:
        fh.write(_dump(record) + "\n")


def _add_peers_to_toml(path: Path, name: str) -> None:
    """Name the peers file under ``[splits]`` (added when the family had none), keeping the rest as it is."""
    lines = file_lines(path.read_text(encoding="utf-8"))
    for i, line in enumerate(lines):
        if line.strip() == "[splits]":
            lines.insert(i + 1, f'peers = "{name}"')
            break
    else:
        lines += ["", "[splits]", f'peers = "{name}"']
    _write(path, lines)
