"""Lexical cues of analyst prose shared by the ops' failure classifier and the rubric: certainty
wording, filler phrases, a section cut off mid-sentence."""

from __future__ import annotations

import re

from vx.families.report.parse import Section

CERTAINTY = re.compile(
    r"\b(will certainly|certainly|guaranteed|no doubt|undoubtedly|inevitabl[ey]|irreversible|"
    r"without question|definitely)\b",
    re.IGNORECASE,
)
FILLER = re.compile(
    r"\b(it is important to note|going forward|in today's|fast-paced|many factors|a variety of|"
    r"a wide range of|remains dynamic|constantly evolving|monitor developments|ultimately)\b",
    re.IGNORECASE,
)


def unfinished(sec: Section):
    """The section's last prose sentence when it lacks closing punctuation (the text was cut off)."""
    body = [s for s in sec.body() if s.kind in ("paragraph", "item", "quote")]
    if not body:
        return None
    last = re.sub(r"(\s*\[[^\]]*\]|\s*\{M\d+\})+\s*$", "", body[-1].text.rstrip("*_ "))
    return None if last.endswith((".", "!", "?", ":", "”", '"', ")")) else body[-1]
