"""The report family's root ``has_title`` and its eleven hand-written static seed ops.

Every op reads the section parsed by the root (``ctx["artifact"]``, a `parse.Section`) and the
validated task (`model.task_of`). Messages quote the offending sentence with its line, so a
failure capsule says exactly what to fix. An op abstains when the task gives it nothing to check
(e.g. `one_sided_conflict` on a task without opposing evidence).

Conventions the ops enforce (the task's format contract): cite cards inline as ``[E0103]`` or
``[E0103, E0107]``; state each key figure's value *with* its ledger tag, tag after the value
(``$4.2B {M03}``); hedge claims resting on low-credibility or disputed cards; cite both sides when
the cards disagree; open with a TL;DR; obey the caliber's currency, units and pool rules.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from typing import Any

from vx.families.report.figures import (
    UNIT_KIND,
    Figure,
    find_figures,
    matches_number,
    matches_value,
    numeral_near,
    source_figures,
    unit_scale,
)
from vx.families.report.model import ReportTask, task_of
from vx.families.report.parse import Section, Sentence, parse_section
from vx.ops import clean, drawback, op

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (__name__, "vx.families.report.parse", "vx.families.report.figures", "vx.families.report.model")

ROOT = "has_title"

# How close a numeral must sit to a ledger tag to count as its value (characters).
TAG_WINDOW_BEFORE = 40
TAG_WINDOW_AFTER = 12

HEDGES = re.compile(
    r"\b(may|might|could|reportedly|reported(ly)?|according to|suggests?|suggested|indicates?|estimated?|"
    r"estimates|appears?|seems?|unconfirmed|unverified|not (yet )?(independently )?(verified|confirmed)|claims?|"
    r"claimed|alleged(ly)?|possibly|potentially|likely|unlikely|uncertain|tentative|preliminary|if confirmed|"
    r"single[- ]source|disputed|contested|one (vendor|analyst|source)|cautious|caution)\b",
    re.IGNORECASE,
)
CLAIM_WORDS = re.compile(
    r"\b(grew|grow|grows|growing|rose|rise|rises|fell|fall|falls|declined?|declining|increased?|decreased?|"
    r"doubled?|tripled?|expanded?|contracted?|surged?|slumped?|jumped?|dropped?|reached|exceeded?|leads?|"
    r"dominates?|accounts? for|represents?|outpaced?|overtook|forecasts?|projects?|expects?|expected|will|"
    r"shortage|surplus|largest|smallest|fastest|highest|lowest|majority|share)\b",
    re.IGNORECASE,
)


def _ctx(task: Mapping[str, Any], output: Any, ctx) -> tuple[ReportTask, Section | None]:
    rt = task_of(task, ctx)
    sec = ctx.get("artifact") if ctx is not None else None
    if sec is None and isinstance(output, str) and output.strip():
        sec = parse_section(output)
        if ctx is not None:
            ctx["artifact"] = sec
    return rt, sec


def _report(found: list[str], what: str) -> Any:
    """One drawback naming the first offence (and how many more there are)."""
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    return drawback(found[0] + more, evidence={"count": len(found), "all": found[:20], "class": what})


CLAIM_MIN_WORDS = 6  # a declarative sentence this long asserts something; shorter ones frame ("Two risks stand out.")


def is_claim(s: Sentence) -> bool:
    """A sentence that asserts something: a figure, a ledger tag, a trend/ranking verb, or any
    declarative sentence of at least six words (questions and short framing sentences are not claims)."""
    if s.kind in ("heading", "code"):
        return False
    if s.tags or any(f.is_quantity for f in find_figures(s.text)):
        return True
    body = re.sub(r"^\W*(tl\s*;?\s*dr|tldr)\W*", "", s.text, flags=re.IGNORECASE)
    if CLAIM_WORDS.search(body):
        return True
    words = re.findall(r"[A-Za-z0-9$€£%'’-]+", body)
    return len(words) >= CLAIM_MIN_WORDS and not body.rstrip().endswith("?") and s.kind != "row"


# --------------------------------------------------------------------------------------------- root


@op(detects="no_title_or_not_markdown", root=True, depends=DEPENDS)
def has_title(task, output, ctx):
    """The section is non-empty markdown that opens with a title heading (# or ##)."""
    if not isinstance(output, str):
        return drawback(f"the output is a {type(output).__name__}, not markdown text")
    if not output.strip():
        return drawback("the section is empty")
    sec = parse_section(output)
    ctx["artifact"] = sec
    if sec.title is None:
        first = sec.blocks[0] if sec.blocks else None
        seen = f"it opens with a {first.kind} at line {first.line}" if first else "it has no content blocks"
        return drawback(f"no title: a section must open with a '# ' or '## ' heading; {seen}")
    if not any(s.kind != "heading" for s in sec.sentences):
        return drawback(f"the section '{sec.title}' has a title but no body")
    return clean(f"title: {sec.title}")


# --------------------------------------------------------------------------------------------- grounding


@op(detects="uncited_claim", depends=DEPENDS)
def uncited_claims(task, output, ctx):
    """A claim sentence (a figure, a tag, a trend verb, or any declarative sentence of six words or
    more) cites no evidence card."""
    _, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    claims = [s for s in sec.body() if is_claim(s)]
    if not claims:
        return None
    bad = [f"{s.quote()} makes a claim but cites no card" for s in claims if not s.cites]
    return _report(bad, "uncited_claim") if bad else clean(f"all {len(claims)} claim sentences cite cards")


@op(detects="unknown_citation", depends=DEPENDS)
def cites_unknown_card(task, output, ctx):
    """A citation names a card id that is not among the task's evidence cards."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    cited = [(s, c) for s in sec.sentences for c in s.cites]
    if not cited:
        return None
    bad = [f"{s.quote()} cites [{c}], which is not one of the task's cards" for s, c in cited if rt.card(c) is None]
    return _report(bad, "unknown_citation") if bad else clean(f"{len(cited)} citations, all known cards")


# --------------------------------------------------------------------------------------------- ledger


@op(detects="metric_uncovered", depends=DEPENDS)
def ledger_metric_uncovered(task, output, ctx):
    """A key figure registered in the metric vocabulary never appears with its tag."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None or not rt.vocabulary:
        return None
    tagged = set(sec.tagged_metrics())
    missing = [m for m in rt.vocabulary if m.id not in tagged]
    if not missing:
        return clean(f"all {len(rt.vocabulary)} registered metrics are tagged")
    found = []
    for m in missing:
        shown = ""
        if m.value is not None:
            hits = [
                s
                for s in sec.body()
                if any(matches_value(f, m.value, m.unit) and f.is_quantity for f in find_figures(s.text))
            ]
            if hits:
                shown = f"; its value appears untagged at {hits[0].quote()}"
        found.append(f"{m.id} ({m.name}, {m.display()}) is registered but its tag {m.tag} never appears{shown}")
    return _report(found, "metric_uncovered")


def _tag_figures(sec: Section, rt: ReportTask, before: int = TAG_WINDOW_BEFORE, after: int = TAG_WINDOW_AFTER):
    """(sentence, tag, metric, nearest figure or None) for each tag of a registered numeric metric."""
    for s in sec.sentences:
        for t in s.tags:
            m = rt.metric(t.metric)
            if m is None or m.value is None:
                continue
            yield s, t, m, numeral_near(s.text, t.start, t.end, before, after)


def value_erasure_check(task, output, ctx, before: int = TAG_WINDOW_BEFORE, after: int = TAG_WINDOW_AFTER):
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    rows = list(_tag_figures(sec, rt, before, after))
    if not rows:
        return None
    bad = [
        f"{s.quote()}: tag {t.metric} stands without a number — {m.name} is {m.display()} in the ledger "
        f"and no numeral sits within {before} characters before the tag"
        for s, t, m, f in rows
        if f is None
    ]
    return _report(bad, "value_erasure") if bad else clean(f"all {len(rows)} numeric tags carry a value")


@op(detects="value_erasure", depends=DEPENDS)
def value_erasure(task, output, ctx):
    """A ledger tag whose registered metric has a numeric value stands with no numeral nearby
    (the tag written in place of the number)."""
    return value_erasure_check(task, output, ctx)


@op(detects="value_mismatch", depends=DEPENDS)
def value_mismatch(task, output, ctx):
    """The number written beside a ledger tag differs from the value registered for that metric."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    rows = [(s, t, m, f) for s, t, m, f in _tag_figures(sec, rt) if f is not None]
    if not rows:
        return None
    bad = [
        f"{s.quote()}: “{f.text}” is written beside {t.metric}, but the ledger registers {m.name} as {m.display()}"
        for s, t, m, f in rows
        if not matches_value(f, m.value, m.unit)
    ]
    return _report(bad, "value_mismatch") if bad else clean(f"all {len(rows)} tagged values match the ledger")


# --------------------------------------------------------------------------------------------- calibration


@op(detects="overclaimed_weak_evidence", depends=DEPENDS)
def low_credibility_card_overclaimed(task, output, ctx):
    """A sentence resting on a low-credibility or disputed card states it without hedging."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    weak = {c.id for c in rt.cards if c.weak}
    if not weak:
        return None
    uses = [s for s in sec.body() if weak & set(s.cites)]
    if not uses:
        return clean("no weak card is cited")
    bad = []
    for s in uses:
        if not HEDGES.search(s.text):
            ids = ", ".join(f"{c} ({card.credibility})" for c in s.cites if c in weak and (card := rt.card(c)))
            bad.append(f"{s.quote()} rests on {ids} but states it without hedging")
    return (
        _report(bad, "overclaimed_weak_evidence")
        if bad
        else clean(f"{len(uses)} sentences citing weak cards are hedged")
    )


@op(detects="one_sided_conflict", depends=DEPENDS)
def one_sided_conflict(task, output, ctx):
    """The cards disagree (supporting and opposing stances) but the section cites only one side."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    sup = {c.id for c in rt.cards_by_stance("supporting")}
    opp = {c.id for c in rt.cards_by_stance("opposing")}
    if not sup or not opp:
        return None
    cited = set(sec.cited_cards())
    cs, co = sorted(cited & sup), sorted(cited & opp)
    if not cs and not co:
        return None
    if cs and co:
        return clean(f"both sides cited: supporting {', '.join(cs)}; opposing {', '.join(co)}")
    side, other, ids = ("supporting", "opposing", cs) if cs else ("opposing", "supporting", co)
    missing = sorted(opp if cs else sup)
    example = next(s for s in sec.sentences if set(s.cites) & set(ids))
    return drawback(
        f"only the {side} side is cited ({', '.join(ids)}, e.g. {example.quote()}); "
        f"the {other} card(s) {', '.join(missing)} are never presented",
        evidence={"class": "one_sided_conflict", "cited": ids, "ignored": missing},
    )


# --------------------------------------------------------------------------------------------- structure


@op(detects="missing_tldr", depends=DEPENDS)
def missing_tldr(task, output, ctx):
    """The section has no TL;DR near its top (within the first three blocks after the title)."""
    _, sec = _ctx(task, output, ctx)
    if sec is None or not sec.blocks:
        return None
    body = list(sec.blocks[1:] if sec.title is not None else sec.blocks)
    where = [i for i, b in enumerate(body) if b.is_tldr]
    if not where:
        return drawback(
            "no TL;DR: open the section with a 'TL;DR' heading or a paragraph starting 'TL;DR:'",
            evidence={"class": "missing_tldr"},
        )
    if where[0] > 2:
        b = body[where[0]]
        return drawback(
            f"the TL;DR comes late (line {b.line}, block {where[0] + 1} of the body); put it first",
            evidence={"class": "missing_tldr"},
        )
    return clean(f"TL;DR at line {body[where[0]].line}")


# --------------------------------------------------------------------------------------------- caliber


def _figure_violation(f: Figure, rt: ReportTask) -> str | None:
    cal = rt.caliber
    if cal.currency and f.currency and f.currency != cal.currency:
        return f"“{f.text}” is in {f.currency}; the caliber requires {cal.currency}"
    if f.unit and cal.units:
        kind = UNIT_KIND.get(f.unit)
        allowed = [u for u in cal.units if UNIT_KIND.get(u) == kind]
        if kind and allowed and f.unit not in allowed:
            return f"“{f.text}” is in {f.unit}; the caliber states {kind} in {' or '.join(allowed)}"
    return None


@op(detects="caliber_unit_violation", depends=DEPENDS)
def caliber_unit_violation(task, output, ctx):
    """A figure is stated in a currency or unit the caliber contract does not allow."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    if not rt.caliber.currency and not rt.caliber.units:
        return None
    checked, bad = 0, []
    for s in sec.body():
        for f in find_figures(s.text):
            if f.currency or f.unit:
                checked += 1
                v = _figure_violation(f, rt)
                if v:
                    bad.append(f"{s.quote()}: {v}")
    if not checked:
        return None
    return _report(bad, "caliber_unit_violation") if bad else clean(f"{checked} figures follow the caliber")


def _known_figures(rt: ReportTask) -> list[Figure]:
    return source_figures([c.claim for c in rt.cards] + [c.quote for c in rt.cards])


def _sourced(f: Figure, rt: ReportTask, known: list[Figure]) -> bool:
    if any(m.value is not None and matches_value(f, m.value, m.unit) for m in rt.vocabulary):
        return True
    return any(matches_number(f, k) for k in known)


@op(detects="fabricated_figure", depends=DEPENDS)
def fabricated_figure(task, output, ctx):
    """A figure in the section matches no evidence card and no ledger value."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None:
        return None
    known = _known_figures(rt)
    figs = [(s, f) for s in sec.body() for f in find_figures(s.text) if f.is_quantity]
    if not figs:
        return None
    bad = [
        f"{s.quote()}: “{f.text}” matches no card and no ledger value" for s, f in figs if not _sourced(f, rt, known)
    ]
    return _report(bad, "fabricated_figure") if bad else clean(f"all {len(figs)} figures are sourced")


@op(detects="summed_across_pools", depends=DEPENDS)
def summed_across_pools(task, output, ctx):
    """A figure equals the sum of ledger metrics from different pools, which the caliber forbids."""
    rt, sec = _ctx(task, output, ctx)
    if sec is None or not rt.caliber.no_sum_across_pools:
        return None
    pooled = [m for m in rt.vocabulary if m.pool and m.value is not None]
    groups: dict[str, list] = {}
    for m in pooled:
        groups.setdefault(_unit_key(m.unit), []).append(m)
    combos = []
    for ms in groups.values():
        for r in range(2, min(4, len(ms)) + 1):
            for combo in itertools.combinations(ms, r):
                if len({m.pool for m in combo}) >= 2:
                    combos.append(combo)
    if not combos:
        return None
    known = _known_figures(rt)
    bad = []
    for s in sec.body():
        for f in find_figures(s.text):
            if not f.is_quantity or _sourced(f, rt, known):
                continue
            for combo in combos:
                total = sum(m.value for m in combo)
                if matches_value(f, total, combo[0].unit):
                    parts = " + ".join(f"{m.id} ({m.pool}, {m.display()})" for m in combo)
                    bad.append(f"{s.quote()}: “{f.text}” is {parts}; the caliber forbids summing across pools")
                    break
    return _report(bad, "summed_across_pools") if bad else clean("no figure adds up different pools")


_SCALE_WORD = re.compile(r"(?i)\b(trillion|billion|million|thousand|bn|mn|tn|[BMK])\b")


def _unit_key(unit: str) -> str:
    """Ledger units that can be added up share a key ("USD billion" and "billion USD" do)."""
    base = " ".join(sorted(_SCALE_WORD.sub("", unit).split()))
    return f"{base}@{unit_scale(unit):g}"
