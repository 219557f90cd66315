"""The single-turn tools family builder behind ``vx data build tools``: BFCL's questions with many
models' answers each, labelled by BFCL.

Input: a folder with ``single/<category>.jsonl.gz`` (``../shared/data/tools``, see its README): one JSON
object per line per (question, model) -- ``task_id``, ``category``, ``model``, ``question``,
``functions``, ``output_raw`` (the answer as the model returned it), ``label`` (BFCL's official verdict),
and what BFCL's checker reads (``output_decoded``, ``decode_error``, ``possible_answer``,
``fc_name_dots_replaced``). The categories are ``simple``, ``multiple_function``, ``parallel_function``,
``parallel_multiple_function`` and ``relevance`` (none of the offered functions fits: the right answer
calls nothing).

What it writes (the family format of docs/ARCHITECTURE.md): a task per question -- ``question``,
``functions`` and ``category`` (provenance; no op reads it), never the possible answers -- and an item
per answer, ``<question>::<model>``, whose output is ``output_raw``. Labels: **locked** = BFCL's
``label``; **dev** = the same label (ten anchored items: five failures stratified by BFCL's error class
-- a wrong value, a wrong call or count, a call where none fits, an answer its model's decoder could not
read -- and five
passes). With ``bfcl-eval`` importable every label is first re-derived with BFCL's own AST checker
(:mod:`.bfcl`) and the agreement is reported; without it the build says so and keeps the file's label.
Splits are disjoint by question (:func:`vx.families.split.split_by_task`): the other answers of the dev
questions are unlabeled peers (``peers.jsonl``). Bad input lines (not JSON, fields missing, a second
answer of one model to one question) are skipped, counted and listed with the reason.

The build also measures the family's decoder on every answer (:func:`decoder_agreement`): which share it
reads (calls, or a reply in words), and where its calls differ from each model's own BFCL decoder's.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.families.build_report import BuildReport
from vx.families.family_files import write_jsonl, write_seed, write_splits
from vx.families.family_toml import write_family_toml
from vx.families.sources import Skipped
from vx.families.split import LabelledItem, Splits, split_by_task
from vx.families.tools.data import bfcl
from vx.families.tools.decode import decode
from vx.inputs import read_json_lines

BUILDER_VERSION = "1"
#: The shared data's single-turn categories (file stems), in the order they are read.
CATEGORIES = ("simple", "multiple_function", "parallel_function", "parallel_multiple_function", "relevance")
#: BFCL's error classes of a failure, in the order the stratified dev draw deals its five places.
DRAW_STRATA = ("wrong_value", "wrong_call", "irrelevant_call", "format")
DEFAULT_DEV_DRAW = "stratified"

#: The seed written into a new single-turn family: the answer format and every check of a call against the docs.
SEED_BODY = """; the hand-written seed: calls in a form the answer format does not take, or that break the offered docs
(any
  misformatted
  unknown_function
  missing_required
  unknown_parameter
  wrong_type)
"""
SEED_EXPRESSION = "; family: tools\n" + SEED_BODY

DESCRIPTION = "BFCL single-turn questions with many models' answers each; locked and dev labels by BFCL"

Progress = Callable[[str, "int | None", int], None]


def _no_progress(stage: str, total: int | None, advance: int) -> None:
    return None


@attrs.frozen
class Answer:
    """One model's answer to one question, as the shared data holds it."""

    id: str
    task: str
    model: str
    category: str
    output: Any
    label: bool
    error_type: str
    decoded: Any  # the model's own BFCL decoder's output (None: it raised)
    possible_answer: Any
    dots_replaced: bool
    where: str


def stratum(error_type: str) -> str:
    """The dev draw's class of a failure from BFCL's error type."""
    kind = error_type.split(":", 1)[0]
    detail = error_type.rsplit(":", 1)[-1]
    if kind == "ast_decoder":
        return "format"
    if kind.startswith("relevance") or kind.startswith("irrelevance"):
        return "irrelevant_call"
    if detail in ("wrong_count", "wrong_func_name", "missing_required", "unexpected_param"):
        return "wrong_call"
    return "wrong_value"


# --------------------------------------------------------------------------- reading


def category_files(data_dir: Path, categories: Sequence[str] = CATEGORIES) -> list[Path]:
    """The single-turn files of `data_dir` (``single/<category>.jsonl.gz``, or ``.jsonl``), in order."""
    folder = data_dir / "single"
    if not folder.is_dir():
        raise DataError(
            f"{data_dir}: no single/ folder (expected BFCL's single-turn answers, e.g. ../shared/data/tools)"
        )
    out = []
    for cat in categories:
        found = [p for p in (folder / f"{cat}.jsonl.gz", folder / f"{cat}.jsonl") if p.is_file()]
        if found:
            out.append(found[0])
    if not out:
        raise DataError(f"{folder}: none of {', '.join(f'{c}.jsonl.gz' for c in categories)} is there")
    return out


