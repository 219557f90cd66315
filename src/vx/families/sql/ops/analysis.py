"""Static analysis of parsed SQL (sqlglot trees) and of questions, shared by ops and templates.

Every function here is pure and returns findings as data (lists of human-readable strings or
small records); deciding what counts as a drawback is the ops' job.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlglot import exp
from sqlglot.optimizer.scope import Scope, traverse_scope

from vx.families.sql.catalog import Catalog, is_date_like

AGGREGATES = (exp.AggFunc,)


def selects(tree: exp.Expr) -> Iterator[exp.Select]:
    yield from tree.find_all(exp.Select)


def from_clause(select: exp.Select) -> exp.From | None:
    return select.args.get("from_") or select.args.get("from")


def _in_window_or_subquery(node: exp.Expr, stop: exp.Expr) -> bool:
    p = node.parent
    while p is not None and p is not stop:
        if isinstance(p, (exp.Window, exp.Subquery, exp.Select)):
            return True
        p = p.parent
    return False


def aggregates_in(expr: exp.Expr, select: exp.Select) -> list[exp.Expr]:
    """Aggregate calls of `expr` that belong to `select` (not to a window or a nested query)."""
    return [
        a
        for a in expr.find_all(*AGGREGATES)
        if not isinstance(a.parent, exp.Window) and not _in_window_or_subquery(a, select)
    ]


def bare_columns(expr: exp.Expr, select: exp.Select) -> list[exp.Column]:
    """Columns of `expr` outside any aggregate, window or nested query of `select`."""
    out = []
    for c in expr.find_all(exp.Column):
        p = c.parent
        inside = False
        while p is not None and p is not select:
            if isinstance(p, AGGREGATES) or isinstance(p, (exp.Window, exp.Filter, exp.Subquery, exp.Select)):
                inside = True
                break
            p = p.parent
        if not inside:
            out.append(c)
    return out


def missing_group_by(tree: exp.Expr) -> list[str]:
    """Selects that aggregate while also selecting bare columns, without GROUP BY."""
    found = []
    for sel in selects(tree):
        if sel.args.get("group"):
            continue
        aggs = [a for p in sel.expressions for a in aggregates_in(p, sel)]
        if not aggs:
            continue
        bare = [c for p in sel.expressions for c in bare_columns(p, sel)]
        if bare:
            found.append(
                f"SELECT mixes {aggs[0].sql()[:40]} with the non-aggregated column {bare[0].sql()} but has no GROUP BY"
            )
    return found


def has_aggregate(tree: exp.Expr) -> bool:
    return any(aggregates_in(p, s) for s in selects(tree) for p in s.expressions)


def star_projections(tree: exp.Expr) -> list[str]:
    """``*`` / ``t.*`` in the outermost query's projection (COUNT(*) is not a star projection)."""
    out = []
    for sel in _outer_selects(tree):
        for p in sel.expressions:
            if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
                out.append(p.sql())
    return out


def _outer_selects(tree: exp.Expr) -> list[exp.Select]:
    node = tree
    if isinstance(node, exp.Subquery):
        node = node.this
    if isinstance(node, exp.Select):
        return [node]
    if isinstance(node, exp.SetOperation):
        return _outer_selects(node.left) + _outer_selects(node.right)
    return []


def outer_limit(tree: exp.Expr) -> int | bool | None:
    """The outermost query's LIMIT / FETCH FIRST / TOP as an int, True when present but not a
    literal, None when absent."""
    lim = tree.args.get("limit")
    if lim is None:
        return None
    val = lim.args.get("expression") or lim.args.get("count") or lim.this
    if isinstance(val, exp.Literal) and not val.is_string:
        try:
            return int(val.this)
        except ValueError:
            return True
    return True


