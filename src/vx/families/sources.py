"""Task sources: the tasks a samples file answers, for grading outputs without building a family
(`vx grade`, :func:`vx.grading.grade_samples`).

A :class:`TaskSource` holds the task records the ops read, a reader that turns samples files into
:class:`Attempt` records, and -- where the dataset has hidden tests -- a ground-truth grader. A pack
names the datasets it knows (``Pack.sources``: ``spec -> TaskSource | None``; the code family knows
``humaneval+``, ``mbpp+`` and their release files); any other file is read by :func:`tasks_file`
as a family's ``tasks.jsonl`` (one task record per line, with an ``id``), whose samples are read by
:func:`read_plain_samples` and which has no ground truth.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.inputs import read_json_lines

#: the fields a plain samples line may hold its output in, in order of preference (evalplus writes
#: ``solution`` -- a whole program -- or ``completion``, which continues the task's prompt)
OUTPUT_FIELDS = ("solution", "output", "completion")


@attrs.frozen
class Attempt:
    """One output of a samples file: its task, the output to grade, where it came from."""

    task: str
    output: Any
    meta: Mapping[str, Any] = attrs.field(factory=dict)


class Attempts(list):
    """A reader's attempts, with `notes` for people (samples left out, and why)."""

    def __init__(self, items: Iterable[Attempt] = (), notes: Sequence[str] = ()) -> None:
        super().__init__(items)
        self.notes = list(notes)


#: skipped input lines listed per reason in a build's provenance (all are counted)
MAX_LISTED = 10


@attrs.define
class Skipped:
    """Input that was left out: counts per reason and the first few occurrences of each (file:line: why)."""

    counts: Counter = attrs.field(factory=Counter)
    listed: list[str] = attrs.field(factory=list)

    def add(self, reason: str, where: str) -> None:
        self.counts[reason] += 1
        if self.counts[reason] <= MAX_LISTED:
            self.listed.append(f"{where}: {reason}")

    def lines_of(self, path: str | os.PathLike[str]) -> Callable[[int, str], None]:
        """A ``skip`` for :func:`vx.inputs.read_json_lines`: each bad line of `path` added under its reason,
        where it is as ``<file name>:<line>``."""
        name = Path(path).name
        return lambda number, reason: self.add(reason, f"{name}:{number}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "counts": dict(sorted(self.counts.items())),
            "listed": list(self.listed),
            "total": sum(self.counts.values()),
        }


#: ground truth: ``grade([(task id, output), ...], progress) -> [{"label": "pass"|"fail", "why": ...}]``
TruthGrader = Callable[[Sequence[tuple[str, Any]], "Callable[[int], None] | None"], list[dict[str, Any]]]


@attrs.frozen
class TaskSource:
    """Tasks to grade samples against (see the module docstring)."""

    name: str
    tasks: Mapping[str, Mapping[str, Any]]
    read_samples: Callable[[Sequence[str | os.PathLike[str]]], list[Attempt]] = attrs.field(eq=False, repr=False)
    #: a factory of the ground-truth grader (None: the tasks have no hidden tests)
    truth: Callable[[], TruthGrader] | None = attrs.field(default=None, eq=False, repr=False)
    version: str = ""
    truth_description: str = ""
    #: the pack that knows these tasks (its pool grades them when the verifier has no family)
    pack: Any = attrs.field(default=None, eq=False, repr=False)


def read_plain_samples(
    paths: Sequence[str | os.PathLike[str]], tasks: Mapping[str, Mapping[str, Any]]
) -> list[Attempt]:
    """Samples files of lines ``{"task_id": ..., "solution" | "output" | "completion": ...}``; a
    ``completion`` is appended to the task's ``prompt``, as evalplus does."""
    out: list[Attempt] = []
    for path in map(Path, paths):
        for number, row, _ in read_json_lines(path, "samples file", error=DataError):
            if not isinstance(row, dict) or "task_id" not in row:
                raise DataError(
                    f'{path}:{number}: a sample line needs "task_id" and one of '
                    f"{', '.join(repr(f) for f in OUTPUT_FIELDS)}"
                )
            field = next((f for f in OUTPUT_FIELDS if f in row), None)
            if field is None:
                raise DataError(f"{path}:{number}: no output: give one of {', '.join(repr(f) for f in OUTPUT_FIELDS)}")
            tid = str(row["task_id"])
            if tid not in tasks:
                raise DataError(
                    f"{path}:{number}: task {tid!r} is not one of the {len(tasks)} tasks given with --tasks"
                )
            output = row[field]
            if field == "completion":
                output = str(tasks[tid].get("prompt", "")) + str(output)
            out.append(Attempt(tid, output, {"model": path.name.removesuffix(".jsonl"), "source_line": number}))
    return out


def tasks_file(path: str | os.PathLike[str]) -> TaskSource:
    """A family-style ``tasks.jsonl`` (one task record per line, each with an ``id``): no ground truth."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such tasks file (--tasks takes a dataset name or a tasks.jsonl file)")
    tasks: dict[str, Mapping[str, Any]] = {}
    for number, row, _ in read_json_lines(path, "tasks file", error=DataError):
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not row["id"]:
            raise DataError(
                f'{path}:{number}: a task line is a JSON object with a string "id" (a family\'s tasks.jsonl)'
            )
        if row["id"] in tasks:
            raise DataError(f"{path}:{number}: task {row['id']!r} appears twice")
        tasks[row["id"]] = row
    if not tasks:
        raise DataError(f"{path}: no tasks in the file")
    return TaskSource(name=path.name, tasks=tasks, read_samples=lambda paths: read_plain_samples(paths, tasks))


__all__ = [
    "Attempt",
    "Attempts",
    "MAX_LISTED",
    "OUTPUT_FIELDS",
    "Skipped",
    "TaskSource",
    "TruthGrader",
    "read_plain_samples",
    "tasks_file",
]
