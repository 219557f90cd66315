"""Systematic degradations of golden sections: outputs to grade, one documented failure class each.

Each degradation takes a validated task, its golden section and a seeded `random.Random`, and
returns the degraded markdown — or None when the task offers nothing to degrade that way (no
weak card to overclaim, no pools to sum…). Every degradation is deterministic given the RNG and
names its failure class (a key of `taxonomy.TAXONOMY`); the builder records it in the item's
``meta["degradation"]`` (dev and locked only: train items carry no hint of their class).

The classes, and how the golden text is broken:

=========================== =================================================================
uncited_claim               citations removed from one or two claim sentences
unknown_citation            a citation rewritten to a card id the task does not have
metric_uncovered            a key figure's sentences dropped (its tag kept nowhere)
value_erasure               the value written before a ledger tag deleted, leaving the bare tag —
                            the tag-without-value pattern by which evolved skills gamed a
                            tag-counting rubric in the research
value_mismatch              the number beside a ledger tag changed
overclaimed_weak_evidence   hedges and caveats removed from sentences citing weak cards
one_sided_conflict          every sentence (or clause) citing opposing cards removed
missing_tldr                the TL;DR removed
caliber_unit_violation      a figure converted to a currency or unit the caliber forbids
fabricated_figure           a sentence with an invented figure added under a real citation
summed_across_pools         a sentence adding up figures of different pools added
unhedged_forecast           an invented, confidently worded forecast added under a real citation
boilerplate_padding         generic filler sentences added
truncated_section           the section cut off mid-sentence
no_title_or_not_markdown    the title heading removed
=========================== =================================================================
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

import attrs

from vx.families.report.figures import find_figures, matches_value, source_figures
from vx.families.report.model import ReportTask
from vx.families.report.ops.static import HEDGES, is_claim
from vx.families.report.parse import CITATION, TAG, TLDR, parse_section


@attrs.frozen
class Degradation:
    name: str
    failure_class: str
    fn: Callable[[ReportTask, str, random.Random], str | None] = attrs.field(repr=False)
    description: str = ""

    def __call__(self, task: ReportTask, text: str, rng: random.Random) -> str | None:
        out = self.fn(task, text, rng)
        return None if out is None or out.strip() == text.strip() else _tidy(out)


DEGRADATIONS: dict[str, Degradation] = {}


def degradation(failure_class: str, name: str | None = None):
    def wrap(fn):
        doc = (fn.__doc__ or "").strip().splitlines()
        d = Degradation(name or fn.__name__, failure_class, fn, doc[0] if doc else "")
        DEGRADATIONS[d.failure_class] = d
        return fn

    return wrap


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    text = re.sub(r" +([.,;:])", r"\1", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def _paragraphs(text: str) -> list[str]:
    return text.strip().split("\n\n")


def _join(paras: list[str]) -> str:
    return "\n\n".join(p for p in paras if p.strip()) + "\n"


def _is_tldr(para: str) -> bool:
    return bool(TLDR.match(re.sub(r"^[#>\-*_\s]+", "", para)))


def _sentences_in(para: str) -> list[str]:
    """Sentences of one raw paragraph, as substrings of it (markup kept)."""
    from vx.families.report.parse import split_sentences

    return [s for _, s in split_sentences(para)]


def _body_indices(paras: list[str]) -> list[int]:
    return [i for i, p in enumerate(paras) if not p.lstrip().startswith("#") and not _is_tldr(p)]


def _drop_where(para: str, pred: Callable[[str], bool]) -> str:
    """`para` without the parts `pred` selects: lines of a list or table, sentences of prose.
    A table left with no data row, or a list with no item, disappears."""
    if re.match(r"\s*([-*+|]|\d+[.)])", para):
        lines = [ln for ln in para.splitlines() if not pred(ln)]
        rows = [ln for ln in lines if ln.lstrip().startswith("|") and not re.fullmatch(r"[\s|:-]+", ln)]
        if para.lstrip().startswith("|") and len(rows) <= 1:
            return ""
        return "\n".join(lines)
    return " ".join(s.strip() for s in _sentences_in(para) if not pred(s))


def _prose_indices(paras: list[str]) -> list[int]:
    """Body paragraphs of running prose (not lists, tables or quotes): where sentences can be added."""
    return [i for i in _body_indices(paras) if not re.match(r"\s*([-*+|>]|\d+[.)])", paras[i])]


# ------------------------------------------------------------------------------------------------ grounding


@degradation("uncited_claim")
def drop_citations(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Remove the citations of one or two claim sentences in the body."""
    paras = _paragraphs(text)
    spots = []
    for i in _body_indices(paras):
        for s in _sentences_in(paras[i]):
            sec = parse_section(s)
            if sec.sentences and is_claim(sec.sentences[0]) and CITATION.search(s):
                spots.append((i, s))
    if not spots:
        return None
    for i, s in rng.sample(spots, k=min(len(spots), rng.choice((1, 2)))):
        paras[i] = paras[i].replace(s, CITATION.sub("", s), 1)
    return _join(paras)


