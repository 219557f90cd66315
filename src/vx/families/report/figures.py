"""Figures in report prose: find them, normalise them, compare them with ledger and card values.

A `Figure` is a number as written (``$4.2B``, ``4,200 million USD``, ``23.5%``, ``12.5 GWh``):
its value as printed, its scale word (B/bn/billion → 10⁹ …), its currency, its physical unit
and its printed precision. Years (``2026``), quarters (``Q2``), card ids and ledger tags are not
figures. Comparison is precision-aware: ``4.2`` matches a ledger value of 4.23 (the text rounds to
one decimal) but not 4.5.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import attrs

from vx.families.report.parse import mask_markup

SCALES = {
    "trillion": 1e12,
    "tn": 1e12,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "million": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "m": 1e6,
    "thousand": 1e3,
    "k": 1e3,
}
CURRENCY_PREFIX = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "€": "EUR",
    "eur": "EUR",
    "£": "GBP",
    "gbp": "GBP",
    "¥": "JPY/CNY",
    "jpy": "JPY",
    "cny": "CNY",
    "rmb": "CNY",
    "krw": "KRW",
    "₩": "KRW",
}
CURRENCY_SUFFIX = {
    "usd": "USD",
    "dollars": "USD",
    "eur": "EUR",
    "euros": "EUR",
    "euro": "EUR",
    "gbp": "GBP",
    "pounds": "GBP",
    "jpy": "JPY",
    "yen": "JPY",
    "cny": "CNY",
    "rmb": "CNY",
    "yuan": "CNY",
    "krw": "KRW",
    "won": "KRW",
}
# physical units by kind: a caliber that permits one unit of a kind forbids the others of that kind
UNIT_KINDS = {
    "energy": ("Wh", "kWh", "MWh", "GWh", "TWh"),
    "power": ("W", "kW", "MW", "GW", "TW"),
    "data": ("GB", "TB", "PB", "EB"),
    "mass": ("kg", "t", "kt", "Mt", "tonnes", "tons"),
    "length": ("nm", "km", "miles"),
    "energy_price": ("/kWh", "/MWh"),
    "power_price": ("/W", "/kW", "/MW"),
}
UNIT_KIND = {u: k for k, us in UNIT_KINDS.items() for u in us}
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(UNIT_KIND, key=len, reverse=True))

_NUM = r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_PREFIX = r"(?P<cur>US\$|\$|€|£|¥|₩|(?:USD|EUR|GBP|JPY|CNY|RMB|KRW)\s?)?"
_SCALE = r"(?:\s?(?P<scale>trillion|billion|million|thousand|bn|mn|tn|mm|[BMKkT])(?![A-Za-z]))?"
_PCT = r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b|pp\b|percentage points?\b))?"
_UNIT = rf"(?:\s?(?P<unit>{_UNIT_ALT})(?![A-Za-z]))?"
_MULT = r"(?P<mult>x(?![A-Za-z]))?"
_SUFFIX_CUR = r"(?:\s(?P<scur>USD|EUR|GBP|JPY|CNY|RMB|KRW|dollars|euros?|pounds|yen|yuan|won)\b)?"
FIGURE = re.compile(rf"(?<![\w.,/]){_PREFIX}{_NUM}{_SCALE}{_PCT}{_UNIT}{_MULT}{_SUFFIX_CUR}(?![\w/]|\.\d)")
_YEARISH = re.compile(r"^(19|20)\d\d$")


@attrs.frozen
class Figure:
    value: float  # as printed, without scale
    scale: float  # 1, 1e3, 1e6, 1e9, 1e12
    decimals: int  # printed decimal places
    currency: str | None
    unit: str | None
    percent: bool
    text: str
    start: int
    end: int

    @property
    def magnitude(self) -> float:
        return self.value * self.scale

    @property
    def is_year(self) -> bool:
        return (
            self.scale == 1
            and not self.currency
            and not self.unit
            and not self.percent
            and self.decimals == 0
            and bool(_YEARISH.match(self.text.strip()))
        )

    @property
    def is_quantity(self) -> bool:
        """A figure a reader would take as data (money, a share, a measured amount, a precise number),
        as opposed to a small count ("three vendors") or a year."""
        if self.is_year:
            return False
        return bool(
            self.currency or self.unit or self.percent or self.scale != 1 or self.decimals > 0 or self.value >= 100
        )


def find_figures(text: str) -> list[Figure]:
    """Every number in `text` except years, quarters, card ids and ledger tags (offsets kept)."""
    masked = mask_markup(text)
    out: list[Figure] = []
    for m in FIGURE.finditer(masked):
        num = m.group("num")
        if m.start("num") > 0 and masked[m.start("num") - 1] in "QH" and not m.group("cur"):
            continue  # Q2, H1
        value = float(num.replace(",", ""))
        decimals = len(num.split(".")[1]) if "." in num else 0
        scale_word = (m.group("scale") or "").lower()
        scale = SCALES.get(scale_word, 1e12 if scale_word == "t" else 1.0)  # "T" after a number: trillion
        cur = m.group("cur")
        currency = CURRENCY_PREFIX.get(cur.strip().lower()) if cur else None
        if m.group("scur"):
            currency = currency or CURRENCY_SUFFIX.get(m.group("scur").lower())
        f = Figure(
            value,
            scale,
            decimals,
            currency,
            m.group("unit"),
            bool(m.group("pct")),
            m.group(0).strip(),
            m.start(),
            m.end(),
        )
        if f.is_year:
            continue
        out.append(f)
    return out


_UNIT_SCALE = re.compile(r"\b(trillion|billion|million|thousand|bn|mn|tn|[BMKk])\b", re.IGNORECASE)


def unit_scale(unit: str) -> float:
    """The scale a ledger unit implies: "USD billion" → 1e9, "GWh" → 1, "%" → 1."""
    m = _UNIT_SCALE.search(unit or "")
    if not m:
        return 1.0
    return SCALES.get(m.group(1).lower(), 1.0)


def tolerance(fig: Figure, target: float) -> float:
    """How far a printed figure may be from the true value: half a unit of its last printed
    digit, and never less than 0.5% of the value."""
    return max(0.5 * 10 ** (-fig.decimals), 0.005 * abs(target)) + 1e-9


def matches_value(fig: Figure, value: float, unit: str = "") -> bool:
    """Does the printed figure state `value` (in the ledger `unit`), up to its printed precision?"""
    if value is None or not math.isfinite(value):
        return False
    uscale = unit_scale(unit)
    candidates = [value]  # the figure prints the value as registered ("4.2" for 4.2 USD billion)
    if fig.scale != 1 or uscale != 1:
        candidates.append(value * uscale / fig.scale)  # scale-aware ("$4,200 million")
    return any(abs(fig.value - c) <= tolerance(fig, c) for c in candidates)


def matches_number(fig: Figure, other: Figure) -> bool:
    """Do two printed figures state the same quantity (scales reconciled)?"""
    if fig.percent != other.percent:
        return False
    target = other.magnitude / fig.scale
    if abs(fig.value - target) <= max(tolerance(fig, target), tolerance(other, other.value) * other.scale / fig.scale):
        return True
    # one side printed without its scale word ("4.2" vs "$4.2 billion")
    return (fig.scale == 1 or other.scale == 1) and abs(fig.value - other.value) <= tolerance(fig, other.value)


def source_figures(texts: Iterable[str]) -> list[Figure]:
    out: list[Figure] = []
    for t in texts:
        out.extend(find_figures(t))
    return out


def numeral_near(text: str, start: int, end: int, before: int = 40, after: int = 12) -> Figure | None:
    """The closest figure ending within `before` characters before [start, end), or starting within
    `after` characters after it (years excluded)."""
    best: tuple[int, Figure] | None = None
    for f in find_figures(text):
        if f.end <= start:
            gap = start - f.end
            if gap <= before and (best is None or gap < best[0]):
                best = (gap, f)
        elif f.start >= end:
            gap = f.start - end
            if gap <= after and (best is None or gap < best[0]):
                best = (gap, f)
    return best[1] if best else None
