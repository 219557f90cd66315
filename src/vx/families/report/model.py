"""The report task's data model: what a section writer is given, validated.

A report task asks for one markdown *section* of an analyst report. The writer receives

* a **title** and a **purpose** (what the section must establish);
* a **caliber** contract: the currency, the permitted units, the reference date and the
  accounting rules (e.g. market sizes of different pools must never be summed);
* audited **evidence cards** (``E0103``): a one-sentence claim, a verbatim quote, its source and
  date, its stance towards the section's thesis and the auditor's credibility verdict;
* a **metric vocabulary** (the ledger): the section's key figures (``M03``), each with a name,
  a value and a unit, optionally the *pool* (market segment) it measures.

A *golden section* is a hand-written reference answer. It is not part of what a verifier may
see: `ReportTask.record()` (a line of ``tasks.jsonl``) leaves it out.

`ReportTask.from_dict` validates a task and raises `TaskError` listing every problem, each with
where it is (``E0103.stance``) and what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from vx.errors import DataError

CARD_ID = re.compile(r"^E\d{3,5}$")
METRIC_ID = re.compile(r"^M\d{2,4}$")
STANCES = ("supporting", "opposing", "neutral")
CREDIBILITY = ("high", "medium", "low", "disputed")
WEAK_CREDIBILITY = frozenset({"low", "disputed"})
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$|^\d{4} Q[1-4]$")


class TaskError(DataError, ValueError):
    """A report task that does not validate; `problems` lists every issue ("where: what")."""

    def __init__(self, problems: list[str], where: str = "") -> None:
        self.problems = list(problems)
        self.where = where
        head = f"report task {where}: " if where else "report task: "
        if len(problems) == 1:
            super().__init__(head + problems[0])
        else:
            super().__init__(head + f"{len(problems)} problems\n  " + "\n  ".join(problems))


@attrs.frozen
class Card:
    """One audited unit of evidence."""

    id: str
    claim: str
    quote: str
    source: str
    date: str
    stance: str
    credibility: str

    @property
    def weak(self) -> bool:
        """Low or disputed credibility: a section must hedge whatever rests on it."""
        return self.credibility in WEAK_CREDIBILITY

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Metric:
    """A registered key figure: the section must state `value` beside the inline tag ``{id}``."""

    id: str
    name: str
    value: float | None
    unit: str
    pool: str | None = None

    @property
    def tag(self) -> str:
        return "{" + self.id + "}"

    def to_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        if d["pool"] is None:
            del d["pool"]
        return d

    def display(self) -> str:
        """`value unit` as a person would read it (``4.2 USD billion``)."""
        if self.value is None:
            return f"(no value) {self.unit}".strip()
        v = f"{self.value:,.6g}" if abs(self.value) >= 1000 else f"{self.value:g}"
        return f"{v} {self.unit}".strip()


@attrs.frozen
class Caliber:
    """The section's accounting contract.

    `currency` (ISO code) is the only currency money may be stated in; `units` are the permitted
    physical units (a figure in another unit of the same kind — MWh where GWh is permitted —
    violates the contract); `as_of` is the reference date; `no_sum_across_pools` forbids adding
    up figures of different pools of the vocabulary.
    """

    text: str
    currency: str | None = None
    units: tuple[str, ...] = ()
    as_of: str | None = None
    no_sum_across_pools: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = attrs.asdict(self)
        d["units"] = list(self.units)
        return {k: v for k, v in d.items() if v is not None}


@attrs.frozen
class ReportTask:
    """A validated report-section task (see the module docstring)."""

    id: str
    title: str
    purpose: str
    caliber: Caliber
    cards: tuple[Card, ...]
    vocabulary: tuple[Metric, ...]
    golden: str | None = None
    topic: str = ""

    # --- look-ups -----------------------------------------------------------------------------
    def card(self, card_id: str) -> Card | None:
        return self._cards.get(card_id)

    def metric(self, metric_id: str) -> Metric | None:
        return self._metrics.get(metric_id)

    @property
    def _cards(self) -> dict[str, Card]:
        return {c.id: c for c in self.cards}

    @property
    def _metrics(self) -> dict[str, Metric]:
        return {m.id: m for m in self.vocabulary}

    def cards_by_stance(self, stance: str) -> list[Card]:
        return [c for c in self.cards if c.stance == stance]

    # --- (de)serialisation --------------------------------------------------------------------
    def record(self) -> dict[str, Any]:
        """The task's line in tasks.jsonl: what a verifier may see (no golden section)."""
        rec = {
            "id": self.id,
            "title": self.title,
            "purpose": self.purpose,
            "caliber": self.caliber.to_dict(),
            "cards": [c.to_dict() for c in self.cards],
            "vocabulary": [m.to_dict() for m in self.vocabulary],
        }
        if self.topic:
            rec["topic"] = self.topic
        return rec

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "") -> ReportTask:
        """Validate a task record (tasks.jsonl line or hand-written source); raises TaskError."""
        problems: list[str] = []
        if not isinstance(data, Mapping):
            raise TaskError([f"expected an object, got {type(data).__name__}"], where)
        tid = data.get("id")
        where = where or (str(tid) if tid else "")
        if not isinstance(tid, str) or not tid.strip():
            problems.append("'id' must be a non-empty string")
        for key in ("title", "purpose"):
            if not isinstance(data.get(key), str) or not data[key].strip():
                problems.append(f"'{key}' must be a non-empty string")
        caliber = _caliber(data.get("caliber"), problems)
        cards = _cards(data.get("cards"), problems)
        vocabulary = _vocabulary(data.get("vocabulary"), problems)
        golden = data.get("golden")
        if golden is not None and (not isinstance(golden, str) or not golden.strip()):
            problems.append("'golden' (the reference section), when given, must be non-empty markdown text")
        topic = data.get("topic", "")
        if not isinstance(topic, str):
            problems.append("'topic' must be a string")
        if problems or not isinstance(tid, str):
            raise TaskError(problems, where)
        return cls(
            tid,
            data["title"].strip(),
            data["purpose"].strip(),
            caliber,
            cards,
            vocabulary,
            golden.strip() + "\n" if isinstance(golden, str) else None,
            topic,
        )


