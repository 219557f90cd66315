"""Visible example calls: the input/output pairs a solver was shown, parsed with `ast`.

An example is one call of the task's function with literal arguments and a literal expected
value, e.g. ``remove_Occ("hello", "l") == "heo"``. Ops such as ``fails_visible_example`` and
``hardcodes_example`` read them; nothing here executes code.

Where examples come from, in order of preference:

* MBPP: the first ``assert`` of the task's visible tests (``given_tests`` / ``test_list``);
* HumanEval: doctest lines (``>>> f(x)`` followed by the expected value) in the prompt, else
  example lines in the docstring (``f(x) == y``, ``f(x) ➞ y``, ``f(x) => y``, ``f(x) returns y``
  ...), else the first ``assert candidate(...) == ...`` of the hidden ``check`` function.

Only literal arguments and literal expected values are kept (``ast.literal_eval``); everything
else is skipped and counted in :class:`ExtractionStats`, so a builder can report how many it lost.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any, TypeGuard

import attrs

SOURCES = ("assert", "doctest", "docstring", "test")


@attrs.frozen
class Example:
    """One visible example call.

    ``call`` is the call as source text (``f(1, (2, 3))``) and reproduces the exact argument types;
    ``args`` / ``expected`` are the same values made JSON-friendly (tuples and sets become lists);
    ``args_src`` / ``expected_src`` are exact Python literals for consumers that need types.
    """

    call: str
    function: str
    args: list[Any]
    expected: Any
    args_src: str
    expected_src: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "call": self.call,
            "function": self.function,
            "args": self.args,
            "expected": self.expected,
            "args_src": self.args_src,
            "expected_src": self.expected_src,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Example:
        return cls(**{f.name: data[f.name] for f in attrs.fields(cls)})

    def python_args(self) -> list[Any]:
        """The arguments with their exact Python types (tuples stay tuples)."""
        return list(ast.literal_eval(self.args_src))

    def python_expected(self) -> Any:
        return ast.literal_eval(self.expected_src)


@attrs.define
class ExtractionStats:
    """Counts of examples found and of candidates skipped, by reason."""

    found: Counter = attrs.field(factory=Counter)  # source -> count
    skipped: Counter = attrs.field(factory=Counter)  # reason -> count
    tasks_without_example: list[str] = attrs.field(factory=list)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "found": dict(self.found),
            "skipped": dict(self.skipped),
            "tasks_without_example": list(self.tasks_without_example),
        }


class NotLiteral(ValueError):
    """A value in an example is not a Python literal (a name, a call, an expression...)."""


def jsonable(value: Any) -> Any:
    """`value` with tuples/sets turned into lists (sets sorted when possible), for JSON files."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, complex):
        raise NotLiteral(f"complex value {value!r} has no JSON form")
    if isinstance(value, float) and not math.isfinite(value):
        raise NotLiteral(f"non-finite float {value!r} has no JSON form")
    if isinstance(value, bytes):
        raise NotLiteral(f"bytes value {value!r} has no JSON form")
    return value


