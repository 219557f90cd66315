"""Static SQL ops never raise, whatever the query: parseable or not, odd constructs included."""

import pytest

pytest.importorskip("sqlglot")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vx.families.sql import ops as O  # noqa: E402
from vx.families.sql.ops import templates as T  # noqa: E402
from vx.ops.core import Context  # noqa: E402
from vx.ops.specs import op_from_spec  # noqa: E402

CATALOG = {
    "tables": {
        "author": [["aid", "BIGINT"], ["name", "TEXT"]],
        "writes": [["aid", "BIGINT"], ["pid", "BIGINT"]],
        "publication": [["pid", "BIGINT"], ["year", "BIGINT"], ["title", "TEXT"]],
    },
    "samples": {"publication.year": ["2020", "2021"]},
}
QUESTIONS = [
    "Which author has the most papers?",
    "List all details",
    "What is the average year of the top 3 papers, ordered from highest to lowest?",
    "How many papers per author?",
    "",
]

cols = st.sampled_from(["aid", "name", "pid", "year", "title", "a.aid", "w.pid", "p.year", "x.y", "*", "nope"])
tables = st.sampled_from(
    ["author a", "writes w", "publication p", "authors", "(SELECT aid FROM writes) s", "author", "writes"]
)
exprs = st.one_of(
    cols,
    st.builds(
        lambda f, c: f"{f}({c})",
        st.sampled_from(["COUNT", "SUM", "AVG", "MAX", "MIN", "LOWER", "COUNT(DISTINCT"]),
        cols,
    ),
    st.sampled_from(["1", "'2020-01-01'", "NULL", "'01/02/2020'", "RANK() OVER (ORDER BY aid)"]),
)
conds = st.builds(lambda a, op, b: f"{a} {op} {b}", exprs, st.sampled_from(["=", "<", ">=", "<>", "LIKE", "IN"]), exprs)


@st.composite
def queries(draw):
    sel = ", ".join(draw(st.lists(exprs, min_size=1, max_size=3)))
    frm = draw(tables)
    parts = [f"SELECT {draw(st.sampled_from(['', 'DISTINCT ']))}{sel} FROM {frm}"]
    for _ in range(draw(st.integers(0, 2))):
        parts.append(f"{draw(st.sampled_from(['JOIN', 'LEFT JOIN', ',', 'CROSS JOIN']))} {draw(tables)}")
        if draw(st.booleans()):
            parts.append(f"ON {draw(conds)}")
    if draw(st.booleans()):
        parts.append(f"WHERE {draw(conds)}")
    if draw(st.booleans()):
        parts.append(f"GROUP BY {draw(cols)}")
    if draw(st.booleans()):
        parts.append(f"ORDER BY {draw(cols)} {draw(st.sampled_from(['', 'DESC', 'ASC']))}")
    if draw(st.booleans()):
        parts.append(f"LIMIT {draw(st.integers(0, 5))}")
    text = " ".join(parts)
    if draw(st.integers(0, 9)) == 0:  # damaged text
        k = draw(st.integers(0, len(text)))
        text = text[:k] + draw(st.sampled_from(["(", ")", "'", ";", " FORM ", ""])) + text[k:]
    return text


SPECS = [
    op_from_spec({"kind": "static", "check": c, "params": p, "detects": "x"})
    for c, p in [
        ("forbids_construct", {"construct": "star", "cue": T.CUES["each"]}),
        ("requires_construct", {"construct": "avg", "cue": T.CUES["average"]}),
        ("order_direction", {"direction": "desc", "cue": ""}),
        ("join_key_names", {"min_similarity": 0.5}),
    ]
]
STATIC = [o for o in O.SEED_OPS if o.tier == "static"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries(), st.sampled_from(QUESTIONS))
def test_static_ops_and_templates_never_raise(sql, question):
    task = {"id": "t", "question": question, "dialect": "duckdb", "catalog": CATALOG}
    ctx = Context()
    for o in STATIC + SPECS:
        r = o(task, sql, ctx)  # raises on an op bug
        assert int(r.verdict) in (-1, 0, 1)
        if int(r.verdict) == 1:
            assert r.message, o.name
