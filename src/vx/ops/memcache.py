"""A verdict cache in memory, bounded in entries and in bytes: a long-running grader's (``vx serve``).

It answers the same four calls as the SQLite :class:`~vx.ops.cache.VerdictCache` (verdicts by (op,
version, item hash), peer observations by (observer, version, item hash)), so ``apply_ops`` uses it
unchanged: identical completions of one task -- the same task record and output, the item hash's
content -- are graded once, across requests. Nothing is written to disk. Both stores are LRU: the
least recently used entries go first once either bound is reached, and an entry larger than a
sixteenth of the byte bound is not kept at all (one huge observation cannot empty the cache). Sizes
are the length of what is kept (the message and keys; an observation as its JSON encoding), so the
bound is what the process holds give or take Python's per-object overhead, counted as
:data:`ENTRY_OVERHEAD` bytes an entry. Thread-safe: a server's request threads share one.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable
from typing import Any

from vx.ops.cache import CachedVerdict, VerdictCache, decode_plain, encode_plain
from vx.text import json_dumps

ENTRIES = 200_000
BYTES = 256 * 1024 * 1024
#: Bytes counted for each entry besides its strings (the tuple, the dict slot, the record).
ENTRY_OVERHEAD = 200


class MemoryVerdictCache(VerdictCache):
    """Verdicts and observations in memory, LRU-bounded by ``entries`` and ``max_bytes`` (see the module)."""

    def __init__(self, entries: int = ENTRIES, max_bytes: int = BYTES) -> None:  # no file: nothing of the parent's
        if entries < 1 or max_bytes < 1:
            raise ValueError("a memory verdict cache needs room for at least one entry and one byte")
        self.entries, self.max_bytes = entries, max_bytes
        self._lock = threading.Lock()
        self._store: collections.OrderedDict[tuple[str, ...], tuple[Any, int]] = collections.OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evicted = 0

    # the SQLite cache's file-level calls
    def close(self) -> None:
        return None

    def info(self) -> dict[str, Any]:
        with self._lock:
            return {"path": None, "entries": len(self._store), "bytes": self.bytes, "ops": []}

    def clear(self, op: str | None = None) -> int:
        with self._lock:
            gone = [k for k in self._store if op is None or (k[0] == "v" and k[1] == op)]
            for k in gone:
                self.bytes -= self._store.pop(k)[1]
            return len(gone)

    def __len__(self) -> int:
        return len(self._store)

    # ------------------------------------------------------------------ the store

    def _get(self, key: tuple[str, ...]) -> Any:
        found = self._store.get(key)
        if found is None:
            return None
        self._store.move_to_end(key)
        return found[0]

    def _put(self, key: tuple[str, ...], value: Any, size: int) -> None:
        size += ENTRY_OVERHEAD + sum(len(k) for k in key)
        if size > self.max_bytes // 16:
            return
        old = self._store.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._store[key] = (value, size)
        self.bytes += size
        while len(self._store) > self.entries or self.bytes > self.max_bytes:
            _, (_, gone) = self._store.popitem(last=False)
            self.bytes -= gone
            self.evicted += 1

    def get_many(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], CachedVerdict]:
        found: dict[tuple[str, str, str], CachedVerdict] = {}
        n = 0
        with self._lock:
            for op_name, version, h in keys:
                n += 1
                hit = self._get(("v", op_name, version, h))
                if hit is not None:
                    found[(op_name, version, h)] = hit
            self.hits += len(found)
            self.misses += n - len(found)
        return found

    def put_many(self, rows: Iterable[tuple[str, str, str, int, str, float, str | None]]) -> None:
        with self._lock:
            for op_name, version, h, verdict, message, duration, error in rows:
                if error is not None:
                    continue  # only verdicts are kept, as the SQLite cache serves them
                message = message or ""
                self._put(("v", op_name, version, h), CachedVerdict(verdict, message, duration, None), len(message))

    def get_observations(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Any]:
        found: dict[tuple[str, str, str], Any] = {}
        with self._lock:
            for name, version, h in keys:
                hit = self._get(("o", name, version, h))
                if hit is not None:
                    found[(name, version, h)] = hit
        # decoded outside the lock, afresh for each caller: an observation is never shared between requests
        out: dict[tuple[str, str, str], Any] = {}
        for key, text in found.items():
            try:
                out[key] = decode_plain(_loads(text))
            except (ValueError, TypeError):
                continue
        return out

    def put_observations(self, rows: Iterable[tuple[str, str, str, Any]]) -> None:
        encoded = []
        for name, version, h, value in rows:
            try:
                encoded.append((("o", name, version, h), json_dumps(encode_plain(value))))
            except (ValueError, TypeError, RecursionError):
                continue  # not plain data: recomputed next time
        with self._lock:
            for key, text in encoded:
                self._put(key, text, len(text))


def _loads(text: str) -> Any:
    import json

    return json.loads(text)


__all__ = ["BYTES", "ENTRIES", "MemoryVerdictCache"]
