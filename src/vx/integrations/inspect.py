"""An Inspect AI scorer that grades a sample's output with a `.vx` verifier (``vx-verifiers[inspect]``).

    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.solver import generate
    from vx.integrations.inspect import vx_scorer

    task = Task(dataset=[Sample(input=prompt, id="HumanEval/0", metadata={"task": "HumanEval/0"})],
                solver=generate(), scorer=vx_scorer("examples/humaneval/seed.vx"))
    eval(task, model="mockllm/model")

The score's value is ``CORRECT`` when the verifier passes the output and ``INCORRECT`` when it fails
it; a final ABSTAIN is ``abstain``, by default ``NOANSWER`` (``"N"``): Inspect's metrics count it as 0,
not as a pass -- an abstention is no evidence that the output is right, and a score that pays it
as CORRECT rewards outputs the verifier cannot check (set ``abstain=CORRECT`` for vx's own convention,
"no known drawback was found"); its ``answer`` is
the verdict, its ``explanation`` the failure capsule as text (the checks that failed with their
messages, then every node of the expression), and its ``metadata`` the capsule as data
(``Grade.as_dict()``: what ``vx explain --json`` prints). Grading runs in a worker thread (the
verifier's ops run in the sandbox), so the event loop keeps going.

The task an output answers is ``metadata["task"]`` (a task id of the verifier's family, or a task
record), else the sample's id. The output is the model's completion, or the first fenced code block in
it (``extract=True``, the default).

**Epochs graded together.** Inspect scores each epoch of a sample on its own, so peer ops (which
compare attempts at one task) abstain in the scorer. :func:`vx_epochs` (or ``Epochs(n,
vx_group_reducer(verifier))``) is Inspect's own epoch reduction done by vx: once every epoch of a
sample is scored, the reducer grades the epochs' outputs together with :meth:`vx.Verifier.grade_many`
-- peer ops vote -- and the sample's reduced score is the share of its epochs the verifier passes,
with every epoch's verdict and failed checks in its explanation and metadata::

    Task(dataset=..., solver=generate(), scorer=vx_scorer(v), epochs=vx_epochs(v, 5))

**Keeping the best epoch** (``keep="best"``): best of n. The reducer ranks the epochs' outputs
(:meth:`vx.Verifier.rank`: verdict, the verifier's evidence, support among the epochs, a digest
tie-break) and the sample's score is the value of the epoch it keeps -- what an agent loop that keeps
the best of n attempts would get -- with the kept epoch, its output and every epoch's rank and reason in
the metadata (``best_epoch``, ``best_output``, ``ranking``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

try:
    from inspect_ai import Epochs
    from inspect_ai.scorer import (
        CORRECT,
        INCORRECT,
        NOANSWER,
        PARTIAL,
        Score,
        Target,
        accuracy,
        score_reducer,
        scorer,
        stderr,
    )
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - the extra brings it
    from vx.errors import MissingDependency

    raise MissingDependency(
        "vx.integrations.inspect needs Inspect AI: pip install 'vx-verifiers[inspect]' (or pip install inspect-ai)"
    ) from exc

from vx.dsl.verdict import Verdict
from vx.integrations.common import (
    IntegrationError,
    OptionError,
    as_verifier,
    capsule_text,
    check_choice,
    check_jobs,
    check_timeout,
    graded_output,
    kept_output,
    resolve_task,
    sample_task,
)
from vx.verifier import Verifier

#: where vx_scorer keeps what it graded in the score's metadata, for vx_group_reducer to grade again
GRADED_KEY = "vx_graded"
_VALUE = {CORRECT: 1.0, INCORRECT: 0.0, NOANSWER: 0.0}


def _value(verdict: str, abstain: str) -> str:
    return {"pass": CORRECT, "fail": INCORRECT}.get(verdict, abstain)


@scorer(metrics=[accuracy(), stderr()])
def vx_scorer(
    verifier: Verifier | str | Path,
    *,
    task_key: str = "task",
    extract: bool = True,
    abstain: str = NOANSWER,
    timeout: float = 10.0,
    output: Callable[[TaskState], Any] | None = None,
) -> Any:
    """Score each sample by grading its output with `verifier` (a :class:`~vx.Verifier` or a .vx
    path). `task_key`: the metadata key naming the sample's task; `abstain`: the value of a final
    ABSTAIN (NOANSWER: counted 0 by Inspect's metrics); `output(state)`: what to grade, instead of the
    completion. The score's metadata also keeps the task and the output graded (``vx_graded``), so
    that :func:`vx_group_reducer` can grade a sample's epochs together."""
    abstain = check_choice(abstain, "abstain", (CORRECT, INCORRECT, PARTIAL, NOANSWER), numbers=True)
    timeout = check_timeout(timeout)
    v = as_verifier(verifier)

    async def score(state: TaskState, target: Target) -> Score:
        import anyio

        task_ref = sample_task(state.metadata, task_key, state.sample_id)
        task = resolve_task(v, task_ref, where=f"sample {state.sample_id!r}")
        graded = output(state) if output is not None else graded_output(state.output.completion, extract)
        grade = await anyio.to_thread.run_sync(lambda: v.grade(task, graded, timeout=timeout))
        return Score(
            value=_value(grade.verdict.value, abstain),
            answer=grade.verdict.value,
            explanation=capsule_text(grade, expression=v.text),
            # what the group reducer grades again, bounded (kept_output): never the whole of a 50 MB completion
            metadata={**grade.as_dict(), GRADED_KEY: {"task": task_ref, "output": kept_output(graded)}},
        )

    return score


def vx_group_reducer(
    verifier: Verifier | str | Path,
    *,
    abstain: str = NOANSWER,
    jobs: int | None = 1,
    timeout: float = 10.0,
    keep: str = "all",
) -> Any:
    """An Inspect score reducer that grades a sample's epochs together (peer ops compare them).

    It takes the epochs' scores from :func:`vx_scorer` (their ``vx_graded`` metadata), grades their
    outputs as one group with `verifier` and returns one score: the share of epochs the verifier
    passes (an ABSTAIN is worth what `abstain` is: NOANSWER 0, CORRECT 1), ``answer`` the verdicts in
    epoch order ("pass,fail,..."), the explanation every epoch's failure capsule, and the metadata
    each epoch's grade (``epochs``) and whether a peer op gave an opinion (``peers_opined``).
    ``keep="best"``: the value of the epoch the verifier ranks first instead (best of n; the module
    docstring), with ``best_epoch`` (1-based), ``best_output`` and every epoch's ``ranking``."""
    if not isinstance(abstain, str) or abstain not in _VALUE:
        raise OptionError(f"abstain={abstain!r}: use CORRECT, INCORRECT or NOANSWER"[:300])
    jobs, timeout = check_jobs(jobs), check_timeout(timeout)
    keep = check_choice(keep, "keep", ("all", "best"))
    v = as_verifier(verifier)
    peer_ops = [n for n in v.ops if v.pool[n].is_peer]

    @score_reducer(name="vx_group")
    def vx_group() -> Any:
        def reduce(scores: list[Score]) -> Score:
            graded = [_graded(s, i) for i, s in enumerate(scores)]
            if not graded:
                raise IntegrationError("vx_group_reducer got no scores to reduce")
            tasks = {str(g["task"]) for g in graded}
            if len(tasks) > 1:
                raise IntegrationError(f"one sample's epochs name different tasks ({', '.join(sorted(tasks))[:200]})")
            task = resolve_task(v, graded[0]["task"], where="the epochs' task")
            outputs = [g["output"] for g in graded]
            ranked = sorted(v.rank(task, outputs, jobs=jobs, timeout=timeout), key=lambda r: r.index)
            grades = [r.grade for r in ranked]
            verdicts = [g.verdict.value for g in grades]
            values = [_VALUE[_value(x, abstain)] for x in verdicts]
            opined = any(
                node.text in peer_ops and node.verdict is not Verdict.ABSTAIN
                for g in grades
                for node in _nodes(g.trace)
            )
            explanation = "\n\n".join(
                f"epoch {i + 1}:\n{capsule_text(g, expression=v.text)}" for i, g in enumerate(grades)
            )
            metadata: dict[str, Any] = {"epochs": [g.as_dict() for g in grades], "peers_opined": opined}
            metadata["ranking"] = [r.placement.as_dict() for r in ranked]
            if keep == "best":
                best = next(r for r in ranked if r.rank == 1)
                metadata.update({"best_epoch": best.index + 1, "best_output": kept_output(best.output)})
                return Score(
                    value=values[best.index],
                    answer=verdicts[best.index],
                    explanation=f"kept epoch {best.index + 1} of {len(grades)}: {best.reason}\n\n{explanation}",
                    metadata=metadata,
                )
            return Score(
                value=sum(values) / len(values),
                answer=",".join(verdicts),
                explanation=explanation,
                metadata=metadata,
            )

        return reduce

    return vx_group()


def _graded(score: Any, index: int) -> Mapping[str, Any]:
    """What vx_scorer graded for one epoch (its score's ``vx_graded`` metadata), checked: an IntegrationError
    saying which epoch and what is wrong when it is not there or not what vx_scorer writes."""
    metadata = getattr(score, "metadata", None)
    graded = metadata.get(GRADED_KEY) if isinstance(metadata, Mapping) else None
    if graded is None:
        raise IntegrationError(
            f"epoch {index + 1}: the score has no {GRADED_KEY!r} in its metadata; vx_group_reducer reduces the "
            "scores of vx_scorer (their metadata keeps what was graded): use it with scorer=vx_scorer(...)"
        )
    if not isinstance(graded, Mapping) or "task" not in graded or "output" not in graded:
        raise IntegrationError(
            f"epoch {index + 1}: the score's {GRADED_KEY!r} metadata is {type(graded).__name__} "
            f"{str(graded)[:80]!r}, not what vx_scorer writes ({{'task': ..., 'output': ...}})"
        )
    if not isinstance(graded["task"], (str, Mapping)):
        raise IntegrationError(
            f"epoch {index + 1}: the graded task is {type(graded['task']).__name__}, not a task id or a task record"
        )
    return graded


def _nodes(node: Any) -> list[Any]:
    out = [node]
    for child in node.children:
        out += _nodes(child)
    return out


def vx_epochs(verifier: Verifier | str | Path, epochs: int, **options: Any) -> Any:
    """``Epochs(epochs, vx_group_reducer(verifier, **options))``: run each sample `epochs` times and
    grade the epochs together."""
    return Epochs(epochs, vx_group_reducer(verifier, **options))


__all__ = ["GRADED_KEY", "vx_epochs", "vx_group_reducer", "vx_scorer"]
