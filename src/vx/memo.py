"""Results remembered per object identity, for per-process work on objects that are not hashable.

Decoded observations, inferred domains and probes are shared objects made once per task and process,
but they hold lists and dicts, so they cannot key a dict by value; keying by ``id()`` alone would be
wrong once an object is freed and its id reused. :class:`IdentityMemo` keys by the ids and holds the
objects themselves, so an id cannot be reused while its entry lives, and checks identity on every hit.
It is cleared whole when full (the work it saves is per task: a cleared memo only costs recomputing).
:func:`forget_all` clears every memo of the process: a long-running grader calls it now and then, since
the objects its memos hold (one request's decoded observations) are never asked for again.
"""

from __future__ import annotations

import weakref
from typing import Any

#: What :meth:`IdentityMemo.get` returns for objects it holds nothing for.
MISSING: Any = object()


class IdentityMemo:
    """A memo keyed by the identity of one or more objects, holding at most `size` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: dict[tuple[int, ...], tuple[tuple[Any, ...], Any]] = {}
        _ALL.add(self)

    def get(self, *objects: Any) -> Any:
        """The value remembered for exactly these objects, or :data:`MISSING`."""
        hit = self._entries.get(tuple(map(id, objects)))
        if hit is None or any(a is not b for a, b in zip(hit[0], objects)):
            return MISSING
        return hit[1]

    def put(self, value: Any, *objects: Any) -> Any:
        """Remember `value` for these objects (holding them); returns `value`."""
        if len(self._entries) >= self.size:
            self._entries.clear()
        self._entries[tuple(map(id, objects))] = (objects, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_ALL: weakref.WeakSet[IdentityMemo] = weakref.WeakSet()


def forget_all() -> int:
    """Clear every identity memo of this process (a later lookup recomputes); the entries dropped."""
    dropped = 0
    for memo in list(_ALL):
        dropped += len(memo)
        memo.clear()
    return dropped


__all__ = ["MISSING", "IdentityMemo", "forget_all"]
