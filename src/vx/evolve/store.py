"""The run record: one SQLite file per evolution run (docs/design.md §10).

Tables (all text is UTF-8, JSON columns are canonical JSON):

    meta        key → value: format, vx version, family name and directory, config (JSON),
                seed expression, created / finished timestamps, status (running | finished)
    rounds      one row per completed round (0 = the seed): objective, a_dev, a_train, cost,
                incumbent text, candidate counts, pool sizes, births / rejections, seconds, the
                engine state after the round (JSON, what `--resume` restarts from), and the audit
                columns (audit_agreement, audit JSON) — written by the engine from numbers the
                auditor returns, never read back by it
    ops         the op pool: origin (seed | synthesized), current status, tier, detects, version,
                uses_llm, typed spec (JSON, synthesized ops), round of birth
    events      lifecycle events: seed, born, rejected (with reason), promoted, retired
    elites      the elite archive after each round (rank, expression, objective, a_dev, a_train)
    candidates  the best `record_candidates` candidates of each round, with composer and scores
    verdicts    the final verifier's verdict per item (split train | dev | locked): final verdict,
                expression verdict, and for dev the label (locked labels are never stored)
    traces      per item, the verdict and message of every op the final verifier runs
    matrix      the verdict of every op of the pool (retired ones too) on every train and dev
                item — with `rounds.state`, the events and the dev labels, enough to recompute
                every round's objective (`vx.evolve.recompute`)
    summary     key → JSON: seed-vs-evolved figures printed at the end

Each round is written in one transaction, so an interrupted run loses at most the round in
progress and resumes from the last committed one.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.dsl.parse import VxSyntaxError, parse
from vx.errors import NotKeptError, VxError
from vx.text import storable

__all__ = ["RunStore", "RunStoreError", "FORMAT", "op_rows", "round_row"]

FORMAT = "vx-run/1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    round INTEGER PRIMARY KEY, objective REAL, a_dev REAL, a_train REAL, cost REAL,
    incumbent TEXT NOT NULL, replaced INTEGER NOT NULL, candidates INTEGER NOT NULL,
    selectable INTEGER NOT NULL, n_active INTEGER NOT NULL, n_shadow INTEGER NOT NULL,
    n_retired INTEGER NOT NULL, born INTEGER NOT NULL, rejected INTEGER NOT NULL,
    misses INTEGER NOT NULL, gaps INTEGER NOT NULL, seconds REAL NOT NULL, state TEXT NOT NULL,
    audit_agreement REAL, audit TEXT);
CREATE TABLE IF NOT EXISTS ops (
    name TEXT PRIMARY KEY, origin TEXT NOT NULL, status TEXT NOT NULL, tier TEXT NOT NULL,
    detects TEXT NOT NULL, version TEXT NOT NULL, uses_llm INTEGER NOT NULL, spec TEXT,
    born_round INTEGER NOT NULL, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, round INTEGER NOT NULL, op TEXT NOT NULL, kind TEXT NOT NULL,
    status TEXT NOT NULL, reason TEXT NOT NULL, evidence TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS elites (
    round INTEGER NOT NULL, rank INTEGER NOT NULL, expression TEXT NOT NULL, objective REAL,
    a_dev REAL, a_train REAL, PRIMARY KEY (round, rank));
CREATE TABLE IF NOT EXISTS candidates (
    round INTEGER NOT NULL, rank INTEGER NOT NULL, expression TEXT NOT NULL, composer TEXT NOT NULL,
    objective REAL, a_dev REAL, a_train REAL, cost REAL, selectable INTEGER NOT NULL,
    reason TEXT NOT NULL, PRIMARY KEY (round, rank));
CREATE TABLE IF NOT EXISTS verdicts (
    split TEXT NOT NULL, item TEXT NOT NULL, task TEXT NOT NULL, final TEXT NOT NULL,
    expr INTEGER NOT NULL, label REAL, PRIMARY KEY (split, item));
CREATE TABLE IF NOT EXISTS traces (
    split TEXT NOT NULL, item TEXT NOT NULL, op TEXT NOT NULL, verdict INTEGER NOT NULL,
    message TEXT NOT NULL, PRIMARY KEY (split, item, op));
CREATE TABLE IF NOT EXISTS summary (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS matrix (
    op TEXT NOT NULL, split TEXT NOT NULL, item TEXT NOT NULL, verdict INTEGER NOT NULL,
    PRIMARY KEY (op, item)) WITHOUT ROWID;
"""

