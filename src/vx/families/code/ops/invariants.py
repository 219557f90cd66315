"""Example invariants: Daikon-style likely invariants of a task, inferred from its visible examples, checked on
the attempt's answers to the generated probes (``violates_example_invariant``; docs/invariants.md).

From the visible examples' (arguments, expected value) pairs, :func:`infer` keeps every relation of the kinds
below that holds on **every** example and has **real support**: at least :data:`MIN_SUPPORT` examples that could
have broken it (an output of three elements cannot break "sorted" if its elements are equal; "as long as its
argument" needs arguments of at least two different lengths, so three lists of three never make "length is 3").
The op then reads the attempt's one sandboxed run (:func:`.run.execution`: no extra process) and checks each
relation on the answers to the probes the inferred input domain (:func:`.domain.infer_domain`) accepts, naming
the broken relation and the input::

    sort_even([5, 6, 3, 4]) returned [3, 6, 5]; every example returns a list as long as its argument

Kinds (``arg`` is the 0-based argument index, -1 when the kind has none):

================== ==================================================================================
kind               every example ...
================== ==================================================================================
type               returns values of the same type classes, level by level (numbers are one class,
                   bool another; a list's elements, a dict's keys and values, a record's fields)
length_eq_arg      returns a sized value as long as argument ``arg`` (lengths vary over the examples)
length_le_arg      ... at most as long as argument ``arg``
length_ge_arg      ... at least as long as argument ``arg``
length_is_arg      ... whose length is the int argument ``arg``
equals_arg         returns argument ``arg`` unchanged
permutation_arg    returns the elements of argument ``arg`` rearranged (same multiset)
subsequence_arg    returns elements of argument ``arg`` in their order
sub_multiset_arg   returns only elements of argument ``arg`` (each at most as often)
sorted             returns a sorted list (ascending or descending: ``detail``)
sign               returns a non-negative (or non-positive) number
range              returns a number within the examples' largest magnitude widened as the probe
                   generator widens its bounds: max(2M, M + 4); checked on strictly in-domain probes
monotone           returns a number that never decreases (or never increases) as the numeric argument
                   ``arg`` grows, the other arguments equal (pairs of examples, pairs of probes)
no_mutation        (no inference: a prior) leaves its list/dict/set arguments unchanged
deterministic      (no inference: a function) returns the same value for the same arguments twice
================== ==================================================================================

Which kinds the seed op checks (:data:`DEFAULT_KINDS`) was decided by their measured false alarms on correct
attempts (``benchmarks/bench_invariants.py``; docs/invariants.md). The check template ``violates_invariant``
(params ``kind``, ``arg``) lets synthesis propose a single invariant and the birth gate test it. Everything is
deterministic: the same task always yields the same invariants, in the same order.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.families.code.ops import run as _run
from vx.families.code.ops import values
from vx.families.code.ops.run import EXEC_OP_TIMEOUT, MUTABLE, execution, judges_the_run
from vx.families.code.ops.values import short
from vx.families.code.probes import domain as input_domain
from vx.families.code.probes import probe
from vx.families.code.probes.probe import VisibleExample, visible_examples
from vx.memo import MISSING, IdentityMemo, Memo, size_of
from vx.ops.core import Context, Result, abstain, clean, drawback, op
from vx.ops.specs import SpecError, inducer, template

DEPENDS = (
    __name__,
    input_domain,
    probe,
    values,
    _run,
    "vx.families.code.probes.budgets",
    "vx.families.code.probes.generate",
    "vx.families.code.probes.draw",
)

#: Examples that could have broken a relation, at least: one example supports nothing.
MIN_SUPPORT = 2
#: A relation that one would see by chance with at least this probability (a random order of the outputs'
#: elements being sorted, or keeping the argument's order) is no evidence: ``sorted``, ``subsequence_arg`` and
#: ``monotone`` need less.
CHANCE = 0.01
#: Every kind, in the order the op checks them (and names the first broken one).
KINDS = (
    "type",
    "length_eq_arg",
    "length_is_arg",
    "length_le_arg",
    "length_ge_arg",
    "equals_arg",
    "permutation_arg",
    "subsequence_arg",
    "sub_multiset_arg",
    "sorted",
    "sign",
    "range",
    "monotone",
    "no_mutation",
    "deterministic",
)
#: Kinds that take an argument index.
ARG_KINDS = frozenset(
    {
        "length_eq_arg",
        "length_is_arg",
        "length_le_arg",
        "length_ge_arg",
        "equals_arg",
        "permutation_arg",
        "subsequence_arg",
        "sub_multiset_arg",
        "monotone",
        "no_mutation",
    }
)
#: The kinds ``violates_example_invariant`` checks: those that flagged no correct attempt on the CodeT development
#: half and the two-file HumanEval+ family (benchmarks/bench_invariants.py; docs/invariants.md). Left to the
#: template (synthesis proposes them per failure cluster, the birth gate decides): ``sign`` (7.4% of the judged
#: correct HumanEval+ attempts: a probe the inferred domain accepts but the task does not, fruit_distribution with
#: fewer fruits than apples and oranges), ``range`` (26-37%: outputs grow with the
#: inputs, sum_to_n(200)) and ``no_mutation`` (4.8-8.3%: correct programs sort their list in place).
DEFAULT_KINDS = tuple(k for k in KINDS if k not in ("sign", "range", "no_mutation"))
#: Probe classes never checked: the examples themselves (``fails_visible_example`` judges them) and the edge
#: classes, whose inputs the task may leave undefined even where the inferred domain accepts them (a list of one
#: element for "the two closest elements": HumanEval/20's reference returns None there).
EDGE = frozenset({"empty", "single", "zero", "negative", "gen_edge"})
_SKIP = frozenset({"example", "repeat"}) | EDGE

_SIZED = (str, list, tuple, dict, set, frozenset)
_SEQ = (list, tuple)
_MUTABLE = MUTABLE  # the types whose arguments the run reports back


# --------------------------------------------------------------------------- values


def _num(v: Any) -> bool:
    return type(v) in (int, float) and not (type(v) is float and math.isnan(v))


def _cls(v: Any, exact: bool) -> str:
    """The type class of a value: numbers are one class (1 == 1.0 for the hidden tests), bool another."""
    t = type(v)
    if t is bool:
        return "bool"
    if t in (int, float):
        return "number"
    if t in (set, frozenset):
        return "set"
    if t in _SEQ and not exact:
        return "sequence"  # the example's types were recovered from JSON: a tuple may show as a list
    if v is None:
        return "None"
    return t.__name__ if t in (str, list, tuple, dict, bytes) else "object"


_ARTICLE = {
    "number": "a number",
    "bool": "a bool",
    "str": "a str",
    "list": "a list",
    "tuple": "a tuple",
    "dict": "a dict",
    "set": "a set",
    "None": "None",
    "sequence": "a list",
    "bytes": "bytes",
    "object": "an object",
}


_PLURAL = {
    "number": "numbers",
    "bool": "bools",
    "str": "strs",
    "list": "lists",
    "tuple": "tuples",
    "dict": "dicts",
    "set": "sets",
    "sequence": "lists",
    "object": "objects",
}


def _key(v: Any, depth: int = 0) -> Any:
    """A hashable key of a value for multisets: numbers by value (1 and 1.0 alike), containers by content."""
    if depth > 20:
        return ("deep", repr(v)[:200])
    t = type(v)
    if t is bool:
        return ("b", v)
    if t in (int, float):
        return ("n", float(v)) if not (t is float and math.isnan(v)) else ("nan",)
    if t in _SEQ:
        return ("s", tuple(_key(x, depth + 1) for x in v))
    if t is dict:
        return ("d", tuple(sorted((repr(_key(k, depth + 1)), _key(x, depth + 1)) for k, x in v.items())))
    if t in (set, frozenset):
        return ("set", tuple(sorted(repr(_key(x, depth + 1)) for x in v)))
    try:
        hash(v)
        return ("v", v)
    except TypeError:
        return ("r", repr(v)[:500])


def _same(a: Any, b: Any) -> bool:
    """Equal as the hidden tests would see it, loosely typed (numbers as numbers, floats within 1e-6)."""
    if _num(a) and _num(b) and type(a) is not bool and type(b) is not bool:
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
    return _key(a) == _key(b)


def _elements(v: Any) -> list[Any] | None:
    """The elements of a sequence or a string (characters), else None."""
    if type(v) in _SEQ:
        return list(v)
    if type(v) is str:
        return list(v)
    return None


def _compatible(out: Any, arg: Any) -> bool:
    """Element relations compare a string with a string and a sequence with a sequence."""
    return (type(out) is str) == (type(arg) is str) and _elements(out) is not None and _elements(arg) is not None


def _sub_multiset(out: Any, arg: Any) -> bool:
    a, b = Counter(_key(x) for x in _elements(out) or ()), Counter(_key(x) for x in _elements(arg) or ())
    return all(b[k] >= n for k, n in a.items())


def _permutation(out: Any, arg: Any) -> bool:
    return Counter(_key(x) for x in _elements(out) or ()) == Counter(_key(x) for x in _elements(arg) or ())


def _subsequence(out: Any, arg: Any) -> bool:
    it = iter([_key(x) for x in _elements(arg) or ()])
    return all(any(k == y for y in it) for k in (_key(x) for x in _elements(out) or ()))


def _distinct_count(v: Sequence[Any]) -> int:
    return len({_key(x) for x in v})


def _chance(distinct_counts: Any) -> float:
    """The probability that random orders of outputs with these numbers of distinct elements all come out in
    one given order (the product of 1/m!)."""
    p = 1.0
    for m in distinct_counts:
        p /= math.factorial(min(int(m), 20))
    return p


def _type_paths(v: Any, path: tuple, exact: bool, out: dict[tuple, set[str]], depth: int = 0) -> None:
    """The type class seen at every path of a value: () the value, ("elem",) a sequence's elements, ("key",),
    ("val",) a dict's. Tuples of a fixed length are handled by the caller as records (("field", j))."""
    out.setdefault(path, set()).add(_cls(v, exact))
    if depth >= 4:
        return
    t = type(v)
    if t in (list, tuple, set, frozenset):
        for x in v:
            _type_paths(x, path + ("elem",), exact, out, depth + 1)
    elif t is dict:
        for k, x in v.items():
            _type_paths(k, path + ("key",), exact, out, depth + 1)
            _type_paths(x, path + ("val",), exact, out, depth + 1)


