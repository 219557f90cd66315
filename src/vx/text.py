"""Text that came from outside vx (model outputs, a sandboxed child, an LLM) made safe to keep
and to show. Depends on nothing; every layer may use it.

* :func:`clean` -- valid Unicode: unpaired surrogates (which JSON's ``\\udXXX`` escapes and
  Python's ``surrogateescape`` produce, and which no UTF-8 file, SQLite text or terminal
  accepts) become U+FFFD. Applied once, where such text enters vx's records.
* :func:`printable` -- :func:`clean`, and control characters other than newline and tab shown
  as ``\\xNN`` escapes, so a message cannot move the cursor, retitle the terminal or hide text.
  Applied when text is printed (the CLI also escapes Rich markup: ``vx.cli.common.esc``).
* :func:`storable` -- any ``str`` made writable as UTF-8 (a file, SQLite text, a terminal): an
  unpaired surrogate becomes its ``\\udXXX`` escape, so distinct texts stay distinct. Applied by
  every writer (the run store, ``--json``, exports, ``.vx`` files) to what it writes, so text that
  reached vx some other way never loses a finished result at the final write.
* :func:`json_dumps` -- JSON text any UTF-8 writer accepts (surrogates stay JSON escapes: exact).
* :func:`storable_obj` -- :func:`storable` applied to every string (and mapping key) of nested
  lists, tuples and mappings (for JSON writers).
* :func:`file_lines` -- the lines of a JSON-lines or TOML text as those formats define them (split
  at ``\n`` only). Every reader of such a file splits with it, never with ``str.splitlines()``.
"""

from __future__ import annotations

import json
import re

__all__ = ["clean", "file_lines", "json_dumps", "printable", "storable", "storable_obj"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` with every unpaired surrogate replaced by U+FFFD (unchanged when valid)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def printable(text: str) -> str:
    """:func:`clean` text with control characters (but newline and tab) written as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", clean(text))


def storable(text: str) -> str:
    """``text`` with every unpaired surrogate written as its ``\\udXXX`` escape (unchanged when valid)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def storable_obj(obj: object) -> object:
    """``obj`` with :func:`storable` applied to every string in it (lists, tuples, mappings)."""
    if isinstance(obj, str):
        return storable(obj)
    if isinstance(obj, dict):
        return {storable(k) if isinstance(k, str) else k: storable_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [storable_obj(v) for v in obj]
    return obj


def json_dumps(obj: object, **kwargs: object) -> str:
    """``json.dumps(obj, ensure_ascii=False, **kwargs)`` that any UTF-8 writer accepts: an unpaired
    surrogate stays its JSON ``\\udXXX`` escape, so the text reads back as the same ``str``."""
    return storable(json.dumps(obj, ensure_ascii=False, **kwargs))  # type: ignore[arg-type]


def file_lines(text: str) -> list[str]:
    r"""The lines of a JSON-lines (or TOML) text: split at ``"\n"`` (a ``"\r"`` before it is dropped), and
    never at the other characters ``str.splitlines()`` splits at (U+2028, U+2029, U+0085, ``\v``, ``\f``,
    ``\x1c``-``\x1e``): those are valid raw inside a JSON string, and vx's writers write them raw. A final
    newline does not begin another line."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]
