"""Run options of a ratchet run: the arms, the schedule, the skill bank's bounds.

Everything here is stored with the run (`RatchetConfig.as_dict`); a resumed run reuses it.

Arms (each runs the same skill loop; they differ only in the grader of the training attempts):

    oracle       the family's ground truth grades (hidden tests, execution comparison, the rubric)
    co           Double Ratchet: verifier phases (the metric loop on dev + unlabeled train and the skill
                 loop's training attempts) alternate with skill phases graded by the current best verifier
    naive        co with the naive ablation: the anchor guards off in the verifier loop and skill-side
                 rollback off (the collusion-prone configuration; its verifier validity is the figure to read)
    always-pass  a collapsed grader that passes everything (the control: downstream score cannot certify a grader)
    verifier     a fixed .vx verifier grades (``--verifier FILE``)
    frozen       no skills are ever written: the frozen solver's held-out score, round after round

The schedule is the papers' front-loaded curriculum: verifier phases of 15/8/5/2 rounds before four
25-round skill phases. Arms without a verifier loop run the same number of skill rounds (the sum of the
skill phases), so every arm has the same skill budget.

The held-out protocol (``protocol``):

    two-part     the default: the family's held-out (locked) tasks are split, seeded by ``seed`` and disjoint,
                 into a rollback part (``rollback_share`` of them; the only held-out tasks rollback reads)
                 and a report part that no loop reads: the curves, lift and retention come from it
    papers       the papers' protocol, kept for comparison: rollback reads the same held-out tasks the
                 curves, lift and retention are reported on (so a reported curve cannot fall)
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.errors import VxError

ARMS = ("oracle", "co", "naive", "always-pass", "verifier", "frozen")
CO_ARMS = ("co", "naive")
DEFAULT_VERIFIER_ROUNDS = (15, 8, 5, 2)
DEFAULT_SKILL_ROUNDS = (25, 25, 25, 25)
PROTOCOLS = ("two-part", "papers")


class RatchetError(VxError):
    """A ratchet run that cannot start or go on; the message says what to do."""


def parse_schedule(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``"15,8,5,2:25,25,25,25"`` → ((15, 8, 5, 2), (25, 25, 25, 25)): verifier phases, then skill phases.

    Both lists have the same length; verifier phase i runs before skill phase i. A single number after the
    colon repeats (``"2,1:3"`` = verifier 2,1 and skill 3,3)."""
    m = re.fullmatch(r"\s*([\d,\s]+):([\d,\s]+)\s*", text or "")
    if m is None:
        raise RatchetError(f"--schedule {text!r}: write VERIFIER:SKILL round lists, e.g. 15,8,5,2:25,25,25,25")
    try:
        ver = tuple(int(x) for x in m.group(1).split(",") if x.strip())
        skill = tuple(int(x) for x in m.group(2).split(",") if x.strip())
    except ValueError:
        raise RatchetError(f"--schedule {text!r}: rounds must be whole numbers") from None
    if len(skill) == 1 and len(ver) > 1:
        skill = skill * len(ver)
    if not ver or len(ver) != len(skill):
        raise RatchetError(
            f"--schedule {text!r}: give as many skill phases as verifier phases "
            f"({len(ver)} verifier, {len(skill)} skill)"
        )
    if any(v < 0 for v in ver) or any(s < 1 for s in skill):
        raise RatchetError(f"--schedule {text!r}: verifier phases need 0 or more rounds, skill phases 1 or more")
    return ver, skill