def _path_words(path: tuple) -> str:
    words = {"elem": "elements", "key": "keys", "val": "values"}
    return "'s ".join(words[p] for p in path)


# --------------------------------------------------------------------------- invariants


@attrs.frozen
class Invariant:
    """One relation that holds on every visible example, with the examples that could have broken it."""

    kind: str
    arg: int = -1
    detail: Any = None  # sorted: "asc"/"desc"; sign: "nonneg"/"positive"/...; range: the bound;
    # monotone: "inc"/"dec"; type: ((path, frozenset of classes), ...)
    support: int = 0
    text: str = ""  # "every example returns a list as long as its argument"

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.arg)


@attrs.frozen
class Inferred:
    """The invariants of a task, the examples they come from and the domain its probes are checked in."""

    invariants: tuple[Invariant, ...]
    examples: tuple[VisibleExample, ...]
    domain: Any = None  # probes.domain.Domain, or None when the examples' inputs cannot be modelled
    why: str = ""  # why there are none

    def get(self, kind: str, arg: int = -1) -> Invariant | None:
        return next((i for i in self.invariants if i.kind == kind and i.arg == arg), None)


def _arg_word(i: int, arity: int) -> str:
    return "its argument" if arity == 1 else f"its argument {i + 1}"


def _infer_type(outs: list[Any], exact: bool) -> Invariant | None:
    per_example = []
    for o in outs:
        seen: dict[tuple, set[str]] = {}
        _type_paths(o, (), exact, seen)
        per_example.append(seen)
    paths: dict[tuple, set[str]] = {}
    support: Counter = Counter()
    for seen in per_example:
        for p, classes in seen.items():
            paths.setdefault(p, set()).update(classes)
            support[p] += 1
    kept = tuple(
        sorted(
            ((p, frozenset(c)) for p, c in paths.items() if support[p] >= MIN_SUPPORT),
            key=lambda pc: (len(pc[0]), pc[0]),
        )
    )
    if not kept or kept[0][0] != ():
        return None
    top = " or ".join(_ARTICLE[c] for c in sorted(kept[0][1]))
    inner = [f"{_path_words(p)}: {' or '.join(_PLURAL.get(x, x) for x in sorted(c))}" for p, c in kept[1:]]
    text = f"every example returns {top}" + (f" ({'; '.join(inner)})" if inner else "")
    return Invariant("type", -1, kept, support[()], text)


