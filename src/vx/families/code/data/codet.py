"""CodeT's multi-sample files (microsoft/CodeT, data/generated_data/): many completions per task.

``*_code_solution.jsonl``: one line per task, ``{"prompt", "samples": [completion, ...]}``, matched to
its task by the exact prompt. A program is ``prompt + completion`` cut at the earliest of CodeT's
stop sequences (``STOP_TOKENS``, as ``PostProcessor.solution_extract`` cuts it).

``*_test_case.jsonl``: the same layout for model-written test cases; the prompt is the code prompt
followed by ``"    pass\\n\\n# check the correctness of <entry point>\\nassert "``. Test cases are
extracted as CodeT's ``test_case_extract`` does (split on ``assert ``, keep the parts naming the
entry point, cut at the stop sequences, keep those that compile), at most ``TESTS_PER_SAMPLE`` per
sample (CodeT's ``--test_case_limit``).
"""

from __future__ import annotations

import ast
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard

import attrs

from vx.errors import DataError
from vx.inputs import parse_json_lines, read_input_text, read_json_lines
from vx.text import file_lines

STOP_TOKENS = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
TESTS_PER_SAMPLE = 5


def truncate(completion: str) -> str:
    """`completion` cut at the earliest CodeT stop sequence."""
    for token in STOP_TOKENS:
        if token in completion:
            completion = completion.split(token)[0]
    return completion


def _valid_assert(text: str) -> bool:
    if not text.strip() or "assert" not in text:
        return False
    body = text.replace("\n", "\n    ")
    try:
        compile(f"try:\n    {body}\nexcept:\n    pass\n", "<test>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def extract_tests(completion: str, entry_point: str) -> list[str]:
    """CodeT's test-case extraction from one model completion."""
    parts = [
        f"assert {p}".strip() for p in f"assert {completion}".split("assert ") if entry_point.strip() in p and p.strip()
    ]
    return [t for t in (truncate(p).strip() for p in parts) if _valid_assert(t)]


@attrs.frozen
class MultiSample:
    task_id: str
    programs: tuple[str, ...]
    line: int


def is_codet_file(path: str | os.PathLike[str]) -> bool:
    """Whether a JSONL file has CodeT's layout (``prompt`` + ``samples`` list on its first line)."""
    text = read_input_text(path, "samples file", error=DataError)
    first = next((line for line in file_lines(text) if line.strip()), "")
    rows = list(parse_json_lines(first, path, objects=True, skip=lambda n, why: None))  # no JSON object: not CodeT's
    return bool(rows) and isinstance(rows[0].value.get("samples"), list) and "prompt" in rows[0].value


def _rows(path: Path):
    for n, row, _ in read_json_lines(path, "CodeT file", error=DataError):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("prompt"), str)
            or not isinstance(row.get("samples"), list)
            or not all(isinstance(s, str) for s in row["samples"])
        ):
            raise DataError(f"{path}:{n}: a CodeT line needs a string 'prompt' and a 'samples' list of strings")
        yield n, row


def read_solutions(path: str | os.PathLike[str], prompts: Mapping[str, str]) -> list[MultiSample]:
    """`prompts` maps each task's exact CodeT prompt to its task id."""
    path = Path(path)
    out = []
    unmatched = []
    for n, row in _rows(path):
        tid = prompts.get(row["prompt"])
        if tid is None:
            unmatched.append(n)
            continue
        out.append(MultiSample(tid, tuple(row["prompt"] + truncate(s) for s in row["samples"]), n))
    if unmatched:
        raise DataError(
            f"{path}: line(s) {', '.join(map(str, unmatched[:5]))} match no task prompt exactly "
            "(CodeT lines are matched to tasks by their prompt; is this the HumanEval file?)"
        )
    return out


