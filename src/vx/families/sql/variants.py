"""Neighbour databases: seeded perturbations of a task's database on which a wrong query that happens
to return the right rows on the original stops doing so (the idea of test-suite accuracy, Zhong et al.
2020, "Semantic Evaluation for Text-to-SQL with Distilled Test Suites").

A variant keeps the original's schema and changes its rows, four ways at once, each table by itself:

* **swap** -- values of a column move between rows (a share of the rows of every column that does not
  identify rows), so that co-occurrences the data happened to have break;
* **drop** -- rows are removed; rows of other tables that refer to a removed key go too (keys kept
  consistent);
* **duplicate** -- rows are copied, keys replaced by fresh values;
* **add** -- new rows, each value drawn from its column's observed values (NULLs included), keys fresh,
  references drawn from the keys the referenced table still has.

Keys are read off the data (the Spider scripts declare none; :func:`infer_keys`): a *key* is a column
whose values are distinct and non-NULL and that is id-like by name or text; a *reference* is a column
whose values all occur in another table's key and whose name fits that key or table (``Stadium_ID`` →
``stadium.Stadium_ID``, ``DestAirport`` → ``airports.AirportCode``, ``Maker`` → ``car_makers.Id``,
``student_id`` → ``Highschooler.ID``).
Keys stay distinct and references stay resolvable in every variant.

Variant ``i`` of a database is a pure function of the database, ``i``, the seed and :data:`VERSION`
(``random.Random(f"vx-variant:{seed}:{db}:{i}")``): built once, cached as a SQLite file next to the
database, opened read-only like any warehouse. Its warehouse spec is the database's spec plus
``"variant": {"index": i, "seed": s, "version": VERSION}`` (:func:`variant_spec`).

A task lists the variants to run its queries on in its ``variants`` field
(``{"seed": 0, "version": "1", "use": [0, 2, 3]}``): the builder keeps those on which the gold query runs,
returns something useful (rows that are not all NULL or 0) and returns the same with every table's rows
stored in reverse order (an answer that hangs on row order -- ties under a LIMIT -- tells nothing), as
test suites keep only databases that tell queries apart.
"""

from __future__ import annotations

import math
import os
import random
import re
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.families.sql.defog import built

VERSION = "1"
DEFAULT_COUNT = 8  # variants per database
ONE_TO_ONE_MIN = 20  # rows two tables' first columns must share to be taken as one-to-one
_ID_NAME = re.compile(r"(^|_)(id|code|uid|key|number|no)$|id$", re.I)


@attrs.frozen
class Rates:
    """How strongly a variant perturbs each table (shares of its rows)."""

    swap: float = 0.25
    drop: float = 0.15
    duplicate: float = 0.1
    add: float = 0.15


RATES = Rates()


@attrs.define
class TableData:
    name: str
    columns: list[str]
    create: str  # the CREATE TABLE statement, as the database has it
    rows: list[list[Any]]


@attrs.frozen
class Reference:
    """``table.column`` refers to ``parent.key``."""

    table: str
    column: int
    parent: str
    key: int


@attrs.frozen
class Keys:
    unique: Mapping[str, frozenset[int]]  # table -> indices of its key columns
    references: tuple[Reference, ...]

    def describe(self, tables: Mapping[str, TableData]) -> list[str]:
        out = [f"{t}.{tables[t].columns[c]} is a key" for t, cols in sorted(self.unique.items()) for c in sorted(cols)]
        out += [
            f"{r.table}.{tables[r.table].columns[r.column]} -> {r.parent}.{tables[r.parent].columns[r.key]}"
            for r in self.references
        ]
        return out


# --------------------------------------------------------------------------- reading and key inference


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def read_tables(path: str | os.PathLike[str]) -> dict[str, TableData]:
    """Every table of a SQLite file: its CREATE statement, column names and rows (in rowid order)."""
    con = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        out: dict[str, TableData] = {}
        for name, create in con.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ).fetchall():
            cur = con.execute(f"SELECT * FROM {_quote(name)}")
            cols = [d[0] for d in cur.description]
            out[name] = TableData(name, cols, create, [list(r) for r in cur.fetchall()])
        return out
    finally:
        con.close()


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _stems(table: str) -> set[str]:
    """A table name and its singulars (``countries`` → ``country``, ``addresses`` → ``address``)."""
    t = _norm(table)
    out = {t}
    if t.endswith("ies"):
        out.add(t[:-3] + "y")
    if t.endswith("es"):
        out.add(t[:-2])
    if t.endswith("s"):
        out.add(t[:-1])
    return {x for x in out if len(x) >= 3}


