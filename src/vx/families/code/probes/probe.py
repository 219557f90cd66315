"""Probe inputs for the code family's exec ops: the visible example calls plus type-preserving
mutations of their arguments.

A probe is one call of the candidate's function. The visible examples come first (their expected
values stay here, in the parent: the sandboxed child never sees them), then mutations of each
example's arguments, one *class* at a time. Every mutation keeps each argument's type (a list
stays a list of the same element types, an int stays an int), so a correct solution is expected
to accept it -- though not always: a task may forbid empty input. Ops therefore treat the classes
differently: ``crash`` and ``timeout`` only look at ``in_domain`` classes (the example itself and
re-orderings of it); the edge classes feed the ``raises_on_probe_class`` template, whose inducer
keeps a class only when known-good outputs survive it.

Probe classes, in the order they are run (earlier classes are never starved by later ones):

============ ============== ===================================================================
class        in_domain      what changes
============ ============== ===================================================================
example      yes            nothing: the visible example call as shown
repeat       yes            the example call again, in the same process (nondeterminism, state)
permuted     yes            each flat list/tuple of same-type scalars reversed (same elements)
empty        no             one list/tuple/str/dict/set argument made empty
single       no             one list/tuple/str argument cut to its first element
zero         no             one int/float argument made 0
negative     no             one positive int/float argument negated
large        no             one argument enlarged: ints ×10 (≤ 10 000), sequences repeated to
                            ≥ 50 elements (≤ 200), strings to ≥ 100 characters (≤ 1 000)
gen_mutant   no             generated (:mod:`~vx.families.code.probes.generate`): type-aware
                            mutations within the domain the examples imply
gen_boundary no             generated: two values of an example call made equal or adjacent
gen_edge     no             generated: an argument emptied, zeroed, cut to one element, negated
gen_large    no             generated: an argument enlarged (ints ×10..×40, lists of 50-120 elements,
                            strings of 50-200 characters)
gen_drawn    no             generated (:mod:`~vx.families.code.probes.draw`): fresh inputs drawn by
                            hypothesis strategies built from the inferred domain
gen_wide     no             generated: drawn likewise, magnitude bounds widened (×10, ≥ 100)
model_test   no             the inputs of model-written test cases (task field ``model_tests``,
                            e.g. CodeT's), with the test's expected value kept in the parent
============ ============== ===================================================================

The first eight classes serve the seed exec ops (at most :data:`MAX_PROBES` calls); the generated
classes and the model tests (at most :data:`MAX_GENERATED` + :data:`MAX_MODEL_TESTS` more calls)
are what the peer ops compare attempts on. All of them run in the candidate's one sandboxed process.

Everything is deterministic: the same task always yields the same probes, in the same order.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from vx.families.code.probes import store
from vx.memo import MISSING, Memo, size_of

#: Probe classes in run order, and whether a correct solution must handle them.
CLASSES: dict[str, bool] = {
    "example": True,
    "repeat": True,
    "permuted": True,
    "empty": False,
    "single": False,
    "zero": False,
    "negative": False,
    "large": False,
    "gen_mutant": False,
    "gen_boundary": False,
    "gen_edge": False,
    "gen_large": False,
    "gen_drawn": False,
    "gen_wide": False,
    "model_test": False,
}
#: The classes made by the probe generator (``gen_<generator class>``), and the model tests.
GENERATED = ("gen_mutant", "gen_boundary", "gen_edge", "gen_large", "gen_drawn", "gen_wide")
PEER_CLASSES = GENERATED + ("model_test",)
#: The generated classes whose inputs the inferred domain accepts and on which no correct program runs out
#: of time (``crashes_in_domain`` judges timeouts there), so their calls get at least a visible example's
#: CPU budget (:func:`.budgets.run_budgets`): HumanEval/75's canonical solution takes 25-36 ms on every
#: mutant, a constant-time search, whatever its input's size.
DOMAIN_CLASSES = ("gen_mutant", "gen_boundary", "gen_drawn")
#: The classes the seed exec ops and the exec check templates read.
BASE_CLASSES = tuple(c for c in CLASSES if c not in PEER_CLASSES)
IN_DOMAIN = frozenset(c for c, ok in CLASSES.items() if ok)
#: The edge classes a synthesized check may target.
EDGE_CLASSES = tuple(c for c, ok in CLASSES.items() if not ok and c not in PEER_CLASSES)

MAX_PROBES = 24  # per candidate, of the seed exec ops' classes: bounds the sandbox time of one item
MAX_GENERATED = 42 + 40  # generated probes per task (generate.CLASS_SIZES, draw.N_DRAWN, draw.N_WIDE)
MAX_MODEL_TESTS = 30  # model-written test inputs per task, the most often written first
_MAX_PER_CLASS = 4  # per (example, class)


@attrs.frozen
class VisibleExample:
    """A visible example call with exact Python values (tuples stay tuples)."""

    index: int
    function: str  # the name the example calls
    args: tuple[Any, ...]
    expected: Any
    exact_types: bool  # False when the values were recovered from JSON (tuples may be lists)
    call: str  # source text as the solver saw it


@attrs.frozen
class Probe:
    """One call to make in the sandbox. ``expected`` is kept in the parent for comparisons."""

    klass: str
    function: str
    args: tuple[Any, ...]
    example: int  # index of the visible example it derives from
    detail: str = ""  # what was mutated, e.g. "argument 1 emptied"
    expected: Any = None  # only for the "example" and "repeat" classes
    exact_types: bool = True

    @property
    def call(self) -> str:
        return call_text(self.function, self.args)

    @property
    def in_domain(self) -> bool:
        return CLASSES[self.klass]


def call_text(function: str, args: Sequence[Any], limit: int = 120) -> str:
    """``f(1, [2, 3])`` for messages, shortened in the middle when long."""
    text = f"{function}({', '.join(repr(a) for a in args)})"
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return text[:half] + " ... " + text[-half:]


# --------------------------------------------------------------------------- visible examples


def _literal(text: str) -> Any:
    return ast.literal_eval(text)


def _args_from_call(call: str) -> tuple[str, tuple[Any, ...]] | None:
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.keywords:
        return None
    try:
        return node.func.id, tuple(ast.literal_eval(a) for a in node.args)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def visible_examples(task: Mapping[str, Any]) -> list[VisibleExample]:
    """The task's visible example calls with exact Python values.

    Reads ``examples`` records (``call``, ``function``, ``args``, ``expected`` and, when present,
    ``args_src`` / ``expected_src`` with exact types). Records that cannot be read are skipped.
    Parsed once per task and process (a dozen ops of every attempt read them); the list is new on every
    call, its examples are shared (like the probes made from them: read them, never change them).
    """
    key = _task_key(task)
    hit = _EXAMPLES_CACHE.get(key)
    if hit is MISSING:
        hit = _remember(_EXAMPLES_CACHE, key, tuple(_read_examples(task)))
    return list(hit)


def _read_examples(task: Mapping[str, Any]) -> list[VisibleExample]:
    out: list[VisibleExample] = []
    entry = str(task.get("entry_point") or "")
    for record in task.get("examples") or ():
        if not isinstance(record, Mapping):
            continue
        parsed = _args_from_call(str(record.get("call", ""))) if record.get("call") else None
        function = str(record.get("function") or (parsed[0] if parsed else entry))
        exact = True
        try:
            if "args_src" in record:
                args = tuple(_literal(record["args_src"]))
            elif parsed is not None:
                args = parsed[1]
            else:
                args = tuple(record["args"])
                exact = False
            if "expected_src" in record:
                expected = _literal(record["expected_src"])
            else:
                expected = record["expected"]
                exact = False
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if not function:
            continue
        out.append(
            VisibleExample(
                len(out), function, args, expected, exact, str(record.get("call") or call_text(function, args))
            )
        )
    return out


# --------------------------------------------------------------------------- mutations


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_num(v: Any) -> bool:
    return type(v) in (int, float)


def _seq(v: Any) -> bool:
    return type(v) in (list, tuple, str)


_SCALARS = (int, float, str, bool)


def _permuted(v: Any) -> Any:
    """`v` reversed when it is a flat list/tuple of scalars of one type, else None.

    Only such sequences are collections of interchangeable elements. Strings are not reversed (a
    string is one value with structure: "o o| .|", a word, a date); nor are heterogeneous tuples
    (records such as ``(True, [], 5, "HELLO")``) or nested lists (a matrix or a triangle whose
    shape matters): their reversal is out of the task's domain."""
    if type(v) in (list, tuple) and len(v) > 1 and type(v[0]) in _SCALARS and all(type(x) is type(v[0]) for x in v):
        rev = v[::-1]
        return rev if rev != v else None
    return None


