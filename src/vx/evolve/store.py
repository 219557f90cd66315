"""The run record: one SQLite file per evolution run (DESIGN §10).

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

import json
import math
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import VxError

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

ROUND_COLUMNS = ("round", "objective", "a_dev", "a_train", "cost", "incumbent", "replaced", "candidates",
                 "selectable", "n_active", "n_shadow", "n_retired", "born", "rejected", "misses", "gaps",
                 "seconds", "state", "audit_agreement", "audit")


class RunStoreError(VxError):
    """A run file that cannot be opened or is not a vx run."""


def json_text(obj: Any) -> str:
    """Canonical JSON for a run file's JSON columns: sorted keys, no spaces, NaN/inf as null."""
    def clean(o: Any) -> Any:
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, Mapping):
            return {str(k): clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    return json.dumps(clean(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _num(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


class RunStore:
    """Read and write one run file."""

    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise RunStoreError(f"{self.path}: no such run file")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            if create:
                self.db.executescript(SCHEMA)
            fmt = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone() if self._has_meta() else None
        except sqlite3.DatabaseError as exc:
            raise RunStoreError(f"{self.path}: not a vx run file ({exc})") from None
        if not create and (fmt is None or fmt[0] != FORMAT):
            raise RunStoreError(f"{self.path}: not a vx run file (no '{FORMAT}' marker)")
        if not create:
            try:  # tables added since the file was written (all IF NOT EXISTS)
                self.db.executescript(SCHEMA)
            except sqlite3.OperationalError:  # a read-only file: fine for reading
                pass

    def _has_meta(self) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone() is not None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transactions ---------------------------------------------------------------------
    def transaction(self) -> _Tx:
        return _Tx(self.db)

    # --- writing ----------------------------------------------------------------------------
    def set_meta(self, values: Mapping[str, Any]) -> None:
        with self.transaction():
            self._set_meta(values)

    def _set_meta(self, values: Mapping[str, Any]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            [(k, v if isinstance(v, str) else json_text(v)) for k, v in values.items()])

    def write_round(self, row: Mapping[str, Any], *, ops: Iterable[Mapping[str, Any]], events: Iterable[Any],
                    elites: Sequence[Mapping[str, Any]], candidates: Sequence[Mapping[str, Any]]) -> None:
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
            self.db.execute(f"INSERT OR REPLACE INTO rounds ({','.join(ROUND_COLUMNS)}) "
                            f"VALUES ({','.join('?' * len(ROUND_COLUMNS))})", values)
            for o in ops:
                self.db.execute("INSERT OR REPLACE INTO ops VALUES (?,?,?,?,?,?,?,?,?,?)",
                                (o["name"], o["origin"], o["status"], o["tier"], o["detects"], o["version"],
                                 int(o["uses_llm"]), None if o.get("spec") is None else json_text(o["spec"]),
                                 int(o["born_round"]), o.get("description", "")))
            self.db.executemany("INSERT INTO events (round, op, kind, status, reason, evidence) VALUES (?,?,?,?,?,?)",
                                [(e.round, e.op, e.kind, e.status, e.reason, json_text(dict(e.evidence)))
                                 for e in events])
            r = row["round"]
            self.db.execute("DELETE FROM elites WHERE round=?", (r,))
            self.db.executemany("INSERT INTO elites VALUES (?,?,?,?,?,?)",
                                [(r, i, e["expression"], _num(e["objective"]), _num(e["a_dev"]), _num(e["a_train"]))
                                 for i, e in enumerate(elites)])
            self.db.execute("DELETE FROM candidates WHERE round=?", (r,))
            self.db.executemany("INSERT INTO candidates VALUES (?,?,?,?,?,?,?,?,?,?)",
                                [(r, i, c["expression"], c["composer"], _num(c["objective"]), _num(c["a_dev"]),
                                  _num(c["a_train"]), _num(c["cost"]), int(c["selectable"]), c["reason"])
                                 for i, c in enumerate(candidates)])

    def write_final(self, verdicts: Sequence[tuple], traces: Sequence[tuple], summary: Mapping[str, Any],
                    meta: Mapping[str, Any], matrix: Sequence[tuple] = ()) -> None:
        """The final verifier's per-item verdicts and traces, the pool's verdict matrix
        ``(op, split, item, verdict)``, the summary, and closing metadata."""
        with self.transaction():
            self.db.execute("DELETE FROM verdicts")
            self.db.execute("DELETE FROM traces")
            self.db.execute("DELETE FROM matrix")
            self.db.executemany("INSERT INTO matrix VALUES (?,?,?,?)", matrix)
            self.db.executemany("INSERT INTO verdicts VALUES (?,?,?,?,?,?)", verdicts)
            self.db.executemany("INSERT INTO traces VALUES (?,?,?,?,?)", traces)
            self.db.executemany("INSERT OR REPLACE INTO summary VALUES (?, ?)",
                                [(k, json_text(v)) for k, v in summary.items()])
            self._set_meta(meta)

    # --- reading ----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self.db.execute("SELECT key, value FROM meta ORDER BY key"):
            try:
                out[k] = json.loads(v) if k in ("config", "objective_constants", "seed_score") else v
            except json.JSONDecodeError:
                out[k] = v
        return out

    def rounds(self) -> list[dict[str, Any]]:
        cur = self.db.execute(f"SELECT {','.join(ROUND_COLUMNS)} FROM rounds ORDER BY round")
        rows = []
        for r in cur:
            d = dict(zip(ROUND_COLUMNS, r))
            d["state"] = json.loads(d["state"])
            d["audit"] = json.loads(d["audit"]) if d["audit"] else None
            rows.append(d)
        return rows

    def last_state(self) -> tuple[int, dict[str, Any]] | None:
        row = self.db.execute("SELECT round, state FROM rounds ORDER BY round DESC LIMIT 1").fetchone()
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def ops(self) -> list[dict[str, Any]]:
        cols = ("name", "origin", "status", "tier", "detects", "version", "uses_llm", "spec", "born_round", "description")
        out = []
        for r in self.db.execute(f"SELECT {','.join(cols)} FROM ops ORDER BY born_round, name"):
            d = dict(zip(cols, r))
            d["spec"] = json.loads(d["spec"]) if d["spec"] else None
            d["uses_llm"] = bool(d["uses_llm"])
            out.append(d)
        return out

    def events(self) -> list[dict[str, Any]]:
        cols = ("round", "op", "kind", "status", "reason", "evidence")
        return [dict(zip(cols, r[:5] + (json.loads(r[5]),)))
                for r in self.db.execute(f"SELECT {','.join(cols)} FROM events ORDER BY id")]

    def elites(self, round: int | None = None) -> list[dict[str, Any]]:
        if round is None:
            row = self.db.execute("SELECT MAX(round) FROM elites").fetchone()
            round = row[0] if row and row[0] is not None else 0
        cols = ("rank", "expression", "objective", "a_dev", "a_train")
        return [dict(zip(cols, r)) for r in
                self.db.execute(f"SELECT {','.join(cols)} FROM elites WHERE round=? ORDER BY rank", (round,))]

    def candidates(self, round: int) -> list[dict[str, Any]]:
        cols = ("rank", "expression", "composer", "objective", "a_dev", "a_train", "cost", "selectable", "reason")
        return [dict(zip(cols, r)) for r in
                self.db.execute(f"SELECT {','.join(cols)} FROM candidates WHERE round=? ORDER BY rank", (round,))]

    def verdicts(self, split: str | None = None) -> list[dict[str, Any]]:
        cols = ("split", "item", "task", "final", "expr", "label")
        q = f"SELECT {','.join(cols)} FROM verdicts" + (" WHERE split=?" if split else "") + " ORDER BY split, rowid"
        return [dict(zip(cols, r)) for r in self.db.execute(q, (split,) if split else ())]

    def traces(self, split: str | None = None) -> list[dict[str, Any]]:
        cols = ("split", "item", "op", "verdict", "message")
        q = f"SELECT {','.join(cols)} FROM traces" + (" WHERE split=?" if split else "") + " ORDER BY split, item, op"
        return [dict(zip(cols, r)) for r in self.db.execute(q, (split,) if split else ())]

    def matrix(self) -> dict[str, dict[str, int]]:
        """op → {item id → verdict code} of the pool's verdicts on train and dev items."""
        out: dict[str, dict[str, int]] = {}
        for op, item, v in self.db.execute("SELECT op, item, verdict FROM matrix"):
            out.setdefault(op, {})[item] = v
        return out

    def summary(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM summary ORDER BY key")}

    def truncate_after(self, round: int) -> None:
        """Drop everything recorded after ``round`` (used when resuming)."""
        with self.transaction():
            for table in ("rounds", "elites", "candidates", "events"):
                self.db.execute(f"DELETE FROM {table} WHERE round > ?", (round,))
            self.db.execute("DELETE FROM ops WHERE origin='synthesized' AND born_round > ?", (round,))


class _Tx:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def round_row(r: int, score: Any, *, incumbent: str, replaced: bool, candidates: int, selectable: int,
              statuses: Sequence[str], born: int, rejected: int, misses: int, gaps: int, seconds: float,
              state: Mapping[str, Any], audit: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``rounds`` row of round ``r`` (``score``: the incumbent's objective Score)."""
    return {"round": r, "objective": score.objective, "a_dev": score.a_dev, "a_train": score.a_train,
            "cost": score.cost, "incumbent": incumbent, "replaced": int(replaced),
            "candidates": candidates, "selectable": selectable,
            "n_active": list(statuses).count("active"), "n_shadow": list(statuses).count("shadow"),
            "n_retired": list(statuses).count("retired"), "born": born, "rejected": rejected, "misses": misses,
            "gaps": gaps, "seconds": seconds, "state": dict(state),
            "audit_agreement": None if audit is None else audit.get("agreement"), "audit": audit}


def op_rows(records: Mapping[str, Any], pool: Any, specs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``ops`` rows: every op the run knows (``records``: name → OpRecord), as the pool has it."""
    rows = []
    for name, rec in records.items():
        o = pool[name]
        rows.append({"name": name, "origin": rec.origin, "status": rec.status, "tier": o.tier, "detects": o.detects,
                     "version": o.version, "uses_llm": o.uses_llm, "spec": specs.get(name),
                     "born_round": rec.born_round, "description": o.description})
    return rows


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