def limit_tie_probe(tree: exp.Expr, dialect: str) -> tuple[str, int] | None:
    """A query that shows whether the outer ``ORDER BY … LIMIT n`` of `tree` cuts through a tie: the
    same query projecting only its ORDER BY keys (select aliases and positions resolved), with
    ``LIMIT n + 1``. The tie is there when rows n and n + 1 of its result are equal. None when the
    outer query is not one SELECT with ORDER BY and a literal LIMIT (or OFFSET is used)."""
    if not isinstance(tree, exp.Select) or not tree.args.get("order") or tree.args.get("offset"):
        return None
    n = outer_limit(tree)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return None
    aliases = {p.alias.lower(): p.this for p in tree.expressions if isinstance(p, exp.Alias) and p.alias}
    keys, ordered = [], []
    for o in tree.args["order"].expressions:
        key = o.this
        if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
            k = int(key.this)
            if not 1 <= k <= len(tree.expressions):
                return None
            key = tree.expressions[k - 1]
            key = key.this if isinstance(key, exp.Alias) else key
        elif isinstance(key, exp.Column) and not key.table and key.name.lower() in aliases:
            key = aliases[key.name.lower()]
        keys.append(key.copy())
        o2 = o.copy()
        o2.set("this", key.copy())
        ordered.append(o2)
    probe = tree.copy()
    probe.set("expressions", keys)
    probe.set("order", exp.Order(expressions=ordered))
    probe.set("distinct", None)
    probe.set("limit", exp.Limit(expression=exp.Literal.number(n + 1)))
    try:
        return probe.sql(dialect=dialect), n
    except Exception:  # sqlglot cannot print it back: no probe
        return None


def tie_at_limit(rows: Sequence[Sequence[Any]], n: int) -> bool:
    """Whether the result of a `limit_tie_probe` query shows a tie across the LIMIT."""
    return len(rows) > n and tuple(rows[n - 1]) == tuple(rows[n])


def bounds_rows_otherwise(tree: exp.Expr) -> bool:
    """Whether the query restricts itself to extreme rows without LIMIT: a comparison with a
    MAX/MIN subquery, a ranking window function filtered on, QUALIFY, or an ungrouped aggregate
    (one row)."""
    for sub in tree.find_all(exp.Subquery):
        if sub.find(exp.Max, exp.Min) is not None and isinstance(sub.parent, (exp.EQ, exp.GTE, exp.LTE, exp.In)):
            return True
        inner = sub.this
        if isinstance(inner, exp.Query) and outer_limit(inner) is not None and inner.args.get("order"):
            return True  # WHERE id = (SELECT id … ORDER BY … LIMIT 1), or a derived table of the top rows
    if tree.find(exp.Qualify) is not None:
        return True
    for w in tree.find_all(exp.Window):  # a ranking window used to filter (… WHERE rn <= 3)
        if isinstance(w.this, (exp.RowNumber, exp.Rank, exp.DenseRank)) and _filtered_on(w, tree):
            return True
    for sel in _outer_selects(tree):
        if not sel.args.get("group") and any(aggregates_in(p, sel) for p in sel.expressions):
            return True
    return False


def _filtered_on(window: exp.Window, tree: exp.Expr) -> bool:
    """Whether the output of a ranking window is compared somewhere (directly, or through its alias
    in an outer WHERE / QUALIFY)."""
    if window.find_ancestor(exp.Where, exp.Qualify) is not None:
        return True
    alias = window.parent.alias if isinstance(window.parent, exp.Alias) else ""
    if not alias:
        return False
    for cond in tree.find_all(exp.Where, exp.Qualify):
        if any(c.name.lower() == alias.lower() for c in cond.find_all(exp.Column)):
            return True
    return False


# --------------------------------------------------------------------------- questions

_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twenty": 20,
}
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|twenty)"
_SUPERLATIVE = (
    r"most|highest|largest|biggest|greatest|lowest|least|fewest|smallest|best|worst|longest|"
    r"shortest|earliest|latest|oldest|newest|youngest|cheapest|most expensive"
)
_TOP_N = [
    re.compile(rf"\btop\s+{_N}\b", re.I),
    re.compile(rf"\b(?:first|last)\s+{_N}\b", re.I),
    re.compile(rf"\b{_N}\s+(?:{_SUPERLATIVE})\b", re.I),
]
_SINGULAR_SUPERLATIVE = re.compile(
    rf"\b(?:which|what|who)\s+(?:\w+\s+){{0,4}}?(?:has|had|is|was|did|does|gets|got|received|wrote|published)\s+"
    rf"(?:the\s+)?(?:{_SUPERLATIVE})\b|\b(?:the|a)\s+(?:single\s+)?(?:\w+\s+)?with\s+the\s+(?:{_SUPERLATIVE})\b",
    re.I,
)
_ASKS_FOR = re.compile(r"(?:who|what|which)(?:'s|’s)?(?:\s+(?:is|was|are|were|the|a|an|one))*\s+([a-z]+)?", re.I)
_LISTING = re.compile(
    r"\b(order(?:ed)?|sort(?:ed)?|rank(?:ed|ing)?|from (?:highest|lowest|most|least)|each|per|"
    r"every|all|list)\b",
    re.I,
)