_REQUIRED = ("task_id", "model", "question", "functions", "label")


def read_answers(files: Sequence[Path], skipped: Skipped) -> tuple[dict[str, dict[str, Any]], list[Answer]]:
    """Tasks by question id and every answer of the files (bad lines skipped into `skipped`)."""
    tasks: dict[str, dict[str, Any]] = {}
    answers: list[Answer] = []
    seen: set[tuple[str, str]] = set()
    for path in files:
        category = path.name.split(".", 1)[0]
        # a .gz file is decompressed within the input limit (vx.inputs)
        rows = read_json_lines(path, "answers file", objects=True, error=DataError, skip=skipped.lines_of(path))
        for n, obj, _ in rows:
            where = f"{path.name}:{n}"
            missing = [k for k in _REQUIRED if k not in obj]
            if missing:
                skipped.add(f"missing field(s) {', '.join(missing)}", where)
                continue
            tid, model = obj["task_id"], obj["model"]
            if not isinstance(tid, str) or not tid or not isinstance(model, str) or not model:
                skipped.add("task_id and model must be non-empty strings", where)
                continue
            if not isinstance(obj["functions"], list) or not isinstance(obj["label"], bool):
                skipped.add("functions must be a list and label a boolean", where)
                continue
            if (tid, model) in seen:
                skipped.add("a second answer of one model to one question (the first is kept)", where)
                continue
            seen.add((tid, model))
            cat = str(obj.get("category") or category)
            if tid not in tasks:
                tasks[tid] = {"id": tid, "question": obj["question"], "functions": obj["functions"], "category": cat}
            answers.append(
                Answer(
                    id=str(obj.get("id") or f"{tid}::{model}"),
                    task=tid,
                    model=model,
                    category=cat,
                    output=obj.get("output_raw"),
                    label=obj["label"],
                    error_type=str(obj.get("error_type") or ""),
                    decoded=obj.get("output_decoded"),
                    possible_answer=obj.get("possible_answer"),
                    dots_replaced=bool(obj.get("fc_name_dots_replaced")),
                    where=where,
                )
            )
    return tasks, answers


# --------------------------------------------------------------------------- labels and the decoder


def rederive_labels(answers: Sequence[Answer], tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every answer's label re-derived with BFCL's own checker, beside the file's: ``{"available",
    "version", "agree", "items", "disagree": [ids...]}`` (``available`` False, with ``why``, without
    bfcl-eval)."""
    try:
        checker = bfcl.load_checker()
    except bfcl.Unavailable as exc:
        return {"available": False, "why": str(exc)}
    agree = 0
    disagree: list[str] = []
    for a in answers:
        try:
            ok, _ = bfcl.bfcl_label(
                checker,
                category=a.category,
                functions=list(tasks[a.task]["functions"]),
                decoded=a.decoded,
                decode_failed=a.decoded is None,
                possible_answer=a.possible_answer,
                dots_replaced=a.dots_replaced,
            )
        except Exception:  # the checker raising on an odd answer is a disagreement, not a crash
            ok = not a.label
        if ok == a.label:
            agree += 1
        else:
            disagree.append(a.id)
    return {"available": True, "version": checker.version, "agree": agree, "items": len(answers), "disagree": disagree}


def _canon(calls: Iterable[Mapping[str, Any]]) -> list[str]:
    return sorted(json.dumps(c, sort_keys=True, default=str) for c in calls)


def decoder_agreement(answers: Sequence[Answer], tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The family's decoder (:func:`vx.families.tools.decode.decode`) on every answer, beside each model's
    own BFCL decoder: ``read`` (calls or a reply in words) and ``unreadable`` counts; where BFCL's decoder
    produced calls, how often ours produced the same calls (names as written, arguments as values); and
    per model, the answers where the two differ (ours unreadable, ours no call, different calls, or ours
    reads calls BFCL's did not)."""
    totals: Counter[str] = Counter()
    by_model: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    for a in answers:
        d = decode(a.output, tasks[a.task]["functions"])
        ours = "unreadable" if d.error else ("calls" if d.calls else "no_call")
        totals[ours] += 1
        theirs_calls = bfcl.is_call_list(a.decoded) and bool(a.decoded)
        if theirs_calls:
            totals["bfcl_calls"] += 1
            same = ours == "calls" and _canon({c.written: dict(c.args)} for c in d.calls) == _canon(a.decoded)
            kind = "same" if same else {"calls": "other_calls", "no_call": "ours_no_call"}.get(ours, "ours_unreadable")
        else:
            kind = "ours_reads_calls" if ours == "calls" else "neither"
        totals[kind] += 1
        by_model[a.model][kind] += 1
        if kind not in ("same", "neither") and len(examples[kind]) < 3:
            examples[kind].append(a.id)
    n = len(answers)
    return {
        "answers": n,
        "read": totals["calls"] + totals["no_call"],
        "read_share": round((totals["calls"] + totals["no_call"]) / n, 4) if n else None,
        "calls": totals["calls"],
        "no_call": totals["no_call"],
        "unreadable": totals["unreadable"],
        "bfcl_decoded_calls": totals["bfcl_calls"],
        "same_calls_as_bfcl": totals["same"],
        "same_share": round(totals["same"] / totals["bfcl_calls"], 4) if totals["bfcl_calls"] else None,
        "differences": {k: totals[k] for k in ("other_calls", "ours_no_call", "ours_unreadable", "ours_reads_calls")},
        "by_model": {
            m: {k: v for k, v in sorted(c.items()) if k not in ("same", "neither")} for m, c in sorted(by_model.items())
        },
        "examples": dict(examples),
    }