_GENERIC = {"id", "uid", "code", "key"}


def _fit(column: str, key: str, parent: str) -> float:
    """How well a column's name fits a key as a reference to it: 3 the same (specific) name, 2 named
    after the referenced table, 1 an ``…_id`` column for a key named ``id``, 0 not at all."""
    c, k = _norm(column), _norm(key)
    if c == k and k not in _GENERIC:
        return 3
    if any(p in c or (len(c) >= 4 and c in p) for p in _stems(parent)):
        return 2
    if k in _GENERIC and c != k and c.endswith(k) and column.lower().endswith("_" + key.lower()):
        return 1
    return 0


def _is_text(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str) for v in values)


def infer_keys(tables: Mapping[str, TableData]) -> Keys:
    """Key columns and references, read off the data (see the module docstring).

    A key is distinct and non-NULL, and id-like by name or text in a table of three rows or more (a
    number column distinct by chance, an age, is no key). A table's *primary* key is its first id-like
    key. ``t.c`` refers to ``p.k`` when every value of ``c`` is a value of ``k`` (compared as text),
    ``k`` is ``p``'s primary key or a key of the same specific name, and the names fit (:func:`_fit`;
    only the best-fitting candidates of a column are kept); a table's first column, when it is its
    primary key, refers only by the same name and to a strict superset (``hiring.Employee_ID`` →
    ``employee``: one-to-one tables do not refer to each other both ways)."""
    unique: dict[str, frozenset[int]] = {}
    primary: dict[str, int | None] = {}
    for t in tables.values():
        n = len(t.rows)
        cols = set()
        for j, name in enumerate(t.columns):
            vals = [r[j] for r in t.rows]
            if (
                n
                and None not in vals
                and len({str(v) for v in vals}) == n
                and (_ID_NAME.search(name) or (n >= 3 and _is_text(vals)))
            ):
                cols.add(j)
        unique[t.name] = frozenset(cols)
        primary[t.name] = next((j for j in sorted(cols) if _ID_NAME.search(t.columns[j])), None)
    refs: list[Reference] = []
    for t in tables.values():
        for j, name in enumerate(t.columns):
            held = {str(r[j]) for r in t.rows if r[j] is not None}
            if not held:
                continue
            own_primary = primary[t.name] == j == 0  # a table's identifying first column
            found: list[tuple[float, Reference]] = []
            for p in tables.values():
                for k in sorted(unique[p.name]):
                    if p.name == t.name:
                        continue
                    fit = _fit(name, p.columns[k], p.name)
                    if not fit or (k != primary[p.name] and fit < 3):
                        continue
                    keys = {str(r[k]) for r in p.rows}
                    if not held <= keys or (own_primary and (fit < 3 or held == keys)):
                        continue
                    found.append((fit, Reference(t.name, j, p.name, k)))
            best = max((f for f, _ in found), default=0)
            refs += [r for f, r in found if f == best]
    # one-to-one tables: first columns that are primary keys holding the same (many) values refer to
    # each other, so a row dropped on one side goes on the other (car_names.MakeId = cars_data.Id)
    firsts = {t.name: {str(r[0]) for r in t.rows} for t in tables.values() if primary[t.name] == 0}
    for a in sorted(firsts):
        for b in sorted(firsts):
            if a != b and len(firsts[a]) >= ONE_TO_ONE_MIN and firsts[a] == firsts[b]:
                refs.append(Reference(a, 0, b, 0))
    return Keys(unique, tuple(dict.fromkeys(refs)))


# --------------------------------------------------------------------------- perturbing