def top_n_requested(question: str) -> int | None:
    """How many rows the question asks for ("top 5" → 5, "which author has the most …" → 1), or None."""
    for rx in _TOP_N:
        m = rx.search(question)
        if m:
            w = m.group(1).lower()
            return int(w) if w.isdigit() else _NUMBER_WORDS[w]
    if _LISTING.search(question) or not re.search(rf"\b(?:{_SUPERLATIVE})\b", question, re.I):
        return None
    if _SINGULAR_SUPERLATIVE.search(question):
        return 1
    m = _ASKS_FOR.match(question.strip())
    if m:  # "What is the title of …", "Which aircraft code can …", "Who …": one thing is asked for
        noun = (m.group(1) or "").lower()
        if not noun or not (noun.endswith("s") and not noun.endswith(("ss", "us", "is"))):
            return 1
    return None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower())}


def _stem(w: str) -> str:
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


_ALL_COLUMNS = re.compile(
    r"\b(all (?:the )?(?:details|information|info|columns|fields|data|attributes)|"
    r"everything|full record|entire row)\b",
    re.I,
)


def question_columns(question: str, catalog: Catalog, tables: list[str]) -> list[str]:
    """Columns of `tables` that the question names (a column's words all appear in it, singular
    or plural; ids must be named as such). Empty when it asks for "all details"."""
    if _ALL_COLUMNS.search(question):
        return []
    qwords = {_stem(w) for w in _words(question)}
    named = []
    for t in tables:
        for c in catalog.columns(t):
            parts = [_stem(p) for p in re.split(r"[_\W]+", c.lower()) if p]
            if parts and all(p in qwords for p in parts) and not (len(parts) == 1 and len(parts[0]) <= 2):
                named.append(f"{t}.{c}")
    return named


# --------------------------------------------------------------------------- identifiers


def table_names(tree: exp.Expr) -> list[str]:
    """Base tables the query reads (CTE names excluded), in order of appearance."""
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    out: list[str] = []
    for t in tree.find_all(exp.Table):
        if t.name and t.name.lower() not in ctes and not isinstance(t.this, exp.Func) and t.name not in out:
            out.append(t.name)
    return out


def _scope_columns_of(source: Any) -> set[str] | None:
    """Output column names of a CTE / derived table scope (None when it selects *)."""
    if isinstance(source, Scope):
        e = source.expression
        sels = _outer_selects(e) if not isinstance(e, exp.Select) else [e]
        names: set[str] = set()
        for s in sels:
            for p in s.expressions:
                if isinstance(p, exp.Star) or (isinstance(p, exp.Column) and isinstance(p.this, exp.Star)):
                    return None
                names.add(p.alias_or_name.lower())
        alias = source.expression.parent
        if isinstance(alias, (exp.Subquery, exp.CTE)):
            ta = alias.args.get("alias")
            if ta is not None and ta.columns:
                names |= {c.name.lower() for c in ta.columns}
        return names
    return None


