"""A peer op's vote: whether the answers of a task's other attempts agree clearly enough to judge by.

Every family's peer ops group the other attempts' answers (a query's result, a call's normal form, a replayed
state) and compare an attempt with the top group only when that group is a clear plurality: it has at least
``min_support`` voters and at least ``quorum`` of all who answered, and strictly more than the runner-up. A tie
or a thin top says nothing, and the op abstains.
"""

from __future__ import annotations

from collections import Counter
from typing import TypeVar

__all__ = ["clear_plurality"]

K = TypeVar("K")


def clear_plurality(groups: Counter[K], quorum: float, min_support: int) -> tuple[K, int, int] | None:
    """The top group's key, its support and how many answered, when it is a clear plurality; else None."""
    if not groups:
        return None
    (top, support), *rest = groups.most_common()
    runner = rest[0][1] if rest else 0
    answered = sum(groups.values())
    if support < min_support or support < quorum * answered or support <= runner:
        return None
    return top, support, answered
