"""The SQL ops on the styles real text-to-SQL systems write (docs/sql.md, "False alarms by system").

Each query below is a real prediction from the Spider runs (DIN-SQL's five models, C3SQL, DAIL-SQL,
Graphix-T5) that Spider's execution match calls right, or a real wrong one, run on a few rows shaped like
the Spider database it was written for: double-quoted string literals, lower-case names, ``T1``/``T2``
and AS-less aliases, quoted names with spaces, joins used as filters, flight_2's padded values.
"""

import pytest

from vx.families.sql.catalog import Catalog
from vx.families.sql.ops import exec as X
from vx.families.sql.ops import static as S
from vx.families.sql.scripts import script_spec
from vx.families.sql.warehouse import open_warehouse
from vx.ops.core import Context

D, C, A = 1, 0, -1

SCRIPT = """
CREATE TABLE "country" ("Code" TEXT, "Name" TEXT, "Continent" TEXT, "Region" TEXT, "IndepYear" INT,
  "Population" INT, "LifeExpectancy" REAL);
INSERT INTO "country" VALUES ('AGO', 'Angola', 'Africa', 'Central Africa', 1975, 12878000, 38.3),
  ('CAF', 'Central African Republic', 'Africa', 'Central Africa', 1960, 3615000, 44.0),
  ('PCN', 'Pitcairn', 'Oceania', 'Polynesia', NULL, 50, NULL), ('NLD', 'Netherlands', 'Europe', 'Western Europe',
  1581, 15864000, 78.3);
CREATE TABLE "countrylanguage" ("CountryCode" TEXT, "Language" TEXT, "IsOfficial" TEXT);
INSERT INTO "countrylanguage" VALUES ('AGO', 'Portuguese', 'T'), ('AGO', 'Kongo', 'F'), ('NLD', 'Dutch', 'T'),
  ('CAF', 'Sango', 'T'), ('CAF', 'French', 'T');
CREATE TABLE "Dogs" ("dog_id" INT, "name" TEXT);
INSERT INTO "Dogs" VALUES (1, 'Kacey'), (2, 'Hipolito'), (3, 'Mavis');
CREATE TABLE "Treatments" ("treatment_id" INT, "dog_id" INT, "cost_of_treatment" INT);
INSERT INTO "Treatments" VALUES (1, 1, 567), (2, 1, 147), (3, 3, 429);
CREATE TABLE "TV_series" ("id" INT, "Episode" TEXT, "Weekly Rank" INT, "Channel" TEXT);
INSERT INTO "TV_series" VALUES (1, 'A Love of a Lifetime', 9, '700'), (2, 'Friendly Skies', 8, '700');
CREATE TABLE "airports" ("City" TEXT, "AirportCode" TEXT, "AirportName" TEXT);
INSERT INTO "airports" VALUES ('Aberdeen ', 'APG', 'Phillips AAF '), ('Aberdeen ', 'ABR', 'Municipal '),
  ('Abilene ', 'DYS', 'Dyess AFB ');
CREATE TABLE "flights" ("Airline" INT, "FlightNo" INT, "SourceAirport" TEXT, "DestAirport" TEXT);
INSERT INTO "flights" VALUES (1, 28, ' APG', ' ABR'), (1, 29, ' ABR', ' APG'), (2, 44, ' DYS', ' APG');
CREATE TABLE "teacher" ("Teacher_ID" INT, "Name" TEXT, "Hometown" TEXT);
INSERT INTO "teacher" VALUES (1, 'Joseph Huts', 'Blackrod Urban District'),
  (2, 'Gustaaf Deloor', 'Bolton County Borough');
"""


@pytest.fixture
def spec(tmp_path):
    path = tmp_path / "world.sql"
    path.write_text(SCRIPT, encoding="utf-8")
    return script_spec(path, "world")


@pytest.fixture
def task(spec):
    with open_warehouse(spec) as wh:
        cat = Catalog.from_warehouse(wh).to_json()
    return {
        "id": "q",
        "question": "What is the average life expectancy in Central Africa?",
        "dialect": "sqlite",
        "warehouse": spec,
        "catalog": cat,
        "match": "spider",
        "ignore_order": True,
        "timeout": 5.0,
    }


