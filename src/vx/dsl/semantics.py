"""The meaning of a vx expression on one item: the executable specification (docs/design.md §2).

This interpreter is deliberately small and direct; it is the reference the fast vectorised
evaluator (`vx.dsl.compile`) is tested against, item by item. Use it to explain a verdict
or for a handful of items, not to score a dataset.

Every combinator first drops its abstaining children. If no child opines, the node
abstains. Otherwise:

    any       DRAWBACK if some opining child is a DRAWBACK
    all       DRAWBACK if every opining child is a DRAWBACK
    not       swaps DRAWBACK and CLEAN (ABSTAIN stays ABSTAIN)
    vote K    DRAWBACK if at least K opining children are DRAWBACKs
    wvote θ   DRAWBACK if the sum of the weights of the opining DRAWBACK children is >= θ
              (the sum of w_i * v_i over opining children, v_i in {0, 1}; exact arithmetic)

and CLEAN in every other case.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

from vx.dsl.ast import All, Node, Not, OpRef, Vote, WVote
from vx.dsl.ast import Any as AnyNode
from vx.dsl.verdict import Final, Verdict

if TYPE_CHECKING:  # numpy is imported where columns are computed: the item interpreter needs none of it
    import numpy as np

__all__ = ["evaluate_item", "final_verdict"]

_D, _C, _A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN


def evaluate_item(node: Node, verdicts: Mapping[str, Verdict | int]) -> Verdict:
    """The verdict of ``node`` on one item whose op verdicts are ``verdicts`` (name → verdict).

    Raises ``KeyError`` naming the op when an op used by ``node`` has no verdict.
    """
    if isinstance(node, OpRef):
        try:
            return Verdict(verdicts[node.name])
        except KeyError:
            raise KeyError(f"op {node.name!r} has no verdict for this item") from None
    if isinstance(node, Not):
        v = evaluate_item(node.child, verdicts)
        return v if v is _A else (_C if v is _D else _D)

    results = [evaluate_item(child, verdicts) for child in node.children]
    opining = [i for i, v in enumerate(results) if v is not _A]
    if not opining:
        return _A
    fired = [i for i in opining if results[i] is _D]

    if isinstance(node, AnyNode):
        drawback = len(fired) >= 1
    elif isinstance(node, All):
        drawback = len(fired) == len(opining)
    elif isinstance(node, Vote):
        drawback = len(fired) >= node.k
    elif isinstance(node, WVote):
        total = sum((node.weights[i] for i in fired), Fraction(0))
        drawback = total >= node.threshold
    else:  # pragma: no cover - the node classes are closed
        raise TypeError(f"not a vx node: {node!r}")
    return _D if drawback else _C


def final_verdict(root: Verdict | int, expr: Verdict | int) -> Final:
    """A verifier's verdict on an item: the family root conjoined with the expression.

    Root DRAWBACK → FAIL; otherwise expression DRAWBACK → FAIL, CLEAN → PASS,
    ABSTAIN → ABSTAIN. (A root that is clean or abstains defers to the expression.)
    """
    if Verdict(root) is _D:
        return Final.FAIL
    e = Verdict(expr)
    if e is _D:
        return Final.FAIL
    if e is _C:
        return Final.PASS
    return Final.ABSTAIN


def final_codes(root: np.ndarray | None, expr: np.ndarray) -> np.ndarray:
    """:func:`final_verdict` for whole columns, as int8 codes (1 FAIL, 0 PASS, -1 ABSTAIN):
    ``root`` is the root op's verdict column (None: no root), ``expr`` the expression's.

    The one vectorised statement of the rule; every consumer (the verifier, the audit, the
    objective, the quality benchmark's baselines) calls it."""
    import numpy as np

    out = np.array(expr, dtype=np.int8, copy=True)
    if root is not None:
        out[np.asarray(root) == int(_D)] = int(_D)
    return out


_CODE_TO_FINAL = {1: Final.FAIL, 0: Final.PASS, -1: Final.ABSTAIN}


def to_finals(codes: np.ndarray) -> list[Final]:
    """int8 final codes → :class:`Final` values."""
    return [_CODE_TO_FINAL[int(c)] for c in codes]
