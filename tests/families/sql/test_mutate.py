"""The SQL mutation engine: each operator's edit, determinism, and labels by execution."""

import pytest

pytest.importorskip("sqlglot")
pytest.importorskip("duckdb")
pytest.importorskip("defog_data")  # the databases are built from its dumps

from vx.families.sql.catalog import Catalog  # noqa: E402
from vx.families.sql.data.mutate import BENIGN, HARMFUL, OPERATORS, MutationError, mutants, mutate  # noqa: E402
from vx.families.sql.warehouse import open_warehouse  # noqa: E402

Q = (
    "SELECT a.name, COUNT(DISTINCT w.pid) AS n FROM author AS a JOIN writes AS w ON a.aid = w.aid "
    "WHERE w.pid > 3 AND a.name LIKE 'A%' GROUP BY a.name ORDER BY n DESC LIMIT 5"
)
ATIS = "SELECT flight_id FROM flight WHERE departure_time >= 1577840000 AND stops = 0"


@pytest.fixture(scope="module")
def cats():
    out = {}
    for db in ("academic", "atis"):
        with open_warehouse({"backend": "duckdb", "source": "defog", "database": db}) as wh:
            out[db] = Catalog.from_warehouse(wh)
    return out


@pytest.mark.parametrize(
    "name, gone, present",
    [
        ("drop_group_by", "GROUP BY", "COUNT(DISTINCT"),
        ("select_star", "a.name,", "SELECT *"),
        ("drop_limit", "LIMIT", "ORDER BY n DESC"),
        ("wrong_aggregate", "COUNT(DISTINCT", "COUNT(w.pid)"),
        ("flip_order", "DESC", "ORDER BY n ASC"),
        ("drop_join_condition", "ON a.aid", "CROSS JOIN writes"),
        ("syntax_error", " FROM ", "FORM"),
        ("reorder_columns", "SELECT a.name", "SELECT COUNT(DISTINCT w.pid) AS n, a.name"),
        ("rename_aliases", "AS n ", "n_value DESC"),
    ],
)
def test_operator_edits(name, gone, present):
    m = mutate(Q, name, seed=0)
    assert m is not None and m.operator == name and m.detail
    assert gone not in m.sql and present in m.sql, m.sql


def test_predicate_and_condition_operators():
    flipped = {mutate(Q, "flip_predicate", seed=s).sql for s in range(6)}
    assert any("w.pid < 3" in f for f in flipped) and any("NOT a.name LIKE" in f for f in flipped)
    dropped = {mutate(Q, "drop_condition", seed=s).sql for s in range(6)}
    assert any("w.pid > 3" not in d for d in dropped) and any("LIKE" not in d for d in dropped)


def test_catalog_aware_operators(cats):
    m = mutate(
        "SELECT a.name FROM author AS a JOIN writes AS w ON a.aid = w.aid",
        "wrong_join_key",
        catalog=cats["academic"],
        seed=0,
    )
    assert m is not None and "a.aid = w.aid" not in m.sql and "ON" in m.sql
    b = mutate(ATIS, "off_by_one_bound", catalog=cats["atis"], seed=0)
    assert b is not None and ("1577839999" in b.sql or "1577840001" in b.sql or "departure_time > " in b.sql)
    s = mutate(ATIS, "date_as_string", catalog=cats["atis"], seed=0)
    assert s is not None and "departure_time >= '2020-01-01'" in s.sql


def test_misspelt_identifier_is_not_another_real_column(cats):
    for seed in range(5):
        m = mutate(Q, "misspell_identifier", catalog=cats["academic"], seed=seed)
        new = m.detail.split("-> ")[1].split(".")[-1]
        assert new.lower() not in cats["academic"].all_columns()


def test_inapplicable_operators_return_none_and_unparsable_sql_raises():
    assert mutate("SELECT name FROM author", "drop_group_by") is None
    assert mutate("SELECT name FROM author", "drop_limit") is None
    with pytest.raises(MutationError):
        mutate("SELECT FROM WHERE (", "drop_limit")


def test_deterministic_given_seed():
    assert mutants(Q, seed=3) == mutants(Q, seed=3)
    assert {m.operator for m in mutants(Q, seed=3)} <= set(OPERATORS)
    assert set(HARMFUL) | set(BENIGN) == set(OPERATORS) and not set(HARMFUL) & set(BENIGN)


def test_labels_by_execution_benign_pass_harmful_fail(cats):
    from vx.families.sql.data.build import label_output

    gold = "SELECT a.name, COUNT(w.pid) AS n FROM author AS a JOIN writes AS w ON a.aid = w.aid GROUP BY a.name"
    with open_warehouse({"backend": "duckdb", "source": "defog", "database": "academic"}) as wh:
        g = wh.execute(gold)
        for name in ("reorder_columns", "rename_aliases", "reformat"):
            m = mutate(gold, name, catalog=cats["academic"], seed=0)
            assert label_output(wh.execute(m.sql), [g], ignore_order=True) == "pass", name
        for name in ("drop_group_by", "drop_join_condition", "syntax_error", "misspell_identifier"):
            m = mutate(gold, name, catalog=cats["academic"], seed=0)
            assert label_output(wh.execute(m.sql), [g], ignore_order=True) == "fail", name


@pytest.mark.data
@pytest.mark.slow
def test_law_every_tree_mutant_of_every_gold_query_parses(questions_csv, cats):
    import sqlglot

    from vx.families.sql.defog import load_questions

    made = 0
    for q in load_questions(questions_csv):
        cat = cats.get(q.database)
        for m in mutants(q.gold[0], catalog=cat, seed=0):
            if OPERATORS[m.operator].textual:
                continue
            assert sqlglot.parse_one(m.sql, read="duckdb") is not None, (q.id, m.operator, m.sql)
            made += 1
    assert made > 1000
