"""The LLM teacher: soft dev labels from comparing a candidate with the item's golden reference.

The teacher never judges unaided: an item without a golden reference (the dev item's ``reference``,
else the task's ``reference``) is skipped. For each item the ``teacher`` role sees the task, the
reference and the candidate, and answers in a fixed format, parsed strictly::

    VERDICT: PASS          (or FAIL)
    P_PASS: 0.85           (its probability that the candidate is correct, in [0, 1])
    REASON: one sentence   (optional)

The verdict and the probability must agree (PASS with P_PASS >= 0.5, FAIL below). Anything else is
recorded as unparsable, with the raw reply, and gives no label. Results are written with the family
as ``teacher_labels.jsonl`` (one line per item: id, task, label = P(pass) or null, verdict, model,
reason or raw reply), next to the labels they may be compared with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.inputs import read_json_lines
from vx.ops.judge import render_output, render_task
from vx.text import json_dumps

LABELS_FILE = "teacher_labels.jsonl"

SYSTEM = """You grade one candidate output for a task by comparing it with a golden reference output \
that is known to be correct. The candidate passes when it is correct for the task in the same way as the \
reference: for code, when it behaves like the reference on every input the task allows (formatting, \
naming and style do not matter).

Reply in exactly this format, nothing else:
VERDICT: PASS
P_PASS: <your probability, from 0 to 1, that the candidate is correct>
REASON: <one short sentence>
(VERDICT is PASS or FAIL; P_PASS must be at least 0.5 for PASS and below 0.5 for FAIL; the REASON line \
may be left out.)"""

_VERDICT = re.compile(r"VERDICT:[ \t]*(PASS|FAIL)[ \t]*", re.IGNORECASE)
_PPASS = re.compile(r"P_PASS:[ \t]*([01](?:\.\d+)?|\.\d+)[ \t]*", re.IGNORECASE)
_REASON = re.compile(r"REASON:[ \t]*(.*)", re.IGNORECASE)


@attrs.frozen
class TeacherAnswer:
    label: float | None  # P(pass), or None when the reply does not follow the format
    verdict: str | None
    reason: str
    raw: str


def parse_teacher(text: str) -> TeacherAnswer:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    bad = TeacherAnswer(None, None, "", text)
    if len(lines) not in (2, 3):
        return bad
    v, p = _VERDICT.fullmatch(lines[0]), _PPASS.fullmatch(lines[1])
    if v is None or p is None:
        return bad
    reason = ""
    if len(lines) == 3:
        r = _REASON.fullmatch(lines[2])
        if r is None:
            return bad
        reason = r.group(1).strip()
    prob = float(p.group(1))
    verdict = v.group(1).lower()
    if not (math.isfinite(prob) and 0.0 <= prob <= 1.0) or (verdict == "pass") != (prob >= 0.5):
        return bad
    return TeacherAnswer(prob, verdict, reason, text)


def reference_of(item: Any, task: Mapping[str, Any]) -> Any:
    ref = getattr(item, "reference", None)
    return ref if ref not in (None, "") else task.get("reference")


def teacher_prompt(task: Mapping[str, Any], reference: Any, output: Any) -> str:
    return (
        f"<task>\n{render_task(task)}\n</task>\n\n<reference>\n{render_output(reference)}\n</reference>\n\n"
        f"<candidate>\n{render_output(output)}\n</candidate>"
    )


def teach_items(client: Any, items: Iterable[Any], tasks: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Label `items` (objects with id, task, output, reference) with the teacher role; one record per item."""
    from vx.llm.client import BudgetExceeded, LLMError

    records: list[dict[str, Any]] = []
    todo: list[tuple[Any, Mapping[str, Any], Any]] = []
    for it in items:
        task = tasks[it.task]
        ref = reference_of(it, task)
        if ref is None:
            records.append(
                {
                    "id": it.id,
                    "task": it.task,
                    "label": None,
                    "skipped": "no golden reference (the teacher never judges unaided)",
                }
            )
        else:
            todo.append((it, task, ref))
    prompts = [{"messages": teacher_prompt(task, ref, it.output), "system": SYSTEM} for it, task, ref in todo]
    results = client.complete_many("teacher", prompts)
    for (it, _task, _ref), res in zip(todo, results, strict=True):
        rec: dict[str, Any] = {"id": it.id, "task": it.task}
        if isinstance(res, BudgetExceeded):
            rec.update(label=None, error=str(res))
        elif isinstance(res, LLMError):
            rec.update(label=None, error=str(res))
        else:
            ans = parse_teacher(res.text)
            rec.update(label=ans.label, verdict=ans.verdict, model=res.model, key=res.key)
            if ans.label is None:
                rec["raw"] = ans.raw
            elif ans.reason:
                rec["reason"] = ans.reason
        records.append(rec)
    order = {it.id: i for i, it in enumerate(items)} if isinstance(items, list) else None
    if order is not None:
        records.sort(key=lambda r: order.get(r["id"], 0))
    return records