def unknown_identifiers(tree: exp.Expr, catalog: Catalog) -> list[str]:
    """Tables and columns the catalog does not have, each as a message naming the identifier."""
    problems: list[str] = []
    for t in table_names(tree):
        if catalog.table(t) is None:
            near = difflib.get_close_matches(t.lower(), [x.lower() for x in catalog.tables], n=2)
            problems.append(f"unknown table {t}" + (f" (did you mean {', '.join(near)}?)" if near else ""))
    if problems:
        return problems
    # every name a query may legitimately use for a column
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for ta in tree.find_all(exp.TableAlias):
        aliases |= {c.name.lower() for c in ta.columns}
        if ta.name:
            aliases.add(ta.name.lower())
    tables_used = table_names(tree)
    used_columns = {c.lower() for t in tables_used for c in catalog.columns(t)}
    try:
        scopes = traverse_scope(tree)
    except Exception:  # sqlglot cannot build scopes for some dialect constructs: check unqualified names only
        scopes = []
    seen: set[str] = set()
    for scope in scopes:
        chain = []
        s: Scope | None = scope
        while s is not None:
            chain.append(s)
            s = s.parent
        for col in scope.columns:
            name = col.name.lower()
            if not name or isinstance(col.this, exp.Star):
                continue
            q = col.table
            if q:
                src = next((sc.sources[q] for sc in chain if q in sc.sources), None)
                if src is None:
                    src = next((sc.sources[k] for sc in chain for k in sc.sources if k.lower() == q.lower()), None)
                if src is None:
                    if catalog.table(q) is not None and catalog.has_column(q, name):
                        continue
                    msg = f"unknown table or alias {q} in {col.sql()}"
                elif isinstance(src, exp.Table):
                    if catalog.table(src.name) is None or catalog.has_column(src.name, name):
                        continue
                    have = ", ".join(catalog.columns(src.name))
                    near = difflib.get_close_matches(name, [c.lower() for c in catalog.columns(src.name)], n=1)
                    msg = f"unknown column {col.sql()}: {src.name} has no column {col.name}" + (
                        f" (did you mean {near[0]}?)" if near else f" (it has {have})"
                    )
                else:
                    cols = _scope_columns_of(src)
                    if cols is None or name in cols or name in aliases:
                        continue
                    msg = f"unknown column {col.sql()}: {q} does not select {col.name}"
            else:
                if name in used_columns or name in aliases:
                    continue
                derived = [
                    _scope_columns_of(src) for sc in chain for src in sc.sources.values() if isinstance(src, Scope)
                ]
                if any(d is None or name in d for d in derived):
                    continue
                near = difflib.get_close_matches(name, sorted(used_columns), n=1)
                msg = f"unknown column {col.name}: none of {', '.join(tables_used) or 'the tables'} has it" + (
                    f" (did you mean {near[0]}?)" if near else ""
                )
            if msg not in seen:
                seen.add(msg)
                problems.append(msg)
    return problems