def infer_from(examples: Sequence[tuple[tuple[Any, ...], Any]], *, exact: bool = True) -> tuple[Invariant, ...]:
    """The invariants that hold on every (arguments, expected value) pair and have real support.

    The law: every invariant returned holds on every pair given, and each has at least :data:`MIN_SUPPORT`
    pairs that could have broken it."""
    pairs = [(tuple(a), o) for a, o in examples]
    if len(pairs) < MIN_SUPPORT or len({len(a) for a, _ in pairs}) != 1:
        return ()
    arity = len(pairs[0][0])
    outs = [o for _, o in pairs]
    found: list[Invariant] = []
    typed = _infer_type(outs, exact)
    if typed is not None:
        found.append(typed)
    sized_out = all(type(o) in _SIZED for o in outs)
    out_cls = {_cls(o, exact) for o in outs}
    what = " or ".join(sorted(_ARTICLE[c] for c in out_cls)) if out_cls else "a value"
    for i in range(arity):
        args_i = [a[i] for a, _ in pairs]
        aw = _arg_word(i, arity)
        if _selects_another(pairs, i):
            continue  # some example returns another argument whole: relations to this one are coincidences
        found += _length_invariants(outs, args_i, i, aw, what, sized_out)
        found += _element_invariants(outs, args_i, i, aw)
    found += _sorted_invariant(outs)
    found += _number_invariants(pairs, outs, arity)
    found += _mutation_invariants(pairs, arity)
    found.append(
        Invariant("deterministic", -1, None, len(pairs), "a function returns the same value for the same arguments")
    )
    order = {k: n for n, k in enumerate(KINDS)}
    return tuple(sorted(found, key=lambda inv: (order[inv.kind], inv.arg)))