def write_labels(family_dir: str | Path, records: list[dict[str, Any]]) -> Path:
    """Write the teacher's records to ``<family>/teacher_labels.jsonl`` (replacing an older file)."""
    path = Path(family_dir) / LABELS_FILE
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json_dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")
    tmp.replace(path)
    return path


def read_labels(family_dir: str | Path) -> dict[str, dict[str, Any]]:
    path = Path(family_dir) / LABELS_FILE
    if not path.is_file():
        return {}
    out = {}
    for n, rec, _ in read_json_lines(path, "teacher labels file", objects=True, error=DataError):
        if not isinstance(rec.get("id"), str):
            raise DataError(f'{path}:{n}: a teacher label needs the string "id" of the item it labels')
        out[rec["id"]] = rec
    return out


def agreement(records: Iterable[Mapping[str, Any]], labels: Mapping[str, float | None]) -> dict[str, Any]:
    """How the teacher's hard verdicts compare with the split's labels (both thresholded at 0.5)."""
    n = agree = 0
    for r in records:
        lab = labels.get(r["id"])
        if r.get("label") is None or lab is None:
            continue
        n += 1
        agree += (r["label"] >= 0.5) == (lab >= 0.5)
    return {"compared": n, "agree": agree, "agreement": agree / n if n else float("nan")}


def teach_family(client: Any, family: Any, split: str = "dev") -> tuple[Path, list[dict[str, Any]], dict[str, Any]]:
    """Label a family's split with the teacher; write teacher_labels.jsonl; return (path, records, agreement)."""
    items = list(family.split(split).items)
    records = teach_items(client, items, family.tasks)
    path = write_labels(family.dir, records)
    return path, records, agreement(records, {it.id: it.label for it in items})


def apply_labels(dev_path: str | Path, records: Iterable[Mapping[str, Any]]) -> int:
    """Write the teacher's soft labels into a split file (e.g. dev.jsonl) as each item's ``label``.

    Only items the teacher labelled change; the label they had is kept in ``meta.label_before`` and the
    teacher's model and verdict in ``meta.teacher``. Other lines are written back unchanged. Returns the
    number of items relabelled (blank lines are not written back)."""
    path = Path(dev_path)
    by_id = {r["id"]: r for r in records if r.get("label") is not None}
    out, changed = [], 0
    hard: set[str] = set()
    for _, obj, line in read_json_lines(path, "split file", error=DataError):
        rec = by_id.get(obj.get("id")) if isinstance(obj, dict) else None
        if rec is None:
            out.append(line)
            label = obj.get("label") if isinstance(obj, dict) else None
            if isinstance(label, str):
                hard.add(label.strip().lower())
            elif isinstance(label, (int, float)):
                hard.add("pass" if label >= 0.5 else "fail")
            continue
        hard.add("pass" if rec["label"] >= 0.5 else "fail")
        meta = dict(obj.get("meta") or {})
        meta.setdefault("label_before", obj.get("label"))
        meta["teacher"] = {"model": rec.get("model"), "verdict": rec.get("verdict"), "p_pass": rec["label"]}
        obj["label"] = rec["label"]
        obj["meta"] = meta
        out.append(json_dumps(obj))
        changed += 1
    lacking = {"pass", "fail"} - hard
    if lacking:
        raise ValueError(
            f"{path}: with the teacher's labels the split would have no {'/'.join(sorted(lacking))} "
            "items, and evolution needs both classes; nothing was written"
        )
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("\n".join(out) + "\n", encoding="utf-8")
    tmp.replace(path)
    return changed
