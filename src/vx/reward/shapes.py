"""The trainers' reward calls as plain data: what each one sends, and the answer it reads back.

Each reader takes a decoded JSON body and returns :class:`Row` s (the task a completion answers and the
output to grade), or raises :class:`ShapeError` saying what is wrong with the body; each writer turns the
graded rows back into the body the trainer's client reads. Nothing here grades or serves.

* **OpenRLHF** (``--remote_rm_url``; its client ``openrlhf/utils/agent.py``, ``SingleTurnAgentExecutor.
  _fetch_rewards_via_http``): ``POST {"query": [prompt + response, ...], "prompts": [...], "labels":
  [...]}``; it reads ``"rewards"`` (and ``"scores"``, ``"extra_logs"``) from the answer, one number per
  query. The response is the query after its prompt (the special tokens the tokenizer decoded at its
  end removed); the task is the label (a task id) or found by the prompt's text.
* **verl** (a custom reward function behind HTTP; the batch reward manager ``verl/workers/reward_manager/
  batch.py`` calls ``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)``, the
  others ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)``): the same keyword
  arguments as a JSON object, plural or singular; the answer is ``{"scores": [{"score": ...}, ...]}`` or
  ``{"score": ...}`` with the verdict's indicators beside the score (verl logs every key of the dict). The
  task is the ground truth (a task id), else ``"{data_source}/{extra_info['index']}"``, else the prompt
  text in ``extra_info["prompt"]`` when the dataset keeps it.

What is graded of a completion's text (``extract``): its first fenced block, else the whole text (True);
the text as it is (False); or what a family's reader makes of it (a callable: the pack's ``read_reply``,
e.g. the tools family grades a reply whole, fence and all).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.errors import VxError
from vx.reward.grader import DEFAULT_REWARDS, Graded
from vx.reward.tasks import TaskIndex, UnknownTask
from vx.verifier import Verifier

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)
#: Special tokens a tokenizer's decode leaves at the end of a response (``<|im_end|>``, ``</s>``, ...).
_END_TOKENS = re.compile(r"(?:\s*(?:<\|[A-Za-z0-9_:.\-]{1,40}\|>|</s>|<eos>|<end_of_turn>))+\s*$")
#: The most completions one request may carry.
MAX_ROWS = 4096


class ShapeError(VxError):
    """A request body that is not the shape its endpoint reads (the message says what is wrong)."""


@attrs.frozen
class Row:
    """One completion of a request: the task it answers, and the output to grade."""

    task_id: str
    output: Any


#: How a completion's text becomes the output graded (see the module docstring).
Extract = bool | Callable[[str], Any]


def read_output(text: str, extract: Extract) -> Any:
    """What is graded of a completion's text under `extract` (see the module docstring)."""
    if callable(extract):
        return extract(text)
    return extract_output(text) if extract else text


def reply_reader(verifier: Verifier | None, extract: bool = True) -> Extract:
    """How a reply's text becomes the output `verifier` grades: with `extract`, what its family's pack reads
    from a reply (``read_reply``) when the pack says, else the first fenced block (True); without, the text
    as it is (False)."""
    if not extract:
        return False
    family = verifier.family if verifier is not None else None
    pack = family.pack() if family is not None else None
    return pack.read_reply if pack is not None and pack.read_reply is not None else True


def extract_output(text: str) -> str:
    """The output inside a reply: the first fenced code block (```python ... ```) when there is one,
    else the whole text."""
    found = _FENCE.search(text or "")
    return found.group(2) if found else (text or "")


def strip_end_tokens(text: str) -> str:
    """`text` without the special tokens a tokenizer's decode left at its end."""
    return _END_TOKENS.sub("", text)


def _strings(body: Mapping[str, Any], key: str, n: int | None, *, required: bool) -> list[Any] | None:
    value = body.get(key)
    if value is None:
        if required:
            raise ShapeError(f'"{key}" is required: a list with one entry per completion')
        return None
    if not isinstance(value, list):
        raise ShapeError(f'"{key}" must be a list with one entry per completion, not {type(value).__name__}')
    if n is not None and len(value) != n:
        raise ShapeError(f'"{key}" has {len(value)} entries but there are {n} completions')
    return value


