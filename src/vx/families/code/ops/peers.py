"""Peer ops: an attempt compared with the other attempts at the same task in the batch.

A real agent loop samples several attempts per task; attempts that disagree on the same fresh input
cannot all be right. Every attempt runs the task's *peer probes* -- inputs generated from the visible
examples (:mod:`.generate`) and, when the task has them, the inputs of model-written tests -- in its
one sandboxed run (:mod:`.run`, shared with the exec seed ops). The observer :data:`behaviour` turns
that run into plain data; the peer ops compare it, in the parent, with the other attempts'.

Whom to believe (measured on the development half of the CodeT HumanEval data; docs/peers.md):

* **voters** are the other attempts that load and pass their visible examples -- an attempt the pool
  already fails is no witness (voting among all attempts flags correct minorities on hard tasks,
  where most attempts share a wrong answer);
* on each probe the voters' answers are grouped: values equal as data (floats within 1e-6, so
  rounding does not split correct programs), raising, timing out and crashing each an answer of
  their own; the top group is a **clear plurality** with at least ``min_support`` voters, at least
  ``quorum`` of those who answered, and more than the runner-up;
* the op **fires** when this attempt's answer differs from a clear plurality on a probe of the
  selected classes, is clean when it agrees with every clear plurality, and **abstains** rather
  than accuse when there are fewer than ``min_peers`` voters or no probe has a clear plurality;
* time is evidence only where a hidden-test grader would reject it too: a call is out of time beside
  its peers only over evalplus's line (:func:`.budgets.against_peers`), and a plurality of attempts that
  did not return in time never outvotes an attempt that answered (HumanEval/63's memoised ``fibfib``
  beside four exponential ones).

Seed ops: ``disagrees_with_peers`` (active) and the two methods a user would pick instead, kept as
*shadow* ops (applied and recorded, never selected; the quality benchmark reads them as baselines):
``outside_plurality`` (MBR-exec: the attempt is not in a largest cluster of identical behaviour on
the examples and the generated probes) and ``outside_dual_agreement`` (CodeT: the attempt is not in
a top-scoring consensus set of the model-written tests). The check template ``disagrees_with_peers``
(params ``quorum``, ``min_support``, ``probes``) lets synthesis propose and the birth gate test variants.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.families.code.ops import run as _run
from vx.families.code.ops import values
from vx.families.code.ops.artifact import artifact_of
from vx.families.code.ops.run import EXEC_OP_TIMEOUT, SKIPPED_PEER_PROBES, execution
from vx.families.code.probes import budgets, probe
from vx.families.code.probes.probe import PEER_CLASSES, model_tests_with_counts, peer_probes
from vx.memo import MISSING, IdentityMemo, size_of
from vx.ops.core import abstain, clean, drawback, observer, peer_op
from vx.ops.specs import SpecError, inducer, template

DEPENDS = (
    __name__,
    probe,
    values,
    _run,
    budgets,
    "vx.families.code.compare",
    "vx.families.code.ops.exec",
    "vx.families.code.probes.domain",
    "vx.families.code.probes.generate",
    "vx.families.code.probes.draw",
)

#: Probe selections of the template's ``probes`` parameter.
PROBE_SETS: dict[str, frozenset[str]] = {
    "in_domain": frozenset({"gen_mutant", "gen_boundary"}),
    "generated": frozenset({"gen_mutant", "gen_boundary", "gen_large"}),
    "all_generated": frozenset({"gen_mutant", "gen_boundary", "gen_large", "gen_edge"}),
    "with_tests": frozenset({"gen_mutant", "gen_boundary", "gen_large", "model_test"}),
    "tests": frozenset({"model_test"}),
    # the generated classes plus the inputs drawn from the inferred domain (hypothesis: .draw)
    "drawn": frozenset({"gen_mutant", "gen_boundary", "gen_large", "gen_drawn", "gen_wide"}),
}
DEFAULT_PROBES = "generated"
MAX_VALUE_TEXT = 4000  # a returned value whose repr is longer is compared by a digest of it


# --------------------------------------------------------------------------- answers


@attrs.frozen
class Answer:
    """What one attempt did on one probe: kind "value" (with ``value``), "raised" (``detail`` = the
    exception type), "timeout", "crashed", "opaque" (a non-data object; ``detail`` = its type),
    "not_run" (the run ended before it) or "ended" (the attempt itself ended its run before it:
    ``detail`` says how; only ever made by the judge, from :attr:`Behaviour.ended`)."""

    kind: str
    value: Any = None
    detail: str = ""
    #: CPU seconds the call used, and the CPU budget it ran under (:func:`.budgets.against_peers`).
    cpu: float | None = attrs.field(default=None, eq=False)
    budget: float | None = attrs.field(default=None, eq=False)

    def text(self, verb: str = "returned") -> str:
        if self.kind == "value":
            return f"{verb} {values.short(self.value, 60)}"
        if self.kind == "raised":
            return ("raised " if verb == "returned" else "raise ") + (self.detail or "an exception")
        if self.kind == "timeout":
            why = f" ({self.detail})" if self.detail and verb == "returned" else ""
            return ("did not return in time" if verb == "returned" else "do not return in time") + why
        if self.kind == "crashed":
            return "killed its process" if verb == "returned" else "kill their process"
        if self.kind == "ended":
            return (
                f"got no answer: the attempt ended its run before it ({self.detail})"
                if verb == "returned"
                else "were ended"
            )
        if self.kind == "opaque":
            return f"{verb} a {self.detail or 'non-data'} object"
        return "was not run" if verb == "returned" else "were not run"


#: Types whose values `close` compares with ``==`` alone when both sides have the type (the fast path).
_EXACT = frozenset({str, int, type(None), bytes})


def close(a: Any, b: Any, _depth: int = 0) -> bool:
    """Equal as data for clustering: types respected (a list is not a tuple; True is not 1), ints and
    floats compared as numbers, floats within 1e-6 (relative or absolute), NaN equal to NaN."""
    if _depth > 40:
        return False
    ta, tb = type(a), type(b)
    if ta is tb and ta in _EXACT:  # the commonest answers (bool is not int here: type() is exact)
        return a == b
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if (ta is float or tb is float) and ta in (int, float) and tb in (int, float):
        if ta is float and tb is float and math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    if ta is not tb:
        return False
    if ta in (list, tuple):
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):  # the scalar fast path inline: most elements are ints and strings
            tx = type(x)
            if not (x == y if tx is type(y) and tx in _EXACT else close(x, y, _depth + 1)):
                return False
        return True
    if ta is dict:
        return a.keys() == b.keys() and all(close(a[k], b[k], _depth + 1) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def same_answer(a: Answer, b: Answer) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == "value":
        return close(a.value, b.value)
    if a.kind == "opaque":
        return a.detail == b.detail
    return True


# --------------------------------------------------------------------------- answer keys

#: Scalar types whose values `close` compares with ``==`` and types respected (bool is not int).
_KEYED_SCALARS = frozenset({str, int, type(None), bytes, bool})
_MAX_KEY_DEPTH = 40  # `close` gives up below this depth (a value is then not even equal to itself)
_NAN = ("nan",)  # every NaN keys alike (`close` holds NaN equal to NaN; NaN != NaN would split them)


def _value_key(value: Any, depth: int, floats: list[bool]) -> Any:
    if depth > _MAX_KEY_DEPTH:
        return None
    t = type(value)
    if t in _KEYED_SCALARS:
        return (t, value)
    if t is float:
        floats.append(True)
        return (float, _NAN if value != value else value)
    if t is list or t is tuple:
        keys = []
        for x in value:
            k = _value_key(x, depth + 1, floats)
            if k is None:
                return None
            keys.append(k)
        return (t, tuple(keys))
    if t is dict:
        items = []
        for name, x in value.items():
            k = _value_key(x, depth + 1, floats)
            if k is None or type(name) not in _KEYED_SCALARS:
                return None
            items.append((name, k))
        return (dict, frozenset(items))
    return None


def answer_key(a: Answer) -> Any:
    """A hashable key of an answer: answers with equal keys are equal as data (:func:`same_answer`) and
    compare alike with every other answer. Without a float (a key not tagged ``"value~"``: see
    :func:`_tolerant`) equal keys also means exactly ``same_answer``; floats are compared within 1e-6,
    which is not transitive, so answers whose keys differ may still be the same answer. None where no
    key is known: a type `close` compares by ``==`` alone, a dict keyed by other than scalars, nesting
    deeper than `close` compares. (A law in the tests checks all of this against `same_answer`.)"""
    if a.kind == "value":
        floats: list[bool] = []
        k = _value_key(a.value, 0, floats)
        return None if k is None else ("value~" if floats else "value", k)
    if a.kind == "opaque":
        return ("opaque", a.detail)
    return (a.kind,)


def _tolerant(key: Any) -> bool:
    return key[0] == "value~"


def _answer_keys(b: Behaviour) -> tuple[Any, ...]:
    """The keys of an attempt's peer-probe answers, once per decoded observation object."""
    hit = _KEYS.get(b)
    return hit if hit is not MISSING else _KEYS.put(tuple(map(answer_key, b.answers)), b, size=b.size)


