"""Databases shipped as SQLite SQL scripts (``CREATE TABLE`` + ``INSERT``, the form Spider's databases
take in ``../shared/data/sql/spider/databases/``), built once into local SQLite files.

A task names such a database with a warehouse spec::

    {"backend": "sqlite", "source": "script", "database": "concert_singer",
     "script": "/data/spider/databases/concert_singer.sql", "sha256": "3f0c…"}

`materialize(spec)` returns the local file, building it on first use into the SQL cache
(:func:`vx.families.sql.defog.cache_dir`): the file name carries the script's content hash, so a
changed script yields a new file, and a file already built is used even when the script has since
moved. Building goes to a temporary file renamed into place, so several processes may build at once.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vx.errors import DataError
from vx.families.sql.defog import built, cache_dir

DIGEST_CHARS = 16


def script_digest(path: str | os.PathLike[str]) -> str:
    """The content hash a spec carries for a script (hex, :data:`DIGEST_CHARS` characters)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:DIGEST_CHARS]


def script_spec(path: str | os.PathLike[str], database: str | None = None) -> dict[str, Any]:
    """The warehouse spec of a script database (the script's absolute path and content hash)."""
    p = Path(path).resolve()
    return {
        "backend": "sqlite",
        "source": "script",
        "database": database or p.stem,
        "script": str(p),
        "sha256": script_digest(p),
    }


def database_file(spec: Mapping[str, Any], directory: Path | None = None) -> Path:
    """Where the local file of a script spec lives (whether or not it is built yet)."""
    name = str(spec.get("database") or "db")
    digest = str(spec.get("sha256") or "")
    if not digest:
        raise DataError(f'script database spec {dict(spec)} has no "sha256"; write it with script_spec(path)')
    return (Path(directory) if directory is not None else cache_dir()) / "script" / f"{name}-{digest}.sqlite"


def write_atomically(path: Path, fill: Callable[[sqlite3.Connection], object]) -> Path:
    """A new SQLite file at `path`, filled by ``fill(connection)`` in a temporary file that is then
    renamed into place (so that several processes may build the same file at once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        con = sqlite3.connect(str(tmp))
        try:
            fill(con)
            con.commit()
        finally:
            con.close()
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def build_file(text: str, path: Path) -> Path:
    """Run a SQL script into a new SQLite file at `path`."""
    try:
        return write_atomically(path, lambda con: con.executescript(text))
    except sqlite3.Error as exc:
        raise DataError(f"{path.name}: the SQL script does not run in SQLite ({exc})") from None


def materialize(spec: Mapping[str, Any], directory: Path | None = None) -> Path:
    """The local SQLite file of a script spec, built from the script on first use. Raises DataError
    naming the script when it is missing or its content no longer has the spec's hash."""
    path = database_file(spec, directory)
    if built(path):
        return path
    script = Path(str(spec.get("script") or ""))
    if not script.is_file():
        raise DataError(
            f"the database {spec.get('database')!r} is not built in {path.parent} and its script "
            f"{script} does not exist: rebuild the family (vx data build spider --data-dir DIR)"
        )
    raw = script.read_bytes()
    if hashlib.sha256(raw).hexdigest()[:DIGEST_CHARS] != spec.get("sha256"):
        raise DataError(
            f"{script}: the script changed since the family was built (its sha256 is no longer "
            f"{spec.get('sha256')}); rebuild the family"
        )
    return build_file(raw.decode("utf-8"), path)


__all__ = [
    "DIGEST_CHARS",
    "build_file",
    "database_file",
    "materialize",
    "script_digest",
    "script_spec",
    "write_atomically",
]