def _object(body: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise ShapeError(f"the body must be a JSON object ({what}), not {type(body).__name__}")
    return body


def _check_count(n: int) -> None:
    if n == 0:
        raise ShapeError("the request holds no completion")
    if n > MAX_ROWS:
        raise ShapeError(f"{n} completions: at most {MAX_ROWS} in one request")


def openrlhf_rows(body: Any, index: TaskIndex, *, extract: Extract = True) -> list[Row]:
    """The rows of an OpenRLHF remote reward request (see the module docstring)."""
    body = _object(body, '{"query": [...], "prompts": [...], "labels": [...]}')
    queries = _strings(body, "query", None, required=True)
    assert queries is not None
    _check_count(len(queries))
    prompts = _strings(body, "prompts", len(queries), required=False) or [None] * len(queries)
    labels = _strings(body, "labels", len(queries), required=False) or [None] * len(queries)
    rows = []
    for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
        if not isinstance(query, str):
            raise ShapeError(f'"query"[{i}] must be a string (the prompt and the response), not {type(query).__name__}')
        if prompt is not None and not isinstance(prompt, str):
            raise ShapeError(f'"prompts"[{i}] must be a string, not {type(prompt).__name__}')
        response = query
        if prompt:
            at = query.find(prompt)
            if at >= 0:
                response = query[at + len(prompt) :]
        response = strip_end_tokens(response)
        try:
            tid = index.find(task_id=label, prompt=prompt or query, where=f"query {i}")
        except UnknownTask as exc:
            raise ShapeError(str(exc)) from None
        rows.append(Row(tid, read_output(response, extract)))
    return rows


def openrlhf_answer(graded: Sequence[Graded], rewards: Mapping[str, float] = DEFAULT_REWARDS) -> dict[str, Any]:
    """The answer OpenRLHF's client reads: one reward per query (``rewards``, and the same as ``scores``,
    which its dynamic filtering reads), and the verdicts as 0/1 columns in ``extra_logs``."""
    values = [float(rewards[g.verdict]) for g in graded]
    return {
        "rewards": values,
        "scores": values,
        "extra_logs": {f"vx_{v}": [float(g.verdict == v) for g in graded] for v in ("pass", "fail", "abstain")},
    }


_VERL_PLURAL = ("data_sources", "solution_strs", "ground_truths", "extra_infos")
_VERL_SINGULAR = ("data_source", "solution_str", "ground_truth", "extra_info")


def verl_rows(body: Any, index: TaskIndex, *, extract: Extract = True) -> tuple[list[Row], bool]:
    """The rows of a verl ``compute_score`` call sent as JSON, and whether it was the batch (plural) form."""
    body = _object(body, "compute_score's keyword arguments")
    plural = "solution_strs" in body
    if not plural and "solution_str" not in body:
        raise ShapeError('give "solution_strs" (the batch form, with "ground_truths" ...) or "solution_str"')
    if plural:
        solutions = _strings(body, "solution_strs", None, required=True)
        assert solutions is not None
        n = len(solutions)
        _check_count(n)
        sources = _strings(body, "data_sources", n, required=False) or [None] * n
        truths = _strings(body, "ground_truths", n, required=False) or [None] * n
        extras = _strings(body, "extra_infos", n, required=False) or [None] * n
    else:
        solutions, sources = [body.get("solution_str")], [body.get("data_source")]
        truths, extras = [body.get("ground_truth")], [body.get("extra_info")]
    rows = []
    for i, (solution, source, truth, extra) in enumerate(zip(solutions, sources, truths, extras)):
        if not isinstance(solution, str):
            raise ShapeError(f"solution {i} must be a string, not {type(solution).__name__}")
        extra = extra if isinstance(extra, Mapping) else {}
        try:
            tid = index.find(
                task_id=truth,
                data_source=source,
                index=extra.get("index"),
                prompt=extra.get("prompt") if isinstance(extra.get("prompt"), str) else None,
                where=f"solution {i}",
            )
        except UnknownTask as exc:
            raise ShapeError(str(exc)) from None
        rows.append(Row(tid, read_output(solution, extract)))
    return rows, plural


def verl_score(graded: Graded, rewards: Mapping[str, float] = DEFAULT_REWARDS) -> dict[str, float]:
    """One completion's result as verl's reward managers read a dict: ``score`` is the reward, and the
    other keys (every one a number, the same keys for every completion: verl gathers them in lists) the
    verdict."""
    return {
        "score": float(rewards[graded.verdict]),
        **{f"vx_{v}": float(graded.verdict == v) for v in ("pass", "fail", "abstain")},
    }


__all__ = [
    "MAX_ROWS",
    "Extract",
    "Row",
    "ShapeError",
    "extract_output",
    "openrlhf_answer",
    "openrlhf_rows",
    "read_output",
    "reply_reader",
    "strip_end_tokens",
    "verl_rows",
    "verl_score",
]
