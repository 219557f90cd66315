"""Generated probe inputs: seeded, type-aware mutations of a task's visible example calls.

These are the inputs the peer ops (:mod:`vx.families.code.ops.peers`) run every attempt on, and the
dev teacher compares a candidate with its golden reference on (``data/teacher.py``). Four classes:
``mutant`` (every inferred predicate holds), ``boundary`` (two values of the call made equal or
adjacent: a threshold meets an element, two elements tie), ``large`` (an argument enlarged: ints
x10..x40 up to 10 000, sequences of 50-200 elements) and ``edge`` (an argument made empty, zero, one
element or negated, which the examples may not show). See :data:`CLASS_SIZES`.

In the spirit of evalplus's type-aware mutation (``evalplus/gen/type_mut.py``: ints ±1, floats
shifted/scaled, strings edited, lists with elements removed/added/repeated/changed, "ingredients"
= values seen in the seeds), but without evalplus's contract filter (which runs the reference
solution's input asserts): here the *domain* of the task is inferred from the visible examples
alone, as a list of predicates that hold on every example, and a mutated input is kept only when
it satisfies every one of them. Nothing reads the hidden tests or the reference solution.

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

Everything is deterministic: ``random.Random`` seeded with the class name and a seed string (the
task id). Measured on the development half of the CodeT HumanEval data (docs/peers.md): differential
execution against the canonical solution on mutant + boundary + large probes catches 38% of the
failures that pass their visible example and differs from 1% of the correct programs; edge probes
catch a few more but differ from 10% of the correct programs (their behaviour is often undefined).
"""

from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Sequence
from typing import Any

import attrs

N_PROBES = 30
MAX_TRIES = 1500
#: The last class (``large``) stops after this many tries in a row that made no new probe: on some
#: tasks no enlarged input satisfies the domain (a square grid grown to 50 rows), and its 1,500 tries
#: each cost a grown container -- seconds per task (HumanEval/115, /129, /81, before `_grow` kept the
#: container's own predicates: now only /129's square grid still stalls, cheaply). The longest run of
#: failed ``large`` tries before a success over the 164 HumanEval tasks is 298 (docs/scale.md), and
#: the tries of the last class shape nothing after them (an earlier class's failed candidates do: they
#: enter ``seen``), so this changes no probe there; of the 223 MBPP+ tasks of `vx data build mbpp
#: --subset all` it changes one (Mbpp/120 loses its second ``large`` probe, found after 1,444 failed
#: tries, at the cost of 33 s on a loaded machine).
STALL_TRIES = 500
#: `_grow` stops after this many tries in a row that added no element: a domain with few distinct
#: elements (distinct grid rows of four 0/1 cells: 16 of them) never reaches 50, and its 2,400 tries
#: a grown container were most of HumanEval/115's generation time.
GROW_STALL = 200
#: Element mutations `_grow` may spend on one task's ``large`` class, all its tries together; once they
#: are spent the class ends. Tasks whose elements admit few distinct values within the domain grew for
#: seconds: distinct records with ordered small fields (Mbpp/409, /473, /120: 89,000-142,000 mutations,
#: 0.7-1.2 s of CPU each). The latest a ``large`` probe was found over the 164 HumanEval tasks is after
#: 45,142 (HumanEval/115), so none changes there; of MBPP+'s 223 (`vx data build mbpp --subset all`)
#: Mbpp/409 loses its second and third (found after 58,363 and 61,732) and no other task changes
#: (docs/scale.md, eighth round).
GROW_BUDGET = 50_000
MAX_LIST = 30
MAX_STR = 80
MAX_INT = 10**6

Path = tuple  # (arg index, "elem" | "key" | "val" | field index, ...)

_SCALARS = (bool, int, float, str, type(None))
_BRACKETS = {"(": ")", "[": "]", "{": "}", "<": ">"}


# ------------------------------------------------------------------------------------- values


