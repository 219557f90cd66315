"""The trainers' reward calls, each made as the trainer's own client makes it, against a verifier graded here:
OpenRLHF's reward function file and its HTTP body, verl's compute_score in both forms, a ``verifiers`` rubric's
group reward function; the task found by id, data source + index, or prompt text; bad bodies said clearly."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path

import pytest

from vx.integrations.common import IntegrationError
from vx.reward.grader import GroupGrader
from vx.reward.shapes import ShapeError, openrlhf_answer, openrlhf_rows, strip_end_tokens, verl_rows
from vx.reward.tasks import TaskIndex, UnknownTask
from vx.verifier import Verifier

ROOT = Path(__file__).resolve().parents[2]
HUMANEVAL = ROOT / "examples" / "humaneval"


def _task(i: int = 0) -> dict:
    return json.loads((HUMANEVAL / "tasks.jsonl").read_text().splitlines()[i])


def _group() -> list[str]:
    """Four attempts at HumanEval/0: three right (written differently), one that passes the visible examples
    and is wrong elsewhere -- only the other attempts can tell."""
    good = _task()["reference"]
    return [
        good,
        good.replace("for idx, elem", "for idx,  elem"),
        good.replace("distance = ", "distance  = "),
        _task()["prompt"] + "    return len(numbers) > 4\n",
    ]


@pytest.fixture(scope="module")
def peers_vx(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("reward") / "peers.vx"
    path.write_text("(any disagrees_with_peers fails_visible_example timeout)\n")
    return path


@pytest.fixture(scope="module")
def verifier(peers_vx) -> Verifier:
    return Verifier.load(peers_vx, HUMANEVAL)


def test_the_task_is_found_by_id_by_source_and_index_and_by_prompt_text(verifier):
    index = TaskIndex(verifier.tasks)
    prompt = _task(2)["prompt"]
    assert index.find(task_id="HumanEval/2") == "HumanEval/2"
    assert index.find(task_id="not an id", data_source="HumanEval", index=2) == "HumanEval/2"
    chat = f"<|im_start|>user\nComplete this function:\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
    assert index.find(task_id=None, prompt=chat) == "HumanEval/2"
    with pytest.raises(UnknownTask, match=r"no task .* matches the id 'HumanEval/999' or the prompt's text"):
        index.find(task_id="HumanEval/999", prompt="def nothing_like_any_task(): pass")


def test_openrlhf_bodies_as_its_client_builds_them(verifier):
    """openrlhf/utils/agent.py: {"query": [prompt + response decoded with its special tokens], "prompts":
    [prompt], "labels": [label]}; it reads "rewards" (and "scores", "extra_logs")."""
    index = TaskIndex(verifier.tasks)
    prompt = "<|im_start|>user\n" + _task()["prompt"] + "<|im_end|>\n<|im_start|>assistant\n"
    body = {
        "query": [prompt + "```python\n" + g + "```<|im_end|><|endoftext|>" for g in _group()],
        "prompts": [prompt] * 4,
        "labels": ["HumanEval/0", "", None, "HumanEval/0"],  # two found by the prompt's text
    }
    rows = openrlhf_rows(body, index)
    assert [r.task_id for r in rows] == ["HumanEval/0"] * 4 and rows[0].output == _group()[0]
    assert strip_end_tokens("x = 1</s>\n") == "x = 1"
    with GroupGrader(verifier, workers=2) as grader:
        result = grader.grade_group("HumanEval/0", [r.output for r in rows])
    answer = openrlhf_answer(result.graded)
    assert answer["rewards"] == [1.0, 1.0, 1.0, 0.0] == answer["scores"]
    assert answer["extra_logs"]["vx_fail"] == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1, 2], "must be a JSON object"),
        ({"prompts": ["p"]}, '"query" is required'),
        ({"query": "text"}, "must be a list"),
        ({"query": ["a", "b"], "labels": ["HumanEval/0"]}, '"labels" has 1 entries but there are 2'),
        ({"query": [3]}, r'"query"\[0\] must be a string'),
        ({"query": []}, "no completion"),
        ({"query": ["x"], "labels": ["HumanEval/999"]}, "no task of the verifier's family matches"),
    ],
)
def test_a_bad_openrlhf_body_says_what_is_wrong(verifier, body, message):
    with pytest.raises(ShapeError, match=message):
        openrlhf_rows(body, TaskIndex(verifier.tasks))


def test_openrlhf_reward_file_called_as_the_trainer_calls_it(verifier):
    from vx.integrations.openrlhf import VxRewardFunc

    reward_func = VxRewardFunc(verifier)
    prompt = _task()["prompt"]
    try:
        # SingleTurnAgentExecutor._fetch_rewards_via_func: reward_func(queries[i:i+1], prompts[i:i+1], labels[i:i+1])
        one = reward_func([prompt + "```python\n" + _group()[3] + "```"], [prompt], ["HumanEval/0"])
        whole = reward_func([prompt + f"```python\n{g}```" for g in _group()], [prompt] * 4, ["HumanEval/0"] * 4)
    finally:
        reward_func.close()
    assert one["rewards"] == [1.0]  # alone, the wrong attempt passes the examples; the peer op abstains
    assert whole["rewards"] == [1.0, 1.0, 1.0, 0.0] and whole["extra_logs"]["vx_pass"] == [1.0, 1.0, 1.0, 0.0]


def test_verl_compute_score_in_both_forms(verifier):
    """verl/workers/reward_manager/batch.py: compute_score(data_sources=, solution_strs=, ground_truths=,
    extra_infos=) -> one score per completion (a dict: "score" is the reward, every key logged); naive.py:
    compute_score(data_source=, solution_str=, ground_truth=, extra_info=)."""
    from vx.integrations.verl import VxComputeScore

    compute_score = VxComputeScore(verifier)
    try:
        scores = compute_score(
            data_sources=["HumanEval"] * 5,
            solution_strs=_group() + [_task(2)["reference"]],
            ground_truths=["HumanEval/0"] * 4 + [None],
            extra_infos=[{"index": 0, "split": "train"}] * 4 + [{"index": 2, "split": "train"}],
        )
        single = compute_score(
            data_source="HumanEval", solution_str=_group()[3], ground_truth="HumanEval/0", extra_info={}
        )
    finally:
        compute_score.close()
    assert [s["score"] for s in scores] == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert all(set(s) == {"score", "vx_pass", "vx_fail", "vx_abstain"} for s in scores)
    assert single["score"] == 1.0 and single["vx_pass"] == 1.0  # alone: the peer op has no opinion
    rows, plural = verl_rows(
        {"solution_str": "x", "data_source": "HumanEval", "extra_info": {"index": 3}}, TaskIndex(verifier.tasks)
    )
    assert not plural and rows[0].task_id == "HumanEval/3"
    with pytest.raises(IntegrationError, match="solution_str= .* or solution_strs="):
        VxComputeScore(verifier)(solutions=["x"])


def test_a_verifiers_rubric_calls_the_group_reward_with_the_group(verifier):
    """verifiers' Rubric: a function with plural parameters is a group reward function
    (_is_group_func); _call_group_reward_func passes the group's prompts, completions, answers, states
    (only the parameters it names, unless it takes **kwargs) and awaits it; the floats are added."""
    from vx.integrations.verifiers import vx_group_reward

    reward = vx_group_reward(verifier)
    params = set(inspect.signature(reward).parameters)
    assert params & {"states", "prompts", "completions", "answers", "tasks", "infos"}  # a group function there
    prompt = [{"role": "user", "content": _task()["prompt"]}]
    merged = {
        "prompts": [prompt] * 4,
        "completions": [[{"role": "assistant", "content": f"```python\n{g}```"}] for g in _group()],
        "answers": ["HumanEval/0", "", "", ""],  # three found by the prompt's text
        "states": [{}] * 4,
        "tasks": ["default"] * 4,
        "infos": [{}] * 4,
    }
    try:
        scores = asyncio.run(reward(**merged))
    finally:
        reward.close()
    assert scores == [1.0, 1.0, 1.0, 0.0]