ROUND_COLUMNS = (
    "round",
    "objective",
    "a_dev",
    "a_train",
    "cost",
    "incumbent",
    "replaced",
    "candidates",
    "selectable",
    "n_active",
    "n_shadow",
    "n_retired",
    "born",
    "rejected",
    "misses",
    "gaps",
    "seconds",
    "state",
    "audit_agreement",
    "audit",
)


class RunStoreError(VxError):
    """A run file that cannot be opened, is not a vx run, or is damaged (the message names the
    file, the table and the record)."""


class RunFileFull(RunStoreError, NotKeptError):
    """A run file the disk cannot take more of (full, over quota, read-only): what was recorded before is
    kept, and the run resumes from it once there is room."""


#: What SQLite says when the disk (or the file's quota or size limit) is full, or the file cannot be written.
_WRITE_FAILED = re.compile(r"disk is full|disk I/O error|readonly database|unable to open database file")


#: What every column vx reads must hold (a damaged file -- text where a number belongs, a verdict code
#: that is none -- is a RunStoreError naming the table, column and record, never a traceback later):
#: int, num (int or float), text, bool (0/1), verdict (-1, 0, 1), final (pass/fail/abstain); "?" allows NULL.
#: text is at most MAX_TEXT_CHARS characters (what vx writes there is cut to it); doc (JSON documents, the
#: seed's text) is unbounded.
COLUMN_KINDS: dict[str, dict[str, str]] = {
    "rounds": {
        "round": "int",
        "objective": "num?",
        "a_dev": "num?",
        "a_train": "num?",
        "cost": "num?",
        "incumbent": "text",
        "replaced": "bool",
        "candidates": "int",
        "selectable": "int",
        "n_active": "int",
        "n_shadow": "int",
        "n_retired": "int",
        "born": "int",
        "rejected": "int",
        "misses": "int",
        "gaps": "int",
        "seconds": "num",
        "state": "doc",
        "audit_agreement": "num?",
        "audit": "doc?",
    },
    "ops": {
        "name": "text",
        "origin": "text",
        "status": "text",
        "tier": "text",
        "detects": "text",
        "version": "text",
        "uses_llm": "bool",
        "spec": "doc?",
        "born_round": "int",
        "description": "text",
    },
    "events": {
        "id": "int",
        "round": "int",
        "op": "text",
        "kind": "text",
        "status": "text",
        "reason": "text",
        "evidence": "doc",
    },
    "elites": {"rank": "int", "expression": "text", "objective": "num?", "a_dev": "num?", "a_train": "num?"},
    "candidates": {
        "rank": "int",
        "expression": "text",
        "composer": "text",
        "objective": "num?",
        "a_dev": "num?",
        "a_train": "num?",
        "cost": "num?",
        "selectable": "bool",
        "reason": "text",
    },
    "verdicts": {"split": "text", "item": "text", "task": "text", "final": "final", "expr": "verdict", "label": "num?"},
    "traces": {"split": "text", "item": "text", "op": "text", "verdict": "verdict", "message": "text"},
    "matrix": {"op": "text", "item": "text", "verdict": "verdict"},
    "meta": {"key": "text", "value": "doc"},
    "summary": {"key": "text", "value": "doc"},
}
MAX_TEXT_CHARS = 1 << 20  # a message, a reason, an expression, an id
_FINALS = ("pass", "fail", "abstain")