def run(o, task, sql, **fields):
    t = {**task, **fields}
    ctx = Context()
    assert S.parses(t, sql, ctx).verdict == C, sql
    return o(t, sql, ctx)


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT AVG(LifeExpectancy) FROM country WHERE Region = "Central Africa"',  # DIN-SQL granite
        'select avg(lifeexpectancy) from country where region = "Central Africa"',  # Graphix-T5
        'SELECT "Weekly Rank" FROM "TV_series" WHERE "Episode" = "A Love of a Lifetime"',  # DAIL-SQL, quoted names
        "SELECT Language FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode "
        'WHERE T1.Region = "Central Africa" AND T2.IsOfficial = "T"',  # DIN-SQL granite, T1/T2 aliases
        "SELECT c.Name FROM country c JOIN countrylanguage cl ON c.Code = cl.CountryCode WHERE cl.Language = 'Dutch'",
        'SELECT COUNT(*) FROM Dogs WHERE name != "Kacey"',  # C3SQL-style string in a negation
    ],
)
def test_double_quoted_literals_lower_case_and_aliases_are_no_unknown_identifier(task, sql):
    assert run(S.unknown_identifier, task, sql).verdict == C


def test_a_double_quoted_name_of_a_column_stays_a_column_and_a_misspelt_one_is_still_caught(task):
    ctx = Context()
    S.parses(task, 'SELECT "Name" FROM country WHERE "Region" = "Central Africa"', ctx)
    cols = [c.name for c in ctx["artifact"].tree.find_all(__import__("sqlglot").exp.Column)]
    assert cols == ["Name", "Region"]  # "Central Africa" became a string literal
    v = run(S.unknown_identifier, task, "SELECT T1.Nme FROM country AS T1")
    assert v.verdict == D and "Nme" in v.message
    wrong_side = "SELECT T1.Language FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode"
    assert run(S.unknown_identifier, task, wrong_side).verdict == D
    assert run(S.unknown_identifier, task, "SELECT Name FROM countries").verdict == D


def test_a_double_quoted_literal_is_checked_against_the_data(task):
    v = run(X.literal_not_in_column, task, 'SELECT Name FROM country WHERE Continent = "africa"')
    assert v.verdict == D and "'Africa'" in v.message
    assert run(X.literal_not_in_column, task, 'SELECT Name FROM country WHERE Continent = "Africa"').verdict == C


@pytest.mark.parametrize(
    "sql",
    [
        # "dogs who have gone through a treatment": the join keeps dogs with a match (a semi-join)
        "SELECT COUNT(DISTINCT Dogs.dog_id) FROM Dogs JOIN Treatments ON Dogs.dog_id = Treatments.dog_id",
        "SELECT DISTINCT T1.name FROM Dogs AS T1 JOIN Treatments AS T2 ON T1.dog_id = T2.dog_id",
        # grouped: the join is what is counted
        "SELECT T1.Name FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode "
        "GROUP BY T1.Name HAVING COUNT(*) > 1",
        # many-to-one: joining the language's country cannot repeat a language
        "SELECT T2.Language FROM countrylanguage AS T2 JOIN country AS T1 ON T1.Code = T2.CountryCode",
        # a set operation removes repeats anyway (Graphix-T5)
        "select dogs.name from dogs join treatments on dogs.dog_id = treatments.dog_id intersect select name from dogs",
        # the repeat does not happen on this data (one match per row)
        "SELECT T1.Continent FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode "
        "WHERE T1.Name = 'Netherlands'",
    ],
)
def test_joins_used_as_filters_are_no_unused_join(task, sql):
    assert run(X.unused_join, task, sql).verdict == C


def test_a_join_that_repeats_rows_is_an_unused_join(task):
    sql = "SELECT T1.Name FROM country AS T1 JOIN countrylanguage AS T2 ON T1.Code = T2.CountryCode"
    v = run(X.unused_join, task, sql)
    assert v.verdict == D and "countrylanguage AS T2" in v.message and "('Angola',) 2 times" in v.message


