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
    __import__("pathlib").Path(__file__).resolve().parents[4] / "shared" / "data"
)


@pytest.fixture
def questions_csv():
    """defog's PostgreSQL question file from ../shared/data (skips when absent)."""
    from pathlib import Path

    p = Path(SHARED_DATA) / "sql" / "defog_questions_gen_postgres.csv"
    if not p.exists():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p


#: A small database as a SQLite script (the form Spider's databases take): stadiums, concerts that refer
#: to them, singers and who sang in which concert; a tie in concert counts, a literal spelt in one case.
SHOP_SCRIPT = """
CREATE TABLE "stadium" ("Stadium_ID" INT, "Name" TEXT, "Capacity" INT, "City" TEXT);
INSERT INTO "stadium" VALUES (1, 'Glebe Park', 3960, 'Brechin'), (2, 'Somerset Park', 11998, 'Ayr'),
  (3, 'Balmoor', 4000, 'Peterhead'), (4, 'Hampden Park', 52500, 'Glasgow'), (5, 'Bayview', 2000, 'Methil');
CREATE TABLE "concert" ("concert_ID" INT, "concert_Name" TEXT, "Stadium_ID" TEXT, "Year" TEXT);
INSERT INTO "concert" VALUES (1, 'Auditions', '1', '2014'), (2, 'Super bootcamp', '2', '2014'),
  (3, 'Home Visits', '2', '2015'), (4, 'Week 1', '3', '2014'), (5, 'Week 1', '3', '2015'), (6, 'Week 2', '4', '2015');
CREATE TABLE "singer" ("Singer_ID" INT, "Name" TEXT, "Country" TEXT, "Age" INT);
INSERT INTO "singer" VALUES (1, 'Joe Sharp', 'Netherlands', 52), (2, 'Timbaland', 'United States', 32),
  (3, 'Justin Brown', 'France', 29), (4, 'Rose White', 'France', 41), (5, 'John Nizinik', 'France', 43);
CREATE TABLE "singer_in_concert" ("concert_ID" INT, "Singer_ID" TEXT);
INSERT INTO "singer_in_concert" VALUES (1, '2'), (1, '3'), (1, '5'), (2, '3'), (2, '4'), (3, '5'), (4, '4'), (5, '1');
"""


@pytest.fixture
def shop_spec(tmp_path):
    """The warehouse spec of :data:`SHOP_SCRIPT`, written to a .sql file."""
    from vx.families.sql.scripts import script_spec

    path = tmp_path / "shop.sql"
    path.write_text(SHOP_SCRIPT, encoding="utf-8")
    return script_spec(path, "shop")


@pytest.fixture
def spider_root():
    """../shared/data/sql/spider (skips when absent)."""
    from pathlib import Path

    p = Path(SHARED_DATA) / "sql" / "spider"
    if not (p / "questions.jsonl").is_file():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p
