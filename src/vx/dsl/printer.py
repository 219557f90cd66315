"""Expression tree → canonical text.

Every tree has exactly one canonical text, and ``parse(to_text(e)) == e``:

* a node that fits in ``width`` columns (counting its indentation and the closing
  parentheses and ``@weight`` that follow it) is printed on one line, tokens separated by
  one space: ``(any crash (vote 2 a b c) (not slow))``;
* otherwise the head — ``(any``, ``(vote 2``, ``(wvote 1.5`` — goes on its own line and each
  child follows on its own line, indented two spaces deeper, the closing parenthesis
  attached to the last child::

      (any
        crash
        (vote 2 wrong_output raises timeout)
        (wvote 1.5 flaky@1 slow@0.5))

* numbers are exact: integers without a decimal point (``2``, ``-1``), other values as the
  shortest decimal that is exactly equal (``0.5``, ``-0.125``).

Comments are not part of the tree; `vx fmt` keeps a file's header comments separately.
"""

from __future__ import annotations

import functools
from fractions import Fraction

from vx.dsl.ast import All, Node, Not, OpRef, Vote, WVote, is_finite_decimal
from vx.dsl.ast import Any as AnyNode

__all__ = ["format_number", "to_text"]

_INDENT = 2


def format_number(value: Fraction | int) -> str:
    """The canonical text of a number: ``2``, ``-1``, ``0.5``, ``-0.125`` (exact)."""
    x = Fraction(value)
    if x.denominator == 1:
        return str(x.numerator)
    if not is_finite_decimal(x):
        raise ValueError(f"{x} has no finite decimal expansion")
    d, twos, fives = x.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    places = max(twos, fives)
    digits = str(abs(x.numerator) * 10**places // x.denominator).rjust(places + 1, "0")
    sign = "-" if x < 0 else ""
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def _head(node: Node) -> str:
    if isinstance(node, Vote):
        return f"(vote {node.k}"
    if isinstance(node, WVote):
        return f"(wvote {format_number(node.threshold)}"
    return f"({node.HEAD}"


def _suffixes(node: Node) -> list[str]:
    if isinstance(node, WVote):
        return ["@" + format_number(w) for w in node.weights]
    return [""] * len(node.children)


def _flat(node: Node) -> str:
    if isinstance(node, OpRef):
        return node.name
    parts = [_head(node)]
    for child, suffix in zip(node.children, _suffixes(node), strict=True):
        parts.append(_flat(child) + suffix)
    return " ".join(parts) + ")"


def _render(node: Node, indent: int, tail: str, width: int, out: list[str]) -> None:
    flat = _flat(node)
    if isinstance(node, OpRef) or indent + len(flat) + len(tail) <= width:
        out.append(" " * indent + flat + tail)
        return
    out.append(" " * indent + _head(node))
    children = node.children
    last = len(children) - 1
    for i, (child, suffix) in enumerate(zip(children, _suffixes(node), strict=True)):
        _render(child, indent + _INDENT, suffix + (")" + tail if i == last else ""), width, out)


def to_text(node: Node, width: int = 80) -> str:
    """The canonical text of ``node``, wrapped to ``width`` columns where possible (an op
    name longer than the width still stays whole). No trailing newline.

    Memoised: nodes are immutable and compared by structure, and evolution asks for the text of
    the same candidates many times (sorting and tie-breaking by canonical text)."""
    if not isinstance(node, (OpRef, AnyNode, All, Not, Vote, WVote)):
        raise TypeError(f"expected a vx Node, not {type(node).__name__}")
    return _canonical_text(node, width)


@functools.lru_cache(maxsize=1 << 16)
def _canonical_text(node: Node, width: int) -> str:
    out: list[str] = []
    _render(node, 0, "", width, out)
    return "\n".join(out)