def _length_invariants(
    outs: Sequence[Any], args_i: Sequence[Any], i: int, aw: str, what: str, sized_out: bool
) -> list[Invariant]:
    """The outputs' lengths against argument `i`'s: equal, never longer, never shorter, or the argument itself
    (every output sized)."""
    found: list[Invariant] = []
    if sized_out and all(_same_size_kind(o, v) for o, v in zip(outs, args_i)):
        lens = [(len(o), len(v)) for o, v in zip(outs, args_i)]
        if len({b for _, b in lens}) >= 2:
            if all(x == y for x, y in lens):
                found.append(
                    Invariant("length_eq_arg", i, None, len(lens), f"every example returns {what} as long as {aw}")
                )
            elif any(x == y for x, y in lens):  # one example at the bound: the relation is tight, not slack
                if all(x <= y for x, y in lens) and sum(x < y for x, y in lens) >= 1:
                    found.append(
                        Invariant(
                            "length_le_arg", i, None, len(lens), f"every example returns {what} no longer than {aw}"
                        )
                    )
                if all(x >= y for x, y in lens) and sum(x > y for x, y in lens) >= 1:
                    found.append(
                        Invariant(
                            "length_ge_arg",
                            i,
                            None,
                            len(lens),
                            f"every example returns {what} at least as long as {aw}",
                        )
                    )
    if (
        sized_out
        and all(type(v) is int and v >= 0 for v in args_i)
        and len(set(args_i)) >= 2
        and all(len(o) == v for o, v in zip(outs, args_i))
    ):
        found.append(
            Invariant(
                "length_is_arg",
                i,
                None,
                len(outs),
                f"every example returns {what} of length {aw.removeprefix('its ')}",
            )
        )
    return found


def _element_invariants(outs: Sequence[Any], args_i: Sequence[Any], i: int, aw: str) -> list[Invariant]:
    """The outputs' elements against argument `i`'s: the argument unchanged, rearranged, a subsequence of
    it, or only its elements."""
    found: list[Invariant] = []
    if all(_compatible(o, v) for o, v in zip(outs, args_i)):
        if len({_key(v) for v in args_i}) >= MIN_SUPPORT and all(_same(o, v) for o, v in zip(outs, args_i)):
            found.append(Invariant("equals_arg", i, None, len(outs), f"every example returns {aw} unchanged"))
        multi = [(o, v) for o, v in zip(outs, args_i) if len(_elements(v) or ()) >= 2]
        if len(multi) >= MIN_SUPPORT and all(_permutation(o, v) for o, v in zip(outs, args_i)):
            found.append(
                Invariant(
                    "permutation_arg",
                    i,
                    None,
                    len(multi),
                    f"every example returns the elements of {aw}, rearranged",
                )
            )
        nonempty = [(o, v) for o, v in zip(outs, args_i) if _elements(o)]
        # order is evidence only where the output is not the argument itself, and not by chance
        ordered = [o for o, v in nonempty if not _same(o, v) and _distinct_count(_elements(o) or ()) >= 2]
        if (
            len(nonempty) >= MIN_SUPPORT
            and len(ordered) >= 1
            and _chance(_distinct_count(_elements(o) or ()) for o in ordered) <= CHANCE
            and all(_subsequence(o, v) for o, v in zip(outs, args_i))
        ):
            found.append(
                Invariant(
                    "subsequence_arg",
                    i,
                    None,
                    len(nonempty),
                    f"every example returns elements of {aw} in their order",
                )
            )
        if len(nonempty) >= MIN_SUPPORT and all(_sub_multiset(o, v) for o, v in zip(outs, args_i)):
            found.append(
                Invariant("sub_multiset_arg", i, None, len(nonempty), f"every example returns only elements of {aw}")
            )
    return found


