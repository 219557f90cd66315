"""The inferred domain of a task's inputs: predicates that hold on every visible example call.

`infer_domain(examples)` reads only the visible example argument tuples (never the hidden tests or the
reference solution) and returns a :class:`Domain`; `in_domain(args, domain)` says whether an argument
tuple satisfies every predicate (or all but the kinds named in ``relax``). The generated probes
(:mod:`.generate`), the drawn probes (:mod:`.draw`) and the example invariants
(:mod:`vx.families.code.ops.invariants`) all keep to it.

Predicates (each is inferred only when it holds on every example):

* per value path (argument i, its elements, a record tuple's field j, a dict's keys/values):
  type (a probe's leaves must have a type seen at that path), non-negative / positive numbers,
  ints at least 2 (when every int seen is: 1 is where "n >= 2" tasks -- divisors, bases -- are undefined),
  a magnitude bound (|x| <= max(2·M, M + 4), M the largest magnitude seen), a small closed set
  of ints (at least 4 values seen, at most 2 distinct, e.g. a 0/1 grid), float decimals (values
  rounded to the most decimals seen), string alphabet (the characters seen; a whole class --
  lowercase, uppercase, digits -- once at least 6 / 6 / 4 of its members were seen), non-empty
  strings / containers, no leading/trailing/double spaces, balanced brackets, the digit-run
  pattern of strings (``"5 apples and 6 oranges"`` -> ``"# apples and # oranges"``) when all
  examples share one, length bounds (max(2·L, L + 4), L the longest seen), sorted lists
  (ascending or descending), distinct elements, rectangular nested lists;
* across arguments: equal lengths of two sequence arguments, an int argument at most the length
  of a sequence argument, and the order (<=) of two int arguments or two int fields of a record.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence
from typing import Any

import attrs

__all__ = [
    "MAX_INT",
    "MAX_LIST",
    "MAX_STR",
    "Domain",
    "Path",
    "PathDomain",
    "char_class",
    "checks",
    "distinct",
    "in_domain",
    "infer_domain",
    "plain",
    "sorted_directions",
]

MAX_LIST = 30
MAX_STR = 80
MAX_INT = 10**6

Path = tuple  # (arg index, "elem" | "key" | "val" | field index, ...)

_SCALARS = (bool, int, float, str, type(None))
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}


# ------------------------------------------------------------------------------------- values


def plain(v: Any, depth: int = 0) -> bool:
    """Plain data probes may be made of (what the sandbox accepts), bounded in depth."""
    if depth > 6:
        return False
    if type(v) in _SCALARS:
        return not (type(v) is float and not math.isfinite(v))
    if type(v) in (list, tuple, set, frozenset):
        return all(plain(x, depth + 1) for x in v)
    if type(v) is dict:
        return all(plain(k, depth + 1) and plain(x, depth + 1) for k, x in v.items())
    return False


def _is_record(values: Sequence[Any]) -> bool:
    """Tuples at one path are records (fixed fields) when every one has the same length."""
    lengths = {len(v) for v in values if type(v) is tuple}
    return len(lengths) == 1 and next(iter(lengths)) <= 6


def _walk(v: Any, path: Path, out: dict[Path, list[Any]], records: set[Path]) -> None:
    out.setdefault(path, []).append(v)
    t = type(v)
    if t is tuple and path in records:
        for j, x in enumerate(v):
            _walk(x, path + (j,), out, records)
    elif t in (list, tuple, set, frozenset):
        for x in v:
            _walk(x, path + ("elem",), out, records)
    elif t is dict:
        for k, x in v.items():
            _walk(k, path + ("key",), out, records)
            _walk(x, path + ("val",), out, records)


def _collect(examples: Sequence[tuple]) -> tuple[dict[Path, list[Any]], set[Path]]:
    """Every value seen at every path; which paths hold record tuples (decided top-down)."""
    records: set[Path] = set()
    for _ in range(4):  # record-ness of nested paths depends on outer paths: iterate to a fixpoint
        seen: dict[Path, list[Any]] = {}
        for args in examples:
            for i, a in enumerate(args):
                _walk(a, (i,), seen, records)
        new = {p for p, vs in seen.items() if all(type(v) is tuple for v in vs) and _is_record(vs)}
        if new == records:
            return seen, records
        records = new
    return seen, records


# ------------------------------------------------------------------------------------- domain


def _decimals(x: float) -> int:
    text = repr(x)
    if "e" in text or "E" in text:
        return 6
    return len(text.split(".")[1]) if "." in text else 0


def char_class(c: str) -> str:
    if c.isdigit():
        return "digit"
    if c in string.ascii_lowercase:
        return "lower"
    if c in string.ascii_uppercase:
        return "upper"
    return "other"


_CLASS_CHARS = {"digit": string.digits, "lower": string.ascii_lowercase, "upper": string.ascii_uppercase}
_CLASS_MIN = {"digit": 4, "lower": 6, "upper": 6}


def _balanced(s: str, pairs: dict[str, str]) -> bool:
    stack = []
    closers = {v: k for k, v in pairs.items()}
    for c in s:
        if c in pairs:
            stack.append(c)
        elif c in closers:
            if not stack or stack[-1] != closers[c]:
                return False
            stack.pop()
    return not stack


def _digit_pattern(s: str) -> str:
    return re.sub(r"\d+", "#", s)


def sorted_directions(v: Sequence[Any]) -> set[str]:
    """The directions ("asc", "desc") in which `v` is sorted; none for values that do not compare."""
    try:
        dirs = set()
        if all(v[i] <= v[i + 1] for i in range(len(v) - 1)):
            dirs.add("asc")
        if all(v[i] >= v[i + 1] for i in range(len(v) - 1)):
            dirs.add("desc")
        return dirs
    except TypeError:
        return set()


def distinct(v: Sequence[Any]) -> bool:
    try:
        return len(set(v)) == len(v)
    except TypeError:
        return len({repr(x) for x in v}) == len(v)


@attrs.frozen
class PathDomain:
    """What the examples show about the values at one path."""

    types: frozenset[type]
    nonneg: bool = False
    positive: bool = False
    bound: float = math.inf  # magnitude bound for numbers
    closed_ints: frozenset[int] | None = None
    at_least_two: bool = False  # ints, every one seen >= 2: 1 (and below) is where "n >= 2" tasks are undefined
    decimals: int = 6
    alphabet: frozenset[str] | None = None
    nonempty: bool = False
    strip: bool = False  # no leading/trailing whitespace
    single_spaces: bool = False
    balanced: tuple[tuple[str, str], ...] = ()
    pattern: str | None = None
    max_len: int = MAX_LIST
    min_len: int = 0  # the shortest seen (the drawn class keeps lists and tuples at >= 2 when it is: .draw)
    sorted: str | None = None  # "asc" | "desc"
    distinct: bool = False
    rectangular: bool = False
    square: bool = False  # every nested list seen is n x n (the drawn class keeps it: .draw)
    ingredients: tuple[Any, ...] = ()  # scalar values seen here (evalplus's "ingredients")


def _path_domain(values: list[Any]) -> PathDomain:
    types = frozenset(type(v) for v in values)
    kw: dict[str, Any] = {"types": types}
    nums = [v for v in values if type(v) in (int, float)]
    if nums:
        kw["nonneg"] = all(v >= 0 for v in nums)
        kw["positive"] = all(v > 0 for v in nums)
        m = max(abs(v) for v in nums)
        kw["bound"] = min(max(2 * m, m + 4), MAX_INT)
        ints = [v for v in nums if type(v) is int]
        if len(ints) >= 4 and len(set(ints)) <= 2 and len(ints) == len(nums):
            kw["closed_ints"] = frozenset(ints)
        if ints and len(ints) == len(nums) and min(ints) >= 2:
            kw["at_least_two"] = True
        floats = [v for v in nums if type(v) is float]
        if floats:
            kw["decimals"] = max(1, min(6, max(_decimals(f) for f in floats)))
    strs = [v for v in values if type(v) is str]
    if strs:
        chars = set("".join(strs))
        alphabet = set(chars)
        for cls, members in _CLASS_CHARS.items():
            seen = {c for c in chars if char_class(c) == cls}
            if len(seen) >= _CLASS_MIN[cls]:
                alphabet |= set(members)
        kw["alphabet"] = frozenset(alphabet)
        kw["strip"] = all(s == s.strip() for s in strs)
        kw["single_spaces"] = all("  " not in s for s in strs)
        kw["balanced"] = tuple(
            (o, c)
            for o, c in _BRACKETS.items()
            if any(o in s or c in s for s in strs) and all(_balanced(s, {o: c}) for s in strs)
        )
        patterns = {_digit_pattern(s) for s in strs}
        if len(patterns) == 1 and any(ch.isdigit() for ch in "".join(strs)):
            kw["pattern"] = patterns.pop()
        kw["ingredients"] = tuple(dict.fromkeys(strs))[:20]
    if nums:
        kw["ingredients"] = tuple(dict.fromkeys(kw.get("ingredients", ()) + tuple(nums)))[:20]
    sized = [v for v in values if type(v) in (str, list, tuple, set, frozenset, dict)]
    if sized:
        kw["nonempty"] = all(len(v) > 0 for v in sized)
        longest = max(len(v) for v in sized)
        kw["min_len"] = min(len(v) for v in sized)
        cap = MAX_STR if all(type(v) is str for v in sized) else MAX_LIST
        kw["max_len"] = min(max(2 * longest, longest + 4), cap)
    seqs = [v for v in values if type(v) in (list, tuple)]
    if seqs and any(len(v) >= 3 for v in seqs):
        dirs = {"asc", "desc"}
        for v in seqs:
            dirs &= sorted_directions(v)
        if dirs:
            kw["sorted"] = "asc" if "asc" in dirs else "desc"
        kw["distinct"] = all(distinct(v) for v in seqs)
    nested = [v for v in seqs if v and all(type(x) in (list, tuple) for x in v)]
    if nested and any(len(v) >= 2 for v in nested):
        kw["rectangular"] = all(len({len(x) for x in v}) == 1 for v in nested)
        kw["square"] = kw["rectangular"] and all(len(v) == len(v[0]) for v in nested)
    return PathDomain(**kw)


@attrs.frozen
class Domain:
    """The inferred domain of a task's inputs: per-path facts and cross-argument relations."""

    arity: int
    paths: dict[Path, PathDomain]
    records: frozenset[Path]
    equal_len: tuple[tuple[int, int], ...] = ()
    int_le_len: tuple[tuple[int, int], ...] = ()  # (int arg i, sequence arg j): args[i] <= len(args[j])
    int_order: tuple[tuple[Path, Path], ...] = ()  # value at path a <= value at path b

    def describe(self) -> list[str]:
        """The inferred preconditions, as short human-readable lines (for `vx explain`)."""
        out = []
        for path, d in sorted(self.paths.items(), key=lambda kv: [str(x) for x in kv[0]]):
            where = _path_text(path)
            facts = []
            if d.at_least_two:
                facts.append(">= 2")
            elif d.positive:
                facts.append("> 0")
            elif d.nonneg:
                facts.append(">= 0")
            if d.closed_ints is not None:
                facts.append(f"in {sorted(d.closed_ints)}")
            if d.sorted:
                facts.append(f"sorted {d.sorted}")
            if d.distinct:
                facts.append("distinct elements")
            if d.nonempty:
                facts.append("non-empty")
            if d.pattern:
                facts.append(f"pattern {d.pattern!r}")
            if d.balanced:
                facts.append("balanced " + "".join(o + c for o, c in d.balanced))
            if d.rectangular:
                facts.append("rectangular")
            if facts:
                out.append(f"{where}: {', '.join(facts)}")
        out += [f"len(arg {i + 1}) == len(arg {j + 1})" for i, j in self.equal_len]
        out += [f"arg {i + 1} <= len(arg {j + 1})" for i, j in self.int_le_len]
        out += [f"{_path_text(a)} <= {_path_text(b)}" for a, b in self.int_order]
        return out


