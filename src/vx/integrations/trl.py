"""A TRL reward function that grades each prompt's group of completions with a `.vx` verifier
(``vx-verifiers[trl]``).

    from trl import GRPOConfig, GRPOTrainer
    from vx.integrations.trl import VxReward

    reward = VxReward("examples/humaneval/seed.vx", task_column="task_id")
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], train_dataset=dataset, args=GRPOConfig(...))

GRPO samples several completions per prompt, a *group*, and learns from how they compare: exactly
the setting of vx's peer ops. A :class:`VxReward` follows TRL's reward-function convention
(``reward(prompts=..., completions=..., **dataset_columns) -> list[float]``): it groups the batch's
completions by their task (the dataset column `task_column`: a task id of the verifier's family, or a
task record), grades each group together with
:meth:`vx.Verifier.grade_many` (peer ops compare the attempts), and maps each verdict to a reward
(``rewards``: PASS 1.0, FAIL 0.0, ABSTAIN 0.0 by default). The completion graded is what the
verifier's family reads from the reply (``extract=True``: its pack's ``read_reply``, else the first fenced
code block) or the reply itself; conversational completions
(lists of messages) are read from their last message. When the trainer passes them, the verdicts and
failed checks go to its completions table (``log_extra``) and the share of each verdict to its
metrics (``log_metric``).

**Abstentions earn nothing by default.** An ABSTAIN means no check had an opinion: no evidence that the
completion is right. A policy optimised against a reward that pays it (0.5, or 1.0 as vx's own
"no known drawback" convention) learns to reach the outputs the checks cannot read before it learns
to be right -- and with a verifier whose recall on failures that pass the visible example is 0.15--0.25,
that is cheap. Pass ``rewards={"abstain": 0.5}`` (or 1.0) to choose otherwise.

**Keeping a group's best** (``keep="best"``): best of n, as rejection sampling uses a grader. Each group is
ranked (:meth:`vx.Verifier.rank`: verdict, the verifier's evidence, support among the group, a digest
tie-break); the completion ranked first keeps its verdict's reward and every other completion of the group
gets the FAIL reward. The rank of every completion goes to the completions table (``vx_rank``).

**A distributed trainer.** GRPOTrainer computes rewards on each process for that process's slice of
the batch, then gathers them: the reward sees only the completions on its own process. A group whose
completions straddle two processes is graded as two smaller groups (peer ops compare fewer attempts;
one attempt alone makes them abstain, and the abstention's reward applies). Keep each process's share
whole groups: ``per_device_train_batch_size`` a multiple of ``num_generations``. With
``group_size=num_generations`` the reward warns when a call holds a smaller group of some task.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.integrations.common import (
    IntegrationError,
    TaskRecords,
    as_list,
    as_verifier,
    check_cache,
    check_choice,
    check_group_size,
    check_jobs,
    check_rewards,
    check_timeout,
    resolve_task,
)
from vx.reward.shapes import read_output, reply_reader
from vx.verifier import Verifier

#: an abstention is paid as a failure, not as a pass (see the module docstring)
DEFAULT_REWARDS: Mapping[str, float] = {"pass": 1.0, "fail": 0.0, "abstain": 0.0}


def _text(completion: Any) -> str:
    """A completion's text: a string, or the content of the last message of a conversation."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        content = completion[-1].get("content", "")
        if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        return str(content)
    raise IntegrationError(f"a completion is a string or a list of messages, not {type(completion).__name__}")


