"""Reading a file a user named: one bounded reader for every path vx reads from a person (``.vx``
files and the ``; specs:`` file they name, a family's ``seed =``, family files, tasks and samples
files, ``vx check`` / ``vx fmt`` targets, evaluations given to ``vx report``).

The file is opened without blocking and checked on its descriptor before a byte is read: a FIFO
(which would hang), a device such as ``/dev/zero`` (which never ends), a directory or a socket is
refused, and so is a regular file larger than the limit (``MAX_INPUT_MB``, 512 MiB by default,
``$VX_MAX_INPUT_MB`` to change it). Each refusal is an :class:`InputFileError` naming the file, what
it is, and what to do. Depends on nothing of vx but its errors.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vx.errors import DataError

__all__ = ["InputFileError", "MAX_INPUT_MB", "input_limit", "read_input_bytes", "read_input_text"]

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
    data = read_input_bytes(path, what, limit=limit, error=error)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise error(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            f"{hint or f'save the {what} as UTF-8'}"
        ) from None
