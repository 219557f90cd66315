"""What tools ops read from an item: the task's question and offered functions, and the decoded answer.

A single-turn task record (one line of tasks.jsonl; everything a verifier may see -- never the possible
answers)::

    {"id": "simple_1", "question": "Calculate the factorial of 5 using math functions.",
     "functions": [{"name": "math.factorial", "description": "...", "parameters": {...}}],
     "category": "simple"}

``question`` is the user's text, or BFCL's messages (``[{"role": "user", "content": ...}]``, possibly
nested per turn); ``category`` is provenance for reports: no op reads it (a verifier is not told that
none of the functions fits). The root ``decodes`` stores an :class:`Answer` in ``ctx["artifact"]``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vx.families.tools.decode import Decoded, decode
from vx.families.tools.dialect import Function, functions
from vx.ops.core import Context

__all__ = ["Answer", "answer_of", "build_answer", "question_text"]


@attrs.frozen(eq=False)
class Answer:
    """An output read against its task: the decoded calls, the offered functions and the question."""

    decoded: Decoded
    offered: Mapping[str, Function]
    question: str


def question_text(task: Mapping[str, Any]) -> str:
    """The user's words: the question string, or the content of every user message (nested lists of
    BFCL's messages are flattened), joined by new lines."""
    q = task.get("question")
    if isinstance(q, str):
        return q
    out: list[str] = []
    stack: list[Any] = [q]
    while stack:
        x = stack.pop(0)
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, Mapping):
            if x.get("role", "user") == "user" and isinstance(x.get("content"), str):
                out.append(x["content"])
        elif isinstance(x, (list, tuple)):
            stack[0:0] = list(x)
    return "\n".join(out)


def build_answer(task: Mapping[str, Any], output: Any) -> Answer:
    """Decode an output against its task's docs (pure; the root caches it in ctx)."""
    docs = task.get("functions") if isinstance(task.get("functions"), list) else []
    offered = functions(docs)
    return Answer(decode(output, list(offered)), offered, question_text(task))


def answer_of(task: Mapping[str, Any], output: Any, ctx: Context) -> Answer:
    """The item's answer: the root's artifact, else decoded now (an op called on its own)."""
    found = ctx.get("artifact")
    if isinstance(found, Answer):
        return found
    answer = build_answer(task, output)
    ctx["artifact"] = answer
    return answer
