"""The verdict cache: SQLite, keyed by (op name, op version, item content hash).

Peer ops (whose verdict depends on the other attempts at the task) are keyed by
:func:`peer_key` -- the item's hash combined with the hash of its task's attempt set -- and the
observations their verdicts are judged from are kept in a second table, keyed like verdicts by
(observer, version, item hash), as tagged JSON (:func:`encode_plain`).

Ops are pure, so a verdict computed once is valid until the op's code or spec changes (which
changes its version) or the item changes (which changes its hash). Rerunning an evaluation is
look-ups only. Only verdicts are cached: an op that failed (it raised, timed out, its worker died)
is run again next time, since a failure may come from the environment (a missing optional
dependency, a busy machine) and must not be served after the environment is fixed.

A file that is not a vx verdict cache (another SQLite database, any other file) is refused with a
clear error and never written to.

Location: ``--cache PATH`` on the CLI, else ``$VX_CACHE``, else
``$XDG_CACHE_HOME/vx/verdicts.sqlite`` (``~/.cache/vx/verdicts.sqlite``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from vx.errors import VxError
from vx.inputs import untrusted_reason
from vx.text import clean, json_dumps

_COLUMNS = ("op", "version", "item", "verdict", "message", "duration", "error", "created")


class CacheError(VxError):
    """A verdict cache path that cannot be used (not a vx cache, unreadable, not a file)."""


SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    op TEXT NOT NULL,
    version TEXT NOT NULL,
    item TEXT NOT NULL,
    verdict INTEGER NOT NULL,
    message TEXT NOT NULL DEFAULT '',
    duration REAL NOT NULL DEFAULT 0,
    error TEXT,
    created REAL NOT NULL,
    PRIMARY KEY (op, version, item)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS observations (
    observer TEXT NOT NULL,
    version TEXT NOT NULL,
    item TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (observer, version, item)
) WITHOUT ROWID;
"""


#: What SQLite says when the disk (or the file's quota or size limit) is full, or the file cannot be written.
_WRITE_FAILED = re.compile(r"disk is full|disk I/O error|readonly database|database or disk is full|unable to open")


