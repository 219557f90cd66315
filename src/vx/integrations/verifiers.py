"""A group reward function for Prime Intellect's ``verifiers`` rubrics, grading with a `.vx` verifier.

    import verifiers as vf
    from vx.integrations.verifiers import vx_group_reward

    rubric = vf.Rubric(funcs=[vx_group_reward("examples/humaneval/seed.vx")])    # or a vx serve URL

A ``verifiers`` rubric calls a reward function whose parameters are plural (``prompts``, ``completions``,
``answers``, ``states``, ``tasks``, ``infos``) once per group of rollouts of one example, with every
argument a list with one entry per rollout, and adds the list of floats it returns, times its weight, to
the rollouts' rewards (``Rubric.score_group`` and ``_call_group_reward_func`` in ``verifiers``). So the
group is graded **together**: peer ops compare the rollouts. The function returned here has those
plural parameters (``prompts``, ``completions``, ``answers``, ``infos``) and is a coroutine (the rubric
awaits it; grading runs in a worker thread). A completion is a string or a list of chat messages (the
last assistant message's content is graded, its first fenced code block when ``extract``). The task is
the answer when it is a task id of the family (the dataset's ``answer`` column), else ``info["task_id"]``,
else the task whose prompt occurs in the prompt's text. The reward is ``rewards[verdict]`` (an
abstention earns 0.0: a rubric adds numbers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.integrations.common import IntegrationError
from vx.integrations.rewards import SourcedReward
from vx.reward.shapes import Row
from vx.reward.tasks import UnknownTask
from vx.verifier import Verifier


def _text(value: Any) -> str:
    """A completion or a prompt as text: a string, or the content of the last message (of the
    assistant's, for a completion) in a list of chat messages."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence) and value:
        said = [m for m in value if isinstance(m, Mapping)]
        mine = [m for m in said if m.get("role") == "assistant"] or said
        if mine:
            content = mine[-1].get("content", "")
            if isinstance(content, list):
                return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
            return str(content or "")
    if isinstance(value, Sequence):
        return ""
    raise IntegrationError(f"a completion is a string or a list of chat messages, not {type(value).__name__}")


def _prompt_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "\n".join(str(m.get("content", "")) for m in value if isinstance(m, Mapping))
    return ""


def vx_group_reward(
    verifier: Verifier | str | Path,
    *,
    rewards: Mapping[str, float] | None = None,
    extract: bool = True,
    jobs: int | None = 2,
    timeout: float = 10.0,
    deadline: float = 60.0,
    token: str | None = None,
    name: str = "vx_reward",
) -> Any:
    """A ``verifiers`` group reward function grading each group with `verifier` (see the module docstring)."""
    sourced = SourcedReward(
        verifier, rewards=rewards, extract=extract, jobs=jobs, timeout=timeout, deadline=deadline, token=token
    )
    source = sourced.source

    def rows_of(prompts: Any, completions: Any, answers: Any, infos: Any) -> list[Row]:
        n = len(completions)
        prompts = list(prompts) if prompts is not None else [None] * n
        answers = list(answers) if answers is not None else [None] * n
        infos = list(infos) if infos is not None else [None] * n
        rows = []
        for i in range(n):
            info = infos[i] if i < len(infos) and isinstance(infos[i], Mapping) else {}
            text = _text(completions[i])
            try:
                tid = source.find(
                    task_id=answers[i]
                    if i < len(answers) and isinstance(answers[i], str) and answers[i]
                    else info.get("task_id"),
                    prompt=_prompt_text(prompts[i]) if i < len(prompts) else None,
                    where=f"rollout {i}",
                )
            except UnknownTask as exc:
                raise IntegrationError(str(exc)) from None
            rows.append(Row(tid, sourced.output(text)))
        return rows

    async def reward(
        prompts: list[Any], completions: list[Any], answers: list[Any], infos: list[Any] | None = None, **kwargs: Any
    ) -> list[float]:
        import anyio

        rows = rows_of(prompts, completions, answers, infos)
        verdicts = await anyio.to_thread.run_sync(lambda: source.grade(rows))
        return [source.reward(v) for v, _ in verdicts]

    reward.__name__ = name
    reward.__qualname__ = name
    reward.close = source.close  # type: ignore[attr-defined]
    return reward


__all__ = ["vx_group_reward"]
