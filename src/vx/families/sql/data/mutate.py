"""A SQL mutation engine over gold queries (sqlglot): plausible wrong (and some right) queries.

Each operator mirrors a failure class seen in text-to-SQL outputs. A mutant applies exactly one
operator at one site of the parsed gold query and prints it back in the target dialect. Mutants are
*not* assumed wrong: executing them against the gold result labels them, and a mutant that still
matches (an equivalent mutant) is labelled pass. A mutant identical to its source is discarded.

==================== ====================== ================================================
operator             failure class          what it does
==================== ====================== ================================================
drop_group_by        missing_group_by       removes the GROUP BY of an aggregating SELECT
select_star          select_star            the outer projection becomes ``*``
wrong_join_key       wrong_join_key         one side of a join equality uses another column
flip_predicate       wrong_predicate        ``<``↔``>``, ``<=``↔``>=``, ``=``↔``<>``, LIKE↔NOT LIKE, IN↔NOT IN
drop_limit           missing_limit          removes the outer LIMIT
wrong_aggregate      wrong_aggregate        SUM↔AVG, MIN↔MAX, COUNT(DISTINCT x)→COUNT(x)
off_by_one_bound     off_by_one_bound       a bound on a date-like column moves by one (±1, a day, ``>=``→``>``)
drop_condition       missing_filter         removes one conjunct of WHERE
drop_distinct        duplicate_rows         removes DISTINCT
flip_order           wrong_order            ORDER BY … DESC ↔ ASC
drop_join_condition  cartesian_join         a JOIN loses its ON condition (a cross join)
misspell_identifier  unknown_identifier     a column name gains or loses a trailing ``s``
date_as_string       date_format            a number compared with a date-like column becomes a date string
syntax_error         syntax_error           the query loses a closing parenthesis or a keyword letter
reorder_columns      (benign)               the projection is reversed (column order does not count)
rename_aliases       (benign)               output aliases are renamed
reformat             (benign)               pretty-printed, keywords re-cased
==================== ====================== ================================================

Deterministic given (query, seed): sites are listed in tree order and drawn with ``random.Random``.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import sqlglot
from sqlglot import exp

from vx.errors import MutationError
from vx.families.sql.catalog import Catalog, is_date_like
from vx.families.sql.ops.analysis import aggregates_in, selects


@attrs.frozen
class Mutant:
    sql: str
    operator: str
    detail: str


@attrs.frozen
class Operator:
    name: str
    failure_class: str
    description: str
    # sites(tree, catalog) -> nodes (or other site descriptors) the operator can act on
    sites: Callable[[exp.Expr, Catalog | None], list[Any]]
    # apply(tree, site, catalog, rng) -> detail; mutates `tree` (a copy) in place
    apply: Callable[[exp.Expr, Any, Catalog | None, random.Random], str]
    benign: bool = False
    textual: bool = False  # works on the SQL text rather than the tree


def _tables(tree: exp.Expr) -> dict[str, str]:
    return {t.alias_or_name.lower(): t.name for t in tree.find_all(exp.Table)}


def _owner_table(col: exp.Column, tree: exp.Expr, catalog: Catalog | None) -> str | None:
    tables = _tables(tree)
    if col.table:
        return tables.get(col.table.lower())
    if catalog is None:
        return None
    hits = [t for t in dict.fromkeys(tables.values()) if catalog.has_column(t, col.name)]
    return hits[0] if len(hits) == 1 else None


# --------------------------------------------------------------------------- operators


def _group_sites(tree, cat):
    return [s for s in selects(tree) if s.args.get("group") and any(aggregates_in(p, s) for p in s.expressions)]


def _drop_group(tree, sel, cat, rng):
    g = sel.args["group"].sql()
    sel.set("group", None)
    return f"removed {g}"


def _star_sites(tree, cat):
    return [tree] if isinstance(tree, exp.Select) and not any(isinstance(p, exp.Star) for p in tree.expressions) else []


def _star(tree, sel, cat, rng):
    sel.set("expressions", [exp.Star()])
    return "SELECT *"


def _join_key_sites(tree, cat):
    out = []
    for j in tree.find_all(exp.Join):
        on = j.args.get("on")
        if on is None:
            continue
        for eq in on.find_all(exp.EQ):
            if isinstance(eq.this, exp.Column) and isinstance(eq.expression, exp.Column):
                out.append(eq)
    return out


def _join_key(tree, eq, cat, rng):
    sides = [eq.this, eq.expression]
    rng.shuffle(sides)
    for col in sides:
        table = _owner_table(col, tree, cat)
        if cat is None or table is None:
            continue
        ty = cat.column_type(table, col.name)
        alts = [c for c, t in cat.tables[cat.table(table)] if c.lower() != col.name.lower() and t == ty]
        ids = [c for c in alts if c.lower().endswith("id") or c.lower().endswith("code")]
        pool = ids or alts
        if pool:
            new = rng.choice(pool)
            old = col.sql()
            col.set("this", exp.to_identifier(new))
            return f"{old} -> {col.sql()} in {eq.sql()}"
    raise MutationError("no alternative join column of the same type")


_FLIPS: dict[type, type] = {
    exp.GT: exp.LT,
    exp.LT: exp.GT,
    exp.GTE: exp.LTE,
    exp.LTE: exp.GTE,
    exp.EQ: exp.NEQ,
    exp.NEQ: exp.EQ,
}


def _predicate_sites(tree, cat):
    out = []
    for sel in selects(tree):
        for clause in ("where", "having"):
            node = sel.args.get(clause)
            if node is None:
                continue
            for n in node.find_all(*_FLIPS, exp.Like, exp.ILike, exp.In):
                if isinstance(n, exp.EQ) and isinstance(n.parent, exp.Join):
                    continue
                if isinstance(n, (exp.EQ, exp.NEQ)) and all(isinstance(x, exp.Column) for x in (n.this, n.expression)):
                    continue  # join equalities written in WHERE
                out.append(n)
    return out


def _flip(tree, node, cat, rng):
    before = node.sql()
    if type(node) in _FLIPS:
        new = _FLIPS[type(node)](this=node.this.copy(), expression=node.expression.copy())
    else:
        new = exp.Not(this=node.copy())
    if isinstance(node.parent, exp.Not):
        node.parent.replace(node.copy())
        return f"NOT {before} -> {before}"
    node.replace(new)
    return f"{before} -> {new.sql()}"


def _limit_sites(tree, cat):
    return [tree] if tree.args.get("limit") is not None else []


def _drop_limit(tree, node, cat, rng):
    lim = node.args["limit"].sql()
    node.set("limit", None)
    return f"removed {lim}"


_AGG_SWAPS: dict[type, type] = {exp.Sum: exp.Avg, exp.Avg: exp.Sum, exp.Max: exp.Min, exp.Min: exp.Max}


def _agg_sites(tree, cat):
    out = [a for a in tree.find_all(*_AGG_SWAPS)]
    out += [c for c in tree.find_all(exp.Count) if isinstance(c.this, exp.Distinct)]
    return out


def _wrong_agg(tree, node, cat, rng):
    before = node.sql()
    if isinstance(node, exp.Count):
        inner = node.this.expressions
        node.set("this", inner[0].copy() if inner else exp.Star())
    else:
        node.replace(_AGG_SWAPS[type(node)](this=node.this.copy()))
        return f"{before} -> {_AGG_SWAPS[type(node)].__name__.upper()}(…)"
    return f"{before} -> {node.sql()}"


def _date_bound_sites(tree, cat):
    out = []
    for cmp in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.Between):
        cols = [c for c in cmp.find_all(exp.Column)]
        if cat is None or not cols:
            continue
        t = _owner_table(cols[0], tree, cat)
        if t is None:
            continue
        ty = cat.column_type(t, cols[0].name) or ""
        if not is_date_like(cols[0].name, ty):
            continue
        lits = [lit for lit in cmp.find_all(exp.Literal)]
        if lits or isinstance(cmp, (exp.GTE, exp.LTE)):
            out.append(cmp)
    return out


def _shift_literal(lit: exp.Literal, delta: int) -> str | None:
    v = lit.this
    if not lit.is_string:
        try:
            n = int(v)
        except ValueError:
            return None
        return str(n + delta)
    for fmt in ("%Y-%m-%d", "%Y-%m-%d %H:%M:%S"):
        try:
            d = dt.datetime.strptime(v, fmt)
            return (d + dt.timedelta(days=delta)).strftime(fmt)
        except ValueError:
            continue
    m = re.match(r"^\s*(\d+)(\s+\w+)\s*$", v)  # interval text '10 days'
    if m:
        return f"{int(m.group(1)) + delta}{m.group(2)}"
    return None


def _date_bound(tree, cmp, cat, rng):
    before = cmp.sql()
    lits = [lit for lit in cmp.find_all(exp.Literal)]
    delta = rng.choice((-1, 1))
    for lit in lits:
        new = _shift_literal(lit, delta)
        if new is not None:
            lit.replace(exp.Literal(this=new, is_string=lit.is_string))
            return f"{before} -> {cmp.sql()}"
    if isinstance(cmp, (exp.GTE, exp.LTE)):
        op = exp.GT if isinstance(cmp, exp.GTE) else exp.LT
        strict = op(this=cmp.this.copy(), expression=cmp.expression.copy())
        cmp.replace(strict)
        return f"{before} -> {strict.sql()}"
    raise MutationError("no bound to move")


def _conjunct_sites(tree, cat):
    out = []
    for sel in selects(tree):
        w = sel.args.get("where")
        if w is not None and isinstance(w.this, exp.And):
            out += [c for c in w.this.flatten()]
    return out


def _drop_conjunct(tree, node, cat, rng):
    where: exp.Expr | None = node.parent
    while where is not None and not isinstance(where, exp.Where):
        where = where.parent
    if where is None:
        raise MutationError("the condition is in no WHERE")
    rest = [c.copy() for c in where.this.flatten() if c is not node]
    where.set("this", exp.and_(*rest) if len(rest) > 1 else rest[0])
    return f"removed the condition {node.sql()}"


def _distinct_sites(tree, cat):
    return [s for s in selects(tree) if s.args.get("distinct") is not None]


def _drop_distinct(tree, sel, cat, rng):
    sel.set("distinct", None)
    return "removed DISTINCT"


def _order_sites(tree, cat):
    o = tree.args.get("order")
    return list(o.expressions) if o is not None else []


def _flip_order(tree, ordered, cat, rng):
    desc = bool(ordered.args.get("desc"))
    ordered.set("desc", not desc)
    ordered.set("nulls_first", None)
    return f"ORDER BY {ordered.this.sql()} {'DESC -> ASC' if desc else 'ASC -> DESC'}"


def _join_cond_sites(tree, cat):
    return [j for j in tree.find_all(exp.Join) if j.args.get("on") is not None and isinstance(j.this, exp.Table)]


def _drop_join_cond(tree, j, cat, rng):
    on = j.args["on"].sql()
    j.set("on", None)
    j.set("side", None)
    j.set("kind", "CROSS")
    return f"removed ON {on}"


def _misspell_sites(tree, cat):
    return [c for c in tree.find_all(exp.Column) if c.name and not isinstance(c.this, exp.Star)]


def _misspell(tree, col, cat, rng):
    name = col.name
    new = name[:-1] if name.endswith("s") and len(name) > 2 else name + "s"
    if cat is not None and new.lower() in cat.all_columns():
        new = name + "_name" if not name.endswith("_name") else name[:-5]
    before = col.sql()
    col.set("this", exp.to_identifier(new))
    return f"{before} -> {col.sql()}"


def _date_string_sites(tree, cat):
    out: list[exp.Expr] = []
    if cat is None:
        return out
    for cmp in tree.find_all(exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ):
        col, lit = cmp.this, cmp.expression
        if isinstance(col, exp.Column) and isinstance(lit, exp.Literal) and not lit.is_string:
            t = _owner_table(col, tree, cat)
            ty = cat.column_type(t, col.name) if t else None
            if ty and is_date_like(col.name, ty):
                out.append(cmp)
    return out


def _date_string(tree, cmp, cat, rng):
    lit = cmp.expression
    before = cmp.sql()
    try:
        n = int(lit.this)
    except ValueError:
        raise MutationError("not an integer literal") from None
    if 1800 <= n <= 2200:
        text = f"{n}-01-01"
    elif n > 10**8:
        text = dt.datetime.fromtimestamp(n, dt.UTC).strftime("%Y-%m-%d")
    else:
        raise MutationError("the number is neither a year nor an epoch")
    lit.replace(exp.Literal.string(text))
    return f"{before} -> {cmp.sql()}"


def _syntax_sites_text(sql: str) -> list[int]:
    return [0, 1] if ")" in sql else [1]


def _syntax_error_text(sql: str, site: int, rng: random.Random) -> tuple[str, str]:
    if site == 0:
        k = sql.rfind(")")
        return sql[:k] + sql[k + 1 :], "removed a closing parenthesis"
    m = re.search(r"\bFROM\b", sql, re.I)
    if m is None:
        raise MutationError("no FROM to damage")
    return sql[: m.start()] + "FORM" + sql[m.end() :], "FROM misspelt as FORM"


def _reorder_sites(tree, cat):
    return [tree] if isinstance(tree, exp.Select) and len(tree.expressions) > 1 else []


def _reorder(tree, sel, cat, rng):
    sel.set("expressions", list(reversed([e.copy() for e in sel.expressions])))
    return "projection reversed"


def _alias_sites(tree, cat):
    return [tree] if isinstance(tree, exp.Select) and any(isinstance(e, exp.Alias) for e in tree.expressions) else []


def _rename_aliases(tree, sel, cat, rng):
    renamed = {}
    for e in sel.expressions:
        if isinstance(e, exp.Alias):
            new = f"{e.alias}_value"
            renamed[e.alias] = new
    for e in list(tree.find_all(exp.Column, exp.Alias)):
        if isinstance(e, exp.Alias) and e.alias in renamed and e.parent is sel:
            e.set("alias", exp.to_identifier(renamed[e.alias]))
        elif isinstance(e, exp.Column) and not e.table and e.name in renamed and not _inside_projection(e, sel):
            e.set("this", exp.to_identifier(renamed[e.name]))
    return "aliases " + ", ".join(f"{a} -> {b}" for a, b in renamed.items())


def _inside_projection(node: exp.Expr, sel: exp.Select) -> bool:
    p: exp.Expr | None = node
    while p is not None and p.parent is not sel:
        p = p.parent
    return p is not None and p.arg_key == "expressions"


def _reformat_sites(tree, cat):
    return [tree]


def _reformat(tree, node, cat, rng):
    return "pretty-printed"


OPERATORS: dict[str, Operator] = {
    o.name: o
    for o in [
        Operator("drop_group_by", "missing_group_by", "removes GROUP BY", _group_sites, _drop_group),
        Operator("select_star", "select_star", "outer projection becomes *", _star_sites, _star),
        Operator("wrong_join_key", "wrong_join_key", "a join equality uses another column", _join_key_sites, _join_key),
        Operator("flip_predicate", "wrong_predicate", "a comparison flips", _predicate_sites, _flip),
        Operator("drop_limit", "missing_limit", "removes LIMIT", _limit_sites, _drop_limit),
        Operator(
            "wrong_aggregate", "wrong_aggregate", "SUM/AVG, MIN/MAX, COUNT DISTINCT swapped", _agg_sites, _wrong_agg
        ),
        Operator("off_by_one_bound", "wrong_predicate", "a date bound moves by one", _date_bound_sites, _date_bound),
        Operator("drop_condition", "missing_filter", "removes a WHERE conjunct", _conjunct_sites, _drop_conjunct),
        Operator("drop_distinct", "duplicate_rows", "removes DISTINCT", _distinct_sites, _drop_distinct),
        Operator("flip_order", "wrong_order", "ORDER BY direction flips", _order_sites, _flip_order),
        Operator("drop_join_condition", "cartesian_join", "a JOIN loses its ON", _join_cond_sites, _drop_join_cond),
        Operator("misspell_identifier", "unknown_identifier", "a column name is misspelt", _misspell_sites, _misspell),
        Operator(
            "date_as_string", "date_format", "a date number becomes a date string", _date_string_sites, _date_string
        ),
        Operator(
            "syntax_error", "syntax_error", "the query text is damaged", lambda t, c: [], lambda *a: "", textual=True
        ),
        Operator("reorder_columns", "", "projection reversed", _reorder_sites, _reorder, benign=True),
        Operator("rename_aliases", "", "aliases renamed", _alias_sites, _rename_aliases, benign=True),
        Operator("reformat", "", "pretty-printed", _reformat_sites, _reformat, benign=True),
    ]
}
HARMFUL = tuple(n for n, o in OPERATORS.items() if not o.benign)
BENIGN = tuple(n for n, o in OPERATORS.items() if o.benign)


def parse_query(sql: str, dialect: str) -> exp.Expr:
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError as exc:
        raise MutationError(f"does not parse as {dialect}: {str(exc).splitlines()[0]}") from None
    if tree is None:
        raise MutationError("empty query")
    return tree


def _norm(sql: str) -> str:
    return " ".join(sql.split()).rstrip(";").lower()


def mutate(
    sql: str, operator: str, *, dialect: str = "duckdb", catalog: Catalog | None = None, seed: str | int = 0
) -> Mutant | None:
    """One mutant of `sql` by `operator` (a random applicable site), or None when it does not apply."""
    op_ = OPERATORS[operator]
    rng = random.Random(f"{seed}|{operator}|{sql}")
    if op_.textual:
        sites = _syntax_sites_text(sql)
        try:
            text, detail = _syntax_error_text(sql, rng.choice(sites), rng)
        except MutationError:
            return None
        return Mutant(text, operator, detail) if _norm(text) != _norm(sql) else None
    tree = parse_query(sql, dialect)
    n_sites = len(op_.sites(tree, catalog))
    order = list(range(n_sites))
    rng.shuffle(order)
    for k in order:
        copy = tree.copy()
        site = op_.sites(copy, catalog)[k]
        try:
            detail = op_.apply(copy, site, catalog, rng)
        except MutationError:
            continue
        text = copy.sql(dialect=dialect, pretty=operator == "reformat")
        if operator == "reformat" or _norm(text) != _norm(tree.sql(dialect=dialect)):
            return Mutant(text, operator, detail)
    return None


def mutants(
    sql: str,
    *,
    dialect: str = "duckdb",
    catalog: Catalog | None = None,
    seed: str | int = 0,
    operators: Sequence[str] | None = None,
) -> list[Mutant]:
    """One mutant per applicable operator, in operator order."""
    out = []
    for name in operators or OPERATORS:
        m = mutate(sql, name, dialect=dialect, catalog=catalog, seed=seed)
        if m is not None:
            out.append(m)
    return out


__all__ = ["BENIGN", "HARMFUL", "Mutant", "MutationError", "OPERATORS", "Operator", "mutants", "mutate", "parse_query"]
