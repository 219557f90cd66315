"""Every attempt of every samples file a builder is given, per task, in either of the two formats:
one output per task (`vx.families.code.data.samples`) or CodeT's multi-sample files
(`vx.families.code.data.codet`, matched to tasks by their exact prompt)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.families.code.data import codet
from vx.families.code.data.samples import read_samples
from vx.families.code.data.tasks import Task, file_sha256

__all__ = ["MAX_UNKNOWN_LISTED", "read_attempts"]

MAX_UNKNOWN_LISTED = 5  # samples naming unknown tasks listed by read_attempts (the rest are counted)


def _is_bare_body(solution: str) -> bool:
    """A function body meant to follow the prompt: its first code line is indented."""
    for line in solution.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line[:1] in (" ", "\t")
    return False


Attempts = dict[str, list[tuple[str, dict[str, Any]]]]  # task id -> [(program, meta)]


def read_attempts(
    paths: Sequence[str | os.PathLike[str]],
    known: Mapping[str, Task],
    *,
    codet_tasks: str | os.PathLike[str] | None,
    prepend_prompt: bool,
    stats: Counter[str],
    unknown: list[str] | None = None,
) -> tuple[Attempts, list[dict[str, Any]]]:
    """Every attempt of every samples file, per task id: (program, meta), and one source record per file.
    Two formats: one output per task (``task_id``, ``solution``: samples/humaneval, samples/mbpp) and
    CodeT's multi-sample files (``prompt``, ``samples``: matched to tasks by the exact prompt through the
    CodeT task file). MBPP ids name MBPP+'s tasks (``MBPP/11`` is ``Mbpp/11``); a line with a
    ``completion`` instead of a ``solution`` continues the task's prompt (evalplus's two sample forms). A
    sample naming no task of `known` is counted in ``stats["attempts_of_unknown_tasks"]`` and, when
    `unknown` is given, the first :data:`MAX_UNKNOWN_LISTED` are listed there as ``file:line 'id'``."""
    attempts: Attempts = {}
    sources: list[dict[str, Any]] = []
    for path in paths:
        if codet.is_codet_file(path):
            sources.append(_codet_attempts(path, known, codet_tasks, stats, attempts))
        else:
            sources.append(_sample_attempts(path, known, prepend_prompt, stats, unknown, attempts))
    return attempts, sources


def _codet_attempts(
    path: str | os.PathLike[str],
    known: Mapping[str, Task],
    codet_tasks: str | os.PathLike[str] | None,
    stats: Counter[str],
    attempts: Attempts,
) -> dict[str, Any]:
    """A CodeT file's attempts added to `attempts`; its source record."""
    model = Path(path).name.removesuffix(".jsonl").removesuffix("_code_solution")
    mapping = Path(codet_tasks) if codet_tasks else Path(path).parent / "HumanEval_for_code_generation.jsonl"
    prompts, _ = codet.read_task_prompts(mapping)
    rows = codet.read_solutions(path, prompts)
    n = 0
    for row in rows:
        if row.task_id not in known:
            stats["attempts_of_unknown_tasks"] += len(row.programs)
            continue
        for k, program in enumerate(row.programs):
            attempts.setdefault(row.task_id, []).append(
                (program, {"model": model, "sample": k, "source_line": row.line})
            )
            n += 1
    return {
        "path": os.fspath(path),
        "sha256": file_sha256(path),
        "format": "codet",
        "tasks": len(rows),
        "attempts": n,
        "task_file": os.fspath(mapping),
        "truncation": "prompt + completion cut at the earliest of CodeT's stop sequences "
        + ", ".join(repr(t) for t in codet.STOP_TOKENS),
    }


def _sample_attempts(
    path: str | os.PathLike[str],
    known: Mapping[str, Task],
    prepend_prompt: bool,
    stats: Counter[str],
    unknown: list[str] | None,
    attempts: Attempts,
) -> dict[str, Any]:
    """A one-output-per-task file's attempts added to `attempts`; its source record."""
    model = Path(path).name.removesuffix(".jsonl")
    samples = read_samples(path)
    n = 0
    for sample in samples:
        tid = sample.task_id if sample.task_id in known else sample.plus_id
        if tid not in known:
            stats["attempts_of_unknown_tasks"] += 1
            if unknown is not None and len(unknown) < MAX_UNKNOWN_LISTED:
                unknown.append(f"{Path(path).name}:{sample.line} {sample.task_id!r}")
            continue
        program = sample.solution
        meta: dict[str, Any] = {"model": model, "source_line": sample.line}
        if sample.completion:
            program = (sample.prompt or known[tid].prompt) + program
        elif _is_bare_body(program):
            if prepend_prompt:
                program = (sample.prompt or known[tid].prompt) + program
                meta["prompt_prepended"] = True
                stats["prompt_prepended"] += 1
            else:
                stats["bare_bodies_kept"] += 1
        attempts.setdefault(tid, []).append((program, meta))
        n += 1
    return {
        "path": os.fspath(path),
        "sha256": file_sha256(path),
        "format": "one-per-task",
        "samples": len(samples),
        "attempts": n,
    }
