"""SQL predictions that write, in the attacker's words.

"SQL that sqlglot cannot parse skips the read-only check, and one connection per database is reused
across predictions": so I ATTACH a file of my own, create a table in it with a statement sqlglot
refuses, shadow a real table with a TEMP one for the predictions graded after mine, and point ATTACH
at a verdict cache. Each attack runs through the layer that grades predictions (`Warehouse.execute`
on the process's session, as op application and `vx data build spider` call it), through the engine
alone (below the parser), through `Verifier.grade`, and through a real `vx data build spider`.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("sqlglot")

from vx.families.sql import warehouse as W  # noqa: E402
from vx.families.sql.scripts import script_spec  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
CONCERTS = """
CREATE TABLE "stadium" ("Stadium_ID" INT, "Name" TEXT, "Capacity" INT);
INSERT INTO "stadium" VALUES (1, 'Glebe Park', 3960), (2, 'Somerset Park', 11998), (3, 'Balmoor', 4000);
CREATE TABLE "concert" ("concert_ID" INT, "concert_Name" TEXT, "Stadium_ID" TEXT, "Year" TEXT);
INSERT INTO "concert" VALUES (1, 'Auditions', '1', '2014'), (2, 'Super bootcamp', '2', '2014'),
  (3, 'Home Visits', '2', '2015'), (4, 'Week 1', '3', '2014');