def query_names(tree: exp.Expr, catalog: Catalog) -> set[str]:
    """Every name (lower case) a column reference of `tree` may resolve to: the columns of the base
    tables it reads, its select-list and table aliases' column names, and CTE / derived-table columns."""
    names = {c.lower() for t in table_names(tree) for c in catalog.columns(catalog.table(t) or t)}
    names |= {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    for ta in tree.find_all(exp.TableAlias):
        names |= {c.name.lower() for c in ta.columns}
    return names


def sqlite_string_literals(tree: exp.Expr, catalog: Catalog) -> tuple[exp.Expr, int]:
    """`tree` read by SQLite's rule for double quotes: a double-quoted name that is no column the query
    can see (:func:`query_names`) is a string literal (``WHERE region = "Central Africa"``), as SQLite
    and Spider's evaluator run it. Returns the tree (changed in place) and how many names became strings."""
    names = query_names(tree, catalog)
    n = 0
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if col.table or not isinstance(ident, exp.Identifier) or not ident.quoted:
            continue
        if ident.name.lower() in names:
            continue
        col.replace(exp.Literal.string(ident.name))
        n += 1
    return tree, n


# --------------------------------------------------------------------------- joins


def _find(parent: dict[str, str], x: str) -> str:
    """The representative of `x` in the union-find forest `parent` (paths halved on the way)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def _owner(col: exp.Column, names: Sequence[str], real: Mapping[str, str], catalog: Catalog | None) -> str | None:
    """The table (an alias or name of `names`; `real` maps each to its base table) a column belongs to: its qualifier,
    else the one table of `names` whose catalog entry has it; None when that is not known."""
    if col.table:
        return col.table.lower() if col.table.lower() in real else None
    if catalog is None:
        return None
    hits = [n for n in names if catalog.has_column(real[n], col.name)]
    return hits[0] if len(hits) == 1 else None


def cartesian_joins(tree: exp.Expr, catalog: Catalog | None) -> list[str] | None:
    """Pairs of base tables joined without any condition relating them, per SELECT. None when no
    SELECT reads two or more base tables (nothing to judge)."""
    findings: list[str] = []
    judged = False
    for sel in selects(tree):
        frm = from_clause(sel)
        if frm is None:
            continue
        sources = [frm.this] + [j.this for j in sel.args.get("joins") or []]
        tables = [s for s in sources if isinstance(s, exp.Table) and s.name]
        if len(tables) < 2:
            continue
        judged = True
        names = [t.alias_or_name.lower() for t in tables]
        real = {t.alias_or_name.lower(): t.name for t in tables}
        parent = {n: n for n in names}
        conds: list[exp.Expr] = []
        for j in sel.args.get("joins") or []:
            if j.args.get("on") is not None:
                conds.append(j.args["on"])
            if j.args.get("using"):
                right = j.this.alias_or_name.lower() if isinstance(j.this, exp.Table) else None
                if right in parent:  # USING links the right table to the left side
                    for n in names[: names.index(right)]:
                        parent[_find(parent, right)] = _find(parent, n)
                        break
        if sel.args.get("where") is not None:
            conds.append(sel.args["where"].this)
        for cond in conds:
            for pred in cond.find_all(exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.In):
                owners = sorted(
                    {o for c in pred.find_all(exp.Column) if (o := _owner(c, names, real, catalog)) is not None}
                )
                for a in owners[1:]:
                    parent[_find(parent, a)] = _find(parent, owners[0])
        aggs = [a for p in sel.expressions for a in aggregates_in(p, sel)]
        if aggs and all(isinstance(a.this, exp.Distinct) for a in aggs) and not sel.args.get("group"):
            continue  # COUNT(DISTINCT …) over a product of independent tables: the product is harmless
        groups: dict[str, list[str]] = {}
        for n in names:
            groups.setdefault(_find(parent, n), []).append(n)
        if len(groups) > 1:
            parts = [" ".join(real[x] for x in g) for g in groups.values()]
            findings.append(
                f"{parts[0]} and {parts[1]} are joined without any condition relating them (a cartesian product)"
            )
    return findings if judged else None


# --------------------------------------------------------------------------- dates

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?$")
_DATEISH = re.compile(
    r"^(\d{4}-\d{1,2}(-\d{1,2})?|\d{1,2}/\d{1,2}/\d{2,4}|\d{4}/\d{1,2}/\d{1,2}|\d{1,2}-\d{1,2}-\d{4})"
    r"([ T]\d{1,2}:\d{2}(:\d{2})?)?$"
)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)


def resolve_columns(tree: exp.Expr, catalog: Catalog) -> dict[int, tuple[str, str, str]]:
    """``id(column node) -> (table, column, TYPE)`` for every column reference of `tree` that names a base
    table's column, resolved by sqlglot's scopes (:func:`sqlglot.optimizer.scope.traverse_scope`): a
    qualified name through its scope's (or an enclosing scope's) aliases, an unqualified one by the one
    table of its own scope that has the column (else of an enclosing scope: a correlated reference).
    Names are case-insensitive, as in SQLite. References to select-list aliases and to derived tables'
    or CTEs' columns are left out, and so are ambiguous ones."""
    out: dict[int, tuple[str, str, str]] = {}
    try:
        scopes = list(traverse_scope(tree))
    except Exception:  # sqlglot cannot build scopes for some constructs: nothing is resolved
        return out
    for scope in scopes:  # innermost scopes first: a column is resolved where it is written
        chain: list[Scope] = []
        sc: Scope | None = scope
        while sc is not None:
            chain.append(sc)
            sc = sc.parent
        try:
            for col in scope.columns:
                if id(col) in out or isinstance(col.this, exp.Star) or not col.name:
                    continue
                ref = _resolve_one(col, chain, catalog)
                if ref is not None:
                    out[id(col)] = ref
        except Exception:  # sqlglot rejects the scope (an alias used twice, …): its columns stay unresolved
            continue
    return out


def _base_table(src: Any, catalog: Catalog) -> str | None:
    return catalog.table(src.name) if isinstance(src, exp.Table) and src.name else None


def _resolve_one(col: exp.Column, chain: list[Scope], catalog: Catalog) -> tuple[str, str, str] | None:
    name = col.name
    if col.table:
        q = col.table.lower()
        for sc in chain:
            hit = next((src for alias, (_, src) in sc.selected_sources.items() if alias.lower() == q), None)
            if hit is not None:
                t = _base_table(hit, catalog)
                ty = catalog.column_type(t, name) if t else None
                return (t, _spelt(catalog, t, name), ty) if t and ty else None
        t = catalog.table(col.table)  # a table named, not aliased, in no FROM of the chain
        ty = catalog.column_type(t, name) if t else None
        return (t, _spelt(catalog, t, name), ty) if t and ty else None
    for sc in chain:
        hits = []
        for _, (_, src) in sc.selected_sources.items():
            t = _base_table(src, catalog)
            if t is not None and catalog.has_column(t, name):
                hits.append(t)
            elif isinstance(src, Scope):
                cols = _scope_columns_of(src)
                if cols is None or name.lower() in cols:
                    return None  # a derived table's column (or its *): not a base column
        if len(set(hits)) == 1:
            t = hits[0]
            return t, _spelt(catalog, t, name), catalog.column_type(t, name) or ""
        if hits:
            return None  # ambiguous
    return None


