"""The code family's exec seed ops: they read the shared sandboxed run (:mod:`.run`).

``crash``, ``fails_visible_example``, ``returns_not_print_only``, ``timeout``,
``returns_wrong_type``, ``mutates_argument``, ``nondeterministic``, and (in the pool, not the seed)
``crashes_in_domain``. Exec ops abstain only when they
have no opinion on the task (the root failed, the task has no visible example, nothing of their kind
to check); whatever the candidate did that prevents judging is a drawback (``judges_the_run``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from vx.families.code.ops import artifact, values
from vx.families.code.ops import run as _run
from vx.families.code.ops.artifact import (
    Artifact,
    artifact_of,
    dotted,
    live_nodes,
    own_nodes,
    raised_names,
    value_returns,
)
from vx.families.code.ops.run import EXEC_OP_TIMEOUT, MUTABLE, _failure_text, _what, execution, judges_the_run
from vx.families.code.ops.values import (
    _a,
    _clip,
    _loose_equal,
    _type_name,
    same_value,
    short,
    type_mismatch,
)
from vx.families.code.probes import probe
from vx.families.code.probes.probe import DOMAIN_CLASSES, Probe
from vx.ops.core import abstain, clean, drawback, op

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (
    __name__,
    _run,
    artifact,
    values,
    probe,
    "vx.families.code.compare",
    "vx.families.code.probes.budgets",
    "vx.families.code.probes.domain",
    "vx.families.code.probes.generate",
    "vx.families.code.probes.draw",
)

# --------------------------------------------------------------------------- exec ops


@op(tier="exec", detects="crash", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run
def crash(task, output, ctx, run):
    """The code raises on the visible example, on a re-ordering of it, or while loading.

    Killing its own process counts too; on a re-ordering, an exception type the code raises on
    purpose (``raise ValueError``) does not."""
    art = artifact_of(task, output, ctx)
    deliberate = raised_names(art.tree) if art.tree is not None else set()
    for p, c in run.in_domain():
        if c.status == "crashed":
            return drawback(f"{p.call} {_failure_text(c)} ({_what(p)})")
        if c.status != "exception":
            continue
        if p.klass == "permuted" and on_purpose(c, deliberate):
            continue  # the code rejects this input on purpose
        return drawback(f"{p.call} {_failure_text(c)} ({_what(p)})")
    if any(c.status in ("ok", "unserializable", "exception") for _, c in run.in_domain()):
        return clean(f"{len(run.in_domain())} call(s) on the example and its re-orderings raised nothing")
    return drawback("no call on the example finished, so none could be checked for a crash")


#: The generated probe classes ``crashes_in_domain`` reads: inputs every inferred predicate accepts
#: (docs/peers.md: measured on the CodeT development half; ``edge`` and ``large`` probes are left out,
#: correct programs raise on them -- an empty list where the prompt promises a non-empty one).
CRASH_CLASSES = ("gen_boundary", "gen_drawn")
#: Running out of time counts on :data:`.probe.DOMAIN_CLASSES` (the mutants too: their string edits break
#: structured strings, so they are not held to raising nothing, but no correct program loops on one).


def on_purpose(call: Any, deliberate: set[str]) -> bool:
    """A call's exception the code raised on purpose: a ``raise`` statement of the candidate's own code
    raised it (the sandbox reads the innermost frame of its traceback: ``CallOutcome.raised``), and the
    code names its type in a ``raise`` (:func:`.artifact.raised_names`). Dead code (``if 0: raise
    IndexError``) buys no excuse for an IndexError that ``l[3]`` raises."""
    return call.status == "exception" and bool(getattr(call, "raised", False)) and call.exc_type in deliberate


@op(tier="exec", detects="crash", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run
def crashes_in_domain(task, output, ctx, run):
    """The code raises or runs out of time on a generated input the inferred domain accepts (a boundary
    or drawn probe whose strings are all strings the examples show: a new string's structure, such as
    the words of a vocabulary or a number in text, is beyond the domain) while its visible examples
    return normally; or it ends its own run on any probe (kills its process, exits,
    or will not be interrupted), which no correct program does.

    A call's CPU budget grows with its input's size relative to the examples and with the code's own
    pace on them (:func:`vx.families.code.probes.budgets.run_budgets`), so a timeout here is not a slow machine.

    Works with one attempt per task (no peers, no reference). An exception type the code raises on
    purpose (``raise ValueError``) does not count: the code rejects that input deliberately."""
    shown = run.pairs("example")
    if not shown:
        return abstain("no visible example call ran")
    if any(c.status != "ok" for _, c in shown):
        return abstain("a visible example does not return normally (crash / fails_visible_example judge that)")
    ended = run.ended()  # one policy with the peer op: an attempt that ends its own run is never excused
    if ended is not None:
        i, what = ended
        left = sum(1 for c in run.calls[i + 1 :] if c.status == "not_run")
        return drawback(
            f"{what} ({_what(run.probes[i])}), so {left} later probe(s) got no answer; "
            "the visible examples return normally"
        )
    art = artifact_of(task, output, ctx)
    deliberate = raised_names(art.tree) if art.tree is not None else set()
    shown_strings = {s for p, _ in shown for s in _strings(p.args)}
    checked = 0
    for p, c in run.pairs(*DOMAIN_CLASSES):
        if not _strings(p.args) <= shown_strings:
            continue  # a new string: its structure (words of a vocabulary, a number) the domain cannot know
        checked += 1
        raised = c.status == "exception" and not on_purpose(c, deliberate) and p.klass in CRASH_CLASSES
        if raised or c.status == "timeout":
            return drawback(
                f"{p.call} {_failure_text(c)} (an input the inferred domain accepts: "
                f"{p.klass.removeprefix('gen_')} probe); the visible examples return normally"
            )
    if not checked:
        return abstain(
            "no generated in-domain probe ran (the task's examples cannot be mutated, or the run ended before them)"
        )
    return clean(f"{checked} generated in-domain probe(s) returned or were rejected on purpose")


def _strings(value: Any, depth: int = 0) -> set[str]:
    """The strings anywhere in a value (arguments of a probe)."""
    if isinstance(value, str):
        return {value}
    if depth > 8:
        return set()
    if isinstance(value, dict):
        return (
            set().union(*(_strings(k, depth + 1) | _strings(v, depth + 1) for k, v in value.items()))
            if value
            else set()
        )
    if isinstance(value, (list, tuple, set, frozenset)):
        return set().union(*(_strings(v, depth + 1) for v in value)) if value else set()
    return set()


def _comparator(task: Mapping[str, Any], entry: str) -> Any:
    from vx.families.code.compare import Comparator

    dataset = str(task.get("dataset") or "")
    if not dataset:
        tid = str(task.get("id", ""))
        dataset = "mbpp+" if tid.startswith("Mbpp/") else ("humaneval+" if tid.startswith("HumanEval") else "")
    return Comparator(dataset, entry, float(task.get("atol") or 0.0))


@op(tier="exec", detects="fails_visible_example", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run
def fails_visible_example(task, output, ctx, run):
    """A visible example call does not return its expected value.

    Compared in the parent with evalplus's semantics (exact types, float tolerance)."""
    meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
    # evalplus's special oracles are keyed by its own function names (MBPP+ renamed a few)
    compare = _comparator(task, str(meta.get("evalplus_entry_point") or task.get("entry_point") or ""))
    checked = 0
    for p, c in run.pairs("example"):
        checked += 1
        if c.status != "ok":
            return drawback(f"{p.call} {_failure_text(c)}; expected {short(p.expected)}")
        outcome = compare.check(p.args, c.value, p.expected)
        if not outcome.ok and not p.exact_types and _loose_equal(c.value, p.expected, False):
            continue  # the example's types were lost in JSON: do not fail on list vs tuple
        if not outcome.ok:
            return drawback(f"{p.call} returned {short(c.value)}, expected {short(p.expected)}")
    if not checked:
        return abstain("no example call ran")
    return clean(f"{checked} visible example(s) return the expected value")