def _sorted_invariant(outs: Sequence[Any]) -> list[Invariant]:
    """Every output a sequence sorted one way, where chance would rarely sort them all."""
    found: list[Invariant] = []
    if all(type(o) in _SEQ for o in outs):
        could = [o for o in outs if _distinct_count(o) >= 2]
        dirs = {"asc", "desc"}
        for o in outs:
            dirs &= input_domain.sorted_directions(o)
        if len(could) >= MIN_SUPPORT and len(dirs) == 1 and _chance(_distinct_count(o) for o in could) <= CHANCE:
            d = dirs.pop()
            found.append(
                Invariant(
                    "sorted",
                    -1,
                    d,
                    len(could),
                    f"every example returns a list sorted in {'ascending' if d == 'asc' else 'descending'} order",
                )
            )
    return found


def _number_invariants(
    pairs: Sequence[tuple[tuple[Any, ...], Any]], outs: Sequence[Any], arity: int
) -> list[Invariant]:
    """Numeric outputs: their sign, their magnitude (widened), and how they move as each argument grows."""
    found: list[Invariant] = []
    if all(_num(o) and type(o) is not bool for o in outs):
        nonzero = [o for o in outs if o != 0]
        if len(nonzero) >= MIN_SUPPORT:
            # never "positive": a zero on a new input is too often right (a count, a remainder)
            sign = None
            if all(o >= 0 for o in outs):
                sign = ("nonneg", "a non-negative number")
            elif all(o <= 0 for o in outs):
                sign = ("nonpos", "a non-positive number")
            if sign:
                found.append(Invariant("sign", -1, sign[0], len(nonzero), f"every example returns {sign[1]}"))
        if len({float(o) for o in outs}) >= MIN_SUPPORT:
            m = max(abs(o) for o in outs)
            bound = max(2 * m, m + 4)
            found.append(
                Invariant(
                    "range",
                    -1,
                    bound,
                    len(outs),
                    f"every example returns a number of magnitude at most {m:g} (widened to {bound:g})",
                )
            )
        for i in range(arity):
            mono = _monotone_direction([(a, o) for a, o in pairs], i)
            if mono is not None:
                d, n = mono
                found.append(
                    Invariant(
                        "monotone",
                        i,
                        d,
                        n,
                        f"on the examples the result never "
                        f"{'decreases' if d == 'inc' else 'increases'} as "
                        f"{_arg_word(i, arity).removeprefix('its ')} grows",
                    )
                )
    return found


def _mutation_invariants(pairs: Sequence[tuple[tuple[Any, ...], Any]], arity: int) -> list[Invariant]:
    """Each argument that is mutable in every example is expected to be left unchanged by a call."""
    found: list[Invariant] = []
    mutable = [a for a, _ in pairs if any(isinstance(x, _MUTABLE) for x in a)]
    if len(mutable) >= MIN_SUPPORT:
        for i in range(arity):
            if all(isinstance(a[i], _MUTABLE) for a, _ in pairs):
                found.append(
                    Invariant(
                        "no_mutation",
                        i,
                        None,
                        len(pairs),
                        f"a call is expected to leave {_arg_word(i, arity)} unchanged",
                    )
                )
    return found


def _same_size_kind(out: Any, arg: Any) -> bool:
    """Lengths are compared between two strings or two collections (a string's length against a list's is the
    length of its elements' text, a coincidence of one-character elements)."""
    return type(out) in _SIZED and type(arg) in _SIZED and (type(out) is str) == (type(arg) is str)


def _selects_another(pairs: Sequence[tuple[tuple, Any]], i: int) -> bool:
    """Some example returns another (non-empty) argument unchanged where argument `i` differs: a selector such
    as "the list with fewer characters", whose output relates to argument `i` only when it picks it."""
    for args, out in pairs:
        if type(out) not in _SIZED or not out or _same(out, args[i]):
            continue
        if any(j != i and _same(out, a) for j, a in enumerate(args)):
            return True
    return False


def _others_equal(a: tuple, b: tuple, i: int) -> bool:
    return all(_same(x, y) for j, (x, y) in enumerate(zip(a, b)) if j != i)


def _pairs_on(points: Sequence[tuple[tuple, Any]], i: int) -> list[tuple[Any, Any, Any, Any]]:
    """(x1, f1, x2, f2) with x1 < x2 for pairs of points whose other arguments are equal."""
    out = []
    for n, (a, fa) in enumerate(points):
        for b, fb in points[n + 1 :]:
            if len(a) != len(b) or not (_num(a[i]) and _num(b[i])) or type(a[i]) is bool or type(b[i]) is bool:
                continue
            if a[i] == b[i] or not _others_equal(a, b, i):
                continue
            out.append((a[i], fa, b[i], fb) if a[i] < b[i] else (b[i], fb, a[i], fa))
    return out


