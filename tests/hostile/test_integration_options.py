"""The integrations' options, in the attacker's words: "`rewards={'pass': nan}` gives NaN
rewards silently; `rewards` of None or 'zero', `jobs=0` or `timeout=-1` fail only at the first call with a raw
TypeError or ValueError; a generator of completions raises TypeError; the Inspect scorer raises on an int
completion or on metadata that is not a dict". Every option is checked when the integration is built."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vx.errors import ArgumentError
from vx.integrations.common import check_choice, check_rewards, graded_output, sample_task
from vx.integrations.trl import DEFAULT_REWARDS, VxReward

HUMANEVAL = Path(__file__).resolve().parents[2] / "examples" / "humaneval"
SEED = HUMANEVAL / "seed.vx"


@pytest.mark.parametrize(
    "options, needle",
    [
        ({"rewards": {"pass": math.nan}}, r"rewards\['pass'\] must be a finite number"),
        ({"rewards": {"fail": math.inf}}, r"rewards\['fail'\] must be a finite number"),
        ({"rewards": {"fail": None}}, r"rewards\['fail'\] must be a finite number, not NoneType"),
        ({"rewards": {"fail": "zero"}}, r"rewards\['fail'\] must be a finite number, not str"),
        ({"rewards": {"pass": True}}, r"rewards\['pass'\] must be a finite number, not bool"),
        ({"rewards": "zero"}, "rewards must be a mapping"),
        ({"rewards": {"great": 2.0}}, "unknown verdict"),
        ({"jobs": 0}, "jobs must be >= 1"),
        ({"jobs": -1}, "jobs must be >= 1"),
        ({"jobs": "2"}, "jobs must be an int"),
        ({"timeout": -1}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": 0}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": math.nan}, "timeout must be a finite number of seconds > 0"),
        ({"timeout": None}, "timeout must be a number of seconds"),
        ({"timeout": "zero"}, "timeout must be a number of seconds"),
        ({"cache": "cache.sqlite"}, "cache must be a VerdictCache"),
    ],
)
def test_a_bad_reward_option_fails_when_the_reward_is_built(options, needle):
    with pytest.raises(ArgumentError, match=needle):
        VxReward(SEED, **options)


def test_reward_defaults_and_overrides_are_numbers():
    assert check_rewards(None, DEFAULT_REWARDS) == DEFAULT_REWARDS
    assert check_rewards({"fail": -1}, DEFAULT_REWARDS) == {"pass": 1.0, "fail": -1.0, "abstain": 0.0}


def test_a_generator_of_completions_is_graded_like_a_list():
    task = json.loads((HUMANEVAL / "tasks.jsonl").read_text(encoding="utf-8").split("\n")[0])
    good, bad = task["reference"], task["reference"].replace("distance < threshold", "distance > threshold")
    reward = VxReward(SEED)
    assert reward(
        prompts=["p", "p"], completions=(c for c in (good, bad)), task_id=(t for t in ["HumanEval/0", "HumanEval/0"])
    ) == [1.0, 0.0]
    with pytest.raises(ArgumentError, match="completions must be a list"):
        reward(prompts=["p"], completions="def f(): pass", task_id=["HumanEval/0"])


@pytest.mark.parametrize("abstain", [math.nan, None, "maybe", True, ["C"]])
def test_a_bad_abstain_value_is_refused(abstain):
    with pytest.raises(ArgumentError, match="abstain must be"):
        check_choice(abstain, "abstain", ("C", "I", "P", "N"), numbers=True)
    assert check_choice("C", "abstain", ("C", "I"), numbers=True) == "C"
    assert check_choice(0.5, "abstain", ("C", "I"), numbers=True) == 0.5


def test_an_int_completion_and_list_metadata_are_graded_not_raised():
    assert sample_task([1, 2], "task", "HumanEval/0") == "HumanEval/0"
    assert sample_task(None, "task", "HumanEval/0") == "HumanEval/0"
    assert sample_task({"task": "HumanEval/2"}, "task", "HumanEval/0") == "HumanEval/2"
    assert graded_output(5, True) == 5 and graded_output("```python\nx = 1\n```", True) == "x = 1\n"
    from vx.verifier import Verifier

    grade = Verifier.load(SEED).grade("HumanEval/0", graded_output(5, True))
    assert grade.verdict.value == "fail" and "not Python source text" in grade.drawbacks[0][1]


def test_the_inspect_scorer_checks_its_options_and_takes_an_int_completion():
    pytest.importorskip("inspect_ai")
    import asyncio

    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from vx.integrations.inspect import vx_scorer

    for bad in ({"abstain": math.nan}, {"abstain": None}, {"timeout": -1}, {"timeout": "zero"}):
        with pytest.raises(ArgumentError):
            vx_scorer(SEED, **bad)
    score = vx_scorer(SEED)
    output = ModelOutput.from_content("mockllm/model", "x")
    output.completion = 5  # a solver may leave anything there
    state = TaskState(
        model="mockllm/model",
        sample_id="HumanEval/0",
        epoch=1,
        input="x",
        messages=[],
        output=output,
        metadata=["not", "a", "dict"],
    )
    result = asyncio.run(score(state, Target("")))
    assert result.value == "I" and result.answer == "fail"
    assert "not Python source text" in result.explanation


# --------------------------------------------------------------------------------------------
# typed errors at construction, records that share an id, bounded score metadata


@pytest.mark.parametrize("group_size", ["8", 0, -1, 2.5, True, [8]])
def test_a_bad_group_size_fails_when_the_reward_is_built(group_size):
    # "group_size='8'" used to raise TypeError at the first call; -1 was accepted
    with pytest.raises(ArgumentError, match="group_size must be None or an int >= 1"):
        VxReward(SEED, group_size=group_size)
    assert VxReward(SEED, group_size=8).group_size == 8 and VxReward(SEED).group_size is None


def test_two_trl_rows_giving_one_task_id_two_records_are_refused():
    # The attack: rows carry task records; two records share the id "HumanEval/0" but not their examples.
    # They used to be merged silently and every completion graded against the last record.
    from vx.integrations.common import IntegrationError

    task = json.loads((HUMANEVAL / "tasks.jsonl").read_text(encoding="utf-8").split("\n")[0])
    other = {**task, "examples": task["examples"][:1]}
    reward = VxReward(SEED)
    with pytest.raises(
        IntegrationError, match=r"row 1 \(task_id\) and row 0 \(task_id\) give two different task records"
    ):
        reward(prompts=["p", "p"], completions=[task["reference"]] * 2, task_id=[task, other])
    assert reward(prompts=["p", "p"], completions=[task["reference"]] * 2, task_id=[task, dict(task)]) == [1.0, 1.0]


def test_an_output_of_a_5000_digit_int_is_graded_not_raised():
    # "10**5000 as the output raises ValueError in item_hash" (JSON cannot write it): now it hashes, and FAILs
    from vx.ops.cache import item_hash
    from vx.verifier import Verifier

    assert item_hash({"id": "t"}, 10**5000) != item_hash({"id": "t"}, 10**5000 + 1)
    grades = Verifier.load(SEED).grade_many("HumanEval/0", [10**5000, 10**5000])
    assert [g.verdict.value for g in grades] == ["fail", "fail"]


def test_the_inspect_score_keeps_a_bounded_output_for_the_reducer():
    pytest.importorskip("inspect_ai")
    import asyncio

    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Target
    from inspect_ai.solver import TaskState

    from vx.integrations.common import kept_output
    from vx.integrations.inspect import GRADED_KEY, vx_scorer
    from vx.ops.apply import MAX_OUTPUT_CHARS

    huge = "x = 1\n" * 2_000_000  # 12 MB: it used to be kept whole in every sample's score metadata
    state = TaskState(
        model="mockllm/model",
        sample_id="HumanEval/0",
        epoch=1,
        input="x",
        messages=[],
        output=ModelOutput.from_content("mockllm/model", huge),
        metadata={},
    )
    score = asyncio.run(vx_scorer(SEED, extract=False)(state, Target("")))
    kept = score.metadata[GRADED_KEY]["output"]
    assert score.answer == "fail" and len(kept) == MAX_OUTPUT_CHARS + 1
    assert kept_output(10**5000) == "<a int output vx cannot keep>" and kept_output([1, 2]) == [1, 2]


@pytest.mark.parametrize(
    "metadata, needle",
    [
        ({"other": 1}, "epoch 1: the score has no 'vx_graded'"),
        (None, "epoch 1: the score has no 'vx_graded'"),
        ({"vx_graded": "HumanEval/0"}, "epoch 1: the score's 'vx_graded' metadata is str"),
        ({"vx_graded": {"task": "HumanEval/0"}}, "not what vx_scorer writes"),
        ({"vx_graded": {"task": 5, "output": "x"}}, "the graded task is int"),
    ],
)
def test_the_group_reducer_on_malformed_metadata_says_which_epoch_and_what(metadata, needle):
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import Score

    from vx.integrations.common import IntegrationError
    from vx.integrations.inspect import vx_group_reducer

    reduce = vx_group_reducer(SEED)
    with pytest.raises(IntegrationError, match=needle):
        reduce([Score(value="C", metadata=metadata)])


@pytest.mark.parametrize("options", [{"jobs": 0}, {"jobs": "2"}, {"timeout": -1}, {"abstain": ["C"]}, {"abstain": "X"}])
def test_the_group_reducer_checks_its_options_when_built(options):
    pytest.importorskip("inspect_ai")
    from vx.integrations.inspect import vx_group_reducer

    with pytest.raises(ArgumentError):
        vx_group_reducer(SEED, **options)
