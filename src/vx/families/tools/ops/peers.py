"""Peer ops: an answer compared with the other answers to the same question, in normal form.

Every answer is observed once (:data:`answer_form`): its normal form against the offered docs
(:mod:`vx.families.tools.normalize`: defaults filled, values compared as values, calls as a multiset) and
its exact form (the calls as decoded). Judging happens in the parent, over the answers' observations.

``disagrees_with_peers`` (the name the code and SQL families' peer ops have too: one idea, three families)
compares an answer with the **voters** -- the other answers that can be read -- level by level, from the
coarsest to the finest:

1. *whether to call*: a call is a drawback when at least ``decline_quorum`` (0.3) of the voters call nothing
   (answers in words are rare where a function fits: a question many answers decline is one no offered
   function fits), and calling nothing is one when at least ``call_quorum`` (0.8) of them call;
2. *which functions*: the multiset of functions called;
3. *which arguments*: the whole normal form, among the voters that call the same functions.

At the two finer levels the voters' answers are grouped; the top group is a **clear plurality** when it has at least
``min_support`` voters, at least ``quorum`` of those who answered at that level, and more than the
runner-up. The op **fires** at the first level where the answer differs from a clear plurality (the message
names the level and the difference), is **clean** when it agrees with the clear plurality of every level it
reaches, and **abstains** when too few voters read or the first level it reaches has no clear plurality.

Baselines (shadow: applied and recorded, never selected), what a person could use instead:
``outside_normal_plurality`` -- the answer's normal form is not a most common one (plurality over normalised
answers); ``outside_exact_plurality`` -- the same over the exact decoded calls; and ``outside_consensus``,
the pack's ``agreement`` evidence for the label-free false-alarm estimates: clean when at least two other
answers are read and at least :data:`CONSENSUS` of them have this answer's normal form.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.families.tools import normalize
from vx.families.tools.normalize import NormalCall, answer_key, normal_answer
from vx.families.tools.ops import artifact
from vx.families.tools.ops.artifact import answer_of
from vx.families.tools.ops.static import format_problem
from vx.ops.core import abstain, clean, drawback, observer, peer_op
from vx.ops.vote import clear_plurality
from vx.text import printable

DEPENDS = (
    __name__,
    normalize,
    artifact,
    "vx.families.tools.ops.static",
    "vx.families.tools.decode",
    "vx.families.tools.dialect",
    "vx.ops.vote",
)
#: The seed op's rule (chosen on the train split's labels: docs/tools.md)
DEFAULT_QUORUM = 0.3
DEFAULT_SUPPORT = 2
#: Whether to call: a call is a drawback when at least this share of the other answers call nothing (on the
#: train split no question a function fits has a fifth of its answers declining; most questions none fits
#: have more), and declining is one when at least ``CALL_QUORUM`` of them call
DECLINE_QUORUM = 0.3
CALL_QUORUM = 0.8
#: An optional argument differs when it is left out where more than this share of the answers calling the
#: same functions give it, or given where more than this share leave it out (chosen on the train split)
OMIT_QUORUM = 0.5
#: ``outside_consensus``: the share of the other answers that must share this answer's normal form
CONSENSUS = 0.5
LEVELS = ("call", "functions", "arguments")


@observer(depends=DEPENDS)
def answer_form(task, output, ctx):
    """An answer's normal form and exact form, as plain data."""
    answer = answer_of(task, output, ctx)
    normal = normal_answer(answer.decoded, answer.offered)
    exact = (
        normalize.UNREADABLE
        if not answer.decoded.ok
        else json.dumps(
            sorted(json.dumps([c.written, dict(c.args)], sort_keys=True, default=str) for c in answer.decoded.calls)
        )
    )
    return {
        "status": normal["status"],
        "calls": normal["calls"],
        "key": answer_key(normal),
        "exact": exact,
        "names": sorted(c[0] for c in normal["calls"]),
        "misformat": format_problem(answer.decoded),
    }


