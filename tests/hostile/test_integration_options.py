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
