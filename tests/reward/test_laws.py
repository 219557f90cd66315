"""Laws of the reward side, over any input: a body decodes or is refused with a 400 (never another error);
the trainers' readers return rows or a ShapeError; the task index finds a task by its prompt inside any text
around it (or says why not)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.reward.shapes import ShapeError, openrlhf_rows, verl_rows
from vx.reward.tasks import TaskIndex, UnknownTask

pytest.importorskip("starlette")
from vx.serve import _decode, _Refused  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASKS = {
    t["id"]: t
    for t in (json.loads(line) for line in (ROOT / "examples" / "humaneval" / "tasks.jsonl").read_text().splitlines())
}
INDEX = TaskIndex(TASKS)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=200)
    | st.builds(lambda n, c: c * n, st.integers(0, 3000), st.sampled_from([b"[", b'{"a":', b"9"]))
)
def test_any_body_decodes_or_is_a_400(raw):
    try:
        _decode(raw)
    except _Refused as refused:
        assert refused.status == 400 and refused.message


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["query", "prompts", "labels", "solution_strs", "ground_truths", "solution_str"]))
def test_the_trainers_readers_return_rows_or_say_what_is_wrong(value, key):
    for body in (value, {key: value}, {"query": [value], "labels": ["HumanEval/0"]}, {"solution_strs": [value]}):
        for read in (openrlhf_rows, lambda b, i: verl_rows(b, i)[0]):
            try:
                rows = read(body, INDEX)
            except ShapeError as exc:
                assert str(exc)
            else:
                assert all(r.task_id in TASKS and isinstance(r.output, str) for r in rows)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(TASKS)), st.text(max_size=40), st.text(max_size=40))
def test_a_task_is_found_by_its_prompt_inside_any_text(task_id, before, after):
    text = before + TASKS[task_id]["prompt"] + after
    try:
        found = INDEX.find(prompt=text)
    except UnknownTask as exc:  # another task's prompt of the same length in the text: said, never guessed
        assert "two tasks" in str(exc)
    else:
        assert found == task_id or len(TASKS[found]["prompt"]) > len(TASKS[task_id]["prompt"])
