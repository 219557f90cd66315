"""Reading a file a user named: one bounded reader for every path vx reads from a person (``.vx``
files and the ``; specs:`` file they name, a family's ``seed =``, family files, tasks and samples
files, ``vx check`` / ``vx fmt`` targets, evaluations given to ``vx report``), and one reader of
JSON lines (:func:`read_json_lines`, :func:`parse_json_lines`) for every such file vx reads.

The file is opened without blocking and checked on its descriptor before a byte is read: a FIFO
(which would hang), a device such as ``/dev/zero`` (which never ends), a directory or a socket is
refused, and so is a regular file larger than the limit (``MAX_INPUT_MB``, 512 MiB by default,
``$VX_MAX_INPUT_MB`` to change it). Each refusal is an :class:`InputFileError` naming the file, what
it is, and what to do. A ``.gz`` file given to :func:`read_json_lines` is decompressed within the
same limit. Depends on nothing of vx but its errors and :func:`vx.text.file_lines`.

A JSON-lines text is split at ``"\n"`` only (:func:`vx.text.file_lines`: U+2028 and the other
characters ``str.splitlines()`` also splits at are valid inside a JSON string); blank lines are
passed over; a line that is not JSON (or, where objects are asked for, not a JSON object) is an
error naming the file, the line and what to do, or is handed to the caller's ``skip``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from vx.errors import DataError
from vx.text import file_lines

__all__ = [
    "InputFileError",
    "JsonLine",
    "MAX_INPUT_MB",
    "input_limit",
    "parse_json_lines",
    "read_input_bytes",
    "read_input_text",
    "read_json_lines",
    "untrusted_reason",
]

#: the default size limit of a file vx reads from a user, in MiB (``$VX_MAX_INPUT_MB`` overrides it)
MAX_INPUT_MB = 512


class InputFileError(DataError):
    """A file a user named cannot be read as asked (not a regular file, too large, not UTF-8...)."""


def input_limit() -> int:
    """The size limit in bytes: ``$VX_MAX_INPUT_MB`` (a positive number of MiB) or :data:`MAX_INPUT_MB`."""
    raw = os.environ.get("VX_MAX_INPUT_MB", "").strip()
    if raw:
        try:
            mb = float(raw)
        except ValueError:
            mb = 0.0
        if not mb > 0 or mb != mb or mb == float("inf"):
            raise InputFileError(f"VX_MAX_INPUT_MB={raw!r}: give a positive number of MiB (default {MAX_INPUT_MB})")
        return int(mb * 2**20)
    return MAX_INPUT_MB * 2**20


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def read_input_bytes(
    path: str | os.PathLike[str],
    what: str = "file",
    *,
    limit: int | None = None,
    error: type[Exception] = InputFileError,
) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in messages, e.g. "specs file"), at
    most ``limit`` bytes (default :func:`input_limit`); anything else raises ``error`` (an
    :class:`InputFileError` unless the caller's layer has its own kind) naming the file."""
    path = Path(path)
    limit = input_limit() if limit is None else limit
    try:
        # O_NONBLOCK: opening a FIFO never waits for a writer; the descriptor is checked below.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{path}: cannot read the {what}: no such file") from None
    except IsADirectoryError:
        raise error(f"{path}: cannot read the {what}: it is a directory, not a regular file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise error(
                f"{path}: cannot read the {what}: it is {_kind(st.st_mode)}, not a regular file; "
                "give the path of a file"
            )
        if st.st_size > limit:
            raise error(
                f"{path}: cannot read the {what}: it is {st.st_size / 2**20:.1f} MiB, more than vx reads "
                f"({limit / 2**20:.0f} MiB); split it, or raise the limit with VX_MAX_INPUT_MB"
            )
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while being read
                raise error(
                    f"{path}: cannot read the {what}: it grew past what vx reads ({limit / 2**20:.0f} MiB); "
                    "split it, or "
                    "raise the limit with VX_MAX_INPUT_MB"
                )
        return b"".join(chunks)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_input_text(
    path: str | os.PathLike[str],
    what: str = "file",
    *,
    limit: int | None = None,
    error: type[Exception] = InputFileError,
    hint: str = "",
) -> str:
    """:func:`read_input_bytes` decoded as UTF-8 (a byte-order mark is dropped); text that is not
    UTF-8 names the line and byte (``hint``: what to do, default: re-save it as UTF-8)."""
    return _utf8(read_input_bytes(path, what, limit=limit, error=error), path, what, error, hint)


def _utf8(data: bytes, path: str | os.PathLike[str], what: str, error: type[Exception], hint: str) -> str:
    """``data`` decoded as UTF-8 (a byte-order mark dropped); otherwise ``error`` naming the line and byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"{hint or f'save the {what} as UTF-8'}"
        ) from None


class JsonLine(NamedTuple):
    """One non-blank line of a JSON-lines file."""

    number: int  #: 1-based, as an editor counts lines
    value: Any  #: the decoded JSON value
    text: str  #: the line as it stands in the file (without its line break)


def _decode_line(line: str, objects: bool) -> tuple[Any, str | None]:
    """The value of one line and None, or None and why the line cannot be read."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        return None, f"malformed JSON ({exc.msg} at column {exc.colno})"
    except RecursionError:
        return None, "JSON nested too deeply to read"
    except ValueError as exc:  # an integer of more than 4300 digits
        return None, f"unreadable JSON ({str(exc)[:120]})"
    if objects and not isinstance(value, dict):
        return None, f"expected a JSON object, got {type(value).__name__}"
    return value, None


