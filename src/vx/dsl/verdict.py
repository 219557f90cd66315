"""Tri-state verdicts of ops and expressions, and the final verdict of a verifier.

The integer values are the int8 codes used everywhere a verdict is stored in an array
(verdict matrices, evaluator outputs, caches): DRAWBACK = 1, CLEAN = 0, ABSTAIN = -1.
"""

from __future__ import annotations

import enum


class Verdict(enum.IntEnum):
    """What one op or one expression node says about one item.

    DRAWBACK means "a known defect was found"; CLEAN means "no known defect was found"
    (never "certified correct"); ABSTAIN means "no opinion".
    """

    CLEAN = 0
    DRAWBACK = 1
    ABSTAIN = -1

    def __str__(self) -> str:
        return self.name.lower()


class Final(enum.StrEnum):
    """A verifier's verdict on an item: the family root conjoined with the expression.

    The values match the dev-set label strings ("pass" / "fail"); consumers decide what
    ABSTAIN means (a skill loop treats it as PASS: no known drawback was found).
    """

    PASS = "pass"
    FAIL = "fail"
    ABSTAIN = "abstain"
