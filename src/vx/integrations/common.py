"""What the integrations share: a verifier from a path or an object, the task an output answers,
the code inside a chat reply, the failure capsule as text (for a score's explanation), and the checks
of their options at construction (``check_*``: a bad option is an ArgumentError when the integration
is built, never a TypeError at its first call)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import ArgumentError, VxError
from vx.ops.apply import MAX_OUTPUT_CHARS, check_cache, check_jobs, check_timeout
from vx.ops.cache import item_hash
from vx.verifier import Grade, TraceNode, Verifier

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)


class IntegrationError(VxError):
    """An integration that cannot grade (no task for a sample, a verifier that cannot load...)."""


class OptionError(IntegrationError, ArgumentError):
    """An integration built with an option it cannot use (a NaN reward, an unknown verdict)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_rewards(rewards: Any, defaults: Mapping[str, float], name: str = "rewards") -> dict[str, float]:
    """``defaults`` updated by `rewards` (None: the defaults): a mapping of verdicts (the keys of
    ``defaults``) to finite numbers. Anything else is an OptionError naming the entry."""
    if rewards is None:
        return dict(defaults)
    if not isinstance(rewards, Mapping):
        raise OptionError(
            f"{name} must be a mapping of verdicts to numbers such as {{'fail': -1.0}}, not "
            f"{type(rewards).__name__} {rewards!r}"[:300]
        )
    unknown = [k for k in rewards if k not in defaults]
    if unknown:
        raise OptionError(
            f"{name}: unknown verdict(s) {', '.join(sorted(map(repr, unknown)))}; use {', '.join(defaults)}"
        )
    bad = {k: v for k, v in rewards.items() if not _number(v)}
    if bad:
        k, v = next(iter(bad.items()))
        raise OptionError(f"{name}[{k!r}] must be a finite number, not {type(v).__name__} {v!r}"[:300])
    return {**defaults, **{k: float(v) for k, v in rewards.items()}}


def check_group_size(value: Any, name: str = "group_size") -> int | None:
    """`value` when it is None or an int >= 1 (the number of completions a trainer makes per prompt); anything
    else (``"8"``, 0, -1, 2.5, True) is an OptionError when the integration is built."""
    if value is None or (type(value) is int and value >= 1):
        return value
    raise OptionError(
        f"{name} must be None or an int >= 1 (completions per prompt), not {type(value).__name__} {value!r}"[:300]
    )


def check_choice(value: Any, name: str, words: Sequence[str], *, numbers: bool = False) -> Any:
    """`value` when it is one of `words` (or, with `numbers`, a finite number); else an OptionError."""
    if (isinstance(value, str) and value in words) or (numbers and _number(value)):
        return value
    allowed = ", ".join(repr(w) for w in words) + (" or a finite number" if numbers else "")
    raise OptionError(f"{name} must be {allowed}, not {type(value).__name__} {value!r}"[:300])


