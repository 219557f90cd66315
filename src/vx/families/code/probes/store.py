"""The code family's generated probes kept on disk between processes.

Generating a task's probes (:func:`.probe.generated`: type-aware mutations, hypothesis draws, the
``large`` class growing containers) is the largest per-task cost of grading -- about 50 ms for a
typical HumanEval task and up to seconds for a few -- and it was paid again by every process: each
``vx grade`` or ``vx eval`` run, each worker of a new ``apply_ops`` pool, each restarted trainer. The
generator is deterministic (seeded by the task id), so its result is kept here, one small JSON file
per task, and read back instead of generated again.

Key: a digest of the task fields the generator reads (:func:`.probe._task_key`) and of the
generator's version -- the source of every module that makes the probes, hypothesis's version (the
drawn class uses its internals) and Python's minor version -- so a change to any of them is a miss,
never a stale probe. A file that cannot be read, does not decode, or names another key is a miss
too (and is replaced); writing is atomic (a temporary file renamed into place), so concurrent
workers never see half a file. Nothing here runs candidate code: the files hold plain data the
parent generated, decoded with :func:`vx.ops.cache.decode_plain` (no pickle).

The store is checked like the verdict cache (:func:`vx.inputs.untrusted_reason`): a directory or an
entry another user owns or may write -- a shared or world-writable ``VX_PROBE_CACHE``, where emptying a
task's probe list made a lookup table beside three correct peers PASS -- is not used (said once; the
probes are generated in this process). Each entry says how it was made (the generator's version, how
many probes of each class, why there are none) and carries a digest of all of it, checked when read; an
entry that lists no probe without saying why (the generator always says why) is not believed either.

Location: ``$VX_PROBE_CACHE`` (a directory; ``off`` turns the store off), else
``$XDG_CACHE_HOME/vx/probes`` (``~/.cache/vx/probes``), beside the verdict cache. Deleting the
directory is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vx.inputs import untrusted_reason
from vx.ops.cache import decode_plain, encode_plain

#: Bump when the file layout changes.
FORMAT = 2
#: The modules whose source decides the generated probes.
GENERATOR_MODULES = (
    "vx.families.code.probes.probe",
    "vx.families.code.probes.domain",
    "vx.families.code.probes.generate",
    "vx.families.code.probes.draw",
    "vx.families.code.ops.values",
)
_OFF = {"", "off", "0", "no", "none", "false"}

_version: str | None = None
_warned = False


def directory() -> Path | None:
    """Where the probes are kept, or None when the store is turned off (``VX_PROBE_CACHE=off``)."""
    value = os.environ.get("VX_PROBE_CACHE")
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vx" / "probes"


def generator_version() -> str:
    """The digest of everything the generated probes depend on besides the task (computed once)."""
    global _version
    if _version is None:
        import importlib

        try:
            from hypothesis import __version__ as drawn_by
        except ImportError:  # the drawn classes are then empty (draw.draw_probes says so)
            drawn_by = "absent"
        digest = hashlib.sha256(f"format {FORMAT}; python {sys.version_info[:2]}; hypothesis {drawn_by}".encode())
        for name in GENERATOR_MODULES:
            path = getattr(importlib.import_module(name), "__file__", None)
            try:
                digest.update(b"\0" + (Path(path).read_bytes() if path else name.encode()))
            except OSError:  # not installed as files: the name is all there is
                digest.update(b"\0" + name.encode())
        _version = digest.hexdigest()[:16]
    return _version


def _path(root: Path, task_key: str) -> tuple[Path, str]:
    key = hashlib.sha256(f"{generator_version()}\0{task_key}".encode("utf-8", "surrogatepass")).hexdigest()[:40]
    return root / key[:2] / f"{key}.json", key


_trusted: dict[Path, str | None] = {}


def _usable(root: Path) -> bool:
    """Whether the store's directory may be trusted (decided once per directory and process; a refusal is
    warned once)."""
    if root not in _trusted:
        _trusted[root] = untrusted_reason(root, "probe store")
        if _trusted[root] is not None:
            _warn(
                f"{_trusted[root]}; generated probes are neither read from nor kept there (each process "
                "generates its own). Set VX_PROBE_CACHE to a directory of your own, or to 'off'."
            )
    return _trusted[root] is None


def _warn(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _digest(entry: dict[str, Any]) -> str:
    """The digest of everything an entry says but the digest itself."""
    body = json.dumps({k: v for k, v in entry.items() if k != "digest"}, sort_keys=True, allow_nan=False)
    return hashlib.sha256(body.encode("ascii")).hexdigest()


def _made(rows: Sequence[Sequence[Any]], why: str) -> dict[str, Any]:
    """How an entry was made: the generator's version, how many probes of each class, why there are none."""
    classes: dict[str, int] = {}
    for row in rows:
        classes[str(row[0])] = classes.get(str(row[0]), 0) + 1
    return {"generator": generator_version(), "probes": len(rows), "classes": classes, "why": why}


def load(task_key: str) -> tuple[list[tuple[str, str, tuple, str]], tuple[str, ...], str] | None:
    """The stored generation of the task with this key: ([(class, function, args, detail)], domain lines,
    why none), or None (not stored, the store is off or not to be trusted, or the file is unreadable, not
    ours, altered, or lists no probe without saying why)."""
    root = directory()
    if root is None or not _usable(root):
        return None
    path, key = _path(root, task_key)
    try:
        if untrusted_reason(path, "probe store entry") is not None:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            return None
        if data.get("digest") != _digest(data) or data.get("made") != _made(data["probes"], data["why"]):
            return None  # altered after it was made, or made otherwise
        probes = []
        for row in data["probes"]:
            klass, function, args, detail = row
            args = decode_plain(args)
            if not (type(klass) is str and type(function) is str and type(detail) is str and type(args) is tuple):
                return None
            probes.append((klass, function, args, detail))
        domain, why = data["domain"], data["why"]
        if not (isinstance(domain, list) and all(type(x) is str for x in domain) and type(why) is str):
            return None
        if not probes and not why.strip():  # an emptied list: the generator says why it makes none
            return None
        return probes, tuple(domain), why
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def store(task_key: str, probes: Sequence[tuple[str, str, tuple, str]], domain: Sequence[str], why: str) -> bool:
    """Keep a task's generation (see :func:`load`); False when it cannot be kept (the store is off or not to
    be trusted, the probes are not plain data, the directory is not writable: grading goes on, warned once)."""
    root = directory()
    if root is None or not _usable(root):
        return False
    path, key = _path(root, task_key)
    try:
        rows = [[klass, function, encode_plain(tuple(args)), detail] for klass, function, args, detail in probes]
        entry: dict[str, Any] = {
            "format": FORMAT,
            "key": key,
            "made": _made(rows, why),
            "probes": rows,
            "domain": list(domain),
            "why": why,
        }
        entry["digest"] = _digest(entry)
        # ASCII (json's default): lone surrogates in strings survive as escapes
        text = json.dumps(entry, allow_nan=False)
    except (ValueError, TypeError, RecursionError):  # not plain data (or too deep): generated again next time
        return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # only its user may write it
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(text)
        os.replace(tmp, path)
        return True
    except OSError as exc:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        _warn(
            f"generated probes cannot be kept in {root} ({exc}); they are generated in every "
            "process. Set VX_PROBE_CACHE to a writable directory, or to 'off'."
        )
        return False


__all__ = ["FORMAT", "GENERATOR_MODULES", "directory", "generator_version", "load", "store"]
