"""Evaluator-first state checks (VeriEvolve's idea, offline): per task, executable checks of an end state,
induced from the task's words and the other attempts' consensus end state, trusted only once they pass
their challenge states; then an attempt is judged by them.

For one task, from the other attempts' end-state facts (:func:`.states.facts`: leaves that changed):

1. **Candidate checks** -- a changed leaf most other attempts agree on (at least ``quorum`` of them, more
   than half, and two: a tie with the rest is no consensus) becomes a check: the leaf *equals* that value,
   or is *absent* (it was removed), or, for a long text, *contains* a phrase the user quoted. With ``grounding
   = "text"`` a check is kept only when what it is about is in the user's words (a file or folder name, a
   field's value, a quoted phrase): the instruction grounds it. ``"any"`` keeps every consensus fact.
2. **Challenge states** (the suite named in ``challenges``), before a check is trusted:
   ``accept`` -- it accepts every pseudo-positive state (the other attempts holding the consensus value);
   ``removed`` / ``emptied`` / ``changed`` / ``renamed`` -- it rejects each counterfactual mutation of a
   pseudo-positive state (the leaf taken away, emptied, given another value, moved under another name);
   ``weak`` -- strong-vs-weak pairs: for every other attempt whose end state the plurality disagrees with,
   the grounded consensus facts it fails become paired cases (the consensus side accepted, the weak side
   rejected; a leaf only the weak attempt changed makes no check: it may be the one attempt that did what
   was asked), and the checks must reject every weak state that differs in a
   grounded fact. A check that fails a challenge is dropped; an evaluator that cannot reject such a
   weak state is not trusted (the op abstains on the task).
3. **Verdict** -- the attempt's end state fails a trusted check: drawback, naming the check and the
   challenges it passed (what ``vx explain`` shows); passes them all: clean.

The attempt judged is never one of its own pseudo-positives (its peers alone induce the checks), and the
ground-truth calls are never read. The template ``end_state_checks`` stores the suite in the op's spec
(``challenges``), with ``quorum`` and ``grounding``; the inducer proposes variants and the birth gate
decides which are born.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.families.tools.ops.executed import norm
from vx.families.tools.ops.states import ABSENT, canonical, not_judged, outcomes, usable
from vx.families.tools.ops.states import DEPENDS as STATE_DEPENDS
from vx.families.tools.ops.turns import user_turns
from vx.ops.core import abstain, clean, drawback
from vx.ops.specs import SpecError, inducer, template

DEPENDS = (__name__, *STATE_DEPENDS)
CHALLENGES = ("accept", "removed", "emptied", "changed", "renamed", "weak")
GROUNDINGS = ("text", "any")
#: A text value longer than this is checked by the phrases the user quoted in it, not whole.
LONG_TEXT = 60
#: Path segments too generic to ground a check ("content" is in every file's path).
GENERIC = frozenset({"content", "contents", "name", "root", "type", "status", "value", "id", "true", "false"})
_QUOTED = re.compile(r"""'([^']{3,200})'|"([^"]{3,200})"|“([^”]{3,200})”""")


