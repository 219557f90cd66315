"""Schema catalogs: what tables and columns a warehouse has, as data and as prompt text.

A `Catalog` is plain data (it travels inside task records as JSON): tables in order, each with
its columns as ``(name, TYPE)``, plus a few sample values for date-like columns — where a model
most often guesses the format wrong (``'2021-01-01'`` vs an epoch number vs ``'January'``).
`render` prints it one table per line, ``name:TYPE`` per column::

    flight(flight_id:BIGINT, departure_time:BIGINT e.g. 1577836800 | 1577844000, airline_code:TEXT)

Identifier look-ups are case-insensitive, as unquoted identifiers are in the warehouses used here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

DATE_TYPES = (
    "DATE",
    "TIME",
    "TIMESTAMP",
    "DATETIME",
    "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMP_NTZ",
    "TIMESTAMP_LTZ",
    "TIMESTAMP_TZ",
    "INTERVAL",
)
_DATE_NAME = re.compile(r"(^|_)(date|time|year|month|day|dt|ts|timestamp|term|semester)(_|$)|_at$|_on$", re.I)
N_SAMPLES = 3


def is_date_like(name: str, type_: str) -> bool:
    """A column that holds dates or times: by type, or by a date-ish name (epochs stored as numbers,
    month names stored as text)."""
    t = type_.upper()
    return any(t.startswith(d) for d in DATE_TYPES) or bool(_DATE_NAME.search(name))


@attrs.frozen
class Catalog:
    tables: Mapping[str, tuple[tuple[str, str], ...]]  # table -> ((column, TYPE), ...)
    samples: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)  # "table.column" -> sample values as text

    # --- look-ups -----------------------------------------------------------------------------
    def table(self, name: str) -> str | None:
        """The catalog's spelling of a table name, or None."""
        low = name.lower()
        return next((t for t in self.tables if t.lower() == low), None)

    def columns(self, table: str) -> list[str]:
        t = self.table(table)
        return [c for c, _ in self.tables[t]] if t else []

    def has_column(self, table: str, column: str) -> bool:
        return column.lower() in {c.lower() for c in self.columns(table)}

    def column_type(self, table: str, column: str) -> str | None:
        t = self.table(table)
        if t is None:
            return None
        return next((ty for c, ty in self.tables[t] if c.lower() == column.lower()), None)

    def all_columns(self) -> set[str]:
        return {c.lower() for cols in self.tables.values() for c, _ in cols}

    # --- (de)serialisation -------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "tables": {t: [[c, ty] for c, ty in cols] for t, cols in self.tables.items()},
            "samples": {k: list(v) for k, v in self.samples.items()},
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Catalog:
        tables = {str(t): tuple((str(c), str(ty)) for c, ty in cols) for t, cols in obj.get("tables", {}).items()}
        samples = {str(k): tuple(str(v) for v in vs) for k, vs in (obj.get("samples") or {}).items()}
        return cls(tables, samples)

    @classmethod
    def from_warehouse(cls, warehouse: Any, *, n_samples: int = N_SAMPLES) -> Catalog:
        """Read a warehouse's tables, and sample the distinct non-NULL values of date-like columns."""
        raw = warehouse.tables()
        tables = {t: tuple((c, _short_type(ty)) for c, ty in cols) for t, cols in raw.items()}
        samples: dict[str, tuple[str, ...]] = {}
        for t, cols in tables.items():
            for c, ty in cols:
                if not is_date_like(c, ty):
                    continue
                qt, qc = _quote(t), _quote(c)
                res = warehouse.execute(
                    f"SELECT DISTINCT {qc} FROM {qt} WHERE {qc} IS NOT NULL ORDER BY 1 LIMIT {int(n_samples)}",
                    timeout=10.0,
                    max_rows=n_samples,
                )
                if res.ok and res.rows:
                    samples[f"{t}.{c}"] = tuple(_text(r[0]) for r in res.rows)
        return cls(tables, samples)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _short_type(t: str) -> str:
    t = str(t).upper()
    return {"CHARACTER VARYING": "TEXT", "VARCHAR": "TEXT", "DOUBLE PRECISION": "DOUBLE", "FLOAT": "REAL"}.get(t, t)


def _text(v: Any) -> str:
    return v.isoformat() if hasattr(v, "isoformat") else str(v)


def render(catalog: Catalog, tables: Sequence[str] | None = None) -> str:
    """The catalog as text, one table per line (only `tables` when given)."""
    lines = []
    for t, cols in catalog.tables.items():
        if tables is not None and t not in tables:
            continue
        parts = []
        for c, ty in cols:
            s = f"{c}:{ty}"
            sample = catalog.samples.get(f"{t}.{c}")
            if sample:
                s += " e.g. " + " | ".join(sample)
            parts.append(s)
        lines.append(f"{t}({', '.join(parts)})")
    return "\n".join(lines)


def solver_prompt(question: str, catalog: Catalog, *, dialect: str = "duckdb", instructions: str = "") -> str:
    """The text a text-to-SQL solver (or a judge) sees: the schema, the dialect and the question."""
    parts = [
        f"Write one {dialect} SQL query that answers the question. Reply with the query only.",
        "",
        "Tables (column:TYPE; e.g. = sample values):",
        render(catalog),
        "",
        f"Question: {question.strip()}",
    ]
    if instructions.strip():
        parts.append(f"Instructions: {instructions.strip()}")
    return "\n".join(parts)


__all__ = ["Catalog", "is_date_like", "render", "solver_prompt"]
