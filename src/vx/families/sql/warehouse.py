"""Warehouses: where SQL outputs run. DuckDB (default, embedded), SQLite and Snowflake behind one
interface.

A `Warehouse` runs one read-only query at a time with a time limit and a row cap, and never raises
for a bad query: `execute` returns a `QueryResult` whose ``error`` / ``error_kind`` say what went
wrong (``syntax``, ``runtime``, ``timeout``, or ``rejected`` for anything that is not a single
read query). Configuration problems (a missing database file, absent Snowflake credentials) raise
`WarehouseError` with what to do.

Read-only is enforced twice: the statement must parse (sqlglot, in the warehouse's dialect) as
one query (SELECT / WITH / set operation) — statements sqlglot cannot parse are left to the
engine on DuckDB and SQLite, which are opened read-only, and rejected on Snowflake, where only
the role's grants could stop a write — and the embedded engines open their files read-only.

Which warehouse an item runs on is part of its task record, a *warehouse spec*::

    {"backend": "duckdb", "source": "defog", "database": "academic"}   # built from defog-data on first use
    {"backend": "sqlite", "path": "/data/shop.sqlite"}
    {"backend": "sqlite", "source": "script", "script": "/data/x.sql", "sha256": "…"}   # vx.families.sql.scripts
    {"backend": "snowflake", "database": "SALES", "schema": "PUBLIC"}   # credentials: see SnowflakeWarehouse

Any of the file-based specs plus ``"variant": {"index", "seed", "version"}`` is a neighbour database
of it (:mod:`vx.families.sql.variants`), built on first use.

`session(spec)` returns this process's open warehouse for a spec, opening it on first use (a
forked worker opens its own); `close_sessions()` closes them, so a family run starts fresh.
"""

from __future__ import annotations

import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import VxError

DEFAULT_TIMEOUT = 5.0  # seconds per query
DEFAULT_MAX_ROWS = 10_000
DUCKDB_MEMORY_LIMIT = "1GB"
BACKENDS = ("duckdb", "sqlite", "snowflake")
ERROR_KINDS = ("syntax", "runtime", "timeout", "rejected")


class WarehouseError(VxError, RuntimeError):
    """A warehouse that cannot be opened (missing file, missing driver, missing credentials)."""


@attrs.frozen
class QueryResult:
    """What one query returned, or why it did not."""

    columns: tuple[str, ...] = ()
    rows: tuple[tuple[Any, ...], ...] = ()
    truncated: bool = False  # more rows existed than the row cap
    error: str | None = None
    error_kind: str | None = None  # one of ERROR_KINDS when error is set
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def as_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "rows": [list(r) for r in self.rows], "truncated": self.truncated,
                "error": self.error, "error_kind": self.error_kind, "seconds": self.seconds}