def behaviour_key(b: Behaviour) -> Any:
    """A hashable key of a behaviour (its answers' keys, the examples' first; :func:`answer_key`): equal
    keys are the same behaviour (:func:`same_behaviour`), and without a float exactly so; its first
    element says whether a float is in it. None when an answer has no key."""
    hit = _BEHAVIOUR_KEYS.get(b)
    if hit is not MISSING:
        return hit
    keys = (*map(answer_key, b.example_answers), *_answer_keys(b))
    key = None if None in keys else (any(map(_tolerant, keys)), b.loaded, keys)
    return _BEHAVIOUR_KEYS.put(key, b, size=b.size)


def _groups(answers: Sequence[Answer], keys: Sequence[Any] | None = None) -> list[list[Any]]:
    """Answers grouped by :func:`same_answer` as ``[first answer, count]`` in order of first appearance,
    leaving out those not run -- the greedy rule: each answer joins the first group whose first answer
    it equals. Answers with equal keys are counted together first (they all join the group the first of
    them joins); then, if a float is among them, the distinct ones are grouped pairwise."""
    return _grouped(answers, [answer_key(a) for a in answers] if keys is None else keys)[0]


def _grouped(answers: Sequence[Answer], keys: Sequence[Any]) -> tuple[list[list[Any]], bool]:
    """:func:`_groups`, and whether the groups are classes (every answer keyed, no float among them)."""
    found: dict[Any, list[Any]] = {}
    tolerant = False
    for a, k in zip(answers, keys):
        if a.kind == "not_run":
            continue
        if k is None:
            return _pairwise_groups(answers), False
        g = found.get(k)
        if g is None:
            found[k] = [a, 1]
            tolerant = tolerant or _tolerant(k)
        else:
            g[1] += 1
    if not tolerant:  # distinct keys are different answers
        return list(found.values()), True
    groups: list[list[Any]] = []
    for a, n in found.values():
        for g in groups:
            if same_answer(g[0], a):
                g[1] += n
                break
        else:
            groups.append([a, n])
    return groups, False


def _pairwise_groups(answers: Sequence[Answer]) -> list[list[Any]]:
    groups: list[list[Any]] = []
    for a in answers:
        if a.kind == "not_run":
            continue
        for g in groups:
            if same_answer(g[0], a):
                g[1] += 1
                break
        else:
            groups.append([a, 1])
    return groups


