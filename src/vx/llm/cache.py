"""The LLM disk cache and usage ledger: one SQLite file, safe for several processes at once.

``responses`` maps a request key — sha256 of the canonical JSON of (model, full request, optional
tag) — to the response the API gave. Only successful responses are stored: an error is never
cached, so a rerun retries it. Rerunning anything with the same configuration is therefore free
and gives the same answers.

``ledger`` records every call a run made (cache hits included, at zero cost), with its tokens and
cost. A run's budget is checked against the ledger, so worker processes of the same run share one
budget; a run's usage summary (stored in its run file) is read from it.

Location: ``cache`` in the LLM configuration, ``$VX_LLM_CACHE``, else ``~/.cache/vx/llm.sqlite``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger (
    run TEXT NOT NULL,
    role TEXT NOT NULL,
    model TEXT NOT NULL,
    key TEXT NOT NULL,
    cached INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    retries INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS ledger_run ON ledger (run);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    run TEXT NOT NULL,
    role TEXT NOT NULL,
    requests TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL
) WITHOUT ROWID;
"""


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Mapping[str, Any], tag: str | None = None) -> str:
    """The cache key of a request: its model and every field sent, plus an optional tag
    (e.g. a sample index, so that several samples of one prompt are cached separately)."""
    blob = canonical({"model": request.get("model"), "request": request, "tag": tag})
    return hashlib.sha256(blob.encode()).hexdigest()


class ResponseCache:
    """Responses by request key, and the per-run usage ledger."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pid = os.getpid()
        self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
        return db

    @property
    def db(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:  # a forked worker: never share the parent's connection
            self._pid = os.getpid()
            self._db = self._connect()
        return self._db

    def close(self) -> None:
        self._db.close()

    # --- responses ----------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT response FROM responses WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, request: Mapping[str, Any], response: Mapping[str, Any]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?)",
            (key, str(request.get("model", "")), canonical(request), canonical(response), time.time()),
        )

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    # --- message batches (see vx.llm.batch) -----------------------------------------------------
    def add_batch(self, batch_id: str, run: str, role: str, requests: Mapping[str, Mapping[str, Any]]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?,?)",
            (batch_id, run, role, canonical(requests), "pending", time.time()),
        )

    def pending_batches(self) -> list[tuple[str, str, str, dict[str, Any]]]:
        """(batch id, run, role, {key: request}) of submitted batches whose results are not collected yet."""
        rows = self.db.execute("SELECT id, run, role, requests FROM batches WHERE status='pending' ORDER BY created")
        return [(b, r, role, json.loads(reqs)) for b, r, role, reqs in rows]

    def finish_batch(self, batch_id: str) -> None:
        self.db.execute("UPDATE batches SET status='done' WHERE id=?", (batch_id,))

    # --- ledger -------------------------------------------------------------------------------
    def record(
        self,
        run: str,
        role: str,
        model: str,
        key: str,
        *,
        cached: bool,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_write_tokens: int = 0,
        cache_read_tokens: int = 0,
        cost_usd: float = 0.0,
        retries: int = 0,
        error: str | None = None,
    ) -> None:
        self.db.execute(
            "INSERT INTO ledger VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                run,
                role,
                model,
                key,
                int(cached),
                input_tokens,
                output_tokens,
                cache_write_tokens,
                cache_read_tokens,
                cost_usd,
                retries,
                error,
                time.time(),
            ),
        )

    def spent(self, run: str) -> tuple[int, float]:
        """(tokens, USD) spent by a run on API calls (cache hits cost nothing)."""
        row = self.db.execute(
            "SELECT COALESCE(SUM(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens), 0),"
            " COALESCE(SUM(cost_usd), 0) FROM ledger WHERE run=? AND cached=0",
            (run,),
        ).fetchone()
        return int(row[0]), float(row[1])

    def usage(self, run: str) -> dict[str, Any]:
        """A run's usage summary: totals and one entry per (role, model)."""
        rows = self.db.execute(
            "SELECT role, model, SUM(cached=0 AND error IS NULL), SUM(cached), SUM(error IS NOT NULL),"
            " SUM(input_tokens), SUM(output_tokens), SUM(cache_write_tokens), SUM(cache_read_tokens),"
            " SUM(cost_usd), SUM(retries) FROM ledger WHERE run=? GROUP BY role, model ORDER BY role, model",
            (run,),
        ).fetchall()
        fields = (
            "api_calls",
            "cache_hits",
            "errors",
            "input_tokens",
            "output_tokens",
            "cache_write_tokens",
            "cache_read_tokens",
            "cost_usd",
            "retries",
        )
        per = [{"role": r[0], "model": r[1], **{f: (v or 0) for f, v in zip(fields, r[2:], strict=True)}} for r in rows]
        total = {f: sum(p[f] for p in per) for f in fields}
        total["cost_usd"] = round(float(total["cost_usd"]), 6)
        for p in per:
            p["cost_usd"] = round(float(p["cost_usd"]), 6)
        return {"run": run, **total, "by_role": per}
