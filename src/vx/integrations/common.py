"""What the integrations share: a verifier from a path or an object, the task an output answers,
the code inside a chat reply, and the failure capsule as text (for a score's explanation)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vx.errors import VxError
from vx.verifier import Grade, TraceNode, Verifier

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)


class IntegrationError(VxError):
    """An integration that cannot grade (no task for a sample, a verifier that cannot load...)."""


def as_verifier(verifier: Verifier | str | Path) -> Verifier:
    """A :class:`Verifier`, or a .vx file loaded with its family (found upwards)."""
    return verifier if isinstance(verifier, Verifier) else Verifier.load(verifier)


def resolve_task(verifier: Verifier, task: Any, *, where: str) -> Mapping[str, Any]:
    """A task record: `task` itself when it is one (a mapping with an ``id``), else the task of that id
    in the verifier's family."""
    if isinstance(task, Mapping):
        return task
    if isinstance(task, str) and task in verifier.tasks:
        return verifier.tasks[task]
    known = ", ".join(list(verifier.tasks)[:3])
    raise IntegrationError(f"{where}: {task!r} is not a task of the verifier's family (ids like {known}); give a "
                           "task id of the family or the task record itself")


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


__all__ = ["IntegrationError", "as_verifier", "capsule_text", "extract_output", "resolve_task"]