def _plain(v: Any, depth: int = 0) -> bool:
    """Plain data probes may be made of (what the sandbox accepts), bounded in depth."""
    if depth > 6:
        return False
    if type(v) in _SCALARS:
        return not (type(v) is float and not math.isfinite(v))
    if type(v) in (list, tuple, set, frozenset):
        return all(_plain(x, depth + 1) for x in v)
    if type(v) is dict:
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
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


def _char_class(c: str) -> str:
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


def _distinct(v: Sequence[Any]) -> bool:
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
            seen = {c for c in chars if _char_class(c) == cls}
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
        kw["distinct"] = all(_distinct(v) for v in seqs)
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
    out = []
    for args in examples:
        va, vb = _get(args, a), _get(args, b)
        if len(va) != len(vb):
            return []
        out.extend(zip(va, vb))
    return out


# ------------------------------------------------------------------------------------- checking


def _value_ok(v: Any, path: Path, dom: Domain, records: frozenset[Path], relax: frozenset[str] = frozenset()) -> bool:
    """Whether value `v` at `path` satisfies every predicate the domain holds there (but those in `relax`)."""
    return _checks(dom, records, relax).at(path)(v)


#: Compiled checks kept per (domain, records, relax): the generator asks `_value_ok` up to a million
#: times per task (each ``large`` try grows a container and checks every element), and the compiled
#: form reads no PathDomain field and builds no path tuple per value.
_CHECKS: dict[tuple[int, int, frozenset[str]], _Checks] = {}
_CHECKS_KEPT = 64


def _checks(dom: Domain, records: frozenset[Path], relax: frozenset[str]) -> _Checks:
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
        want_sorted, distinct, rectangular = d.sorted, d.distinct, d.rectangular
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
                if distinct and not _distinct(v):
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
    if len(args) != dom.arity or not _plain(args):
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


