"""Text that came from outside vx (model outputs, a sandboxed child, an LLM) made safe to keep
and to show. Depends on nothing; every layer may use it.

* :func:`clean` -- valid Unicode: unpaired surrogates (which JSON's ``\\udXXX`` escapes and
  Python's ``surrogateescape`` produce, and which no UTF-8 file, SQLite text or terminal
  accepts) become U+FFFD. Applied once, where such text enters vx's records.
* :func:`printable` -- :func:`clean`, and control characters other than newline and tab shown
  as ``\\xNN`` escapes, so a message cannot move the cursor, retitle the terminal or hide text.
  Applied when text is printed (the CLI also escapes Rich markup: ``vx.cli.common.esc``).
"""

from __future__ import annotations

import re

__all__ = ["clean", "printable"]

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
