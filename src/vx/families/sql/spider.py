"""Spider's execution-accuracy rules (Yu et al. 2018; test-suite-sql-eval's ``eval_exec_match`` with its
default flags), on the query text. The result comparison itself is
:func:`vx.families.sql.compare.spider_match`.

Before running, Spider's evaluator

* keeps a prediction's first tab-separated field, replaces ``value`` by ``1`` in it (Spider's value
  placeholder) and repairs ``> =``, ``< =``, ``! =`` and MySQL's ``YEAR(CURDATE())`` (2020) in both
  queries -- :func:`evaluation_text`;
* removes the keyword DISTINCT from both queries (outside string literals and quoted names), so
  ``SELECT DISTINCT x`` and ``SELECT x`` -- and ``count(DISTINCT x)`` and ``count(x)`` -- are the same
  query to it -- :func:`strip_distinct`;
* lets row order count only when the gold query's text contains ``order by`` -- :func:`order_matters`.

A task whose ``match`` field is ``"spider"`` is compared by these rules (ground truth, the dev teacher
and the SQL peer ops); any other task by Spider 2.0's (:mod:`vx.families.sql.compare`).
"""

from __future__ import annotations

import re

MATCH = "spider"  # the task field ``match`` naming these rules

_REPAIRS = (("> =", ">="), ("< =", "<="), ("! =", "!="))
_CURDATE = re.compile(r"YEAR\s*\(\s*CURDATE\s*\(\s*\)\s*\)\s*", re.I)
_QUOTED = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")")
_DISTINCT = re.compile(r"\bdistinct\b", re.I)


def _repair(sql: str) -> str:
    for bad, good in _REPAIRS:
        sql = sql.replace(bad, good)
    return _CURDATE.sub("2020", sql)


def evaluation_text(sql: str, *, prediction: bool = True) -> str:
    """The query as Spider's evaluator runs it (see the module docstring; DISTINCT is kept)."""
    if prediction:
        sql = sql.strip().split("\t")[0].replace("value", "1")
    return _repair(sql)


def strip_distinct(sql: str) -> str:
    """`sql` without the keyword DISTINCT outside string literals and quoted identifiers (sqlglot's
    SQLite tokenizer finds the keywords; text it cannot tokenize is split on quotes instead)."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    try:
        tokens = Dialect.get_or_raise("sqlite").tokenize(sql)
    except TokenError:
        parts = _QUOTED.split(sql)
        return "".join(p if i % 2 else _DISTINCT.sub("", p) for i, p in enumerate(parts))
    out, pos = [], 0
    for t in tokens:
        if t.token_type == TokenType.DISTINCT:
            out.append(sql[pos : t.start])
            pos = t.end + 1
    out.append(sql[pos:])
    return "".join(out)


def comparable_text(sql: str, *, prediction: bool = True) -> str:
    """What Spider's evaluator executes for a query: :func:`evaluation_text` without DISTINCT."""
    return strip_distinct(evaluation_text(sql, prediction=prediction))


def order_matters(gold: str) -> bool:
    """Row order counts when the gold query's text contains ``order by`` (Spider's own test)."""
    return "order by" in gold.lower()


__all__ = ["MATCH", "comparable_text", "evaluation_text", "order_matters", "strip_distinct"]