def _spelt(catalog: Catalog, table: str, column: str) -> str:
    return next((c for c in catalog.columns(table) if c.lower() == column.lower()), column)


def _column_ref(
    node: exp.Expr,
    tree: exp.Expr,
    catalog: Catalog,
    resolved: dict[int, tuple[str, str, str]] | None = None,
) -> tuple[str, str, str] | None:
    """(table, column, TYPE) of a column reference (:func:`resolve_columns`)."""
    if not isinstance(node, exp.Column):
        return None
    if resolved is None:
        resolved = resolve_columns(tree, catalog)
    ref = resolved.get(id(node))
    return ref if ref is not None and ref[2] else None


def date_string_comparisons(tree: exp.Expr, catalog: Catalog) -> tuple[list[str], int]:
    """Comparisons between a date-like column and a string literal that go wrong, and how many
    such comparisons there are: a numeric column (epoch, year) compared with a date string; a DATE
    or TIMESTAMP column compared with a non-ISO date string; a text column of non-ISO dates
    compared by range with a date string."""
    problems: list[str] = []
    n = 0
    resolved = resolve_columns(tree, catalog)
    for cmp in tree.find_all(*_COMPARISONS, exp.Between):
        if isinstance(cmp, exp.Between):
            pairs = [(cmp.this, cmp.args.get("low")), (cmp.this, cmp.args.get("high"))]
            ranged = True
        else:
            pairs = [(cmp.this, cmp.expression), (cmp.expression, cmp.this)]
            ranged = not isinstance(cmp, (exp.EQ, exp.NEQ))
        for col, lit in pairs:
            if not (isinstance(lit, exp.Literal) and lit.is_string):
                continue
            ref = _column_ref(col, tree, catalog, resolved)
            if ref is None:
                continue
            t, c, ty = ref
            if not is_date_like(c, ty):
                continue
            value = lit.this
            if not _DATEISH.match(value.strip()):
                continue
            n += 1
            tyu = ty.upper()
            if tyu in ("BIGINT", "INTEGER", "INT", "SMALLINT", "DOUBLE", "REAL", "FLOAT", "NUMBER", "DECIMAL"):
                samples = catalog.samples.get(f"{t}.{c}")
                hint = f" (values look like {samples[0]})" if samples else ""
                problems.append(f"{t}.{c} is {tyu}{hint} but is compared with the date string '{value}'")
            elif tyu.startswith(("DATE", "TIMESTAMP")) and not _ISO_DATE.match(value.strip()):
                problems.append(
                    f"{t}.{c} is {tyu} but is compared with '{value}', which is not an ISO date (YYYY-MM-DD)"
                )
            elif ranged and tyu in ("TEXT", "VARCHAR", "STRING"):
                samples = catalog.samples.get(f"{t}.{c}", ())
                if samples and not all(_ISO_DATE.match(s) for s in samples):
                    problems.append(
                        f"{t}.{c} holds dates as text like '{samples[0]}', so comparing it with "
                        f"'{value}' by range compares strings, not dates"
                    )
    return problems, n


# --------------------------------------------------------------------------- failure classes of real predictions


def string_comparisons(tree: exp.Expr, catalog: Catalog) -> list[tuple[str, str, str, str]]:
    """``(table, column, literal, how)`` for every column compared with a string literal: ``how`` is
    ``"="`` (also ``!=``, ``IN``) or ``"like"`` (the literal is a LIKE pattern). Columns whose table
    cannot be told are left out."""
    out: list[tuple[str, str, str, str]] = []
    resolved = resolve_columns(tree, catalog)
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.Like, exp.ILike, exp.In):
        if isinstance(node, exp.In):
            pairs = [(node.this, e) for e in node.expressions]
        else:
            pairs = [(node.this, node.expression), (node.expression, node.this)]
        how = "like" if isinstance(node, (exp.Like, exp.ILike)) else "="
        for col, lit in pairs:
            if isinstance(lit, exp.Literal) and lit.is_string:
                ref = _column_ref(col, tree, catalog, resolved)
                if ref is not None:
                    out.append((ref[0], ref[1], lit.this, how))
    return out