def _fits(value: Any, kind: str) -> bool:
    if kind.endswith("?"):
        if value is None:
            return True
        kind = kind[:-1]
    if kind == "text":
        return isinstance(value, str) and len(value) <= MAX_TEXT_CHARS
    if kind == "doc":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int)
    if kind == "num":
        return isinstance(value, (int, float)) and math.isfinite(value)
    if kind == "bool":
        return value in (0, 1) and isinstance(value, int)
    if kind == "verdict":
        return isinstance(value, int) and value in (-1, 0, 1)
    if kind == "final":
        return value in _FINALS
    raise ValueError(kind)


_WANTED = {
    "text": f"text of at most {MAX_TEXT_CHARS:,} characters",
    "doc": "text",
    "int": "an integer",
    "num": "a finite number",
    "bool": "0 or 1",
    "verdict": "a verdict code (-1, 0 or 1)",
    "final": "pass, fail or abstain",
}


#: Tables every run file has had since FORMAT vx-run/1; `matrix` came later (older files lack
#: it: they read as having no verdict matrix).
REQUIRED_TABLES = ("meta", "rounds", "ops", "events", "elites", "candidates", "verdicts", "traces", "summary")
OPTIONAL_TABLES = ("matrix",)

#: What a round's engine state must hold for `--resume` (the keys `Evolution._resume` reads).
STATE_KEYS = {"ops": list, "specs": dict, "tried": list, "stale": int, "incumbent": str, "elites": list}