@attrs.frozen
class RatchetConfig:
    """Options of one ratchet run (all arms share them)."""

    arms: tuple[str, ...] = ("oracle", "co")
    verifier_rounds: tuple[int, ...] = DEFAULT_VERIFIER_ROUNDS
    skill_rounds: tuple[int, ...] = DEFAULT_SKILL_ROUNDS
    seed: int = 0
    batch_size: int = 8  # training tasks attempted per skill round
    capacity: int = 12  # skills the bank may hold
    route_k: int = 3  # skills routed into one prompt at most
    route_min_similarity: float = 0.1  # a topical skill is routed only above this TF-IDF cosine
    general_score: float = 0.15  # the routing score of a skill that applies to every task
    holdout: float = 0.25  # chance that a routed skill is left out of one training prompt (measures its effect)
    new_skills: int = 3  # skills the synthesizer may add per round
    max_capsules: int = 6  # failure capsules shown to the synthesizer per round
    practice: int = 2  # passed attempts shown beside them
    grace: int = 2  # rounds a new skill is protected from eviction
    min_evidence: int = 4  # routed attempts before a skill can be retired as harmful
    retire_below: float = -0.05  # contribution under which a skill with evidence is retired
    ridge: float = 1.0  # ridge penalty of the contribution fit
    rollback: bool = True  # restore the bank when the held-out score drops (off in the naive arm)
    rollback_tolerance: float = 0.0  # a drop larger than this triggers rollback
    protocol: str = "two-part"  # "two-part": rollback and report read disjoint held-out parts; "papers": the same
    rollback_share: float = 0.5  # two-part: the share of the held-out tasks in the rollback part
    judge: bool = True  # run the final pairwise judge after the loops
    judge_against: tuple[str, ...] = ("final",)  # "final" and/or "peak": which round's outputs meet round 0
    final_rounds: int = 10  # the "final rounds" mean is over the last this many rounds
    verifier: str | None = None  # a .vx file for the "verifier" arm
    batch: bool = False  # send the solver's and the judge's requests through the Message Batches API
    poll_seconds: float = 30.0
    max_wait: float = 24 * 3600.0
    jobs: int | None = None  # worker processes for applying ops
    timeout: float = 10.0  # seconds per op call
    verifier_sees_attempts: bool = True  # co arms: the skill loop's training attempts join the verifier's train split

    def __attrs_post_init__(self) -> None:
        bad = [a for a in self.arms if a not in ARMS]
        if bad:
            raise RatchetError(f"unknown arm(s) {', '.join(bad)}; arms are {', '.join(ARMS)}")
        if not self.arms:
            raise RatchetError("choose at least one arm (--oracle, --co, --naive, --always-pass, --verifier, --frozen)")
        if len(set(self.arms)) != len(self.arms):
            raise RatchetError("an arm is named twice")
        if "verifier" in self.arms and not self.verifier:
            raise RatchetError("the verifier arm needs a .vx file (--verifier FILE)")
        if len(self.verifier_rounds) != len(self.skill_rounds) or not self.skill_rounds:
            raise RatchetError("the schedule needs as many verifier phases as skill phases")
        for name in ("batch_size", "capacity", "route_k", "new_skills", "max_capsules", "final_rounds"):
            if getattr(self, name) < 1:
                raise RatchetError(f"{name.replace('_', '-')} must be at least 1")
        if not 0.0 <= self.holdout < 1.0:
            raise RatchetError("--holdout must be in [0, 1)")
        if self.protocol not in PROTOCOLS:
            raise RatchetError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {self.protocol!r}")
        if not 0.0 < self.rollback_share < 1.0:
            raise RatchetError(
                "--rollback-share must be between 0 and 1 (the rest of the held-out tasks is the report part)"
            )
        bad_j = [j for j in self.judge_against if j not in ("final", "peak")]
        if bad_j:
            raise RatchetError(f"--judge-against takes final and/or peak, not {', '.join(bad_j)}")

    @property
    def total_skill_rounds(self) -> int:
        return sum(self.skill_rounds)

    def phases(self, arm: str) -> list[tuple[str, int]]:
        """The arm's phases in order: ("verifier", rounds) and ("skill", rounds)."""
        if arm in CO_ARMS:
            out: list[tuple[str, int]] = []
            for v, s in zip(self.verifier_rounds, self.skill_rounds):
                out += [("verifier", v), ("skill", s)]
            return out
        return [("skill", self.total_skill_rounds)]

    def skill_phase_of(self, round_: int) -> int:
        """The index of the skill phase that skill round `round_` (1-based) belongs to."""
        total = 0
        for i, s in enumerate(self.skill_rounds):
            total += s
            if round_ <= total:
                return i
        return len(self.skill_rounds) - 1

    def first_round_of_phase(self, phase: int) -> int:
        return 1 + sum(self.skill_rounds[:phase])

    def rollback_for(self, arm: str) -> bool:
        return self.rollback and arm != "naive"

    def as_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = list(v)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RatchetConfig:
        fields = {f.name for f in attrs.fields(cls)}
        kw: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in d.items() if k in fields}
        return cls(**kw)

    def evolve(self, **changes: Any) -> RatchetConfig:
        return attrs.evolve(self, **changes)


def arms_from_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """Arms in canonical order (oracle first: its lift is the denominator of retention)."""
    return tuple(a for a in ARMS if a in set(flags))