def test_padded_values_are_the_datas_quirk_not_the_querys(task):
    # flight_2: "flights arriving in Aberdeen" written from the question returns nothing, as the gold does
    q = (
        "SELECT COUNT(*) FROM flights AS T1 JOIN airports AS T2 ON T1.DestAirport = T2.AirportCode "
        "WHERE T2.City = 'Aberdeen'"
    )
    assert run(X.literal_not_in_column, task, q).verdict == A
    codes = 'SELECT FlightNo FROM flights WHERE DestAirport = "APG"'  # DAIL-SQL
    assert run(X.literal_not_in_column, task, codes).verdict == A
    assert run(X.empty_result, task, codes).verdict == A
    # a value the data holds up to surrounding spaces is not misspelt either
    space = "SELECT Name FROM teacher WHERE Hometown != ' Blackrod Urban District'"
    assert run(X.literal_not_in_column, task, space).verdict == A


def test_an_empty_result_alone_is_not_a_drawback(task):
    # "hometowns shared by at least two teachers": no rows is a possible answer
    shared = "SELECT Hometown FROM teacher GROUP BY Hometown HAVING COUNT(*) >= 2"
    assert run(X.empty_result, task, shared).verdict == A
    # an empty result on unpadded data without a threshold still is one
    v = run(X.empty_result, task, "SELECT Name FROM country WHERE Continent = 'Afrika'")
    assert v.verdict == D and "no rows" in v.message


def test_nulls_read_from_the_data_are_no_null_heavy_result(task):
    # "the name, independence year and surface area of the country with the smallest population"
    data = "SELECT Name, IndepYear FROM country ORDER BY Population ASC LIMIT 1"
    assert run(X.null_heavy_result, task, data).verdict == A
    made = (
        "SELECT T1.Name, AVG(T2.cost_of_treatment) FROM Dogs AS T1 LEFT JOIN Treatments AS T2 "
        "ON T1.dog_id = T2.dog_id WHERE T1.dog_id = 2 GROUP BY T1.Name"
    )
    v = run(X.null_heavy_result, task, made)
    assert v.verdict == D and "NULL in all 1 row" in v.message


def test_a_limit_in_a_subquery_bounds_the_rows(task):
    q = {"question": "Which country has the most languages?"}
    sub = (
        "SELECT Name FROM country WHERE Code = (SELECT CountryCode FROM countrylanguage "
        "GROUP BY CountryCode ORDER BY COUNT(*) DESC LIMIT 1)"
    )
    assert run(S.top_n_missing_limit, task, sub, **q).verdict == C
    assert run(S.top_n_missing_limit, task, "SELECT Name FROM country", **q).verdict == D


def test_a_column_is_resolved_in_its_own_scope(task):
    # Name is a column of teacher and of country: inside the subquery only country is in scope
    # (the shape of a real C3SQL prediction for car_1, `Maker IN (SELECT Id FROM car_makers WHERE Maker = …)`)
    sql = 'SELECT Name FROM teacher WHERE Hometown IN (SELECT Name FROM country WHERE Name = "netherlands")'
    v = run(X.literal_not_in_column, task, sql)
    assert v.verdict == D and "country.Name" in v.message and "'Netherlands'" in v.message


def test_a_scope_sqlglot_rejects_leaves_its_columns_unresolved():
    from vx.families.sql.ops.analysis import resolve_columns

    cat = Catalog.from_json({"tables": {"author": [["aid", "INT"]]}, "samples": {}})
    tree = __import__("sqlglot").parse_one("SELECT aid FROM author a JOIN author a", read="sqlite")  # alias twice
    assert resolve_columns(tree, cat) == {}
    ok = __import__("sqlglot").parse_one("SELECT a.aid FROM author a", read="sqlite")
    assert list(resolve_columns(ok, cat).values()) == [("author", "aid", "INT")]
