"""Warehouses: where SQL outputs run. DuckDB (default, embedded), SQLite and Snowflake behind one
interface.

A `Warehouse` runs one read-only query at a time with a time limit, a row cap and a cap on the memory
its result takes (:data:`MAX_RESULT_BYTES`), and never raises for a bad query: `execute` returns a
`QueryResult` whose ``error`` / ``error_kind`` say what went wrong (``syntax``, ``runtime``, ``timeout``,
or ``rejected`` for anything that is not a single read query). Configuration problems (a missing
database file, absent Snowflake credentials) raise `WarehouseError` with what to do.

Read-only does not depend on a parser. A statement must first parse (sqlglot, in the warehouse's
dialect) as one query (SELECT / WITH / set operation); statements sqlglot cannot parse are
rejected on Snowflake, where only the role's grants could stop a write, and left to the engine on
DuckDB and SQLite, whose own guards hold whatever the statement is:

* **SQLite**: every query runs on a fresh connection (so nothing one prediction does, such as a TEMP
  table shadowing a real one, is seen by the next), opened ``mode=ro``, with ``PRAGMA query_only``,
  no database may be attached (``SQLITE_LIMIT_ATTACHED`` = 0) and an authorizer that allows only
  reading (SELECT, reading columns, calling functions, recursive CTEs): ATTACH, DETACH, CREATE, DROP,
  INSERT, UPDATE, DELETE, PRAGMA, transactions, VACUUM and ``load_extension`` are refused
  (``rejected``). Eponymous virtual tables (``json_each``, ``pragma_table_info``) are refused with them.
* **DuckDB**: the file is opened ``read_only``, without access to the file system or extensions
  (``enable_external_access = false``, no auto-install or auto-load, ``lock_configuration``), every
  query runs on a fresh connection to it (DuckDB's TEMP objects and ``SET`` search paths live in
  their connection) and must be one statement DuckDB's own parser types as SELECT.

So a prediction cannot write a host file, read one, reach the verdict cache or change what another
prediction sees.

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
import sqlite3
import sys
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
#: The most memory (bytes, ``sys.getsizeof`` of the rows and their values) a query's result may take in this
#: process: past it the query fails as ``runtime`` ("the result is too large"), so a prediction such as
#: ``SELECT zeroblob(100000000) FROM t`` is its own drawback instead of the grader's MemoryError. The largest
#: result of a real prediction on the shared Spider and defog data is far below it (docs/hostile.md).
MAX_RESULT_BYTES = 64 << 20
#: SQLite's longest string or BLOB (``SQLITE_LIMIT_LENGTH``): a longer value is an error inside the engine,
#: before any memory is taken for it.
SQLITE_MAX_LENGTH = 16 << 20
DUCKDB_MEMORY_LIMIT = "1GB"
# one thread per connection: ops already run one item per worker process, and a query that explodes (a
# cartesian product) hits the memory limit instead of the machine's memory; no file system, no extensions,
# and no statement changes a setting (the progress bar stays off: it would draw on the user's terminal)
DUCKDB_CONFIG: dict[str, str | int] = {
    "threads": 1,
    "memory_limit": DUCKDB_MEMORY_LIMIT,
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}
BACKENDS = ("duckdb", "sqlite", "snowflake")
#: What a failed query's ``error_kind`` may be; "nondeterministic" is said by the family's shared execution
#: (:func:`vx.families.sql.ops.item.execution`: two runs gave different results), never by a warehouse.
ERROR_KINDS = ("syntax", "runtime", "timeout", "rejected", "nondeterministic")


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
        return {
            "columns": list(self.columns),
            "rows": [list(r) for r in self.rows],
            "truncated": self.truncated,
            "error": self.error,
            "error_kind": self.error_kind,
            "seconds": self.seconds,
        }


def read_only_problem(sql: str, dialect: str, *, strict: bool = False) -> str | None:
    """Why `sql` may not run on a read-only warehouse, or None when it may.

    A statement must be a single query. SQL that sqlglot cannot parse is allowed (the engine then
    reports the error) unless `strict`."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = [t for t in sqlglot.parse(sql, read=dialect) if t is not None]
    except (ParseError, TokenError, RecursionError, MemoryError) as exc:  # nested past the parser: not parsed
        if strict:
            why = str(exc) if isinstance(exc, (ParseError, TokenError)) else f"{type(exc).__name__} in the parser"
            return f"the statement does not parse as {dialect} SQL, so it cannot be checked to be read-only ({why})"
        return None
    if not trees:
        return "empty statement"
    if len(trees) > 1:
        return f"{len(trees)} statements; a query must be a single statement"
    tree = trees[0]
    if not isinstance(tree, exp.Query):
        return f"{tree.key.upper()} is not a read query (only SELECT, WITH … SELECT and set operations run)"
    for node in tree.walk():
        if isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Create, exp.Drop, exp.Merge, exp.Alter, exp.Into)):
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
        except MemoryError:  # what the query asked for does not fit: the query's failure, not the grader's
            return QueryResult(
                error="the query's result does not fit in memory",
                error_kind="runtime",
                seconds=time.perf_counter() - t0,
            )
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