def _answer(call: Any) -> Answer:
    cpu, budget = getattr(call, "cpu", None), getattr(call, "budget", None)
    if call.status == "ok":
        return Answer("value", call.value, cpu=cpu, budget=budget)
    if call.status == "exception":
        return Answer("raised", None, str(call.exc_type or ""), cpu=cpu, budget=budget)
    if call.status == "unserializable":
        return Answer("opaque", None, str(call.type_name or ""), cpu=cpu, budget=budget)
    if call.status == "timeout":
        return Answer("timeout", cpu=cpu, budget=budget)
    if call.status in ("crashed", "not_run"):
        return Answer(call.status)
    return Answer("not_run")


#: Answer kinds whose CPU time is a measurement of the probe (the call returned or raised).
_MEASURED = ("value", "raised", "opaque")


def judged_against_peers(mine: Behaviour, voters: Sequence[Behaviour]) -> tuple[Behaviour, list[Behaviour]]:
    """Every answer's time judged against the voters' on the same probe (:func:`.budgets.against_peers`, the
    budget decision): one that used more than k x the others' median CPU becomes a timeout, and one
    stopped at its own budget below that line becomes unknown (not run), so a slow correct attempt is
    never outvoted for its own run's budget. Behaviours with no answer changed are returned as given."""
    everyone = [mine, *voters]
    changes = _timing_changes(everyone)
    if not changes:
        return mine, list(voters)
    rows: dict[int, list[Answer]] = {}
    for (a, j), answer in changes.items():
        rows.setdefault(a, list(everyone[a].answers))[j] = answer
    out = [attrs.evolve(b, answers=tuple(rows[a])) if a in rows else b for a, b in enumerate(everyone)]
    return out[0], out[1:]


def _hot_columns(b: Behaviour) -> frozenset[int]:
    """The probes on which this answer may be judged for its time (a timeout, or a measured answer above
    :data:`vx.families.code.probes.budgets.PEER_FLOOR`); every other answer stands as reported."""
    hit = _HOT.get(b)
    if hit is not MISSING:
        return hit
    hot = frozenset(
        j
        for j, a in enumerate(b.answers)
        if a.kind == "timeout" or (a.kind in _MEASURED and a.cpu is not None and a.cpu > budgets.PEER_FLOOR)
    )
    return _HOT.put(hot, b, size=64 + 8 * len(hot))


def _timing_changes(everyone: Sequence[Behaviour]) -> dict[tuple[int, int], Answer]:
    """What :func:`judged_against_peers` changes, as ``{(attempt, probe): new answer}`` (``everyone[0]``
    is the attempt judged; the others are its voters). Only the probes some attempt is hot on
    (:func:`_hot_columns`) are looked at: on the rest nothing can change."""
    mine = everyone[0]
    hot = sorted(j for j in frozenset().union(*map(_hot_columns, everyone)) if j < len(mine.answers))
    changes: dict[tuple[int, int], Answer] = {}
    judged = (*_MEASURED, "timeout")
    for j in hot:
        column = [b.answers[j] if j < len(b.answers) else None for b in everyone]
        # the voters' measured CPU on this probe, once per probe (k of them, not k^2)
        measured = [
            (k, a.cpu)
            for k, a in enumerate(column)
            if k and a is not None and a.kind in _MEASURED and a.cpu is not None
        ]
        if len(measured) < 3:
            continue  # against_peers needs 3 others; with fewer, every answer stands as reported
        for a, ans in enumerate(column):
            if ans is None or ans.kind not in judged:
                continue
            if ans.kind != "timeout" and (ans.cpu is None or ans.cpu <= budgets.PEER_FLOOR):
                continue  # under the floor of every line: it stands
            others = [cpu for k, cpu in measured if k != a]
            kind, why = budgets.against_peers(ans.cpu, ans.budget, ans.kind == "timeout", others)
            if kind == "timeout":
                changes[(a, j)] = Answer("timeout", None, why, ans.cpu, ans.budget)
            elif kind == "unknown":
                changes[(a, j)] = Answer("not_run", None, why)
    return changes


def _ended_answers(b: Behaviour) -> Behaviour:
    """An attempt that ended its own run (:attr:`Behaviour.ended`): each peer probe it left unanswered
    gets the answer "ended" (compared like any answer: it differs from every value)."""
    if not b.ended:
        return b
    rows = tuple(Answer("ended", None, b.ended) if a.kind == "not_run" else a for a in b.answers)
    return attrs.evolve(b, answers=rows)


# --------------------------------------------------------------------------- the observer


@attrs.frozen
class Behaviour:
    """An attempt's behaviour (decoded from the observer's plain data)."""

    loaded: bool
    examples_ok: bool | None  # None: the task has no visible example to pass or fail
    answers: tuple[Answer, ...] = ()  # one per peer probe of the task (probe.peer_probes order)
    example_answers: tuple[Answer, ...] = ()
    note: str = ""
    #: How the attempt ended its own run early (:meth:`.run.Execution.ended`), "" when it did not: the
    #: peer probes it left unanswered then count as answers of their own ("the run was ended"), never
    #: as probes that were not run (dying, exiting or hanging is no way out of a verdict).
    ended: str = ""
    #: The peer probes the answers belong to, as text (``f(1, [2])``) and class, when the observation
    #: carries them (so the judge, in the driver, never rebuilds the task's probes).
    calls: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    #: The estimated bytes of the observation it was decoded from (what memos holding it keep alive).
    size: int = attrs.field(default=0, eq=False)

    @property
    def trusted(self) -> bool:
        """A voter: it loads and does not fail its visible examples."""
        return self.loaded and self.examples_ok is not False

    @classmethod
    def from_data(cls, data: Any) -> Behaviour:
        """Decoded once per observation object: a task's k observations are each judged against the
        others by every peer op, so without this a task would decode k^2 x (peer ops) of them."""
        hit = _DECODED.get(data)
        if hit is not MISSING:
            return hit
        b = cls._from_data(data)
        return _DECODED.put(b, data, size=2 * b.size)  # the observation and what was decoded from it

    @classmethod
    def _from_data(cls, data: Any) -> Behaviour:
        if not isinstance(data, Mapping):
            return cls(False, None, note="no observation")

        def answers(rows: Any) -> tuple[Answer, ...]:
            out = []
            for row in rows or ():
                ok = isinstance(row, (list, tuple)) and len(row) in (3, 5)
                kind, value, detail = row[:3] if ok else ("not_run", None, "")
                cpu, budget = (_seconds(row[3]), _seconds(row[4])) if ok and len(row) == 5 else (None, None)
                out.append(Answer(str(kind), value, str(detail), cpu, budget))
            return tuple(out)

        ok = data.get("examples_ok")
        rows = answers(data.get("answers"))
        calls, classes = data.get("calls"), data.get("classes")
        texts = (
            (tuple(calls), tuple(classes))
            if isinstance(calls, list)
            and isinstance(classes, list)
            and len(calls) == len(classes) == len(rows)
            and all(type(t) is str for t in calls + classes)
            else ((), ())
        )
        return cls(
            bool(data.get("loaded")),
            ok if ok in (True, False) else None,
            rows,
            answers(data.get("example_answers")),
            str(data.get("note", "")),
            str(data.get("ended") or ""),
            *texts,
            size=size_of(data, MEMO_BYTES),
        )