def json_text(obj: Any) -> str:
    """Canonical JSON for a run file's JSON columns: sorted keys, no spaces, NaN/inf as null; an unpaired
    surrogate is kept as its JSON escape (it reads back as itself)."""

    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, Mapping):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    return storable(json.dumps(clean(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def clip(text: Any) -> Any:
    """A free text (a message, a reason) cut to :data:`MAX_TEXT_CHARS` characters, saying so."""
    if isinstance(text, str) and len(text) > MAX_TEXT_CHARS:
        note = f" … (cut: {len(text):,} characters)"
        return text[: MAX_TEXT_CHARS - len(note)] + note
    return text


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


class RunStore:
    """Read and write one run file."""

    def __init__(
        self,
        path: str | Path,
        *,
        create: bool = False,
        upgrade: bool = False,
        meta: Mapping[str, Any] | None = None,
        lock: bool = False,
    ) -> None:
        """Open a run file (``create``: a new one, holding `meta` from its first byte). Opening never changes
        the file, except with ``upgrade`` (resuming a run writes to it): then tables added to the format
        since the file was written (``OPTIONAL_TABLES``) are created. A file that lacks a required table
        is damaged: RunStoreError.

        A new file is made whole beside its name and then linked there, only if the name is free: two runs
        started on one file cannot both write it (``F already exists``), and no empty or half-made file is
        ever left behind. ``lock``: hold an exclusive lock on the file until :meth:`close` (the writer of a
        run; readers take none): a second writer is refused, naming the file."""
        self.path = Path(path)
        self._lock_fd: int | None = None
        if create:
            self._create(meta or {})
        elif not self.path.is_file():
            raise RunStoreError(
                f"{self.path}: no such run file"
                if not self.path.exists()
                else f"{self.path}: not a run file (not a regular file)"
            )
        if lock:
            self._lock()
        try:
            self.db = StorableConnection(sqlite3.connect(self.path, isolation_level=None, timeout=30.0))
            if create:
                self.db.execute("PRAGMA journal_mode=WAL")
            fmt = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone() if self._has_meta() else None
            tables = {name for (name,) in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"{self.path}: not a vx run file ({exc})") from None
        if not create and (fmt is None or fmt[0] != FORMAT):
            raise RunStoreError(f"{self.path}: not a vx run file (no '{FORMAT}' marker)")
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise RunStoreError(f"{self.path}: damaged run file: table(s) {', '.join(missing)} missing")
        self._tables = tables
        if upgrade and not create:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(SCHEMA)  # all IF NOT EXISTS: adds only the optional tables
                self._tables |= set(OPTIONAL_TABLES)
            except sqlite3.DatabaseError as exc:
                raise RunStoreError(f"{self.path}: cannot be written to ({exc})") from None

    def _create(self, meta: Mapping[str, Any]) -> None:
        """Make the new run file (schema and `meta`) under a temporary name, then link it to its name: the
        link fails when the name is taken (FileExistsError), which no check before it could promise."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
        try:
            db = StorableConnection(sqlite3.connect(tmp, isolation_level=None))
            try:
                db.executescript(SCHEMA)
                db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    [(k, v if isinstance(v, str) else json_text(v)) for k, v in meta.items()],
                )
            finally:
                db.close()
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                raise RunStoreError(
                    f"{self.path} already exists (another run may be writing it); choose another output file, "
                    f"or resume it: vx evolve --resume {self.path}"
                ) from None
            except OSError as exc:  # a file system without hard links: created exclusively, then filled
                if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
                    raise
                self._copy_exclusively(tmp)
        except sqlite3.OperationalError as exc:
            if not _WRITE_FAILED.search(str(exc)):
                raise
            raise RunFileFull(
                f"{self.path}: the run file cannot be made ({exc}); free some space and start again"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS):
                raise
            raise RunFileFull(f"{self.path}: the run file cannot be made ({exc.strerror}); free some space") from None
        finally:
            tmp.unlink(missing_ok=True)

    def _copy_exclusively(self, tmp: Path) -> None:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise RunStoreError(f"{self.path} already exists; choose another output file") from None
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(tmp.read_bytes())
        except BaseException:
            self.path.unlink(missing_ok=True)
            raise

    def _lock(self) -> None:
        import fcntl

        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunStoreError(
                f"{self.path} is being written by another vx evolve; wait for it to finish, or choose another file"
            ) from None
        self._lock_fd = fd

    def _has_meta(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone() is not None

    def close(self) -> None:
        try:
            self.db.close()
        finally:
            if self._lock_fd is not None:  # after the connection: closing any descriptor of the file drops
                os.close(self._lock_fd)  # SQLite's own locks on it
                self._lock_fd = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions ---------------------------------------------------------------------
    def transaction(self) -> _Tx:
        return _Tx(self.db, self.path)

    # --- writing ----------------------------------------------------------------------------
    def set_meta(self, values: Mapping[str, Any]) -> None:
        with self.transaction():
            self._set_meta(values)

    def _set_meta(self, values: Mapping[str, Any]) -> None:
        self.db.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(k, v if isinstance(v, str) else json_text(v)) for k, v in values.items()],
        )

    def write_round(
        self,
        row: Mapping[str, Any],
        *,
        ops: Iterable[Mapping[str, Any]],
        events: Iterable[Any],
        elites: Sequence[Mapping[str, Any]],
        candidates: Sequence[Mapping[str, Any]],
    ) -> None:
        """Everything one round produced, atomically."""
        with self.transaction():
            values = []
            for c in ROUND_COLUMNS:
                v = row.get(c)
                if c in ("state", "audit"):
                    v = None if v is None else json_text(v)
                elif c in ("objective", "a_dev", "a_train", "cost", "seconds", "audit_agreement"):
                    v = _num(v)
                values.append(v)
            self.db.execute(
                f"INSERT OR REPLACE INTO rounds ({','.join(ROUND_COLUMNS)}) "
                f"VALUES ({','.join('?' * len(ROUND_COLUMNS))})",
                values,
            )
            for o in ops:
                self.db.execute(
                    "INSERT OR REPLACE INTO ops VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        o["name"],
                        o["origin"],
                        o["status"],
                        o["tier"],
                        o["detects"],
                        o["version"],
                        int(o["uses_llm"]),
                        None if o.get("spec") is None else json_text(o["spec"]),
                        int(o["born_round"]),
                        o.get("description", ""),
                    ),
                )
            self.db.executemany(
                "INSERT INTO events (round, op, kind, status, reason, evidence) VALUES (?,?,?,?,?,?)",
                [(e.round, e.op, e.kind, e.status, clip(e.reason), json_text(dict(e.evidence))) for e in events],
            )
            r = row["round"]
            self.db.execute("DELETE FROM elites WHERE round=?", (r,))
            self.db.executemany(
                "INSERT INTO elites VALUES (?,?,?,?,?,?)",
                [
                    (r, i, e["expression"], _num(e["objective"]), _num(e["a_dev"]), _num(e["a_train"]))
                    for i, e in enumerate(elites)
                ],
            )
            self.db.execute("DELETE FROM candidates WHERE round=?", (r,))
            self.db.executemany(
                "INSERT INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        r,
                        i,
                        c["expression"],
                        c["composer"],
                        _num(c["objective"]),
                        _num(c["a_dev"]),
                        _num(c["a_train"]),
                        _num(c["cost"]),
                        int(c["selectable"]),
                        clip(c["reason"]),
                    )
                    for i, c in enumerate(candidates)
                ],
            )

    def write_final(
        self,
        verdicts: Sequence[tuple],
        traces: Sequence[tuple],
        summary: Mapping[str, Any],
        meta: Mapping[str, Any],
        matrix: Sequence[tuple] = (),
    ) -> None:
        """The final verifier's per-item verdicts and traces, the pool's verdict matrix
        ``(op, split, item, verdict)``, the summary, and closing metadata."""
        with self.transaction():
            self.db.execute("DELETE FROM verdicts")
            self.db.execute("DELETE FROM traces")
            self.db.execute("DELETE FROM matrix")
            self.db.executemany("INSERT INTO matrix VALUES (?,?,?,?)", matrix)
            self.db.executemany("INSERT INTO verdicts VALUES (?,?,?,?,?,?)", verdicts)
            self.db.executemany(
                "INSERT INTO traces VALUES (?,?,?,?,?)",
                ((*t[:4], clip(t[4])) if len(t) == 5 and isinstance(t[4], str) else t for t in traces),
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO summary VALUES (?, ?)", [(k, json_text(v)) for k, v in summary.items()]
            )
            self._set_meta(meta)

    # --- reading ----------------------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read query; a damaged database is a RunStoreError naming the file."""
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"{self.path}: damaged run file ({exc})") from None

    def _rows(
        self,
        table: str,
        cols: Sequence[str],
        sql: str,
        args: Sequence[Any] = (),
        key: Callable[[dict[str, Any]], str] | None = None,
    ) -> list[dict[str, Any]]:
        """The rows of a read query as dicts, every column checked against :data:`COLUMN_KINDS`."""
        kinds = COLUMN_KINDS[table]
        out = []
        for n, r in enumerate(self._query(sql, args), 1):
            d = dict(zip(cols, r))
            for c in cols:
                kind = kinds.get(c)
                if kind is not None and not _fits(d[c], kind):
                    where = key(d) if key is not None else f"row {n}"
                    shown = (
                        repr(d[c])
                        if not isinstance(d[c], str) or len(d[c]) < 60
                        else f"{d[c][:57]!r}... ({len(d[c]):,} characters)"
                    )
                    raise RunStoreError(
                        f"{self.path}: damaged run file: {table}.{c} of {where} is "
                        f"{'NULL' if d[c] is None else shown}, expected "
                        f"{_WANTED[kind.rstrip('?')]}"
                    )
            out.append(d)
        return out

    def _decode(self, text: Any, where: str, kind: type | None = None) -> Any:
        """A JSON column's value; malformed JSON (or the wrong kind) names the file and the field."""
        try:
            if not isinstance(text, str):
                raise ValueError(f"a {type(text).__name__}, not JSON text")
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise RunStoreError(
                f"{self.path}: damaged run file: {where} is not valid JSON ({str(exc)[:120]})"
            ) from None
        if kind is not None and not isinstance(value, kind):
            raise RunStoreError(
                f"{self.path}: damaged run file: {where} is a JSON {type(value).__name__}, "
                f"expected {'an object' if kind is dict else 'a ' + kind.__name__}"
            )
        return value

    def _state(self, text: Any, r: Any) -> dict[str, Any]:
        where = f"rounds.state of round {r}"
        state = self._decode(text, where, dict)
        for key, kind in STATE_KEYS.items():
            if key not in state:
                raise RunStoreError(f"{self.path}: damaged run file: {where} has no {key!r}")
            if not isinstance(state[key], kind) or (kind is int and isinstance(state[key], bool)):
                raise RunStoreError(f"{self.path}: damaged run file: {where}: {key!r} is not a {kind.__name__}")
        return state

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for row in self._rows("meta", ("key", "value"), "SELECT key, value FROM meta ORDER BY key"):
            k, v = row["key"], row["value"]
            if k in ("config", "objective_constants", "seed_score"):
                out[k] = self._decode(v, f"meta.{k}", dict)
            else:
                out[k] = v
        return out

    def rounds(self) -> list[dict[str, Any]]:
        rows = []
        for d in self._rows(
            "rounds",
            ROUND_COLUMNS,
            f"SELECT {','.join(ROUND_COLUMNS)} FROM rounds ORDER BY round",
            key=lambda d: f"round {d['round']!r}",
        ):
            d["state"] = self._state(d["state"], d["round"])
            d["audit"] = self._decode(d["audit"], f"rounds.audit of round {d['round']}", dict) if d["audit"] else None
            rows.append(d)
        return rows

    def last_state(self) -> tuple[int, dict[str, Any]] | None:
        rows = self._query("SELECT round, state FROM rounds ORDER BY round DESC LIMIT 1")
        if not rows:
            return None
        r, state = rows[0]
        if not isinstance(r, int) or isinstance(r, bool):
            raise RunStoreError(
                f"{self.path}: damaged run file: rounds.round of round {r!r} is {r!r}, expected an integer"
            )
        return r, self._state(state, r)

    def ops(self) -> list[dict[str, Any]]:
        cols = (
            "name",
            "origin",
            "status",
            "tier",
            "detects",
            "version",
            "uses_llm",
            "spec",
            "born_round",
            "description",
        )
        out = []
        for d in self._rows(
            "ops",
            cols,
            f"SELECT {','.join(cols)} FROM ops ORDER BY born_round, name",
            key=lambda d: f"op {d['name']!r}",
        ):
            d["spec"] = self._decode(d["spec"], f"ops.spec of op {d['name']!r}", dict) if d["spec"] else None
            d["uses_llm"] = bool(d["uses_llm"])
            out.append(d)
        return out

    def events(self) -> list[dict[str, Any]]:
        cols = ("id", "round", "op", "kind", "status", "reason", "evidence")
        rows = self._rows(
            "events", cols, f"SELECT {','.join(cols)} FROM events ORDER BY id", key=lambda d: f"event {d['id']!r}"
        )
        return [
            {
                **{c: d[c] for c in cols[1:6]},
                "evidence": self._decode(d["evidence"], f"events.evidence of event {d['id']}", dict),
            }
            for d in rows
        ]

    def elites(self, round: int | None = None) -> list[dict[str, Any]]:
        if round is None:
            rows = self._query("SELECT MAX(round) FROM elites")
            round = rows[0][0] if rows and rows[0][0] is not None else 0
        cols = ("rank", "expression", "objective", "a_dev", "a_train")
        return self._rows(
            "elites",
            cols,
            f"SELECT {','.join(cols)} FROM elites WHERE round=? ORDER BY rank",
            (round,),
            key=lambda d: f"rank {d['rank']!r} of round {round}",
        )

    def candidates(self, round: int) -> list[dict[str, Any]]:
        cols = ("rank", "expression", "composer", "objective", "a_dev", "a_train", "cost", "selectable", "reason")
        return self._rows(
            "candidates",
            cols,
            f"SELECT {','.join(cols)} FROM candidates WHERE round=? ORDER BY rank",
            (round,),
            key=lambda d: f"rank {d['rank']!r} of round {round}",
        )

    def verdicts(self, split: str | None = None) -> list[dict[str, Any]]:
        cols = ("split", "item", "task", "final", "expr", "label")
        q = f"SELECT {','.join(cols)} FROM verdicts" + (" WHERE split=?" if split else "") + " ORDER BY split, rowid"
        return self._rows("verdicts", cols, q, (split,) if split else (), key=lambda d: f"item {d['item']!r}")

    def traces(self, split: str | None = None) -> list[dict[str, Any]]:
        cols = ("split", "item", "op", "verdict", "message")
        q = f"SELECT {','.join(cols)} FROM traces" + (" WHERE split=?" if split else "") + " ORDER BY split, item, op"
        return self._rows(
            "traces", cols, q, (split,) if split else (), key=lambda d: f"item {d['item']!r}, op {d['op']!r}"
        )

    def matrix(self) -> dict[str, dict[str, int]]:
        """op → {item id → verdict code} of the pool's verdicts on train and dev items (empty for a
        file written before the matrix table existed)."""
        out: dict[str, dict[str, int]] = {}
        if "matrix" not in self._tables:
            return out
        for d in self._rows(
            "matrix",
            ("op", "item", "verdict"),
            "SELECT op, item, verdict FROM matrix",
            key=lambda d: f"item {d['item']!r}, op {d['op']!r}",
        ):
            out.setdefault(d["op"], {})[d["item"]] = d["verdict"]
        return out

    def summary(self) -> dict[str, Any]:
        rows = self._rows("summary", ("key", "value"), "SELECT key, value FROM summary ORDER BY key")
        return {d["key"]: self._decode(d["value"], f"summary.{d['key']}") for d in rows}

    def check(self, *, finished: bool = True, family_dir: bool = True) -> None:
        """Read every record of the file and check it; the first damage found is a RunStoreError naming
        the file, the table.column and the record: every column's kind (`COLUMN_KINDS`: text where a
        number belongs, a message longer than :data:`MAX_TEXT_CHARS`, text that is not UTF-8), every JSON
        column, every recorded expression parses over the run's ops, the family directory the run names
        exists (``family_dir``) and the run finished (``finished``). `vx runs verify` checks all of it,
        `vx evolve --resume` all but the last (an interrupted run is what it resumes)."""
        damaged = f"{self.path}: damaged run file:"
        meta = self.meta()
        rounds = self.rounds()
        names = {o["name"] for o in self.ops()}
        for check in (self.events, self.verdicts, self.traces, self.matrix):
            check()
        summary = self.summary()
        expressions = [(f"meta.{k}", meta[k]) for k in ("seed_expression", "best_expression") if k in meta]
        for r in rounds:
            n = r["round"]
            expressions.append((f"rounds.incumbent of round {n}", r["incumbent"]))
            expressions += [
                (f"elites.expression of rank {e['rank']} of round {n}", e["expression"]) for e in self.elites(n)
            ]
            expressions += [
                (f"candidates.expression of rank {c['rank']} of round {n}", c["expression"]) for c in self.candidates(n)
            ]
        shown = summary.get("expressions")
        if shown is not None and not isinstance(shown, dict):
            raise RunStoreError(f"{damaged} summary.expressions is a JSON {type(shown).__name__}, expected an object")
        expressions += [(f"summary.expressions.{k}", v) for k, v in (shown or {}).items()]
        for where, text in expressions:
            if not isinstance(text, str):
                raise RunStoreError(f"{damaged} {where} is {type(text).__name__}, expected a vx expression")
            try:
                parse(text, filename=where, known_ops=names)
            except VxSyntaxError as exc:
                first = str(exc).strip().split("\n")[0][:300]
                raise RunStoreError(f"{damaged} {where} is not an expression over the run's ops ({first})") from None
        if family_dir:
            made_on = meta.get("family_dir")
            if not made_on or not Path(made_on, "family.toml").is_file():
                raise RunStoreError(
                    f"{self.path}: the family the run was made on is not at {made_on!r} any more "
                    "(moved or deleted): put it back there, or name it: vx evolve FAMILY --resume RUN"
                )
        if finished and meta.get("status") != "finished":
            raise RunStoreError(
                f"{self.path}: the run did not finish (meta.status is {meta.get('status')!r}): its "
                "final verdicts are missing; continue it with vx evolve FAMILY --resume RUN"
            )

    def truncate_after(self, round: int) -> None:
        """Drop everything recorded after ``round`` (used when resuming)."""
        with self.transaction():
            for table in ("rounds", "elites", "candidates", "events"):
                self.db.execute(f"DELETE FROM {table} WHERE round > ?", (round,))
            self.db.execute("DELETE FROM ops WHERE origin='synthesized' AND born_round > ?", (round,))


def _storable_row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(storable(v) if isinstance(v, str) else v for v in row)


class StorableConnection:
    """The run file's connection: every text bound to a statement is made storable first (an
    unpaired surrogate in an item id or an op message becomes its ``\\udXXX`` escape), so a
    finished run is never lost at its final write (SQLite refuses text that is not UTF-8)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, args: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, _storable_row(args))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self._db.executemany(sql, (_storable_row(r) for r in rows))

    def executescript(self, script: str) -> sqlite3.Cursor:
        return self._db.executescript(script)

    @property
    def in_transaction(self) -> bool:
        return self._db.in_transaction

    def close(self) -> None:
        self._db.close()


class _Tx:
    """One transaction of a run file: all of it is written, or none. A full disk is a :class:`RunFileFull`
    naming the file (the rounds written before stay, and ``--resume`` goes on from them)."""

    def __init__(self, db: StorableConnection, path: Path | None = None) -> None:
        self.db, self.path = db, path

    def __enter__(self) -> StorableConnection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if exc_type is None:
                self.db.execute("COMMIT")
                return
        except sqlite3.OperationalError as failed:
            exc = failed
        if self.db.in_transaction:  # SQLite may have rolled back already (a full disk does)
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        if isinstance(exc, sqlite3.OperationalError) and _WRITE_FAILED.search(str(exc)):
            raise RunFileFull(
                f"{self.path}: the run file cannot be written ({exc}): what was recorded before is kept; free "
                f"some space and go on with vx evolve --resume {self.path}"
            ) from None
        if exc_type is None and isinstance(exc, BaseException):
            raise exc  # the COMMIT's own failure


def round_row(
    r: int,
    score: Any,
    *,
    incumbent: str,
    replaced: bool,
    candidates: int,
    selectable: int,
    statuses: Sequence[str],
    born: int,
    rejected: int,
    misses: int,
    gaps: int,
    seconds: float,
    state: Mapping[str, Any],
    audit: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``rounds`` row of round ``r`` (``score``: the incumbent's objective Score)."""
    return {
        "round": r,
        "objective": score.objective,
        "a_dev": score.a_dev,
        "a_train": score.a_train,
        "cost": score.cost,
        "incumbent": incumbent,
        "replaced": int(replaced),
        "candidates": candidates,
        "selectable": selectable,
        "n_active": list(statuses).count("active"),
        "n_shadow": list(statuses).count("shadow"),
        "n_retired": list(statuses).count("retired"),
        "born": born,
        "rejected": rejected,
        "misses": misses,
        "gaps": gaps,
        "seconds": seconds,
        "state": dict(state),
        "audit_agreement": None if audit is None else audit.get("agreement"),
        "audit": audit,
    }


def op_rows(records: Mapping[str, Any], pool: Any, specs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``ops`` rows: every op the run knows (``records``: name → OpRecord), as the pool has it."""
    rows = []
    for name, rec in records.items():
        o = pool[name]
        rows.append(
            {
                "name": name,
                "origin": rec.origin,
                "status": rec.status,
                "tier": o.tier,
                "detects": o.detects,
                "version": o.version,
                "uses_llm": o.uses_llm,
                "spec": specs.get(name),
                "born_round": rec.born_round,
                "description": o.description,
            }
        )
    return rows


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
