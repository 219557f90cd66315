"""The SQL family's real data: defog-data's database dumps and the defog question files.

* **Databases.** The PyPI package ``defog-data`` (Apache-2.0) ships seven small PostgreSQL dumps
  (``pg_dump`` text format: ``CREATE TABLE`` statements followed by ``COPY … FROM stdin`` blocks).
  `parse_pg_dump` reads one into `TableDump` records; `materialize` loads those into a local
  DuckDB or SQLite file in a cache directory, once, so that a fresh machine rebuilds the exact
  same database offline from the installed package. Nothing here talks to PostgreSQL.
* **Questions.** defog's ``sql-eval`` question files (CSV: ``db_name, query_category, query,
  question, instructions``). A ``query`` cell holds one or more acceptable gold queries separated
  by ``;``; in the PostgreSQL file a query may also use defog's column-alternative braces
  (``SELECT {a.name, a.id} … GROUP BY {}``), which `expand_gold` turns into one query per
  non-empty column subset, exactly as sql-eval does.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import itertools
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.inputs import untrusted_reason

DEFOG_PACKAGE = "defog_data"
DEFOG_DATABASES = ("academic", "advising", "atis", "geography", "restaurants", "scholar", "yelp")


# --------------------------------------------------------------------------- dumps


@attrs.frozen
class Column:
    name: str
    type: str  # a portable type name: BIGINT, INTEGER, DOUBLE, REAL, DECIMAL, BOOLEAN, TEXT, DATE, TIME, TIMESTAMP


@attrs.frozen
class TableDump:
    name: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]


# PostgreSQL type (as pg_dump prints it) -> portable type. Longest names first.
_PG_TYPES: tuple[tuple[str, str], ...] = (
    ("timestamp without time zone", "TIMESTAMP"),
    ("timestamp with time zone", "TIMESTAMP"),
    ("time without time zone", "TIME"),
    ("double precision", "DOUBLE"),
    ("character varying", "TEXT"),
    ("character", "TEXT"),
    ("timestamp", "TIMESTAMP"),
    ("bigint", "BIGINT"),
    ("smallint", "INTEGER"),
    ("integer", "INTEGER"),
    ("numeric", "DOUBLE"),  # PostgreSQL numeric is arbitrary precision; DOUBLE keeps every digit these dumps hold
    ("real", "REAL"),
    ("boolean", "BOOLEAN"),
    ("text", "TEXT"),
    ("date", "DATE"),
    ("time", "TIME"),
)

_CREATE = re.compile(r"CREATE TABLE (?:\w+\.)?\"?(\w+)\"? \((.*?)\n\);", re.S)
_COPY = re.compile(r"^COPY (?:\w+\.)?\"?(\w+)\"? \((.*?)\) FROM stdin;\n(.*?)^\\\.$", re.S | re.M)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _portable_type(pg: str, where: str) -> str:
    pg = pg.lower().strip()
    for name, portable in _PG_TYPES:
        if pg == name or pg.startswith(name + "(") or pg.startswith(name + " "):
            return portable
    raise DataError(f"{where}: unsupported column type {pg!r}")


def _column_def(line: str, where: str) -> Column | None:
    line = line.strip().rstrip(",")
    if not line or line.upper().startswith(("CONSTRAINT", "PRIMARY KEY", "UNIQUE", "FOREIGN KEY", "CHECK")):
        return None
    m = re.match(r"\"?(\w+)\"?\s+(.*)$", line)
    if m is None:
        raise DataError(f"{where}: cannot read the column definition {line!r}")
    name, rest = m.groups()
    rest = re.split(r"\s+(?:DEFAULT|NOT NULL|NULL|PRIMARY KEY|UNIQUE|REFERENCES|CHECK|COLLATE)\b", rest, maxsplit=1)[0]
    return Column(name, _portable_type(rest, where))


def _unescape(field: str) -> str | None:
    """One COPY text-format field: ``\\N`` is NULL; backslash escapes as PostgreSQL defines them."""
    if field == r"\N":
        return None
    if "\\" not in field:
        return field

    def sub(m: re.Match) -> str:
        s = m.group(1)
        if s[0] in _ESCAPES:
            return _ESCAPES[s[0]] + s[1:]
        if s[0] == "x":
            return chr(int(s[1:], 16))
        if s[0].isdigit():
            return chr(int(s, 8))
        return s

    return re.sub(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", sub, field)


def _convert(value: str | None, typ: str, where: str) -> Any:
    if value is None:
        return None
    try:
        if typ in ("BIGINT", "INTEGER"):
            return int(value)
        if typ in ("DOUBLE", "REAL"):
            return float(value)
        if typ == "BOOLEAN":
            return {"t": True, "true": True, "f": False, "false": False}[value.lower()]
        if typ == "DATE":
            return dt.date.fromisoformat(value)
        if typ == "TIME":
            return dt.time.fromisoformat(value)
        if typ == "TIMESTAMP":
            return dt.datetime.fromisoformat(value)
    except (ValueError, KeyError) as exc:
        raise DataError(f"{where}: value {value!r} is not a valid {typ}") from exc
    return value


def parse_pg_dump(text: str, source: str = "<dump>") -> list[TableDump]:
    """The tables of a ``pg_dump`` text file (schema and ``COPY`` data), in definition order."""
    tables: dict[str, list[Column]] = {}
    for m in _CREATE.finditer(text):
        name = m.group(1)
        line0 = text.count("\n", 0, m.start()) + 1
        cols = [c for c in (_column_def(ln, f"{source}:{line0}") for ln in m.group(2).split("\n")) if c]
        tables[name] = cols
    data: dict[str, list[tuple[Any, ...]]] = {name: [] for name in tables}
    for m in _COPY.finditer(text):
        name = m.group(1)
        line0 = text.count("\n", 0, m.start()) + 1
        if name not in tables:
            raise DataError(f"{source}:{line0}: COPY into table {name!r}, which the dump never creates")
        by_name = {c.name: c for c in tables[name]}
        copy_cols = [c.strip().strip('"') for c in m.group(2).split(",")]
        unknown = [c for c in copy_cols if c not in by_name]
        if unknown:
            raise DataError(f"{source}:{line0}: COPY names unknown column(s) {unknown} of {name!r}")
        order = [c.name for c in tables[name]]
        for k, row in enumerate(m.group(3).split("\n")[:-1], 1):
            where = f"{source}:{line0 + k}"
            fields = row.split("\t")
            if len(fields) != len(copy_cols):
                raise DataError(f"{where}: {len(fields)} fields for the {len(copy_cols)} columns of {name!r}")
            values = {c: _convert(_unescape(f), by_name[c].type, where) for c, f in zip(copy_cols, fields)}
            data[name].append(tuple(values.get(c) for c in order))
    return [TableDump(n, tuple(cols), tuple(data[n])) for n, cols in tables.items()]


def _defog_root() -> Path:
    try:
        import importlib.resources as resources

        return Path(str(resources.files(DEFOG_PACKAGE)))
    except ModuleNotFoundError:
        raise DataError(
            "the SQL family's databases come from the PyPI package 'defog-data', which is not "
            "installed; run: pip install 'vx-verifiers[sql]'"
        ) from None


def defog_dump_path(database: str) -> Path:
    if database not in DEFOG_DATABASES:
        raise DataError(f"unknown defog database {database!r}; defog-data ships {', '.join(DEFOG_DATABASES)}")
    path = _defog_root() / database / f"{database}.sql"
    if not path.is_file():
        raise DataError(
            f"{path} is missing from the installed defog-data package; reinstall it "
            "(pip install --force-reinstall defog-data)"
        )
    return path


def load_defog_dump(database: str) -> list[TableDump]:
    path = defog_dump_path(database)
    return parse_pg_dump(path.read_text(encoding="utf-8"), str(path))


def defog_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("defog-data")
    except PackageNotFoundError:
        _defog_root()  # raises the install hint
        return "unknown"


# --------------------------------------------------------------------------- local database files


def cache_dir() -> Path:
    """Where built databases live: ``$VX_SQL_CACHE``, else ``$XDG_CACHE_HOME/vx/sql`` (~/.cache/vx/sql)."""
    if os.environ.get("VX_SQL_CACHE"):
        return Path(os.environ["VX_SQL_CACHE"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vx" / "sql"


def built(path: Path) -> bool:
    """Whether a database file of the SQL cache is already built -- and may be used: one that another user
    owns or may write (a shared, world-writable ``VX_SQL_CACHE``) could have been replaced by a database
    that makes wrong queries match, so it is a DataError saying so (:func:`vx.inputs.untrusted_reason`)."""
    if not path.exists():
        return False
    untrusted = untrusted_reason(path, "built database")
    if untrusted is not None:
        raise DataError(f"{untrusted}; set VX_SQL_CACHE to a directory of your own")
    return True


def _dump_digest(database: str) -> str:
    return hashlib.sha256(defog_dump_path(database).read_bytes()).hexdigest()[:12]


def _engine_tag(engine: str) -> str:
    """DuckDB files are tied to the storage format of the DuckDB that wrote them: name the version,
    so that another DuckDB builds its own file instead of failing to open this one."""
    if engine != "duckdb":
        return ""
    import duckdb

    return "-duckdb" + duckdb.__version__


def materialize(database: str, engine: str = "duckdb", directory: Path | None = None) -> Path:
    """The local database file of a defog database for `engine` ("duckdb" or "sqlite"), built on
    first use from the installed dump. The file name carries the dump's content hash (and the DuckDB
    version), so a changed dump or engine yields a new file; building goes to a temporary file renamed into place (safe
    when several processes build at once)."""
    if engine not in ("duckdb", "sqlite"):
        raise DataError(f"cannot build a local database for engine {engine!r} (duckdb or sqlite)")
    directory = Path(directory) if directory is not None else cache_dir()
    path = directory / f"defog-{database}-{_dump_digest(database)}{_engine_tag(engine)}.{engine}"
    if built(path):
        return path
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{path.name}.{os.getpid()}.tmp"
    if tmp.exists():
        tmp.unlink()
    tables = load_defog_dump(database)
    try:
        if engine == "duckdb":
            _write_duckdb(tmp, tables)
        else:
            _write_sqlite(tmp, tables)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _write_duckdb(path: Path, tables: Sequence[TableDump]) -> None:
    import duckdb

    con = duckdb.connect(str(path))
    try:
        for t in tables:
            cols = ", ".join(f"{_quote(c.name)} {c.type}" for c in t.columns)
            con.execute(f"CREATE TABLE {_quote(t.name)} ({cols})")
            if t.rows:
                marks = ", ".join("?" for _ in t.columns)
                con.executemany(f"INSERT INTO {_quote(t.name)} VALUES ({marks})", [list(r) for r in t.rows])
        con.execute("CHECKPOINT")
    finally:
        con.close()


_SQLITE_TYPES = {
    "BIGINT": "INTEGER",
    "INTEGER": "INTEGER",
    "DOUBLE": "REAL",
    "REAL": "REAL",
    "BOOLEAN": "INTEGER",
    "TEXT": "TEXT",
    "DATE": "TEXT",
    "TIME": "TEXT",
    "TIMESTAMP": "TEXT",
}


def _sqlite_value(v: Any) -> Any:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, (dt.date, dt.time, dt.datetime)):
        return v.isoformat(sep=" ") if isinstance(v, dt.datetime) else v.isoformat()
    return v


def _write_sqlite(path: Path, tables: Sequence[TableDump]) -> None:
    import sqlite3

    con = sqlite3.connect(str(path))
    try:
        for t in tables:
            cols = ", ".join(f"{_quote(c.name)} {_SQLITE_TYPES[c.type]}" for c in t.columns)
            con.execute(f"CREATE TABLE {_quote(t.name)} ({cols})")
            marks = ", ".join("?" for _ in t.columns)
            con.executemany(
                f"INSERT INTO {_quote(t.name)} VALUES ({marks})", [[_sqlite_value(v) for v in r] for r in t.rows]
            )
        con.commit()
    finally:
        con.close()


# --------------------------------------------------------------------------- questions


@attrs.frozen
class Question:
    """One defog question: its gold queries (every acceptable variant, braces expanded)."""

    id: str
    database: str
    category: str
    question: str
    instructions: str
    gold: tuple[str, ...]
    line: int


def split_statements(sql: str) -> list[str]:
    """Split on ``;`` outside quotes and comments; empty statements are dropped."""
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(sql)
    quote: str | None = None
    while i < n:
        ch = sql[i]
        if quote:
            buf.append(ch)
            if ch == quote:
                if i + 1 < n and sql[i + 1] == quote:  # doubled quote inside a literal
                    buf.append(sql[i + 1])
                    i += 1
                else:
                    quote = None
        elif ch in ("'", '"'):
            quote = ch
            buf.append(ch)
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            buf.append(sql[i:j])
            i = j
            continue
        elif ch == ";":
            stmt = "".join(buf).strip()
            if stmt:
                out.append(stmt)
            buf = []
        else:
            buf.append(ch)
        i += 1
    stmt = "".join(buf).strip()
    if stmt:
        out.append(stmt)
    return out


_BRACES = re.compile(r"\{([^{}]*)\}")


def expand_braces(sql: str) -> list[str]:
    """defog's column alternatives: each non-empty ``{a, b}`` becomes every non-empty subset of its
    columns (in their order), and an empty ``{}`` repeats the subset chosen for the group before it
    (``GROUP BY {}``). A query without braces is returned as is."""
    groups = [m for m in _BRACES.finditer(sql)]
    if not groups:
        return [sql]
    choices: list[list[str]] = []
    for m in groups:
        if m.group(1).strip():
            cols = [c.strip() for c in m.group(1).split(",") if c.strip()]
            choices.append([", ".join(s) for r in range(1, len(cols) + 1) for s in itertools.combinations(cols, r)])
    out: list[str] = []
    for combo in itertools.product(*choices):
        it = iter(combo)
        last = ""
        parts: list[str] = []
        pos = 0
        for m in groups:
            parts.append(sql[pos : m.start()])
            if m.group(1).strip():
                last = next(it)
            parts.append(last)
            pos = m.end()
        parts.append(sql[pos:])
        out.append("".join(parts))
    return out


def expand_gold(cell: str) -> list[str]:
    """Every acceptable gold query of a CSV ``query`` cell, deduplicated, in order."""
    seen: dict[str, None] = {}
    for stmt in split_statements(cell):
        for q in expand_braces(stmt):
            seen.setdefault(" ".join(q.split()), None)
    return list(seen)


def load_questions(path: str | Path, databases: Iterable[str] = DEFOG_DATABASES) -> list[Question]:
    """Questions of a defog CSV whose database is in `databases` (others are skipped: their dumps
    are not in defog-data). Ids are ``<db>/<n>`` with n counting that database's rows from 0."""
    path = Path(path)
    wanted = set(databases)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(
            f"{path}: questions file not found (defog's sql-eval data/questions_gen_postgres.csv; see docs/sql.md)"
        ) from None
    reader = csv.DictReader(text.splitlines(keepends=True))
    need = {"db_name", "query", "question"}
    if not reader.fieldnames or not need <= set(reader.fieldnames):
        raise DataError(f"{path}: expected CSV columns {sorted(need)}, found {reader.fieldnames}")
    counters: dict[str, int] = {}
    out: list[Question] = []
    for row in reader:
        db = row["db_name"].strip()
        n = counters.get(db, 0)
        counters[db] = n + 1
        if db not in wanted:
            continue
        gold = expand_gold(row["query"])
        if not gold:
            raise DataError(f"{path}:{reader.line_num}: question without a gold query")
        out.append(
            Question(
                f"{db}/{n}",
                db,
                (row.get("query_category") or "").strip(),
                row["question"].strip(),
                (row.get("instructions") or "").strip(),
                tuple(gold),
                reader.line_num,
            )
        )
    return out


__all__ = [
    "Column",
    "DEFOG_DATABASES",
    "DataError",
    "Question",
    "TableDump",
    "cache_dir",
    "defog_dump_path",
    "defog_version",
    "expand_braces",
    "expand_gold",
    "load_defog_dump",
    "load_questions",
    "materialize",
    "parse_pg_dump",
    "split_statements",
]