def _path_text(path: Path) -> str:
    text = f"arg {path[0] + 1}"
    for step in path[1:]:
        text += (
            {"elem": " elements", "key": " keys", "val": " values"}.get(step, f" field {step}")
            if isinstance(step, str)
            else f" field {step + 1}"
        )
    return text


def infer_domain(examples: Sequence[tuple]) -> Domain:
    """The domain of a task's inputs, inferred from its visible example argument tuples."""
    arity = len(examples[0])
    seen, records = _collect(examples)
    paths = {p: _path_domain(vs) for p, vs in seen.items()}
    equal_len, le_len = [], []
    for i in range(arity):
        for j in range(arity):
            vi = [a[i] for a in examples]
            vj = [a[j] for a in examples]
            sized_i = all(type(v) in (str, list, tuple) for v in vi) and (i,) not in records
            sized_j = all(type(v) in (str, list, tuple) for v in vj) and (j,) not in records
            if i < j and sized_i and sized_j and all(len(x) == len(y) for x, y in zip(vi, vj)):
                equal_len.append((i, j))
            if i != j and all(type(v) is int for v in vi) and sized_j and all(x <= len(y) for x, y in zip(vi, vj)):
                le_len.append((i, j))
    # order between int leaves of the top level (arguments) and of record fields
    int_paths = [
        p
        for p, vs in seen.items()
        if all(type(v) is int for v in vs) and (len(p) == 1 or (p[:-1] in records and isinstance(p[-1], int)))
    ]
    order = []
    for a in int_paths:
        for b in int_paths:
            if a >= b or len(a) != len(b) or a[:-1] != b[:-1]:
                continue
            pairs = _aligned(examples, a, b)
            if pairs and all(x <= y for x, y in pairs) and any(x < y for x, y in pairs):
                order.append((a, b))
            elif pairs and all(x >= y for x, y in pairs) and any(x > y for x, y in pairs):
                order.append((b, a))
    return Domain(arity, paths, frozenset(records), tuple(equal_len), tuple(le_len), tuple(order))


