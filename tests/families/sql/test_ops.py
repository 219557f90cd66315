"""The SQL seed ops on real defog databases: what fires, what stays clean, what abstains, and that
messages name the clause or identifier at fault."""

import json
from pathlib import Path

import pytest

pytest.importorskip("sqlglot")
pytest.importorskip("duckdb")
pytest.importorskip("defog_data")  # the databases are built from its dumps

from vx.dsl.verdict import Verdict  # noqa: E402
from vx.families.sql import ops as O  # noqa: E402
from vx.families.sql.catalog import Catalog, render  # noqa: E402
from vx.families.sql.pack import PACK  # noqa: E402
from vx.families.sql.warehouse import open_warehouse  # noqa: E402
from vx.ops.core import Context  # noqa: E402

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "sql"


@pytest.fixture(scope="module")
def catalogs():
    out = {}
    for db in ("academic", "atis", "yelp"):
        spec = {"backend": "duckdb", "source": "defog", "database": db}
        with open_warehouse(spec) as wh:
            out[db] = Catalog.from_warehouse(wh).to_json()
    return out


def task(catalogs, question, db="academic", **kw):
    return {
        "id": "t",
        "question": question,
        "dialect": "duckdb",
        "catalog": catalogs[db],
        "warehouse": {"backend": "duckdb", "source": "defog", "database": db},
        "timeout": 5.0,
        **kw,
    }


def run(op, t, sql):
    ctx = Context()
    root = O.parses(t, sql, ctx)
    res = op(t, sql, ctx)
    return root, res