def _fresh(values: Sequence[Any], count: int, taken: set[str], rng: random.Random) -> list[Any]:
    """`count` new distinct values for a key column, none of them in `taken`: the next integers (or whole
    floats) above the column's largest number, else an existing text with a number appended."""
    numeric = bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    ints = numeric and all(isinstance(v, int) for v in values)
    out: list[Any] = []
    n = (max(values) + 1 if ints else math.floor(max(values)) + 1.0) if numeric else 2
    while len(out) < count:
        v = n if numeric else f"{rng.choice(values) if values else 'x'} {n}"
        n += 1
        if str(v) not in taken:
            out.append(v)
            taken.add(str(v))
    return out


def perturb(
    tables: Mapping[str, TableData], keys: Keys, rng: random.Random, rates: Rates = RATES
) -> dict[str, TableData]:
    """One variant of `tables` (new objects; the input is not changed)."""
    out = {n: TableData(t.name, list(t.columns), t.create, [list(r) for r in t.rows]) for n, t in tables.items()}
    referenced = {(r.parent, r.key) for r in keys.references}
    observed = {n: [[r[j] for r in t.rows] for j in range(len(t.columns))] for n, t in tables.items()}

    # swap: values move between rows within a column (keys stay put; references stay valid)
    for name in sorted(out):
        t = out[name]
        n = len(t.rows)
        if n < 2:
            continue
        for j in range(len(t.columns)):
            if (name, j) in referenced or (j in keys.unique[name] and _ID_NAME.search(t.columns[j])):
                continue  # keys that identify rows stay with their rows; other distinct values may move
            picked = [i for i in range(n) if rng.random() < rates.swap]
            if len(picked) < 2:
                continue
            vals = [t.rows[i][j] for i in picked]
            rng.shuffle(vals)
            for i, v in zip(picked, vals):
                t.rows[i][j] = v

    # drop: rows go, and rows referring to their keys go with them
    gone: dict[str, set[int]] = {n: set() for n in out}
    for name in sorted(out):
        t = out[name]
        drop = {i for i in range(len(t.rows)) if rng.random() < rates.drop}
        if len(drop) >= len(t.rows):
            drop.discard(min(drop))
        gone[name] |= drop
    changed = True
    while changed:
        changed = False
        for r in keys.references:
            dead = {str(out[r.parent].rows[i][r.key]) for i in gone[r.parent]}
            if not dead:
                continue
            child = out[r.table]
            for i, row in enumerate(child.rows):
                if i not in gone[r.table] and row[r.column] is not None and str(row[r.column]) in dead:
                    gone[r.table].add(i)
                    changed = True
    for name, t in out.items():
        t.rows = [row for i, row in enumerate(t.rows) if i not in gone[name]]

    # duplicate and add: keys fresh, references drawn from the keys that remain
    for name in sorted(out):
        t = out[name]
        n = len(t.rows)
        new_rows = [list(t.rows[i]) for i in range(n) if rng.random() < rates.duplicate]
        n_dup = len(new_rows)
        n_add = sum(1 for _ in range(max(n, 1)) if rng.random() < rates.add)
        for _ in range(n_add):
            new_rows.append(
                [rng.choice(observed[name][j]) if observed[name][j] else None for j in range(len(t.columns))]
            )
        if not new_rows:
            continue
        for j in range(len(t.columns)):
            refs = [r for r in keys.references if r.table == name and r.column == j]
            if refs:
                parent = out[refs[0].parent]
                pool = [row[refs[0].key] for row in parent.rows]
                if j in keys.unique[name]:
                    used = {str(row[j]) for row in t.rows}
                    pool = [v for v in pool if str(v) not in used]
                    rng.shuffle(pool)
                    keep = min(len(pool), len(new_rows))
                    new_rows = new_rows[:keep]
                    n_dup = min(n_dup, keep)
                    for row, v in zip(new_rows, pool):
                        row[j] = v
                else:
                    for k, row in enumerate(new_rows):
                        if k >= n_dup and pool:  # added rows draw a reference; duplicates keep theirs
                            row[j] = rng.choice(pool)
            elif j in keys.unique[name]:
                taken = {str(row[j]) for row in t.rows} | {str(row[j]) for row in tables[name].rows}
                for row, v in zip(new_rows, _fresh([row[j] for row in tables[name].rows], len(new_rows), taken, rng)):
                    row[j] = v
        t.rows.extend(new_rows)
    return out