"""
SHADOW = "CREATE TEMP TABLE concert(concert_ID, Stadium_ID, CHECK(1) ON CONFLICT ABORT)"


def attach(path: Path) -> str:
    return f"ATTACH DATABASE '{path}' AS e KEY ''"


UNPARSABLE_CREATE = "CREATE TABLE e.pwned AS SELECT 'x' WHERE CAST(1 AS)=1"  # sqlglot cannot parse it


@pytest.fixture(autouse=True)
def _own_sql_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_SQL_CACHE", str(tmp_path / "sql-cache"))
    yield
    W.close_sessions()


def sqlite_spec(tmp_path: Path) -> dict:
    script = tmp_path / "concerts.sql"
    script.write_text(CONCERTS, encoding="utf-8")
    return script_spec(script, "concerts")


def duckdb_spec(tmp_path: Path) -> dict:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "concerts.duckdb"
    con = duckdb.connect(str(path))
    con.execute(CONCERTS.replace('"', ""))
    con.close()
    return {"backend": "duckdb", "path": str(path)}


@pytest.fixture(params=["sqlite", "duckdb"])
def spec(request, tmp_path):
    return sqlite_spec(tmp_path) if request.param == "sqlite" else duckdb_spec(tmp_path)


def test_the_parser_cannot_check_my_create(spec):
    # the premise of the attack: the statement is left to the engine
    assert W.read_only_problem(UNPARSABLE_CREATE, "sqlite") is None


def test_attach_then_an_unparsable_create_writes_no_host_file(spec, tmp_path):
    target = tmp_path / "x.db"
    first = W.session(spec).execute(attach(target))
    second = W.session(spec).execute(UNPARSABLE_CREATE)
    assert not first.ok and not second.ok
    assert not target.exists()


def test_my_temp_table_does_not_shadow_concert_for_the_next_prediction(spec):
    honest = "SELECT count(*) FROM concert"
    assert W.session(spec).execute(honest).rows == ((4,),)
    W.session(spec).execute(SHADOW)
    W.session(spec).execute("CREATE TEMP TABLE concert(concert_ID INT, Stadium_ID INT)")  # DuckDB's spelling
    assert W.session(spec).execute(honest).rows == ((4,),)


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH DATABASE '{target}' AS e",
        "VACUUM INTO '{target}'",
        "CREATE TEMP TABLE concert(x)",
        "CREATE TEMP VIEW concert AS SELECT 1",
        "CREATE TABLE pwned(x)",
        "INSERT INTO concert VALUES (9, 'x', '1', '2020')",
        "DELETE FROM concert",
        "DROP TABLE concert",
        "PRAGMA query_only = 0",
        "BEGIN",
        "SELECT load_extension('/tmp/x')",
    ],
)
def test_the_engine_refuses_my_writes_without_the_parser(sql, tmp_path):
    # SQLite's own guards hold with the parser's check skipped entirely (_run is below it)
    wh = W.SQLiteWarehouse(W.open_warehouse(sqlite_spec(tmp_path)).path)
    target = tmp_path / "x.db"
    with pytest.raises(W._QueryFailed) as failed:
        wh._run(sql.format(target=target), 5.0, 10)
    assert failed.value.kind in ("rejected", "runtime")
    assert not target.exists()
    assert wh._run("SELECT count(*) FROM concert", 5.0, 10)[1] == [(4,)]


@pytest.mark.parametrize(
    "sql",
    [
        "ATTACH '{target}' AS e",
        "CREATE TEMP TABLE concert(x INT)",
        "COPY (SELECT 42) TO '{target}'",
        "SET threads = 64",
        "INSTALL httpfs",
    ],
)
def test_duckdb_refuses_my_writes_without_the_parser(sql, tmp_path):
    wh = W.open_warehouse(duckdb_spec(tmp_path))
    target = tmp_path / "x.db"
    with pytest.raises(W._QueryFailed) as failed:
        wh._run(sql.format(target=target), 5.0, 10)
    assert failed.value.kind == "rejected"
    assert not target.exists()
    assert wh._run("SELECT count(*) FROM concert", 5.0, 10)[1] == [(4,)]


def test_duckdb_will_not_read_a_host_file_for_me(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\nhunter2\n", encoding="utf-8")
    res = W.open_warehouse(duckdb_spec(tmp_path)).execute(f"SELECT * FROM read_csv('{secret}')")
    assert res.error_kind == "rejected" and "hunter2" not in repr(res.rows)


def test_i_cannot_reach_a_copy_of_the_verdict_cache(spec, tmp_path):
    from vx.ops.cache import VerdictCache

    cache_path = tmp_path / "verdicts.sqlite"
    with VerdictCache(cache_path) as cache:
        cache.put_many([("item", "op", "v1", 1, "a message", 0.1, None)])
    before = cache_path.read_bytes()
    for sql in [
        f"ATTACH DATABASE '{cache_path}' AS c",
        "DROP TABLE c.observations",
        "DELETE FROM c.verdicts",
        f"ATTACH DATABASE '{cache_path}' AS c KEY ''",
        "CREATE TABLE c.verdicts2 AS SELECT 1 WHERE CAST(1 AS)=1",
    ]:
        assert not W.session(spec).execute(sql).ok
    assert cache_path.read_bytes() == before
    db = sqlite3.connect(cache_path)
    assert db.execute("SELECT count(*) FROM verdicts").fetchone()[0] == 1
    db.close()


# --------------------------------------------------------------------------- end to end on Spider


@pytest.fixture
def spider_folder(tmp_path):
    """Six small Spider databases' questions and two real prediction files (skips without ../shared/data)."""
    root = SHARED_DATA / "sql" / "spider"
    if not (root / "questions.jsonl").is_file():
        pytest.skip(f"{root} is absent (real third-party data lives in ../shared/data)")
    small = {"concert_singer", "singer", "pets_1", "poker_player", "orchestra", "employee_hire_evaluation"}
    data = tmp_path / "spider"
    (data / "samples").mkdir(parents=True)
    questions = [
        json.loads(x)
        for x in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if x.strip() and json.loads(x)["db_id"] in small
    ]
    (data / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    (data / "databases").symlink_to(root / "databases")
    ids = {q["id"] for q in questions}
    for name in ("din-sql-pred_Qwen2.5-Coder-7B-Instruct.jsonl", "din-sql-pred_Phi-3.5-mini-instruct.jsonl"):
        rows = [
            x
            for x in (root / "samples" / name).read_text(encoding="utf-8").splitlines()
            if x.strip() and json.loads(x)["task_id"] in ids
        ]
        (data / "samples" / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    concert = [q["id"] for q in questions if q["db_id"] == "concert_singer"]
    return data, concert


def labels(fam: Path) -> dict[str, str]:
    """The labelled items' labels (dev and locked; train and peers carry none)."""
    out = {}
    for split in ("dev", "locked"):
        for line in (fam / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out[row["id"]] = row["label"]
    return out


def build(data: Path, out: Path) -> None:
    from vx.cli.main import main

    r = CliRunner().invoke(
        main,
        ["data", "build", "spider", "--data-dir", str(data), "--out", str(out), "--variants", "2", "--json"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output


def test_data_build_spider_with_my_predictions_writes_nothing_and_flips_no_label(spider_folder, tmp_path):
    data, concert = spider_folder
    build(data, tmp_path / "clean")
    target = tmp_path / "x.db"
    attacks = [attach(target), UNPARSABLE_CREATE, SHADOW]
    for n, sql in enumerate(attacks):  # one file per statement: a file holds one prediction per question
        (data / "samples" / f"zz-attack-{n}.jsonl").write_text(
            "".join(json.dumps({"task_id": q, "sql": sql}) + "\n" for q in concert), encoding="utf-8"
        )
    build(data, tmp_path / "attacked")
    assert not target.exists()
    clean, attacked = labels(tmp_path / "clean"), labels(tmp_path / "attacked")
    shared = sorted(set(clean) & set(attacked))  # my predictions may move tasks between splits
    assert len(shared) >= 20
    assert {i: attacked[i] for i in shared} == {i: clean[i] for i in shared}  # nobody's label changed
    mine = [i for i in attacked if "#zz-attack-" in i]
    assert all(attacked[i] == "fail" for i in mine)


def test_verifier_grade_of_my_predictions_writes_nothing_and_flips_no_verdict(spider_folder, tmp_path):
    from vx.verifier import Verifier

    data, concert = spider_folder
    build(data, tmp_path / "fam")
    v = Verifier.from_family(tmp_path / "fam")
    honest = {q: v.grade(q, "SELECT count(*) FROM concert").verdict for q in concert}
    target = tmp_path / "x.db"
    for sql in (attach(target), UNPARSABLE_CREATE, SHADOW):
        for q in concert:
            v.grade(q, sql)
    assert not target.exists()
    assert {q: v.grade(q, "SELECT count(*) FROM concert").verdict for q in concert} == honest
