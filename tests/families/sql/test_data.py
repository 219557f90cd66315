"""defog-data dumps, local database files and the defog question files."""

import datetime as dt
import importlib.util

import pytest

from vx.families.sql import defog as data

needs_defog = pytest.mark.skipif(
    importlib.util.find_spec("defog_data") is None, reason="the defog-data package (the sql extra) is not installed"
)

DUMP = """\
--
-- PostgreSQL database dump
--
SET statement_timeout = 0;

CREATE TABLE public.person (
    id bigint DEFAULT '0'::bigint NOT NULL,
    name text,
    score double precision,
    active boolean,
    born date,
    wake time without time zone,
    gpa numeric
);


ALTER TABLE public.person OWNER TO postgres;

COPY public.person (id, name, score, active, born, wake, gpa) FROM stdin;
1	Ann\\tB	1.5	t	2020-01-02	07:30:00	3.25
2	\\N	\\N	f	\\N	\\N	\\N
3	back\\\\slash	-2	t	1999-12-31	23:59:59	4
\\.

ALTER TABLE ONLY public.person
    ADD CONSTRAINT person_pkey PRIMARY KEY (id);
"""


def test_parse_pg_dump_types_nulls_and_escapes():
    [t] = data.parse_pg_dump(DUMP, "x.sql")
    assert t.name == "person"
    assert [(c.name, c.type) for c in t.columns] == [
        ("id", "BIGINT"),
        ("name", "TEXT"),
        ("score", "DOUBLE"),
        ("active", "BOOLEAN"),
        ("born", "DATE"),
        ("wake", "TIME"),
        ("gpa", "DOUBLE"),
    ]
    assert t.rows[0] == (1, "Ann\tB", 1.5, True, dt.date(2020, 1, 2), dt.time(7, 30), 3.25)
    assert t.rows[1] == (2, None, None, False, None, None, None)
    assert t.rows[2][1] == "back\\slash"


def test_parse_pg_dump_reports_file_and_line_of_bad_rows():
    bad = DUMP.replace("3\tback", "x\tback")
    with pytest.raises(data.DataError, match=r"x\.sql:\d+: value 'x' is not a valid BIGINT"):
        data.parse_pg_dump(bad, "x.sql")
    short = DUMP.replace("\t1.5\tt", "\t1.5")
    with pytest.raises(data.DataError, match="fields for the 7 columns"):
        data.parse_pg_dump(short, "x.sql")


@needs_defog
def test_every_defog_dump_parses_and_has_rows():
    for db in data.DEFOG_DATABASES:
        tables = data.load_defog_dump(db)
        assert tables and sum(len(t.rows) for t in tables) > 0, db


@needs_defog
@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
def test_materialize_builds_once_with_every_row(engine, tmp_path):
    if engine == "duckdb":
        pytest.importorskip("duckdb")
    path = data.materialize("restaurants", engine, tmp_path)
    assert path.exists() and path.name.endswith("." + engine)
    mtime = path.stat().st_mtime_ns
    assert data.materialize("restaurants", engine, tmp_path) == path
    assert path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    from vx.families.sql.warehouse import open_warehouse

    with open_warehouse({"backend": engine, "path": str(path)}) as wh:
        for t in data.load_defog_dump("restaurants"):
            res = wh.execute(f'SELECT COUNT(*) FROM "{t.name}"')
            assert res.ok and res.rows[0][0] == len(t.rows), t.name
    assert not list(tmp_path.glob(".*.tmp"))


def test_unknown_database_is_a_clear_error():
    with pytest.raises(data.DataError, match="unknown defog database 'shop'.*academic"):
        data.materialize("shop")


def test_split_statements_respects_quotes_and_comments():
    sql = "SELECT ';' AS a; SELECT 'it''s;' -- c;x\n; ; SELECT \"x;y\" FROM t"
    assert data.split_statements(sql) == ["SELECT ';' AS a", "SELECT 'it''s;' -- c;x", 'SELECT "x;y" FROM t']


def test_expand_braces_every_nonempty_subset_and_group_by_repeats_it():
    q = "SELECT {a.name, a.id}, COUNT(*) FROM a GROUP BY {}"
    assert data.expand_braces(q) == [
        "SELECT a.name, COUNT(*) FROM a GROUP BY a.name",
        "SELECT a.id, COUNT(*) FROM a GROUP BY a.id",
        "SELECT a.name, a.id, COUNT(*) FROM a GROUP BY a.name, a.id",
    ]
    assert data.expand_braces("SELECT 1") == ["SELECT 1"]
    assert len(data.expand_braces("SELECT {a, b}, {c, d, e} FROM t")) == 3 * 7


def test_expand_gold_splits_and_dedupes():
    cell = "SELECT {x, y} FROM t;SELECT x FROM t;"
    assert data.expand_gold(cell) == ["SELECT x FROM t", "SELECT y FROM t", "SELECT x, y FROM t"]


@pytest.mark.data
def test_load_questions_from_the_shared_csv(questions_csv):
    qs = data.load_questions(questions_csv)
    assert len(qs) == 190  # 210 rows, 20 about databases defog-data does not ship
    assert {q.database for q in qs} == set(data.DEFOG_DATABASES)
    assert all(q.gold and "{" not in " ".join(q.gold) for q in qs)
    ids = [q.id for q in qs]
    assert len(ids) == len(set(ids)) and ids[0] == "academic/0"


def test_load_questions_reports_a_missing_file(tmp_path):
    with pytest.raises(data.DataError, match="questions file not found"):
        data.load_questions(tmp_path / "nope.csv")
