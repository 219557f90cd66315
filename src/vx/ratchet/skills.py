"""The skill bank: short named lessons, routed into the solver's prompt, bounded and curated.

A skill is a lesson the skill synthesizer wrote from failure capsules: a kebab-case ``name``, a ``when``
(``"always"``, or which tasks it applies to, in words such tasks contain) and a ``lesson`` of one to three
sentences. The bank holds at most ``capacity`` active skills.

**Contribution** — each skill's measured effect on the training attempts it was routed to. Every routed
skill is left out of a training prompt with probability ``holdout`` (a randomized control, so the effect
of skills that are always routed together can be told apart), and the grades of all training attempts
are fitted by least squares as

    grade(attempt) = task effect + Σ over included skills of contribution(skill)

with a small ridge penalty on the contributions (not on the task effects). A skill never left out and
never seen before its birth on the tasks it serves is indistinguishable from its tasks' difficulty, and
its fitted contribution stays near zero. `contributions` returns, per skill, the fitted effect and how
many attempts it was routed to, included in and held out of.

**Eviction** — a skill past its grace period with at least ``min_evidence`` routed attempts and a
contribution below ``retire_below`` is retired (it hurts the attempts it is routed to); when the bank is
over capacity, the skills with the lowest contribution go first; skills within their grace period go
after the others, and a newcomer not yet routed to any attempt goes last (it gets its trial).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.errors import VxError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}[a-z0-9]$")
MAX_LESSON = 600
MAX_WHEN = 240


class SkillError(VxError, ValueError):
    """A proposed skill that does not validate."""


def slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", str(name).strip().lower()).strip("-")
    return s[:64].strip("-")


@attrs.frozen
class Skill:
    name: str
    lesson: str
    when: str = "always"
    born: int = 0  # the skill round that wrote it
    origin: Mapping[str, Any] = attrs.field(factory=dict, eq=False)  # capsules it came from

    @property
    def general(self) -> bool:
        return self.when.strip().lower() in ("", "always", "all", "every task", "all tasks")

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "lesson": self.lesson,
            "when": self.when,
            "born": self.born,
            "origin": dict(self.origin),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Skill:
        return cls(
            str(d["name"]),
            str(d["lesson"]),
            str(d.get("when", "always")),
            int(d.get("born", 0)),
            dict(d.get("origin") or {}),
        )


def validate_skill(raw: Any, *, born: int, origin: Mapping[str, Any] | None = None) -> Skill:
    """A skill from a synthesizer's JSON object; raises SkillError saying what is wrong."""
    if not isinstance(raw, Mapping):
        raise SkillError(f"a skill must be a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - {"name", "when", "lesson"}
    if unknown:
        raise SkillError(f"unknown field(s) {', '.join(sorted(map(str, unknown)))} (a skill has name, when, lesson)")
    name = slug(raw.get("name", ""))
    if not NAME_RE.match(name):
        raise SkillError(f"name {raw.get('name')!r} must be 3-64 characters of a-z, 0-9 and '-'")
    lesson = " ".join(str(raw.get("lesson", "")).split())
    if not 10 <= len(lesson) <= MAX_LESSON:
        raise SkillError(f"{name}: the lesson must be 10-{MAX_LESSON} characters (got {len(lesson)})")
    when = " ".join(str(raw.get("when", "always")).split()) or "always"
    if len(when) > MAX_WHEN:
        raise SkillError(f"{name}: 'when' must be at most {MAX_WHEN} characters")
    return Skill(name, lesson, when, born, dict(origin or {}))


@attrs.frozen
class Contribution:
    effect: float | None  # fitted effect on the grade (None: never routed)
    routed: int  # training attempts it was routed to
    included: int  # ... of which it was in the prompt
    held_out: int  # ... of which it was left out (the randomized control)

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def contributions(
    attempts: Sequence[Mapping[str, Any]], skills: Iterable[str], *, ridge: float = 1.0
) -> dict[str, Contribution]:
    """Fit every skill's effect from training attempts (dicts with ``task``, ``routed``, ``included``,
    ``score``); see the module docstring."""
    names = sorted(set(skills) | {s for a in attempts for s in a["included"]})
    out: dict[str, Contribution] = {}
    counts = {n: [0, 0] for n in names}
    for a in attempts:
        inc = set(a["included"])
        for s in a["routed"]:
            if s in counts:
                counts[s][0 if s in inc else 1] += 1
    if not attempts or not names:
        return {n: Contribution(None, sum(counts.get(n, [0, 0])), *counts.get(n, [0, 0])) for n in set(skills)}
    tasks = sorted({a["task"] for a in attempts})
    t_index = {t: i for i, t in enumerate(tasks)}
    s_index = {s: i for i, s in enumerate(names)}
    n, nt, ns = len(attempts), len(tasks), len(names)
    x = np.zeros((n, nt + ns))
    y = np.zeros(n)
    for i, a in enumerate(attempts):
        x[i, t_index[a["task"]]] = 1.0
        for s in a["included"]:
            x[i, nt + s_index[s]] = 1.0
        y[i] = float(a["score"])
    # ridge on the skill columns only: append sqrt(λ)·I rows with zero targets
    pen = np.zeros((ns, nt + ns))
    pen[:, nt:] = np.sqrt(ridge) * np.eye(ns)
    coef, *_ = np.linalg.lstsq(np.vstack([x, pen]), np.concatenate([y, np.zeros(ns)]), rcond=None)
    for s in set(skills) | set(names):
        n_in, n_out = counts.get(s, [0, 0])
        routed = n_in + n_out
        effect = float(round(coef[nt + s_index[s]], 10)) if s in s_index and routed else None
        out[s] = Contribution(effect, routed, n_in, n_out)
    return out


@attrs.define
class Bank:
    """The active skills, in birth order."""

    skills: list[Skill] = attrs.field(factory=list)

    def __len__(self) -> int:
        return len(self.skills)

    def __contains__(self, name: str) -> bool:
        return any(s.name == name for s in self.skills)

    def __iter__(self):
        return iter(self.skills)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def get(self, name: str) -> Skill:
        return next(s for s in self.skills if s.name == name)

    def add(self, skill: Skill) -> None:
        if skill.name in self:
            raise SkillError(f"{skill.name} is already in the bank")
        self.skills.append(skill)

    def remove(self, name: str) -> Skill:
        s = self.get(name)
        self.skills = [k for k in self.skills if k.name != name]
        return s

    def copy(self) -> Bank:
        return Bank(list(self.skills))

    def as_list(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in self.skills]

    @classmethod
    def from_list(cls, rows: Iterable[Mapping[str, Any]]) -> Bank:
        return cls([Skill.from_dict(r) for r in rows])


@attrs.frozen
class Removal:
    name: str
    kind: str  # "retired" (harmful) | "evicted" (capacity)
    reason: str
    contribution: Contribution


def curate(
    bank: Bank,
    contrib: Mapping[str, Contribution],
    *,
    round_: int,
    capacity: int,
    grace: int,
    min_evidence: int,
    retire_below: float,
) -> list[Removal]:
    """Retire harmful skills, then evict down to capacity (lowest contribution first). Mutates `bank`."""
    removals: list[Removal] = []

    def young(s: Skill) -> bool:
        return round_ - s.born < grace

    for s in list(bank):
        c = contrib.get(s.name) or Contribution(None, 0, 0, 0)
        if not young(s) and c.routed >= min_evidence and c.effect is not None and c.effect < retire_below:
            bank.remove(s.name)
            removals.append(
                Removal(
                    s.name,
                    "retired",
                    f"contribution {c.effect:+.3f} over {c.routed} routed attempts is below {retire_below:+.3f}",
                    c,
                )
            )
    while len(bank) > capacity:

        def key(s: Skill) -> tuple:
            c = contrib.get(s.name) or Contribution(None, 0, 0, 0)
            # untried newcomers last, then other young skills, then the rest by contribution
            return (
                young(s) and c.routed == 0,
                young(s),
                c.effect if c.effect is not None else 0.0,
                c.routed,
                s.born,
                s.name,
            )

        victim = min(bank, key=key)
        c = contrib.get(victim.name) or Contribution(None, 0, 0, 0)
        bank.remove(victim.name)
        eff = "no measured effect yet" if c.effect is None else f"contribution {c.effect:+.3f}"
        removals.append(
            Removal(
                victim.name, "evicted", f"bank over capacity {capacity}: lowest ({eff}, {c.routed} routed attempts)", c
            )
        )
    return removals
