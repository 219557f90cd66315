"""Cross-check vx's MBPP+ ground truth against evalplus's own evaluator on the same samples.

Needs evalplus itself (``pip install 'vx-verifiers[bench]'`` or ``pip install evalplus``): it is not
part of the ``[code]`` extra, which reads the release files directly.

:func:`evalplus_verdicts` runs evalplus 0.3.1's own pieces -- ``trusted_exec`` for the expected
outputs and ``check_correctness`` (its unsandboxed, multiprocessing checker) for each sample,
base and plus inputs, exactly as ``evalplus.evaluate`` does -- on the MBPP+ tasks present in a
samples file (evalplus's CLI refuses a file that lacks any MBPP+ task, and idles ~20 s at exit,
so its Python pieces are used instead). :func:`vx_verdicts` grades the same samples with
:class:`~vx.families.code.data.groundtruth.Grader` (sandboxed, comparison in the parent).
:func:`compare` pairs them and explains each disagreement.

Renamed functions (MBPP+ renamed a few entry points): evalplus is run twice for those tasks, on
the solution as given and with an alias line ``<mbpp+ name> = <sample's name>`` appended; vx
accepts the alias directly. The agreement figure uses the aliased evalplus run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from vx.errors import MissingDependency
from vx.families.code.data import tasks as task_data
from vx.families.code.data.groundtruth import Grader, Truth
from vx.families.code.data.samples import Sample, read_samples, solution_flags
from vx.families.code.data.tasks import Task


@attrs.define
class EvalplusRun:
    verdicts: dict[str, dict[str, Any]]  # sample key -> {"label", "base_status", "plus_status"}
    groundtruth_seconds: float
    check_seconds: float


def _key(sample: Sample) -> str:
    return f"{sample.plus_id}#{sample.model}"


def mbpp_samples(samples_path: str | os.PathLike[str], plus: dict[str, Task]) -> list[Sample]:
    return [s for s in read_samples(samples_path) if s.plus_id in plus]


def _alias_line(sample: Sample, plus_task: Task) -> str:
    if sample.entry_point and sample.entry_point != plus_task.entry_point:
        return f"\n\n{plus_task.entry_point} = {sample.entry_point}\n"
    return ""


def evalplus_verdicts(
    samples: Sequence[Sample],
    data_dir: str | os.PathLike[str] | None,
    *,
    alias: bool = True,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> EvalplusRun:
    """evalplus's verdict per sample: pass iff base_status == plus_status == "pass"."""
    require_evalplus()
    from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
    from evalplus.eval._special_oracle import MBPP_OUTPUT_NOT_NONE_TASKS
    from evalplus.evaluate import check_correctness
    from evalplus.gen.util import trusted_exec

    problems = evalplus_mbpp_plus(task_data.plus_file("mbpp+", data_dir))
    wanted = {s.plus_id for s in samples}
    problems = {tid: p for tid, p in problems.items() if tid in wanted}

    start = time.perf_counter()
    expected: dict[str, dict[str, Any]] = {}
    for tid, problem in problems.items():
        oracle: dict[str, Any] = {}
        not_none = problem["entry_point"] in MBPP_OUTPUT_NOT_NONE_TASKS
        for phase in ("base", "plus"):
            oracle[phase], oracle[f"{phase}_time"] = trusted_exec(
                problem["prompt"] + problem["canonical_solution"],
                problem[f"{phase}_input"],
                problem["entry_point"],
                record_time=True,
                output_not_none=not_none,
            )
        expected[tid] = oracle
    groundtruth_seconds = time.perf_counter() - start

    start = time.perf_counter()
    verdicts: dict[str, dict[str, Any]] = {}
    with ProcessPoolExecutor(max_workers=workers or max(1, (os.cpu_count() or 2) // 2)) as pool:
        futures = {}
        for i, sample in enumerate(samples):
            problem = problems[sample.plus_id]
            solution = sample.solution
            if alias:
                solution += _alias_line(sample, _task_view(problem))
            futures[_key(sample)] = pool.submit(
                check_correctness,
                "mbpp",
                i,
                problem,
                solution,
                expected[sample.plus_id],
                False,
                True,
                _key(sample),
                DEFAULT_MIN_TIME_LIMIT,
                DEFAULT_GT_TIME_LIMIT_FACTOR,
            )
        for key, future in futures.items():
            result = future.result()
            base, plus = result["base"][0], result["plus"][0]
            verdicts[key] = {
                "label": "pass" if base == plus == "pass" else "fail",
                "base_status": base,
                "plus_status": plus,
            }
            if progress:
                progress(1)
    return EvalplusRun(verdicts, groundtruth_seconds, time.perf_counter() - start)


def require_evalplus() -> None:
    """Raise MissingDependency (naming the extra) when evalplus is not installed."""
    try:
        import evalplus  # noqa: F401
    except ImportError as exc:
        raise MissingDependency(
            "the evalplus cross-check needs evalplus itself: pip install "
            "'vx-verifiers[bench]' (or pip install 'evalplus>=0.3.1')"
        ) from exc


def evalplus_mbpp_plus(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """MBPP+ as evalplus's own loader reads the release file at `path` (evalplus reads its override
    variable at import time, so the module attribute is pointed at the file for the call)."""
    require_evalplus()
    import evalplus.data.mbpp as module
    from evalplus.data import get_mbpp_plus

    previous = module.MBPP_OVERRIDE_PATH
    module.MBPP_OVERRIDE_PATH = str(path)
    try:
        return get_mbpp_plus()
    finally:
        module.MBPP_OVERRIDE_PATH = previous


def evalplus_humaneval_plus(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """HumanEval+ as evalplus's own loader reads the release file at `path`."""
    require_evalplus()
    import evalplus.data.humaneval as module
    from evalplus.data import get_human_eval_plus

    previous = module.HUMANEVAL_OVERRIDE_PATH
    module.HUMANEVAL_OVERRIDE_PATH = str(path)
    try:
        return get_human_eval_plus()
    finally:
        module.HUMANEVAL_OVERRIDE_PATH = previous


def _task_view(problem: dict[str, Any]) -> Task:
    return Task(id=problem["task_id"], dataset="mbpp+", prompt="", entry_point=problem["entry_point"], reference="")


def vx_tasks(samples: Sequence[Sample], plus: dict[str, Task]) -> dict[str, Task]:
    """MBPP+ tasks with the samples' function names accepted as aliases (as build_mbpp does)."""
    out: dict[str, Task] = {}
    for sample in samples:
        if sample.plus_id in out:
            continue
        task = plus[sample.plus_id]
        if sample.entry_point and sample.entry_point != task.entry_point:
            task = attrs.evolve(
                task,
                entry_point=sample.entry_point,
                aliases=(task.entry_point,),
                meta={"evalplus_entry_point": task.entry_point},
            )
        out[sample.plus_id] = task
    return out


def vx_verdicts(
    samples: Sequence[Sample], tasks: dict[str, Task], grader: Grader, progress: Callable[[int], None] | None = None
) -> tuple[dict[str, Truth], float, float]:
    """vx's ground truth per sample; returns (truths, seconds for references, seconds for grading)."""
    start = time.perf_counter()
    grader.prepare(sorted({s.plus_id for s in samples}))
    reference_seconds = time.perf_counter() - start
    start = time.perf_counter()
    truths = grader.grade_many([(tasks[s.plus_id], s.solution) for s in samples], progress=progress)
    return {_key(s): t for s, t in zip(samples, truths)}, reference_seconds, time.perf_counter() - start


@attrs.define
class Agreement:
    n: int
    agree: int
    disagreements: list[dict[str, Any]]
    renamed_without_alias: dict[str, Any]

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else 0.0


def explain(sample: Sample, truth: Truth, theirs: dict[str, Any]) -> str:
    """A best-effort explanation of why vx and evalplus disagree on one sample."""
    flags = solution_flags(sample.solution, sample.entry_point)
    reason = (truth.first_failure or {}).get("reason", "")
    if truth.label == "fail" and "timeout" in reason:
        return "vx: timeout under the sandbox's time limit; evalplus finished in time (machine load / timing)"
    if theirs["base_status"] == "timeout" or theirs["plus_status"] == "timeout":
        return "evalplus: timeout; vx finished within the same limits (timing)"
    if truth.label == "fail" and ("No module named" in reason or "ModuleNotFoundError" in reason):
        return (
            "vx: the sandboxed interpreter has only the standard library; the solution imports a "
            f"third-party module ({reason})"
        )
    if truth.label == "fail" and "not plain data" in reason:
        return f"vx: {reason} (evalplus compares the object itself, e.g. numpy values)"
    if any(f.startswith("unimported_modules") for f in flags):
        return f"solution uses modules it never imports ({flags})"
    return f"unexplained: vx {truth.label} ({reason or 'all inputs matched'}), evalplus {theirs}"


def compare(
    samples: Sequence[Sample],
    ours: dict[str, Truth],
    theirs: EvalplusRun,
    theirs_raw: EvalplusRun | None = None,
    tasks: dict[str, Task] | None = None,
) -> Agreement:
    disagreements = []
    agree = 0
    for sample in samples:
        key = _key(sample)
        truth, other = ours[key], theirs.verdicts[key]
        if truth.label == other["label"]:
            agree += 1
            continue
        disagreements.append(
            {
                "sample": key,
                "vx": truth.label,
                "evalplus": other["label"],
                "evalplus_status": [other["base_status"], other["plus_status"]],
                "vx_first_failure": truth.first_failure,
                "explanation": explain(sample, truth, other),
            }
        )
    renamed: dict[str, Any] = {}
    if theirs_raw is not None and tasks is not None:
        for sample in samples:
            key = _key(sample)
            if tasks[sample.plus_id].aliases:
                renamed[key] = {
                    "evalplus_as_given": theirs_raw.verdicts[key]["label"],
                    "evalplus_with_alias": theirs.verdicts[key]["label"],
                    "vx": ours[key].label,
                }
    return Agreement(n=len(samples), agree=agree, disagreements=disagreements, renamed_without_alias=renamed)


def run(
    samples_path: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """The full cross-check for one samples file: agreement, disagreements explained, timings."""
    plus = task_data.load_mbpp_plus(data_dir)
    samples = mbpp_samples(samples_path, plus)
    tasks = vx_tasks(samples, plus)
    grader = Grader(tasks, version=task_data.plus_version("mbpp+", data_dir), cache_dir=cache_dir, workers=workers)
    problems = grader.prepare(sorted(tasks))
    excluded = {tid: problems[tid] for tid in sorted(problems)}
    samples = [s for s in samples if s.plus_id not in problems]
    ours, ref_s, grade_s = vx_verdicts(samples, tasks, grader)
    theirs = evalplus_verdicts(samples, data_dir, alias=True, workers=workers)
    renamed_samples = [s for s in samples if tasks[s.plus_id].aliases]
    theirs_raw = evalplus_verdicts(renamed_samples, data_dir, alias=False, workers=workers) if renamed_samples else None
    agreement = compare(samples, ours, theirs, theirs_raw, tasks)
    return {
        "samples_file": os.fspath(samples_path),
        "samples": len(samples),
        "excluded_tasks": excluded,
        "agree": agreement.agree,
        "agreement": round(agreement.rate, 4),
        "disagreements": agreement.disagreements,
        "renamed_tasks": agreement.renamed_without_alias,
        "vx_pass": sum(t.label == "pass" for t in ours.values()),
        "evalplus_pass": sum(v["label"] == "pass" for v in theirs.verdicts.values()),
        "sandbox_layer": grader.layer,
        "seconds": {
            "vx_references": ref_s,
            "vx_grading": grade_s,
            "evalplus_groundtruth": theirs.groundtruth_seconds,
            "evalplus_checking": theirs.check_seconds,
        },
        "verdicts": {key: {"vx": ours[key].label, "evalplus": theirs.verdicts[key]["label"]} for key in ours},
    }


def main() -> None:  # pragma: no cover - exercised through the data test and by hand
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("samples", type=Path)
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    result = run(args.samples, args.data_dir, cache_dir=args.cache_dir, workers=args.workers)
    result.pop("verdicts")
    print(json.dumps(result, indent=2, default=str))


if __name__ == "__main__":  # pragma: no cover
    main()