def _get(args: tuple, path: Path) -> list[Any]:
    """The values at `path` in one argument tuple (paths through sequences give many)."""
    vals = [args[path[0]]] if path[0] < len(args) else []
    for step in path[1:]:
        nxt = []
        for v in vals:
            if isinstance(step, int) and type(v) is tuple and step < len(v):
                nxt.append(v[step])
            elif step == "elem" and type(v) in (list, tuple, set, frozenset):
                nxt.extend(v)
            elif step == "key" and type(v) is dict:
                nxt.extend(v.keys())
            elif step == "val" and type(v) is dict:
                nxt.extend(v.values())
        vals = nxt
    return vals


def _aligned(examples: Sequence[tuple], a: Path, b: Path) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    for args in examples:
        va, vb = _get(args, a), _get(args, b)
        if len(va) != len(vb):
            return []
        out.extend(zip(va, vb))
    return out


# ------------------------------------------------------------------------------------- checking


def _value_ok(v: Any, path: Path, dom: Domain, records: frozenset[Path], relax: frozenset[str] = frozenset()) -> bool:
    """Whether value `v` at `path` satisfies every predicate the domain holds there (but those in `relax`)."""
    return checks(dom, records, relax).at(path)(v)


#: Compiled checks kept per (domain, records, relax): the generator asks `_value_ok` up to a million
#: times per task (each ``large`` try grows a container and checks every element), and the compiled
#: form reads no PathDomain field and builds no path tuple per value.
_CHECKS: dict[tuple[int, int, frozenset[str]], _Checks] = {}
_CHECKS_KEPT = 64