def read_tests(
    path: str | os.PathLike[str], prompts: Mapping[str, str], entry_points: Mapping[str, str]
) -> dict[str, list[list[str]]]:
    """Model-written test cases per task id (one list per sample, at most TESTS_PER_SAMPLE each)."""
    path = Path(path)
    by_test_prompt = {
        p + f"    pass\n\n# check the correctness of {entry_points[t]}\nassert ": t for p, t in prompts.items()
    }
    out: dict[str, list[list[str]]] = {}
    for n, row in _rows(path):
        tid = by_test_prompt.get(row["prompt"]) or prompts.get(row["prompt"])
        if tid is None:
            raise DataError(
                f"{path}:{n}: the prompt matches no task (expected the code prompt followed by "
                "'    pass ... # check the correctness of <entry point>\\nassert ')"
            )
        out[tid] = [extract_tests(s, entry_points[tid])[:TESTS_PER_SAMPLE] for s in row["samples"]]
    return out


def read_task_prompts(path: str | os.PathLike[str]) -> tuple[dict[str, str], dict[str, str]]:
    """CodeT's task file (``HumanEval_for_code_generation.jsonl``): (prompt -> task id, task id -> entry point)."""
    path = Path(path)
    prompts: dict[str, str] = {}
    entries: dict[str, str] = {}
    if not path.is_file():
        raise DataError(
            f"{path}: CodeT task file not found (HumanEval_for_code_generation.jsonl maps CodeT "
            "prompts to task ids; pass it with --codet-tasks)"
        )
    for n, row, _ in read_json_lines(path, "CodeT task file", objects=True, error=DataError):
        if not all(isinstance(row.get(k), str) for k in ("task_id", "prompt", "entry_point")):
            raise DataError(f"{path}:{n}: a CodeT task line needs task_id, prompt and entry_point")
        prompts[row["prompt"]] = row["task_id"]
        entries[row["task_id"]] = row["entry_point"]
    return prompts, entries


def _plain(v: Any, depth: int = 0) -> bool:
    if depth > 20:
        return False
    if v is None or type(v) in (bool, int, str) or (type(v) is float and math.isfinite(v)):
        return True
    if type(v) in (list, tuple, set, frozenset):
        return all(_plain(x, depth + 1) for x in v)
    if type(v) is dict:
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    return False


def parse_test(text: str, entry_point: str) -> tuple[tuple[Any, ...], Any] | None:
    """``assert f(args) == expected`` (or ``assert f(args)`` / ``assert not f(args)``) with literal
    arguments and expected value -> (args, expected); anything else -> None."""
    try:
        module = ast.parse(text.strip().replace("\t", " "))
    except (SyntaxError, ValueError):
        return None
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assert):
        return None
    test = module.body[0].test

    def is_call(node: ast.AST) -> TypeGuard[ast.Call]:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point

    call: ast.Call | None = None
    expected: ast.expr | None = None
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
        left, right = test.left, test.comparators[0]
        if is_call(left):
            call, expected = left, right
        elif is_call(right):
            call, expected = right, left
    elif is_call(test):
        call, expected = test, ast.Constant(True)
    elif isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and is_call(test.operand):
        call, expected = test.operand, ast.Constant(False)
    if call is None or expected is None or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    try:
        args = tuple(ast.literal_eval(a) for a in call.args)
        value = ast.literal_eval(expected)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not _plain(args) or not _plain(value):
        return None
    return args, value


def model_test_records(
    tests: Sequence[Sequence[str]], entry_point: str, limit: int = 30
) -> tuple[list[dict[str, Any]], int]:
    """A task's ``model_tests`` field from its model-written test cases (one list per sample): the
    distinct literal ``f(args) == expected`` tests, most often written first, at most `limit`;
    and how many test cases were skipped (not that form)."""
    counts: Counter[str] = Counter()
    parsed: dict[str, tuple[tuple[Any, ...], Any]] = {}
    skipped = 0
    for cases in tests:
        for text in cases:
            p = parse_test(text, entry_point)
            if p is None:
                skipped += 1
                continue
            key = repr(p)
            counts[key] += 1
            parsed[key] = p
    out = []
    for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]:
        args, expected = parsed[key]
        call = f"{entry_point}({', '.join(repr(a) for a in args)})"
        out.append({"call": call, "args_src": repr(args), "expected_src": repr(expected), "count": n})
    return out, skipped
