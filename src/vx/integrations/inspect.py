"""An Inspect AI scorer that grades a sample's output with a `.vx` verifier (``vx-verifiers[inspect]``).

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate
    from vx.integrations.inspect import vx_scorer

    task = Task(dataset=[Sample(input=prompt, id="HumanEval/0", metadata={"task": "HumanEval/0"})],
                solver=generate(), scorer=vx_scorer("examples/humaneval/seed.vx"))
    eval(task, model="mockllm/model")

The score's value is ``CORRECT`` when the verifier passes the output and ``INCORRECT`` when it fails
it (a final ABSTAIN counts as ``abstain``: CORRECT by default, as everywhere in vx); its ``answer`` is
the verdict, its ``explanation`` the failure capsule as text (the checks that failed with their
messages, then every node of the expression), and its ``metadata`` the capsule as data
(``Grade.as_dict()``: what ``vx explain --json`` prints). Grading runs in a worker thread (the
verifier's ops run in the sandbox), so the event loop keeps going.

The task an output answers is ``metadata["task"]`` (a task id of the verifier's family, or a task
record), else the sample's id. The output is the model's completion, or the first fenced code block in
it (``extract=True``, the default).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

try:
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, PARTIAL, Score, Target, accuracy, scorer, stderr
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - the extra brings it
    from vx.errors import MissingDependency

    raise MissingDependency("vx.integrations.inspect needs Inspect AI: pip install 'vx-verifiers[inspect]' "
                            "(or pip install inspect-ai)") from exc

from vx.integrations.common import (as_verifier, capsule_text, check_choice, check_timeout, graded_output, resolve_task,
                                    sample_task)
from vx.verifier import Verifier


@scorer(metrics=[accuracy(), stderr()])
def vx_scorer(verifier: Verifier | str | Path, *, task_key: str = "task", extract: bool = True,
              abstain: str = CORRECT, timeout: float = 10.0,
              output: Callable[[TaskState], Any] | None = None) -> Any:
    """Score each sample by grading its output with `verifier` (a :class:`~vx.Verifier` or a .vx
    path). `task_key`: the metadata key naming the sample's task; `abstain`: the value of a final
    ABSTAIN; `output(state)`: what to grade, instead of the completion."""
    abstain = check_choice(abstain, "abstain", (CORRECT, INCORRECT, PARTIAL, NOANSWER), numbers=True)
    timeout = check_timeout(timeout)
    v = as_verifier(verifier)

    async def score(state: TaskState, target: Target) -> Score:
        import anyio

        task = resolve_task(v, sample_task(state.metadata, task_key, state.sample_id),
                            where=f"sample {state.sample_id!r}")
        graded = output(state) if output is not None else graded_output(state.output.completion, extract)
        grade = await anyio.to_thread.run_sync(lambda: v.grade(task, graded, timeout=timeout))
        value = {"pass": CORRECT, "fail": INCORRECT}.get(grade.verdict.value, abstain)
        return Score(value=value, answer=grade.verdict.value,
                     explanation=capsule_text(grade, expression=v.text), metadata=grade.as_dict())

    return score


__all__ = ["vx_scorer"]