def _held_size(obj: Any) -> int:
    """The bytes a memo holding `obj` keeps alive: a decoded behaviour's own estimate (its observation's
    size), else the object's (:func:`vx.memo.size_of`)."""
    return obj.size if isinstance(obj, Behaviour) else size_of(obj, MEMO_BYTES)


#: Bytes each memo of decoded observations may keep (a task's k attempts must fit: about 60 KB an attempt
#: on HumanEval, so k = 200 takes 12 MB); a behaviour that would take more than a quarter is not kept.
MEMO_BYTES = 32 << 20
_DECODED = IdentityMemo(4096, MEMO_BYTES, sizer=lambda data: 0)  # counted by put: twice the behaviour
_KEYS = IdentityMemo(4096, MEMO_BYTES, _held_size)  # per decoded observation: its answers' keys (answer_key)
_BEHAVIOUR_KEYS = IdentityMemo(4096, MEMO_BYTES, _held_size)
_HOT = IdentityMemo(4096, MEMO_BYTES, _held_size)  # per decoded observation: the probes its time may be judged on


def _seconds(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) and 0 <= value < 1e6 else None


def _value_text(value: Any) -> str | bytes | None:
    """A deterministic text of a returned value, for its size and digest: its repr, or where repr()
    refuses (an int of more than 4300 digits, nesting deeper than the recursion limit) its marshal
    bytes. None when neither works (the caller then treats the value as opaque)."""
    import marshal

    try:
        return repr(value)
    except (ValueError, RecursionError, MemoryError):
        pass
    try:
        return b"marshal:" + marshal.dumps(value)
    except (ValueError, RecursionError, MemoryError):
        return None


def _data_answer(a: Answer) -> list[Any]:
    value = a.value
    if a.kind == "value":
        text = _value_text(value)
        if text is None:
            return ["opaque", None, f"{type(value).__name__} too deep to compare"]
        if isinstance(text, bytes) or len(text) > MAX_VALUE_TEXT:  # a huge value: compared by a digest
            import hashlib

            raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
            value = "<digest " + hashlib.sha256(raw).hexdigest()[:16] + f" of a {type(a.value).__name__}>"
            return ["value", value, "", a.cpu, a.budget]
    return [a.kind, value, a.detail, a.cpu, a.budget]


@observer(depends=DEPENDS)
def behaviour(task, output, ctx):
    """What the attempt did on the task's peer probes (one sandboxed run, shared with the exec ops)."""
    from vx.families.code.ops.exec import fails_visible_example

    art = artifact_of(task, output, ctx)
    n = len(peer_probes(task))
    if art.function is None:
        return {"loaded": False, "examples_ok": None, "answers": [], "note": "the root failed: " + (art.problem or "")}
    run, why = execution(task, output, ctx)
    if run is None:
        return {"loaded": False, "examples_ok": None, "answers": [], "note": why}
    if not run.loaded:
        return {"loaded": False, "examples_ok": False, "answers": [], "note": run.load_message}
    verdict = int(fails_visible_example(task, output, ctx).verdict)
    examples_ok = None if verdict == -1 else verdict == 0
    peer = [_data_answer(_answer(c)) for p, c in zip(run.probes, run.calls) if p.klass in PEER_CLASSES]
    shown = [_data_answer(_answer(c)) for p, c in zip(run.probes, run.calls) if p.klass == "example"]
    if len(peer) != n:  # the task's probes changed under us: do not compare misaligned answers
        return {"loaded": True, "examples_ok": examples_ok, "answers": [], "note": "probe list mismatch"}
    ended = run.ended()
    if (
        n
        and ended is None
        and all(a[0] == "not_run" for a in peer)
        and any(c.status == "timeout" for p, c in zip(run.probes, run.calls) if p.klass not in PEER_CLASSES)
    ):
        return {
            "loaded": True,
            "examples_ok": examples_ok,
            "answers": [],
            "example_answers": shown,
            "note": SKIPPED_PEER_PROBES,
        }
    note = "" if n else (probe.generated(task)[2] or "the task has no peer probes")
    calls, classes = probe.peer_probe_texts(task)
    return {
        "loaded": True,
        "examples_ok": examples_ok,
        "answers": peer,
        "example_answers": shown,
        "note": note,
        "ended": ended[1] if ended else "",
        "calls": list(calls),
        "classes": list(classes),
    }


# --------------------------------------------------------------------------- judging


@attrs.frozen
class Vote:
    verdict: int  # 1 drawback, 0 clean, -1 abstain
    message: str
    probe: int | None = None


