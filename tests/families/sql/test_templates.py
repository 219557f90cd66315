"""SQL check templates (typed specs) and their inducers."""

import pytest

pytest.importorskip("sqlglot")
pytest.importorskip("duckdb")
pytest.importorskip("defog_data")  # the databases are built from its dumps

from vx.dsl.verdict import Verdict  # noqa: E402
from vx.families.sql import pack as _pack  # noqa: E402,F401  (registers the templates)
from vx.families.sql.ops.templates import CUES, features  # noqa: E402
from vx.ops.core import Context  # noqa: E402
from vx.ops.specs import TEMPLATES, op_from_spec, spec_to_json, templates_for  # noqa: E402

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN
WH = {"backend": "duckdb", "source": "defog", "database": "academic"}


def t(question):
    return {"id": "x", "question": question, "dialect": "duckdb", "warehouse": WH, "timeout": 5.0}


def spec(check, kind="static", **params):
    return op_from_spec({"kind": kind, "check": check, "params": params, "detects": "x"})


def v(op, task, sql):
    return op(task, sql, Context())


def test_templates_registered_for_the_sql_family():
    names = {tp.check for tp in templates_for("sql") if tp.family == "sql"}
    assert names == {
        "forbids_construct",
        "requires_construct",
        "order_direction",
        "max_result_rows",
        "join_key_names",
        "results_disagree_with_peers",
    }
    assert all(TEMPLATES[n].induce is not None for n in names)


def test_features_name_the_constructs():
    import sqlglot

    f = features(
        sqlglot.parse_one(
            "SELECT DISTINCT a, COUNT(DISTINCT b), AVG(c) FROM t LEFT JOIN u ON t.x = u.x WHERE d < 3 ORDER BY a DESC",
            read="duckdb",
        )
    )
    assert {"distinct", "count_distinct", "avg", "left_join", "lt", "order_desc", "join"} <= f
    assert "star" not in f and "count_star" not in f
    assert "star" in features(sqlglot.parse_one("SELECT * FROM t"))
    assert "star" not in features(sqlglot.parse_one("SELECT COUNT(*) FROM t"))


def test_forbids_and_requires_construct_with_a_cue():
    avg_cue = CUES["average"]
    forbid = spec("forbids_construct", construct="sum", cue=avg_cue)
    assert v(forbid, t("What is the average citation count?"), "SELECT SUM(citation_num) FROM publication").verdict == D
    assert v(forbid, t("What is the average citation count?"), "SELECT AVG(citation_num) FROM publication").verdict == C
    assert v(forbid, t("How many papers?"), "SELECT SUM(1) FROM publication").verdict == A
    need = spec("requires_construct", construct="avg", cue=avg_cue)
    r = v(need, t("What is the average citation count?"), "SELECT SUM(citation_num) FROM publication")
    assert r.verdict == D and "AVG" in r.message and "average" in r.message


def test_order_direction_and_max_rows_and_join_names():
    od = spec("order_direction", direction="desc", cue=CUES["descending"])
    q = t("List authors from highest to lowest citations")
    assert v(od, q, "SELECT aid FROM author ORDER BY aid ASC").verdict == D
    assert v(od, q, "SELECT aid FROM author ORDER BY aid DESC").verdict == C
    assert v(od, q, "SELECT aid FROM author").verdict == A
    mr = spec("max_result_rows", kind="exec", n=1, cue=CUES["top"])
    r = v(mr, t("Which author has the most papers?"), "SELECT aid FROM author")
    assert r.verdict == D and "rows" in r.message
    assert v(mr, t("Which author has the most papers?"), "SELECT aid FROM author LIMIT 1").verdict == C
    jk = spec("join_key_names", min_similarity=0.5)
    assert v(jk, t("q"), "SELECT 1 FROM author a JOIN writes w ON a.aid = w.pid").verdict == D
    assert v(jk, t("q"), "SELECT 1 FROM author a JOIN writes w ON a.aid = w.aid").verdict == C


def test_specs_round_trip_to_the_same_op():
    o = spec("forbids_construct", construct="lt", cue=CUES["more"])
    again = op_from_spec(__import__("json").loads(spec_to_json(o)))
    assert (again.name, again.version) == (o.name, o.version)


def test_inducers_propose_separating_checks():
    cue_q = "What is the average number of citations per paper?"
    bad = [
        (t(cue_q), "SELECT SUM(citation_num) FROM publication"),
        (t("What is the average year of papers?"), "SELECT SUM(year) FROM publication"),
    ]
    good = [
        (t(cue_q), "SELECT AVG(citation_num) FROM publication"),
        (t("What is the total number of citations?"), "SELECT SUM(citation_num) FROM publication"),
    ]
    forb = TEMPLATES["forbids_construct"].induce(bad, good)
    assert {"construct": "sum", "cue": CUES["average"]} in forb
    req = TEMPLATES["requires_construct"].induce(bad, good)
    assert {"construct": "avg", "cue": CUES["average"]} in req
    for params in forb + req:  # every proposal stays clean on the good outputs
        check = "forbids_construct" if params in forb else "requires_construct"
        o = spec(check, **params)
        assert all(v(o, tk, s).verdict != D for tk, s in good), params


def test_order_and_join_inducers():
    q = t("List the authors ordered from highest to lowest citations")
    bad = [(q, "SELECT aid FROM author ORDER BY aid ASC"), (q, "SELECT name FROM author ORDER BY name ASC")]
    good = [(q, "SELECT aid FROM author ORDER BY aid DESC")]
    assert {"direction": "desc", "cue": CUES["descending"]} in TEMPLATES["order_direction"].induce(bad, good)
    jb = [(t("q"), "SELECT 1 FROM author a JOIN writes w ON a.aid = w.pid")] * 2
    jg = [(t("q"), "SELECT 1 FROM author a JOIN writes w ON a.aid = w.aid")]
    [p] = TEMPLATES["join_key_names"].induce(jb, jg)
    o = spec("join_key_names", **p)
    assert v(o, *jb[0]).verdict == D and v(o, *jg[0]).verdict == C


def test_judge_pack_sees_the_prompt_and_abstains_with_llm_roles_off(monkeypatch):
    import json
    from pathlib import Path

    from vx.families.sql.ops.judge import semantic_mismatch
    from vx.ops.judge import judge_messages

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    task = json.loads(
        (Path(__file__).resolve().parents[3] / "examples" / "sql" / "tasks.jsonl").read_text().splitlines()[0]
    )
    shown = judge_messages(task, "SELECT 1")
    assert task["question"] in shown and "author(aid:BIGINT" in shown
    assert '"warehouse"' not in shown  # the prompt, not the raw record
    r = semantic_mismatch(task, "SELECT 1", Context())
    assert r.verdict == A and "ANTHROPIC_API_KEY" in r.message
    assert semantic_mismatch.tier == "judge" and semantic_mismatch.uses_llm