def default_cache_path() -> Path:
    if os.environ.get("VX_CACHE"):
        return Path(os.environ["VX_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vx" / "verdicts.sqlite"


def item_hash(task: Mapping[str, Any], output: Any) -> str:
    """Content hash of what an op sees: the task and the output (not the item id or label).

    Any value hashes: one JSON cannot write (an int of more than 4,300 digits, nesting deeper than the
    stack, dict keys of mixed types that cannot be sorted) is hashed from :func:`canonical_text` instead,
    so a hostile output is graded, never an error of the grader."""
    try:
        blob = json.dumps([task, output], sort_keys=True, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        blob = "canonical:" + canonical_text([task, output])
    # surrogatepass: an output may hold unpaired surrogates (valid text hashes as before)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def canonical_text(value: Any) -> str:
    """A text that equal values share and different values do not, for any value: containers are walked
    without recursion (any depth), dict items and set members are in a sorted order of their own texts, ints
    are written in hex (any size), and anything else is its type's name and ``str()``."""
    out: list[Any] = []  # finished texts, and markers of containers waiting for theirs
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        obj, done = stack.pop()
        t = type(obj)
        if done:  # its children's texts are the last ones on `out`
            kind, n = obj
            parts = [out.pop() for _ in range(n)][::-1]
            if kind == "dict":
                pairs = sorted(zip(parts[0::2], parts[1::2]))
                body = ",".join(f"{k}:{v}" for k, v in pairs)
            else:
                body = ",".join(sorted(parts) if kind in ("set", "frozenset") else parts)
            out.append(f"{kind}[{body}]")
        elif t in (list, tuple, set, frozenset, dict):
            children = [x for kv in obj.items() for x in kv] if t is dict else list(obj)
            stack.append(((t.__name__, len(children)), True))
            stack.extend((c, False) for c in reversed(children))
        elif t is int:
            out.append(f"int:{obj:x}")
        elif t is str:
            out.append(json.dumps(obj, ensure_ascii=False))
        else:
            out.append(f"{t.__name__}:{_str(obj)}")  # quoted: no comma or bracket of it is read as structure
    return out[0]


def _str(obj: Any) -> str:
    try:
        return json.dumps(str(obj), ensure_ascii=False)
    except Exception:  # a str() that raises: its type alone
        return "?"


def attempt_set_hash(hashes: Iterable[str]) -> str:
    """The hash of a task's attempt set: the multiset of its attempts' item hashes (order-free)."""
    return hashlib.sha256("\n".join(sorted(hashes)).encode()).hexdigest()[:32]


def peer_key(item: str, attempt_set: str) -> str:
    """The cache key of a peer op's verdict on an item: its own hash and its task's attempt set."""
    return hashlib.sha256(f"peer:{item}:{attempt_set}".encode()).hexdigest()[:32]


# tagged JSON for plain data: every JSON object is a one-key type tag (as the sandbox's value encoding)
def encode_plain(value: Any, _depth: int = 0) -> Any:
    """`value` (None/bool/int/float/str and list/tuple/dict/set/frozenset of those) as JSON data."""
    if _depth > 100:
        raise ValueError("value nested too deeply to cache")
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value) is int:
        return value
    if type(value) is float:
        return value if value == value and value not in (float("inf"), float("-inf")) else {"float": repr(value)}
    if type(value) is list:
        return [encode_plain(v, _depth + 1) for v in value]
    if type(value) is tuple:
        return {"tuple": [encode_plain(v, _depth + 1) for v in value]}
    if type(value) in (set, frozenset):
        return {type(value).__name__: [encode_plain(v, _depth + 1) for v in value]}
    if type(value) is dict:
        return {"dict": [[encode_plain(k, _depth + 1), encode_plain(v, _depth + 1)] for k, v in value.items()]}
    raise ValueError(f"cannot cache a {type(value).__name__} (observations are plain data)")


def decode_plain(data: Any, _depth: int = 0) -> Any:
    """The inverse of :func:`encode_plain` (raises ValueError on anything else)."""
    if _depth > 100:
        raise ValueError("cached value nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_plain(v, _depth + 1) for v in data]
    if isinstance(data, dict) and len(data) == 1:
        ((tag, body),) = data.items()
        if tag == "float" and body in ("inf", "-inf", "nan"):
            return float(body)
        if tag in ("tuple", "set", "frozenset") and isinstance(body, list):
            items = [decode_plain(v, _depth + 1) for v in body]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and isinstance(body, list):
            return {decode_plain(k, _depth + 1): decode_plain(v, _depth + 1) for k, v in body}
    raise ValueError(f"not a cached plain value: {str(data)[:60]}")


@attrs.frozen
class CachedVerdict:
    verdict: int
    message: str
    duration: float
    error: str | None


class VerdictCache:
    """A SQLite verdict store (WAL mode, safe for several processes at once)."""

    def __init__(self, path: str | os.PathLike | None = None, *, on_write_error: Any = None) -> None:
        """Open (or create) the cache at `path` (default :func:`default_cache_path`). `on_write_error(message)`
        hears, once, that writing failed (a full disk); without it a RuntimeWarning says so."""
        self.on_write_error = on_write_error
        self.path = Path(path) if path is not None else default_cache_path()
        _check_cache_file(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise CacheError(
                f"{self.path}: cannot be used as the verdict cache ({exc}); "
                "choose another file with --cache or $VX_CACHE, or --no-cache"
            ) from None
        self.hits = 0
        self.misses = 0
        #: Why writing failed ("" while it works): a full disk, a file that became read-only. Grading goes
        #: on without keeping verdicts (they are all computed; nothing is lost but the cache's help next time).
        self.write_error = ""
        self.unwritten = 0  # verdicts and observations computed but not kept since then

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], CachedVerdict]:
        """Look up many (op, version, item_hash) keys at once."""
        keys = list(keys)
        found: dict[tuple[str, str, str], CachedVerdict] = {}
        by_op: dict[tuple[str, str], list[str]] = {}
        for op_name, version, h in keys:
            by_op.setdefault((op_name, version), []).append(h)
        for (op_name, version), hashes in by_op.items():
            for start in range(0, len(hashes), 900):
                chunk = hashes[start : start + 900]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(  # failures are never served (older caches stored some)
                    f"SELECT item, verdict, message, duration, error FROM verdicts "
                    f"WHERE op=? AND version=? AND error IS NULL AND item IN ({marks})",
                    (op_name, version, *chunk),
                )
                for item, verdict, message, duration, error in rows:
                    found[(op_name, version, item)] = CachedVerdict(verdict, message, duration, error)
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def put_many(self, rows: Iterable[tuple[str, str, str, int, str, float, str | None]]) -> None:
        """Store (op, version, item_hash, verdict, message, duration, error) rows."""
        now = time.time()
        rows = [
            (op, version, item, verdict, clean(message or ""), duration, None if error is None else clean(error))
            for op, version, item, verdict, message, duration, error in rows
        ]
        self._write("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?)", [(*r, now) for r in rows])

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        """Write rows in one transaction. A disk that is full (or a file that cannot be written any more) is
        said once (``write_error``, a RuntimeWarning) and ends writing: what was computed is all there, the
        cache only keeps less of it. Any other failure is a CacheError; an interruption rolls back."""
        if not rows:
            return
        if self.write_error:
            self.unwritten += len(rows)
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany(sql, rows)
            self._db.execute("COMMIT")
        except BaseException as exc:
            if self._db.in_transaction:  # SQLite may have rolled back already (a full disk does)
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if not isinstance(exc, sqlite3.Error):
                raise
            if not isinstance(exc, sqlite3.OperationalError) or not _WRITE_FAILED.search(str(exc)):
                raise CacheError(f"{self.path}: the verdict cache cannot be written ({exc})") from None
            self.write_error = (
                f"{self.path}: the verdict cache cannot be written ({exc}): verdicts computed from now on are not "
                "kept (every result is still computed and shown); free some space, or choose another --cache"
            )
            self.unwritten += len(rows)
            if self.on_write_error is not None:
                self.on_write_error(self.write_error)
            else:
                warnings.warn(self.write_error, RuntimeWarning, stacklevel=3)

    def get_observations(self, keys: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Any]:
        """Look up many (observer, version, item_hash) keys; undecodable rows count as missing."""
        keys = list(keys)
        found: dict[tuple[str, str, str], Any] = {}
        by_obs: dict[tuple[str, str], list[str]] = {}
        for name, version, h in keys:
            by_obs.setdefault((name, version), []).append(h)
        for (name, version), hashes in by_obs.items():
            for start in range(0, len(hashes), 900):
                chunk = hashes[start : start + 900]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT item, payload FROM observations WHERE observer=? AND version=? AND item IN ({marks})",
                    (name, version, *chunk),
                )
                for item, payload in rows:
                    try:
                        found[(name, version, item)] = decode_plain(json.loads(payload))
                    except (ValueError, TypeError):
                        continue  # a damaged row is recomputed
        return found

    def put_observations(self, rows: Iterable[tuple[str, str, str, Any]]) -> None:
        """Store (observer, version, item_hash, observation) rows (observations that are not plain
        data are skipped: they are recomputed next time)."""
        now = time.time()
        encoded = []
        for name, version, h, value in rows:
            try:
                encoded.append((name, version, h, json_dumps(encode_plain(value)), now))  # surrogates as escapes
            except (ValueError, TypeError):
                continue
        self._write("INSERT OR REPLACE INTO observations VALUES (?,?,?,?,?)", encoded)

    def info(self) -> dict[str, Any]:
        total = self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
        per_op = self._db.execute(
            "SELECT op, COUNT(DISTINCT version), COUNT(*), SUM(error IS NOT NULL) FROM verdicts GROUP BY op ORDER BY op"
        ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*") if p.exists())
        return {
            "path": str(self.path),
            "entries": total,
            "bytes": size,
            "ops": [{"op": o, "versions": v, "entries": n, "errors": e or 0} for o, v, n, e in per_op],
        }

    def clear(self, op: str | None = None) -> int:
        cur = self._db.execute("DELETE FROM verdicts" + (" WHERE op=?" if op else ""), (op,) if op else ())
        if op is None:
            self._db.execute("DELETE FROM observations")
        self._db.execute("VACUUM")
        return cur.rowcount


def _check_cache_file(path: Path) -> None:
    """Refuse a path that is not (and cannot become) a vx verdict cache, or one another user could have
    written (a verdict there would be served as if vx had computed it), before writing anything."""
    untrusted = untrusted_reason(path, "verdict cache")
    if untrusted is not None:
        raise CacheError(f"{untrusted}; choose another file with --cache or $VX_CACHE, or --no-cache")
    if not path.exists():
        return
    if not path.is_file():
        raise CacheError(f"{path}: not a vx verdict cache (not a regular file)")
    if path.stat().st_size == 0:
        return  # an empty file becomes a cache
    try:
        with open(path, "rb") as fh:
            magic = fh.read(16)
    except OSError as exc:
        raise CacheError(f"{path}: the verdict cache cannot be read ({exc.strerror or exc})") from None
    if magic != b"SQLite format 3\x00":
        raise CacheError(
            f"{path}: not a vx verdict cache (not an SQLite database); choose another file with --cache or $VX_CACHE"
        )
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            columns = tuple(r[1] for r in db.execute("PRAGMA table_info(verdicts)")) if "verdicts" in tables else ()
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise CacheError(f"{path}: not a vx verdict cache ({exc})") from None
    if tables and (not tables <= {"verdicts", "observations"} or "verdicts" not in tables or columns != _COLUMNS):
        raise CacheError(
            f"{path}: not a vx verdict cache (it holds table(s) {', '.join(sorted(tables))}"
            + (f" with columns {', '.join(columns)}" if columns and columns != _COLUMNS else "")
            + "); choose another file with --cache or $VX_CACHE"
        )
