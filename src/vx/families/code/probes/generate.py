"""Generated probe inputs: seeded, type-aware mutations of a task's visible example calls.

These are the inputs the peer ops (:mod:`vx.families.code.ops.peers`) run every attempt on, and the
dev teacher compares a candidate with its golden reference on (``data/teacher.py``). Four classes:
``mutant`` (every inferred predicate holds), ``boundary`` (two values of the call made equal or
adjacent: a threshold meets an element, two elements tie), ``large`` (an argument enlarged: ints
x10..x40 up to 10 000, lists of 50-120 elements, strings of 50-200 characters) and ``edge`` (an
argument made empty, zero, one element or negated, which the examples may not show). See
:data:`CLASS_SIZES`.

In the spirit of evalplus's type-aware mutation (``evalplus/gen/type_mut.py``: ints ±1, floats
shifted/scaled, strings edited, lists with elements removed/added/repeated/changed, "ingredients"
= values seen in the seeds), but without evalplus's contract filter (which runs the reference
solution's input asserts): here the *domain* of the task is inferred from the visible examples
alone (:mod:`.domain`), as a list of predicates that hold on every example, and a mutated input is
kept only when it satisfies every one of them. Nothing reads the hidden tests or the reference solution.

Everything is deterministic: ``random.Random`` seeded with the class name and a seed string (the
task id). The edge class is kept apart from the others because a correct program's behaviour there is often
undefined by the task (docs/results/2026-12-02-probes-and-peers.md has what each class catches and costs on
real attempts).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from vx.families.code.probes.domain import (
    Domain,
    Path,
    char_class,
    checks,
    in_domain,
    infer_domain,
    plain,
)

N_PROBES = 30
MAX_TRIES = 1500
#: The last class (``large``) stops after this many tries in a row that made no new probe: on some
#: tasks no enlarged input satisfies the domain (a square grid grown to 50 rows), and every try costs
#: a grown container. The bound sits well above the longest run of failed ``large`` tries before a
#: success on the HumanEval tasks, and the tries of the last class shape nothing after them (an earlier
#: class's failed candidates do: they enter ``seen``), so it ends only searches that find nothing.
STALL_TRIES = 500
#: `_grow` stops after this many tries in a row that added no element: a domain with few distinct
#: elements (distinct grid rows of four 0/1 cells: 16 of them) never reaches 50 elements.
GROW_STALL = 200
#: Element mutations `_grow` may spend on one task's ``large`` class, all its tries together; once they
#: are spent the class ends. Tasks whose elements admit few distinct values within the domain (distinct
#: records with ordered small fields) would otherwise grow for seconds of CPU; every ``large`` probe of
#: the bundled HumanEval tasks is found well within the budget (a test holds them equal to an unbounded
#: run).
GROW_BUDGET = 50_000


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
            same = [c for c in alphabet if char_class(c) == char_class(like) and c != like]
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
    :func:`in_domain`: distinct elements stay distinct as :func:`distinct` counts them (``4`` and
    ``4.0`` are one value), the rows of a rectangular grid keep its width, and a square grid is not
    grown (rows alone cannot keep it square; the drawn class makes square grids of other sizes).
    Without that, a grown grid or a list of distinct numbers would fail the domain on nearly every try,
    and the ``large`` class would spend its stalled tries to make no probe."""
    t = type(v)
    if t not in (list, tuple) or not v:
        return None
    d = dom.paths.get((i,))
    if d is not None and d.square and (i, "elem") not in dom.records:
        return None  # (a few records of as many fields are not a square grid)
    items = list(v)
    width = len(items[0]) if d is not None and d.rectangular and type(items[0]) in (list, tuple) else None
    distinct = d is not None and d.distinct
    ok = checks(dom, dom.records, frozenset({"bound"})).at((i, "elem"))
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
    """What :func:`distinct` tells elements apart by: the value where it hashes, else its repr."""
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
    calls: list[tuple[Any, ...]] = [tuple(a) for a in examples]
    if not calls:
        return [], None, "the task shows no visible example call"
    if len({len(a) for a in calls}) != 1:
        return [], None, "the visible examples call the function with different numbers of arguments"
    if not all(plain(a) for a in calls):
        return [], None, "the visible examples' arguments are not plain data (opaque types)"
    if len(calls[0]) == 0:
        return [], None, "the visible examples call the function without arguments: nothing to mutate"
    dom = infer_domain(calls)
    seen = {_key(a) for a in calls}
    probes: list[tuple[str, tuple]] = []
    final = list(sizes)[-1] if sizes else None
    for klass, want in sizes.items():
        stall = STALL_TRIES if klass == final else max_tries
        rng = random.Random(f"vx-probes:{klass}:{seed}")
        mut = _Mutator(dom, rng)
        got = 0
        last = 0  # the try that made the last probe
        queue = _extremes(calls) if klass == "boundary" else []
        for tries in range(1, max_tries + 1):
            if got >= want or tries - last > stall or mut.grown >= GROW_BUDGET:
                break
            if queue:
                extreme = queue.pop(0)
                key = _key(extreme)
                if key not in seen and in_domain(extreme, dom, _RELAX[klass]):
                    seen.add(key)
                    probes.append((klass, extreme))
                    got += 1
                    last = tries
                continue
            base = calls[tries % len(calls)] if tries <= len(calls) * 4 else rng.choice(calls)
            cand: tuple[Any, ...] | None
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