def _literal(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise NotLiteral(ast.unparse(node)) from exc


def _example_from_call(
    call: ast.Call, expected: ast.expr | Any, source: str, rename: dict[str, str] | None = None
) -> Example:
    """Build an Example from a call node and an expected node (or an already-evaluated value)."""
    if not isinstance(call.func, ast.Name):
        raise NotLiteral(f"call target {ast.unparse(call.func)} is not a plain name")
    if call.keywords:
        raise NotLiteral("keyword arguments")
    if any(isinstance(a, ast.Starred) for a in call.args):
        raise NotLiteral("starred arguments")
    args = [_literal(a) for a in call.args]
    if isinstance(expected, ast.expr):
        expected_value = _literal(expected)
    else:
        expected_value = expected
    name = call.func.id
    if rename and name in rename:
        name = rename[name]
    args_src = repr(tuple(args))
    expected_src = repr(expected_value)
    # repr() of a literal is a literal except for non-finite floats etc.; check the round trip.
    try:
        if ast.literal_eval(args_src) != tuple(args) or not _same(ast.literal_eval(expected_src), expected_value):
            raise NotLiteral("value does not round-trip through repr")
    except (ValueError, SyntaxError) as exc:
        raise NotLiteral("value does not round-trip through repr") from exc
    call_src = f"{name}({', '.join(repr(a) for a in args)})"
    return Example(
        call=call_src,
        function=name,
        args=jsonable(args),
        expected=jsonable(expected_value),
        args_src=args_src,
        expected_src=expected_src,
        source=source,
    )


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _unwrap_assert(test: ast.expr, function: str | None) -> tuple[ast.Call, ast.expr | Any]:
    """Find (call, expected) in an assert's test expression, or raise NotLiteral."""

    def is_target(node: ast.expr) -> TypeGuard[ast.Call]:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and (function is None or node.func.id == function)
        )

    # f(x) == y   /   y == f(x)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Is)):
        left, right = test.left, test.comparators[0]
        if is_target(left):
            return left, right
        if is_target(right):
            return right, left
    # math.isclose(f(x), y, ...)  /  isclose(f(x), y)
    if isinstance(test, ast.Call) and len(test.args) == 2:
        fname = ast.unparse(test.func)
        if fname in ("math.isclose", "isclose") and is_target(test.args[0]):
            return test.args[0], test.args[1]
    # f(x)  -> True ; not f(x) -> False
    if is_target(test):
        return test, True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and is_target(test.operand):
        return test.operand, False
    raise NotLiteral(f"unsupported assert form: {ast.unparse(test)[:80]}")


def from_asserts(
    asserts: Iterable[str],
    function: str | None,
    stats: ExtractionStats,
    *,
    source: str = "assert",
    first_only: bool = True,
    rename: dict[str, str] | None = None,
) -> list[Example]:
    """Examples from ``assert`` statements given as source text (MBPP's visible tests)."""
    found: list[Example] = []
    for text in asserts:
        try:
            module = ast.parse(text.strip())
        except SyntaxError:
            stats.skip("assert does not parse")
            continue
        for stmt in module.body:
            if not isinstance(stmt, ast.Assert):
                continue
            try:
                call, expected = _unwrap_assert(stmt.test, function)
                found.append(_example_from_call(call, expected, source, rename))
            except NotLiteral as exc:
                stats.skip(_reason(exc))
                continue
            if first_only:
                stats.found[source] += 1
                return found
    stats.found[source] += len(found)
    return found


def _reason(exc: NotLiteral) -> str:
    text = str(exc)
    if text.startswith("unsupported assert form"):
        return "unsupported assert form"
    if "no JSON form" in text:
        return "value has no JSON form"
    if text in ("keyword arguments", "starred arguments") or "round-trip" in text:
        return text
    return "non-literal value"


_DOCTEST = re.compile(r"^\s*>>>\s?(?P<src>.*)$")
# A docstring example line: optional bullet/"for", the call, a separator, the value.
_SEPARATORS = ("==>", "=>", "➞", "->", "==", "=", "should return", "returns", "# =>", "#=>", "# ==>")


def _split_call(line: str, function: str) -> tuple[str, str] | None:
    """('f(...)', rest) when `line` contains a call of `function` with balanced parentheses."""
    match = re.search(rf"(?<![\w.]){re.escape(function)}\s*\(", line)
    if not match:
        return None
    depth = 0
    quote: str | None = None
    i = match.end() - 1
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return line[match.start() : i + 1], line[i + 1 :]
        i += 1
    return None


def _parse_call(text: str) -> ast.Call:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise NotLiteral("call does not parse") from exc
    if not isinstance(node, ast.Call):
        raise NotLiteral("not a call")
    return node


def _parse_value(text: str) -> Any:
    """Literal value at the start of `text`, tolerating trailing prose, comments and full stops."""
    text = text.strip()
    candidates = [text]
    if "#" in text:
        candidates.append(text.split("#", 1)[0])
    candidates.append(text.rstrip(". "))
    # "1 + 9 + 0 + 0 = 10": take what follows the last "=".
    if "=" in text:
        candidates.append(text.rsplit("=", 1)[1])
    # A value followed by prose: try successively shorter prefixes ending at a word boundary.
    words = text.split(" ")
    candidates.extend(" ".join(words[:k]) for k in range(len(words) - 1, 0, -1))
    for cand in candidates:
        cand = cand.strip().rstrip(".,;")
        if not cand:
            continue
        try:
            node = ast.parse(cand, mode="eval").body
            return _literal(node)
        except (SyntaxError, NotLiteral):
            continue
    raise NotLiteral(f"expected value is not a literal: {text[:60]}")