@attrs.frozen
class Form:
    """One answer's observation."""

    status: str
    key: str
    exact: str
    names: tuple[str, ...]
    calls: tuple[NormalCall, ...]
    #: why its calls are in a form the answer format does not take ("" when they are not)
    misformat: str = ""

    @classmethod
    def from_data(cls, data: Any) -> Form:
        if not isinstance(data, Mapping):
            return cls("unreadable", normalize.UNREADABLE, normalize.UNREADABLE, (), ())
        return cls(
            str(data.get("status", "unreadable")),
            str(data.get("key", "")),
            str(data.get("exact", "")),
            tuple(data.get("names") or ()),
            tuple(NormalCall.from_data(c) for c in data.get("calls") or ()),
            str(data.get("misformat") or ""),
        )

    @property
    def read(self) -> bool:
        return self.status != "unreadable"


def _names(names: Sequence[str]) -> str:
    if not names:
        return "nothing"
    c = Counter(names)
    return ", ".join(printable(n)[:60] + (f" ×{k}" if k > 1 else "") for n, k in c.items())


def _show(v: Any) -> str:
    t = v if isinstance(v, str) and v.startswith("<") else json.dumps(v, ensure_ascii=False, default=str)
    t = printable(t)
    return t if len(t) <= 50 else t[:49] + "…"


@attrs.frozen
class Vote:
    verdict: int  # 1 drawback, 0 clean, -1 abstain
    message: str
    #: the level that decided the verdict (``call``, ``functions``, ``arguments``; "" before any level)
    level: str = ""


def vote(
    mine_data: Any,
    peers: Sequence[Any],
    *,
    quorum: float = DEFAULT_QUORUM,
    min_support: int = DEFAULT_SUPPORT,
    depth: str = "arguments",
    decline_quorum: float = DECLINE_QUORUM,
    call_quorum: float = CALL_QUORUM,
) -> Vote:
    """The peer verdict of one answer (the rule in the module docstring); ``depth`` is the finest level
    compared (``call``, ``functions`` or ``arguments``)."""
    mine = Form.from_data(mine_data)
    if not peers:
        return Vote(-1, "no other answer to this question is in the batch: no peers to compare with")
    if not mine.read:
        return Vote(-1, "the answer cannot be read: nothing to compare (misformatted judges it)")
    voters = [f for f in map(Form.from_data, peers) if f.read]
    if len(voters) < max(1, min_support):
        return Vote(
            -1, f"only {len(voters)} of {len(peers)} other answer(s) can be read (at least {min_support} needed)"
        )
    levels = LEVELS[: LEVELS.index(depth) + 1]
    # 1. whether to call
    declined = sum(f.status == "no_call" for f in voters)
    share = declined / len(voters)
    if mine.status == "calls" and share >= decline_quorum:
        if mine.misformat:
            return Vote(
                0,
                f"its calls are in a form the answer format does not take, which counts as no call, as "
                f"{declined} of {len(voters)} other answers call nothing",
                "call",
            )
        return Vote(
            1,
            f"it calls {_names(mine.names)}, while {declined} of {len(voters)} other answers call nothing "
            "(no offered function seems to fit)",
            "call",
        )
    if mine.status == "no_call":
        named = [tuple(f.names) for f in voters if f.status == "calls"]
        if named and 1 - share >= call_quorum:
            common = Counter(named).most_common(1)[0][0]
            return Vote(
                1,
                f"it calls nothing, while {len(named)} of {len(voters)} other answers call a function "
                f"({_names(common)})",
                "call",
            )
        if share >= decline_quorum:
            return Vote(0, f"like {declined} of {len(voters)} other answers, it calls nothing", "call")
        return Vote(
            -1, f"it calls nothing; {len(voters) - declined} of {len(voters)} other answers call a function", "call"
        )
    if len(levels) == 1:
        return Vote(0, f"it calls, as {len(voters) - declined} of {len(voters)} other answers do", "call")
    # 2. which functions
    callers = [f for f in voters if f.status == "calls"]
    if len(callers) < max(1, min_support):
        return Vote(-1, f"only {len(callers)} other answer(s) call a function", "functions")
    fns = Counter(f.names for f in callers)
    clear = clear_plurality(fns, quorum, min_support)
    if clear is None:
        return Vote(-1, f"the {len(callers)} other answers that call agree on no set of functions", "functions")
    top_fns, support, answered = clear
    if top_fns != mine.names:
        return Vote(
            1,
            f"it calls {_names(mine.names)}, while {support} of {answered} other answers that call "
            f"call {_names(top_fns)}",
            "functions",
        )
    if len(levels) == 2:
        return Vote(
            0, f"it calls {_names(mine.names)}, as {support} of {answered} other answers that call do", "functions"
        )
    # 3. which arguments
    same = [f for f in callers if f.names == mine.names]
    found = _argument_disagreement(mine, same, quorum=quorum, min_support=min_support)
    if found is None:
        return Vote(
            -1,
            f"it calls {_names(mine.names)} as {support} of {answered} others do; too few of them to compare arguments",
            "arguments",
        )
    if found:
        return Vote(1, found, "arguments")
    return Vote(
        0,
        f"its calls and arguments agree with the {len(same)} other answers that call the same functions",
        "arguments",
    )


