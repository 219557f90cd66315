"""Per-process memos, each bounded in entries *and* in bytes.

A grader that lives long (``vx serve``, a trainer's reward, an evolution run) remembers work per task
and per attempt; what it remembers must not grow with what it has seen, nor with how large one hostile
output can make a single entry. Every memo here therefore has two bounds -- a number of entries and an
estimated number of bytes -- and an entry larger than its memo's per-entry bound is not kept at all (the
value is returned and computed again when next asked: a memo only ever saves work).

* :class:`Memo` -- an LRU memo keyed by hashable values (a task's content, a candidate's source).
* :class:`IdentityMemo` -- results remembered per *identity* of objects that are not hashable (decoded
  observations, inferred domains, probes). Keying by ``id()`` alone would be wrong once an object is
  freed and its id reused, so the memo holds the objects themselves and checks identity on every hit;
  the bytes it counts are those of the distinct objects it holds plus its values. It is cleared whole
  when a bound is reached; :func:`forget_all` clears every one of the process (a long-running grader calls
  it now and then, since the objects its memos hold -- one request's decoded observations -- are never asked
  for again).
* :func:`size_of` -- an estimate of the memory a value holds (plain data, attrs records), which stops
  walking once it passes a limit, so estimating a huge value costs no more than the limit.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import attrs

#: What :meth:`IdentityMemo.get` and :meth:`Memo.get` return for what they hold nothing for.
MISSING: Any = object()

_CONTAINERS = (list, tuple, set, frozenset)
_getsizeof = sys.getsizeof


def size_of(value: Any, limit: int = 1 << 30) -> int:
    """An estimate of the bytes `value` holds: every object reached through lists, tuples, sets, dicts and
    the fields of attrs records counted once (``sys.getsizeof``), anything else by its own size. Once the
    count passes `limit` it stops and returns it (a figure above `limit`): the walk costs at most about
    `limit` / 28 objects."""
    total = 0
    seen: set[int] = set()
    stack = [value]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        total += _getsizeof(obj)
        if total > limit:
            return total
        t = type(obj)
        if t in _CONTAINERS:
            stack.extend(obj)
        elif t is dict:
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif attrs.has(t):
            stack.extend(getattr(obj, f.name, None) for f in attrs.fields(t))
    return total


class Memo:
    """An LRU memo of at most `entries` values and about `max_bytes` bytes (thread-safe).

    :meth:`put` takes the entry's size in bytes (the caller knows it best: a run's decoded results, a
    task's probes; :func:`size_of` when it does not); an entry over `entry_bytes` (default a quarter of
    `max_bytes`) is not kept. The least recently used entries go first."""

    def __init__(self, entries: int, max_bytes: int, entry_bytes: int | None = None) -> None:
        if entries < 1 or max_bytes < 1:
            raise ValueError("a memo holds at least one entry and one byte")
        self.entries, self.max_bytes = entries, max_bytes
        self.entry_bytes = max_bytes // 4 if entry_bytes is None else min(entry_bytes, max_bytes)
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        """The value kept for `key` (now the most recently used), or :data:`MISSING`."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return MISSING
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: Hashable, value: Any, size: int) -> Any:
        """Keep `value` for `key` unless it is over the per-entry bound; returns `value`."""
        size = max(0, int(size))
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.entry_bytes:
                return value
            self._data[key] = (value, size)
            self._bytes += size
            while len(self._data) > self.entries or self._bytes > self.max_bytes:
                _, (_, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0

    @property
    def bytes(self) -> int:
        """The estimated bytes of what it keeps now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)


class IdentityMemo:
    """A memo keyed by the identity of one or more objects, holding at most `size` entries and about
    `max_bytes` bytes: the distinct objects it holds (each measured once, by `sizer`, when first held)
    plus its values (the size :meth:`put` is given)."""

    def __init__(self, size: int, max_bytes: int = 16 << 20, sizer: Callable[[Any], int] | None = None) -> None:
        self.size, self.max_bytes = size, max_bytes
        self.sizer = sizer if sizer is not None else (lambda obj: size_of(obj, max_bytes))
        self._entries: dict[tuple[int, ...], tuple[tuple[Any, ...], Any, int]] = {}
        self._held: set[int] = set()  # ids of the objects its entries hold (each counted once)
        self._bytes = 0
        _ALL.add(self)

    def get(self, *objects: Any) -> Any:
        """The value remembered for exactly these objects, or :data:`MISSING`."""
        hit = self._entries.get(tuple(map(id, objects)))
        if hit is None or any(a is not b for a, b in zip(hit[0], objects)):
            return MISSING
        return hit[1]

    def put(self, value: Any, *objects: Any, size: int = 64) -> Any:
        """Remember `value` (about `size` bytes) for these objects, holding them; returns `value`. An entry
        that would take more than a quarter of the memo's bytes is not kept."""
        key = tuple(map(id, objects))
        unique = {id(o): o for o in objects}
        size = max(0, int(size))
        sizes = {i: self.sizer(o) for i, o in unique.items() if i not in self._held}
        if len(self._entries) >= self.size or self._bytes + size + sum(sizes.values()) > self.max_bytes:
            self.clear()
            sizes.update((i, self.sizer(o)) for i, o in unique.items() if i not in sizes)
        if size + sum(sizes.values()) > self.max_bytes // 4:
            return value
        old = self._entries.get(key)
        if old is not None:  # the same objects again, another value: they stay held once
            self._bytes -= old[2]
        self._held.update(unique)
        self._entries[key] = (objects, value, size)
        self._bytes += size + sum(sizes.values())
        return value

    def clear(self) -> None:
        self._entries.clear()
        self._held.clear()
        self._bytes = 0

    @property
    def bytes(self) -> int:
        """The estimated bytes of the objects it holds and of its values."""
        return self._bytes

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


__all__ = ["MISSING", "IdentityMemo", "Memo", "forget_all", "size_of"]