def _monotone_direction(points: Sequence[tuple[tuple, Any]], i: int) -> tuple[str, int] | None:
    """("inc" | "dec", pairs that could have broken it): the outputs move one way as argument i grows, on every
    pair of points whose other arguments are equal, with at least one strict change, and not by chance: in each
    group of points with equal other arguments, m distinct outputs fall in one order by chance 1/m!; the product
    over the groups must be at most :data:`CHANCE`."""
    pairs = [p for p in _pairs_on(points, i) if _num(p[1]) and _num(p[3])]
    if len(pairs) < MIN_SUPPORT:
        return None
    up = sum(f2 > f1 for _, f1, _, f2 in pairs)
    down = sum(f2 < f1 for _, f1, _, f2 in pairs)
    if up and down or not (up or down):
        return None
    groups: dict[str, set] = {}
    for a, f in points:
        if i < len(a) and _num(a[i]) and type(a[i]) is not bool and _num(f):
            key = repr([_key(x) for j, x in enumerate(a) if j != i])
            groups.setdefault(key, set()).add(round(float(f), 9))
    if _chance(len(v) for v in groups.values() if len(v) >= 2) > CHANCE:
        return None
    return ("inc" if up else "dec"), len(pairs)


#: A task's inferred invariants, once per task and process (bounded in tasks and bytes, as the probes are).
_INFERRED = Memo(4096, 64 << 20)


def infer(task: Mapping[str, Any]) -> Inferred:
    """The task's invariants from its visible examples (computed once per task and process)."""
    key = repr((task.get("id"), task.get("entry_point"), task.get("examples")))
    hit = _INFERRED.get(key)
    if hit is not MISSING:
        return hit
    examples = tuple(visible_examples(task))
    if len(examples) < MIN_SUPPORT:
        result = Inferred(
            (),
            examples,
            None,
            f"the task shows {len(examples)} visible example(s); an invariant "
            f"needs at least {MIN_SUPPORT} that could break it",
        )
    elif len({ex.function for ex in examples}) != 1 or len({len(ex.args) for ex in examples}) != 1:
        result = Inferred((), examples, None, "the visible examples call different functions or arities")
    else:
        exact = all(ex.exact_types for ex in examples)
        found = infer_from([(ex.args, ex.expected) for ex in examples], exact=exact)
        args = [ex.args for ex in examples]
        domain = input_domain.infer_domain(args) if args[0] and all(input_domain.plain(a) for a in args) else None
        why = "" if found else "no relation holds on every visible example with support"
        result = Inferred(found, examples, domain, why)
    return _INFERRED.put(key, result, size_of(result, 64 << 20) + 2 * len(key))


# --------------------------------------------------------------------------- checking


@attrs.frozen
class Broken:
    """An invariant the attempt broke on a probe: what it returned, on which input."""

    invariant: Invariant
    call: str
    message: str


def accepted(inferred: Inferred, args: tuple, *, strict: bool = False) -> bool:
    """Whether the inferred domain accepts a probe's arguments (magnitude and length bounds relaxed unless
    `strict`: the enlarged probes stay in the domain of every relation but ``range``)."""
    if inferred.domain is None:
        return False
    return input_domain.in_domain(tuple(args), inferred.domain, frozenset() if strict else frozenset({"bound"}))


def _accepted_probe(inferred: Inferred, p: Any) -> tuple[bool, bool]:
    """(:func:`accepted`, :func:`accepted` strictly) of a probe's arguments, remembered per (inferred
    domain, probe): both are the task's (:func:`infer` and the probe list are made once per task and
    process), so every attempt at the task would otherwise test each probe against the domain again."""
    hit = _ACCEPTED.get(inferred, p)
    if hit is not MISSING:
        return hit
    loose = accepted(inferred, p.args)
    return _ACCEPTED.put((loose, loose and accepted(inferred, p.args, strict=True)), inferred, p)


_ACCEPTED = IdentityMemo(1 << 16, 32 << 20)  # the domain and probes it holds are measured once each


def _type_break(inv: Invariant, out: Any, exact: bool) -> str | None:
    seen: dict[tuple, set[str]] = {}
    _type_paths(out, (), exact, seen)
    for path, classes in inv.detail:
        got = seen.get(path)
        if not got:
            continue
        extra = got - classes
        if extra:
            what = " or ".join(sorted(extra))
            if path == ():
                return f"{_ARTICLE.get(what, what)}"
            return f"{_path_words(path)} of type {what}"
    return None


