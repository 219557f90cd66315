"""Multi-turn peer ops: an attempt's replayed states and shown results beside the other attempts' at the
same task.

The observer :data:`outcomes` replays the attempt (the item's shared replay) and keeps, per user turn,
a digest of the backends' state after it, whether the agent called anything, and the results it was
shown (keys of the results of calls that ran and did not answer with an error), the calls it made and the
argument values it used, and where each shown result came from; and the *facts* of its
end state that differ from the initial state (:func:`facts`: a leaf path of the state and its value),
which the evaluator-first state checks read (:mod:`.checks`). Judging happens in the parent.

* ``state_disagrees_with_peers`` -- after some turn, the backends' state differs from a clear plurality
  of the other attempts' states after that turn (BFCL compares states turn by turn; not after a turn
  whose function is held out until the next, where BFCL compares none);
* ``missing_shown_result`` -- by some turn, nearly every other attempt was shown a result (the content
  of a file, a ticket, a flight cost...) this one never was: the user asked to see something and it
  never fetched it (BFCL checks that the results the ground truth was shown are among the agent's). Not
  missing: the result of a call this attempt made too (its answer differs only because the state does,
  which the state ops judge); a lookup (a short result a later call of the other attempt used) whose every
  value this attempt's own calls already use; a result this attempt is shown in the next turn when that
  user turn is a short answer (it asked for the value the task withheld first);
* ``outside_state_plurality`` (baseline, shadow) -- the end state is not the most common one among the
  attempts: what a user would do instead (exact plurality over end states);
* ``outside_state_unanimity`` (baseline, shadow) -- clean when at least two other attempts are in the
  batch and every one reaches this attempt's state after every turn: the pack's ``agreement`` evidence.

The rules' constants were chosen on the train split's labels (docs/tools.md). The check templates
``states_disagree_with_peers`` and ``results_missing_vs_peers`` let synthesis propose variants.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from vx.families.tools.ops.executed import acted, backend_error, leaves, norm
from vx.families.tools.ops.turns import DEPENDS as TURN_DEPENDS
from vx.families.tools.ops.turns import (
    EXEC_OP_TIMEOUT,
    NotReplayed,
    held_out,
    replayed,
    trajectory_of,
    user_turns,
)
from vx.families.tools.replay import CallOutcome
from vx.families.tools.trajectory import TrajectoryError
from vx.ops.core import abstain, clean, drawback, observer, peer_op
from vx.ops.specs import SpecError, inducer, template
from vx.ops.vote import clear_plurality

DEPENDS = (__name__, "vx.families.tools.ops.executed", "vx.ops.vote", *TURN_DEPENDS)
#: Facts of an end state kept in an observation (the backends' changes are a few dozen leaves).
MAX_FACTS = 400
#: Characters of a string value kept for checks that read it (longer ones keep a digest beside them).
TEXT_CHARS = 2000
#: Characters of a result kept to show in messages.
SHOWN_CHARS = 160
#: The seed ops' rules, chosen on the train split's labels (a quorum of 0.5 for states: with the pack's other
#: ops, the same balanced accuracy as 0.3 within 0.002, and 3.4% false alarms on correct trajectories, not 4.7%).
STATE_QUORUM, STATE_SUPPORT = 0.5, 2
SHOWN_QUORUM, SHOWN_SUPPORT = 0.84, 2
#: A shown result of at most this many scalar values is a lookup (an airport code, a symbol, a folder's
#: listing): an attempt whose own calls already use every one of its values had what it says.
LOOKUP_VALUES = 3
#: A user turn of at most this many words is an answer to a question (the value the task withheld): what the
#: others were shown by the turn before, an attempt that asked first may be shown in that turn. Chosen on the
#: train split's labels: 25 (``silent_turn``'s follow-up) also excuses results shown a turn late after a next
#: request, which BFCL fails, for the same false alarms.
ANSWER_WORDS = 10
#: Argument values kept per turn in an observation.
MAX_USED = 200
TURNS = ("all", "end")
ABSENT = "<absent>"


def canonical(value: Any) -> Any:
    """A plain value in the form ``==``-equal values share: dicts by sorted keys, an integral float as an int
    (BFCL's state checker compares with ``==``: key order does not count, and 2940 == 2940.0)."""
    if isinstance(value, Mapping):
        return sorted(((repr(k), canonical(v)) for k, v in value.items()), key=lambda kv: kv[0])
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, tuple):
        return tuple(canonical(v) for v in value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(canonical(value)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _flatten(v, f"{path}/{k}", out)
    elif isinstance(value, (list, tuple)) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{path}/{i}", out)
    else:
        out[path] = value


def leaf_facts(state: Mapping[str, Any] | None) -> dict[str, Any]:
    """A state as ``{leaf path: value}`` (``Class/key/key/...``; empty containers are leaves)."""
    out: dict[str, Any] = {}
    for cls_name, part in (state or {}).items():
        _flatten(part, str(cls_name), out)
    return out


def fact_value(value: Any) -> Any:
    """A leaf as an observation keeps it: scalars as they are, long strings cut with a digest appended."""
    if isinstance(value, str) and len(value) > TEXT_CHARS:
        return value[:TEXT_CHARS] + f"…<sha {_digest(value)}>"
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)[:TEXT_CHARS]
    return value


def facts(initial: Mapping[str, Any] | None, end: Mapping[str, Any] | None) -> dict[str, Any]:
    """The leaves of ``end`` that differ from ``initial``, and the initial leaves ``end`` lost (as
    :data:`ABSENT`), at most :data:`MAX_FACTS`."""
    a, b = leaf_facts(initial), leaf_facts(end)
    out: dict[str, Any] = {}
    for path, value in b.items():
        if path not in a or a[path] != value:
            out[path] = fact_value(value)
    for path in a:
        if path not in b:
            out[path] = ABSENT
    return dict(sorted(out.items())[:MAX_FACTS])


@observer(depends=DEPENDS)
def outcomes(task, output, ctx):
    """The attempt's states, calls and shown results per turn, and its end state's changed facts."""
    try:
        traj = trajectory_of(task, output, ctx)
    except TrajectoryError as exc:
        return {"ok": False, "note": f"no trajectory: {exc}"[:300]}
    try:
        rep = replayed(task, output, ctx)
    except NotReplayed as exc:
        return {"ok": False, "note": str(exc)[:300], "missing": True}
    turns = []
    texts: dict[str, str] = {}
    sources: dict[str, dict[str, Any]] = {}
    for k in range(len(traj.turns)):
        shown = []
        called = []
        used: set[str] = set()
        for c in rep.turn(k):
            if c.outcome == "ok":
                used.update(n for n in (norm(v) for v in leaves(c.call.args or {})) if len(n) >= 2)
            if c.outcome == "ok" and not backend_error(c):
                called.append(_call_key(c))
                key = _digest(c.result)
                shown.append(key)
                texts.setdefault(key, f"{c.call.name}: {c.result[:SHOWN_CHARS]}")
                sources.setdefault(key, _source(c, rep.calls))
        state = rep.states[k] if k < len(rep.states) else None
        turns.append(
            {
                "state": _digest(state) if state is not None else "",
                "acted": acted(traj, k),
                "shown": shown,
                "called": sorted(set(called)),
                "used": sorted(used)[:MAX_USED],
            }
        )
    return {
        "ok": rep.status == "ok",
        "note": rep.detail,
        "turns": turns,
        "texts": texts,
        "sources": sources,
        "facts": facts(rep.initial, rep.end),
    }


def _call_key(c: CallOutcome) -> str:
    """A call as ``name#digest of its arguments`` (equal calls share it)."""
    return f"{c.call.name}#{_digest(c.call.args)}"


def _source(c: CallOutcome, calls: Sequence[CallOutcome]) -> dict[str, Any]:
    """Where a shown result came from: the call (name and arguments) and, for a lookup, its values: a short
    result (at most :data:`LOOKUP_VALUES` scalars) whose every value a later call of the same attempt passes
    as an argument (an airport code, a symbol, a folder found to act on; a result the user asked to see and
    nothing used is no lookup)."""
    try:
        value = json.loads(c.result)
    except ValueError:
        value = None
    found = [n for n in (norm(v) for v in leaves(value)) if len(n) >= 2] if value is not None else []
    later = {
        norm(v)
        for d in calls
        if d.turn > c.turn or (d.turn == c.turn and d.step > c.step)
        for v in leaves(d.call.args or {})
    }
    lookup = 0 < len(found) <= LOOKUP_VALUES and all(v in later for v in found)
    return {"call": _call_key(c), "values": found if lookup else []}


# --------------------------------------------------------------------------- judging


def usable(obs: Any) -> bool:
    return isinstance(obs, Mapping) and bool(obs.get("ok")) and isinstance(obs.get("turns"), list)


def not_judged(mine: Any) -> Any:
    """The verdict on an attempt with no usable observation: a drawback when the backends are missing
    (never an abstention that passes), else an abstention (the root decides unreadable outputs)."""
    if isinstance(mine, Mapping) and mine.get("missing"):
        return drawback(str(mine.get("note") or "not replayed: BFCL's backends are not installed"))
    note = mine.get("note") if isinstance(mine, Mapping) else ""
    return abstain(str(note or "the attempt was not replayed to the end"))


def state_vote(
    mine: Any, peers: Sequence[Any], quorum: float, min_support: int, turns: str, skip: frozenset[int] = frozenset()
) -> Any:
    """The verdict of ``state_disagrees_with_peers`` and its variants (``skip``: turns not compared)."""
    if not usable(mine):
        return not_judged(mine)
    voters = [p for p in peers if usable(p)]
    if len(voters) < min_support:
        return abstain(f"{len(voters)} other attempt(s) replayed: at least {min_support} are needed to vote")
    me = mine["turns"]
    ks = range(len(me)) if turns == "all" else [len(me) - 1]
    agreed = 0
    for k in ks:
        if k in skip:
            continue
        groups = Counter(p["turns"][k]["state"] for p in voters if k < len(p["turns"]) and p["turns"][k]["state"])
        found = clear_plurality(groups, quorum, min_support)
        if found is None:
            continue
        top, support, n = found
        if me[k]["state"] != top:
            return drawback(
                f"after turn {k + 1} the backends' state differs from the one {support} of {n} other attempts reach"
            )
        agreed += 1
    if agreed:
        return clean(f"the state agrees with the other attempts' clear plurality after {agreed} turn(s)")
    return abstain(f"no turn has a clear plurality of states among the {len(voters)} other attempts")


def shown_vote(
    mine: Any, peers: Sequence[Any], quorum: float, min_support: int, follow_ups: frozenset[int] = frozenset()
) -> Any:
    """The verdict of ``missing_shown_result`` and its variants. ``follow_ups``: turns whose user text is a
    short answer to a question (the value the task withheld); what the others were shown by the turn before,
    this attempt may be shown in that turn (it asked first, and BFCL compares nothing in the asking turn)."""
    if not usable(mine):
        return not_judged(mine)
    voters = [p for p in peers if usable(p)]
    if len(voters) < min_support:
        return abstain(f"{len(voters)} other attempt(s) replayed: at least {min_support} are needed")
    me = mine["turns"]
    for k in range(len(me)):
        upto = k + 2 if k + 1 in follow_ups else k + 1
        have = {x for t in me[:upto] for x in t["shown"]}
        called = {x for t in me[:upto] for x in t.get("called") or ()}
        used = {x for t in me[:upto] for x in t.get("used") or ()}
        seen: Counter[str] = Counter()
        n = 0
        for p in voters:
            if k >= len(p["turns"]):
                continue
            n += 1
            theirs = {x for t in p["turns"][: k + 1] for x in t["shown"]}
            seen.update(theirs)
        for key, count in sorted(seen.items()):
            if count >= min_support and count >= quorum * n and key not in have:
                source = next((p["sources"][key] for p in voters if key in (p.get("sources") or {})), None)
                if source is not None and _had_it(source, called, used):
                    continue
                text = next((str(p["texts"].get(key)) for p in voters if key in (p.get("texts") or {})), key)
                return drawback(
                    f"by turn {k + 1}, {count} of {n} other attempts were shown {text!r}; this one never was"
                )
    return clean("it was shown every result nearly all other attempts were shown")


def _had_it(source: Mapping[str, Any], called: set[str], used: set[str]) -> bool:
    """Whether an attempt that was never shown a result the others were still had what BFCL compares: it made
    the same call itself (the result differs only because its state does, which the state ops judge), or the
    result is a short lookup whose every value its own calls already use (it knew the airport code, the
    symbol, the folder, and went straight to the call that needed it)."""
    if source.get("call") in called:
        return True
    values = source.get("values") or []
    return bool(values) and all(v in used for v in values)


def _check_params(name: str, quorum: float, min_support: int) -> None:
    if not 0 < quorum <= 1:
        raise SpecError(f"{name}: quorum must be in (0, 1], got {quorum}")
    if min_support < 1:
        raise SpecError(f"{name}: min_support must be at least 1, got {min_support}")


def state_check(quorum: float = STATE_QUORUM, min_support: int = STATE_SUPPORT, turns: str = "all") -> Any:
    """The judge of a ``state_disagrees_with_peers`` variant."""
    _check_params("states_disagree_with_peers", quorum, min_support)
    if turns not in TURNS:
        raise SpecError(f"states_disagree_with_peers: turns must be one of {', '.join(TURNS)}, not {turns!r}")

    def judge(task, mine, peers, ctx):
        # the turn before held-out functions come back asks for what no offered function does: BFCL checks
        # no state there, and attempts that try a workaround differ from those that say so
        skip = frozenset(at - 1 for at in held_out(task))
        return state_vote(mine, peers, quorum, min_support, turns, skip)

    return judge


def shown_check(quorum: float = SHOWN_QUORUM, min_support: int = SHOWN_SUPPORT) -> Any:
    """The judge of a ``missing_shown_result`` variant."""
    _check_params("results_missing_vs_peers", quorum, min_support)

    def judge(task, mine, peers, ctx):
        said = user_turns(task)
        follow_ups = frozenset(k for k, t in enumerate(said) if k and 0 < len(t.split()) <= ANSWER_WORDS)
        return shown_vote(mine, peers, quorum, min_support, follow_ups)

    return judge


@peer_op(observe=outcomes, detects="state_mismatch", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def state_disagrees_with_peers(task, mine, peers, ctx):
    """After some turn, the backends' state differs from a clear plurality of the other attempts' states."""
    return state_check()(task, mine, peers, ctx)


@peer_op(observe=outcomes, detects="missing_result", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def missing_shown_result(task, mine, peers, ctx):
    """By some turn, nearly every other attempt was shown a result this one never was."""
    return shown_check()(task, mine, peers, ctx)


@peer_op(observe=outcomes, detects="state_mismatch", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def outside_state_plurality(task, mine, peers, ctx):
    """Exact plurality over end states: the attempt's end state is not the most common one (a baseline)."""
    if not usable(mine):
        return not_judged(mine)
    ends = [mine["turns"][-1]["state"] if mine["turns"] else ""]
    ends += [p["turns"][-1]["state"] for p in peers if usable(p) and p["turns"]]
    if len(ends) < 2:
        return abstain("no other attempt replayed: no plurality to join")
    counts = Counter(ends)
    top = max(counts.values())
    if counts[ends[0]] == top:
        return clean(f"its end state is a most common one ({top} of {len(ends)} attempts)")
    return drawback(f"its end state is shared by {counts[ends[0]]} of {len(ends)} attempts; the most common by {top}")


@peer_op(observe=outcomes, detects="state_mismatch", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def outside_state_unanimity(task, mine, peers, ctx):
    """Unanimity: clean when at least two other attempts are in the batch and every one reaches this
    attempt's state after every turn (a baseline: its clean verdict is evidence of a correct trajectory)."""
    if not usable(mine):
        return not_judged(mine)
    if len(peers) < 2:
        return abstain(f"{len(peers)} other attempt(s) in the batch: unanimity needs at least two")
    me = [t["state"] for t in mine["turns"]]
    for j, p in enumerate(peers, 1):
        if not usable(p) or [t["state"] for t in p["turns"]] != me:
            return drawback(f"another attempt ({j} of {len(peers)}) reaches a different state")
    return clean(f"every one of the {len(peers)} other attempts reaches the same states")


# --------------------------------------------------------------------------- templates

#: Variants the inducers propose (the birth gate decides); the seed op's parameters first.
STATE_VARIANTS: tuple[dict[str, Any], ...] = (
    {"quorum": STATE_QUORUM, "min_support": STATE_SUPPORT, "turns": "all"},
    {"quorum": 0.3, "min_support": 2, "turns": "all"},
    {"quorum": 0.5, "min_support": 2, "turns": "end"},
    {"quorum": STATE_QUORUM, "min_support": 3, "turns": "all"},
)
SHOWN_VARIANTS: tuple[dict[str, Any], ...] = (
    {"quorum": SHOWN_QUORUM, "min_support": SHOWN_SUPPORT},
    {"quorum": 0.67, "min_support": 3},
    {"quorum": 1.0, "min_support": 3},
)


@template(
    "states_disagree_with_peers",
    kind="exec",
    params={"quorum": "float", "min_support": "int", "turns": "str"},
    family="tools-multi",
    depends=DEPENDS,
    observer=outcomes,
)
def states_disagree_with_peers(quorum: float, min_support: int, turns: str):
    """After some turn (all turns, or the end), the backends' state differs from a clear plurality of the
    other attempts' (quorum: share of voters; min_support: voters needed)."""
    return state_check(float(quorum), int(min_support), str(turns))


@template(
    "results_missing_vs_peers",
    kind="exec",
    params={"quorum": "float", "min_support": "int"},
    family="tools-multi",
    depends=DEPENDS,
    observer=outcomes,
)
def results_missing_vs_peers(quorum: float, min_support: int):
    """By some turn, at least a quorum of the other attempts were shown a result this one never was."""
    return shown_check(float(quorum), int(min_support))


def _multi_turn(cluster: list) -> bool:
    return any(isinstance(task.get("turns"), list) and task.get("involved_classes") for task, _ in cluster)


@inducer("states_disagree_with_peers")
def _induce_state_variants(cluster: list, good: list) -> list[dict[str, Any]]:
    # a peer verdict needs the whole batch, which a cluster of (task, output) pairs does not carry:
    # propose the variants for multi-turn tasks and let the birth gate decide
    return [dict(v) for v in STATE_VARIANTS] if _multi_turn(cluster) else []


@inducer("results_missing_vs_peers")
def _induce_shown_variants(cluster: list, good: list) -> list[dict[str, Any]]:
    return [dict(v) for v in SHOWN_VARIANTS] if _multi_turn(cluster) else []


PEER_OPS = (
    state_disagrees_with_peers,
    missing_shown_result,
    outside_state_plurality.as_baseline(),
)
AGREEMENT_OPS = (outside_state_unanimity.as_baseline(),)

__all__ = [
    "ABSENT",
    "AGREEMENT_OPS",
    "PEER_OPS",
    "facts",
    "leaf_facts",
    "missing_shown_result",
    "not_judged",
    "outcomes",
    "outside_state_plurality",
    "outside_state_unanimity",
    "results_missing_vs_peers",
    "shown_vote",
    "state_disagrees_with_peers",
    "state_vote",
    "states_disagree_with_peers",
    "usable",
]
