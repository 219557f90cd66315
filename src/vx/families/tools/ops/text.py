"""The words of a question and of a function's docs, as the grounding and relevance ops compare them.

Words are lower-case runs of letters (``camelCase`` and ``snake_case`` names split), without stop words
and words of fewer than three letters, compared by their first five letters (a crude stem: ``matches``
and ``match``, ``directions`` and ``direction`` meet). Numbers are read from digits (``1,000``,
``2.5``, ``-3``, ``5%``) and from the spelled numbers one to twenty and the tens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["STEM", "numbers", "stems", "words"]

STEM = 5
STOP = frozenset(
    """a an the of to in on for and or with by from at as is are was were be been this that these those what
    which who whom whose how when where why i you we they it its my me our your their please can could would
    should will shall may might must do does did done get gets find calculate compute give tell show list
    using use used about into than then also if all any some each per between within over under up down out
    not no yes number numbers value values given provided following based there here have has had let lets
    make need want like just only other another such via one two""".split()
)
_WORD = re.compile(r"[A-Za-z]+")
_CAMEL = re.compile(r"([a-z])([A-Z])")
_SPELLED: dict[str, float] = {
    w: n
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_SPELLED.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90})
_SPELLED.update({"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000, "dozen": 12})
_SPELLED.update({"twice": 2, "double": 2, "triple": 3, "half": 0.5, "quarter": 0.25, "once": 1, "single": 1})
#: Units a question may name without a number ("next week": one week, 7 days)
_UNITS = frozenset("day week month year hour minute second decade century".split())
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def words(text: str) -> list[str]:
    """The content words of `text`, lower case, in order (names split at case changes and ``_``/``.``)."""
    text = _CAMEL.sub(r"\1 \2", text or "")
    return [w for w in (m.lower() for m in _WORD.findall(text)) if len(w) >= 3 and w not in STOP]


def stems(text: str | Iterable[str]) -> set[str]:
    """The stems of the content words of `text` (or of several texts)."""
    parts = [text] if isinstance(text, str) else list(text)
    return {w[:STEM] for part in parts for w in words(part)}


def numbers(text: str) -> set[float]:
    """The numbers `text` states: in digits (thousands separators, decimals, signs, exponents; a percentage
    both as written and as a fraction), spelled (one to twenty, the tens, hundred, thousand, dozen...), and
    one for a unit named alone ("next week")."""
    out: set[float] = set()
    for m in _NUMBER.finditer(text or ""):
        try:
            v = float(m.group(0).replace(",", ""))
        except ValueError:
            continue
        out.add(v)
        out.add(abs(v))
        if text[m.end() : m.end() + 1] == "%":
            out.add(v / 100)
    for w in _WORD.findall(text or ""):
        low = w.lower()
        n = _SPELLED.get(low)
        if n is not None:
            out.add(float(n))
        if low.rstrip("s") in _UNITS:
            out.add(1.0)
    return out