def _fetch(cursor: Any, max_rows: int, max_bytes: int = MAX_RESULT_BYTES) -> tuple[list[Any], bool]:
    """At most `max_rows` rows (and whether there were more), fetched in batches sized to what is left of
    `max_bytes`; a result taking more than `max_bytes` fails the query (:data:`MAX_RESULT_BYTES`)."""
    rows: list[Any] = []
    used, batch = 0, 1
    while len(rows) <= max_rows:
        got = cursor.fetchmany(min(batch, max_rows + 1 - len(rows)))
        if not got:
            break
        size = sum(_row_bytes(r) for r in got)
        used += size
        if used > max_bytes:
            raise _QueryFailed(
                f"the result is too large: more than {max_bytes >> 20} MiB in its first {len(rows) + len(got)} row(s)",
                "runtime",
            )
        rows.extend(got)
        batch = max(1, min(1024, (max_bytes - used) // max(1, size // len(got)) // 2))
    truncated = len(rows) > max_rows
    return rows[:max_rows], truncated


def _row_bytes(row: Any) -> int:
    return sys.getsizeof(row) + sum(map(sys.getsizeof, row))


# --------------------------------------------------------------------------- DuckDB


class DuckDBWarehouse(Warehouse):
    """An embedded DuckDB database file, opened read-only in this process."""

    backend = "duckdb"
    dialect = "duckdb"

    def __init__(self, path: str | Path) -> None:
        try:
            import duckdb
        except ModuleNotFoundError:
            raise WarehouseError(
                "the DuckDB backend needs the duckdb package: pip install 'vx-verifiers[sql]'"
            ) from None
        self.path = Path(path)
        if not self.path.is_file():
            raise WarehouseError(f"DuckDB database {self.path} does not exist")
        self._duckdb = duckdb
        # DuckDB shares one instance per file within a process, so the configuration is given, never SET
        self._con = duckdb.connect(str(self.path), read_only=True, config=dict(DUCKDB_CONFIG))

    def _run(self, sql, timeout, max_rows):
        con = self._con.cursor()  # a fresh connection to the database: its TEMP objects die with it
        timer = threading.Timer(timeout, con.interrupt) if timeout else None
        t0 = time.monotonic()
        try:
            statements = con.extract_statements(sql)
            if len(statements) != 1 or statements[0].type != self._duckdb.StatementType.SELECT:
                kinds = ", ".join(str(st.type.name) for st in statements) or "no statement"
                raise _QueryFailed(f"DuckDB reads this as {kinds}; only one read query (SELECT) runs", "rejected")
            if timer is not None:
                timer.daemon = True
                timer.start()
            cur = con.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = _fetch(cur, max_rows)
            return columns, rows, truncated
        except self._duckdb.InterruptException:
            raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
        except self._duckdb.ParserException as exc:
            raise _QueryFailed(str(exc), "syntax") from None
        except self._duckdb.PermissionException as exc:
            raise _QueryFailed(str(exc), "rejected") from None
        except self._duckdb.Error as exc:
            if timeout and time.monotonic() - t0 >= timeout and "interrupt" in str(exc).lower():
                raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
            raise _QueryFailed(str(exc), "runtime") from None
        finally:
            if timer is not None:
                timer.cancel()
            con.close()

    def tables(self):
        rows = self._con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ).fetchall()
        out: dict[str, list[tuple[str, str]]] = {}
        for t, c, ty in rows:
            out.setdefault(t, []).append((c, str(ty)))
        return out

    def close(self) -> None:
        self._con.close()


# --------------------------------------------------------------------------- SQLite


class SQLiteWarehouse(Warehouse):
    """A SQLite database file, read on a fresh guarded connection per query (see the module docstring)."""

    backend = "sqlite"
    dialect = "sqlite"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise WarehouseError(f"SQLite database {self.path} does not exist")
        self._uri = f"{self.path.resolve().as_uri()}?mode=ro"
        self._con = self._connect()  # for tables(): our own catalogue reads, never a prediction's SQL
        self._deadline = 0.0

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
        try:
            con.execute("PRAGMA query_only = ON")
            con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)
        except sqlite3.Error as exc:
            con.close()
            raise WarehouseError(f"SQLite database {self.path} cannot be opened read-only ({exc})") from None
        return con

    def _progress(self) -> int:
        return 1 if self._deadline and time.monotonic() > self._deadline else 0

    def _run(self, sql, timeout, max_rows):
        self._deadline = time.monotonic() + timeout if timeout else 0.0
        con = self._connect()  # a fresh connection per query: nothing a query leaves behind is seen again
        con.set_authorizer(_sqlite_authorizer)
        con.set_progress_handler(self._progress, 1000)
        cur = con.cursor()
        try:
            cur.execute(sql)
            columns = [d[0] for d in cur.description or ()]
            rows, truncated = _fetch(cur, max_rows)
            return columns, rows, truncated
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) and self._deadline and time.monotonic() > self._deadline:
                raise _QueryFailed(f"query interrupted after the {timeout:g}s time limit", "timeout") from None
            raise _QueryFailed(str(exc), _sqlite_error_kind(str(exc))) from None
        except sqlite3.ProgrammingError as exc:  # several statements, or parameters (?) with no bindings
            raise _QueryFailed(str(exc), "rejected" if "one statement" in str(exc) else "runtime") from None
        except (sqlite3.Error, ValueError) as exc:
            raise _QueryFailed(str(exc), _sqlite_error_kind(str(exc))) from None
        finally:
            self._deadline = 0.0
            cur.close()
            con.close()

    def tables(self):
        names = [
            r[0]
            for r in self._con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        out = {}
        for n in names:
            quoted = '"' + n.replace('"', '""') + '"'
            cols = self._con.execute(f"PRAGMA table_info({quoted})").fetchall()
            out[n] = [(c[1], c[2] or "") for c in cols]
        return out

    def close(self) -> None:
        self._con.close()


_SQLITE_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)