class VxReward:
    """TRL reward function: grades each task's group of completions together (see the module docstring)."""

    def __init__(
        self,
        verifier: Verifier | str | Path,
        *,
        task_column: str = "task_id",
        rewards: Mapping[str, float] | None = None,
        extract: bool = True,
        jobs: int | None = 1,
        timeout: float = 10.0,
        cache: Any = None,
        name: str | None = None,
        group_size: int | None = None,
        keep: str = "all",
    ) -> None:
        # every option checked here, so a bad one fails when the reward is built, not at the first batch
        self.rewards = check_rewards(rewards, DEFAULT_REWARDS)
        self.jobs, self.timeout, self.cache = check_jobs(jobs), check_timeout(timeout), check_cache(cache)
        self.verifier = as_verifier(verifier)
        self.group_size = check_group_size(group_size)
        self.keep = check_choice(keep, "keep", ("all", "best"))
        self.task_column = task_column
        self.extract = extract
        # TRL names the reward's logged metrics after it (rewards/<name>/mean)
        self.__name__ = name or "vx_" + (Path(str(verifier)).stem if not isinstance(verifier, Verifier) else "verifier")

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Any] = (), **kwargs: Any
    ) -> list[float]:
        tasks = kwargs.get(self.task_column)
        if tasks is None:
            raise IntegrationError(
                f"the dataset has no {self.task_column!r} column: each row must name its task "
                f"(a task id of the verifier's family); pass task_column= to use another column"
            )
        tasks = as_list(tasks, f"the {self.task_column!r} column")
        completions = as_list(completions, "completions")  # a generator is read once, here
        if len(tasks) != len(completions):
            raise IntegrationError(f"{len(completions)} completions but {len(tasks)} values of {self.task_column!r}")
        outputs = [_text(c) for c in completions]
        if self.extract:  # what the verifier's family reads from a reply, else its first fenced block
            read = reply_reader(self.verifier)
            outputs = [read_output(o, read) for o in outputs]
        groups: dict[str, list[int]] = {}
        records = TaskRecords()  # rows that name one task id with two different records are refused
        for i, task in enumerate(tasks):
            where = f"row {i} ({self.task_column})"
            record = resolve_task(self.verifier, task, where=where)
            key = str(record.get("id", task))
            groups.setdefault(key, []).append(i)
            records.add(record, key=key, where=where)
        small = {k: len(r) for k, r in groups.items() if self.group_size is not None and len(r) < self.group_size}
        if small:
            warnings.warn(
                f"{len(small)} task(s) have fewer than group_size={self.group_size} completions in this call "
                f"(e.g. {next(iter(small))}: {next(iter(small.values()))}): a distributed trainer split "
                "their group, so peer ops compare fewer attempts; make per_device_train_batch_size a "
                "multiple of num_generations",
                stacklevel=2,
            )
        verdicts: list[str] = [""] * len(outputs)
        failed: list[str] = [""] * len(outputs)
        ranks: list[int] = [0] * len(outputs)
        for key, rows in groups.items():  # one group per task: its attempts are each other's peers
            ranked = self.verifier.rank(
                records.get(key), [outputs[i] for i in rows], jobs=self.jobs, timeout=self.timeout, cache=self.cache
            )
            for r in ranked:
                i = rows[r.index]
                verdicts[i] = r.grade.verdict.value
                failed[i] = "; ".join(op for op, _ in r.grade.drawbacks)
                ranks[i] = r.rank
        self._log(kwargs, verdicts, failed, ranks)
        if self.keep == "best":
            return [float(self.rewards[v]) if k == 1 else float(self.rewards["fail"]) for v, k in zip(verdicts, ranks)]
        return [float(self.rewards[v]) for v in verdicts]

    @staticmethod
    def _log(kwargs: Mapping[str, Any], verdicts: list[str], failed: list[str], ranks: list[int]) -> None:
        log_extra, log_metric = kwargs.get("log_extra"), kwargs.get("log_metric")
        if callable(log_extra):
            log_extra("vx_verdict", verdicts)
            log_extra("vx_failed_checks", failed)
            log_extra("vx_rank", ranks)
        if callable(log_metric) and verdicts:
            for name in DEFAULT_REWARDS:
                log_metric(f"vx/{name}", sum(v == name for v in verdicts) / len(verdicts))


def vx_reward(verifier: Verifier | str | Path, **options: Any) -> VxReward:
    """A :class:`VxReward` (the function form, for ``reward_funcs=[vx_reward("seed.vx")]``)."""
    return VxReward(verifier, **options)


__all__ = ["DEFAULT_REWARDS", "VxReward", "vx_reward"]
