"""The SQL family's closed failure taxonomy and the evidence-based failure classifier."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vx.families.sql.ops import exec as X
from vx.families.sql.ops import static as S

# Closed taxonomy of failure classes (clusters for synthesis).
TAXONOMY = (
    "syntax_error",
    "execution_error",
    "unknown_identifier",
    "missing_group_by",
    "select_star",
    "missing_limit",
    "cartesian_join",
    "date_format",
    "wrong_join_key",
    "wrong_predicate",
    "wrong_aggregate",
    "wrong_columns",
    "wrong_order",
    "duplicate_rows",
    "missing_filter",
    "empty_result",
    "null_result",
    "timeout",
    "wrong_result",
    "wrong_literal",
    "extra_columns",
    "wrong_join_path",
    "limit_ties",
)


def classify_by_evidence(task: Mapping[str, Any], output: Any) -> str:
    """A failing item's class read off the query itself (the first static op that fires), else
    "wrong_result". Builder provenance is the pack's business (:mod:`vx.families.sql.pack`)."""
    ctx: dict = {}
    if S.parses(task, output, ctx).verdict == 1:
        return "syntax_error"
    for o, cls in (
        (S.unknown_identifier, "unknown_identifier"),
        (S.missing_group_by, "missing_group_by"),
        (S.cartesian_join, "cartesian_join"),
        (S.top_n_missing_limit, "missing_limit"),
        (S.select_star, "select_star"),
        (S.date_as_string_compare, "date_format"),
        (S.extra_aggregate_column, "extra_columns"),
        (X.unused_join, "wrong_join_path"),
    ):
        if o(task, output, ctx).verdict == 1:
            return cls
    return "wrong_result"
