"""Parametric check templates of the SQL family, each with an inducer for offline synthesis.

Most SQL mistakes a static op can see are mismatches between a *cue* in the question and a
*construct* in the query: the question says "average" and the query sums; it says "more than" and
the query compares with ``<``; it asks for a ranking from highest to lowest and the query orders
ascending. The templates state such checks with plain parameters:

``forbids_construct(construct, cue)``   the query uses `construct` although the question matches `cue`
``requires_construct(construct, cue)``  the question matches `cue` but the query lacks `construct`
``order_direction(direction, cue)``     the question matches `cue` but the outer ORDER BY runs the other way
``max_result_rows(n, cue)``             (exec) the question matches `cue` but the result has more than n rows
``join_key_names(min_similarity)``      a join equality pairs columns whose names are unrelated

A *construct* is a feature name from `features` (``avg``, ``count_distinct``, ``lt``, ``star``…);
a *cue* is a regular expression over the question ("" = any question). When the cue does not match,
the op abstains. Inducers read clusters of bad (task, output) pairs and known-good pairs and propose
the parameter sets that separate them: a construct present in at least half the cluster (the birth
gate's bar), among items whose question matches the cue, and in none of the good items with that
cue, and so on.
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from vx.families.sql.ops.item import Parsed, dialect, execution, parsed, sql_text
from vx.ops import clean, drawback
from vx.ops.specs import inducer, template

FAMILY = "sql"
Pairs = Sequence[tuple[Mapping[str, Any], Any]]

# Question cues an inducer may use (a closed list keeps synthesized ops readable).
CUES: dict[str, str] = {
    "average": r"\b(average|mean|avg)\b",
    "total": r"\b(total|sum)\b",
    "count": r"\b(how many|number of|count)\b",
    "more": r"\b(more than|greater than|above|over|exceed\w*|at least|after|higher than|larger than)\b",
    "less": r"\b(less than|fewer than|below|under|at most|before|lower than|smaller than)\b",
    "distinct": r"\b(distinct|unique|different)\b",
    "top": r"\b(highest|most|largest|biggest|greatest|top|best|maximum|max)\b",
    "bottom": r"\b(lowest|least|smallest|fewest|minimum|min|cheapest|earliest)\b",
    "each": r"\b(each|per|every|by)\b",
    "ratio": r"\b(ratio|proportion|percentage|percent|fraction|rate)\b",
    "descending": r"\b(descending|highest to lowest|most to least|largest to smallest|from highest|from most)\b",
    "ascending": r"\b(ascending|lowest to highest|least to most|smallest to largest|from lowest|alphabetical)\b",
    "any": "",
}

# Constructs: sqlglot node keys worth naming, plus a few derived features.
_NODE_KEYS = (
    "avg",
    "sum",
    "count",
    "max",
    "min",
    "distinct",
    "limit",
    "order",
    "group",
    "having",
    "join",
    "gt",
    "gte",
    "lt",
    "lte",
    "eq",
    "neq",
    "not",
    "like",
    "ilike",
    "in",
    "between",
    "subquery",
    "window",
    "case",
    "cast",
    "nullif",
    "coalesce",
    "union",
    "with",
)
DERIVED = (
    "star",
    "count_distinct",
    "count_star",
    "order_desc",
    "order_asc",
    "left_join",
    "cross_join",
    "float_division",
)
CONSTRUCTS = tuple(sorted(set(_NODE_KEYS) | set(DERIVED)))


def features(tree: exp.Expr) -> set[str]:
    """The constructs a query uses (see CONSTRUCTS)."""
    out: set[str] = set()
    for node in tree.walk():
        key = node.key
        if key in _NODE_KEYS:
            out.add(key)
        if isinstance(node, exp.Select) and node.args.get("distinct") is not None:
            out.add("distinct")
        if isinstance(node, exp.Count):
            if isinstance(node.this, exp.Distinct):
                out.add("count_distinct")
            if isinstance(node.this, exp.Star) or node.this is None:
                out.add("count_star")
        if (
            isinstance(node, exp.Star)
            and isinstance(node.parent, (exp.Select, exp.Column))
            and not isinstance(node.parent, exp.Count)
        ):
            out.add("star")
        if isinstance(node, exp.Join):
            side = (node.args.get("side") or "").upper()
            kind = (node.args.get("kind") or "").upper()
            if side == "LEFT":
                out.add("left_join")
            if kind == "CROSS" or (node.args.get("on") is None and not node.args.get("using")):
                out.add("cross_join")
        if isinstance(node, exp.Div) and node.find(exp.Cast) is not None:
            out.add("float_division")
    direction = outer_order_direction(tree)
    if direction:
        out.add(f"order_{direction}")
    return out


def outer_order_direction(tree: exp.Expr) -> str | None:
    order = tree.args.get("order")
    if order is None or not order.expressions:
        return None
    return "desc" if order.expressions[0].args.get("desc") else "asc"


def _tree_of(task, output, ctx) -> exp.Expr | None:
    p = parsed(ctx) if ctx is not None else None
    if p is not None:
        return p.tree
    try:
        tree = sqlglot.parse_one(sql_text(output), read=dialect(task))
    except (SqlglotError, ValueError):
        return None
    if ctx is not None and tree is not None and isinstance(tree, exp.Query):
        ctx["artifact"] = Parsed(tree, dialect(task))
    return tree


def _cue_matches(cue: str, task: Mapping[str, Any]) -> bool:
    return not cue or re.search(cue, str(task.get("question", "")), re.I) is not None


def _cue_text(cue: str) -> str:
    name = next((k for k, v in CUES.items() if v == cue), None)
    return f"the question's “{name}” wording" if name and cue else "the question"


# --------------------------------------------------------------------------- templates


@template(
    "forbids_construct",
    kind="static",
    params={"construct": "str", "cue": "str"},
    family=FAMILY,
    description="The query uses a construct that the question's wording rules out",
)
def forbids_construct(construct: str, cue: str):
    def fn(task, output, ctx):
        if not _cue_matches(cue, task):
            return None
        tree = _tree_of(task, output, ctx)
        if tree is None:
            return None
        if construct in features(tree):
            return drawback(f"the query uses {construct.upper()} despite {_cue_text(cue)}")
        return clean()

    return fn


@template(
    "requires_construct",
    kind="static",
    params={"construct": "str", "cue": "str"},
    family=FAMILY,
    description="The question's wording calls for a construct the query lacks",
)
def requires_construct(construct: str, cue: str):
    def fn(task, output, ctx):
        if not _cue_matches(cue, task):
            return None
        tree = _tree_of(task, output, ctx)
        if tree is None:
            return None
        if construct not in features(tree):
            return drawback(f"{_cue_text(cue)} calls for {construct.upper()}, which the query lacks")
        return clean()

    return fn


@template(
    "order_direction",
    kind="static",
    params={"direction": "str", "cue": "str"},
    family=FAMILY,
    description="The outer ORDER BY runs against the direction the question asks for",
)
def order_direction(direction: str, cue: str):
    want = direction.lower()

    def fn(task, output, ctx):
        if not _cue_matches(cue, task):
            return None
        tree = _tree_of(task, output, ctx)
        got = outer_order_direction(tree) if tree is not None else None
        if got is None:
            return None
        if got != want:
            return drawback(f"ORDER BY … {got.upper()} but {_cue_text(cue)} asks for {want.upper()}")
        return clean()

    return fn


@template(
    "max_result_rows",
    kind="exec",
    params={"n": "int", "cue": "str"},
    family=FAMILY,
    description="The question calls for at most n rows but the result has more",
)
def max_result_rows(n: int, cue: str):
    def fn(task, output, ctx):
        if not _cue_matches(cue, task):
            return None
        res = execution(task, output, ctx)
        if res is None or not res.ok:
            return None
        if len(res.rows) > n:
            return drawback(f"{len(res.rows)} rows where {_cue_text(cue)} calls for at most {n}")
        return clean()

    return fn


def join_key_pairs(tree: exp.Expr) -> list[tuple[str, str, float]]:
    """(left column, right column, name similarity) of every column = column equality in a JOIN ON."""
    out = []
    for j in tree.find_all(exp.Join):
        on = j.args.get("on")
        if on is None:
            continue
        for eq in on.find_all(exp.EQ):
            a, b = eq.this, eq.expression
            if isinstance(a, exp.Column) and isinstance(b, exp.Column):
                out.append((a.sql(), b.sql(), name_similarity(a.name, b.name)))
    return out


def name_similarity(a: str, b: str) -> float:
    """How related two column names are, in [0, 1], after dropping key suffixes (``_id``, ``id``,
    ``_code``, ``code``): equal or nested stems → 1 (``author_id`` ~ ``aid``), else difflib's ratio of
    the stems (``aid`` vs ``pid`` → 0)."""
    a, b = a.lower(), b.lower()
    if a == b:
        return 1.0
    sa, sb = (re.sub(r"_?(id|code|key)$", "", x) or x for x in (a, b))
    if sa == sb or (sa and sb and (sa.startswith(sb) or sb.startswith(sa))):
        return 1.0
    return difflib.SequenceMatcher(None, sa, sb).ratio()


@template(
    "join_key_names",
    kind="static",
    params={"min_similarity": "float"},
    family=FAMILY,
    description="A JOIN equality pairs columns whose names are unrelated (a likely wrong join key)",
)
def join_key_names(min_similarity: float):
    def fn(task, output, ctx):
        tree = _tree_of(task, output, ctx)
        if tree is None:
            return None
        pairs = join_key_pairs(tree)
        if not pairs:
            return None
        worst = min(pairs, key=lambda p: p[2])
        if worst[2] < min_similarity:
            return drawback(f"JOIN ON {worst[0]} = {worst[1]} pairs unrelated columns (name similarity {worst[2]:.2f})")
        return clean()

    return fn


# --------------------------------------------------------------------------- inducers


def _prepared(pairs: Pairs) -> list[tuple[Mapping[str, Any], exp.Expr]]:
    out = []
    for task, output in pairs:
        tree = _tree_of(task, output, None)
        if tree is not None:
            out.append((task, tree))
    return out


def _by_cue(items: list[tuple[Mapping[str, Any], Any]], cue: str) -> list:
    return [x for x in items if _cue_matches(cue, x[0])]


def _need(n: int) -> int:
    """Items of a cluster of n a proposal must catch: half (the birth gate's bar), at least 2."""
    return max(2, (n + 1) // 2) if n > 1 else 1


@inducer("forbids_construct")
def _induce_forbids(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    bad = [(t, features(tree)) for t, tree in _prepared(cluster)]
    ok = [(t, features(tree)) for t, tree in _prepared(good)]
    scored: list[tuple[int, str, str]] = []
    for cue in CUES.values():
        b = _by_cue(bad, cue)
        if not b:
            continue
        g = _by_cue(ok, cue)
        counts = Counter(f for _, fs in b for f in fs)
        banned = set().union(*[fs for _, fs in g]) if g else set()
        for f, c in counts.items():
            if c >= _need(len(bad)) and f not in banned:
                scored.append((c, f, cue))
    scored.sort(key=lambda s: (-s[0], s[2] != "", s[1], s[2]))
    return [{"construct": f, "cue": cue} for _, f, cue in scored[:6]]


@inducer("requires_construct")
def _induce_requires(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    bad = [(t, features(tree)) for t, tree in _prepared(cluster)]
    ok = [(t, features(tree)) for t, tree in _prepared(good)]
    scored: list[tuple[int, str, str]] = []
    for cue in CUES.values():
        if not cue:
            continue  # "every query must use X" is never a sound check
        b = _by_cue(bad, cue)
        g = _by_cue(ok, cue)
        if not b or not g:
            continue
        common = set.intersection(*[fs for _, fs in g])
        for f in common:
            missing = sum(1 for _, fs in b if f not in fs)
            if missing >= _need(len(bad)):
                scored.append((missing, f, cue))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [{"construct": f, "cue": cue} for _, f, cue in scored[:6]]


@inducer("order_direction")
def _induce_order(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    bad = [(t, outer_order_direction(tree)) for t, tree in _prepared(cluster)]
    ok = [(t, outer_order_direction(tree)) for t, tree in _prepared(good)]
    out = []
    for cue in CUES.values():
        if not cue:
            continue
        for want in ("desc", "asc"):
            b = [d for _, d in _by_cue(bad, cue) if d is not None]
            g = [d for _, d in _by_cue(ok, cue) if d is not None]
            wrong = sum(1 for d in b if d != want)
            if b and wrong >= _need(len(bad)) and all(d == want for d in g):
                out.append((wrong, want, cue))
    out.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [{"direction": w, "cue": c} for _, w, c in out[:4]]


@inducer("max_result_rows")
def _induce_rows(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    def rows(pairs: Pairs) -> list[tuple[Mapping[str, Any], int]]:
        out = []
        for task, output in pairs:
            res = execution(task, output, {})
            if res is not None and res.ok:
                out.append((task, len(res.rows)))
        return out

    bad, ok = rows(cluster), rows(good)
    props = []
    for cue in CUES.values():
        b = _by_cue(bad, cue)
        g = _by_cue(ok, cue)
        if not b or not g:
            continue
        n = max(r for _, r in g)
        over = sum(1 for _, r in b if r > n)
        if over >= _need(len(bad)):
            props.append((over, n, cue))
    props.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [{"n": n, "cue": c} for _, n, c in props[:3]]


@inducer("join_key_names")
def _induce_join(cluster: Pairs, good: Pairs) -> list[dict[str, Any]]:
    def worst(pairs: Pairs) -> list[float]:
        out = []
        for _, tree in _prepared(pairs):
            sims = [s for _, _, s in join_key_pairs(tree)]
            if sims:
                out.append(min(sims))
        return out

    bad, ok = worst(cluster), worst(good)
    if not bad:
        return []
    floor = min(ok) if ok else 1.0
    caught = [s for s in bad if s < floor]
    if len(caught) < _need(len(bad)):
        return []
    return [{"min_similarity": math.floor(floor * 100) / 100}]  # rounded down: the good stay clean


__all__ = ["CONSTRUCTS", "CUES", "features", "join_key_pairs", "name_similarity", "outer_order_direction"]