def test_parses_is_the_root_and_stores_the_artifact(catalogs):
    t = task(catalogs, "q")
    ctx = Context()
    assert O.parses(t, "SELECT name FROM author", ctx).verdict == C
    assert ctx.artifact.dialect == "duckdb" and ctx.artifact.tree.key == "select"
    assert O.ROOT == "parses"
    for sql, why in [
        ("", "empty"),
        ("SELECT FROM WHERE (", "does not parse as duckdb"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("DELETE FROM author", "DELETE statement"),
    ]:
        r = O.parses(t, sql, Context())
        assert r.verdict == D and why in r.message, (sql, r.message)


def test_parses_is_dialect_aware(catalogs):
    sql = "SELECT TOP 3 name FROM author"  # T-SQL
    assert O.parses(task(catalogs, "q", dialect="tsql"), sql, Context()).verdict == C
    assert O.parses(task(catalogs, "q"), sql, Context()).verdict == D


@pytest.mark.parametrize(
    "sql, verdict, needle",
    [
        ("SELECT author.name, COUNT(*) FROM author JOIN writes ON author.aid = writes.aid", D, "author.name"),
        ("SELECT author.name, COUNT(*) FROM author JOIN writes ON author.aid = writes.aid GROUP BY author.name", C, ""),
        ("SELECT COUNT(*), MAX(aid) FROM author", C, ""),
        ("SELECT name FROM author", A, ""),
        ("SELECT SUM(aid) FILTER (WHERE name LIKE 'A%') FROM author", C, ""),
    ],
)
def test_missing_group_by(catalogs, sql, verdict, needle):
    _, r = run(O.missing_group_by, task(catalogs, "q"), sql)
    assert r.verdict == verdict and needle in r.message


def test_select_star_only_when_the_question_names_columns(catalogs):
    q = "What are the names and homepages of the authors?"
    _, r = run(O.select_star, task(catalogs, q), "SELECT * FROM author")
    assert r.verdict == D and "author.name" in r.message and "SELECT *" in r.message
    assert run(O.select_star, task(catalogs, q), "SELECT name, homepage FROM author")[1].verdict == C
    assert (
        run(O.select_star, task(catalogs, "Show all details of every author"), "SELECT * FROM author")[1].verdict == A
    )
    assert run(O.select_star, task(catalogs, "How many authors?"), "SELECT COUNT(*) FROM author")[1].verdict == A


@pytest.mark.parametrize(
    "question, sql, verdict, needle",
    [
        (
            "Which author has the most publications?",
            "SELECT aid, COUNT(*) AS n FROM writes GROUP BY aid ORDER BY n DESC",
            D,
            "top 1",
        ),
        (
            "Which author has the most publications?",
            "SELECT aid, COUNT(*) AS n FROM writes GROUP BY aid ORDER BY n DESC LIMIT 1",
            C,
            "",
        ),
        (
            "What are the top 3 journals by number of papers?",
            "SELECT jid, COUNT(*) AS n FROM publication GROUP BY jid ORDER BY n DESC LIMIT 5",
            D,
            "LIMIT 5",
        ),
        (
            "Which author has the most publications?",
            "SELECT aid FROM writes GROUP BY aid HAVING COUNT(*) = (SELECT MAX(c) FROM (SELECT COUNT(*) c FROM writes "
            "GROUP BY aid) t)",
            C,
            "",
        ),
        (
            "List the authors ordered by number of publications, most first",
            "SELECT aid, COUNT(*) AS n FROM writes GROUP BY aid ORDER BY n DESC",
            A,
            "",
        ),
        ("How many authors are there?", "SELECT COUNT(*) FROM author", A, ""),
        (
            "What is the title of the publication that has received the highest number of citations?",
            "SELECT title FROM publication ORDER BY citation_num DESC",
            D,
            "top 1",
        ),
        ("Which states have the highest population?", "SELECT state_name FROM state ORDER BY population DESC", A, ""),
        ("What is the highest citation count?", "SELECT MAX(citation_num) FROM publication", C, ""),
        (
            "Which author has the most publications?",
            "SELECT aid FROM (SELECT aid, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM writes GROUP BY aid) t "
            "WHERE r = 1",
            C,
            "",
        ),
        (
            "Which author has the most publications?",
            "SELECT aid, RANK() OVER (ORDER BY COUNT(*) DESC) AS r FROM writes GROUP BY aid",
            D,
            "no LIMIT",
        ),
        (
            "What are the top 3 journals by number of papers?",
            "SELECT jid FROM publication GROUP BY jid ORDER BY COUNT(*) DESC FETCH FIRST 3 ROWS ONLY",
            C,
            "",
        ),
    ],
)
def test_top_n_missing_limit(catalogs, question, sql, verdict, needle):
    _, r = run(O.top_n_missing_limit, task(catalogs, question), sql)
    assert r.verdict == verdict and needle in r.message, r.message


@pytest.mark.parametrize(
    "sql, verdict, needle",
    [
        ("SELECT nme FROM author", D, "nme"),
        ("SELECT a.nme FROM author a", D, "author has no column nme (did you mean name?)"),
        ("SELECT name FROM authors", D, "unknown table authors (did you mean author"),
        ("SELECT x.name FROM author a", D, "unknown table or alias x"),
        ("SELECT a.name AS n FROM author a ORDER BY n", C, ""),
        ("WITH t AS (SELECT aid, COUNT(*) AS c FROM writes GROUP BY aid) SELECT t.aid, t.c FROM t", C, ""),
        ("WITH t AS (SELECT aid FROM writes) SELECT t.pid FROM t", D, "t does not select pid"),
        ("SELECT name FROM author WHERE aid IN (SELECT aid FROM writes WHERE writes.pid = 1)", C, ""),
    ],
)
def test_unknown_identifier(catalogs, sql, verdict, needle):
    _, r = run(O.unknown_identifier, task(catalogs, "q"), sql)
    assert r.verdict == verdict and needle in r.message, r.message


@pytest.mark.parametrize(
    "sql, verdict, needle",
    [
        ("SELECT author.name FROM author, writes", D, "author and writes"),
        ("SELECT author.name FROM author CROSS JOIN writes", D, "cartesian"),
        ("SELECT author.name FROM author, writes WHERE author.aid = writes.aid", C, ""),
        ("SELECT a.name FROM author a JOIN writes w ON a.aid = w.aid JOIN publication p ON p.pid = w.pid", C, ""),
        ("SELECT a.name FROM author a JOIN writes w ON a.aid = w.aid, publication p", D, "publication"),
        ("SELECT COUNT(DISTINCT p.pid) / COUNT(DISTINCT a.aid) FROM publication p, author a", C, ""),
        ("SELECT name FROM author", A, ""),
    ],
)
def test_cartesian_join(catalogs, sql, verdict, needle):
    _, r = run(O.cartesian_join, task(catalogs, "q"), sql)
    assert r.verdict == verdict and needle in r.message, r.message


@pytest.mark.parametrize(
    "sql, verdict, needle",
    [
        ("SELECT flight_id FROM flight WHERE departure_time > '2020-01-01'", D, "flight.departure_time is BIGINT"),
        ("SELECT flight_id FROM flight WHERE departure_time > 1577836800", A, ""),
    ],
    ids=["epoch-vs-string", "epoch-vs-number"],
)
def test_date_as_string_compare_on_epochs(catalogs, sql, verdict, needle):
    _, r = run(O.date_as_string_compare, task(catalogs, "q", db="atis"), sql)
    assert r.verdict == verdict and needle in r.message, r.message


def test_date_as_string_compare_on_text_months_and_dates(catalogs):
    # yelp stores review.month as a month name: a range comparison with a date string compares text
    t = task(catalogs, "q", db="yelp")
    _, r = run(O.date_as_string_compare, t, "SELECT COUNT(*) FROM review WHERE month >= '2021-03'")
    assert r.verdict == D and "review.month" in r.message
    _, r = run(O.date_as_string_compare, t, "SELECT COUNT(*) FROM review WHERE year = 2021")
    assert r.verdict == A
    _, r = run(
        O.date_as_string_compare,
        task(catalogs, "q", db="academic"),
        "SELECT COUNT(*) FROM publication WHERE year >= '2020-01-01'",
    )
    assert r.verdict == D and "publication.year is BIGINT" in r.message


@pytest.mark.parametrize(
    "sql, op, verdict, needle",
    [
        ("SELECT nme FROM author", "execution_error", D, "nme"),
        ("SELECT name FROM author", "execution_error", C, ""),
        ("SELECT name FROM author WHERE aid < 0", "empty_result", D, "no rows"),
        ("SELECT name FROM author", "empty_result", C, ""),
        ("SELECT name, NULL AS x FROM author", "null_heavy_result", D, "column x is NULL"),
        ("SELECT name, LENGTH(name) AS n FROM author", "null_heavy_result", C, ""),
        ("SELECT name, homepage FROM author", "null_heavy_result", A, "the data's"),
        ("SELECT COUNT(*) FROM range(100000000000) a", "timeout", D, "time limit"),
        ("SELECT name FROM author", "timeout", C, ""),
    ],
)
def test_exec_ops(catalogs, sql, op, verdict, needle):
    t = task(catalogs, "q", timeout=0.5)
    _, r = run(getattr(O, op), t, sql)
    assert r.verdict == verdict and needle in r.message, r.message


def test_exec_ops_share_one_execution_per_item(catalogs, monkeypatch):
    from vx.families.sql import warehouse

    calls = []
    real = warehouse.Warehouse.execute

    def counting(self, sql, **kw):
        calls.append(sql)
        return real(self, sql, **kw)

    monkeypatch.setattr(warehouse.Warehouse, "execute", counting)
    t = task(catalogs, "q")
    ctx = Context()
    for o in (O.execution_error, O.empty_result, O.null_heavy_result, O.timeout):
        o(t, "SELECT name FROM author", ctx)
    # one execution for all of them: the query run twice, so that a nondeterministic one is seen
    assert calls == ["SELECT name FROM author"] * 2


def test_exec_ops_abstain_without_a_warehouse_and_on_errors(catalogs):
    t = {"id": "t", "question": "q", "catalog": catalogs["academic"]}
    assert O.empty_result(t, "SELECT 1", Context()).verdict == A
    t2 = task(catalogs, "q")
    ctx = Context()
    assert O.empty_result(t2, "SELECT nme FROM author", ctx).verdict == A
    assert O.null_heavy_result(t2, "SELECT nme FROM author", ctx).verdict == A
    assert O.timeout(t2, "SELECT nme FROM author", ctx).verdict == C


def test_catalog_renders_types_and_date_samples(catalogs):
    text = render(Catalog.from_json(catalogs["atis"]))
    line = next(ln for ln in text.splitlines() if ln.startswith("flight("))
    assert "flight_id:BIGINT" in line and "departure_time:BIGINT e.g. " in line
    assert Catalog.from_json(catalogs["atis"]).to_json() == catalogs["atis"]
    from vx.families.sql.catalog import solver_prompt

    p = solver_prompt(
        "How many flights?", Catalog.from_json(catalogs["atis"]), dialect="snowflake", instructions="Use COUNT."
    )
    assert "snowflake SQL" in p and line in p and p.endswith("Question: How many flights?\nInstructions: Use COUNT.")


@pytest.mark.data
def test_static_ops_never_fire_on_gold_queries(questions_csv):
    from vx.families.sql.defog import load_questions

    cats = {}
    n = 0
    for q in load_questions(questions_csv):
        if q.database not in cats:
            with open_warehouse({"backend": "duckdb", "source": "defog", "database": q.database}) as wh:
                cats[q.database] = Catalog.from_warehouse(wh).to_json()
        t = {"id": q.id, "question": q.question, "dialect": "duckdb", "catalog": cats[q.database]}
        for sql in q.gold:
            ctx = Context()
            assert O.parses(t, sql, ctx).verdict == C, (q.id, sql)
            for o in (O.missing_group_by, O.unknown_identifier, O.cartesian_join, O.date_as_string_compare):
                r = o(t, sql, ctx)
                assert r.verdict != D, (q.id, o.name, r.message, sql)
            n += 1
    assert n > 300


def test_ops_do_not_read_gold_sql():
    # the task records hold no gold query; ops see only the task and the output
    for line in (EXAMPLES / "tasks.jsonl").read_text().splitlines():
        t = json.loads(line)
        assert not {"reference", "gold", "query", "sql"} & set(t), t["id"]


def test_classify_failure_uses_the_operator_then_the_ops(catalogs):
    t = task(catalogs, "q")
    assert PACK.classify_failure(t, "SELECT name FROM author", {"operator": "flip_order"}) == "wrong_order"
    assert PACK.classify_failure(t, "SELECT nme FROM author", {}) == "unknown_identifier"
    assert PACK.classify_failure(t, "SELEC", {}) == "syntax_error"
    assert PACK.classify_failure(t, "SELECT name FROM author", None) == "wrong_result"
    assert set(O.TAXONOMY) >= {"syntax_error", "wrong_order", "wrong_result"}


def test_op_versions_cover_the_helper_modules(monkeypatch):
    from pathlib import Path as P

    from vx.families.sql.ops import analysis
    from vx.families.sql.ops import exec as X
    from vx.families.sql.ops import static as S
    from vx.ops.core import source_version

    before = {o.name: o.version for o in O.SEED_OPS}
    real = P.read_text

    def changed(self, *a, **k):
        data = real(self, *a, **k)
        return data + "\n_changed = 1\n" if self == P(analysis.__file__) else data

    monkeypatch.setattr(P, "read_text", changed)
    deps = {o.name: (S.DEPENDS if o.name in vars(S) else X.DEPENDS) for o in O.SEED_OPS}
    after = {o.name: source_version(o.fn, deps[o.name]) for o in O.SEED_OPS}
    assert all(after[n] != before[n] for n in before)
