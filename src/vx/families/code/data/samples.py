"""Model-output sample files (``samples/mbpp/<model>.jsonl``) and what is odd about each solution.

A sample line has ``task_id`` (``MBPP/11``), ``prompt``, ``entry_point``, ``given_tests`` (the
visible asserts), ``canonical_solution`` (MBPP's, not MBPP+'s), ``solution`` (the model output)
and ``is_solved`` (against the original MBPP tests, as a string or a bool).

Solutions are graded as given. :func:`solution_flags` records what would make a grade look
surprising, so builders can count it: the text does not parse (often a bare function body meant
to follow the prompt), it does not define the entry point, or it uses a standard module
(``math``, ``re``, ``heapq`` ...) that it never imports (the generating harness prepended it).
"""

from __future__ import annotations

import ast
import builtins
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from vx.families.code.data.tasks import DataError
from vx.inputs import read_json_lines


@attrs.frozen
class Sample:
    task_id: str  # as in the file, e.g. "MBPP/11"
    model: str
    prompt: str
    entry_point: str
    given_tests: tuple[str, ...]
    solution: str
    is_solved: bool | None
    line: int
    #: the output continues the prompt (evalplus's ``completion`` field) rather than being a program
    completion: bool = False

    @property
    def plus_id(self) -> str:
        """The MBPP+ id of the task: ``MBPP/11`` -> ``Mbpp/11``; an id without "/" (``53``, ``add``) is
        itself (no dataset's id: the sample is counted as naming an unknown task, never an error)."""
        _, slash, number = self.task_id.partition("/")
        return f"Mbpp/{number}" if slash else self.task_id


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def read_samples(path: str | os.PathLike[str]) -> list[Sample]:
    """Read a samples JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: samples file not found (pass a local JSONL file with --samples)")
    model = path.name.removesuffix(".jsonl")
    samples: list[Sample] = []
    for n, row, _ in read_json_lines(path, "samples file", error=DataError):
        if not isinstance(row, dict):
            raise DataError(f"{path}:{n}: a sample line is a JSON object, not {type(row).__name__}")
        field = "solution" if "solution" in row or "completion" not in row else "completion"
        missing = [k for k in ("task_id", field) if k not in row]
        if missing:
            raise DataError(
                f"{path}:{n}: missing field(s) {', '.join(missing)}; a sample needs "
                "task_id and solution (or completion), and may have prompt, entry_point, given_tests"
            )
        if not isinstance(row[field], str):
            raise DataError(f"{path}:{n}: {field} must be a string")
        given = row.get("given_tests") or []
        if isinstance(given, str):
            given = [given]
        samples.append(
            Sample(
                task_id=str(row["task_id"]),
                model=model,
                prompt=row.get("prompt", ""),
                entry_point=row.get("entry_point", ""),
                given_tests=tuple(given),
                solution=row[field],
                is_solved=_as_bool(row.get("is_solved")),
                line=n,
                completion=field == "completion",
            )
        )
    return samples


def solution_flags(solution: str, entry_point: str, aliases: tuple[str, ...] = ()) -> list[str]:
    """What is unusual about a solution text: ``does_not_parse``, ``no_entry_point`` (neither the
    entry point nor an alias is defined at top level), ``unimported_modules:<names>``. Empty for an
    ordinary self-contained solution."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return ["does_not_parse"]
    flags: list[str] = []
    names = {entry_point, *aliases}
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    if not names & defined:
        flags.append("no_entry_point")
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    modules = sorted(name for name in used - bound if name in sys.stdlib_module_names and not hasattr(builtins, name))
    if modules:
        flags.append("unimported_modules:" + ",".join(modules))
    return flags