def read_only_problem(sql: str, dialect: str, *, strict: bool = False) -> str | None:
    """Why `sql` may not run on a read-only warehouse, or None when it may.

    A statement must be a single query. SQL that sqlglot cannot parse is allowed (the engine then
    reports the error) unless `strict`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (ParseError, TokenError) as exc:
        if strict:
            return f"the statement does not parse as {dialect} SQL, so it cannot be checked to be read-only ({exc})"
        return None
    if not trees:
        return "empty statement"
    if len(trees) > 1:
        return f"{len(trees)} statements; a query must be a single statement"
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        return f"{tree.key.upper()} is not a read query (only SELECT, WITH … SELECT and set operations run)"
    for node in tree.walk():
        if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Merge, exp.Alter,
                             exp.Into)):
            return f"{node.key.upper()} inside a query is not allowed on a read-only warehouse"
    return None


class Warehouse(ABC):
    """One open connection to a warehouse; not thread-safe (one query at a time)."""

    backend: str = ""
    dialect: str = ""  # sqlglot dialect name
    strict_read_only: bool = False  # reject SQL that sqlglot cannot parse

    def execute(self, sql: str, *, timeout: float = DEFAULT_TIMEOUT, max_rows: int = DEFAULT_MAX_ROWS) -> QueryResult:
        """Run one read query; never raises for a bad query."""
        t0 = time.perf_counter()
        problem = read_only_problem(sql, self.dialect, strict=self.strict_read_only)
        if problem is not None:
            return QueryResult(error=problem, error_kind="rejected", seconds=time.perf_counter() - t0)
        try:
            columns, rows, truncated = self._run(sql, timeout, max_rows)
        except _QueryFailed as exc:
            return QueryResult(error=exc.message, error_kind=exc.kind, seconds=time.perf_counter() - t0)
        return QueryResult(tuple(columns), tuple(tuple(r) for r in rows), truncated, seconds=time.perf_counter() - t0)

    @abstractmethod
    def _run(self, sql: str, timeout: float, max_rows: int) -> tuple[Sequence[str], Sequence[Sequence[Any]], bool]:
        """Execute; raise `_QueryFailed` for any query error."""

    @abstractmethod
    def tables(self) -> dict[str, list[tuple[str, str]]]:
        """Every table of the connected schema: name → [(column, type name)] in column order."""

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _QueryFailed(Exception):
    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.message, self.kind = _first_lines(message), kind


def _first_lines(msg: str, n: int = 4) -> str:
    lines = [ln for ln in str(msg).strip().splitlines() if ln.strip()]
    return "\n".join(lines[:n])


def _fetch(cursor: Any, max_rows: int) -> tuple[list[Any], bool]:
    rows = cursor.fetchmany(max_rows + 1)
    truncated = len(rows) > max_rows
    return list(rows[:max_rows]), truncated


# --------------------------------------------------------------------------- DuckDB


class DuckDBWarehouse(Warehouse):
    """An embedded DuckDB database file, opened read-only in this process."""

    backend = "duckdb"
    dialect = "duckdb"

    def __init__(self, path: str | Path) -> None:
        try:
            import duckdb
        except ModuleNotFoundError:
            raise WarehouseError("the DuckDB backend needs the duckdb package: pip install 'vx-verifiers[sql]'") from None
        self.path = Path(path)
        if not self.path.is_file():
            raise WarehouseError(f"DuckDB database {self.path} does not exist")
        self._duckdb = duckdb
        # one thread per connection: ops already run one item per worker process, and a query that
        # explodes (a cartesian product) hits the memory limit instead of the machine's memory
        self._con = duckdb.connect(str(self.path), read_only=True,
                                   config={"threads": 1, "memory_limit": DUCKDB_MEMORY_LIMIT})
        self._con.execute("SET enable_progress_bar = false")  # never draw on the user's terminal

    def _run(self, sql, timeout, max_rows):
        con = self._con
        timer = threading.Timer(timeout, con.interrupt) if timeout else None
        if timer is not None:
            timer.daemon = True
            timer.start()
        t0 = time.monotonic()
        try:
            cur = con.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = _fetch(cur, max_rows)
            return columns, rows, truncated
        except self._duckdb.InterruptException:
            raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
        except self._duckdb.ParserException as exc:
            raise _QueryFailed(str(exc), "syntax") from None
        except self._duckdb.Error as exc:
            if timeout and time.monotonic() - t0 >= timeout and "interrupt" in str(exc).lower():
                raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
            raise _QueryFailed(str(exc), "runtime") from None
        finally:
            if timer is not None:
                timer.cancel()

    def tables(self):
        rows = self._con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position").fetchall()
        out: dict[str, list[tuple[str, str]]] = {}
        for t, c, ty in rows:
            out.setdefault(t, []).append((c, str(ty)))
        return out

    def close(self) -> None:
        self._con.close()


# --------------------------------------------------------------------------- SQLite


class SQLiteWarehouse(Warehouse):
    """A SQLite database file, opened read-only (``mode=ro``)."""

    backend = "sqlite"
    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        import sqlite3

        self.path = Path(path)
        if not self.path.is_file():
            raise WarehouseError(f"SQLite database {self.path} does not exist")
        self._sqlite3 = sqlite3
        self._con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        self._deadline = 0.0
        self._con.set_progress_handler(self._progress, 1000)

    def _progress(self) -> int:
        return 1 if self._deadline and time.monotonic() > self._deadline else 0

    def _run(self, sql, timeout, max_rows):
        self._deadline = time.monotonic() + timeout if timeout else 0.0
        cur = self._con.cursor()
        try:
            cur.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = _fetch(cur, max_rows)
            return columns, rows, truncated
        except self._sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and self._deadline and time.monotonic() > self._deadline:
                raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
            kind = "syntax" if "syntax error" in str(exc) or "incomplete input" in str(exc) else "runtime"
            raise _QueryFailed(str(exc), kind) from None
        except (self._sqlite3.Error, ValueError) as exc:
            raise _QueryFailed(str(exc), "runtime") from None
        finally:
            self._deadline = 0.0
            cur.close()

    def tables(self):
        names = [r[0] for r in self._con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        out = {}
        for n in names:
            quoted = '"' + n.replace('"', '""') + '"'
            cols = self._con.execute(f"PRAGMA table_info({quoted})").fetchall()
            out[n] = [(c[1], c[2] or "") for c in cols]
        return out

    def close(self) -> None:
        self._con.close()


# --------------------------------------------------------------------------- Snowflake

SNOWFLAKE_ENV = {  # environment variable -> snowflake.connector.connect() keyword
    "SNOWFLAKE_ACCOUNT": "account",
    "SNOWFLAKE_USER": "user",
    "SNOWFLAKE_PASSWORD": "password",
    "SNOWFLAKE_ROLE": "role",
    "SNOWFLAKE_WAREHOUSE": "warehouse",
    "SNOWFLAKE_DATABASE": "database",
    "SNOWFLAKE_SCHEMA": "schema",
    "SNOWFLAKE_AUTHENTICATOR": "authenticator",
    "SNOWFLAKE_PRIVATE_KEY_FILE": "private_key_file",
    "SNOWFLAKE_TOKEN": "token",
    "SNOWFLAKE_HOST": "host",
}
_SNOWFLAKE_TIMEOUT_ERRNOS = {604, 630}  # statement canceled; statement reached its timeout


def snowflake_connections_file() -> Path:
    """The connections.toml the Snowflake tools read ($SNOWFLAKE_HOME/connections.toml, else the
    connector's default location)."""
    if os.environ.get("SNOWFLAKE_HOME"):
        return Path(os.environ["SNOWFLAKE_HOME"]).expanduser() / "connections.toml"
    try:
        from snowflake.connector.config_manager import CONNECTIONS_FILE

        return Path(CONNECTIONS_FILE)
    except Exception:  # the connector missing or unable to resolve its paths
        return Path.home() / ".snowflake" / "connections.toml"


def snowflake_credentials(connection_name: str | None = None,
                          environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Keyword arguments for ``snowflake.connector.connect`` from the standard configuration:
    the SNOWFLAKE_* environment variables when SNOWFLAKE_ACCOUNT is set, else a named (or the
    default) connection of connections.toml. Raises WarehouseError saying what to set when neither
    is there."""
    env = os.environ if environ is None else environ
    if env.get("SNOWFLAKE_ACCOUNT") and not connection_name:
        return {kw: env[var] for var, kw in SNOWFLAKE_ENV.items() if env.get(var)}
    path = snowflake_connections_file()
    name = connection_name or env.get("SNOWFLAKE_DEFAULT_CONNECTION_NAME") or "default"
    if path.is_file():
        import tomllib

        try:
            known = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise WarehouseError(f"{path}: cannot read the Snowflake connections file ({exc})") from None
        if not connection_name and "default_connection_name" in known:
            name = str(known["default_connection_name"])
        if name in known and isinstance(known[name], dict):
            return {"connection_name": name}
        raise WarehouseError(f"{path} has no connection named {name!r} (it has: "
                             f"{', '.join(k for k, v in known.items() if isinstance(v, dict)) or 'none'})")
    raise WarehouseError(
        "no Snowflake credentials: set SNOWFLAKE_ACCOUNT, SNOWFLAKE_USER and SNOWFLAKE_PASSWORD (or "
        "SNOWFLAKE_AUTHENTICATOR / SNOWFLAKE_PRIVATE_KEY_FILE; optionally SNOWFLAKE_WAREHOUSE, SNOWFLAKE_ROLE), "
        f"or add a [{name}] connection to {path}")


class SnowflakeWarehouse(Warehouse):
    """Snowflake through ``snowflake-connector-python``.

    Credentials come from the standard configuration (see `snowflake_credentials`); the spec's
    ``database`` / ``schema`` / ``warehouse`` / ``role`` override them. Every statement must parse as
    one Snowflake query (the connector cannot open a session read-only; give the role read grants
    only). The time limit is the session's STATEMENT_TIMEOUT_IN_SECONDS."""

    backend = "snowflake"
    dialect = "snowflake"
    strict_read_only = True

    def __init__(self, *, database: str | None = None, schema: str | None = None, warehouse: str | None = None,
                 role: str | None = None, connection_name: str | None = None,
                 connect: Callable[..., Any] | None = None) -> None:
        if connect is None:
            try:
                import snowflake.connector
            except ModuleNotFoundError:
                raise WarehouseError("the Snowflake backend needs snowflake-connector-python: "
                                     "pip install 'vx-verifiers[sql]'") from None
            connect = snowflake.connector.connect
        kwargs = snowflake_credentials(connection_name)
        for k, v in (("database", database), ("schema", schema), ("warehouse", warehouse), ("role", role)):
            if v:
                kwargs[k] = v
        self.database, self.schema = kwargs.get("database"), kwargs.get("schema")
        try:
            self._con = connect(**kwargs)
        except Exception as exc:  # the connector's own error says what failed (auth, network, account)
            where = kwargs.get("connection_name") or kwargs.get("account", "?")
            raise WarehouseError(f"cannot connect to Snowflake ({where}): {_first_lines(str(exc), 2)}") from None
        self._timeout: float | None = None

    def _set_timeout(self, cur: Any, timeout: float) -> None:
        seconds = max(1, int(round(timeout))) if timeout else 0
        if seconds != self._timeout:
            cur.execute(f"ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = {seconds}")
            self._timeout = seconds

    def _run(self, sql, timeout, max_rows):
        cur = self._con.cursor()
        try:
            self._set_timeout(cur, timeout)
            cur.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = _fetch(cur, max_rows)
            return columns, rows, truncated
        except Exception as exc:
            errno = getattr(exc, "errno", None)
            if errno in _SNOWFLAKE_TIMEOUT_ERRNOS:
                raise _QueryFailed(f"query stopped by the {timeout:g}s statement timeout ({exc})", "timeout") from None
            kind = "syntax" if errno == 1003 or "syntax error" in str(exc).lower() else "runtime"
            raise _QueryFailed(str(exc), kind) from None
        finally:
            cur.close()

    def tables(self):
        cur = self._con.cursor()
        try:
            cur.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                        "WHERE table_schema = CURRENT_SCHEMA() ORDER BY table_name, ordinal_position")
            out: dict[str, list[tuple[str, str]]] = {}
            for t, c, ty in cur.fetchall():
                out.setdefault(t, []).append((c, str(ty)))
            return out
        finally:
            cur.close()

    def close(self) -> None:
        self._con.close()


# --------------------------------------------------------------------------- specs and sessions


def spec_key(spec: Mapping[str, Any]) -> str:
    return json.dumps(dict(spec), sort_keys=True, default=str)


def open_warehouse(spec: Mapping[str, Any]) -> Warehouse:
    """A new warehouse connection for a spec (see the module docstring)."""
    backend = spec.get("backend", "duckdb")
    if backend not in BACKENDS:
        raise WarehouseError(f"unknown warehouse backend {backend!r}; known: {', '.join(BACKENDS)}")
    if backend == "snowflake":
        return SnowflakeWarehouse(database=spec.get("database"), schema=spec.get("schema"),
                                  warehouse=spec.get("warehouse"), role=spec.get("role"),
                                  connection_name=spec.get("connection"))
    if isinstance(spec.get("variant"), Mapping):  # a neighbour database (vx.families.sql.variants)
        from vx.families.sql.variants import DataError as VariantError
        from vx.families.sql.variants import materialize as build_variant

        try:
            path = build_variant(spec)
        except VariantError as exc:
            raise WarehouseError(str(exc)) from None
    elif spec.get("path"):
        path = Path(str(spec["path"])).expanduser()
    elif spec.get("source") == "script":  # a SQLite SQL script (vx.families.sql.scripts)
        from vx.families.sql.scripts import DataError as ScriptError
        from vx.families.sql.scripts import materialize as build_script

        try:
            path = build_script(spec)
        except ScriptError as exc:
            raise WarehouseError(str(exc)) from None
    elif spec.get("source") == "defog":
        from vx.families.sql.defog import DataError, materialize

        try:
            path = materialize(str(spec.get("database")), backend)
        except DataError as exc:
            raise WarehouseError(str(exc)) from None
    else:
        raise WarehouseError(f"warehouse spec {dict(spec)} names no database: give \"path\", "
                             "\"source\": \"script\" with a \"script\" and its \"sha256\", or "
                             "\"source\": \"defog\" with a \"database\"")
    return DuckDBWarehouse(path) if backend == "duckdb" else SQLiteWarehouse(path)


_SESSIONS: dict[tuple[int, str], Warehouse] = {}
_FAILED: dict[tuple[int, str], WarehouseError] = {}
_LOCK = threading.Lock()


def session(spec: Mapping[str, Any]) -> Warehouse:
    """This process's open warehouse for `spec` (opened on first use; a forked child opens its own).
    A warehouse that cannot be opened raises the same WarehouseError on every later call without
    trying again (no repeated connection timeouts), until `close_sessions()`."""
    key = (os.getpid(), spec_key(spec))
    with _LOCK:
        if key in _FAILED:
            raise _FAILED[key]
        wh = _SESSIONS.get(key)
        if wh is None:
            try:
                wh = _SESSIONS[key] = open_warehouse(spec)
            except WarehouseError as exc:
                _FAILED[key] = exc
                raise
        return wh


def close_sessions() -> None:
    """Close this process's warehouses (the next `session` call opens a fresh connection)."""
    with _LOCK:
        for (pid, _), wh in list(_SESSIONS.items()):
            if pid == os.getpid():
                try:
                    wh.close()
                except Exception:
                    pass
        _SESSIONS.clear()
        _FAILED.clear()


__all__ = ["BACKENDS", "DEFAULT_MAX_ROWS", "DEFAULT_TIMEOUT", "DuckDBWarehouse", "QueryResult", "SQLiteWarehouse",
           "SnowflakeWarehouse", "Warehouse", "WarehouseError", "close_sessions", "open_warehouse",
           "read_only_problem", "session", "snowflake_credentials"]
