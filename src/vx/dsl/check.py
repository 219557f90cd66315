"""Static checks of an expression: problems a person should fix or know about.

``check(node, known_ops)`` returns a list of `Problem`, each tied to a subtree by its path:

* ``unknown-op`` (error): an op that is not in ``known_ops``, with the nearest known names;
* ``duplicate-child`` (warning): the same subtree twice under one combinator — redundant in
  ``any``/``all``, counted twice in ``vote``/``wvote``;
* ``never-fires`` / ``never-clean`` (warning): a combinator subtree whose verdict, wherever it
  opines, is always CLEAN (it can never report a drawback) or always DRAWBACK (it only tells
  whether its ops have an opinion). This is decided exactly, by evaluating the subtree on
  every one of the 3^m verdict assignments of its m distinct ops (for m ≤ `MAX_EXACT_OPS`;
  larger subtrees are not judged). No expression is constant outright under abstain
  semantics — when all of its ops abstain it abstains — so this is the only constancy
  there is. ``(any x (not x))`` is DRAWBACK wherever ``x`` opines: a coverage test, not a
  defect detector, hence a warning.

A ``vote`` K outside 1..k cannot be built as a tree at all; the parser reports it as a
`VxSyntaxError` (``vx check`` shows parse errors with the problems).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Literal

import attrs
import numpy as np

from vx.dsl.ast import Node, OpRef, Path, Vote, WVote
from vx.dsl.compile import BatchEvaluator
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import unknown_op_hint
from vx.dsl.printer import to_text

__all__ = ["MAX_EXACT_OPS", "Problem", "check"]

#: Subtrees over at most this many distinct ops are tested for constancy (3^m assignments).
MAX_EXACT_OPS = 9


@attrs.frozen
class Problem:
    """One finding: ``severity`` error or warning, a stable ``code``, a sentence, the path of
    the subtree it is about, and what to do."""

    severity: Literal["error", "warning"]
    code: str
    message: str
    path: Path
    hint: str | None = None


def check(node: Node, known_ops: Iterable[str] | None = None) -> list[Problem]:
    """All problems of ``node``, in pre-order of the subtrees they concern (errors and
    warnings mixed). ``known_ops=None`` skips the unknown-op check."""
    known = frozenset(known_ops) if known_ops is not None else None
    problems: list[Problem] = []
    for path, sub in node.walk():
        if isinstance(sub, OpRef):
            if known is not None and sub.name not in known:
                problems.append(
                    Problem("error", "unknown-op", f"unknown op {sub.name!r}", path, unknown_op_hint(sub.name, known))
                )
            continue
        problems.extend(_duplicates(path, sub))
    problems.extend(_constant_subtrees(node))
    problems.sort(key=lambda p: p.path)
    return problems


def _short(node: Node) -> str:
    text = to_text(node, width=10**9)
    return text if len(text) <= 40 else text[:37] + "..."


def _duplicates(path: Path, node: Node) -> list[Problem]:
    found = []
    seen: set[Node] = set()
    for i, child in enumerate(node.children):
        if child in seen:
            if isinstance(node, (Vote, WVote)):
                message = f"{_short(child)} appears more than once in ({node.HEAD} …) and is counted each time"
                hint = "remove the repeat, or use wvote with a larger weight if double counting is intended"
            else:
                message = f"{_short(child)} appears more than once in ({node.HEAD} …); the repeat has no effect"
                hint = "remove the repeat"
            found.append(Problem("warning", "duplicate-child", message, (*path, i), hint))
        seen.add(child)
    return found


def _all_assignments(ops: tuple[str, ...]) -> VerdictMatrix:
    m = len(ops)
    rows = np.array(list(itertools.product((-1, 0, 1), repeat=m)), dtype=np.int8).reshape(-1, m)
    return VerdictMatrix.from_array(rows, op_names=ops)


def _constant_subtrees(node: Node) -> list[Problem]:
    evaluators: dict[tuple[str, ...], BatchEvaluator] = {}
    found: list[Problem] = []
    reported: list[Path] = []
    for path, sub in node.walk():
        if isinstance(sub, OpRef) or any(path[: len(r)] == r for r in reported):
            continue
        ops = sub.op_names()
        if len(ops) > MAX_EXACT_OPS:
            continue
        if ops not in evaluators:
            evaluators[ops] = BatchEvaluator(_all_assignments(ops))
        packed = evaluators[ops].evaluate(sub)
        if packed.n_fires() == 0:
            found.append(
                Problem(
                    "warning",
                    "never-fires",
                    f"{_short(sub)} can never be a drawback: wherever it opines it is clean",
                    path,
                    "it detects nothing; remove it or fix the combinator",
                )
            )
            reported.append(path)
        elif packed.n_fires() == packed.n_opines():
            found.append(
                Problem(
                    "warning",
                    "never-clean",
                    f"{_short(sub)} can never be clean: wherever it opines it is a drawback",
                    path,
                    "it only tells whether its ops have an opinion; check the combinator",
                )
            )
            reported.append(path)
    return found