def _static_print_verdict(art: Artifact):
    fn = art.function
    if fn is None:
        return abstain("no entry-point function to inspect")
    if value_returns(fn):
        return clean(f"{fn.name} returns a value (line {value_returns(fn)[0].lineno})")
    prints = [
        n for n in own_nodes(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
    ]
    if prints:
        return drawback(
            f"{fn.name} never returns a value but calls print (line {prints[0].lineno}): "
            f"{_clip(ast.unparse(prints[0]), 60)}"
        )
    return clean(f"{fn.name} does not print")


@op(tier="exec", detects="returns_not_print_only", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
def returns_not_print_only(task, output, ctx):
    """The function prints its answer instead of returning it.

    It returns None on an example that expects a value, and prints; without a runnable example,
    it never returns a value but calls print."""
    art = artifact_of(task, output, ctx)
    if art.function is None:
        return abstain("the root failed: " + (art.problem or "no entry point"))
    run, _ = execution(task, output, ctx)
    if run is not None and run.load == "sabotaged":
        return drawback(run.load_message)  # evidence against the candidate (see judges_the_run)
    finished = [(p, c) for p, c in run.pairs("example") if c.status == "ok"] if run is not None and run.loaded else []
    if not finished:
        return _static_print_verdict(art)
    try:
        for p, c in finished:
            if c.value is None and p.expected is not None and c.stdout.strip():
                printed = _clip(c.stdout.strip(), 80)
                hit = str(p.expected) in c.stdout or repr(p.expected) in c.stdout
                note = " (the expected value)" if hit else ""
                return drawback(f"{p.call} returned None and printed {printed!r}{note}; expected {short(p.expected)}")
    except Exception as exc:  # reading the candidate's results failed: evidence against it
        return drawback(f"sabotaged harness: the candidate's results cannot be judged ({type(exc).__name__})")
    return clean("the example calls return their result")


@op(tier="exec", detects="timeout", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run
def timeout(task, output, ctx, run):
    """A call on the visible example (or a re-ordering of it) does not finish within its time limit (CPU
    seconds of its own process, :data:`~vx.families.code.probes.budgets.EXAMPLE_CPU`: load on the machine does
    not make a correct program time out; a sleeping call meets a generous wall-clock backstop)."""
    done = run.in_domain()
    for p, c in done:
        if c.status == "timeout":
            return drawback(f"{p.call} did not return: {c.exc_message or 'timed out'} ({_what(p)})")
    if done:
        slowest = max((c.cpu if c.cpu is not None else c.duration or 0.0) for _, c in done) * 1000
        took = f"{slowest:.0f} ms of CPU" if slowest >= 1 else "under 1 ms of CPU"
        return clean(f"{len(done)} call(s) finished; the slowest took {took}")
    return abstain("no example call ran")


@op(tier="exec", detects="returns_wrong_type", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run
def returns_wrong_type(task, output, ctx, run):
    """An example call returns a value of another type than the expected value.

    Numbers are interchangeable, a list is not a tuple (checked inside containers); an object that
    is not plain data (a map, a generator) is a wrong type too."""
    seen = 0
    for p, c in run.pairs("example"):
        if c.status == "unserializable":
            return drawback(
                f"{p.call} returned {_a(str(c.type_name))} object; the example expects "
                f"{_a(_type_name(p.expected))} ({short(p.expected, 50)})"
            )
        if c.status != "ok":
            continue
        seen += 1
        why_not = type_mismatch(c.value, p.expected, p.exact_types)
        if why_not:
            return drawback(f"{p.call} returned {why_not}: got {short(c.value, 50)}, expected {short(p.expected, 50)}")
    if not seen:
        return drawback(
            "no example call returned a value (they raised or did not finish), so none has the expected type"
        )
    return clean(f"{seen} example call(s) return the expected type")


_MUTABLE = MUTABLE  # the types whose arguments the run reports back


def _takes_mutable(task, run) -> bool:
    """mutates_argument has an opinion only on tasks whose calls receive a list, dict or set."""
    return any(isinstance(a, _MUTABLE) for p in run.probes if p.in_domain for a in p.args)


def _has_repeats(task, run) -> bool:
    """nondeterministic has an opinion only where an example call is made twice."""
    return any(p.klass == "repeat" for p in run.probes)


@op(tier="exec", detects="mutates_argument", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run(applies=_takes_mutable)
def mutates_argument(task, output, ctx, run):
    """A call changes a list, dict or set it was given (the caller's data is modified)."""
    compared = 0
    for p, c in run.in_domain():
        if c.args_after is None or not any(isinstance(a, _MUTABLE) for a in p.args):
            continue
        compared += 1
        after = c.args_after[0]
        for i, (before, now) in enumerate(zip(p.args, after)):
            if isinstance(before, _MUTABLE) and not same_value(before, now):
                return drawback(f"{p.call} changed its argument {i + 1} from {short(before, 50)} to {short(now, 50)}")
    if not compared:
        return drawback(
            "no call that received a list, dict or set reported its arguments afterwards (they did "
            "not finish or the arguments are not plain data any more)"
        )
    return clean(f"{compared} call(s) left their list/dict/set arguments unchanged")


@op(tier="exec", detects="nondeterministic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run(applies=_has_repeats)
def nondeterministic(task, output, ctx, run):
    """The same example call, made twice in one process, gives different results.

    Causes: unseeded randomness, the clock, or state kept between calls."""
    first: dict[int, tuple[Probe, Any]] = {p.example: (p, c) for p, c in run.pairs("example")}
    compared = 0
    for p2, c2 in run.pairs("repeat"):
        if p2.example not in first:
            continue
        p1, c1 = first[p2.example]
        if "timeout" in (c1.status, c2.status) or "crashed" in (c1.status, c2.status):
            continue
        compared += 1
        a = short(c1.value, 50) if c1.status == "ok" else _failure_text(c1)
        b = short(c2.value, 50) if c2.status == "ok" else _failure_text(c2)
        differs = (
            c1.status != c2.status
            or (c1.status == "ok" and not same_value(c1.value, c2.value))
            or (c1.status == "exception" and c1.exc_type != c2.exc_type)
        )
        if differs:
            art = artifact_of(task, output, ctx)
            used = (
                sorted(
                    {dotted(n).split(".")[0] for n in live_nodes(art.tree) if isinstance(n, ast.Attribute)}
                    & {"random", "time", "datetime", "uuid", "secrets"}
                )
                if art.tree is not None
                else []
            )
            hint = f"; the code uses {', '.join(used)}" if used else ""
            return drawback(f"{p1.call} gave {a} the first time and {b} the second time{hint}")
    if not compared:
        return drawback("no example call finished twice, so repeatability could not be checked")
    return clean(f"{compared} example call(s) repeat identically")