_AGG_CUES = {
    exp.Count: re.compile(r"\b(how many|number|numbers|count|counts|amount)\b", re.I),
    exp.Sum: re.compile(r"\b(total|sum|overall|combined|altogether)\b", re.I),
    exp.Avg: re.compile(r"\b(average|mean|avg)\b", re.I),
}
# "the most number of concerts", "fewest number of flights": a superlative over a figure, not a request for it
_SUPERLATIVE_FIGURE = re.compile(
    r"\b(the\s+)?(most|least|largest|smallest|highest|lowest|fewest|greatest|biggest|"
    r"max(imum)?|min(imum)?)\s+(total\s+)?(number|count|amount|sum|average)s?\s+of\b",
    re.I,
)


def ordering_aggregates(tree: exp.Expr, question: str) -> list[str]:
    """Aggregates (COUNT, SUM, AVG) the outer SELECT returns although it only needs them to order or
    filter (they recur in ORDER BY or HAVING) and the question does not ask for such a figure:
    ``SELECT name, COUNT(*) AS n … ORDER BY n DESC LIMIT 1`` for "which … has the most …"."""
    if not isinstance(tree, exp.Select) or len(tree.expressions) < 2:
        return []
    used: set[str] = set()
    for clause in ("order", "having"):
        node = tree.args.get(clause)
        if node is not None:
            used |= {n.sql().lower() for n in node.find_all(exp.AggFunc)}
            used |= {c.name.lower() for c in node.find_all(exp.Column) if not c.table}
    found = []
    asked = _SUPERLATIVE_FIGURE.sub(" ", question)
    for proj in tree.expressions:
        inner = proj.this if isinstance(proj, exp.Alias) else proj
        if not isinstance(inner, exp.AggFunc) or type(inner) not in _AGG_CUES:
            continue
        cue = _AGG_CUES[type(inner)]
        if cue.search(asked):
            continue
        if inner.sql().lower() in used or (isinstance(proj, exp.Alias) and proj.alias.lower() in used):
            found.append(proj.sql())
    return found


def unused_joins(tree: exp.Expr, catalog: Catalog | None) -> list[tuple[str, exp.Join]]:
    """Inner joins of the outer SELECT of which nothing is used outside the join's own ON condition, in a
    query whose result would show repeated rows: ``(table, join)`` pairs. Such a join is a *semi-join*
    (it keeps the rows that have a match), which is often what the question asks; it is a defect only
    when it also repeats rows, which only the data can tell (:func:`without_join`). Not a candidate: a
    join in a nested query (IN / EXISTS / derived tables only test membership or are aggregated), a
    SELECT that aggregates, groups or is DISTINCT, the arms of UNION / INTERSECT / EXCEPT (they remove
    duplicates), joins without ON, outer and cross joins, and self-joins of one table name."""
    sel = tree
    if not isinstance(sel, exp.Select) or sel.args.get("group") or sel.args.get("distinct"):
        return []
    if any(aggregates_in(p, sel) for p in sel.expressions) or sel.args.get("having"):
        return []
    joins = sel.args.get("joins") or []
    frm = from_clause(sel)
    if not joins or frm is None:
        return []
    sources = [frm.this] + [j.this for j in joins]
    if not all(isinstance(t, exp.Table) and t.name for t in sources):
        return []
    names = [t.alias_or_name.lower() for t in sources]
    found = []
    for j in joins:
        on = j.args.get("on")
        if on is None or j.args.get("side") or j.args.get("kind") in ("CROSS",):
            continue
        t = j.this
        me = t.alias_or_name.lower()
        if names.count(me) > 1 or [x.name.lower() for x in sources].count(t.name.lower()) > 1:
            continue
        uses = 0
        for col in sel.find_all(exp.Column):
            if _within(col, on):
                continue
            if col.table:
                uses += col.table.lower() == me
            elif catalog is None or catalog.has_column(t.name, col.name):
                uses += 1
        if uses == 0:
            found.append((f"{t.name}" + (f" AS {t.alias}" if t.alias else ""), j))
    return found


def without_join(tree: exp.Select, join: exp.Join) -> exp.Select:
    """A copy of `tree` without `join` (its ON condition goes with it) and without the outer ORDER BY,
    LIMIT and OFFSET: what the query returns when the joined table only could have filtered or repeated
    rows."""
    idx = (tree.args.get("joins") or []).index(join)
    out = tree.copy()
    js = list(out.args.get("joins") or [])
    del js[idx]
    out.set("joins", js or None)
    for k in ("order", "limit", "offset"):
        out.set(k, None)
    return out


