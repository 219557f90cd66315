"""The bundled SQL family: built reproducibly by the builder, evaluated offline end to end."""

import json
from pathlib import Path

import pytest

pytest.importorskip("sqlglot")
pytest.importorskip("duckdb")
pytest.importorskip("defog_data")  # the databases are built from its dumps

from click.testing import CliRunner  # noqa: E402

from vx.cli.main import main  # noqa: E402
from vx.families.family import Family  # noqa: E402
from vx.families.sql.data.build import ignore_order_for  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "sql"


def jsonl(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]


def test_bundled_family_loads_with_disjoint_splits():
    fam = Family(EXAMPLES)
    assert fam.root_name == "parses" and fam.objective["w"] == 1.0
    assert fam.counts()["dev"] == 10 and fam.counts()["locked"] >= 40
    dev = fam.split("dev")
    assert sorted(it.hard_label() for it in dev) == ["fail"] * 5 + ["pass"] * 5
    assert all(it.reference for it in dev)
    tasks_by_split = {
        name: {it["task"] for it in jsonl(EXAMPLES / f"{name}.jsonl")} for name in ("train", "dev", "locked")
    }
    assert not tasks_by_split["train"] & tasks_by_split["dev"]
    assert not tasks_by_split["train"] & tasks_by_split["locked"]
    assert not tasks_by_split["dev"] & tasks_by_split["locked"]
    assert len(tasks_by_split["dev"]) == 10  # one item per dev task
    assert sum(f.stat().st_size for f in EXAMPLES.iterdir()) < 5_000_000
    pool = fam.pool()
    assert len(pool.selectable()) == 14 and fam.seed(pool.names).op_names()  # shadow ops are not selectable


@pytest.mark.data
@pytest.mark.slow
def test_builder_reproduces_the_bundled_family_exactly(questions_csv, tmp_path):
    from vx.families.sql.data.build import build_sql

    build_sql(questions_csv, tmp_path / "sql", seed=0)
    for name in ("family.toml", "tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "seed.vx"):
        assert (tmp_path / "sql" / name).read_text() == (EXAMPLES / name).read_text(), name


def test_eval_locked_offline_from_a_fresh_database_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_SQL_CACHE", str(tmp_path / "fresh"))  # databases rebuilt from defog-data
    r = CliRunner().invoke(
        main,
        ["eval", str(EXAMPLES / "seed.vx"), "--dataset", "locked", "--json", "-j", "2", "--no-cache"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["split"] == "locked" and out["n"] >= 40
    assert out["failures"] == []  # no op crashed or timed out
    assert out["metrics"]["accuracy"] >= 0.7
    assert list((tmp_path / "fresh").glob("defog-*.duckdb"))


def test_serial_and_parallel_grading_agree():
    def items(jobs):
        r = CliRunner().invoke(
            main,
            ["eval", str(EXAMPLES / "seed.vx"), "--dataset", "dev", "--json", "-j", jobs, "--no-cache"],
            catch_exceptions=False,
        )
        return json.loads(r.output)["items"]

    assert items("1") == items("2")  # forked workers open their own connections


def test_ignore_order_only_when_the_question_asks_for_no_order():
    assert ignore_order_for("Which authors wrote papers in 2020?")
    assert not ignore_order_for("List the states ordered from highest to lowest density")
    assert not ignore_order_for("Sort the courses by name")


@pytest.mark.data
def test_vx_data_build_sql_on_sqlite_from_a_subset(questions_csv, tmp_path):
    """The builder end to end, fast: two databases' questions, the SQLite backend, defog's SQLite file."""
    import csv

    src = questions_csv.with_name("defog_questions_gen_sqlite.csv")
    if not src.exists():
        pytest.skip(f"{src} is absent")
    rows = [r for r in csv.DictReader(src.open(encoding="utf-8")) if r["db_name"] in ("restaurants", "geography")]
    small = tmp_path / "q.csv"
    with small.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "fam"
    r = CliRunner().invoke(
        main,
        [
            "data",
            "build",
            "sql",
            "--questions",
            str(small),
            "--out",
            str(out),
            "--backend",
            "sqlite",
            "--source-dialect",
            "sqlite",
            "--n-locked",
            "20",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    tasks = jsonl(out / "tasks.jsonl")
    assert {t["database"] for t in tasks} == {"restaurants", "geography"}
    assert all(t["dialect"] == "sqlite" and t["warehouse"]["backend"] == "sqlite" for t in tasks)
    assert all(not {"reference", "gold", "query"} & set(t) for t in tasks)
    dev, locked, train = (jsonl(out / f"{s}.jsonl") for s in ("dev", "locked", "train"))
    assert sorted(d["label"] for d in dev) == ["fail"] * 5 + ["pass"] * 5
    assert all(d["reference"] and d["meta"]["operator"] for d in dev)
    assert len(locked) >= 20 and all("meta" not in x for x in locked + train)
    assert all("label" not in x for x in train)
    fam = Family(out)
    assert fam.counts()["locked"] == len(locked)
    e = CliRunner().invoke(
        main,
        ["eval", str(out / "seed.vx"), "--dataset", "dev", "--json", "-j", "1", "--no-cache"],
        catch_exceptions=False,
    )
    res = json.loads(e.output)
    assert res["failures"] == [] and res["metrics"]["n"] == 10


def test_build_rejects_an_unknown_backend(tmp_path):
    from vx.families.sql.data.build import BuildError, build_sql

    csv_path = tmp_path / "q.csv"
    csv_path.write_text(
        "db_name,query_category,query,question,instructions\nacademic,x,SELECT 1,q,\n", encoding="utf-8"
    )
    with pytest.raises(BuildError, match="duckdb or sqlite, not 'snowflake'"):
        build_sql(csv_path, tmp_path / "out", backend="snowflake")


def test_the_builders_seed_is_canonical():
    from vx.dsl.parse import parse
    from vx.dsl.printer import to_text
    from vx.families.sql.data.build import SEED_EXPRESSION

    body = "\n".join(line for line in SEED_EXPRESSION.splitlines() if not line.startswith(";"))
    assert to_text(parse(body)) == body.strip()