def _sqlite_authorizer(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    """Allow reading only (see the module docstring)."""
    if action not in _SQLITE_READ_ACTIONS:
        return sqlite3.SQLITE_DENY
    if arg2 is not None and arg2.lower() == "load_extension":  # SQLITE_FUNCTION: arg2 is the function's name
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _sqlite_error_kind(message: str) -> str:
    if "not authorized" in message or "authorization denied" in message or "readonly" in message:
        return "rejected"
    if "syntax error" in message or "incomplete input" in message:
        return "syntax"
    return "runtime"


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


def snowflake_credentials(
    connection_name: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
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
        raise WarehouseError(
            f"{path} has no connection named {name!r} (it has: "
            f"{', '.join(k for k, v in known.items() if isinstance(v, dict)) or 'none'})"
        )
    raise WarehouseError(
        "no Snowflake credentials: set SNOWFLAKE_ACCOUNT, SNOWFLAKE_USER and SNOWFLAKE_PASSWORD (or "
        "SNOWFLAKE_AUTHENTICATOR / SNOWFLAKE_PRIVATE_KEY_FILE; optionally SNOWFLAKE_WAREHOUSE, SNOWFLAKE_ROLE), "
        f"or add a [{name}] connection to {path}"
    )


class SnowflakeWarehouse(Warehouse):
    """Snowflake through ``snowflake-connector-python``.

    Credentials come from the standard configuration (see `snowflake_credentials`); the spec's
    ``database`` / ``schema`` / ``warehouse`` / ``role`` override them. Every statement must parse as
    one Snowflake query (the connector cannot open a session read-only; give the role read grants
    only). The time limit is the session's STATEMENT_TIMEOUT_IN_SECONDS."""

    backend = "snowflake"
    dialect = "snowflake"
    strict_read_only = True

    def __init__(
        self,
        *,
        database: str | None = None,
        schema: str | None = None,
        warehouse: str | None = None,
        role: str | None = None,
        connection_name: str | None = None,
        connect: Callable[..., Any] | None = None,
    ) -> None:
        if connect is None:
            try:
                import snowflake.connector
            except ModuleNotFoundError:
                raise WarehouseError(
                    "the Snowflake backend needs snowflake-connector-python: pip install 'vx-verifiers[sql]'"
                ) from None
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
            cur.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = CURRENT_SCHEMA() ORDER BY table_name, ordinal_position"
            )
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
        return SnowflakeWarehouse(
            database=spec.get("database"),
            schema=spec.get("schema"),
            warehouse=spec.get("warehouse"),
            role=spec.get("role"),
            connection_name=spec.get("connection"),
        )
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
        raise WarehouseError(
            f'warehouse spec {dict(spec)} names no database: give "path", '
            '"source": "script" with a "script" and its "sha256", or '
            '"source": "defog" with a "database"'
        )
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


__all__ = [
    "BACKENDS",
    "DEFAULT_MAX_ROWS",
    "DEFAULT_TIMEOUT",
    "DuckDBWarehouse",
    "QueryResult",
    "SQLiteWarehouse",
    "SnowflakeWarehouse",
    "Warehouse",
    "WarehouseError",
    "close_sessions",
    "open_warehouse",
    "read_only_problem",
    "session",
    "snowflake_credentials",
]