def _guards(
    mine: Behaviour, peers: Sequence[Behaviour], classes: Sequence[str], selected: frozenset[str], min_peers: int
) -> Vote | None:
    """Why no peer verdict can be given (an abstention), or None."""
    if not mine.loaded:
        return Vote(-1, mine.note or "the attempt does not load: no answers to compare")
    if not mine.answers:
        return Vote(-1, mine.note or "the task has no peer probes")
    if not any(k in selected for k in classes):
        return Vote(-1, f"the task has no probe of the selected classes ({', '.join(sorted(selected))})")
    if not peers:
        return Vote(-1, "no other attempt at this task is in the batch: no peers to compare with")
    voters = [p for p in peers if p.trusted and len(p.answers) == len(mine.answers)]
    if len(voters) < max(1, min_peers):
        return Vote(
            -1,
            f"only {len(voters)} of {len(peers)} other attempt(s) pass the visible example "
            f"(at least {max(1, min_peers)} needed to vote)",
        )
    return None


def vote(
    mine: Behaviour,
    peers: Sequence[Behaviour],
    calls: Sequence[str],
    classes: Sequence[str],
    selected: frozenset[str],
    *,
    quorum: float = 0.5,
    min_support: int = 3,
    min_peers: int = 3,
    expected: Sequence[Any] | None = None,
) -> Vote:
    """The peer verdict of one attempt (the rule in the module docstring). `calls[i]` is peer
    probe i as text, `classes[i]` its class; only probes of the `selected` classes count."""
    guard = _guards(mine, peers, classes, selected, min_peers)
    if guard is not None:
        return guard
    voters = [p for p in peers if p.trusted and len(p.answers) == len(mine.answers)]
    # Per probe, the voters' answers are grouped once (by key, :func:`_groups`); the same groups with this
    # attempt's answer added are the distinguishing-input search's (:func:`distinguishing`, which groups
    # the attempt and its voters, the attempt first).
    changes = _timing_changes([mine, *voters])
    answers = [changes.get((0, j), a) for j, a in enumerate(mine.answers)] if changes else list(mine.answers)
    if mine.ended:  # the probes it left unanswered are answers of their own (_ended_answers)
        answers = [Answer("ended", None, mine.ended) if a.kind == "not_run" else a for a in answers]
    keys = [_answer_keys(p) for p in voters]
    agreed = hits = 0
    first: Vote | None = None
    splits: list[tuple[int, int, int, list[list[Any]]]] = []
    for j in range(min(len(classes), len(answers))):
        if classes[j] not in selected:
            continue
        ans = answers[j]
        if changes:
            column = [changes.get((i, j)) or p.answers[j] for i, p in enumerate(voters, 1)]
            column_keys = [
                k[j] if column[i] is p.answers[j] else answer_key(column[i])
                for i, (p, k) in enumerate(zip(voters, keys))
            ]
        else:
            column = [p.answers[j] for p in voters]
            column_keys = [k[j] for k in keys]
        groups, partition = _grouped(column, column_keys)
        split = _with_answer(ans, groups, partition, column, column_keys)
        if len(split) >= 2:
            split.sort(key=lambda g: -g[1])
            splits.append((-len(split), -split[1][1], j, split))
        if ans.kind == "not_run" or not groups:
            continue
        groups.sort(key=lambda g: -g[1])
        top, support = groups[0]
        runner = groups[1][1] if len(groups) > 1 else 0
        answered = sum(g[1] for g in groups)
        if support < min_support or support < quorum * answered or support <= runner:
            continue
        if top.kind == "timeout" and ans.kind != "timeout":
            continue  # a plurality that did not return in time is evidence against itself, not against an answer
        if same_answer(ans, top):
            agreed += 1
            continue
        hits += 1
        if first is None:
            first = Vote(
                1,
                f"{calls[j]} {ans.text()}; {support} of {answered} other attempts that pass the "
                f"visible example {top.text('return')}",
                j,
            )
    divided = _split_texts(splits, calls)
    if first is not None:
        more = f" (and {hits - 1} more probe(s))" if hits > 1 else ""
        return attrs.evolve(first, message=first.message + more + _split_text(divided, first.probe))
    if agreed:
        return Vote(
            0,
            f"agrees with the clear plurality of the {len(voters)} other attempts that pass the visible "
            f"example on {agreed} probe(s)" + _split_text(divided),
        )
    return Vote(
        -1,
        f"no probe has a clear plurality among the {len(voters)} other attempt(s) that pass the "
        "visible example" + _split_text(divided),
    )


def _with_answer(
    ans: Answer, groups: list[list[Any]], partition: bool, column: Sequence[Answer], keys: Sequence[Any]
) -> list[list[Any]]:
    """The groups of ``[ans, *column]`` (the attempt first), made from the groups of ``column`` when the
    answers fall into classes (no float): its answer's group first, holding the voter group equal to it."""
    if ans.kind == "not_run":
        return [list(g) for g in groups]
    key = answer_key(ans)
    if not partition or key is None or _tolerant(key):
        return _groups([ans, *column], [key, *keys])  # not classes: group again with the attempt first
    mine = [ans, 1]
    out = [mine]
    for g in groups:
        if same_answer(ans, g[0]):  # all of a keyed group's answers are equal: it joins whole or not at all
            mine[1] += g[1]
        else:
            out.append(list(g))
    return out


#: How many distinguishing inputs a peer op's message shows.
MAX_SHOWN_SPLITS = 3