ABSENT = "<left out>"


def compatible(a: Any, b: Any) -> bool:
    """Whether two normal values may name the same thing: equal; strings one of which begins or ends the
    other ("paris" and "parisfrance", "lakers" and "losangeleslakers") or abbreviates it (:func:`abbreviates`:
    "cm" and "centimeters", "uk" and "unitedkingdom"); lists of the same length whose elements are
    compatible in order or, for strings, as sorted."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False  # True == 1 in Python; a boolean is not a number here
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):
        short_, long_ = sorted((a, b), key=len)
        if len(short_) >= 3 and (long_.startswith(short_) or long_.endswith(short_)):
            return True
        return abbreviates(short_, long_)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        if all(compatible(x, y) for x, y in zip(a, b)):
            return True
        if all(isinstance(x, str) for x in a + b):
            return all(compatible(x, y) for x, y in zip(sorted(a), sorted(b)))
    return False


def abbreviates(short_: str, long_: str) -> bool:
    """Whether ``short_`` (two to four letters) abbreviates ``long_``: the same first letter, its other
    letters in order in the rest, and not merely the first letters ("cm" and "centimeters", "kg" and
    "kilograms", "nyc" and "newyorkcity"; not "pa" and "paris")."""
    if not (2 <= len(short_) <= 4 and short_.isalpha() and len(long_) > len(short_) + 1):
        return False
    if short_[0] != long_[0] or long_.startswith(short_):
        return False
    rest = iter(long_[1:])
    return all(ch in rest for ch in short_[1:])


def _match(mine: Sequence[NormalCall], theirs: Sequence[NormalCall]) -> list[NormalCall | None]:
    """Each of my calls paired with one of theirs of the same function (the one sharing most argument
    values; each of theirs used once)."""
    left = list(theirs)
    out: list[NormalCall | None] = []
    for call in mine:
        same_fn = [c for c in left if c.name == call.name]
        if not same_fn:
            out.append(None)
            continue
        best = max(same_fn, key=lambda c: sum(compatible(c.args.get(k, ABSENT), v) for k, v in call.args.items()))
        left.remove(best)
        out.append(best)
    return out


def _argument_disagreement(
    mine: Form, same: Sequence[Form], *, quorum: float, min_support: int, omit_quorum: float = OMIT_QUORUM
) -> str | None:
    """The first argument of mine that differs from a clear plurality of the other answers calling the same
    functions ("" when none does; None when fewer than ``min_support`` answers call them). A value differs
    when it is not :func:`compatible` with the top value among those who give the parameter; leaving out an
    optional parameter differs when more than ``omit_quorum`` of them give it, and giving one when more than
    ``omit_quorum`` leave it out."""
    if len(same) < max(1, min_support):
        return None
    pairs = [_match(mine.calls, f.calls) for f in same]
    for k, call in enumerate(mine.calls):
        matched = [c for c in (p[k] for p in pairs) if c is not None]
        if len(matched) < max(1, min_support):
            continue
        params = sorted(set(call.args) | {a for c in matched for a in c.args})
        for name in params:
            values = [c.args.get(name, ABSENT) for c in matched]
            given = [v for v in values if v != ABSENT]
            mine_v = call.args.get(name, ABSENT)
            if mine_v == ABSENT:
                if len(given) > omit_quorum * len(values) and len(given) >= min_support:
                    return _said(call, name, mine_v, _top(given), len(given), len(values))
                continue
            left_out = len(values) - len(given)
            if left_out > omit_quorum * len(values) and left_out >= min_support and name not in call.required:
                return _said(call, name, mine_v, ABSENT, left_out, len(values))
            if not given:
                continue
            groups: list[list[Any]] = []
            for v in given:
                for g in groups:
                    if compatible(g[0], v):
                        g.append(v)
                        break
                else:
                    groups.append([v])
            groups.sort(key=len, reverse=True)
            top = groups[0]
            runner = len(groups[1]) if len(groups) > 1 else 0
            if len(top) < min_support or len(top) < quorum * len(given) or len(top) <= runner:
                continue
            if not compatible(mine_v, top[0]) and not any(compatible(mine_v, v) for v in top):
                return _said(call, name, mine_v, top[0], len(top), len(values))
    return ""


def _top(values: Sequence[Any]) -> Any:
    counts = Counter(json.dumps(v, sort_keys=True, default=str) for v in values)
    return json.loads(counts.most_common(1)[0][0])


def _said(call: NormalCall, name: str, mine: Any, theirs: Any, support: int, of: int) -> str:
    return (
        f"{printable(call.name)[:60]}: {printable(name)[:40]} = {_show(mine)}, where {support} of the {of} other "
        f"answers calling it give {_show(theirs)}"
    )


def disagrees_with_peers_check(
    quorum: float = DEFAULT_QUORUM, min_support: int = DEFAULT_SUPPORT, depth: str = "arguments"
):
    """The judge of a ``disagrees_with_peers`` variant (see :func:`vote`)."""
    from vx.ops.specs import SpecError

    if depth not in LEVELS:
        raise SpecError(f"answer_disagrees_with_peers: depth must be one of {', '.join(LEVELS)}, not {depth!r}")
    if not 0 < quorum <= 1:
        raise SpecError(f"answer_disagrees_with_peers: quorum must be in (0, 1], got {quorum}")
    if min_support < 1:
        raise SpecError(f"answer_disagrees_with_peers: min_support must be at least 1, got {min_support}")

    def judge(task, mine, peers, ctx):
        v = vote(mine, peers, quorum=quorum, min_support=min_support, depth=depth)
        return {1: drawback, 0: clean, -1: abstain}[v.verdict](v.message)

    return judge


@peer_op(observe=answer_form, tier="static", detects="wrong_call", depends=DEPENDS)
def disagrees_with_peers(task, mine, peers, ctx):
    """Whether to call, which functions, or which arguments: the answer differs from a clear plurality of
    the other answers to the question, in normal form."""
    return disagrees_with_peers_check()(task, mine, peers, ctx)


@peer_op(observe=answer_form, tier="static", detects="wrong_call", depends=DEPENDS)
def disagrees_on_calls(task, mine, peers, ctx):
    """Whether to call, or which functions: the answer differs from a clear plurality of the other answers
    at the coarser two levels of ``disagrees_with_peers`` (its arguments are not compared)."""
    return disagrees_with_peers_check(depth="functions")(task, mine, peers, ctx)


@peer_op(observe=answer_form, tier="static", detects="wrong_value", depends=DEPENDS)
def disagrees_on_arguments(task, mine, peers, ctx):
    """Which arguments: the answer calls the functions a clear plurality of the other answers calls, and
    an argument differs from theirs (the finest level of ``disagrees_with_peers``; where the answer differs
    at a coarser level, ``disagrees_on_calls`` speaks and this op abstains)."""
    v = vote(mine, peers)
    if v.level in ("call", "functions"):
        if v.verdict == 1:
            return abstain(f"it differs before its arguments ({v.message}): disagrees_on_calls says so")
        if v.verdict == 0:
            return abstain(f"{v.message}: no arguments to compare")
    return {1: drawback, 0: clean, -1: abstain}[v.verdict](v.message)


def _plurality(mine: Any, peers: Sequence[Any], field: str, what: str):
    me = Form.from_data(mine)
    if not me.read:
        return abstain("the answer cannot be read: nothing to vote with")
    answers = [getattr(me, field)] + [getattr(f, field) for f in map(Form.from_data, peers) if f.read]
    if len(answers) < 2:
        return abstain("no other answer that can be read is in the batch")
    counts = Counter(answers)
    big = max(counts.values())
    if counts[getattr(me, field)] == big:
        return clean(f"its {what} is a most common one ({big} of {len(answers)} answers)")
    return drawback(
        f"its {what} is shared by {counts[getattr(me, field)]} of {len(answers)} answers; the most common by {big}"
    )


@peer_op(observe=answer_form, tier="static", detects="wrong_call", depends=DEPENDS)
def outside_normal_plurality(task, mine, peers, ctx):
    """Plurality over normalised answers: the answer's normal form is not a most common one (a baseline)."""
    return _plurality(mine, peers, "key", "normal form")


