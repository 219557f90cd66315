import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _sql_cache(tmp_path_factory):
    """Databases built from defog-data go to a per-session directory, never the user's cache: the
    tests thereby also check that a fresh machine rebuilds them from the installed package."""
    old = os.environ.get("VX_SQL_CACHE")
    os.environ["VX_SQL_CACHE"] = str(tmp_path_factory.mktemp("vx-sql-cache"))
    yield
    if old is None:
        os.environ.pop("VX_SQL_CACHE", None)
    else:
        os.environ["VX_SQL_CACHE"] = old


@pytest.fixture(autouse=True)
def _fresh_sessions():
    yield
    try:
        from vx.families.sql.warehouse import close_sessions
    except ImportError:
        return
    close_sessions()


SHARED_DATA = os.environ.get("VX_SHARED_DATA") or str(
    __import__("pathlib").Path(__file__).resolve().parents[4] / "shared" / "data")


@pytest.fixture
def questions_csv():
    """defog's PostgreSQL question file from ../shared/data (skips when absent)."""
    from pathlib import Path

    p = Path(SHARED_DATA) / "sql" / "defog_questions_gen_postgres.csv"
    if not p.exists():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p