def distinguishing(
    behaviours: Sequence[Behaviour],
    calls: Sequence[str],
    classes: Sequence[str],
    selected: frozenset[str],
    cap: int = MAX_SHOWN_SPLITS,
) -> list[tuple[int, str]]:
    """Distinguishing-input search over the probes already run: the probes of the selected classes on
    which the given attempts (the attempt judged and its voters, all passing the visible example) give
    more than one answer -- inputs that separate attempts the examples grade alike. At most `cap`, the
    most even splits first (most answers, then the largest minority), each as (probe index, "call
    (answer x n, answer x m)")."""
    splits = []
    for j, klass in enumerate(classes):
        if klass not in selected:
            continue
        groups = _groups([b.answers[j] for b in behaviours if j < len(b.answers)])
        if len(groups) < 2:
            continue
        groups.sort(key=lambda g: -g[1])
        splits.append((-len(groups), -groups[1][1], j, groups))
    return _split_texts(splits, calls, cap)


def _split_texts(
    splits: list[tuple[int, int, int, list[list[Any]]]], calls: Sequence[str], cap: int = MAX_SHOWN_SPLITS
) -> list[tuple[int, str]]:
    """The `cap` most even splits, ``(-groups, -the second group's size, probe, groups sorted by size)``,
    as text (made for those shown only)."""
    splits.sort(key=lambda s: s[:3])

    def shown(g: list[Any]) -> str:
        return f"{g[0].text('').strip() or g[0].kind} x{g[1]}"

    return [(j, f"{calls[j]} ({', '.join(map(shown, groups[:3]))})") for _, _, j, groups in splits[:cap]]


def _split_text(split: list[tuple[int, str]], skip: int | None = None) -> str:
    shown = [text for j, text in split if j != skip]
    return f"; inputs that split the attempts passing the example: {'; '.join(shown)}" if shown else ""


def dual_cluster_vote(
    task: Mapping[str, Any],
    mine: Behaviour,
    peers: Sequence[Behaviour],
    calls: Sequence[str],
    classes: Sequence[str],
    selected: frozenset[str],
    *,
    quorum: float = 0.0,
    min_support: int = 1,
    min_peers: int = 1,
) -> Vote:
    """The cluster variant: the voters (other attempts passing the visible example) are clustered by
    identical answers on the selected probes; each cluster scores √size × (1 + the model-written tests
    its majority passes, counted as often as written); the op fires when this attempt departs from the
    top cluster on some selected probe. With no model-written tests the score is the cluster size."""
    guard = _guards(mine, peers, classes, selected, min_peers)
    if guard is not None:
        return guard
    voters = [p for p in peers if p.trusted and len(p.answers) == len(mine.answers)]
    mine, voters = judged_against_peers(mine, voters)
    mine = _ended_answers(mine)
    sel = [j for j, k in enumerate(classes) if k in selected]
    keys = [tuple(_answer_keys(p)[j] for j in sel) for p in voters]
    clusters = [
        [voters[i] for i in c]
        for c in _clusters(
            [None if None in k else (any(map(_tolerant, k)), k) for k in keys],
            lambda i, q: all(same_answer(voters[i].answers[j], voters[q].answers[j]) for j in sel),
        )
    ]
    weights = [count for _, count in model_tests_with_counts(task)]

    def score(c: list[Behaviour]) -> float:
        if not weights:
            return float(len(c))
        passes = [test_passes(task, b) for b in c]
        majority = [2 * sum(col) >= len(c) for col in zip(*passes)] if passes and passes[0] else []
        return math.sqrt(len(c)) * (1 + sum(w for w, ok in zip(weights, majority) if ok))

    ranked = sorted(clusters, key=lambda c: -score(c))
    top = ranked[0]
    if len(top) < min_support or len(top) < quorum * len(voters):
        return Vote(-1, f"no trustworthy cluster: the top one holds {len(top)} of {len(voters)} voters")
    rep = top[0]
    for j in sel:
        a, t = mine.answers[j], rep.answers[j]
        if a.kind == "not_run" or t.kind == "not_run" or same_answer(a, t):
            continue
        return Vote(
            1,
            f"{calls[j]} {a.text()}; the top cluster of other attempts that pass the visible example "
            f"({len(top)} of {len(voters)}, dual-agreement score {score(top):.1f}) {t.text('return')}",
            j,
        )
    return Vote(
        0, f"behaves like the top cluster of other attempts ({len(top)} of {len(voters)}) on {len(sel)} probe(s)"
    )


def _probe_texts(task: Mapping[str, Any], *behaviours: Behaviour) -> tuple[Sequence[str], Sequence[str]]:
    """The task's peer probes as text and class: read from the first observation that carries them (the
    worker that ran the attempt knew its probes), else rebuilt (an observation cached before they were
    recorded; in the driver that means generating the task's probes once more)."""
    for b in behaviours:
        if b.calls:
            return b.calls, b.classes
    return probe.peer_probe_texts(task)


TRUST = ("vote", "dual_cluster")


def disagrees_with_peers_check(
    quorum: float = 0.5,
    min_support: int = 3,
    probes: str = DEFAULT_PROBES,
    min_peers: int | None = None,
    trust: str = "vote",
):
    """The judge of a ``disagrees_with_peers`` variant (`trust`: "vote", the per-probe clear plurality
    of the module docstring, or "dual_cluster", :func:`dual_cluster_vote`)."""
    if probes not in PROBE_SETS:
        raise SpecError(
            f"disagrees_with_peers: unknown probe selection {probes!r}; choose one of {', '.join(PROBE_SETS)}"
        )
    if trust not in TRUST:
        raise SpecError(f"disagrees_with_peers: unknown trust rule {trust!r}; choose one of {', '.join(TRUST)}")
    if not 0 <= quorum <= 1 or (trust == "vote" and quorum == 0):
        raise SpecError(f"disagrees_with_peers: quorum must be in (0, 1] (in [0, 1] for dual_cluster), got {quorum}")
    if min_support < 1:
        raise SpecError(f"disagrees_with_peers: min_support must be at least 1, got {min_support}")
    selected = PROBE_SETS[probes]
    need = min_support if min_peers is None else min_peers

    def judge(task, mine, peers, ctx):
        mine_b = Behaviour.from_data(mine)
        if not mine_b.loaded or not mine_b.answers:  # before the probes' texts: nothing of theirs is needed
            return abstain(
                mine_b.note
                or (
                    "the task has no peer probes"
                    if mine_b.loaded
                    else "the attempt does not load: no answers to compare"
                )
            )
        others = [Behaviour.from_data(p) for p in peers]
        calls, classes = _probe_texts(task, mine_b, *others)
        if len(mine_b.answers) != len(calls):
            return abstain("the attempt's answers do not match the task's probes (rebuilt probes?)")
        if trust == "dual_cluster":
            v = dual_cluster_vote(
                task, mine_b, others, calls, classes, selected, quorum=quorum, min_support=min_support, min_peers=need
            )
        else:
            v = vote(mine_b, others, calls, classes, selected, quorum=quorum, min_support=min_support, min_peers=need)
        return {1: drawback, 0: clean, -1: abstain}[v.verdict](v.message)

    return judge