def unbounded(tree: exp.Select) -> exp.Select:
    """A copy of `tree` without the outer ORDER BY, LIMIT and OFFSET."""
    out = tree.copy()
    for k in ("order", "limit", "offset"):
        out.set(k, None)
    return out


def column_refs(tree: exp.Expr, catalog: Catalog) -> set[tuple[str, str]]:
    """``(table, column)`` of every column reference whose base table can be told (catalog spelling)."""
    return {(t, c) for t, c, _ in resolve_columns(tree, catalog).values()}


def has_threshold(tree: exp.Expr) -> bool:
    """Whether some SELECT of the query keeps groups by a HAVING condition (``HAVING COUNT(*) >= 2``):
    a threshold the data may leave unmet, so that an empty answer is a possible right one."""
    return any(s.args.get("having") is not None for s in selects(tree))


def bare_column_projection(tree: exp.Expr, index: int) -> bool:
    """Whether the outer SELECT's `index`-th projection is a plain column of a table read through FROM
    or an inner join (so its NULLs are the data's own, not made by an outer join or an expression)."""
    if not isinstance(tree, exp.Select) or index >= len(tree.expressions):
        return False
    if any(j.args.get("side") for j in tree.args.get("joins") or []):
        return False
    p = tree.expressions[index]
    p = p.this if isinstance(p, exp.Alias) else p
    return isinstance(p, exp.Column) and not isinstance(p.this, exp.Star)


def _within(node: exp.Expr, container: exp.Expr) -> bool:
    p: exp.Expr | None = node
    while p is not None:
        if p is container:
            return True
        p = p.parent
    return False


#: Functions whose value differs from one run to the next (randomness) or with the moment of the run (the
#: clock), as sqlglot parses them into classes of their own ...
_VOLATILE_CLASSES: tuple[type[Any], ...] = tuple(
    c
    for c in (
        getattr(exp, name, None)
        for name in (
            "Rand",
            "Randn",
            "Uuid",
            "CurrentDate",
            "CurrentTime",
            "CurrentTimestamp",
            "CurrentDatetime",
            "Localtime",
            "Localtimestamp",
            "UnixSeconds",
        )
    )
    if isinstance(c, type)
)
#: ... or leaves as plain (anonymous) function calls, by their names in SQLite and DuckDB.
_VOLATILE_NAMES = frozenset(
    {
        "random",
        "randomblob",
        "rand",
        "uuid",
        "gen_random_uuid",
        "now",
        "today",
        "get_current_time",
        "get_current_timestamp",
        "current_localtimestamp",
        "transaction_timestamp",
        "setseed",
    }
)


def volatile_calls(tree: Any) -> list[str]:  # an exp.Expression (sqlglot types parses as Expr)
    """The calls in the query whose value depends on when or how it runs -- randomness (``random()``) or
    the clock (``CURRENT_DATE``, ``now()``, SQLite's ``date('now')``) -- as written, in order, each once.
    Such a query may be right (a question about the last ten years reads the clock), but its result, and
    every verdict read from it, is not a function of the query alone."""
    found: list[str] = []
    for node in tree.walk(bfs=False):  # depth first: in the order they are written
        name = ""
        if isinstance(node, _VOLATILE_CLASSES):
            name = node.sql()
        elif isinstance(node, exp.Anonymous) and str(node.name).lower() in _VOLATILE_NAMES:
            name = f"{node.name}()"
        elif (
            isinstance(node, exp.Literal)
            and node.is_string
            and node.this.strip().lower() == "now"
            and isinstance(node.parent, exp.Func)  # SQLite's time value 'now', not a compared string
        ):
            text = node.parent.sql()
            name = text if len(text) <= 40 else text[:39] + "…"
        if name and name not in found:
            found.append(name)
    return found


__all__ = [
    "bounds_rows_otherwise",
    "cartesian_joins",
    "date_string_comparisons",
    "has_aggregate",
    "limit_tie_probe",
    "missing_group_by",
    "ordering_aggregates",
    "outer_limit",
    "query_names",
    "question_columns",
    "sqlite_string_literals",
    "star_projections",
    "string_comparisons",
    "table_names",
    "tie_at_limit",
    "top_n_requested",
    "unbounded",
    "unknown_identifiers",
    "unused_joins",
    "without_join",
    "column_refs",
    "has_threshold",
    "bare_column_projection",
    "resolve_columns",
    "volatile_calls",
]