def _caliber(raw: Any, problems: list[str]) -> Caliber:
    if isinstance(raw, str) and raw.strip():
        return Caliber(raw.strip())
    if not isinstance(raw, Mapping):
        problems.append("'caliber' must be an object with at least 'text' (the contract as written)")
        return Caliber("")
    known = {"text", "currency", "units", "as_of", "no_sum_across_pools"}
    unknown = set(raw) - known
    if unknown:
        problems.append(f"caliber: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    text = raw.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append("caliber.text must state the contract in words")
        text = ""
    currency = raw.get("currency")
    if currency is not None and (not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency)):
        problems.append(f"caliber.currency must be a three-letter ISO code such as USD, not {currency!r}")
        currency = None
    units = raw.get("units", [])
    if not isinstance(units, (list, tuple)) or not all(isinstance(u, str) and u.strip() for u in units):
        problems.append('caliber.units must be a list of unit names such as ["GWh", "GW"]')
        units = []
    as_of = raw.get("as_of")
    if as_of is not None and (not isinstance(as_of, str) or not DATE.match(as_of)):
        problems.append(f"caliber.as_of must be a date like 2026-06-30, 2026-06 or 2026 Q2, not {as_of!r}")
        as_of = None
    nosum = raw.get("no_sum_across_pools", False)
    if not isinstance(nosum, bool):
        problems.append("caliber.no_sum_across_pools must be true or false")
        nosum = False
    return Caliber(text.strip(), currency, tuple(u.strip() for u in units), as_of, nosum)


