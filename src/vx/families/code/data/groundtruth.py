"""Ground truth for code items: hidden tests run in the sandbox, compared in the parent.

Two steps, as in evalplus:

1. **Expected outputs** -- the task's canonical solution runs in the sandbox on the hidden inputs
   (base, then plus); its outputs and per-input times are cached on disk, in one JSON file per
   dataset version (``<cache_dir>/<version>.json``), so they are computed once.
2. **Grading** -- a candidate runs in one fresh sandboxed process on the same inputs (base, then
   plus); the parent compares each output as it arrives and ends the process at the first wrong
   one. Each output comes back as plain data,
   and the parent compares it with the expected output it kept to itself
   (:mod:`vx.families.code.compare`: evalplus's semantics). The child never sees an expected value.

Time limits follow evalplus: each input may take ``max(1 s, 4 x the reference's time)``; the
whole run may take the sum of those (at most 60 s per input set, as evalplus) plus start-up slack.
The item passes when every base and every plus input matches. Otherwise the record names the
first failing input, its phase and the reason (exception, timeout, wrong value, load error).
"""

from __future__ import annotations

import ast
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

from vx.errors import VxError
from vx.families.code.compare import MBPP_OUTPUT_NOT_NONE_TASKS, Comparator
from vx.families.code.data.tasks import Task

PHASES = ("base", "plus")
MIN_TIME_LIMIT = 1.0  # evalplus DEFAULT_MIN_TIME_LIMIT
TIME_LIMIT_FACTOR = 4.0  # evalplus DEFAULT_GT_TIME_LIMIT_FACTOR
MAX_PHASE_SECONDS = 60.0  # evalplus EVALPLUS_TIMEOUT_PER_TASK
MEMORY_MB = 4096  # evalplus EVALPLUS_MAX_MEMORY_BYTES (4 GiB address space)
STARTUP_SLACK = 5.0  # process start-up and harness load, on top of the call limits
#: Stages whose calls a Grader keeps prepared (its candidates come grouped by task; a few threads at once).
PLANS_KEPT = 16
REFERENCE_CALL_TIMEOUT = 20.0
PLUS_HEAD = 3  # plus inputs run in the first process, with the base inputs
PLUS_MIDDLE = 10  # plus inputs run in the second process; the rest run in a third


class GroundTruthError(VxError, RuntimeError):
    """The ground truth cannot be computed (sandbox unavailable, unusable reference...)."""


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "vx" / "code-expected"


# --------------------------------------------------------------------------- records


@attrs.frozen
class Expected:
    """A task's expected outputs per phase (Python values) and the reference's time per input."""

    values: dict[str, list[Any]]
    times: dict[str, list[float]]


@attrs.frozen
class PhaseResult:
    """One phase (base or plus) of one candidate: per-input agreement and the first failure."""

    phase: str
    outcomes: tuple[bool, ...]
    first_failure: dict[str, Any] | None = None


@attrs.frozen
class Truth:
    """Ground truth of one item: pass/fail over all phases, with the first failing input."""

    label: str
    phases: tuple[PhaseResult, ...]
    first_failure: dict[str, Any] | None = None
    layer: str = ""
    #: Phases with inputs that were not run because the label was already decided.
    skipped: tuple[str, ...] = ()

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "truth": "hidden-tests",
            "inputs": {p.phase: len(p.outcomes) for p in self.phases},
            "passed_inputs": {p.phase: sum(p.outcomes) for p in self.phases},
        }
        if self.skipped:
            out["not_run"] = list(self.skipped)
        if self.first_failure is not None:
            out["first_failure"] = self.first_failure
        return out


# --------------------------------------------------------------------------- value cache codec


def _encode(value: Any) -> Any:
    """Tagged JSON for a plain value, in the sandbox's own result encoding (vx.sandbox.serialize)."""
    from vx.sandbox.harness import encode_value

    return json.loads(encode_value(value))


def _decode(encoded: Any) -> Any:
    from vx.sandbox.serialize import decode_value

    return decode_value(encoded)


# --------------------------------------------------------------------------- the grader


