"""Drawn probe inputs: hypothesis strategies built from a task's inferred domain.

The mutation classes of :mod:`.generate` stay close to the visible examples (one to three edits of
one example). This module adds the class ``drawn``: fresh inputs drawn from **hypothesis** strategies
built from the same inferred predicates (:class:`.domain.Domain`): per value path its types, sign,
magnitude bound, closed set of ints, float decimals, string alphabet, digit-run pattern, balanced
brackets, words separated by single spaces, length bounds (lists and tuples of at least two elements
when every example's are: "a list of at least two numbers" is a common unstated precondition), sorted
and distinct lists, rectangular nested lists, record tuples and dicts; across arguments equal lengths,
an int at most a length and the order of two ints are repaired after drawing. Every drawn input must still pass
:func:`.domain.in_domain` (no predicate relaxed), so a drawn probe is as much "within what the
examples imply" as a mutant, only further from the examples: hypothesis favours small and extreme
values (0, the bounds, empty or one-element collections where the domain allows them, repeated
elements), which is where off-by-one and ``<``/``<=`` mistakes show.

Determinism. ``strategy.example()`` is random, and ``@given`` with ``@seed`` is deterministic but
costs ~0.25 s of CPU per 200 inputs and cannot run inside another ``@given`` (hypothesis's
``nested_given`` health check fails the *outer* test, which may be a user's). So vx drives the
strategies itself: each input is one hypothesis ``ConjectureData`` fed by ``random.Random`` seeded
with the task id (hypothesis's own primitive provider draws the choices), inside a ``BuildContext``.
That is deterministic across processes (no hash seed involved; hypothesis's pool of constants,
harvested from whatever modules a process imported, is left out: with it a worker drew other inputs
than its parent), and nests. The ConjectureData is a lean subclass that keeps none of the records only
hypothesis's engine reads (spans, labels, choice nodes, timings): the same provider calls give the same
inputs at ~0.17 ms a draw instead of ~0.45 (``faithful=True`` draws through hypothesis's own class; a
test holds the two equal). It uses hypothesis internals (``hypothesis.internal.conjecture``): if a future hypothesis
changes them, :func:`draw_probes` returns no drawn probes and says why (the other classes are
unaffected); ``tests/families/code/test_probes_draw.py`` pins the behaviour.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from vx.families.code.probes.domain import Domain, Path, PathDomain, in_domain

#: How many drawn probes per task (at most).
N_DRAWN = 40
DRAWS_PER_PROBE = 2  # draws spent per probe wanted, at most (a draw the predicates reject is lost)
#: Longest drawn collection (the ``large`` class is the one that makes long inputs).
MAX_DRAWN_LEN = 10
#: The ``wide`` class: magnitude bounds widened to max(WIDE_FACTOR x the bound, WIDE_MIN).
N_WIDE = 0
WIDE_FACTOR = 10
WIDE_MIN = 100
MAX_CHOICES = 4000  # hypothesis choices per drawn input (a draw past it is dropped)


def _words(alphabet: Sequence[str], d: PathDomain) -> Any:
    letters = [c for c in alphabet if c != " "]
    if not letters:
        return None
    word = st.text(alphabet=letters, min_size=1, max_size=8)
    return st.lists(word, min_size=1 if d.nonempty else 0, max_size=max(1, min(d.max_len // 2, 8))).map(" ".join)


def _balanced(alphabet: Sequence[str], d: PathDomain) -> Any:
    pairs = list(d.balanced)
    brackets = {c for o, c2 in pairs for c in (o, c2)}
    others = [c for c in alphabet if c not in brackets and c not in "()[]{}<>"]
    base = st.text(alphabet=others, max_size=2) if others else st.just("")
    return st.recursive(
        base,
        lambda inner: st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.tuples(st.sampled_from(pairs), inner).map(lambda t: t[0][0] + t[1] + t[0][1]),
        ),
        max_leaves=8,
    )


def _pattern(pattern: str, d: PathDomain) -> Any:
    """Strings of the examples' digit-run pattern: numbers where the examples show all ten digits,
    else runs over the digits they show (binary strings stay binary)."""
    pieces = pattern.split("#")
    digits = sorted(c for c in (d.alphabet or "0123456789") if c.isdigit())
    if len(digits) == 10:
        run = st.integers(0, 120).map(str)
    else:
        run = st.text(alphabet=digits, min_size=1, max_size=max(1, min(d.max_len, 2 * MAX_DRAWN_LEN)))
    runs = st.lists(run, min_size=len(pieces) - 1, max_size=len(pieces) - 1)
    return runs.map(lambda rs: pieces[0] + "".join(r + p for r, p in zip(rs, pieces[1:])))


def _string(d: PathDomain) -> Any:
    if d.pattern is not None:
        return _pattern(d.pattern, d)
    alphabet = sorted(d.alphabet or ())
    if not alphabet:
        pool = [x for x in d.ingredients if type(x) is str]
        return st.sampled_from(pool) if pool else None
    if d.balanced:
        return _balanced(alphabet, d)
    if " " in alphabet and d.single_spaces and d.strip:
        return _words(alphabet, d)
    return st.text(alphabet=alphabet, min_size=1 if d.nonempty else 0, max_size=min(d.max_len, 2 * MAX_DRAWN_LEN))


def _number(t: type, d: PathDomain) -> Any:
    bound = d.bound if math.isfinite(d.bound) else 10**6
    ingredients = [x for x in d.ingredients if type(x) is t]
    if t is int:
        if d.closed_ints is not None:
            return st.sampled_from(sorted(d.closed_ints))
        lo = 2 if d.at_least_two else 1 if d.positive else 0 if d.nonneg else -int(bound)
        fresh: st.SearchStrategy[float] = st.integers(lo, max(lo, int(bound)))
    else:
        low = 0.0 if (d.positive or d.nonneg) else -float(bound)
        dec = d.decimals
        fresh = st.floats(low, float(bound), allow_nan=False, allow_infinity=False, exclude_min=d.positive).map(
            lambda x: round(x, dec)
        )
    return st.one_of(fresh, st.sampled_from(ingredients)) if ingredients else fresh


def _sized(path: Path, d: PathDomain) -> tuple[int, int]:
    return (1 if d.nonempty else 0), max(1 if d.nonempty else 0, min(d.max_len, MAX_DRAWN_LEN))


def _for_type(t: type, path: Path, d: PathDomain, dom: Domain) -> Any:
    if t is type(None):
        return st.none()
    if t is bool:
        return st.booleans()
    if t in (int, float):
        return _number(t, d)
    if t is str:
        return _string(d)
    if t is tuple and path in dom.records:
        n = 0
        while path + (n,) in dom.paths:
            n += 1
        fields = [strategy(path + (j,), dom) for j in range(n)]
        return None if any(f is None for f in fields) else st.tuples(*fields)
    if t in (list, tuple, set, frozenset):
        lo, hi = _sized(path, d)
        elem = strategy(path + ("elem",), dom)
        if elem is None:
            return st.just(t()) if lo == 0 else None
        if t in (set, frozenset):
            return st.sets(elem, min_size=lo, max_size=hi).map(t)
        inner = dom.paths.get(path + ("elem",))
        if d.rectangular and inner is not None and inner.types <= {list, tuple}:
            cell = strategy(path + ("elem", "elem"), dom)
            if cell is None:
                return None
            row_t = next(iter(inner.types))
            ilo, ihi = _sized(path + ("elem",), inner)
            square = d.square
            rows = st.integers(max(1, ilo), max(1, ihi)).flatmap(
                lambda n: st.lists(
                    st.lists(cell, min_size=n, max_size=n).map(row_t),
                    min_size=n if square else lo,
                    max_size=n if square else hi,
                )
            )
            return rows.map(t) if t is tuple else rows
        if d.min_len >= 2:  # "a list of at least two numbers": every example shows two or more
            lo, hi = max(lo, 2), max(hi, 2)
        made = st.lists(elem, min_size=lo, max_size=hi, unique_by=repr if d.distinct else None)
        if d.sorted:
            made = made.map(functools.partial(_sorted, reverse=d.sorted == "desc"))
        return made.map(tuple) if t is tuple else made
    if t is dict:
        key, val = strategy(path + ("key",), dom), strategy(path + ("val",), dom)
        lo, hi = _sized(path, d)
        if key is None or val is None:
            return st.just({}) if lo == 0 else None
        return st.dictionaries(key, val, min_size=lo, max_size=min(hi, 8))
    return None


def _sorted(v: list, reverse: bool) -> list:
    try:
        return sorted(v, reverse=reverse)
    except TypeError:
        return v


def strategy(path: Path, dom: Domain) -> Any:
    """The hypothesis strategy of the values at ``path`` (None: the domain says too little to draw)."""
    d = dom.paths.get(path)
    if d is None:
        return None
    alts = [s for t in sorted(d.types, key=lambda t: t.__name__) if (s := _for_type(t, path, d, dom)) is not None]
    return st.one_of(alts) if alts else None


def arguments(dom: Domain) -> Any:
    """The strategy of a whole argument tuple, or None when some argument cannot be drawn."""
    per_arg = [strategy((i,), dom) for i in range(dom.arity)]
    return None if any(s is None for s in per_arg) else st.tuples(*per_arg)


def repair(args: tuple, dom: Domain) -> tuple:
    """Make the cross-argument relations hold where a cheap fix exists: equal-length arguments cut to
    the shorter one, an int bounded by a length reduced modulo it, two ordered int arguments swapped."""
    out = list(args)
    for i, j in dom.equal_len:
        n = min(len(out[i]), len(out[j]))
        out[i], out[j] = out[i][:n], out[j][:n]
    for i, j in dom.int_le_len:
        if type(out[i]) is int and out[i] > len(out[j]):
            out[i] = out[i] % (len(out[j]) + 1)
    for a, b in dom.int_order:
        if len(a) == 1 and len(b) == 1:
            va, vb = out[a[0]], out[b[0]]
            if type(va) is int and type(vb) is int and va > vb:
                out[a[0]], out[b[0]] = vb, va
    return tuple(out)


def widened(dom: Domain) -> Domain:
    """The domain with every magnitude bound widened to max(:data:`WIDE_FACTOR` x, :data:`WIDE_MIN`)
    (lengths, signs, alphabets and relations unchanged): the ``wide`` class, numbers larger than the
    examples suggest (digits of multi-digit negatives, bases past 10, large counts)."""
    paths = {
        p: attrs.evolve(d, bound=min(max(d.bound * WIDE_FACTOR, WIDE_MIN), 10**6)) if math.isfinite(d.bound) else d
        for p, d in dom.paths.items()
    }
    return attrs.evolve(dom, paths=paths)


def _drawing() -> tuple[Any, Any, Any, Any, Any] | str:
    """hypothesis's drawing internals: (its BuildContext, StopTest and ConjectureData, the lean
    ConjectureData, the provider without constants), made anew each call; or why they are not available."""
    try:
        from hypothesis.control import BuildContext
        from hypothesis.errors import StopTest
        from hypothesis.internal.conjecture.choice import choice_size
        from hypothesis.internal.conjecture.data import MAX_DEPTH, ConjectureData
        from hypothesis.internal.conjecture.providers import HypothesisProvider
        from hypothesis.internal.floats import float_to_int, int_to_float
        from hypothesis.strategies._internal.lazy import unwrap_strategies
    except ImportError as exc:  # pragma: no cover - a hypothesis without these internals
        return f"hypothesis's drawing internals are not available ({exc})"

    class Provider(HypothesisProvider):
        """hypothesis's own provider without its pool of constants: that pool is harvested from the
        modules imported in the process (and cached process-wide), so with it the same seed drew
        different inputs in a dask worker than in its parent (the witness:
        tests/ops/test_executors.py::test_killing_a_worker_mid_run_loses_and_doubles_nothing)."""

        def _maybe_draw_constant(self, *args: Any, **kwargs: Any) -> Any:
            return None

    class Lean(ConjectureData):
        """hypothesis's ConjectureData without the records only its engine reads -- spans, labels,
        structural tags, the choice nodes, draw timings, pooled constraints --, which were most of a
        draw's CPU (0.45 -> 0.17 ms a draw on CodeT's 161 domains): the same
        checks (the choice and length limits, strategy validation, the depth limit, nan
        canonicalisation) and the same provider calls in the same order, so the same inputs
        (tests/families/code/test_probes_draw.py pins them against hypothesis's own ConjectureData)."""

        n_choices = 0  # choices drawn so far (a count: the base class's `choices` is the tuple of them)

        def draw(self, strategy: Any, label: Any = None, observe_as: Any = None) -> Any:
            strategy.validate()
            if strategy.is_empty:
                self.mark_invalid()
            if self.depth >= MAX_DEPTH:
                self.mark_invalid()
            self.depth += 1
            try:
                return unwrap_strategies(strategy).do_draw(self)
            finally:
                self.depth -= 1

        def start_span(self, label: int) -> None:
            self.depth += 1  # many() checks it: a collection's elements are drawn at its depth

        def stop_span(self, *, discard: bool = False) -> None:
            self.depth -= 1

        def freeze(self) -> None:
            self.frozen = True

        def _pooled_constraints(self, choice_type: Any, constraints: Any) -> Any:
            return constraints  # hypothesis shares equal constraint dicts to save memory; a draw lives briefly

        def _draw(self, choice_type: Any, constraints: Any, *, observe: bool, forced: Any) -> Any:
            if self.length == self.max_length or self.n_choices == self.max_choices:
                self.mark_overrun()
            value = getattr(self.provider, f"draw_{choice_type}")(**constraints) if forced is None else forced
            if choice_type == "float" and math.isnan(value):
                value = int_to_float(float_to_int(value))
            if observe:
                self.length += choice_size(value)
                if self.length > self.max_length:
                    self.mark_overrun()
                self.n_choices += 1
            return value

    return BuildContext, StopTest, ConjectureData, Lean, Provider


def draw_probes(
    examples: Sequence[tuple],
    dom: Domain | None,
    *,
    seed: str = "",
    n: int = N_DRAWN,
    seen: set[str] | None = None,
    wide: bool = False,
    faithful: bool = False,
) -> tuple[list[tuple], str]:
    """(argument tuples, why none): up to `n` distinct inputs drawn from the domain's strategies, each
        satisfying every inferred predicate, none equal to an example or to an input in `seen` (reprs;
        updated). Deterministic in (`examples`, `seed`). With `wide`, from :func:`widened` (the ``wide``
        class: every predicate but the magnitude bounds, which are widened). `faithful`: through hypothesis's
    own ConjectureData rather than the lean one (same inputs, slower: the reference the tests compare with)."""
    if dom is None or not examples:
        return [], "no inferred domain to draw from"
    if wide:
        dom = widened(dom)
    strat = arguments(dom)
    if strat is None:
        return [], "the inferred domain leaves some argument without values to draw"
    drawing = _drawing()
    if isinstance(drawing, str):
        return [], drawing
    build_context, stop_test, conjecture_data, lean, provider = drawing
    seen = set() if seen is None else seen
    seen.update(repr(tuple(a)) for a in examples)
    rng = random.Random(f"vx-{'wide' if wide else 'drawn'}:{seed}")
    out: list[tuple] = []
    for _ in range(DRAWS_PER_PROBE * n):
        if len(out) >= n:
            break
        data = (conjecture_data if faithful else lean)(random=rng, max_choices=MAX_CHOICES, provider=provider)
        try:
            with build_context(data, is_final=False, wrapped_test=draw_probes):
                cand = repair(data.draw(strat), dom)
        except stop_test:
            continue
        except Exception as exc:  # an internals change, or a strategy vx built wrongly: no drawn class
            return out, f"drawing from the domain failed ({type(exc).__name__}: {exc})"
        key = repr(cand)
        if key in seen:
            continue
        seen.add(key)
        if in_domain(cand, dom):
            out.append(cand)
    return out, "" if out else "no drawn input satisfies every inferred predicate"


__all__ = ["DRAWS_PER_PROBE", "N_DRAWN", "N_WIDE", "widened", "arguments", "draw_probes", "repair", "strategy"]