def from_doctest(prompt: str, function: str, stats: ExtractionStats) -> list[Example]:
    """``>>> f(args)`` lines followed by the expected value's line(s)."""
    lines = prompt.splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        m = _DOCTEST.match(lines[i])
        if not m:
            i += 1
            continue
        src = m.group("src")
        j = i + 1
        while j < len(lines) and lines[j].strip().startswith("..."):
            src += " " + lines[j].strip()[3:].strip()
            j += 1
        expected_lines: list[str] = []
        while (
            j < len(lines)
            and lines[j].strip()
            and not _DOCTEST.match(lines[j])
            and '"""' not in lines[j]
            and "'''" not in lines[j]
        ):
            expected_lines.append(lines[j].strip())
            j += 1
        i = j
        split = _split_call(src, function)
        if split is None or split[1].strip() not in ("", ")") and not split[1].strip().startswith("#"):
            # e.g. ">>> round(find_zero([1, 2]), 2)" -- the call is wrapped in another expression.
            stats.skip("doctest call wrapped in an expression")
            continue
        if not expected_lines:
            stats.skip("doctest without expected value")
            continue
        try:
            call = _parse_call(split[0])
            value = _parse_value(" ".join(expected_lines))
            found.append(_example_from_call(call, value, "doctest"))
        except NotLiteral as exc:
            stats.skip(_reason(exc))
    stats.found["doctest"] += len(found)
    return found


def from_docstring(prompt: str, function: str, stats: ExtractionStats) -> list[Example]:
    """Prose example lines: ``f(x) == y``, ``f(x) ➞ y``, ``f(x) => y``, ``f(x) returns y``..."""
    found: list[Example] = []
    for line in prompt.splitlines():
        if line.lstrip().startswith(("def ", ">>>")):
            continue
        split = _split_call(line, function)
        if split is None:
            continue
        call_src, rest = split
        rest = rest.strip()
        for sep in sorted(_SEPARATORS, key=len, reverse=True):
            if rest.startswith(sep):
                rest = rest[len(sep) :]
                break
        else:
            continue
        try:
            call = _parse_call(call_src)
            value = _parse_value(rest)
            found.append(_example_from_call(call, value, "docstring"))
        except NotLiteral as exc:
            stats.skip(_reason(exc))
    stats.found["docstring"] += len(found)
    return found


def from_check(test: str, function: str, stats: ExtractionStats) -> list[Example]:
    """The first ``assert candidate(...) == literal`` in a HumanEval ``check`` function."""
    try:
        module = ast.parse(test)
    except SyntaxError:
        stats.skip("test does not parse")
        return []
    for node in ast.walk(module):
        if isinstance(node, ast.Assert):
            try:
                call, expected = _unwrap_assert(node.test, "candidate")
                example = _example_from_call(call, expected, "test", rename={"candidate": function})
            except NotLiteral:
                continue
            stats.found["test"] += 1
            return [example]
    return []


def humaneval_examples(
    prompt: str, test: str, function: str, stats: ExtractionStats, task_id: str = ""
) -> list[Example]:
    """Visible examples of a HumanEval task (doctest, else docstring prose, else the check's first assert)."""
    for extract in (from_doctest, from_docstring):
        found = extract(prompt, function, stats)
        if found:
            return found
    found = from_check(test, function, stats)
    if not found:
        stats.tasks_without_example.append(task_id)
    return found


def mbpp_examples(
    given_tests: Iterable[str], function: str | None, stats: ExtractionStats, task_id: str = ""
) -> list[Example]:
    """The visible example of an MBPP task: the first assert of its visible tests that parses."""
    given_tests = list(given_tests)
    attempt = ExtractionStats()
    found = from_asserts(given_tests, function, attempt, first_only=True)
    if not found and function is not None:
        # The visible assert may call another name than the entry point (renamed tasks): keep it,
        # since that is the name the solver was shown.
        attempt = ExtractionStats()
        found = from_asserts(given_tests, None, attempt, first_only=True)
    stats.found.update(attempt.found)
    stats.skipped.update(attempt.skipped)
    if not found:
        stats.tasks_without_example.append(task_id)
    return found