@peer_op(observe=answer_form, tier="static", detects="wrong_call", depends=DEPENDS)
def outside_exact_plurality(task, mine, peers, ctx):
    """Exact plurality: the answer's decoded calls, exactly as written, are not a most common answer (a
    baseline)."""
    return _plurality(mine, peers, "exact", "exact answer")


@peer_op(observe=answer_form, tier="static", detects="wrong_call", depends=DEPENDS)
def outside_consensus(task, mine, peers, ctx):
    """Consensus: clean when at least two other answers are read and at least half of them have this
    answer's normal form; a drawback otherwise (a baseline: its clean verdict is evidence that the answer
    is right)."""
    me = Form.from_data(mine)
    if not me.read:
        return abstain("the answer cannot be read")
    voters = [f for f in map(Form.from_data, peers) if f.read]
    if len(voters) < 2:
        return abstain(f"{len(voters)} other answer(s) read: consensus needs at least two")
    same = sum(f.key == me.key for f in voters)
    if same >= CONSENSUS * len(voters):
        return clean(f"{same} of the {len(voters)} other answers have its normal form")
    return drawback(f"only {same} of the {len(voters)} other answers have its normal form")


@peer_op(observe=answer_form, tier="static", detects="format", depends=DEPENDS)
def misformatted(task, mine, peers, ctx):
    """The calls are in a form the answer format does not take -- calls that cannot be read, call objects
    written as text, the whole answer one markdown code fence, a fenced block of calls that are not a call
    list, text parts among structured calls -- on a question a function fits. (A call in the wrong form is
    no call at all: where at least ``DECLINE_QUORUM`` of the other answers call nothing, no offered function
    fits and calling nothing was right.)"""
    why = str(mine.get("misformat") or "") if isinstance(mine, Mapping) else ""
    status = mine.get("status") if isinstance(mine, Mapping) else None
    if not (status == "calls" or (status == "unreadable" and why)):
        return abstain("no call")
    if not why:
        return clean("the calls are in a form the answer format takes")
    voters = [f for f in map(Form.from_data, peers) if f.read]
    if len(voters) >= DEFAULT_SUPPORT:
        declined = sum(f.status == "no_call" for f in voters)
        if declined >= DECLINE_QUORUM * len(voters):
            return clean(
                f"{why}; a call in the wrong form counts as none, and {declined} of {len(voters)} other answers "
                "call nothing"
            )
    return drawback(printable(why))


#: The pack's peer ops: the seed op, its levels, and the baselines (shadow).
PEER_OPS = (
    disagrees_with_peers,
    disagrees_on_calls,
    disagrees_on_arguments,
    misformatted,
    outside_normal_plurality.as_baseline(),
    outside_exact_plurality.as_baseline(),
    outside_consensus.as_baseline(),
)

__all__ = [
    "CONSENSUS",
    "misformatted",
    "LEVELS",
    "PEER_OPS",
    "Vote",
    "OMIT_QUORUM",
    "abbreviates",
    "answer_form",
    "disagrees_on_arguments",
    "disagrees_on_calls",
    "disagrees_with_peers",
    "disagrees_with_peers_check",
    "outside_consensus",
    "outside_exact_plurality",
    "outside_normal_plurality",
    "vote",
]