def check_value(inv: Invariant, args: tuple, out: Any, *, exact: bool = True) -> bool | None:
    """Whether one answer keeps an invariant (None: the invariant says nothing about it -- e.g. a length
    relation on a value that has no length, which the ``type`` invariant judges)."""
    k, i = inv.kind, inv.arg
    if k == "type":
        return _type_break(inv, out, exact) is None
    if k in ("length_eq_arg", "length_le_arg", "length_ge_arg"):
        if type(out) not in _SIZED or i >= len(args) or type(args[i]) not in _SIZED:
            return None
        x, y = len(out), len(args[i])
        return x == y if k == "length_eq_arg" else (x <= y if k == "length_le_arg" else x >= y)
    if k == "length_is_arg":
        if type(out) not in _SIZED or i >= len(args) or type(args[i]) is not int:
            return None
        return len(out) == args[i]
    if k in ("equals_arg", "permutation_arg", "subsequence_arg", "sub_multiset_arg"):
        if i >= len(args) or not _compatible(out, args[i]):
            return None
        fn: Callable[[Any, Any], bool] = {
            "equals_arg": _same,
            "permutation_arg": _permutation,
            "subsequence_arg": _subsequence,
            "sub_multiset_arg": _sub_multiset,
        }[k]
        return fn(out, args[i])
    if k == "sorted":
        if type(out) not in _SEQ:
            return None
        return inv.detail in input_domain.sorted_directions(out)
    if k == "sign":
        if not _num(out) or type(out) is bool:
            return None
        return {"positive": out > 0, "nonneg": out >= 0, "negative": out < 0, "nonpos": out <= 0}[inv.detail]
    if k == "range":
        if not _num(out) or type(out) is bool:
            return None
        return abs(out) <= inv.detail
    return None  # monotone, no_mutation, deterministic look at several calls: check_run


def _verb(inv: Invariant, out: Any) -> str:
    return f"returned {short(out, 60)}"


def check_run(
    inferred: Inferred, run: Any, kinds: Sequence[str] | None = None, only: tuple[str, int] | None = None
) -> tuple[list[Broken], int]:
    """The invariants the attempt's run breaks (first breaking call per invariant, in :data:`KINDS` order) and
    how many probe answers were checked. `kinds` limits the kinds; `only` picks one invariant."""
    wanted = [
        inv for inv in inferred.invariants if (kinds is None or inv.kind in kinds) and (only is None or inv.key == only)
    ]
    exact = all(ex.exact_types for ex in inferred.examples)
    broken: list[Broken] = []
    answered = []  # (probe, outcome, strict) of accepted probes that returned
    for p, c in run.pairs():
        if p.klass in _SKIP or c.status != "ok":
            continue
        loose, strict = _accepted_probe(inferred, p)
        if loose:
            answered.append((p, c, strict))
    for inv in wanted:
        hit = _first_break(inv, inferred, run, answered, exact)
        if hit is not None:
            broken.append(Broken(inv, hit[0], hit[1]))
    return broken, len(answered)


def _first_break(inv: Invariant, inferred: Inferred, run: Any, answered: list, exact: bool) -> tuple[str, str] | None:
    if inv.kind == "monotone":
        return _monotone_break(inv, inferred, run, answered)
    if inv.kind == "no_mutation":
        for p, c, _ in answered:
            after = c.args_after[0] if c.args_after else None
            if after is None or inv.arg >= len(p.args) or inv.arg >= len(after):
                continue
            before, now = p.args[inv.arg], after[inv.arg]
            if isinstance(before, _MUTABLE) and not values.same_value(before, now):
                return p.call, (
                    f"{p.call} changed {_arg_word(inv.arg, len(p.args))} from {short(before, 50)} to "
                    f"{short(now, 50)}; {inv.text}"
                )
        return None
    if inv.kind == "deterministic":
        seen: dict[str, tuple[Any, Any]] = {}
        for p, c in run.pairs():
            if c.status != "ok":
                continue
            key = repr(p.args)
            if key in seen:
                first = seen[key][1]
                if not _same(first.value, c.value) or type(first.value) is not type(c.value):
                    return p.call, (
                        f"{p.call} returned {short(first.value, 50)} once and {short(c.value, 50)} "
                        f"the other time; {inv.text}"
                    )
            else:
                seen[key] = (p, c)
        return None
    for p, c, strict in answered:
        if inv.kind == "range" and not strict:
            continue
        ok = check_value(inv, p.args, c.value, exact=exact)
        if ok is False:
            if inv.kind == "type":
                return (
                    p.call,
                    f"{p.call} returned {short(c.value, 60)} ({_type_break(inv, c.value, exact)}); {inv.text}",
                )
            return p.call, f"{p.call} {_verb(inv, c.value)}; {inv.text}"
    return None