def _entry_point_for(solution: str, task: Task) -> str:
    """The name to call: the task's entry point, or an accepted alias the solution defines instead."""
    if not task.aliases:
        return task.entry_point
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return task.entry_point
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if task.entry_point in defined:
        return task.entry_point
    return next((alias for alias in task.aliases if alias in defined), task.entry_point)


def _call_limits(times: Sequence[float]) -> list[float]:
    return [max(MIN_TIME_LIMIT, TIME_LIMIT_FACTOR * t) for t in times]


class Grader:
    """Computes expected outputs (cached) and grades candidates against them.

    ``tasks`` maps task ids to :class:`Task`; ``version`` names the dataset version (the cache
    key); ``workers`` is how many sandboxes run at once (threads; each run is its own process).
    """

    def __init__(
        self,
        tasks: Mapping[str, Task],
        *,
        version: str,
        cache_dir: str | os.PathLike[str] | None = None,
        workers: int | None = None,
        sandbox: Any = None,
    ) -> None:
        self.tasks = dict(tasks)
        self.version = version
        self.cache_path = Path(cache_dir or default_cache_dir()) / f"{version}.json"
        self.workers = workers or max(1, (os.cpu_count() or 2))
        self._sandbox = sandbox
        self._expected: dict[str, Expected] = {}
        self.reference_problems: dict[str, str] = {}
        self._lock = threading.Lock()
        self._prepare_lock = threading.RLock()
        self._grades: dict[tuple[str, str], Truth] = {}  # (task id, solution) -> truth, for this grader's life
        self._plans: dict[tuple[str, tuple[tuple[str, int, int], ...]], tuple[Any, list[Any], float]] = {}

    # -- sandbox ------------------------------------------------------------------------------
    @property
    def sandbox(self) -> Any:
        if self._sandbox is None:
            from vx.sandbox import Sandbox, SandboxConfig

            self._sandbox = Sandbox(SandboxConfig(memory_mb=MEMORY_MB))
        return self._sandbox

    @property
    def layer(self) -> str:
        return str(getattr(self.sandbox, "layer", ""))

    def _run(
        self, code: str, entry_point: str, task: Task, stage: Sequence[tuple[str, int, int]], stop: Any = None
    ) -> Any:
        """One sandboxed process running the inputs of the `stage`'s segments in order, with evalplus's limits.

        `stop(i, outcome)` is called in the parent as each result arrives; True ends the run there."""
        calls, budgets, total = self._plan(task, stage)
        return self.sandbox.run_calls(code, entry_point, calls, timeouts=budgets, total_timeout=total, stop=stop)

    def _plan(self, task: Task, stage: Sequence[tuple[str, int, int]]) -> tuple[Any, list[Any], float]:
        """The calls of a stage, checked and encoded once (``Sandbox.prepare_calls``), their budgets and the
        run's deadline: every candidate of the task is sent the same (the last :data:`PLANS_KEPT` are kept)."""
        from vx.sandbox import CallBudget

        key = (task.id, tuple(stage))
        plan = self._plans.get(key)
        if plan is None:
            expected = self.expected(task.id)
            segments = [
                (
                    (task.base_inputs if phase == "base" else task.plus_inputs)[lo:hi],
                    _call_limits(expected.times[phase][lo:hi]),
                )
                for phase, lo, hi in stage
            ]
            calls = self.sandbox.prepare_calls(
                [(list(args), {}) for inputs, _ in segments for args in inputs], args_after=False
            )
            budgets = [CallBudget(limit) for _, limits in segments for limit in limits]
            total = sum(min(MAX_PHASE_SECONDS, sum(limits)) + 1.0 for _, limits in segments) + STARTUP_SLACK
            plan = (calls, budgets, total)
            with self._lock:
                while len(self._plans) >= PLANS_KEPT:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
        return plan

    # -- expected outputs -----------------------------------------------------------------------
    def _load_cache(self) -> dict[str, Any]:
        if not self.cache_path.is_file():
            return {}
        try:
            data = json.loads(self.cache_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}  # a damaged cache is recomputed
        return data.get("tasks", {}) if data.get("version") == self.version else {}

    def _save_cache(self, entries: Mapping[str, Any]) -> None:
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps({"version": self.version, "tasks": entries}), encoding="utf-8")
        os.replace(tmp, self.cache_path)

    def _compute_expected(self, task: Task) -> tuple[dict[str, Any] | None, str | None]:
        """Run the reference on every hidden input; (cache entry, None) or (None, problem)."""
        inputs = {"base": list(task.base_inputs), "plus": list(task.plus_inputs)}
        all_inputs = inputs["base"] + inputs["plus"]
        if not all_inputs:
            return None, "no hidden inputs"
        report = self.sandbox.run_calls(
            task.reference,
            _entry_point_for(task.reference, task),
            [(list(a), {}) for a in all_inputs],
            timeouts=[REFERENCE_CALL_TIMEOUT] * len(all_inputs),
            total_timeout=min(600.0, REFERENCE_CALL_TIMEOUT * len(all_inputs)) + STARTUP_SLACK,
            args_after=False,
        )
        if report.status != "ok":
            return (
                None,
                f"reference does not load in the sandbox: {report.status}: {report.load_error or report.detail}",
            )
        not_none = _not_none_task(task)
        values: list[Any] = []
        times: list[float] = []
        for i, call in enumerate(report.calls):
            if not_none and call.status in ("ok", "unserializable"):
                values.append(call.status == "unserializable" or call.value is not None)
            elif call.status == "ok":
                values.append(call.value)
            else:
                return None, (
                    f"reference fails on hidden input {i}: {call.status} "
                    f"{call.exc_type or ''} {call.exc_message or ''}".strip()
                )
            times.append(float(call.duration or 0.0))
        n_base = len(inputs["base"])
        entry = {
            "base": [_encode(v) for v in values[:n_base]],
            "plus": [_encode(v) for v in values[n_base:]],
            "base_time": times[:n_base],
            "plus_time": times[n_base:],
        }
        return entry, None

    def prepare(
        self, task_ids: Iterable[str] | None = None, progress: Callable[[int], None] | None = None
    ) -> dict[str, str]:
        """Make sure expected outputs exist for `task_ids` (default: all); returns the tasks whose
        reference could not be run, with the reason (those tasks cannot be graded)."""
        ids = list(task_ids) if task_ids is not None else list(self.tasks)
        with self._prepare_lock:
            cached = self._load_cache()
            todo = [tid for tid in ids if tid not in cached]
            if todo:
                with ThreadPoolExecutor(max_workers=self.workers) as pool:
                    results = pool.map(lambda t: self._compute_expected(self.tasks[t]), todo)
                    for tid, (entry, problem) in zip(todo, results):
                        if progress:
                            progress(1)
                        if entry is not None:
                            cached[tid] = entry
                            continue
                        problem = problem or "unknown problem"
                        self.reference_problems[tid] = problem
                        # An unusable reference is cached as its problem, so it is not rerun --
                        # unless it ran out of time or crashed, which a less busy machine may fix.
                        if "timeout" not in problem and "crashed" not in problem:
                            cached[tid] = {"problem": problem}
                self._save_cache(cached)
            for tid in ids:
                entry = cached.get(tid, {"problem": self.reference_problems.get(tid, "unknown problem")})
                if "problem" in entry:
                    self.reference_problems[tid] = entry["problem"]
                elif tid not in self._expected:
                    self._expected[tid] = Expected(
                        values={p: [_decode(v) for v in entry[p]] for p in PHASES},
                        times={p: [float(t) for t in entry[f"{p}_time"]] for p in PHASES},
                    )
                if progress and tid not in todo:
                    progress(1)
        return {tid: self.reference_problems[tid] for tid in ids if tid in self.reference_problems}

    def expected(self, task_id: str) -> Expected:
        if task_id not in self._expected:
            problems = self.prepare([task_id])
            if task_id in problems:
                raise GroundTruthError(f"{task_id}: {problems[task_id]}")
        return self._expected[task_id]

    # -- grading ---------------------------------------------------------------------------------
    def _check_segment(
        self,
        task: Task,
        report: Any,
        offset: int,
        phase: str,
        start: int,
        inputs: Sequence[Any],
        expected: Sequence[Any],
        comparator: Comparator,
    ) -> tuple[list[bool], dict[str, Any] | None]:
        """Compare the outputs of one segment of a run (calls `offset`...; inputs `start`... of `phase`)."""
        outcomes: list[bool] = []
        first: dict[str, Any] | None = None
        for i, args in enumerate(inputs):
            k = offset + i
            call = report.calls[k] if k < len(report.calls) else None
            if call is not None and call.status == "not_run" and getattr(report, "stopped", False):
                break  # the run was ended in the parent after an earlier failure: not counted
            if call is None or call.status == "not_run":
                ok, reason = False, _run_reason(report)
            elif call.status == "ok" or (call.status == "unserializable" and _not_none_task(task)):
                value = call.value if call.status == "ok" else _Opaque(call.type_name)
                outcome = comparator.check(list(args), value, expected[i], out_type=call.type_name)
                ok, reason = outcome.ok, outcome.reason
            else:
                ok, reason = False, _call_reason(call)
            outcomes.append(ok)
            if not ok and first is None:
                first = {"phase": phase, "index": start + i, "input": _short(args), "reason": reason}
        return outcomes, first

    def _stages(self, task: Task) -> list[list[tuple[str, int, int]]]:
        """The order of a candidate's inputs as (phase, start, stop) segments, grouped in stages: the
        base inputs and the first ``PLUS_HEAD`` plus inputs (where most failing candidates fail), the
        next ``PLUS_MIDDLE`` plus inputs, then the rest. `grade` runs all stages in one process, ended
        by the parent at the first wrong result; the grouping also serves callers that want separate
        processes."""
        n_plus = len(task.plus_inputs)
        head = min(PLUS_HEAD, n_plus)
        middle = min(head + PLUS_MIDDLE, n_plus)
        stages = [
            [("base", 0, len(task.base_inputs)), ("plus", 0, head)],
            [("plus", head, middle)],
            [("plus", middle, n_plus)],
        ]
        stages = [[seg for seg in stage if seg[2] > seg[1]] for stage in stages]
        return [stage for stage in stages if stage]

    def _stop_at_first_failure(self, task: Task, segments: Sequence[tuple[Any, str, int, int]], expected: Expected):
        """A `stop` callback comparing each result in the parent as it arrives (own comparators, so
        the final comparison sees the same sequence of checks); True at the first wrong result."""
        flat = [
            (phase, args, expected.values[phase][lo + i])
            for inputs, phase, lo, hi in segments
            for i, args in enumerate(inputs)
        ]
        comparators: dict[str, Comparator] = {}

        def stop(i: int, call: Any) -> bool:
            phase, args, want = flat[i]
            if call.status == "ok" or (call.status == "unserializable" and _not_none_task(task)):
                value = call.value if call.status == "ok" else _Opaque(call.type_name)
                comparator = comparators.setdefault(phase, Comparator(task.dataset, task.oracle_name, task.atol))
                return not comparator.check(list(args), value, want, out_type=call.type_name).ok
            return True

        return stop

    def _grade_stages(
        self, task: Task, solution: str, stages: Sequence[Sequence[tuple[str, int, int]]], stop_at_failure: bool
    ) -> tuple[list[PhaseResult], tuple[str, ...], str]:
        expected = self.expected(task.id)
        entry_point = _entry_point_for(solution, task)
        outcomes: dict[str, list[bool]] = {}
        firsts: dict[str, dict[str, Any] | None] = {}
        comparators: dict[str, Comparator] = {}
        layer = ""
        for stage in stages:
            segments = [
                ((task.base_inputs if phase == "base" else task.plus_inputs)[lo:hi], phase, lo, hi)
                for phase, lo, hi in stage
            ]
            stop = self._stop_at_first_failure(task, segments, expected) if stop_at_failure else None
            report = self._run(solution, entry_point, task, stage, stop=stop)
            layer = getattr(report, "layer", layer)
            offset = 0
            failed = False
            for inputs, phase, lo, hi in segments:
                # One comparator per phase, across processes: evalplus's tolerance state is per phase.
                comparator = comparators.setdefault(phase, Comparator(task.dataset, task.oracle_name, task.atol))
                ok, first = self._check_segment(
                    task, report, offset, phase, lo, inputs, expected.values[phase][lo:hi], comparator
                )
                outcomes.setdefault(phase, []).extend(ok)
                if firsts.get(phase) is None:
                    firsts[phase] = first
                failed = failed or first is not None
                offset += len(inputs)
            if failed and stop_at_failure:
                break
        results = [PhaseResult(phase, tuple(outcomes[phase]), firsts.get(phase)) for phase in outcomes]
        counted = {phase: len(values) for phase, values in outcomes.items()}
        skipped = tuple(
            dict.fromkeys(phase for stage in stages for phase, lo, hi in stage if counted.get(phase, 0) < hi)
        )
        return results, skipped, layer

    def run_phase(self, task: Task, solution: str, phase: str) -> PhaseResult:
        """Run `solution` on every input of one phase, in one process (the teacher uses "base")."""
        n = len(task.base_inputs if phase == "base" else task.plus_inputs)
        results, _, _ = self._grade_stages(task, solution, [[(phase, 0, n)]], stop_at_failure=False)
        return results[0] if results else PhaseResult(phase, ())

    def grade(self, task: Task, solution: str) -> Truth:
        """Ground truth for one candidate, in one fresh sandboxed process over every hidden input (base,
        then plus, in :meth:`_stages` order). Each result is compared in the parent as it arrives, and
        the process is ended at the first wrong one -- evalplus's fast check, which otherwise would
        cost a run of every remaining input (1 s each when they all time out).

        A grader remembers its grades: grading the same text for the same task again returns the
        first result without running it (builds that reuse a grader stay cheap)."""
        memo = self._grades.get((task.id, solution))
        if memo is not None:
            return memo
        # one process for every input; the parent ends it at the first wrong result (evalplus's fast check)
        one_stage = [[seg for stage in self._stages(task) for seg in stage]]
        results, skipped, layer = self._grade_stages(task, solution, one_stage, stop_at_failure=True)
        first = next((r.first_failure for r in results if r.first_failure is not None), None)
        label = "pass" if first is None and results and all(all(r.outcomes) for r in results) else "fail"
        truth = Truth(label=label, phases=tuple(results), first_failure=first, layer=layer, skipped=skipped)
        with self._lock:
            self._grades[(task.id, solution)] = truth
        return truth

    def grade_many(
        self, jobs: Sequence[tuple[Task, str]], progress: Callable[[int], None] | None = None
    ) -> list[Truth]:
        """Grade many candidates, `workers` sandboxes at a time; results in input order."""

        def one(job: tuple[Task, str]) -> Truth:
            truth = self.grade(*job)
            if progress:
                with self._lock:
                    progress(1)
            return truth

        self.prepare(sorted({task.id for task, _ in jobs}))
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, jobs))


def _not_none_task(task: Task) -> bool:
    """MBPP+ tasks whose outputs evalplus only checks for being None or not."""
    return task.dataset == "mbpp+" and task.oracle_name in MBPP_OUTPUT_NOT_NONE_TASKS


class _Opaque:
    """A returned object that is not plain data (only its type name crossed the boundary)."""

    def __init__(self, type_name: str | None) -> None:
        self.type_name = type_name or "object"

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


def _run_reason(report: Any) -> str:
    if report.status in ("syntax_error", "load_error"):
        line = f" (line {report.load_error_line})" if report.load_error_line else ""
        return f"{report.status.replace('_', ' ')}{line}: {report.load_error}"
    if report.status == "no_entry_point":
        return f"no entry point: {report.load_error}"
    return f"run {report.status}: {report.detail or ''}".strip()


def _call_reason(call: Any) -> str:
    if call.status == "exception":
        return f"raised {call.exc_type}: {_short(call.exc_message or '')}"
    if call.status == "timeout":
        return f"timeout: {call.exc_message or ''}".strip()
    if call.status == "unserializable":
        return f"returned a {call.type_name}, which is not plain data"
    return f"{call.status}: {call.exc_message or ''}".strip()


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
