"""The ratchet run file: one SQLite file holding every arm of a run.

Tables (JSON columns hold canonical JSON):

    meta      key → value: format (vx-ratchet/2), family and its directory, config, the held-out parts
              (``heldout``: protocol, rollback tasks, report tasks), LLM run id, status, ``demo`` (a scripted run)
    rounds    one row per committed skill round of an arm (round 0 = the frozen solver, empty bank): the
              rollback part's score of the bank in force (after a rollback: the restored bank's), the rollback
              part's and the report part's scores measured for the round's own bank, the round whose bank is in
              force and whose held-out outputs belong to it (``bank_round``); the training grader's pass rate
              and mean score, bank size, births, removals, rollback flag, the synthesizer's report, the grader,
              the loop state (what a resume restarts from; it holds no report-part number).
              `RatchetStore.rounds` adds ``report_score``: the report part's score of the bank in force (the
              ``report_measured`` of its ``bank_round``)
    attempts  every solver attempt: arm, round, kind (train | heldout), task, routed and included skills,
              output, passed, score, the grader's named failed checks, the reply's LLM cache key
    capsules  the failure capsules of each round (task, output, checks) as shown to the synthesizer
    skills    every skill an arm ever had: lesson, when, round of birth, origin, status
              (active | evicted | retired | rolled_back), round of removal, last measured contribution
    events    the bank's life: born, evicted, retired, rolled_back, restored (with reason and evidence)
    phases    co arms: each verifier phase (rounds, the verifier it ended with, its typed specs, its validity
              on the locked split — an audit of the verifier, never a signal — and where its run file is)
    judge     final pairwise judge verdicts: arm, rubric, task, the two rounds compared, each order's
              preference, the outcome (win / loss / tie) and both raw replies
    summary   key → JSON: the figures of `vx.ratchet.figures`

Each skill round is written in one transaction: a killed run loses at most the round in progress, and
resuming from the last committed round writes the same rows the uninterrupted run would have.

Reading is validated here, in one place: `RatchetStore` refuses a file that is not a run of this format
(``vx-ratchet/1`` files, written before the held-out tasks were split in two, are named as such), and
`RatchetStore.parts` checks the held-out parts a run recorded.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import VxError
from vx.evolve.store import StorableConnection, json_text

FORMAT = "vx-ratchet/2"
OLD_FORMATS = {"vx-ratchet/1": "rollback and report read the same held-out tasks"}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rounds (
    arm TEXT NOT NULL, round INTEGER NOT NULL, phase INTEGER NOT NULL, rollback_score REAL, rollback_measured REAL,
    report_measured REAL, bank_round INTEGER NOT NULL, train_pass REAL, train_score REAL, train_n INTEGER NOT NULL,
    bank_size INTEGER NOT NULL, born INTEGER NOT NULL, removed INTEGER NOT NULL, rolled_back INTEGER NOT NULL,
    synth TEXT NOT NULL, grader TEXT NOT NULL, state TEXT NOT NULL, seconds REAL NOT NULL,
    PRIMARY KEY (arm, round));
CREATE TABLE IF NOT EXISTS attempts (
    arm TEXT NOT NULL, round INTEGER NOT NULL, kind TEXT NOT NULL, task TEXT NOT NULL, routed TEXT NOT NULL,
    included TEXT NOT NULL, output TEXT NOT NULL, passed INTEGER NOT NULL, score REAL NOT NULL,
    checks TEXT NOT NULL, reply_key TEXT NOT NULL, PRIMARY KEY (arm, round, kind, task));
CREATE TABLE IF NOT EXISTS capsules (
    arm TEXT NOT NULL, round INTEGER NOT NULL, task TEXT NOT NULL, output TEXT NOT NULL, checks TEXT NOT NULL,
    PRIMARY KEY (arm, round, task));
CREATE TABLE IF NOT EXISTS skills (
    arm TEXT NOT NULL, name TEXT NOT NULL, lesson TEXT NOT NULL, "when" TEXT NOT NULL, born INTEGER NOT NULL,
    origin TEXT NOT NULL, status TEXT NOT NULL, removed_round INTEGER, contribution TEXT,
    PRIMARY KEY (arm, name));
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, arm TEXT NOT NULL, round INTEGER NOT NULL, skill TEXT NOT NULL,
    kind TEXT NOT NULL, reason TEXT NOT NULL, evidence TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS phases (
    arm TEXT NOT NULL, phase INTEGER NOT NULL, rounds INTEGER NOT NULL, total_rounds INTEGER NOT NULL,
    first_skill_round INTEGER NOT NULL, verifier TEXT NOT NULL, specs TEXT NOT NULL, validity TEXT NOT NULL,
    run_file TEXT NOT NULL, PRIMARY KEY (arm, phase));
CREATE TABLE IF NOT EXISTS judge (
    arm TEXT NOT NULL, against TEXT NOT NULL, rubric TEXT NOT NULL, task TEXT NOT NULL, old_round INTEGER NOT NULL,
    new_round INTEGER NOT NULL, first TEXT NOT NULL, second TEXT NOT NULL, outcome TEXT NOT NULL,
    raw_first TEXT NOT NULL, raw_second TEXT NOT NULL, PRIMARY KEY (arm, against, rubric, task));
CREATE TABLE IF NOT EXISTS summary (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

ROUND_COLUMNS = (
    "arm",
    "round",
    "phase",
    "rollback_score",
    "rollback_measured",
    "report_measured",
    "bank_round",
    "train_pass",
    "train_score",
    "train_n",
    "bank_size",
    "born",
    "removed",
    "rolled_back",
    "synth",
    "grader",
    "state",
    "seconds",
)
ATTEMPT_COLUMNS = (
    "arm",
    "round",
    "kind",
    "task",
    "routed",
    "included",
    "output",
    "passed",
    "score",
    "checks",
    "reply_key",
)
SKILL_COLUMNS = ("arm", "name", "lesson", "when", "born", "origin", "status", "removed_round", "contribution")
EVENT_COLUMNS = ("arm", "round", "skill", "kind", "reason", "evidence")
PHASE_COLUMNS = (
    "arm",
    "phase",
    "rounds",
    "total_rounds",
    "first_skill_round",
    "verifier",
    "specs",
    "validity",
    "run_file",
)
JUDGE_COLUMNS = (
    "arm",
    "against",
    "rubric",
    "task",
    "old_round",
    "new_round",
    "first",
    "second",
    "outcome",
    "raw_first",
    "raw_second",
)
_JSON = {
    "synth",
    "grader",
    "state",
    "routed",
    "included",
    "checks",
    "origin",
    "contribution",
    "evidence",
    "specs",
    "validity",
}
#: what a round's loop state must hold for a resume (the keys `vx.ratchet.loop` reads), and their kinds
STATE_KEYS: dict[str, type | tuple[type, ...]] = {
    "bank": list,
    "removed": list,
    "rollback_ref": (int, float, type(None)),
    "bank_round": int,
}


class RatchetStoreError(VxError):
    """A file that is not a ratchet run, or one whose records are damaged (the message names the table,
    the column and the record)."""


def _column_kinds(schema: str) -> dict[str, dict[str, tuple[type | tuple[type, ...], bool]]]:
    """table → column → (the Python types its values may have, NULL allowed), read off SCHEMA."""
    kinds: dict[str, dict[str, tuple[type | tuple[type, ...], bool]]] = {}
    for block in schema.split("CREATE TABLE IF NOT EXISTS ")[1:]:
        table, _, body = block.partition(" (")
        cols = kinds.setdefault(table.strip(), {})
        for part in body.replace("\n", " ").split(","):
            words = part.split()
            if len(words) < 2 or words[0] in ("PRIMARY", "KEY") or words[1] not in ("TEXT", "INTEGER", "REAL"):
                continue
            types: type | tuple[type, ...] = {"TEXT": str, "INTEGER": int}.get(words[1], (int, float))
            cols[words[0].strip('"')] = (types, "NOT NULL" not in " ".join(words[2:4]))
    return kinds


#: the expected type of every column vx reads (a ratchet file with text where a number belongs is
#: damaged: RatchetStoreError, never a traceback in the report)
COLUMN_KINDS = _column_kinds(SCHEMA)
#: meta keys holding JSON, and the kind of value each must decode to
_META_JSON: dict[str, type | tuple[type, ...]] = {
    "config": dict,
    "arms": list,
    "llm": dict,
    "llm_usage": dict,
    "ground_truth": dict,
    "heldout": dict,
    "demo": (dict, bool),
}


def is_ratchet_run(path: str | Path) -> bool:
    try:
        db = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError:
        return False
    return bool(row) and (row[0] == FORMAT or row[0] in OLD_FORMATS)  # an old one is refused by name on opening


class RatchetStore:
    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise RatchetStoreError(f"{self.path}: no such run file")
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = StorableConnection(sqlite3.connect(self.path, isolation_level=None, timeout=30.0))
            self.db.execute("PRAGMA journal_mode=WAL")
            if create:
                self.db.executescript(SCHEMA)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('format', ?)", (FORMAT,))
            row = self.db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise RatchetStoreError(f"{self.path}: not a vx ratchet run file ({exc})") from None
        if row and row[0] in OLD_FORMATS:
            self.db.close()
            raise RatchetStoreError(
                f"{self.path}: a {row[0]} run file, written by an older vx ({OLD_FORMATS[row[0]]}); "
                f"this vx reads {FORMAT}: run the arms again"
            )
        if not row or row[0] != FORMAT:
            self.db.close()
            raise RatchetStoreError(f"{self.path}: not a vx ratchet run file (no '{FORMAT}' marker)")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RatchetStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tx(self) -> _Tx:
        return _Tx(self.db)

    # --- writing ----------------------------------------------------------------------------
    def set_meta(self, values: Mapping[str, Any]) -> None:
        with self._tx():
            self.db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [(k, v if isinstance(v, str) else json_text(v)) for k, v in values.items()],
            )

    @staticmethod
    def _row(cols: Sequence[str], d: Mapping[str, Any]) -> list[Any]:
        out = []
        for c in cols:
            v = d.get(c)
            if c in _JSON:
                v = json_text(v if v is not None else ({} if c != "contribution" else None))
            elif isinstance(v, bool):
                v = int(v)
            elif isinstance(v, float) and not math.isfinite(v):
                v = None
            out.append(v)
        return out

    def write_round(
        self,
        row: Mapping[str, Any],
        *,
        attempts: Iterable[Mapping[str, Any]],
        capsules: Iterable[Mapping[str, Any]],
        skills: Iterable[Mapping[str, Any]],
        events: Iterable[Mapping[str, Any]],
    ) -> None:
        """Everything one skill round produced, atomically."""
        q = lambda cols: ",".join('"when"' if c == "when" else c for c in cols)  # noqa: E731
        with self._tx():
            self.db.execute(
                f"INSERT OR REPLACE INTO rounds ({q(ROUND_COLUMNS)}) VALUES ({','.join('?' * len(ROUND_COLUMNS))})",
                self._row(ROUND_COLUMNS, row),
            )
            self.db.executemany(
                f"INSERT OR REPLACE INTO attempts ({q(ATTEMPT_COLUMNS)}) VALUES "
                f"({','.join('?' * len(ATTEMPT_COLUMNS))})",
                [self._row(ATTEMPT_COLUMNS, a) for a in attempts],
            )
            self.db.executemany(
                "INSERT OR REPLACE INTO capsules (arm, round, task, output, checks) VALUES (?,?,?,?,?)",
                [self._row(("arm", "round", "task", "output", "checks"), c) for c in capsules],
            )
            self.db.executemany(
                f"INSERT OR REPLACE INTO skills ({q(SKILL_COLUMNS)}) VALUES ({','.join('?' * len(SKILL_COLUMNS))})",
                [self._row(SKILL_COLUMNS, s) for s in skills],
            )
            self.db.executemany(
                f"INSERT INTO events ({q(EVENT_COLUMNS)}) VALUES ({','.join('?' * len(EVENT_COLUMNS))})",
                [self._row(EVENT_COLUMNS, e) for e in events],
            )

    def write_phase(self, row: Mapping[str, Any]) -> None:
        with self._tx():
            self.db.execute(
                f"INSERT OR REPLACE INTO phases ({','.join(PHASE_COLUMNS)}) VALUES "
                f"({','.join('?' * len(PHASE_COLUMNS))})",
                self._row(PHASE_COLUMNS, row),
            )

    def write_judge(self, rows: Iterable[Mapping[str, Any]]) -> None:
        with self._tx():
            self.db.executemany(
                f"INSERT OR REPLACE INTO judge ({','.join(JUDGE_COLUMNS)}) VALUES "
                f"({','.join('?' * len(JUDGE_COLUMNS))})",
                [self._row(JUDGE_COLUMNS, r) for r in rows],
            )

    def write_summary(self, summary: Mapping[str, Any]) -> None:
        with self._tx():
            self.db.executemany(
                "INSERT OR REPLACE INTO summary VALUES (?, ?)", [(k, json_text(v)) for k, v in summary.items()]
            )

    def truncate_after(self, arm: str, round_: int) -> None:
        """Drop whatever of `arm` was recorded after `round_` (nothing, unless a file was edited by hand)."""
        with self._tx():
            for table in ("rounds", "attempts", "capsules", "events"):
                self.db.execute(f"DELETE FROM {table} WHERE arm=? AND round > ?", (arm, round_))

    # --- reading ----------------------------------------------------------------------------
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.db.execute(sql, tuple(args)).fetchall()
        except sqlite3.DatabaseError as exc:  # a missing table or column, a damaged page
            raise RatchetStoreError(f"{self.path}: damaged ratchet run file ({exc})") from None

    def _json(self, text: Any, where: str, kind: type | tuple[type, ...] | None = None) -> Any:
        try:
            if not isinstance(text, str):
                raise ValueError(f"a {type(text).__name__}, not JSON text")
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise RatchetStoreError(
                f"{self.path}: damaged ratchet run file: {where} is not valid JSON ({str(exc)[:120]})"
            ) from None
        if kind is not None and value is not None and not isinstance(value, kind):
            raise RatchetStoreError(
                f"{self.path}: damaged ratchet run file: {where} is a JSON "
                f"{type(value).__name__}, expected a JSON {'list' if kind is list else 'object'}"
            )
        return value

    def meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in self._query("SELECT key, value FROM meta ORDER BY key"):
            out[k] = self._json(v, f"meta.{k}", _META_JSON[k]) if k in _META_JSON else v
        return out

    def _select(
        self, table: str, cols: Sequence[str], where: str = "", args: Sequence[Any] = (), order: str = ""
    ) -> list[dict[str, Any]]:
        names = ",".join('"when"' if c == "when" else c for c in cols)
        sql = (
            f"SELECT {names} FROM {table}"
            + (f" WHERE {where}" if where else "")
            + (f" ORDER BY {order}" if order else "")
        )
        kinds = COLUMN_KINDS.get(table, {})
        out = []
        for n, r in enumerate(self._query(sql, args), 1):
            d = dict(zip(cols, r))
            where = " ".join(f"{k} {d[k]!r}" for k in ("arm", "round", "task", "name") if k in d and k in cols)
            for c in cols:
                types, nullable = kinds.get(c, (object, True))
                value = d[c]
                if (value is None and not nullable) or (
                    value is not None
                    and (
                        not isinstance(value, types)
                        or isinstance(value, bool)
                        or (isinstance(value, float) and not math.isfinite(value))
                    )
                ):
                    shown = "NULL" if value is None else repr(value)[:60]
                    raise RatchetStoreError(
                        f"{self.path}: damaged ratchet run file: {table}.{c} of row {n} "
                        f"({where}) is {shown}, expected "
                        f"{'text' if types is str else 'an integer' if types is int else 'a number'}"
                    )
                if c in _JSON and value is not None:
                    d[c] = self._json(value, f"{table}.{c} of row {n} ({where})")
            if table == "rounds" and "state" in cols:
                self._check_state(d["state"], f"rounds.state of row {n} ({where})")
            out.append(d)
        return out

    def _check_state(self, state: Any, where: str) -> None:
        if not isinstance(state, dict):
            raise RatchetStoreError(
                f"{self.path}: damaged ratchet run file: {where} is a JSON {type(state).__name__}, "
                "expected an object (the loop state a resume restarts from)"
            )
        for key, kind in STATE_KEYS.items():
            value = state.get(key)
            if key not in state or not isinstance(value, kind) or isinstance(value, bool):
                raise RatchetStoreError(
                    f"{self.path}: damaged ratchet run file: {where} has "
                    + (
                        f"no {key!r}"
                        if key not in state
                        else f"{key!r} = {repr(value)[:40]}, "
                        f"not {'a list' if kind is list else 'an integer' if kind is int else 'a number'}"
                    )
                )

    def rounds(self, arm: str | None = None) -> list[dict[str, Any]]:
        """Committed rounds, with ``report_score``: the report part's score of the bank in force."""
        rows = self._select("rounds", ROUND_COLUMNS, "arm=?" if arm else "", (arm,) if arm else (), "arm, round")
        measured = {(r["arm"], r["round"]): r["report_measured"] for r in rows}
        for r in rows:
            r["report_score"] = measured.get((r["arm"], r["bank_round"]))
        return rows

    def last_round(self, arm: str) -> dict[str, Any] | None:
        rows = self._select(
            "rounds", ROUND_COLUMNS, "arm=? AND round=(SELECT MAX(round) FROM rounds WHERE arm=?)", (arm, arm)
        )
        return rows[0] if rows else None

    def attempts(
        self, arm: str | None = None, kind: str | None = None, round_: int | None = None
    ) -> list[dict[str, Any]]:
        conds, args = [], []
        for c, v in (("arm", arm), ("kind", kind), ("round", round_)):
            if v is not None:
                conds.append(f"{c}=?")
                args.append(v)
        rows = self._select("attempts", ATTEMPT_COLUMNS, " AND ".join(conds), args, "arm, round, kind, rowid")
        for r in rows:
            r["passed"] = bool(r["passed"])
        return rows

    def capsules(self, arm: str | None = None) -> list[dict[str, Any]]:
        return self._select(
            "capsules",
            ("arm", "round", "task", "output", "checks"),
            "arm=?" if arm else "",
            (arm,) if arm else (),
            "arm, round, rowid",
        )

    def skills(self, arm: str | None = None) -> list[dict[str, Any]]:
        return self._select("skills", SKILL_COLUMNS, "arm=?" if arm else "", (arm,) if arm else (), "arm, born, name")

    def events(self, arm: str | None = None) -> list[dict[str, Any]]:
        return self._select("events", EVENT_COLUMNS, "arm=?" if arm else "", (arm,) if arm else (), "id")

    def phases(self, arm: str | None = None) -> list[dict[str, Any]]:
        return self._select("phases", PHASE_COLUMNS, "arm=?" if arm else "", (arm,) if arm else (), "arm, phase")

    def judge(self, arm: str | None = None) -> list[dict[str, Any]]:
        return self._select(
            "judge", JUDGE_COLUMNS, "arm=?" if arm else "", (arm,) if arm else (), "arm, against, rubric, task"
        )

    def parts(self) -> dict[str, Any]:
        """The held-out parts the run recorded: ``{"protocol", "rollback_tasks", "report_tasks"}`` (checked)."""
        d: Any = self.meta().get("heldout")
        ok = (
            isinstance(d, Mapping)
            and d.get("protocol") in ("two-part", "papers")
            and all(
                isinstance(d.get(k), list) and d[k] and all(isinstance(t, str) for t in d[k])
                for k in ("rollback_tasks", "report_tasks")
            )
        )
        if not ok:
            raise RatchetStoreError(f"{self.path}: the run's held-out parts (meta 'heldout') are missing or damaged")
        if d["protocol"] == "two-part" and set(d["rollback_tasks"]) & set(d["report_tasks"]):
            raise RatchetStoreError(f"{self.path}: the rollback and report parts of a two-part run share tasks")
        return {
            "protocol": d["protocol"],
            "rollback_tasks": list(d["rollback_tasks"]),
            "report_tasks": list(d["report_tasks"]),
        }

    def summary(self) -> dict[str, Any]:
        return {k: self._json(v, f"summary.{k}") for k, v in self._query("SELECT key, value FROM summary ORDER BY key")}

    def arms(self) -> list[str]:
        """The arms with rounds, in the run's order (oracle first)."""
        have = [r[0] for r in self._query("SELECT DISTINCT arm FROM rounds ORDER BY arm")]
        order = list((self.meta().get("config") or {}).get("arms") or [])
        return [a for a in order if a in have] + [a for a in have if a not in order]


class _Tx:
    def __init__(self, db: Any) -> None:  # a sqlite3.Connection or the run file's StorableConnection
        self.db = db

    def __enter__(self) -> Any:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