# --------------------------------------------------------------------------- the build


@attrs.frozen
class TeacherLabel:
    """A dev candidate's label (BFCL's): the interface :func:`split_by_task` reads."""

    label: str
    agreement: float
    evidence: str = ""
    kind: str = "bfcl"

    def meta(self) -> dict[str, Any]:
        return {"teacher": self.kind, **({"teacher_evidence": self.evidence} if self.evidence else {})}


def _read_single(
    root: Path, categories: Sequence[str], per_task: int | None, seed: int, progress: Progress
) -> tuple[list[Path], Skipped, dict[str, dict[str, Any]], list[Answer]]:
    """The answer files of `categories` read: the files, what was skipped, the questions, the answers (a
    seeded subsample of at most `per_task` a question). Unknown categories, a `per_task` below 1 and files
    with no readable answer are errors."""
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise DataError(
            f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}; "
            f"choose from {', '.join(CATEGORIES)}"
        )
    if per_task is not None and per_task < 1:
        raise DataError(f"--per-task must be at least 1, got {per_task}")
    files = category_files(root, categories)
    skipped = Skipped()
    progress("reading the answers", len(files), 0)
    tasks, answers = read_answers(files, skipped)
    progress("reading the answers", None, len(files))
    if not answers:
        raise DataError(f"{root}: no answer could be read ({skipped.as_dict()['total']} line(s) skipped)")
    if per_task is not None:
        answers = _subsample(answers, per_task, seed)
    return files, skipped, tasks, answers


def _single_notes(labels: Mapping[str, Any], decoder: Mapping[str, Any], skipped: Skipped) -> list[str]:
    """What a build says of its labels (BFCL's checker against the file's), its decoder and skipped input."""
    notes: list[str] = []
    if labels.get("available"):
        notes.append(
            f"BFCL's checker (bfcl-eval {labels['version']}) agrees with the file's label on "
            f"{labels['agree']:,} of {labels['items']:,} answers ({int(labels['agree']) / int(labels['items']):.3%})"
        )
    else:
        notes.append(f"labels are the file's own: {labels.get('why')}")
    notes.append(
        f"the decoder reads {decoder['read']:,} of {decoder['answers']:,} answers ({decoder['read_share']:.1%}); "
        f"where BFCL's own decoders read calls it reads the same calls in {decoder['same_calls_as_bfcl']:,} of "
        f"{decoder['bfcl_decoded_calls']:,}"
    )
    if skipped.counts:
        notes.append(f"{sum(skipped.counts.values())} input line(s) skipped (provenance.input_skipped lists why)")
    return notes