def parse_json_lines(
    text: str,
    source: str | os.PathLike[str],
    what: str = "JSON-lines file",
    *,
    objects: bool = False,
    error: type[Exception] = InputFileError,
    skip: Callable[[int, str], None] | None = None,
    hint: str = "",
) -> Iterator[JsonLine]:
    """The non-blank lines of a JSON-lines ``text`` read from ``source`` (a path or a description,
    named in messages), decoded one at a time, in order (so the first problem a reader meets is the
    first in the file). ``objects``: every line must be a JSON object. A line that cannot be read
    raises ``error`` ("``source:line: reason; hint``", the hint by default: each line of a ``what``
    is one JSON value, fix or delete that line), or, when ``skip`` is given, is passed to
    ``skip(line number, reason)`` and left out."""
    hint = hint or f"each line of a {what} is one JSON {'object' if objects else 'value'}: fix or delete that line"
    for number, line in enumerate(file_lines(text), 1):
        if not line.strip():
            continue
        value, problem = _decode_line(line, objects)
        if problem is None:
            yield JsonLine(number, value, line)
        elif skip is not None:
            skip(number, problem)
        else:
            raise error(f"{source}:{number}: {problem}; {hint}")


def _gunzip(data: bytes, path: Path, what: str, limit: int, error: type[Exception]) -> bytes:
    """``data`` decompressed, refused past ``limit`` bytes (a small file can inflate a thousandfold)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise error(f"{path}: cannot read the {what}: not a complete gzip file ({exc})") from None
    if len(out) > limit:
        raise error(
            f"{path}: cannot read the {what}: it decompresses to more than vx reads ({limit / 2**20:.0f} MiB); "
            "split it, or raise the limit with VX_MAX_INPUT_MB"
        )
    return out


def read_json_lines(
    path: str | os.PathLike[str],
    what: str = "JSON-lines file",
    *,
    objects: bool = False,
    limit: int | None = None,
    error: type[Exception] = InputFileError,
    skip: Callable[[int, str], None] | None = None,
    hint: str = "",
) -> Iterator[JsonLine]:
    """The lines of the JSON-lines file ``path`` (:func:`parse_json_lines`), read as
    :func:`read_input_text` reads a file: a regular file of at most ``limit`` bytes, UTF-8; a name
    ending in ``.gz`` is decompressed first (within the same limit). ``error`` is raised for a file
    that cannot be read (by this call) and for a bad line (as the lines are taken, unless ``skip``
    takes it)."""
    path = Path(path)
    limit = input_limit() if limit is None else limit
    data = read_input_bytes(path, what, limit=limit, error=error)
    if path.name.endswith(".gz"):
        data = _gunzip(data, path, what, limit, error)
    text = _utf8(data, path, what, error, "")
    return parse_json_lines(text, path, what, objects=objects, error=error, skip=skip, hint=hint)


def untrusted_reason(path: str | os.PathLike[str], what: str = "file") -> str | None:
    """Why vx must not trust what another user could have written at `path` (a cache file or directory:
    the verdict cache, the probe store), or None when only its owner could have.

    Refused: a path owned by another user (not this process's user nor root); one others may write
    (``o+w``); and one inside a directory others may write that is not sticky (``/tmp`` is sticky: nobody
    else can replace a file of yours there). A path that does not exist yet is judged by its directory.
    Group-writable paths are allowed (per-user groups make them common); a shared group is a known limit."""
    p = Path(path)
    me = os.geteuid()
    try:
        st = p.lstat()
    except (FileNotFoundError, NotADirectoryError):  # not there (yet): whoever makes it is judged then
        st = None
    except OSError as exc:
        return f"{p}: cannot be checked ({exc.strerror or exc})"
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            return f"{p}: the {what} is a symbolic link; point vx at the real path"
        if st.st_uid not in (me, 0):
            return f"{p}: the {what} belongs to another user (uid {st.st_uid}), who could have written anything in it"
        if st.st_mode & stat.S_IWOTH:
            return f"{p}: the {what} is writable by every user (mode {stat.S_IMODE(st.st_mode):04o}); chmod o-w it"
    parent = p.parent
    try:
        pst = parent.stat()
    except OSError:
        return None  # a directory that does not exist yet is made by vx, as its user
    if pst.st_mode & stat.S_IWOTH and not pst.st_mode & stat.S_ISVTX:
        return (
            f"{p}: the {what} is in {parent}, which every user may write and which is not sticky: another user "
            "could replace it"
        )
    if pst.st_uid not in (me, 0) and pst.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"{p}: the {what} is in {parent}, which another user owns and others may write"
    return None