def as_list(values: Any, name: str) -> list[Any]:
    """A batch given as any iterable (a generator too) as a list; a str, bytes or a mapping (which would
    be iterated by character or key) or a non-iterable is an OptionError."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise OptionError(f"{name} must be a list (or an iterable) with one value per row, not {type(values).__name__}")
    return list(values)


def sample_task(metadata: Any, key: str, default: Any) -> Any:
    """What a sample's metadata names as its task under `key` (`default` when the metadata is not a
    mapping or lacks the key)."""
    return metadata.get(key, default) if isinstance(metadata, Mapping) else default


def graded_output(completion: Any, extract: bool) -> Any:
    """What to grade of a completion: the code inside it (`extract`) when it is text, else the value
    itself (a verifier judges a non-text output: the code family's root reports it as not source)."""
    return extract_output(completion) if extract and isinstance(completion, str) else completion


def as_verifier(verifier: Verifier | str | Path) -> Verifier:
    """A :class:`Verifier`, or a .vx file loaded with its family (found upwards)."""
    return verifier if isinstance(verifier, Verifier) else Verifier.load(verifier)


class TaskRecords:
    """The task records of one batch, by id: a record seen again with the same id must be the same record.

    Two records that share an id but differ (another prompt's examples, another database) would be graded
    as one task -- their attempts each other's peers, every attempt judged against the last record -- so
    they are an IntegrationError naming both rows."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, str, Mapping[str, Any]]] = {}

    def add(self, record: Mapping[str, Any], *, key: str, where: str) -> Mapping[str, Any]:
        """`record` under `key` (the task's id); refuses another record already given that id."""
        digest = item_hash(record, None)
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = (digest, where, record)
        elif seen[0] != digest:
            raise IntegrationError(
                f"{where} and {seen[1]} give two different task records the id {key!r}; a task id names one "
                "task: give each task its own id (or the same record to every row of one task)"
            )
        return self._seen[key][2]

    def get(self, key: str) -> Mapping[str, Any]:
        """The record given for `key`."""
        return self._seen[key][2]


def resolve_task(verifier: Verifier, task: Any, *, where: str) -> Mapping[str, Any]:
    """A task record: `task` itself when it is one (a mapping with an ``id``), else the task of that id
    in the verifier's family."""
    if isinstance(task, Mapping):
        return task
    if isinstance(task, str) and task in verifier.tasks:
        return verifier.tasks[task]
    known = ", ".join(list(verifier.tasks)[:3])
    raise IntegrationError(
        f"{where}: {task!r} is not a task of the verifier's family (ids like {known}); give a "
        "task id of the family or the task record itself"
    )


def kept_output(output: Any) -> Any:
    """What of a graded output a log keeps to grade it again (the Inspect reducer reads it back): a text of
    at most :data:`~vx.ops.apply.MAX_OUTPUT_CHARS` characters whole, a longer one cut just past that bound
    (every verifier fails an output over it without reading it, so the cut keeps its verdict), and any other
    value whole when its text is within the bound, else the start of its text -- never a 50 MB completion per
    sample in the log."""
    if isinstance(output, str):
        return output if len(output) <= MAX_OUTPUT_CHARS else output[: MAX_OUTPUT_CHARS + 1]
    try:
        text = json.dumps(output, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # an int of 5,000 digits, nesting past the stack
        return f"<a {type(output).__name__} output vx cannot keep>"
    return output if len(text) <= MAX_OUTPUT_CHARS else text[: MAX_OUTPUT_CHARS + 1]


def extract_output(text: str) -> str:
    """The output inside a chat reply: the first fenced code block (```python ... ```) when there is
    one, else the whole text."""
    found = _FENCE.search(text or "")
    return found.group(2) if found else (text or "")


def _trace_lines(node: TraceNode, depth: int = 0) -> list[str]:
    text = f"{'  ' * depth}{node.text} {str(node.verdict).upper()}"
    if node.message:
        text += f" — {node.message}"
    if node.error:
        text += f" (error: {node.error})"
    lines = [text]
    for child in node.children:
        lines += _trace_lines(child, depth + 1)
    return lines


def capsule_text(grade: Grade, *, expression: str = "") -> str:
    """The failure capsule as plain text: the verdict, the checks that failed with their messages,
    then every node of the explained expression with its verdict."""
    lines = [f"vx verdict: {grade.verdict.value.upper()}"]
    if grade.drawbacks:
        lines.append("failed checks:")
        lines += [f"- {op}: {message}" if message else f"- {op}" for op, message in grade.drawbacks]
    else:
        lines.append("no check failed on a path to FAIL")
    if expression:
        lines.append(f"expression: {' '.join(expression.split())}")
    if grade.root is not None:
        lines += _trace_lines(grade.root)
    lines += _trace_lines(grade.trace)
    return "\n".join(lines)


__all__ = [
    "IntegrationError",
    "OptionError",
    "as_list",
    "as_verifier",
    "capsule_text",
    "TaskRecords",
    "check_cache",
    "check_choice",
    "check_group_size",
    "check_jobs",
    "check_rewards",
    "check_timeout",
    "extract_output",
    "graded_output",
    "kept_output",
    "resolve_task",
    "sample_task",
]
