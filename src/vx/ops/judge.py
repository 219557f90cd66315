"""Judge ops: the typed op kind ``judge`` — one narrow yes/no question about (task, output).

A judge op is a typed spec of the ``llm_yes_no`` check template::

    {"kind": "judge", "check": "llm_yes_no", "detects": "spec_mismatch", "name": "spec_mismatch",
     "params": {"question": "Does the code do what the specification asks?", "drawback_if": "no"}}

``question`` is asked about the task and the output; ``drawback_if`` says which answer means a
drawback. The model must reply in a fixed format, parsed strictly::

    ANSWER: YES            (or NO; nothing else on the line)
    REASON: one sentence   (optional)

Anything else — prose, hedging, a missing ANSWER line, extra lines — makes the op ABSTAIN with the
raw reply recorded in its message; the parser never guesses. With LLM roles off, the op abstains
and says so. The golden reference is never shown to a judge (that is the teacher's job).

Importing this module registers the template; a pack opts in by importing it (see
``vx.families.code.ops.judge``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from vx.ops.core import Context, Result
from vx.ops.specs import SpecError, template

CHECK = "llm_yes_no"
ANSWERS = ("yes", "no")
MAX_OUTPUT_CHARS = 24_000
# Task fields a judge never sees: golden references and hidden tests belong to the teacher / locked split.
HIDDEN_TASK_FIELDS = frozenset(
    {"reference", "canonical_solution", "tests", "test", "hidden_tests", "base_input", "plus_input", "atol", "label"}
)

SYSTEM_TEMPLATE = """You review one output produced by an AI agent for a task. You answer exactly one narrow \
yes/no question about it, and nothing else.

Question: {question}

Reply in exactly this format:
ANSWER: YES
or
ANSWER: NO
optionally followed by one line:
REASON: <one short sentence>
Do not write anything before the ANSWER line. If you cannot tell, still answer YES or NO, whichever is \
more likely."""

_ANSWER = re.compile(r"ANSWER:[ \t]*(YES|NO)[ \t]*", re.IGNORECASE)
_REASON = re.compile(r"REASON:[ \t]*(.*)", re.IGNORECASE)


@attrs.frozen
class JudgeAnswer:
    answer: str | None  # "yes" / "no", or None when the reply does not follow the format
    reason: str
    raw: str


def parse_answer(text: str) -> JudgeAnswer:
    """Parse a judge's reply strictly: an ``ANSWER: YES|NO`` line, then at most one ``REASON:`` line."""
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    if not lines or len(lines) > 2:
        return JudgeAnswer(None, "", text)
    m = _ANSWER.fullmatch(lines[0])
    if m is None:
        return JudgeAnswer(None, "", text)
    reason = ""
    if len(lines) == 2:
        r = _REASON.fullmatch(lines[1])
        if r is None:
            return JudgeAnswer(None, "", text)
        reason = r.group(1).strip()
    return JudgeAnswer(m.group(1).lower(), reason, text)


def render_task(task: Mapping[str, Any]) -> str:
    """What a judge sees of a task: its prompt, or its visible fields as JSON (never references or tests)."""
    prompt = task.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    visible = {k: v for k, v in task.items() if k not in HIDDEN_TASK_FIELDS and not str(k).startswith("_")}
    return json.dumps(visible, indent=2, ensure_ascii=False, default=str)


def render_output(output: Any) -> str:
    text = output if isinstance(output, str) else json.dumps(output, indent=2, ensure_ascii=False, default=str)
    if len(text) > MAX_OUTPUT_CHARS:
        text = text[:MAX_OUTPUT_CHARS] + f"\n… [{len(text) - MAX_OUTPUT_CHARS} more characters not shown]"
    return text


def judge_messages(task: Mapping[str, Any], output: Any) -> str:
    return f"<task>\n{render_task(task)}\n</task>\n\n<output>\n{render_output(output)}\n</output>"


def judge_request(client: Any, question: str, task: Mapping[str, Any], output: Any) -> dict[str, Any]:
    """The exact request a judge op sends for (task, output) — also what a batch prefetch submits."""
    return client.build_request(
        "judge", judge_messages(task, output), system=SYSTEM_TEMPLATE.format(question=question.strip())
    )


def ask(client: Any, question: str, task: Mapping[str, Any], output: Any) -> tuple[JudgeAnswer, Any]:
    """Ask `question` about (task, output) with the judge role; returns the parsed answer and the completion."""
    completion = client.send("judge", judge_request(client, question, task, output))
    return parse_answer(completion.text), completion


def _clip(text: str, n: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


@template(
    CHECK,
    kind="judge",
    params={"question": "str", "drawback_if": "str"},
    description="Ask the judge model one yes/no question; the answer `drawback_if` is a drawback",
)
def llm_yes_no(question: str, drawback_if: str):
    if drawback_if not in ANSWERS:
        raise SpecError(f'{CHECK}: drawback_if must be "yes" or "no", not {drawback_if!r}')
    if not question.strip() or len(question) > 500:
        raise SpecError(f"{CHECK}: the question must be one narrow yes/no question (1–500 characters)")

    def fn(task: Mapping[str, Any], output: Any, ctx: Context) -> Result:
        from vx.llm.client import BudgetExceeded, active_client
        from vx.llm.config import OFF_MESSAGE

        client = active_client()
        if client is None:
            return Result.abstain(OFF_MESSAGE)
        try:
            answer, completion = ask(client, question, task, output)
        except BudgetExceeded as exc:
            return Result.abstain(str(exc))
        evidence = {"model": completion.model, "key": completion.key, "cached": completion.cached}
        if answer.answer is None:
            return Result.abstain(
                f"unparsable judge reply (abstaining): {_clip(answer.raw)!r}", {**evidence, "raw": answer.raw}
            )
        said = f"judge said {answer.answer.upper()}" + (f": {answer.reason}" if answer.reason else "")
        if answer.answer == drawback_if:
            return Result.drawback(said, evidence)
        return Result.clean(said, evidence)

    return fn


def judge_spec(name: str, question: str, *, drawback_if: str, detects: str, description: str = "") -> dict[str, Any]:
    """A typed judge spec (a dict ready for `vx.ops.specs.op_from_spec`)."""
    spec: dict[str, Any] = {
        "kind": "judge",
        "check": CHECK,
        "detects": detects,
        "name": name,
        "params": {"question": question, "drawback_if": drawback_if},
    }
    if description:
        spec["description"] = description
    return spec


def judge_sweep_requests(
    client: Any, ops: Iterable[Any], pairs: Iterable[tuple[Mapping[str, Any], Any]]
) -> list[dict[str, Any]]:
    """The requests the `llm_yes_no` judge ops among `ops` would send for each (task, output) pair."""
    questions = [o.spec["params"]["question"] for o in ops if getattr(o, "spec", None) and o.spec.get("check") == CHECK]
    pairs = list(pairs)
    return [judge_request(client, q, task, output) for q in questions for task, output in pairs]
