"""Errors a SQL prediction provokes in the grader are the prediction's drawback, in the attacker's words.

* **"My query nests 60 parentheses"**: sqlglot raised RecursionError in the root and in every op that
  parses, so every op abstained and the query PASSed (``vx grade`` exit 0). Now the root fails it, naming
  why.
* **"My query returns 30 blobs of 100 MB"**: the results were bounded in rows (10,000) but not in bytes
  (2.9 GB), and the MemoryError made the execution op abstain: PASS. Now SQLite refuses the blob inside the
  engine, a result over ``MAX_RESULT_BYTES`` fails the query, and a MemoryError while fetching is the
  query's runtime error: ``execution_error`` fires.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlglot")

from vx.families.sql import warehouse as W  # noqa: E402
from vx.families.sql.scripts import script_spec  # noqa: E402
from vx.verifier import Verifier  # noqa: E402

SQL_FAMILY = Path(__file__).resolve().parents[2] / "examples" / "sql"
TABLES = "CREATE TABLE t (x INT, s TEXT);\nINSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');\n"


@pytest.fixture(autouse=True)
def _own_sql_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_SQL_CACHE", str(tmp_path / "sql-cache"))
    yield
    W.close_sessions()


def sqlite_spec(tmp_path: Path) -> dict:
    script = tmp_path / "t.sql"
    script.write_text(TABLES, encoding="utf-8")
    return script_spec(script, "t")


def duckdb_spec(tmp_path: Path) -> dict:
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "t.duckdb"
    con = duckdb.connect(str(path))
    con.execute(TABLES)
    con.close()
    return {"backend": "duckdb", "path": str(path)}


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(SQL_FAMILY / "seed.vx")


@pytest.mark.parametrize("depth", [50, 60, 200])
def test_my_deeply_nested_query_fails_at_the_root_saying_why(verifier: Verifier, depth: int) -> None:
    task = next(iter(verifier.tasks))
    sql = "SELECT " + "(" * depth + "1" + ")" * depth
    grade = verifier.grade(task, sql)
    assert grade.verdict.value == "fail", grade.as_dict()
    assert grade.root is not None and grade.root.error is None
    assert "nested too deeply for the parser" in grade.root.message
    assert f"{depth} opening parentheses" in grade.root.message


def test_a_query_nested_as_deep_as_people_write_still_passes_the_root(verifier: Verifier) -> None:
    task = next(iter(verifier.tasks))
    grade = verifier.grade(task, "SELECT " + "(" * 10 + "1" + ")" * 10)
    assert grade.root is not None and grade.root.verdict.name == "CLEAN", grade.root


def test_the_read_only_check_survives_the_nesting_and_leaves_the_engine_to_judge(tmp_path: Path) -> None:
    sql = "SELECT " + "(" * 300 + "1" + ")" * 300
    assert W.read_only_problem(sql, "sqlite") is None  # not parsed: the engine's own guards hold
    assert "RecursionError in the parser" in W.read_only_problem(sql, "snowflake", strict=True)
    result = W.session(sqlite_spec(tmp_path)).execute(sql)
    assert result.error_kind in (None, "runtime", "syntax")  # whatever SQLite says, not the grader's exception


def test_my_huge_blob_is_refused_inside_sqlite(tmp_path: Path) -> None:
    result = W.session(sqlite_spec(tmp_path)).execute("SELECT zeroblob(100000000) FROM t")
    assert not result.ok and result.error_kind == "runtime"
    assert "too big" in result.error


@pytest.mark.parametrize("backend", ["sqlite", "duckdb"])
def test_my_result_of_many_large_values_fails_the_query_not_the_grader(tmp_path: Path, backend: str) -> None:
    spec = sqlite_spec(tmp_path) if backend == "sqlite" else duckdb_spec(tmp_path)
    # 4 MB per value (under SQLite's length limit), 40 rows: 160 MB, over MAX_RESULT_BYTES
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
        "SELECT i, " + ("hex(zeroblob(2000000))" if backend == "sqlite" else "repeat('x', 4000000)") + " FROM n"
    )
    result = W.session(spec).execute(sql, timeout=60.0)
    assert not result.ok, "a 160 MB result was taken whole"
    assert result.error_kind == "runtime" and "the result is too large" in result.error


def test_a_result_within_the_bounds_is_taken_whole(tmp_path: Path) -> None:
    result = W.session(sqlite_spec(tmp_path)).execute("SELECT x, s FROM t ORDER BY x")
    assert result.ok and result.rows == ((1, "a"), (2, "b"), (3, "c")) and not result.truncated
    capped = W.session(sqlite_spec(tmp_path)).execute("SELECT x FROM t ORDER BY x", max_rows=2)
    assert capped.rows == ((1,), (2,)) and capped.truncated


def test_a_memory_error_while_fetching_is_the_querys_runtime_error(tmp_path: Path, monkeypatch) -> None:
    wh = W.session(sqlite_spec(tmp_path))

    def out_of_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(wh, "_run", out_of_memory)
    result = wh.execute("SELECT x FROM t")
    assert not result.ok and result.error_kind == "runtime" and "does not fit in memory" in result.error
