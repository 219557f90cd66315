"""Parametric check templates of the report family, each with an inducer for offline synthesis.

A template is a family of checks (``forbids_phrase`` with ``phrase="will certainly"``); its
inducer looks at a cluster of bad sections and at known-good sections (lists of
``(task, output)`` pairs) and proposes parameter sets that catch the first and spare the second.
Proposals are only candidates: the synthesizer's birth gate decides. Inducers are deterministic
(same inputs → same proposals, in the same order).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from vx.ops import clean, drawback
from vx.ops.core import Context
from vx.ops.specs import inducer, template

FAMILY = "report"
Pairs = Sequence[tuple[Any, Any]]


def _section(task, output, ctx):
    from vx.families.report.ops.static import _ctx

    return _ctx(task, output, ctx)


def _sections(pairs: Pairs):
    out = []
    for task, output in pairs:
        try:
            rt, sec = _section(task, output, Context())
        except Exception:
            continue
        if sec is not None:
            out.append((rt, sec))
    return out


def _fires(fn: Callable, pairs: Pairs) -> list[bool]:
    res = []
    for task, output in pairs:
        try:
            res.append(fn(task, output, Context()).verdict == 1)
        except Exception:
            res.append(False)
    return res


def _good_proposal(factory: Callable, params: dict, cluster: Pairs, good: Pairs) -> bool:
    """Fires on at least half the cluster and on no good output (the birth gate's own test)."""
    fn = factory(**params)
    hits = sum(_fires(fn, cluster))
    return hits * 2 >= max(1, len(cluster)) and not any(_fires(fn, good))


# ----------------------------------------------------------------------------------------------- phrases

_WORD = re.compile(r"[a-z][a-z'’-]*")
_STOP = frozenset(
    "a an the of to in on at by for from with and or but as is are was were be been being will would can could "
    "may might must shall should it its this that these those there their they them he she we our you your "
    "not no than then so such into over under about after before up down out more most less least very".split()
)


def _content(gram: str) -> bool:
    """A phrase worth forbidding carries at least one content word (not "will be", "of the")."""
    return any(w not in _STOP and len(w) >= 4 for w in gram.split())


@template(
    "forbids_phrase",
    kind="static",
    params={"phrase": "str"},
    family=FAMILY,
    description="The section's body contains a forbidden phrase (case-insensitive, whole words)",
)
def forbids_phrase(phrase: str):
    pat = re.compile(
        r"(?<![A-Za-z])" + r"\s+".join(re.escape(w) for w in phrase.split()) + r"(?![A-Za-z])", re.IGNORECASE
    )

    def fn(task, output, ctx):
        _, sec = _section(task, output, ctx)
        if sec is None:
            return None
        for s in sec.body():
            if pat.search(s.text):
                return drawback(f"{s.quote()} contains “{phrase}”")
        return clean()

    return fn


@inducer("forbids_phrase")
def _induce_phrase(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    def grams(sec) -> set[str]:
        out: set[str] = set()
        for s in sec.body():
            words = _WORD.findall(s.text.lower())
            for n in (2, 3, 4):
                out.update(" ".join(words[i : i + n]) for i in range(len(words) - n + 1))
        return out

    bad = [grams(sec) for _, sec in _sections(cluster)]
    ok: set[str] = set().union(*[grams(sec) for _, sec in _sections(good)]) if good else set()
    counts = Counter(g for gs in bad for g in gs if g not in ok and _content(g))
    need = max(1, (len(bad) + 1) // 2)
    ranked = sorted((g for g, c in counts.items() if c >= need), key=lambda g: (-counts[g], len(g), g))
    chosen: list[str] = []
    for g in ranked:  # prefer short phrases; skip ones that contain an already chosen phrase
        if not any(c in g for c in chosen):
            chosen.append(g)
        if len(chosen) == 5:
            break
    return [{"phrase": g} for g in chosen]


# ----------------------------------------------------------------------------------------------- structure


@template(
    "requires_heading",
    kind="static",
    params={"pattern": "str"},
    family=FAMILY,
    description="No heading of the section contains the given words (case-insensitive)",
)
def requires_heading(pattern: str):
    low = pattern.lower()

    def fn(task, output, ctx):
        _, sec = _section(task, output, ctx)
        if sec is None:
            return None
        heads = [b.text for b in sec.headings]
        if any(low in h.lower() for h in heads):
            return clean()
        return drawback(f"no heading mentions “{pattern}” (headings: {'; '.join(heads) or 'none'})")

    return fn


@inducer("requires_heading")
def _induce_heading(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    goods = _sections(good)
    if not goods:
        return []
    per = [{w for b in sec.headings[1:] for w in _WORD.findall(b.text.lower()) if len(w) > 3} for _, sec in goods]
    common = set.intersection(*per) if per else set()
    return [{"pattern": w} for w in sorted(common)][:5]


@template(
    "ends_mid_sentence",
    kind="static",
    params={},
    family=FAMILY,
    description="The section's last sentence is unfinished (no closing punctuation)",
)
def ends_mid_sentence():
    def fn(task, output, ctx):
        from vx.families.report.lexicon import unfinished

        _, sec = _section(task, output, ctx)
        if sec is None or not any(s.kind in ("paragraph", "item", "quote") for s in sec.body()):
            return None
        cut = unfinished(sec)
        if cut is None:
            return clean()
        return drawback(f"{cut.quote()} ends without closing punctuation: the section looks cut off")

    return fn


@inducer("ends_mid_sentence")
def _induce_ends(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    return [{}] if _good_proposal(ends_mid_sentence, {}, cluster, good) else []


@template(
    "word_bounds",
    kind="static",
    params={"min_words": "int", "max_words": "int"},
    family=FAMILY,
    description="The section's body is shorter than min_words or longer than max_words",
)
def word_bounds(min_words: int, max_words: int):
    def fn(task, output, ctx):
        _, sec = _section(task, output, ctx)
        if sec is None:
            return None
        n = sec.word_count()
        if n < min_words:
            return drawback(f"the body has {n} words, fewer than {min_words}")
        if n > max_words:
            return drawback(f"the body has {n} words, more than {max_words}")
        return clean(f"{n} words")

    return fn


@inducer("word_bounds")
def _induce_words(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    g = [sec.word_count() for _, sec in _sections(good)]
    b = [sec.word_count() for _, sec in _sections(cluster)]
    if not g or not b:
        return []
    lo, hi = min(g), max(g)
    out = []
    short = sorted(x for x in b if x < lo)
    long_ = sorted(x for x in b if x > hi)
    if short:
        out.append({"min_words": (max(short) + lo + 1) // 2, "max_words": 10 * hi})
    if long_:
        out.append({"min_words": 0, "max_words": (min(long_) + hi) // 2})
    return out


# ----------------------------------------------------------------------------------------------- evidence


@template(
    "min_distinct_cards",
    kind="static",
    params={"n": "int"},
    family=FAMILY,
    description="The section cites fewer than n distinct known cards",
)
def min_distinct_cards(n: int):
    def fn(task, output, ctx):
        rt, sec = _section(task, output, ctx)
        if sec is None:
            return None
        k = len([c for c in sec.cited_cards() if rt.card(c) is not None])
        return drawback(f"cites {k} distinct cards, fewer than {n}") if k < n else clean(f"{k} cards cited")

    return fn


@inducer("min_distinct_cards")
def _induce_cards(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    def k(rt, sec):
        return len([c for c in sec.cited_cards() if rt.card(c) is not None])

    g = [k(*x) for x in _sections(good)]
    b = [k(*x) for x in _sections(cluster)]
    if not g or not b or min(b) >= min(g):
        return []
    return [{"n": n} for n in range(min(g), min(b), -1)][:3]


@template(
    "min_card_coverage",
    kind="static",
    params={"fraction": "float"},
    family=FAMILY,
    description="The section cites less than the given fraction of the task's cards",
)
def min_card_coverage(fraction: float):
    def fn(task, output, ctx):
        rt, sec = _section(task, output, ctx)
        if sec is None or not rt.cards:
            return None
        cov = len({c for c in sec.cited_cards() if rt.card(c) is not None}) / len(rt.cards)
        if cov < fraction:
            return drawback(f"cites {cov:.0%} of the task's {len(rt.cards)} cards, below {fraction:.0%}")
        return clean(f"card coverage {cov:.0%}")

    return fn


@inducer("min_card_coverage")
def _induce_coverage(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    def cov(rt, sec):
        return len({c for c in sec.cited_cards() if rt.card(c) is not None}) / max(1, len(rt.cards))

    g = [cov(*x) for x in _sections(good)]
    b = sorted(cov(*x) for x in _sections(cluster))
    if not g or not b:
        return []
    lo = min(g)
    below = [x for x in b if x < lo]
    if len(below) * 2 < len(b):
        return []
    return [{"fraction": round((max(below) + lo) / 2, 2)}]


@template(
    "hedge_required_for",
    kind="static",
    params={"credibility": "str"},
    family=FAMILY,
    description="A card of the given credibility verdict is cited without hedging language",
)
def hedge_required_for(credibility: str):
    def fn(task, output, ctx):
        from vx.families.report.ops.static import HEDGES

        rt, sec = _section(task, output, ctx)
        if sec is None:
            return None
        ids = {c.id for c in rt.cards if c.credibility == credibility}
        uses = [s for s in sec.body() if ids & set(s.cites)]
        if not uses:
            return None
        for s in uses:
            if not HEDGES.search(s.text):
                return drawback(f"{s.quote()} cites a {credibility}-credibility card without hedging")
        return clean()

    return fn


@inducer("hedge_required_for")
def _induce_hedge(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    from vx.families.report.model import CREDIBILITY

    return [
        {"credibility": c} for c in CREDIBILITY if _good_proposal(hedge_required_for, {"credibility": c}, cluster, good)
    ]


# ----------------------------------------------------------------------------------------------- ledger


@template(
    "tag_value_window",
    kind="static",
    params={"before": "int"},
    family=FAMILY,
    description="A numeric ledger tag has no numeral within `before` characters before it",
)
def tag_value_window(before: int):
    def fn(task, output, ctx):
        from vx.families.report.ops.static import value_erasure_check

        return value_erasure_check(task, output, ctx, before=before, after=0)

    return fn


@inducer("tag_value_window")
def _induce_window(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    return [
        {"before": w} for w in (8, 16, 24, 40, 64) if _good_proposal(tag_value_window, {"before": w}, cluster, good)
    ][:2]


@template(
    "max_untagged_ledger_values",
    kind="static",
    params={"n": "int"},
    family=FAMILY,
    description="More than n registered key figures appear as numbers without their ledger tag",
)
def max_untagged_ledger_values(n: int):
    def fn(task, output, ctx):
        from vx.families.report.figures import find_figures, matches_value

        rt, sec = _section(task, output, ctx)
        if sec is None or not rt.vocabulary:
            return None
        loose = []
        for m in rt.vocabulary:
            if m.value is None:
                continue
            for s in sec.body():
                if m.id in {t.metric for t in s.tags}:
                    continue
                if any(f.is_quantity and matches_value(f, m.value, m.unit) for f in find_figures(s.text)):
                    loose.append(f"{s.quote()} states {m.name} without {m.tag}")
                    break
        if len(loose) > n:
            return drawback(loose[0] + (f" (+{len(loose) - 1} more)" if len(loose) > 1 else ""))
        return clean()

    return fn


@inducer("max_untagged_ledger_values")
def _induce_untagged(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    return [{"n": n} for n in (0, 1) if _good_proposal(max_untagged_ledger_values, {"n": n}, cluster, good)][:1]


@template(
    "max_uncited_sentences",
    kind="static",
    params={"n": "int", "min_words": "int"},
    family=FAMILY,
    description="More than n body sentences of at least min_words words cite no card",
)
def max_uncited_sentences(n: int, min_words: int):
    def fn(task, output, ctx):
        _, sec = _section(task, output, ctx)
        if sec is None:
            return None
        bare = [
            s
            for s in sec.body()
            if not s.cites and len(s.text.split()) >= min_words and s.kind in ("paragraph", "item", "quote")
        ]
        if len(bare) > n:
            return drawback(f"{bare[0].quote()} cites no card" + (f" (+{len(bare) - 1} more)" if len(bare) > 1 else ""))
        return clean()

    return fn


@inducer("max_uncited_sentences")
def _induce_uncited(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    out = []
    for n in (0, 1, 2):
        for w in (6, 10):
            p = {"n": n, "min_words": w}
            if _good_proposal(max_uncited_sentences, p, cluster, good):
                out.append(p)
    return out[:3]


__all__ = [
    "FAMILY",
    "ends_mid_sentence",
    "forbids_phrase",
    "hedge_required_for",
    "max_uncited_sentences",
    "max_untagged_ledger_values",
    "min_card_coverage",
    "min_distinct_cards",
    "requires_heading",
    "tag_value_window",
    "word_bounds",
]