@degradation("unknown_citation")
def unknown_citation(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Rewrite one citation to a card id that does not exist in the task."""
    known = {c.id for c in task.cards}
    cites = list(CITATION.finditer(text))
    if not cites:
        return None
    m = rng.choice(cites)
    cid = _search(r"E\d{3,5}", m.group(0)).group(0)
    width = len(cid) - 1
    fresh = [f"E{(int(cid[1:]) + bump) % 10**width:0{width}d}" for bump in (90, 80, 70, 60, 50, 11, 22)]
    new = next((c for c in fresh if c not in known), None)
    if new is None:
        return None
    return text[: m.start()] + m.group(0).replace(cid, new, 1) + text[m.end() :]


# ------------------------------------------------------------------------------------------------ ledger


def _tag_value_spans(text: str, task: ReportTask) -> list[tuple[int, int, str]]:
    """(value start, tag end, metric id) for every tag preceded by its numeric value."""
    out = []
    for m in TAG.finditer(text):
        metric = task.metric(m.group(1))
        if metric is None or metric.value is None:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        figs = [f for f in find_figures(text[line_start : m.start()]) if m.start() - (line_start + f.end) <= 4]
        if figs:
            out.append((line_start + figs[-1].start, m.end(), m.group(1)))
    return out


@degradation("metric_uncovered")
def drop_metric(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Drop a key figure: its body sentences go, and its tag is removed from the TL;DR."""
    tagged = sorted({m.group(1) for m in TAG.finditer(text) if task.metric(m.group(1))})
    if not tagged:
        return None
    mid = rng.choice(tagged)
    tag_re = re.compile(r"\s*\{\s*" + mid + r"\s*\}")
    paras = _paragraphs(text)
    for i, p in enumerate(paras):
        if p.lstrip().startswith("#") or not tag_re.search(p):
            continue
        if _is_tldr(p):
            paras[i] = tag_re.sub("", p)
        else:
            paras[i] = _drop_where(p, lambda part: bool(tag_re.search(part)))
    out = _join(paras)
    return out if not tag_re.search(out) else None


@degradation("value_erasure")
def erase_values(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Write ledger tags in place of their numbers (the rubric-gaming pattern): the value before
    at least half of the tags is deleted."""
    spans = _tag_value_spans(text, task)
    if not spans:
        return None
    k = max(1, math.ceil(len(spans) / 2))
    chosen = sorted(rng.sample(spans, k=k), reverse=True)
    for start, _, _ in chosen:
        tag_at = text.index("{", start)
        text = text[:start] + text[tag_at:]
    return text


def _search(pattern: str, text: str) -> re.Match[str]:
    """The first match of `pattern` in `text`, which the caller knows is there (a figure, a citation id)."""
    found = re.search(pattern, text)
    if found is None:
        raise ValueError(f"no {pattern!r} in {text[:80]!r}")
    return found


@degradation("value_mismatch")
def perturb_value(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Change the number written beside one ledger tag."""
    spans = _tag_value_spans(text, task)
    if not spans:
        return None
    start, end, mid = rng.choice(spans)
    seg = text[start:end]
    f = find_figures(seg)[0]
    metric = task.metric(mid)
    if metric is None or metric.value is None:
        return None
    known = source_figures([c.claim for c in task.cards] + [c.quote for c in task.cards])
    for factor in rng.sample([1.18, 0.82, 1.27, 0.74, 1.35], 5):
        v = f.value * factor
        new = f"{v:,.{f.decimals}f}" if f.value >= 1000 else f"{v:.{f.decimals}f}"
        probe = find_figures(new)[0]
        if not matches_value(probe, metric.value, metric.unit) and not any(
            abs(probe.value - k.value) < 1e-9 for k in known
        ):
            num = _search(r"\d[\d,]*(?:\.\d+)?", seg[f.start : f.end])
            a = start + f.start + num.start()
            return text[:a] + new + text[a + len(num.group(0)) :]
    return None


# ------------------------------------------------------------------------------------------------ calibration

_CAVEAT = re.compile(r"(,|;)\s+(?:but|which|a|an|this|though|although)\b[^\[\]]*?(?=\s*\[E)")
_OVERCLAIM = [
    (re.compile(r"\b(reportedly|possibly|potentially)\s+", re.I), ""),
    (re.compile(r"\b(may|might|could)\b(\s+not\b)?", re.I), "will"),
    (re.compile(r"\bsuggests\b", re.I), "shows"),
    (re.compile(r"\bclaims\b", re.I), "confirms"),
    (re.compile(r"\bclaim\b", re.I), "finding"),
    (re.compile(r"\b(an |a )?unverified\s+", re.I), "a "),
    (re.compile(r"\bestimated\s+", re.I), ""),
    (re.compile(r"\baccording to [^,]+,\s*", re.I), ""),
    (re.compile(r"\bis (disputed|contested|unconfirmed)\b", re.I), "is confirmed"),
    (re.compile(r"\bunlikely\b", re.I), "certain"),
    (re.compile(r"\blikely\b", re.I), "certain"),
    (re.compile(r"\bappears? to\s+", re.I), ""),
]


@degradation("overclaimed_weak_evidence")
def strip_hedges(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Remove hedges and caveats from sentences that rest on low-credibility or disputed cards."""
    weak = {c.id for c in task.cards if c.weak}
    if not weak:
        return None
    changed = False
    for s in [s for p in _paragraphs(text) for s in _sentences_in(p)]:
        if not weak & set(re.findall(r"E\d{3,5}", " ".join(m.group(0) for m in CITATION.finditer(s)))):
            continue
        new = _CAVEAT.sub("", s)
        for pat, rep in _OVERCLAIM:
            new = pat.sub(rep, new)
        if HEDGES.search(CITATION.sub("", new)) or new == s:
            continue
        text = text.replace(s.strip(), new.strip(), 1)
        changed = True
    return text if changed else None


@degradation("one_sided_conflict")
def drop_opposing(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Remove every sentence (in the TL;DR: every clause) that cites an opposing card."""
    opp = {c.id for c in task.cards_by_stance("opposing")}
    sup = {c.id for c in task.cards_by_stance("supporting")}
    if not opp or not sup:
        return None

    def cites_opp(s: str) -> bool:
        return bool(opp & set(re.findall(r"E\d{3,5}", " ".join(m.group(0) for m in CITATION.finditer(s)))))

    paras = _paragraphs(text)
    for i, p in enumerate(paras):
        if p.lstrip().startswith("#") or not cites_opp(p):
            continue
        if _is_tldr(p):
            # drop the clause holding the opposing citation, from its separator to the citation
            for m in reversed(list(CITATION.finditer(p))):
                if not cites_opp(m.group(0)):
                    continue
                head = p[: m.start()]
                cut = max(
                    head.rfind("; "),
                    head.rfind(", but "),
                    head.rfind(", while "),
                    head.rfind(", though "),
                    head.rfind(", yet "),
                    head.rfind(", and "),
                    head.rfind(" but "),
                )
                if cut <= 0:
                    p = p[: m.start()] + p[m.end() :]
                else:
                    p = p[:cut] + p[m.end() :]
            paras[i] = p
        else:
            paras[i] = _drop_where(p, cites_opp)
    out = _join(paras)
    cited = set(parse_section(out).cited_cards())
    return None if cites_opp(out) or not cited & sup else out


@degradation("missing_tldr")
def drop_tldr(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Remove the TL;DR paragraph (or heading and its paragraph)."""
    paras = _paragraphs(text)
    for i, p in enumerate(paras):
        if _is_tldr(p):
            if p.lstrip().startswith("#") and i + 1 < len(paras):
                del paras[i + 1]
            del paras[i]
            return _join(paras)
    return None


# ------------------------------------------------------------------------------------------------ caliber

_CONVERT_CURRENCY = {"USD": ("€", 0.92), "EUR": ("$", 1.09)}
_CONVERT_UNIT = {
    "GWh": ("MWh", 1000),
    "TWh": ("GWh", 1000),
    "GW": ("MW", 1000),
    "kW": ("W", 1000),
    "kt": ("t", 1000),
    "MWh": ("kWh", 1000),
}


@degradation("caliber_unit_violation")
def convert_units(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Restate one figure in a currency or unit the caliber does not allow (converted correctly)."""
    cal = task.caliber
    cands = []
    for m in re.finditer(r"[^\n]+", text):
        line = m.group(0)
        for f in find_figures(line):
            if cal.currency and f.currency == cal.currency and cal.currency in _CONVERT_CURRENCY:
                cands.append((m.start(), f, "currency"))
            elif f.unit and f.unit in cal.units and f.unit in _CONVERT_UNIT:
                cands.append((m.start(), f, "unit"))
    if not cands:
        return None
    off, f, kind = rng.choice(cands)
    if kind == "currency" and cal.currency is not None:
        sym, rate = _CONVERT_CURRENCY[cal.currency]
        v = f.value * rate
        scale = {1e12: "T", 1e9: "B", 1e6: "M", 1e3: "K"}.get(f.scale, "")
        word = re.search(r"\s(trillion|billion|million|thousand)\b", f.text)
        suffix = word.group(0) if word else scale
        dec = max(f.decimals, 1 if v < 100 else 0)
        new = f"{sym}{v:,.{dec}f}{suffix}"
    else:
        unit, mult = _CONVERT_UNIT[str(f.unit)]
        v = f.value * mult
        new = f"{v:,.0f} {unit}"
    a = off + f.start
    return text[:a] + new + text[off + f.end :]


# ------------------------------------------------------------------------------------------------ figures

_FABRICATIONS = (
    "Analysts put growth over the next two years at {pct}% [{card}].",
    "The segment's margin widened to {pct}% over the same period [{card}].",
    "Roughly {pct}% of buyers surveyed plan to increase exposure next year [{card}].",
    "Independent estimates place the annual growth rate at {pct}% [{card}].",
)


def _fresh_pct(task: ReportTask, rng: random.Random) -> str:
    known = source_figures([c.claim for c in task.cards] + [c.quote for c in task.cards])
    values = {k.value for k in known} | {m.value for m in task.vocabulary if m.value is not None}
    while True:
        v = round(rng.uniform(11, 79), 1)
        if all(abs(v - x) > 1.0 for x in values):
            return f"{v:.1f}"


def _insert_after_first_body_sentence(text: str, sentence: str) -> str:
    paras = _paragraphs(text)
    body = _prose_indices(paras)
    if not body:
        return _join(paras + [sentence])
    i = body[0]
    parts = _sentences_in(paras[i])
    parts.insert(1, sentence + " ")
    paras[i] = "".join(p if p.endswith(" ") else p + " " for p in parts).strip()
    return _join(paras)


def _strong_supporting(task: ReportTask) -> list:
    """Cards a fabrication can hide behind: supporting and not weak (else any non-weak card)."""
    return (
        [c for c in task.cards_by_stance("supporting") if not c.weak]
        or [c for c in task.cards if not c.weak]
        or list(task.cards)
    )


@degradation("fabricated_figure")
def fabricate_figure(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Add a sentence with an invented percentage, cited to a real supporting card."""
    cards = _strong_supporting(task)
    sentence = rng.choice(_FABRICATIONS).format(pct=_fresh_pct(task, rng), card=rng.choice(cards).id)
    return _insert_after_first_body_sentence(text, sentence)


@degradation("summed_across_pools")
def sum_pools(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Add a sentence that adds up two pools' figures, which the caliber forbids."""
    if not task.caliber.no_sum_across_pools:
        return None
    pooled = [m for m in task.vocabulary if m.pool and m.value is not None]
    pairs = [(a, b) for i, a in enumerate(pooled) for b in pooled[i + 1 :] if a.pool != b.pool and a.unit == b.unit]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    spans = {mid: (s, e) for s, e, mid in _tag_value_spans(text, task)}
    if a.id not in spans:
        return None
    s, e = spans[a.id]
    seg = text[s:e]
    f = find_figures(seg)[0]
    assert a.value is not None and b.value is not None  # (pooled metrics have values)
    total = a.value + b.value
    dec = max(f.decimals, len(f"{b.value:g}".split(".")[1]) if "." in f"{b.value:g}" else 0)
    num = f"{total:,.{dec}f}" if total >= 1000 else f"{total:.{dec}f}"
    raw = seg[f.start : f.end]
    shown = re.sub(r"\d[\d,]*(?:\.\d+)?", num, raw, count=1)
    cites = []
    for m in (a, b):
        for sent in [x for p in _paragraphs(text) for x in _sentences_in(p)]:
            if m.tag in sent and (cited := CITATION.search(sent)):
                cites.append(cited.group(0))
                break
    sentence = f"Taken together, the {a.pool} and {b.pool} pools amount to {shown} {' '.join(cites)}."
    return _insert_after_first_body_sentence(text, sentence)


# ------------------------------------------------------------------------------------------------ style

_FORECASTS = (
    "This momentum will certainly continue, and the market is guaranteed to keep expanding through the decade "
    "[{card}].",
    "There is no doubt that demand will keep accelerating and every constraint will be resolved [{card}].",
    "The trend is irreversible and will inevitably define the next five years [{card}].",
)
_FILLER = (
    "It is important to note that the landscape is complex and constantly evolving.",
    "Stakeholders should continue to monitor developments closely going forward.",
    "In today's fast-paced environment, many factors need to be taken into consideration.",
    "As always, the situation remains dynamic and subject to a wide range of influences.",
    "Ultimately, success will depend on a variety of considerations across the ecosystem.",
)


@degradation("unhedged_forecast")
def confident_forecast(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Append an invented, confidently worded forecast cited to a real card (fabricated conviction)."""
    cards = _strong_supporting(task)
    sentence = rng.choice(_FORECASTS).format(card=rng.choice(cards).id)
    paras = _paragraphs(text)
    prose = _prose_indices(paras)
    if not prose:
        return None
    paras[prose[-1]] = paras[prose[-1]].rstrip() + " " + sentence
    return _join(paras)


@degradation("boilerplate_padding")
def pad_boilerplate(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Add two or three generic filler sentences that carry no evidence."""
    filler = rng.sample(_FILLER, k=rng.choice((2, 3)))
    paras = _paragraphs(text)
    body = _prose_indices(paras)
    if not body:
        return None
    paras[body[0]] = paras[body[0]].rstrip() + " " + filler[0]
    paras.append(" ".join(filler[1:]))
    return _join(paras)


@degradation("truncated_section")
def truncate(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Cut the section off mid-sentence at 55–75% of its length."""
    body_start = text.find("\n\n")
    if body_start < 0:
        return None
    cut = int(len(text) * rng.uniform(0.55, 0.75))
    cut = max(cut, body_start + 2)
    # back up to a word boundary that is not inside a citation or tag, and not at a sentence end
    while cut > body_start and (not text[cut].isspace() or text[cut - 1] in ".!?]}"):
        cut -= 1
    return text[:cut].rstrip(" ,;:") + "\n" if cut > body_start else None


@degradation("no_title_or_not_markdown")
def drop_title(task: ReportTask, text: str, rng: random.Random) -> str | None:
    """Remove the title heading."""
    lines = text.strip().splitlines()
    if not lines or not lines[0].startswith("#"):
        return None
    return "\n".join(lines[1:]).strip() + "\n"


def degrade(task: ReportTask, failure_class: str, rng: random.Random, text: str | None = None) -> str | None:
    """The golden section (or `text`) degraded by the class's degradation, or None if inapplicable."""
    if failure_class not in DEGRADATIONS:
        raise KeyError(f"no degradation for failure class {failure_class!r}; known: {', '.join(DEGRADATIONS)}")
    src = text if text is not None else task.golden
    if src is None:
        raise ValueError(f"task {task.id} has no golden section to degrade")
    return DEGRADATIONS[failure_class](task, src, rng)


def applicable(task: ReportTask, seed: int = 0) -> list[str]:
    """The failure classes whose degradation applies to this task's golden section."""
    return [c for c in DEGRADATIONS if degrade(task, c, random.Random(f"{seed}:{task.id}:{c}")) is not None]
