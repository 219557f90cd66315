"""A verl reward function that grades with a `.vx` verifier: in this process, or through `vx serve`.

    # my_reward.py, named by verl's custom_reward_function.path (custom_reward_function.name=compute_score)
    from vx.integrations.verl import VxComputeScore
    compute_score = VxComputeScore("examples/humaneval/seed.vx")    # or "http://127.0.0.1:8000"

verl calls a custom reward function in two forms, and :class:`VxComputeScore` answers both:

* its batch reward manager (``reward_model.reward_manager=batch``, ``verl/workers/reward_manager/batch.py``)
  calls ``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=)`` once for the batch
  and reads one score per completion: the completions of each task are graded **together** (peer ops
  compare a prompt's group), the tasks side by side;
* the naive and the remote managers call ``compute_score(data_source=, solution_str=, ground_truth=,
  extra_info=)`` once per completion: each is graded alone (peer ops abstain).

Each score is a dict -- ``{"score": reward, "vx_pass", "vx_fail", "vx_abstain"}``, the same numeric keys for
every completion (verl gathers each key into a list and logs it) -- the reward being ``rewards[verdict]``
(PASS 1.0, FAIL 0.0, ABSTAIN 0.0: verl's reward tensor holds numbers, so an abstention is paid as nothing).
The task is the ground truth when it is a task id of the family (put the id in ``reward_model.ground_truth``),
else ``"{data_source}/{extra_info['index']}"``, else the task whose prompt is ``extra_info["prompt"]``'s text
(:mod:`vx.reward.tasks`). With a URL the batch goes to that ``vx serve`` (POST /grade per task).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vx.integrations.common import IntegrationError, as_list
from vx.integrations.rewards import SourcedReward
from vx.reward.shapes import Row
from vx.reward.tasks import UnknownTask


class VxComputeScore(SourcedReward):
    """verl's ``compute_score``, both forms (see the module docstring)."""

    #: the name verl's loader looks the function up by, as an instance's ``__name__``
    __name__ = "compute_score"

    def __call__(self, **kwargs: Any) -> Any:
        if "solution_strs" in kwargs:
            n = len(as_list(kwargs["solution_strs"], "solution_strs"))
            cols = {
                k: as_list(kwargs.get(k) or [None] * n, k) for k in ("data_sources", "ground_truths", "extra_infos")
            }
            rows = [
                self._row(
                    i,
                    kwargs["solution_strs"][i],
                    cols["data_sources"][i],
                    cols["ground_truths"][i],
                    cols["extra_infos"][i],
                )
                for i in range(n)
            ]
            return [self._score(v) for v in self.source.grade(rows)]
        if "solution_str" in kwargs:
            row = self._row(
                0,
                kwargs["solution_str"],
                kwargs.get("data_source"),
                kwargs.get("ground_truth"),
                kwargs.get("extra_info"),
            )
            return self._score(self.source.grade([row])[0])
        raise IntegrationError("compute_score takes solution_str= (one completion) or solution_strs= (a batch)")

    def _row(self, i: int, solution: Any, source: Any, truth: Any, extra: Any) -> Row:
        if not isinstance(solution, str):
            raise IntegrationError(f"solution {i} is a string, not {type(solution).__name__}")
        extra = extra if isinstance(extra, Mapping) else {}
        prompt = extra.get("prompt")
        try:
            tid = self.source.find(
                task_id=truth,
                data_source=source,
                index=extra.get("index"),
                prompt=prompt if isinstance(prompt, str) else None,
                where=f"solution {i}",
            )
        except UnknownTask as exc:
            raise IntegrationError(str(exc)) from None
        return Row(tid, self.output(solution))

    def _score(self, verdict: tuple[str, str | None]) -> dict[str, float]:
        v = verdict[0]
        return {"score": self.source.reward(v), **{f"vx_{k}": float(v == k) for k in ("pass", "fail", "abstain")}}


__all__ = ["VxComputeScore"]