def checks(dom: Domain, records: frozenset[Path], relax: frozenset[str]) -> _Checks:
    key = (id(dom), id(records), relax)
    hit = _CHECKS.get(key)
    if hit is not None and hit.dom is dom and hit.records is records:
        return hit
    if len(_CHECKS) >= _CHECKS_KEPT:
        _CHECKS.pop(next(iter(_CHECKS)))
    made = _CHECKS[key] = _Checks(dom, records, relax)
    return made


def _never(v: Any) -> bool:
    return False  # a path the examples never showed (e.g. elements of a list always empty)


class _Checks:
    """`_value_ok` compiled per path: one closure a path, made on first use (the domain and the kept
    objects make a key of identities: the holder keeps them alive, so no id is reused under it)."""

    def __init__(self, dom: Domain, records: frozenset[Path], relax: frozenset[str]) -> None:
        self.dom, self.records, self.relax = dom, records, relax
        self._made: dict[Path, Any] = {}

    def at(self, path: Path) -> Any:
        fn = self._made.get(path)
        if fn is None:
            fn = self._made[path] = self._compile(path)
        return fn

    def _compile(self, path: Path) -> Any:  # noqa: C901 - one branch per predicate, as in the domain
        d = self.dom.paths.get(path)
        if d is None:
            return _never
        relax, at = self.relax, self.at
        types = d.types
        bound = d.bound if "bound" not in relax else None
        sign = "sign" not in relax
        positive, nonneg, at_least_two = d.positive and sign, d.nonneg and sign, d.at_least_two and sign
        closed = d.closed_ints if "closed" not in relax else None
        alphabet, strip, single_spaces, balanced, pattern = d.alphabet, d.strip, d.single_spaces, d.balanced, d.pattern
        empty_ok = "empty" in relax
        max_len = d.max_len if "bound" not in relax else None
        nonempty = d.nonempty and not empty_ok
        is_record = path in self.records
        want_sorted, want_distinct, rectangular = d.sorted, d.distinct, d.rectangular
        elem, key, val = path + ("elem",), path + ("key",), path + ("val",)
        dom_paths = self.dom.paths

        def check(v: Any) -> bool:
            t = type(v)
            if t not in types:
                return False
            if t is int or t is float:
                if bound is not None and abs(v) > bound:
                    return False
                if (positive and v <= 0) or (nonneg and v < 0) or (at_least_two and v < 2):
                    return False
                if closed is not None and v not in closed:
                    return False
                return True
            if t is str:
                if alphabet is not None and not set(v) <= alphabet:
                    return False
                if strip and v != v.strip():
                    return False
                if single_spaces and "  " in v:
                    return False
                if balanced and not all(_balanced(v, {o: c}) for o, c in balanced):
                    return False
                if pattern is not None and _digit_pattern(v) != pattern and not (v == "" and empty_ok):
                    return False
            if t is str or t is list or t is tuple or t is set or t is frozenset or t is dict:
                n = len(v)
                if max_len is not None and n > max_len:
                    return False
                if nonempty and n == 0:
                    return False
            if (t is list or t is tuple) and not is_record:
                if want_sorted and want_sorted not in sorted_directions(v):
                    return False
                if want_distinct and not distinct(v):
                    return False
                if rectangular and v and len({len(x) if type(x) in (list, tuple) else -1 for x in v}) != 1:
                    return False
                ok = at(elem)
                return all(ok(x) for x in v)
            if t is tuple:  # a record
                return all(at(path + (j,))(x) for j, x in enumerate(v)) and all(
                    path + (j,) in dom_paths for j in range(len(v))
                )
            if t is set or t is frozenset:
                ok = at(elem)
                return all(ok(x) for x in v)
            if t is dict:
                ok_k, ok_v = at(key), at(val)
                return all(ok_k(k) and ok_v(x) for k, x in v.items())
            return True

        return check


def in_domain(args: tuple, dom: Domain, relax: frozenset[str] = frozenset()) -> bool:
    """Whether a candidate argument tuple satisfies every inferred predicate (but those in `relax`:
    "bound" (magnitudes and lengths), "sign", "empty", "closed", "relations")."""
    if len(args) != dom.arity or not plain(args):
        return False
    for i, a in enumerate(args):
        if not _value_ok(a, (i,), dom, dom.records, relax):
            return False
    if "relations" in relax:
        return True
    for i, j in dom.equal_len:
        if len(args[i]) != len(args[j]):
            return False
    for i, j in dom.int_le_len:
        if args[i] > len(args[j]):
            return False
    for a, b in dom.int_order:
        va, vb = _get(args, a), _get(args, b)
        if len(va) != len(vb) or not all(x <= y for x, y in zip(va, vb)):
            return False
    return True


# ------------------------------------------------------------------------------------- mutation
