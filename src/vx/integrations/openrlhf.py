"""OpenRLHF's reward function as a Python file, grading with a `.vx` verifier (or through `vx serve`).

OpenRLHF takes its reward from ``--remote_rm_url``: the URL of a reward server (``vx serve``'s
``POST /openrlhf``, see :mod:`vx.serve`), or a ``.py`` file whose ``reward_func(queries, prompts, labels)``
it loads and calls (``SingleTurnAgentExecutor`` in ``openrlhf/utils/agent.py``; the trainer calls it with
one completion at a time, in a worker thread). For the file form::

    # vx_reward.py, given as --remote_rm_url vx_reward.py
    from vx.integrations.openrlhf import VxRewardFunc
    reward_func = VxRewardFunc("examples/humaneval/seed.vx")        # or "http://127.0.0.1:8000"

``queries`` are the prompts with their responses (decoded with the special tokens), ``prompts`` the prompts,
``labels`` the dataset's ``--label_key`` column: put the task id there (else the task is found by the
prompt's text). The answer is what OpenRLHF reads: ``{"rewards": [...], "scores": [...], "extra_logs":
{"vx_pass": [...], ...}}``, one number per query (an abstention is paid ``rewards["abstain"]``, 0.0). The
queries of one call that answer the same task are graded together.
"""

from __future__ import annotations

from typing import Any

from vx.integrations.common import IntegrationError
from vx.integrations.rewards import SourcedReward
from vx.reward.shapes import Row, strip_end_tokens
from vx.reward.tasks import UnknownTask


class VxRewardFunc(SourcedReward):
    """OpenRLHF's ``reward_func(queries, prompts, labels)`` (see the module docstring)."""

    def __call__(self, queries: Any, prompts: Any = None, labels: Any = None, **kwargs: Any) -> dict[str, Any]:
        queries = list(queries)
        prompts = list(prompts) if prompts is not None else [None] * len(queries)
        labels = list(labels) if labels is not None else [None] * len(queries)
        if not (len(queries) == len(prompts) == len(labels)):
            raise IntegrationError(f"{len(queries)} queries, {len(prompts)} prompts and {len(labels)} labels")
        rows = []
        for i, (query, prompt, label) in enumerate(zip(queries, prompts, labels)):
            response = str(query)
            if isinstance(prompt, str) and prompt and prompt in response:
                response = response[response.index(prompt) + len(prompt) :]
            response = strip_end_tokens(response)
            try:
                tid = self.source.find(task_id=label, prompt=prompt or str(query), where=f"query {i}")
            except UnknownTask as exc:
                raise IntegrationError(str(exc)) from None
            rows.append(Row(tid, self.output(response)))
        verdicts = self.source.grade(rows)
        values = [self.source.reward(v) for v, _ in verdicts]
        return {
            "rewards": values,
            "scores": values,
            "extra_logs": {f"vx_{k}": [float(v == k) for v, _ in verdicts] for k in ("pass", "fail", "abstain")},
        }


__all__ = ["VxRewardFunc"]