def _cards(raw: Any, problems: list[str]) -> tuple[Card, ...]:
    if not isinstance(raw, list) or not raw:
        problems.append("'cards' must be a non-empty list of evidence cards")
        return ()
    out: list[Card] = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        here = f"cards[{i}]"
        if not isinstance(c, Mapping):
            problems.append(f"{here}: expected an object")
            continue
        cid = c.get("id")
        if not isinstance(cid, str) or not CARD_ID.match(cid):
            problems.append(f"{here}.id must look like E0103 (E and 3–5 digits), not {cid!r}")
            continue
        here = cid
        if cid in seen:
            problems.append(f"{here}: duplicate card id")
            continue
        seen.add(cid)
        bad = False
        for key in ("claim", "quote", "source", "date"):
            if not isinstance(c.get(key), str) or not c[key].strip():
                problems.append(f"{here}.{key} must be a non-empty string")
                bad = True
        if isinstance(c.get("date"), str) and c["date"].strip() and not DATE.match(c["date"].strip()):
            problems.append(f"{here}.date must be a date like 2026-04-12, 2026-04 or 2026 Q1, not {c['date']!r}")
            bad = True
        if c.get("stance") not in STANCES:
            problems.append(f"{here}.stance must be one of {', '.join(STANCES)}, not {c.get('stance')!r}")
            bad = True
        if c.get("credibility") not in CREDIBILITY:
            problems.append(f"{here}.credibility must be one of {', '.join(CREDIBILITY)}, not {c.get('credibility')!r}")
            bad = True
        extra = set(c) - {"id", "claim", "quote", "source", "date", "stance", "credibility"}
        if extra:
            problems.append(f"{here}: unknown key(s) {', '.join(sorted(extra))}")
            bad = True
        if not bad:
            out.append(
                Card(
                    cid,
                    c["claim"].strip(),
                    c["quote"].strip(),
                    c["source"].strip(),
                    c["date"].strip(),
                    c["stance"],
                    c["credibility"],
                )
            )
    return tuple(out)


def _vocabulary(raw: Any, problems: list[str]) -> tuple[Metric, ...]:
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        problems.append("'vocabulary' must be a list of metrics {id, name, value, unit}")
        return ()
    out: list[Metric] = []
    seen: set[str] = set()
    for i, m in enumerate(raw):
        here = f"vocabulary[{i}]"
        if not isinstance(m, Mapping):
            problems.append(f"{here}: expected an object")
            continue
        mid = m.get("id")
        if not isinstance(mid, str) or not METRIC_ID.match(mid):
            problems.append(f"{here}.id must look like M03 (M and 2–4 digits), not {mid!r}")
            continue
        here = mid
        if mid in seen:
            problems.append(f"{here}: duplicate metric id")
            continue
        seen.add(mid)
        bad = False
        if not isinstance(m.get("name"), str) or not m["name"].strip():
            problems.append(f"{here}.name must be a non-empty string")
            bad = True
        value = m.get("value")
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            problems.append(f"{here}.value must be a finite number (or null for a non-numeric metric), not {value!r}")
            bad = True
        if not isinstance(m.get("unit", ""), str):
            problems.append(f'{here}.unit must be a string such as "USD billion" or "%"')
            bad = True
        pool = m.get("pool")
        if pool is not None and (not isinstance(pool, str) or not pool.strip()):
            problems.append(f"{here}.pool, when given, must name the market pool the figure measures")
            bad = True
        extra = set(m) - {"id", "name", "value", "unit", "pool"}
        if extra:
            problems.append(f"{here}: unknown key(s) {', '.join(sorted(extra))}")
            bad = True
        if not bad:
            out.append(
                Metric(
                    mid,
                    m["name"].strip(),
                    None if value is None else float(value),
                    m.get("unit", "").strip(),
                    pool.strip() if pool else None,
                )
            )
    return tuple(out)


def task_of(task: Mapping[str, Any], ctx: dict | None = None) -> ReportTask:
    """The validated `ReportTask` of a task record, cached in an op context."""
    if isinstance(task, ReportTask):
        return task
    if ctx is not None and isinstance(ctx.get("report_task"), ReportTask) and ctx.get("report_task_id") == id(task):
        return ctx["report_task"]
    rt = ReportTask.from_dict(task)
    if ctx is not None:
        ctx["report_task"], ctx["report_task_id"] = rt, id(task)
    return rt