def _monotone_break(inv: Invariant, inferred: Inferred, run: Any, answered: list) -> tuple[str, str] | None:
    points = [(p.args, c.value, p.call) for p, c, _ in answered if _num(c.value) and type(c.value) is not bool]
    for n, (a, fa, ca) in enumerate(points):
        for b, fb, cb in points[n + 1 :]:
            got = _pairs_on([(a, (fa, ca)), (b, (fb, cb))], inv.arg)
            if not got:
                continue
            _, (f1, c1), _, (f2, c2) = got[0]
            if (inv.detail == "inc" and f2 < f1 - 1e-9 * max(1.0, abs(f1))) or (
                inv.detail == "dec" and f2 > f1 + 1e-9 * max(1.0, abs(f1))
            ):
                return c2, f"{c1} returned {short(f1, 40)} but {c2} returned {short(f2, 40)}; {inv.text}"
    return None


# --------------------------------------------------------------------------- the op


def _has_invariants(kinds: Sequence[str] | None) -> Callable[[Mapping[str, Any], Any], bool]:
    def applies(task: Mapping[str, Any], run: Any) -> bool:
        inferred = infer(task)
        return inferred.domain is not None and any(kinds is None or i.kind in kinds for i in inferred.invariants)

    return applies


def invariant_check(kinds: Sequence[str] | None = None, only: tuple[str, int] | None = None) -> Callable:
    """An exec op body checking the task's invariants of `kinds` (or the one invariant `only`) on the run."""
    selected = tuple(kinds) if kinds is not None else None

    def body(task, output, ctx, run) -> Result:
        inferred = infer(task)
        broken, checked = check_run(inferred, run, selected, only)
        if broken:
            more = f" (and {len(broken) - 1} more invariant(s))" if len(broken) > 1 else ""
            return drawback(broken[0].message + more, evidence={"broken": [b.invariant.key for b in broken]})
        if not checked:
            return abstain("no probe the inferred domain accepts returned a value")
        n = sum(
            1
            for i in inferred.invariants
            if (selected is None or i.kind in selected) and (only is None or i.key == only)
        )
        return clean(f"{n} example invariant(s) hold on {checked} generated input(s)")

    return body


@op(tier="exec", detects="wrong_logic", timeout=EXEC_OP_TIMEOUT, depends=DEPENDS)
@judges_the_run(applies=_has_invariants(DEFAULT_KINDS))
def violates_example_invariant(task, output, ctx, run):
    """On a generated input the inferred domain accepts, the attempt's answer breaks a relation that holds on
    every visible example (its type, its length against an argument, sortedness, sign...), with support."""
    return invariant_check(DEFAULT_KINDS)(task, output, ctx, run)


# --------------------------------------------------------------------------- the template


@template("violates_invariant", kind="exec", params={"kind": "str", "arg": "int"}, family="code", depends=DEPENDS)
def violates_invariant(kind: str, arg: int):
    """One example invariant (kind: type, length_eq_arg, sorted...; arg: the argument index, -1 for none) is
    broken on a generated input the inferred domain accepts; abstains where the examples do not support it."""
    if kind not in KINDS:
        raise SpecError(f"violates_invariant: unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if (kind in ARG_KINDS) != (arg >= 0) or arg < -1:
        raise SpecError(
            f"violates_invariant: kind {kind!r} takes "
            + ("an argument index arg >= 0" if kind in ARG_KINDS else "no argument (arg = -1)")
            + f", got arg = {arg}"
        )
    inner = invariant_check(only=(kind, arg))

    def applies(task: Mapping[str, Any], run: Any) -> bool:
        inferred = infer(task)
        return inferred.domain is not None and inferred.get(kind, arg) is not None

    return judges_the_run(inner, applies=applies)


def broken_keys(task: Mapping[str, Any], output: Any, ctx: Context) -> set[tuple[str, int]] | None:
    """The (kind, arg) of every invariant the attempt breaks (None: nothing to check)."""
    inferred = infer(task)
    if not inferred.invariants or inferred.domain is None:
        return None
    run, _ = execution(task, output, ctx)
    if run is None or not run.loaded:
        return None
    broken, _ = check_run(inferred, run)
    return {b.invariant.key for b in broken}


@inducer("violates_invariant")
def _induce_invariants(cluster: list, good: list) -> list[dict[str, Any]]:
    from vx.families.code.ops.templates import _exec_features, _rank

    bad = Counter(k for f in _exec_features(cluster, broken_keys) if f for k in f)
    ok = Counter(k for f in _exec_features(good, broken_keys) if f for k in f)
    return [{"kind": k, "arg": a} for k, a in _rank(bad, ok, len(cluster))]


__all__ = [
    "ARG_KINDS",
    "Broken",
    "DEFAULT_KINDS",
    "EDGE",
    "Inferred",
    "Invariant",
    "KINDS",
    "MIN_SUPPORT",
    "accepted",
    "broken_keys",
    "check_run",
    "check_value",
    "infer",
    "infer_from",
    "invariant_check",
    "violates_example_invariant",
    "violates_invariant",
]
