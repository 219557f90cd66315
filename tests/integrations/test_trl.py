"""The TRL reward function: called as TRL's GRPOTrainer calls reward functions (keyword arguments:
prompts, completions, completion_ids, every dataset column, trainer_state, log_extra, log_metric), it
grades each task's group of completions together -- so peer ops compare them -- and maps verdicts to
rewards. A real GRPOTrainer step on a tiny random model runs with -m slow (torch and trl installed)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from vx.integrations.common import IntegrationError, extract_output
from vx.integrations.trl import VxReward

ROOT = Path(__file__).resolve().parents[2]
HUMANEVAL = ROOT / "examples" / "humaneval"


def _task(i: int = 0) -> dict:
    return json.loads((HUMANEVAL / "tasks.jsonl").read_text().splitlines()[i])


def _group() -> list[str]:
    """Four attempts at HumanEval/0: three right (written differently), one that passes the visible
    examples and is wrong elsewhere -- only the other attempts can tell."""
    good = _task()["reference"]
    return [
        good,
        good.replace("for idx, elem", "for idx,  elem"),
        good.replace("distance = ", "distance  = "),
        _task()["prompt"] + "    return len(numbers) > 4\n",
    ]


def test_groups_are_graded_together_as_trl_calls_it(tmp_path):
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example)\n")
    from vx.verifier import Verifier

    reward = VxReward(Verifier.load(expr, HUMANEVAL), name="vx_peers")
    logged, metrics = {}, {}
    other = _task(2)  # HumanEval/2 (truncate_number): one right, one wrong, in the same batch
    completions = [f"```python\n{c}\n```" for c in _group()] + [
        other["reference"],
        other["prompt"] + "    return 0.0\n",
    ]
    tasks = ["HumanEval/0"] * 4 + ["HumanEval/2"] * 2
    rewards = reward(
        prompts=["p"] * 6,
        completions=completions,
        completion_ids=[[1]] * 6,
        task_id=tasks,
        trainer_state=None,
        log_extra=lambda col, vals: logged.__setitem__(col, vals),
        log_metric=lambda name, value: metrics.__setitem__(name, value),
    )
    assert rewards == [1.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    assert logged["vx_verdict"] == ["pass", "pass", "pass", "fail", "pass", "fail"]
    assert logged["vx_failed_checks"][3] == "disagrees_with_peers"
    assert metrics["vx/fail"] == pytest.approx(2 / 6)
    assert reward.__name__ == "vx_peers"  # TRL names the reward's metrics after it


def test_keep_best_pays_only_the_completion_ranked_first_in_each_group(tmp_path):
    """Best of n as rejection sampling uses it: the group's best completion keeps its reward, the others
    get the FAIL reward; every completion's rank is logged."""
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example)\n")
    from vx.verifier import Verifier

    reward = VxReward(Verifier.load(expr, HUMANEVAL), keep="best", rewards={"fail": -1.0})
    logged = {}
    group = [_group()[3], *_group()[:3]]  # the wrong one first: position must not decide
    rewards = reward(
        prompts=["p"] * 4,
        completions=group,
        task_id=["HumanEval/0"] * 4,
        log_extra=lambda col, vals: logged.__setitem__(col, vals),
    )
    assert sorted(rewards) == [-1.0, -1.0, -1.0, 1.0] and rewards[0] == -1.0
    assert sorted(logged["vx_rank"]) == [1, 2, 3, 4] and logged["vx_rank"][0] == 4
    assert logged["vx_verdict"] == ["fail", "pass", "pass", "pass"]
    with pytest.raises(IntegrationError, match="keep must be 'all', 'best'"):
        VxReward(HUMANEVAL / "seed.vx", keep="worst")


def test_conversational_completions_and_reward_mapping():
    reward = VxReward(HUMANEVAL / "seed.vx", rewards={"fail": -1.0})
    good, bad = _task()["reference"], _task()["reference"].replace("distance < threshold", "distance > threshold")
    convo = [
        [{"role": "assistant", "content": good}],
        [{"role": "assistant", "content": [{"type": "text", "text": bad}]}],
    ]
    assert reward(
        prompts=[[{"role": "user", "content": "solve"}]] * 2, completions=convo, task_id=["HumanEval/0", "HumanEval/0"]
    ) == [1.0, -1.0]


def test_an_abstention_earns_nothing_by_default_and_a_split_group_is_said(tmp_path):
    """A peer op alone abstains on one attempt: reward 0.0 by default (no evidence the completion is
    right), what `rewards` says otherwise; with group_size, a group smaller than it (a distributed
    trainer's split) is warned about."""
    expr = tmp_path / "peers.vx"
    expr.write_text("disagrees_with_peers\n")
    from vx.verifier import Verifier

    v = Verifier.load(expr, HUMANEVAL)
    logged = {}
    kwargs = dict(
        prompts=["p"],
        completions=[_group()[0]],
        task_id=["HumanEval/0"],
        log_extra=lambda col, vals: logged.__setitem__(col, vals),
    )
    assert VxReward(v)(**kwargs) == [0.0] and logged["vx_verdict"] == ["abstain"]
    assert VxReward(v, rewards={"abstain": 0.5})(**kwargs) == [0.5]
    with pytest.warns(UserWarning, match="fewer than group_size=4 completions"):
        VxReward(v, group_size=4)(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        VxReward(v, group_size=4)(prompts=["p"] * 4, completions=_group(), task_id=["HumanEval/0"] * 4)


def test_misuse_is_a_clear_error():
    reward = VxReward(HUMANEVAL / "seed.vx")
    with pytest.raises(IntegrationError, match="no 'task_id' column"):
        reward(prompts=["p"], completions=["x"])
    with pytest.raises(IntegrationError, match="unknown verdict"):
        VxReward(HUMANEVAL / "seed.vx", rewards={"great": 2.0})
    assert extract_output("text\n```python\nx = 1\n```\nmore") == "x = 1\n"
    assert extract_output("x = 1") == "x = 1"


@pytest.mark.slow
def test_a_real_grpo_step(tmp_path):
    """One GRPOTrainer step on a tiny random GPT-2 with a character tokenizer built here (no download):
    TRL calls the reward once per step, with each prompt's group of generations."""
    pytest.importorskip("torch")
    pytest.importorskip("trl")
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    from trl import GRPOConfig, GRPOTrainer

    chars = sorted(set("abcdefghijklmnopqrstuvwxyz0123456789 ()[]:,.=+-*<>\n_\"'#"))
    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>"] + chars)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tok.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(vocab),
            n_positions=256,
            n_embd=32,
            n_layer=1,
            n_head=2,
            pad_token_id=0,
            eos_token_id=1,
            bos_token_id=1,
        )
    )
    calls = []

    class Recording(VxReward):
        def __call__(self, *args, **kwargs):
            calls.append(list(kwargs["task_id"]))
            return super().__call__(*args, **kwargs)

    rows = [{"prompt": "def f(x):\n", "task_id": "HumanEval/0"}, {"prompt": "def g(y):\n", "task_id": "HumanEval/2"}]
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=12,
        report_to=[],
        use_cpu=True,
        logging_steps=1,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[Recording(HUMANEVAL / "seed.vx")],
        args=args,
        train_dataset=Dataset.from_list(rows * 2),
        processing_class=tokenizer,
    )
    trainer.train()
    assert len(calls) == 1 and sorted(calls[0]) == ["HumanEval/0"] * 2 + ["HumanEval/2"] * 2
    logged = trainer.state.log_history[0]
    assert "rewards/vx_seed/mean" in logged and logged["vx/fail"] + logged["vx/pass"] + logged["vx/abstain"] == 1