def _empty(v: Any) -> Any:
    if type(v) in (list, tuple, str, dict, set, frozenset) and len(v) > 0:
        return type(v)()
    return None


def _single(v: Any) -> Any:
    if _seq(v) and len(v) > 1:
        return v[:1]
    return None


def _zero(v: Any) -> Any:
    if _is_num(v) and v != 0:
        return type(v)(0)
    return None


def _negative(v: Any) -> Any:
    if _is_num(v) and v > 0:
        return -v
    return None


def _large(v: Any) -> Any:
    if _is_int(v):
        big = min(max(abs(v) * 10, 100), 10_000)
        return big if v >= 0 else -big
    if type(v) is float:
        return v * 10 if v != 0 else 100.0
    if type(v) in (list, tuple) and 0 < len(v) < 50:
        times = min(-(-50 // len(v)), 200 // len(v))
        return v * max(times, 2)
    if type(v) is str and 0 < len(v) < 100:
        times = min(-(-100 // len(v)), 1000 // len(v))
        return v * max(times, 2)
    return None


_ONE_ARG: dict[str, Callable[[Any], Any]] = {
    "empty": _empty,
    "single": _single,
    "zero": _zero,
    "negative": _negative,
    "large": _large,
}
_DETAIL = {
    "empty": "made empty",
    "single": "cut to one element",
    "zero": "made 0",
    "negative": "negated",
    "large": "enlarged",
}


def mutations(args: Sequence[Any], klass: str) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Type-preserving variants of one argument list for one probe class: (args, detail)."""
    args = tuple(args)
    if klass == "permuted":
        changed = [_permuted(a) for a in args]
        if any(c is not None for c in changed):
            new = tuple(a if c is None else c for a, c in zip(args, changed))
            which = ", ".join(str(i + 1) for i, c in enumerate(changed) if c is not None)
            yield new, f"argument(s) {which} reversed"
        return
    fn = _ONE_ARG[klass]
    for i, a in enumerate(args):
        new_arg = fn(a)
        if new_arg is None:
            continue
        yield args[:i] + (new_arg,) + args[i + 1 :], f"argument {i + 1} {_DETAIL[klass]}"


# --------------------------------------------------------------------------- the probe list


def probes_for(
    task: Mapping[str, Any], *, limit: int = MAX_PROBES, classes: Sequence[str] | None = None
) -> list[Probe]:
    """The probes of a task, in run order (see the module docstring): at most `limit` of the seed
    exec ops' classes, then the generated probes and the model tests (:func:`peer_probes`).

    `function` of a probe is the name its visible example calls; the exec layer redirects it to
    the function the candidate actually defines.
    """
    key = (_task_key(task), limit, None if classes is None else tuple(classes))
    hit = _PROBES_CACHE.get(key)
    if hit is MISSING:  # once per task and process: every attempt at the task runs the same probes
        base = _base_probes(task, limit=limit, classes=classes)
        extra = [p for p in peer_probes(task) if classes is None or p.klass in classes]
        hit = _remember(_PROBES_CACHE, key, tuple(base + extra))
    return list(hit)


def _base_probes(task: Mapping[str, Any], *, limit: int, classes: Sequence[str] | None) -> list[Probe]:
    wanted = [c for c in CLASSES if (classes is None or c in classes) and c not in PEER_CLASSES]
    examples = visible_examples(task)
    probes: list[Probe] = []
    seen: set[tuple[str, str]] = set()

    def add(p: Probe) -> None:
        key = (p.function, repr(p.args))
        if p.klass != "repeat" and key in seen:
            return
        seen.add(key)
        probes.append(p)

    for klass in wanted:
        for ex in examples:
            if klass in ("example", "repeat"):
                add(
                    Probe(
                        klass,
                        ex.function,
                        ex.args,
                        ex.index,
                        "as shown" if klass == "example" else "the example call again",
                        ex.expected,
                        ex.exact_types,
                    )
                )
                continue
            for n, (args, detail) in enumerate(mutations(ex.args, klass)):
                if n >= _MAX_PER_CLASS:
                    break
                add(Probe(klass, ex.function, args, ex.index, detail))
    # Keep the order of classes, truncating the tail: examples are never dropped for edge cases.
    return probes[:limit]


# --------------------------------------------------------------------------- generated probes

#: A task's visible examples, its probes, its generated probes and their texts, once per task and process:
#: each memo keeps at most this many tasks and about :data:`TASK_MEMO_BYTES` (a task's probes take 27 KB at
#: the median on HumanEval, 81 KB at most; a task record of a trainer's may be far larger).
_GENERATED_CACHE_MAX = 4096
TASK_MEMO_BYTES = 64 << 20
_EXAMPLES_CACHE = Memo(_GENERATED_CACHE_MAX, TASK_MEMO_BYTES)
_PROBES_CACHE = Memo(_GENERATED_CACHE_MAX, TASK_MEMO_BYTES)
_GENERATED_CACHE = Memo(_GENERATED_CACHE_MAX, TASK_MEMO_BYTES)
_TEXTS_CACHE = Memo(_GENERATED_CACHE_MAX, TASK_MEMO_BYTES)


def _remember(memo: Memo, key: Any, value: Any) -> Any:
    """Keep a task's `value` under `key` in `memo`, sized by both (an oversized one is computed again)."""
    return memo.put(key, value, size_of(value, TASK_MEMO_BYTES) + 2 * len(repr(key)))


def _task_key(task: Mapping[str, Any]) -> str:
    return repr((task.get("id"), task.get("entry_point"), task.get("examples"), task.get("model_tests")))


def generated(task: Mapping[str, Any]) -> tuple[tuple[Probe, ...], tuple[str, ...], str]:
    """(generated probes, the inferred domain as text lines, why there are none) of a task.

    Computed once per task and process (the generator is deterministic: seeded by the task id), and
    kept on disk for the next process (:mod:`.store`; ``VX_PROBE_CACHE=off`` turns that off)."""
    key = _task_key(task)
    hit = _GENERATED_CACHE.get(key)
    if hit is not MISSING:
        return hit
    stored = store.load(key)  # made by an earlier process (the generator's version is in the key)
    if stored is not None:
        rows, domain, why = stored
        return _remember(_GENERATED_CACHE, key, (tuple(Probe(k, fn, a, -1, d) for k, fn, a, d in rows), domain, why))
    result = _generate(task)
    store.store(key, [(p.klass, p.function, p.args, p.detail) for p in result[0]], result[1], result[2])
    return _remember(_GENERATED_CACHE, key, result)


def _generate(task: Mapping[str, Any]) -> tuple[tuple[Probe, ...], tuple[str, ...], str]:
    from vx.families.code.probes.generate import generate_probes

    examples = visible_examples(task)
    probes: list[Probe] = []
    domain: tuple[str, ...] = ()
    why = ""
    if not examples:
        why = "the task shows no visible example call to mutate"
    elif len({ex.function for ex in examples}) != 1:
        why = "the visible examples call different functions"
    else:
        from vx.families.code.probes import draw

        args = [ex.args for ex in examples]
        made, dom, why = generate_probes(args, seed=str(task.get("id", "")))
        domain = tuple(dom.describe()) if dom is not None else ()
        fn = examples[0].function
        probes = [Probe("gen_" + klass, fn, a, -1, f"generated ({klass})") for klass, a in made]
        if dom is not None:
            drawn, _ = draw.draw_probes(
                args, dom, seed=str(task.get("id", "")), n=draw.N_DRAWN, seen={repr(a) for _, a in made}
            )
            probes += [Probe("gen_drawn", fn, a, -1, "drawn from the inferred domain") for a in drawn]
            seen = {repr(a) for _, a in made} | {repr(a) for a in drawn}
            wide, _ = (
                draw.draw_probes(args, dom, seed=str(task.get("id", "")), n=draw.N_WIDE, seen=seen, wide=True)
                if draw.N_WIDE
                else ([], "")
            )
            probes += [Probe("gen_wide", fn, a, -1, "drawn from the inferred domain, numbers widened") for a in wide]
            why = "" if probes else why
    return tuple(probes[:MAX_GENERATED]), domain, why


def model_tests_with_counts(task: Mapping[str, Any]) -> list[tuple[Probe, int]]:
    """The task's model-written test cases as probes (class ``model_test``; expected values kept in
    the parent) with how often the model wrote each, in the task's order (most often written first),
    at most :data:`MAX_MODEL_TESTS`. Records that cannot be read are skipped."""
    out: list[tuple[Probe, int]] = []
    examples = visible_examples(task)
    default_fn = examples[0].function if examples else str(task.get("entry_point") or "")
    for record in task.get("model_tests") or ():
        if not isinstance(record, Mapping) or len(out) >= MAX_MODEL_TESTS:
            continue
        try:
            args = tuple(_literal(record["args_src"]))
            expected = _literal(record["expected_src"])
            count = max(1, int(record.get("count", 1)))
        except (KeyError, TypeError, ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        out.append(
            (Probe("model_test", default_fn, args, -1, f"model-written test (written {count}x)", expected, True), count)
        )
    return out


def model_tests(task: Mapping[str, Any]) -> list[Probe]:
    """The task's model-written tests as probes (see :func:`model_tests_with_counts`)."""
    return [p for p, _ in model_tests_with_counts(task)]


#: Generated classes run after the model tests, last of all: a run stops before them when the attempt
#: fails a visible example (:func:`.run.stop_rule`: its verdict is settled, and these are most calls).
LATE_CLASSES = ("gen_drawn", "gen_wide")


def peer_probe_texts(task: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The task's peer probes as (call texts, classes), for the peer ops' messages and probe selections
    (once per task and process: the texts of large inputs cost a repr each)."""
    key = _task_key(task)
    hit = _TEXTS_CACHE.get(key)
    if hit is MISSING:
        probes = peer_probes(task)
        hit = _remember(_TEXTS_CACHE, key, (tuple(p.call for p in probes), tuple(p.klass for p in probes)))
    return hit


def peer_probes(task: Mapping[str, Any]) -> list[Probe]:
    """The probes the peer ops compare attempts on: the generated ones, the model tests, then the drawn
    ones (:data:`LATE_CLASSES`)."""
    gen = generated(task)[0]
    return (
        [p for p in gen if p.klass not in LATE_CLASSES]
        + model_tests(task)
        + [p for p in gen if p.klass in LATE_CLASSES]
    )
