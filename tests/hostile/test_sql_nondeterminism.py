"""Nondeterministic SQL, in the attacker's words: "my query reads ``random()`` (or the clock), so it flips
between PASS and FAIL from one grading to the next, and the verdict cache freezes whichever came first".

Now the shared execution runs a query twice and a query whose two results differ is the error
``nondeterministic`` (``execution_error`` fires, every time), and no verdict of a query that calls
randomness or the clock, or whose runs differ, is cached.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("sqlglot")
pytest.importorskip("duckdb")

from vx.ops.cache import VerdictCache, item_hash  # noqa: E402
from vx.ops.item import Item  # noqa: E402
from vx.verifier import Verifier  # noqa: E402

SQL_FAMILY = Path(__file__).resolve().parents[2] / "examples" / "sql"


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(SQL_FAMILY / "seed.vx")


def grade(verifier: Verifier, sql: str, cache: VerdictCache) -> tuple[str, str]:
    task = next(iter(verifier.tasks))
    grading = verifier.grade_items([Item("x", task, sql)], jobs=1, cache=cache, progress=False)
    return grading.finals[0].value, grading.application.message("x", "execution_error")


def stored(cache: VerdictCache, verifier: Verifier, sql: str) -> int:
    h = item_hash(verifier.tasks[next(iter(verifier.tasks))], sql)
    return cache._db.execute("SELECT COUNT(*) FROM verdicts WHERE item = ?", (h,)).fetchone()[0]


def test_my_random_query_fails_every_time_and_is_never_cached(verifier: Verifier, tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "v.sqlite")
    # random() in the result itself: two runs differ for certain (ORDER BY random() LIMIT 3 over the example's five
    # authors returns the same rows twice once in 60 runs, and the test would fail that often)
    sql = "SELECT author.name, random() AS luck FROM author"
    for _ in range(3):
        verdict, message = grade(verifier, sql, cache)
        assert verdict == "fail"
        assert message.startswith("nondeterministic error: two runs of the query returned different results")
    assert stored(cache, verifier, sql) == 0


def test_my_query_that_reads_the_clock_is_graded_afresh_every_time(verifier: Verifier, tmp_path: Path) -> None:
    # Its result is the same twice within one grading, but not from one day to the next: nothing is frozen.
    cache = VerdictCache(tmp_path / "v.sqlite")
    sql = "SELECT count(*) FROM author WHERE current_date > DATE '2000-01-01'"
    assert grade(verifier, sql, cache)[0] == "pass"
    assert stored(cache, verifier, sql) == 0


def test_a_deterministic_query_is_cached_as_before(verifier: Verifier, tmp_path: Path) -> None:
    cache = VerdictCache(tmp_path / "v.sqlite")
    sql = "SELECT count(*) FROM author"
    assert grade(verifier, sql, cache) == ("pass", "")
    assert stored(cache, verifier, sql) > 0


def test_a_string_that_says_now_is_not_the_clock() -> None:
    import sqlglot

    from vx.families.sql.ops.analysis import volatile_calls

    assert volatile_calls(sqlglot.parse_one("SELECT name FROM t WHERE status = 'now'", read="sqlite")) == []
    found = volatile_calls(sqlglot.parse_one("SELECT date('now', '-7 days'), random() FROM t", read="sqlite"))
    assert found == ["DATE('now', '-7 days')", "RAND()"]