@attrs.frozen
class Check:
    """One check of an end state: ``kind`` equals | absent | contains | unchanged, on a leaf ``path``."""

    kind: str
    path: str
    value: Any = None  # equals: the value; contains: the phrase

    def holds(self, mine: Mapping[str, Any]) -> bool:
        """Whether an end state's facts (changed leaves; a leaf left out is unchanged) pass the check."""
        got = mine.get(self.path, _UNCHANGED)
        if self.kind == "unchanged":
            return got is _UNCHANGED
        if self.kind == "absent":
            return got == ABSENT
        if self.kind == "equals":
            return got == self.value
        return isinstance(got, str) and norm(self.value) in norm(got)

    def text(self) -> str:
        where = show_path(self.path)
        if self.kind == "unchanged":
            return f"{where} is left as it was"
        if self.kind == "absent":
            return f"{where} is gone"
        if self.kind == "contains":
            return f"{where} contains {json.dumps(self.value)[:60]}"
        return f"{where} = {json.dumps(self.value, default=str)[:60]}"

    def mutations(self, kinds: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
        """Counterfactual mutations of a state that passes the check (as the changed leaf alone): each one
        a passing state should not survive."""
        out: list[tuple[str, dict[str, Any]]] = []
        if self.kind == "unchanged":
            return [("changed", {self.path: "~"})] if "changed" in kinds else []
        if self.kind == "absent":
            if "removed" in kinds or "renamed" in kinds:
                out.append(("restored", {self.path: "~"}))
            return out
        v = self.value
        if "removed" in kinds:
            out.append(("removed", {self.path: ABSENT}))
        if "emptied" in kinds:
            out.append(("emptied", {self.path: "" if isinstance(v, str) else None}))
        if "changed" in kinds:
            if self.kind == "contains":
                out.append(("changed", {self.path: "something else"}))
            elif isinstance(v, bool):
                out.append(("changed", {self.path: not v}))
            elif isinstance(v, (int, float)):
                out.append(("changed", {self.path: v + 1}))
            else:
                out.append(("changed", {self.path: f"{v}~"}))
        if "renamed" in kinds:
            out.append(("renamed", {self.path: ABSENT, self.path + "~": v}))
        return out


class _Unchanged:
    def __repr__(self) -> str:
        return "<unchanged>"


_UNCHANGED = _Unchanged()


def show_path(path: str) -> str:
    """A leaf path for people: ``GorillaFileSystem: alex/workspace/log.txt/content``."""
    cls, _, rest = path.partition("/")
    parts = [p for p in rest.split("/") if p not in ("contents", "root")]
    return f"{cls}: {'/'.join(parts)}"


def _segments(path: str) -> list[str]:
    return [p for p in path.split("/")[1:] if p and not p.isdigit() and p.lower() not in GENERIC]


def grounded(check: Check, said: str, quotes: Sequence[str]) -> bool:
    """Whether the user's words mention what the check is about."""
    if check.kind == "contains":
        return True  # its phrase is a quote of the user's
    names = [norm(s) for s in _segments(check.path)[-2:]]
    if any(len(n) >= 3 and n in said for n in names):
        return True
    v = check.value
    if check.kind == "equals" and not isinstance(v, bool) and v is not None:
        n = norm(v)
        return len(n) >= 2 and (n in said or any(n == norm(q) for q in quotes))
    return False


def candidates(voters: Sequence[Mapping[str, Any]], quorum: float, quotes: Sequence[str]) -> list[Check]:
    """The consensus facts of the other attempts' end states as checks (module docstring, step 1)."""
    n = len(voters)
    by_path: dict[str, Counter[str]] = {}
    values: dict[tuple[str, str], Any] = {}
    for v in voters:
        for path, value in (v.get("facts") or {}).items():
            key = repr(canonical(value))
            by_path.setdefault(path, Counter())[key] += 1
            values[(path, key)] = value
    checks = []
    for path, counts in sorted(by_path.items()):
        key, support = counts.most_common(1)[0]
        if support < 2 or support < quorum * n or 2 * support <= n:
            continue  # half the attempts or fewer: a tie with the rest is no consensus
        value = values[(path, key)]
        if value == ABSENT:
            checks.append(Check("absent", path))
        elif isinstance(value, str) and len(value) > LONG_TEXT:
            phrases = [q for q in quotes if norm(q) and norm(q) in norm(value)]
            checks.extend(Check("contains", path, q) for q in phrases[:3])
            if not phrases:
                checks.append(Check("equals", path, value))
        else:
            checks.append(Check("equals", path, value))
    return checks


@attrs.frozen
class Suite:
    """A task's evaluator: its trusted checks and what each passed, or why none is trusted."""

    checks: tuple[Check, ...] = ()
    passed: tuple[str, ...] = ()  # per check, the challenges it passed (text)
    trusted: bool = False
    why: str = ""


def _challenged(c: Check, voters: Sequence[Mapping[str, Any]], kinds: Sequence[str]) -> str | None:
    """What the check passed of its challenge states (text), or None when it failed one."""
    positives = [v.get("facts") or {} for v in voters if c.holds(v.get("facts") or {})]
    if "accept" in kinds and len(positives) < 2:
        return None
    muts = c.mutations(kinds)
    if positives and any(c.holds({**positives[0], **changed}) for _, changed in muts):
        return None
    names = [name for name, _ in muts]
    return f"accepts {len(positives)} pseudo-positive state(s)" + (f"; rejects {', '.join(names)}" if names else "")


def build_suite(
    task: Mapping[str, Any], voters: Sequence[Mapping[str, Any]], quorum: float, grounding: str, kinds: Sequence[str]
) -> Suite:
    """Steps 1 and 2 of the module docstring for one task, from the other attempts' observations."""
    said_turns = user_turns(task)
    said = norm(" ".join(said_turns))
    quotes = [next(g for g in m.groups() if g) for t in said_turns for m in _QUOTED.finditer(t)]
    consensus = candidates(voters, quorum, quotes)
    found = [c for c in consensus if grounding == "any" or grounded(c, said, quotes)]
    kept: list[Check] = []
    passed: list[str] = []
    for c in found:
        ok = _challenged(c, voters, kinds)
        if ok is not None:
            kept.append(c)
            passed.append(ok)
    if "weak" in kinds:
        states = Counter(v["turns"][-1]["state"] for v in voters if v.get("turns"))
        top = states.most_common(1)[0][0] if states else ""
        weak = [v for v in voters if v.get("turns") and v["turns"][-1]["state"] != top]
        by_path = {c.path: c for c in consensus}
        rejected = 0
        for w in weak:
            wf = w.get("facts") or {}
            if kept and not all(c.holds(wf) for c in kept):
                rejected += 1
                continue
            # a strong-vs-weak pair: the first fact the task mentions where the weak state leaves the consensus
            # becomes a check (the consensus side accepted, the weak side rejected)
            added = None
            for path in sorted(set(wf) | set(by_path)):
                want = by_path.get(path)
                if want is None:
                    # a leaf the weak attempt changed and the others left: no check (it may be the one
                    # attempt that did what the user asked; BFCL compares with the task's answer, not peers)
                    continue
                if want.holds(wf):
                    continue
                if grounding == "text" and not grounded(want, said, quotes):
                    continue
                if _challenged(want, voters, kinds) is None:
                    continue
                added = want
                break
            if added is None:
                continue  # it differs only in what the task never mentions: equivalent under the instruction
            if added not in kept:
                kept.append(added)
                passed.append("from a strong-vs-weak pair: " + (_challenged(added, voters, kinds) or ""))
            rejected += 1
        if weak:
            passed = [p + f"; rejects {rejected} of {len(weak)} weak state(s)" for p in passed]
    if not kept:
        return Suite(why="no check of a fact the task mentions passed its challenge states")
    return Suite(tuple(kept), tuple(passed), True)


def state_checks_judge(quorum: float, grounding: str, challenges: Sequence[str]) -> Any:
    """The judge of an ``end_state_checks`` op (module docstring)."""
    if not 0 < quorum <= 1:
        raise SpecError(f"end_state_checks: quorum must be in (0, 1], got {quorum}")
    if grounding not in GROUNDINGS:
        raise SpecError(f"end_state_checks: grounding must be one of {', '.join(GROUNDINGS)}, not {grounding!r}")
    unknown = [c for c in challenges if c not in CHALLENGES]
    if unknown:
        raise SpecError(f"end_state_checks: unknown challenge(s) {', '.join(map(str, unknown))}; known: {CHALLENGES}")
    kinds = tuple(str(c) for c in challenges)

    def judge(task, mine, peers, ctx):
        if not usable(mine):
            return not_judged(mine)
        voters = [p for p in peers if usable(p)]
        if len(voters) < 2:
            return abstain(f"{len(voters)} other attempt(s) replayed: the checks are induced from at least two")
        suite = build_suite(task, voters, quorum, grounding, kinds)
        if not suite.trusted:
            return abstain(f"no evaluator for this task: {suite.why}")
        mf = mine.get("facts") or {}
        for c, passed in zip(suite.checks, suite.passed, strict=True):
            if not c.holds(mf):
                got = mf.get(c.path, "<unchanged>")
                return drawback(
                    f"the end state fails the check {c.text()} (it has {json.dumps(got, default=str)[:60]}); "
                    f"the check {passed}; {len(suite.checks)} check(s) in the task's evaluator"
                )
        return clean(
            f"the end state passes the task's {len(suite.checks)} check(s): "
            + "; ".join(f"{c.text()} [{p}]" for c, p in zip(suite.checks[:3], suite.passed[:3], strict=True))
        )

    return judge


@template(
    "end_state_checks",
    kind="exec",
    params={"quorum": "float", "grounding": "str", "challenges": "list"},
    family="tools-multi",
    depends=DEPENDS,
    observer=outcomes,
)
def end_state_checks(quorum: float, grounding: str, challenges: list):
    """The end state fails a check of the task's evaluator: checks induced from the task's words and the
    other attempts' consensus end state, trusted once they pass their challenge states (the suite:
    accept, removed, emptied, changed, renamed, weak)."""
    return state_checks_judge(float(quorum), str(grounding), list(challenges))


#: Variants the inducer proposes (the birth gate decides).
VARIANTS: tuple[dict[str, Any], ...] = (
    {"quorum": 0.5, "grounding": "text", "challenges": list(CHALLENGES)},
    {"quorum": 0.5, "grounding": "any", "challenges": list(CHALLENGES)},
    {"quorum": 0.67, "grounding": "text", "challenges": list(CHALLENGES)},
    {"quorum": 0.5, "grounding": "text", "challenges": ["accept", "removed", "emptied", "changed", "renamed"]},
)


@inducer("end_state_checks")
def _induce_checks(cluster: list, good: list) -> list[dict[str, Any]]:
    # the checks themselves are induced per task at judging time, from the peers; synthesis chooses the
    # recipe (quorum, grounding, suite) for clusters of multi-turn tasks and the birth gate decides
    if not any(isinstance(task.get("turns"), list) and task.get("involved_classes") for task, _ in cluster):
        return []
    return [{**v, "challenges": list(v["challenges"])} for v in VARIANTS]


#: The seed's evaluator-first op: the first variant, as a typed spec (it is born like a synthesized one).
SEED_SPEC: dict[str, Any] = {
    "kind": "exec",
    "check": "end_state_checks",
    "params": {**VARIANTS[0], "challenges": list(CHALLENGES)},
    "detects": "state_check",
    "name": "fails_state_checks",
    "description": "The end state fails a check of the task's evaluator (induced from the task's words and the "
    "other attempts' consensus, trusted once it passed its challenge states)",
}

__all__ = [
    "CHALLENGES",
    "Check",
    "SEED_SPEC",
    "Suite",
    "VARIANTS",
    "build_suite",
    "candidates",
    "end_state_checks",
    "grounded",
    "show_path",
    "state_checks_judge",
]
