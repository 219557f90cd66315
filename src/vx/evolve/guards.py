"""The anchor guards and the best-so-far rule (docs/design.md §5).

**Fail-closed anchoring.** A candidate has a *usable dev opinion* when its expression opines on
at least one dev item that the root has not already failed (on root-failed items the expression
cannot change the verdict, so an opinion there is not evidence). A candidate without one is
unselectable, and its A_dev is 0. The same switch decides how missing evidence is scored inside
the objective: closed, it counts as disagreement (with ``abstain="exclude"``: a recall over a
class the candidate never opines on is 0, and so is A_train over no opined consensus item); open
(the *naive* ablation), missing evidence counts as agreement — A_dev of a candidate without a
usable dev opinion is 1 — which is the fail-open behaviour that lets a vacuous verifier win.

**Validity gate.** Judged on the items the expression decides — train ∪ dev items on which the
root does not fire (on the others every candidate says FAIL): a candidate is dropped when its
expression abstains on all of them, never finds a drawback (passes everything), or never says
clean — fires on every item it opines on (fails everything).

**The anchor guard.** Ten labelled items cannot estimate a detector's precision, but they can veto:
a selectable candidate must flag every dev failure *the pool can flag* and must not flag a dev item
labelled pass. A dev failure is flaggable when some selectable op that flags no dev pass fires on it
(so ``(any <those ops>)`` meets the guard: it is never infeasible when the pool is not). Among the
candidates that meet it, the train-side estimate (A_train) decides. Both parts are judged on final
verdicts of the dev items the root leaves open; a soft label counts as fail below 0.5.

**The pass-recall floor.** Ten dev items cannot see a false-alarm rate, the train split can: a
candidate's *estimated pass recall* -- the share of the train split's pseudo-positives (outputs that
independent evidence calls correct, `vx.evolve.estimates`) its final verdict does not fail -- may not
fall below the seed's estimate minus a tolerance (0.01 by default, `vx evolve --pass-tolerance`).

**Best-so-far.** The incumbent is replaced only by a strictly better selectable candidate;
equal objectives go to the higher estimated precision (the share of its train drawbacks that are not
on pseudo-positives), then the incumbent keeps its place, then fewer leaves, then the canonical text
(a deterministic last resort, never the first).
Objectives are compared after rounding to 12 decimals so that float noise never decides.
"""

from __future__ import annotations

import attrs
import numpy as np

__all__ = [
    "Guards",
    "best_index",
    "VALID",
    "ALL_ABSTAIN",
    "ALL_PASS",
    "ALL_FAIL",
    "REASONS",
    "validity_codes",
    "rank_key",
    "is_better",
    "GUARD_OK",
    "GUARD_MISSES",
    "GUARD_FALSE_ALARM",
    "GUARD_PASS_FLOOR",
    "GUARD_REASONS",
    "guard_codes",
]

VALID, ALL_ABSTAIN, ALL_PASS, ALL_FAIL = 0, 1, 2, 3
GUARD_OK, GUARD_MISSES, GUARD_FALSE_ALARM, GUARD_PASS_FLOOR = 0, 1, 2, 3
REASONS = {
    ALL_ABSTAIN: "abstains on every item it could decide",
    ALL_PASS: "passes everything (never finds a drawback)",
    ALL_FAIL: "fails everything (finds a drawback on every item it opines on)",
}
UNANCHORED = "no usable dev opinion (abstains on every dev item the root leaves open)"
GUARD_REASONS = {
    GUARD_MISSES: "misses a dev failure the pool can flag (the anchor guard)",
    GUARD_FALSE_ALARM: "flags a dev item labelled pass (the anchor guard)",
    GUARD_PASS_FLOOR: "its estimated pass recall falls below the seed's minus the tolerance (the pass-recall floor)",
}


@attrs.frozen
class Guards:
    """Which anchor guards are on. ``Guards.naive()`` is the naive ablation."""

    fail_closed: bool = True
    validity_gate: bool = True
    anchor: bool = True  # the anchor guard
    pass_floor: bool = True  # the pass-recall floor (estimated on the train split's pass evidence)

    @classmethod
    def naive(cls) -> Guards:
        return cls(False, False, False, False)


def validity_codes(n_decided: int, opined: np.ndarray, fired: np.ndarray) -> np.ndarray:
    """Per candidate: VALID or the reason it is degenerate, from how many of the ``n_decided``
    open items its expression opines on and fires on."""
    codes = np.full(opined.shape, VALID, dtype=np.int8)
    codes[fired == opined] = ALL_FAIL
    codes[fired == 0] = ALL_PASS
    codes[opined == 0] = ALL_ABSTAIN
    return codes


def guard_codes(
    flagged: np.ndarray, n_flaggable: int, false_alarms: np.ndarray, below_floor: np.ndarray | None = None
) -> np.ndarray:
    """Per candidate: GUARD_OK or why it fails a guard, from how many of the ``n_flaggable`` dev failures
    it flags, on how many open dev passes it fires (the anchor guard) and whether its estimated pass
    recall is below the floor (``below_floor``; the anchor's reasons take precedence)."""
    codes = np.full(np.shape(flagged), GUARD_OK, dtype=np.int8)
    if below_floor is not None:
        codes[np.asarray(below_floor, dtype=bool)] = GUARD_PASS_FLOOR
    codes[flagged < n_flaggable] = GUARD_MISSES
    codes[false_alarms > 0] = GUARD_FALSE_ALARM
    return codes


def rank_key(objective: float, size: int, text: str) -> tuple:
    """Sort key: best first (higher objective, then fewer leaves, then canonical text)."""
    return (-round(float(objective), 12), size, text)


def is_better(candidate: tuple[float, int, str], incumbent: tuple[float, int, str] | None) -> bool:
    """Strict improvement of the objective (after rounding); ties never replace the incumbent."""
    if incumbent is None:
        return True
    return round(float(candidate[0]), 12) > round(float(incumbent[0]), 12)


def best_index(scores, nodes, *, incumbent: int | None = None) -> int | None:
    """Index of the best selectable candidate of ``scores`` (a `vx.evolve.objective.Scores`), or
    None when none is selectable. On a tie the ``incumbent`` index keeps its place; otherwise the
    smallest expression wins, then the first canonical text."""
    from vx.dsl.printer import to_text

    sel = np.flatnonzero(scores.selectable)
    if len(sel) == 0:
        return None
    obj = np.round(scores.objective[sel], 12)
    tied = sel[obj == obj.max()]
    if scores.precision is not None and len(tied) > 1:  # ties: the higher estimated precision first
        prec = np.round(np.nan_to_num(np.asarray(scores.precision, dtype=float)[tied], nan=-1.0), 12)
        tied = tied[prec == prec.max()]
    tied = tied.tolist()
    if incumbent is not None and incumbent in tied:
        return incumbent
    return min(tied, key=lambda i: (int(scores.size[i]), to_text(nodes[i])))