def build_single(
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    n_locked: int | None = None,
    per_task: int | None = None,
    categories: Sequence[str] = CATEGORIES,
    dev_draw: str = DEFAULT_DEV_DRAW,
    seed_expr: str | os.PathLike[str] | None = None,
    use_bfcl: bool = True,
    progress: Progress = _no_progress,
) -> BuildReport:
    """Build a single-turn tools family into `out_dir` (see the module docstring). ``n_locked`` defaults
    to a third of the answers; ``per_task`` keeps a seeded subsample of at most N answers per question."""
    root = Path(data_dir)
    files, skipped, tasks, answers = _read_single(root, categories, per_task, seed, progress)
    labels: dict[str, Any] = (
        rederive_labels(answers, tasks) if use_bfcl else {"available": False, "why": "turned off (--no-bfcl)"}
    )
    progress("measuring the decoder", None, 0)
    decoder = decoder_agreement(answers, tasks)

    items = [
        LabelledItem(
            id=a.id,
            task=a.task,
            output=a.output,
            meta={"model": a.model, "category": a.category, **({"bfcl_error": a.error_type} if a.error_type else {})},
            truth="pass" if a.label else "fail",
            truth_detail={"truth": "bfcl", **({"error_type": a.error_type} if a.error_type else {})},
        )
        for a in answers
    ]

    def teach(it: LabelledItem) -> TeacherLabel:
        if it.truth == "pass":
            return TeacherLabel("pass", 1.0)
        return TeacherLabel("fail", 0.0, stratum(str(it.truth_detail.get("error_type", ""))))

    splits = split_by_task(
        items,
        seed=seed,
        teacher=teach,
        n_locked=n_locked if n_locked is not None else max(1, len(items) // 3),
        dev_draw=dev_draw,
        strata=DRAW_STRATA,
    )
    used = set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    cats_by_split = {
        name: dict(sorted(Counter(tasks[t]["category"] for t in splits.tasks[name]).items()))
        for name in ("train", "dev", "locked")
    }
    provenance: dict[str, Any] = {
        "builder": f"vx.families.tools.data.single.build_single v{BUILDER_VERSION}",
        "data_dir": os.fspath(root.resolve()),
        "files": [{"path": p.name, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in files],
        "seed": seed,
        "per_task": per_task,
        "dev_draw": dev_draw,
        "labels": {
            "locked": "BFCL's official verdict (the shared data's label)",
            "dev": "the same label; dev failures stratified by BFCL's error class",
            "bfcl_checker": _label_summary(labels),
        },
        "split": "disjoint by question; the other answers of the dev questions are unlabeled peers (peers.jsonl)",
        "questions": len(used),
        "questions_per_split_by_category": cats_by_split,
        "models": len({a.model for a in answers}),
        "input_skipped": skipped.as_dict(),
        "decoder": {k: v for k, v in decoder.items() if k not in ("by_model", "examples")},
        "counts": splits.counts(),
    }
    notes = write_family(
        Path(out_dir),
        tasks=[tasks[t] for t in sorted(used, key=_task_order)],
        splits=splits,
        provenance=provenance,
        seed_expr=seed_expr,
    )
    notes.extend(_single_notes(labels, decoder, skipped))
    counts = splits.counts(with_hidden_labels=True)
    counts["bfcl_label_agreement"] = _label_summary(labels)
    counts["decoder_read_share"] = decoder["read_share"]
    counts["decoder_same_calls_as_bfcl"] = f"{decoder['same_calls_as_bfcl']}/{decoder['bfcl_decoded_calls']}"
    counts["input_skipped"] = sum(skipped.counts.values())
    provenance["decoder_by_model"] = decoder["by_model"]
    return BuildReport(Path(out_dir), counts, provenance, notes, truth=splits.truth())


def _label_summary(labels: Mapping[str, Any]) -> str:
    if not labels.get("available"):
        return f"not re-derived: {labels.get('why')}"
    return f"{labels['agree']}/{labels['items']} with bfcl-eval {labels['version']}"


def _subsample(answers: Sequence[Answer], per_task: int, seed: int) -> list[Answer]:
    by_task: dict[str, list[Answer]] = defaultdict(list)
    for a in answers:
        by_task[a.task].append(a)
    keep: list[Answer] = []
    for tid, group in by_task.items():
        if len(group) > per_task:
            group = sorted(random.Random(f"vx-per-task:{seed}:{tid}").sample(group, per_task), key=lambda a: a.id)
        keep.extend(group)
    return keep


def _task_order(tid: str) -> tuple[str, int, str]:
    head, _, tail = tid.rpartition("_")
    return (head, int(tail), tid) if tail.isdigit() else (tid, 0, tid)


def write_family(
    out: Path,
    *,
    tasks: Sequence[Mapping[str, Any]],
    splits: Splits,
    provenance: Mapping[str, Any],
    seed_expr: str | os.PathLike[str] | None = None,
    name: str = "tools",
    description: str = DESCRIPTION,
    seed_text: str = SEED_EXPRESSION,
) -> list[str]:
    """The family files (format: docs/ARCHITECTURE.md); returns notes for the user."""
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    write_jsonl(out / "tasks.jsonl", tasks)
    write_splits(out, splits)
    if write_seed(out, seed_expr, seed_text):
        notes.append(f"wrote the default tools seed expression to {out / 'seed.vx'}")
    skipped = provenance.get("input_skipped")
    write_family_toml(
        out / "family.toml",
        name=name,
        description=description,
        packs=["tools"],
        root="decodes",
        peers=bool(splits.dev_peers),
        provenance={
            **provenance,
            **(
                {"input_skipped": {"total": skipped.get("total", 0), "counts": skipped.get("counts", {})}}
                if isinstance(skipped, Mapping)
                else {}
            ),
        },
    )
    return notes


__all__ = [
    "CATEGORIES",
    "DRAW_STRATA",
    "Answer",
    "BuildReport",
    "SEED_EXPRESSION",
    "build_single",
    "category_files",
    "decoder_agreement",
    "read_answers",
    "rederive_labels",
    "stratum",
    "write_family",
]