class _Mutator:
    def __init__(self, dom: Domain, rng: random.Random) -> None:
        self.dom = dom
        self.rng = rng
        self.grown = 0  # element mutations `_grow` spent with this mutator (GROW_BUDGET)

    def ingredient(self, path: Path, t: type) -> Any:
        d = self.dom.paths.get(path)
        pool = [x for x in (d.ingredients if d else ()) if type(x) is t]
        return self.rng.choice(pool) if pool else None

    def mutate(self, v: Any, path: Path) -> Any:
        t = type(v)
        r = self.rng
        if t is bool:
            return not v
        if t is int:
            if r.random() < 0.15:
                got = self.ingredient(path, int)
                if got is not None and got != v:
                    return got
            op = r.choice(("+1", "-1", "+k", "-k", "*2", "//2"))
            k = r.randint(2, 5)
            return {"+1": v + 1, "-1": v - 1, "+k": v + k, "-k": v - k, "*2": v * 2, "//2": v // 2}[op]
        if t is float:
            d = self.dom.paths.get(path)
            dec = d.decimals if d else 1
            if r.random() < 0.15:
                got = self.ingredient(path, float)
                if got is not None and got != v:
                    return got
            op = r.choice(("+.5", "-.5", "+1", "-1", "*2", "/2", "+u"))
            new = {
                "+.5": v + 0.5,
                "-.5": v - 0.5,
                "+1": v + 1,
                "-1": v - 1,
                "*2": v * 2,
                "/2": v / 2,
                "+u": v + r.uniform(-1, 1),
            }[op]
            return round(new, dec)
        if t is str:
            return self.mutate_str(v, path)
        if t in (list, tuple) and path in self.dom.records:
            if not v:
                return v
            j = r.randrange(len(v))
            return v[:j] + (self.mutate(v[j], path + (j,)),) + v[j + 1 :]
        if t in (list, tuple, set, frozenset):
            return self.mutate_seq(v, path)
        if t is dict:
            return self.mutate_dict(v, path)
        return v

    def _char(self, path: Path, like: str | None = None) -> str | None:
        d = self.dom.paths.get(path)
        alphabet = sorted(d.alphabet) if d and d.alphabet else []
        if like is not None:
            same = [c for c in alphabet if _char_class(c) == _char_class(like) and c != like]
            if same and self.rng.random() < 0.8:
                return self.rng.choice(same)
        return self.rng.choice(alphabet) if alphabet else None

    def mutate_str(self, s: str, path: Path) -> str:
        r = self.rng
        words = s.split(" ")
        ops = ["replace", "delete", "insert", "swap", "repeat", "reverse", "ingredient", "digits"]
        if len(words) >= 2:
            ops += ["word_drop", "word_dup", "word_swap", "word_shuffle"] * 2
        op = r.choice(ops)
        if op == "ingredient":
            got = self.ingredient(path, str)
            return got if got is not None else s
        if op == "reverse":
            return s[::-1]
        if op == "digits":
            runs = list(re.finditer(r"\d+", s))
            if not runs:
                op = "replace"
            else:
                m = r.choice(runs)
                n = int(m.group())
                n = max(0, n + r.choice((-1, 1, 2, -2, n)))
                return s[: m.start()] + str(n) + s[m.end() :]
        if op.startswith("word_"):
            w = list(words)
            i = r.randrange(len(w))
            if op == "word_drop":
                del w[i]
            elif op == "word_dup":
                w.insert(i, w[i])
            elif op == "word_swap":
                j = r.randrange(len(w))
                w[i], w[j] = w[j], w[i]
            else:
                r.shuffle(w)
            return " ".join(w)
        if not s:
            c = self._char(path)
            return c if c is not None else s
        i = r.randrange(len(s))
        if op == "replace":
            c = self._char(path, s[i])
            return s if c is None else s[:i] + c + s[i + 1 :]
        if op == "delete":
            return s[:i] + s[i + 1 :]
        if op == "insert":
            c = self._char(path, s[i])
            return s if c is None else s[:i] + c + s[i:]
        if op == "swap" and len(s) >= 2:
            i = min(i, len(s) - 2)
            return s[:i] + s[i + 1] + s[i] + s[i + 2 :]
        if op == "repeat":
            return s[:i] + s[i] + s[i:]
        return s

    def mutate_seq(self, v: Any, path: Path) -> Any:
        r = self.rng
        t = type(v)
        items = list(v)
        elem = path + ("elem",)
        ops = ["drop", "add", "dup", "change", "change", "shuffle", "reverse"]
        op = r.choice(ops) if items else "add"
        if op == "add":
            if items:
                base = r.choice(items)
                new = self.mutate(base, elem)
            else:
                d = self.dom.paths.get(elem)
                pool = list(d.ingredients) if d and d.ingredients else []
                if not pool:
                    return v
                new = r.choice(pool)
            items.insert(r.randint(0, len(items)), new)
        elif op == "drop":
            del items[r.randrange(len(items))]
        elif op == "dup":
            items.insert(r.randint(0, len(items)), r.choice(items))
        elif op == "change":
            i = r.randrange(len(items))
            items[i] = self.mutate(items[i], elem)
        elif op == "shuffle":
            r.shuffle(items)
        else:
            items.reverse()
        d = self.dom.paths.get(path)
        if d is not None and d.sorted and t in (list, tuple):
            try:
                items.sort(reverse=d.sorted == "desc")  # repair: the examples are all sorted
            except TypeError:
                pass
        if t in (set, frozenset):
            try:
                return t(items)
            except TypeError:
                return v
        return t(items) if t is tuple else items

    def mutate_dict(self, v: dict, path: Path) -> dict:
        r = self.rng
        out = dict(v)
        op = r.choice(("drop", "add", "change", "change")) if out else "add"
        if op == "add" and out:
            k = self.mutate(r.choice(list(out)), path + ("key",))
            try:
                out[k] = self.mutate(r.choice(list(out.values())), path + ("val",))
            except TypeError:
                pass
        elif op == "drop" and out:
            del out[r.choice(list(out))]
        elif op == "change" and out:
            k = r.choice(list(out))
            out[k] = self.mutate(out[k], path + ("val",))
        return out

    def extend_pair(self, args: list, i: int, j: int) -> None:
        """Grow or shrink two equal-length arguments together (keeps the equal-length relation)."""
        a, b = args[i], args[j]
        r = self.rng
        if len(a) != len(b):
            return
        if r.random() < 0.5 and len(a) > 1:
            k = r.randrange(len(a))
            args[i], args[j] = a[:k] + a[k + 1 :], b[:k] + b[k + 1 :]
            return
        k = r.randint(0, len(a))
        for idx in (i, j):
            v = args[idx]
            if type(v) is str:
                c = self._char((idx,), v[k - 1] if k else (v[0] if v else None))
                if c is None:
                    return
                args[idx] = v[:k] + c + v[k:]
            else:
                if not v:
                    return
                new = self.mutate(v[min(k, len(v) - 1)], (idx, "elem"))
                args[idx] = type(v)(list(v[:k]) + [new] + list(v[k:]))


def _key(args: tuple) -> str:
    return repr(args)


#: Probe classes of the generator, in run order, and how many of each (at most).
CLASS_SIZES = {"mutant": 24, "boundary": 8, "edge": 6, "large": 4}


def _leaves(v: Any, path: Path, records: frozenset[Path], out: list) -> None:
    """(path-in-value, value) of the scalar leaves (no dict keys), for collisions."""
    t = type(v)
    if t in (int, float, str) and t is not bool:
        out.append((path, v))
    elif t in (list, tuple):
        for j, x in enumerate(v):
            _leaves(x, path + (j,), records, out)
    elif t is dict:
        for k, x in v.items():
            _leaves(x, path + (("key", k),), records, out)


def _set_leaf(v: Any, loc: tuple, new: Any) -> Any:
    if not loc:
        return new
    step, rest = loc[0], loc[1:]
    if isinstance(step, tuple):  # dict value
        out = dict(v)
        out[step[1]] = _set_leaf(v[step[1]], rest, new)
        return out
    items = list(v)
    items[step] = _set_leaf(items[step], rest, new)
    return type(v)(items) if type(v) is tuple else items


def _boundary(args: tuple, dom: Domain, rng: random.Random) -> tuple | None:
    """Two values of the same type made equal (or adjacent): a threshold meets an element, two
    elements tie, an index meets a length."""
    leaves: list = []
    for i, a in enumerate(args):
        _leaves(a, (i,), dom.records, leaves)
    if len(leaves) < 2:
        return None
    (pa, va), (pb, vb) = rng.sample(leaves, 2)
    if type(va) is not type(vb) or va == vb:
        return None
    new = vb
    if type(vb) in (int, float) and rng.random() < 0.4:
        new = vb + rng.choice((-1, 1))
    out = list(args)
    out[pa[0]] = _set_leaf(out[pa[0]], pa[1:], new)
    return tuple(out)


def _extremes(examples: Sequence[tuple]) -> list[tuple]:
    """Each example with a numeric argument set to the largest, then the smallest element of a
    sequence argument of the same type: a threshold equal to the maximum is where ``<`` and ``<=``
    part ways."""
    out = []
    for args in examples:
        for i, a in enumerate(args):
            if type(a) not in (int, float):
                continue
            for j, seq in enumerate(args):
                if j == i or type(seq) not in (list, tuple) or not seq or not all(type(x) is type(a) for x in seq):
                    continue
                for v in (max(seq), min(seq)):
                    if v != a:
                        out.append(args[:i] + (v,) + args[i + 1 :])
    return out


def _edge(args: tuple, rng: random.Random) -> tuple | None:
    """One argument made empty / zero / one element / negated (the inputs the examples may avoid)."""
    i = rng.randrange(len(args))
    v = args[i]
    t = type(v)
    choice = rng.random()
    if t in (list, tuple, str, dict, set) and v:
        new = t() if choice < 0.6 else (v[:1] if t in (list, tuple, str) else None)
    elif t is int and t is not bool:
        new = 0 if v != 0 else 1
        if choice > 0.6 and v > 0:
            new = -v
    elif t is float:
        new = 0.0 if v != 0 else 1.0
        if choice > 0.6 and v > 0:
            new = -v
    else:
        return None
    if new is None:
        return None
    return args[:i] + (new,) + args[i + 1 :]


def _large(args: tuple, dom: Domain, rng: random.Random, mut: _Mutator) -> tuple | None:
    """One argument enlarged: an int ×10..×40 (at most 10 000), a list or string grown to 50-120 elements."""
    # containers first: a long input exposes slow or recursive code more often than a big number
    weights = [3 if type(a) in (list, tuple, str) and (j,) not in dom.records else 1 for j, a in enumerate(args)]
    i = rng.choices(range(len(args)), weights=weights)[0]
    v = args[i]
    t = type(v)
    if t is int and t is not bool and v != 0:
        new = max(-10_000, min(10_000, v * rng.choice((10, 20, 40))))
    elif t is float and v != 0:
        new = v * rng.choice((10.0, 100.0))
    elif t in (list, tuple) and v and (i,) not in dom.records:
        target = rng.randint(50, 120)
        partners = [b if a == i else a for a, b in dom.equal_len if i in (a, b)]
        if partners:  # equal-length arguments grow together (e.g. two score lists compared pairwise)
            out = list(args)
            for j in [i] + partners:
                grown = _grow(args[j], j, target, dom, rng, mut)
                if grown is None or len(grown) != target:
                    return None
                out[j] = grown
            return tuple(out)
        new = _grow(v, i, target, dom, rng, mut)
        if new is None:
            return None
    elif t is str and v:
        target = rng.randint(50, 200)
        new = v
        while len(new) < target:
            new = new + (" " if " " in v else "") + mut.mutate_str(v, (i,))
        new = new[: max(target, len(v))]
    else:
        return None
    return args[:i] + (new,) + args[i + 1 :]


_RELAX = {
    "mutant": frozenset(),
    "boundary": frozenset({"relations"}),
    "edge": frozenset({"empty", "sign", "closed", "relations"}),
    "large": frozenset({"bound"}),
}


def _grow(v: Any, i: int, target: int, dom: Domain, rng: random.Random, mut: _Mutator) -> Any:
    """Sequence argument `i` grown to `target` elements within its element domain (None if it cannot be).

    The container's own predicates are kept as it grows, so that the grown value can pass
    :func:`in_domain`: distinct elements stay distinct as :func:`_distinct` counts them (``4`` and
    ``4.0`` are one value), the rows of a rectangular grid keep its width, and a square grid is not
    grown (rows alone cannot keep it square; the drawn class makes square grids of other sizes). Without that, a grown grid or a list of distinct
    numbers failed the domain on nearly every try, and the ``large`` class spent its 500 stalled tries
    (about a second of CPU a task: HumanEval/115, /129, /81) to make no probe."""
    t = type(v)
    if t not in (list, tuple) or not v:
        return None
    d = dom.paths.get((i,))
    if d is not None and d.square and (i, "elem") not in dom.records:
        return None  # (a few records of as many fields are not a square grid)
    items = list(v)
    width = len(items[0]) if d is not None and d.rectangular and type(items[0]) in (list, tuple) else None
    distinct = d is not None and d.distinct
    ok = _checks(dom, dom.records, frozenset({"bound"})).at((i, "elem"))
    seen_items = {_distinct_key(x) for x in items}
    missed = 0
    for _ in range(target * 20):
        if len(items) >= target or missed > GROW_STALL or mut.grown >= GROW_BUDGET:
            break
        missed += 1
        mut.grown += 1
        new_item = mut.mutate(rng.choice(items), (i, "elem"))
        if not ok(new_item):
            continue
        if width is not None and len(new_item) != width:
            continue
        key = _distinct_key(new_item)
        if distinct and key in seen_items:
            continue
        seen_items.add(key)
        items.append(new_item)
        missed = 0
    if len(items) < target and mut.grown >= GROW_BUDGET:
        return None  # cut short by the task's budget, not by the domain: no probe from it
    if d is not None and d.sorted:
        try:
            items.sort(reverse=d.sorted == "desc")
        except TypeError:
            pass
    return t(items) if t is tuple else items


def _distinct_key(x: Any) -> Any:
    """What :func:`_distinct` tells elements apart by: the value where it hashes, else its repr."""
    try:
        hash(x)
    except TypeError:
        return ("repr", repr(x))
    return x


def generate_probes(
    examples: Sequence[Sequence[Any]],
    *,
    seed: str = "",
    sizes: dict[str, int] | None = None,
    max_tries: int = MAX_TRIES,
) -> tuple[list[tuple[str, tuple]], Domain | None, str]:
    """(probes, domain, reason): ``(class, args)`` pairs mutated from the example argument tuples.

    ``mutant`` probes satisfy every inferred predicate; ``boundary`` ones make two values collide;
    ``edge`` ones are empty / zero / single / negated versions the examples may not show; ``large``
    ones are bigger. `reason` says why there are none ("" when there are some)."""
    sizes = dict(CLASS_SIZES if sizes is None else sizes)
    examples = [tuple(a) for a in examples]
    if not examples:
        return [], None, "the task shows no visible example call"
    if len({len(a) for a in examples}) != 1:
        return [], None, "the visible examples call the function with different numbers of arguments"
    if not all(_plain(a) for a in examples):
        return [], None, "the visible examples' arguments are not plain data (opaque types)"
    if len(examples[0]) == 0:
        return [], None, "the visible examples call the function without arguments: nothing to mutate"
    dom = infer_domain(examples)
    seen = {_key(a) for a in examples}
    probes: list[tuple[str, tuple]] = []
    final = list(sizes)[-1] if sizes else None
    for klass, want in sizes.items():
        stall = STALL_TRIES if klass == final else max_tries
        rng = random.Random(f"vx-probes:{klass}:{seed}")
        mut = _Mutator(dom, rng)
        got = 0
        last = 0  # the try that made the last probe
        queue = _extremes(examples) if klass == "boundary" else []
        for tries in range(1, max_tries + 1):
            if got >= want or tries - last > stall or mut.grown >= GROW_BUDGET:
                break
            if queue:
                cand = queue.pop(0)
                key = _key(cand)
                if key not in seen and in_domain(cand, dom, _RELAX[klass]):
                    seen.add(key)
                    probes.append((klass, cand))
                    got += 1
                    last = tries
                continue
            base = examples[tries % len(examples)] if tries <= len(examples) * 4 else rng.choice(examples)
            if klass == "mutant":
                work = list(base)
                for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
                    if dom.equal_len and rng.random() < 0.3:
                        i, j = rng.choice(dom.equal_len)
                        mut.extend_pair(work, i, j)
                        continue
                    i = rng.randrange(len(work))
                    work[i] = mut.mutate(work[i], (i,))
                cand = tuple(work)
            elif klass == "boundary":
                cand = _boundary(base, dom, rng)
            elif klass == "edge":
                cand = _edge(base, rng)
            else:
                cand = _large(base, dom, rng, mut)
            if cand is None:
                continue
            key = _key(cand)
            if key in seen:
                continue
            seen.add(key)
            if in_domain(cand, dom, _RELAX[klass]):
                probes.append((klass, cand))
                got += 1
                last = tries
    if not probes:
        return [], dom, "no mutation of the visible examples stays within the domain they imply"
    return probes, dom, ""