@peer_op(observe=behaviour, detects="wrong_logic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def disagrees_with_peers(task, mine, peers, ctx):
    """On a generated input, the attempt's answer differs from what a clear plurality of the other
    attempts that pass the visible example return."""
    return disagrees_with_peers_check()(task, mine, peers, ctx)


# --------------------------------------------------------------------------- the baselines


def same_behaviour(a: Behaviour, b: Behaviour) -> bool:
    """Identical answers on the examples and every peer probe (and both load, or neither does).

    Remembered per pair of decoded observations (:meth:`Behaviour.from_data` returns the same object for
    the same observation): every peer op judging each of a task's k attempts clusters all k of them, so
    without this a task would compare k^3 pairs of behaviours instead of k^2."""
    hit = _SAME.get(a, b)
    if hit is not MISSING:
        return hit
    ka, kb = a.example_answers + a.answers, b.example_answers + b.answers
    same = a.loaded == b.loaded and len(ka) == len(kb) and all(same_answer(x, y) for x, y in zip(ka, kb))
    return _SAME.put(same, a, b)


_SAME = IdentityMemo(1 << 16, MEMO_BYTES, _held_size)


def behaviour_clusters(behaviours: Sequence[Behaviour]) -> list[list[int]]:
    """Indices grouped by identical answers on the examples and every peer probe (greedy, in order);
    attempts that do not load form one cluster. By key in one pass when every behaviour has one
    (:func:`behaviour_key`), pairwise otherwise."""
    classes = _behaviour_classes(behaviours)
    return _clusters(
        classes if classes is not None else [None] * len(behaviours),
        lambda i, q: same_behaviour(behaviours[i], behaviours[q]),
    )


def _behaviour_classes(behaviours: Sequence[Behaviour]) -> list[tuple[bool, int]] | None:
    """Per behaviour, ``(has a float, number)``, the number equal for equal :func:`behaviour_key` s (None
    when one has no key). Numbered once per set of behaviours: each attempt of a task clusters the same
    k behaviours (in its own order), and hashing k large keys for each would cost k^2 hashes a task."""
    objects = tuple(sorted(behaviours, key=id))
    numbers = _CLASSES.get(*objects)
    if numbers is MISSING:
        keys: dict[Any, tuple[bool, int]] = {}
        by_id: dict[int, tuple[bool, int]] = {}
        keyed = True
        for b in objects:
            k = behaviour_key(b)
            if k is None:
                keyed = False
                break
            by_id[id(b)] = keys.setdefault(k, (k[0], len(keys)))
        numbers = _CLASSES.put(by_id if keyed else None, *objects, size=100 * len(objects) + 64)
    return None if numbers is None else [numbers[id(b)] for b in behaviours]


_CLASSES = IdentityMemo(256, MEMO_BYTES, _held_size)


def _clusters(keys: Sequence[Any], same: Callable[[int, int], bool]) -> list[list[int]]:
    """Indices clustered by the greedy rule (each joins the first cluster whose first member it is the
    same as: ``same(first, i)``), in order. ``keys[i]``: a ``(has a float, key)`` pair equal for items that
    are the same and compare alike with every other (None: not known). Items with equal keys are
    clustered together first; only without floats are distinct keys distinct clusters at once."""
    if None in keys:
        clusters: list[list[int]] = []
        for i in range(len(keys)):
            for c in clusters:
                if same(c[0], i):
                    c.append(i)
                    break
            else:
                clusters.append([i])
        return clusters
    by_key: dict[Any, list[int]] = {}
    for i, k in enumerate(keys):
        by_key.setdefault(k, []).append(i)
    if not any(k[0] for k in by_key):
        return list(by_key.values())
    clusters = []
    for members in by_key.values():  # in order of first appearance: a cluster's first member comes first
        for c in clusters:
            if same(c[0], members[0]):
                c.extend(members)
                break
        else:
            clusters.append(list(members))
    for c in clusters:
        c.sort()
    return clusters


@peer_op(observe=behaviour, detects="wrong_logic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def outside_plurality(task, mine, peers, ctx):
    """MBR-exec style plurality vote: the attempt is not in a largest cluster of attempts that behave
    identically on the visible examples and the generated probes (a baseline; kept in shadow)."""
    if not peers:
        return abstain("no other attempt at this task is in the batch: no plurality to join")
    everyone = [Behaviour.from_data(mine)] + [Behaviour.from_data(p) for p in peers]
    clusters = behaviour_clusters(everyone)
    mine_cluster = next(c for c in clusters if 0 in c)
    big = max(len(c) for c in clusters)
    if len(mine_cluster) == big:
        return clean(f"in a largest behaviour cluster ({big} of {len(everyone)} attempts)")
    return drawback(f"in a cluster of {len(mine_cluster)} of {len(everyone)} attempts; the largest has {big}")


def test_passes(task: Mapping[str, Any], b: Behaviour) -> list[bool]:
    """Which of the task's model-written tests the attempt passes (its answer equals the test's
    expected value, with the family's comparator)."""
    hit = _PASSES.get(task, b)
    return list(hit) if hit is not MISSING else list(_PASSES.put(tuple(_test_passes(task, b)), task, b))


_PASSES = IdentityMemo(
    4096, MEMO_BYTES, _held_size
)  # every attempt of a task scores all k: once per (task, observation) object


def _test_passes(task: Mapping[str, Any], b: Behaviour) -> list[bool]:
    from vx.families.code.ops.exec import _comparator

    tests = probe.model_tests(task)
    if not b.answers:  # no answer to any probe: it passes none
        return [False] * len(tests)
    classes = b.classes or probe.peer_probe_texts(task)[1]
    rows = [a for a, klass in zip(b.answers, classes) if klass == "model_test"]
    out = []
    entry = str((task.get("meta") or {}).get("evalplus_entry_point") or task.get("entry_point") or "")
    for p, a in zip(tests, rows + [Answer("not_run")] * (len(tests) - len(rows))):
        ok = a.kind == "value" and _comparator(task, entry).check(list(p.args), a.value, p.expected).ok
        out.append(bool(ok) and b.loaded)
    return out


def dual_agreement_scores(task: Mapping[str, Any], behaviours: Sequence[Behaviour]) -> list[float]:
    """CodeT's dual execution agreement (microsoft/CodeT, src/agreement.py): attempts passing the same
    set of model-written tests form a consensus set, scored (tests passed, counted as often as the
    model wrote them) x sqrt(attempts in the set). Each attempt gets its set's score."""
    weights = [count for _, count in model_tests_with_counts(task)]
    passes = [tuple(test_passes(task, b)) for b in behaviours]
    groups: dict[tuple[bool, ...], int] = {}
    for p in passes:
        groups[p] = groups.get(p, 0) + 1
    score = {key: sum(w for w, ok in zip(weights, key) if ok) * math.sqrt(n) for key, n in groups.items()}
    return [score[p] for p in passes]


@peer_op(observe=behaviour, detects="wrong_logic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def outside_dual_agreement(task, mine, peers, ctx):
    """CodeT dual agreement: the attempt is not in a top-scoring consensus set of the model-written
    tests (a baseline; kept in shadow). Abstains when the task has no model-written tests, or when no
    attempt passes any of them (no signal)."""
    if not task.get("model_tests"):
        return abstain("the task has no model-written tests")
    if not peers:
        return abstain("no other attempt at this task is in the batch: no agreement to measure")
    everyone = [Behaviour.from_data(mine)] + [Behaviour.from_data(p) for p in peers]
    scores = dual_agreement_scores(task, everyone)
    best = max(scores)
    if best == 0:
        return abstain("no attempt passes any model-written test")
    if scores[0] == best:
        return clean(f"in the top consensus set (dual-agreement score {best:.1f})")
    return drawback(f"its consensus set scores {scores[0]:.1f}; the top one {best:.1f}")


# --------------------------------------------------------------------------- the template

#: Variants the inducer proposes, best measured first (docs/peers.md); the birth gate decides.
VARIANTS: tuple[dict[str, Any], ...] = (
    {"quorum": 0.0, "min_support": 1, "probes": "generated", "trust": "dual_cluster"},
    {"quorum": 0.5, "min_support": 2, "probes": "generated", "trust": "vote"},
    {"quorum": 0.7, "min_support": 3, "probes": "generated", "trust": "vote"},
    {"quorum": 0.5, "min_support": 3, "probes": "in_domain", "trust": "vote"},
    # small k (2-3 attempts): every other example-passing attempt, at least two, agree (docs/peers.md:
    # measured, not on by default)
    {"quorum": 1.0, "min_support": 2, "probes": "generated", "trust": "vote"},
    {"quorum": 0.5, "min_support": 3, "probes": "drawn", "trust": "vote"},
)


@template(
    "disagrees_with_peers",
    kind="exec",
    params={"quorum": "float", "min_support": "int", "probes": "str", "trust": "str"},
    family="code",
    depends=DEPENDS,
    observer=behaviour,
)
def disagrees_with_peers_template(quorum: float, min_support: int, probes: str, trust: str):
    """The attempt's answer on a peer probe differs from what the trusted other attempts return (trust:
    "vote" = a clear plurality of the attempts that pass the visible example, "dual_cluster" = their top
    cluster by dual agreement; quorum: share of voters; min_support: voters needed; probes: which probes)."""
    if isinstance(quorum, int):
        quorum = float(quorum)
    return disagrees_with_peers_check(quorum, min_support, probes, trust=trust)


@inducer("disagrees_with_peers")
def _induce_peer_variants(cluster: list, good: list) -> list[dict[str, Any]]:
    # A peer verdict needs the other attempts of each task, which a cluster of (task, output) pairs
    # does not carry: propose the measured variants for tasks that have peer probes, and let the birth
    # gate (which applies them with the whole batch) decide.
    if not any(peer_probes(task) for task, _ in cluster):
        return []
    return [dict(v) for v in VARIANTS]


#: The pack's peer ops: the seed op and the two baselines (shadow).
PEER_OPS = (disagrees_with_peers, outside_plurality.as_baseline(), outside_dual_agreement.as_baseline())


__all__ = [
    "Answer",
    "Behaviour",
    "DEFAULT_PROBES",
    "distinguishing",
    "MAX_SHOWN_SPLITS",
    "PEER_OPS",
    "PROBE_SETS",
    "VARIANTS",
    "Vote",
    "behaviour",
    "behaviour_clusters",
    "close",
    "disagrees_with_peers",
    "disagrees_with_peers_check",
    "dual_agreement_scores",
    "dual_cluster_vote",
    "TRUST",
    "outside_dual_agreement",
    "outside_plurality",
    "same_answer",
    "test_passes",
    "vote",
]