def write_tables(tables: Mapping[str, TableData], path: Path) -> Path:
    """A SQLite file with these tables (their own CREATE statements), written atomically."""
    from vx.families.sql.scripts import write_atomically

    def fill(con: sqlite3.Connection) -> None:
        for t in tables.values():
            con.execute(t.create)
            if t.rows:
                con.executemany(f"INSERT INTO {_quote(t.name)} VALUES ({', '.join('?' for _ in t.columns)})", t.rows)

    return write_atomically(path, fill)


# --------------------------------------------------------------------------- specs and files


def variant_spec(spec: Mapping[str, Any], index: int, seed: int = 0, *, reversed_rows: bool = False) -> dict[str, Any]:
    """The warehouse spec of variant `index` of the database `spec` names; `reversed_rows`: the same
    variant with every table's rows stored in reverse order (the builder runs the gold query on both to
    keep only variants whose gold answer does not hang on row order: ties under a LIMIT, say)."""
    base = {k: v for k, v in spec.items() if k != "variant"}
    v: dict[str, Any] = {"index": int(index), "seed": int(seed), "version": VERSION}
    if reversed_rows:
        v["rows"] = "reversed"
    return {**base, "variant": v}


def task_variant_specs(task: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(label, spec)`` for the original database and every variant the task lists: ``("original",
    …)``, ``("variant 3", …)``. Only the original when the task lists none."""
    spec = task.get("warehouse")
    if not isinstance(spec, Mapping):
        return []
    out = [("original", dict(spec))]
    v = task.get("variants")
    if isinstance(v, Mapping) and isinstance(v.get("use"), list):
        seed = int(v.get("seed", 0))
        out += [(f"variant {int(i)}", variant_spec(spec, int(i), seed)) for i in v["use"]]
    return out


def _base_file(spec: Mapping[str, Any]) -> Path:
    if spec.get("source") == "script":
        from vx.families.sql.scripts import materialize as build_script

        return build_script(spec)
    if spec.get("path"):
        return Path(str(spec["path"])).expanduser()
    raise DataError(f"variants are built from a SQLite script or file database, not {dict(spec)}")


def variant_file(spec: Mapping[str, Any]) -> Path:
    """Where the file of a variant spec lives (next to its base database, under ``variants/``)."""
    v = spec["variant"]
    base = _base_file({k: x for k, x in spec.items() if k != "variant"})
    tail = "-reversed" if v.get("rows") == "reversed" else ""
    return (
        base.parent / "variants" / f"{base.stem}-v{v.get('version', VERSION)}-s{int(v.get('seed', 0))}-"
        f"{int(v['index'])}{tail}.sqlite"
    )


def materialize(spec: Mapping[str, Any]) -> Path:
    """The SQLite file of a variant spec, built on first use (deterministic; see the module docstring)."""
    v = spec.get("variant")
    if not isinstance(v, Mapping) or "index" not in v:
        raise DataError(f"not a variant spec: {dict(spec)}")
    if str(v.get("version", VERSION)) != VERSION:
        raise DataError(
            f"variant version {v.get('version')!r} was built by another vx (this one builds "
            f"{VERSION!r}): rebuild the family"
        )
    path = variant_file(spec)
    if built(path):
        return path
    base = _base_file({k: x for k, x in spec.items() if k != "variant"})
    tables = read_tables(base)
    name = str(spec.get("database") or base.stem)
    rng = random.Random(f"vx-variant:{int(v.get('seed', 0))}:{name}:{int(v['index'])}")
    out = perturb(tables, infer_keys(tables), rng)
    if v.get("rows") == "reversed":
        for t in out.values():
            t.rows.reverse()
    return write_tables(out, path)


__all__ = [
    "DEFAULT_COUNT",
    "Keys",
    "RATES",
    "Rates",
    "Reference",
    "TableData",
    "VERSION",
    "infer_keys",
    "materialize",
    "perturb",
    "read_tables",
    "task_variant_specs",
    "variant_file",
    "variant_spec",
    "write_tables",
]
