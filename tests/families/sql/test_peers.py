"""The SQL peer ops and the detectors of real failure classes, on a small script database."""

import pytest

from vx.families.sql.catalog import Catalog
from vx.families.sql.ops import exec as X
from vx.families.sql.ops import peers as P
from vx.families.sql.ops import static as S
from vx.families.sql.variants import VERSION
from vx.families.sql.warehouse import open_warehouse
from vx.ops.core import Context


@pytest.fixture
def task(shop_spec):
    with open_warehouse(shop_spec) as wh:
        cat = Catalog.from_warehouse(wh).to_json()
    return {
        "id": "q1",
        "question": "Which stadium has the most concerts?",
        "dialect": "sqlite",
        "warehouse": shop_spec,
        "catalog": cat,
        "match": "spider",
        "ignore_order": True,
        "timeout": 5.0,
        "variants": {"seed": 0, "version": VERSION, "use": [0, 1, 2]},
    }


def run(o, task, sql):
    ctx = Context()
    S.parses(task, sql, ctx)
    return o(task, sql, ctx)


def observe(task, sql):
    return P.results(task, sql, Context())


def judge(task, mine, others, **kw):
    return P.vote(observe(task, mine), [observe(task, s) for s in others], **kw)


RIGHT = "SELECT T2.Name FROM concert AS T1 JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID GROUP BY T2.Stadium_ID"
SAME = "SELECT stadium.Name FROM stadium JOIN concert ON concert.Stadium_ID = stadium.Stadium_ID GROUP BY stadium.Name"
WRONG = "SELECT Name FROM stadium"


def test_the_observer_runs_the_original_and_each_listed_variant(task):
    obs = observe(task, RIGHT)
    assert obs["ran"] and [row[0] for row in obs["dbs"]] == ["original", "variant 0", "variant 1", "variant 2"]
    broken = observe(task, "SELECT nope FROM stadium")
    assert not broken["ran"] and len(broken["dbs"]) == 1  # no variant is tried for a query that does not run


def test_an_attempt_unlike_a_clear_plurality_is_flagged_with_the_database_and_rows(task):
    v = judge(task, WRONG, [RIGHT, SAME, RIGHT])
    assert v.verdict == 1
    assert v.message.startswith("on the original database it returns 5 row(s)") and "3 of 3" in v.message
    assert "this attempt has ('Bayview')" in v.message


def test_an_attempt_with_the_plurality_is_clean_and_a_lone_one_abstains(task):
    assert judge(task, SAME, [RIGHT, RIGHT, WRONG]).verdict == 0
    assert judge(task, RIGHT, []).verdict == -1
    lone = judge(task, RIGHT, [WRONG])
    assert lone.verdict == -1 and "at least 2 needed" in lone.message


def test_no_clear_plurality_means_abstain(task):
    third = "SELECT Name FROM stadium WHERE Capacity > 5000"
    v = judge(task, RIGHT, [WRONG, third], min_support=1, quorum=0.3)  # a 1-1 split is no plurality
    assert v.verdict == -1 and "no database has a clear plurality" in v.message


def test_an_attempt_that_does_not_run_differs_from_peers_that_agree(task):
    v = judge(task, "SELECT nope FROM stadium", [RIGHT, SAME])
    assert v.verdict == 1 and "does not run" in v.message


def test_distinct_is_ignored_by_spider_rules_but_not_by_spider_2(task):
    with_distinct = "SELECT DISTINCT Stadium_ID FROM concert"
    without = "SELECT Stadium_ID FROM concert"
    assert judge(task, with_distinct, [without, without]).verdict == 0
    other = {**task}
    other.pop("match")
    assert P.vote(observe(other, with_distinct), [observe(other, without)] * 2).verdict == 1


def test_a_difference_only_on_a_variant_names_the_variant(task):
    # the same rows on the original (stadiums 1-4 are those with concerts), not on variants that add concerts
    lucky = "SELECT Name FROM stadium WHERE Stadium_ID <= 4"
    v = judge(task, lucky, [RIGHT, SAME, RIGHT], databases="all")
    assert v.verdict == 1 and "on the variant" in v.message
    assert judge(task, lucky, [RIGHT, SAME, RIGHT], databases="original").verdict == 0


def test_the_self_consistency_baseline_follows_the_most_common_result(task):
    mine = observe(task, WRONG)
    others = [observe(task, s) for s in (RIGHT, SAME)]
    assert P.outside_plurality.judge(task, mine, others).verdict == 1
    assert P.outside_plurality.judge(task, observe(task, RIGHT), [mine, others[1]]).verdict == 0
    assert P.outside_plurality.judge(task, mine, None).verdict == -1  # graded alone


def test_the_template_refuses_bad_parameters():
    from vx.ops.specs import SpecError

    with pytest.raises(SpecError):
        P.disagrees_with_peers_check(databases="some")
    with pytest.raises(SpecError):
        P.disagrees_with_peers_check(quorum=0)


# --------------------------------------------------------------------------- detectors of real failure classes


def test_literal_not_in_column_names_the_spelling_the_data_has(task):
    v = run(X.literal_not_in_column, task, "SELECT Name FROM stadium WHERE City = 'glasgow'")
    assert v.verdict == 1 and "the data spells it 'Glasgow'" in v.message
    v = run(X.literal_not_in_column, task, "SELECT * FROM concert WHERE concert_Name = 'Auditons'")
    assert v.verdict == 1 and "nearest value: 'Auditions'" in v.message
    assert run(X.literal_not_in_column, task, "SELECT Name FROM stadium WHERE City = 'Glasgow'").verdict == 0
    assert run(X.literal_not_in_column, task, "SELECT Name FROM stadium WHERE City LIKE '%glas%'").verdict == 0
    assert run(X.literal_not_in_column, task, "SELECT Name FROM stadium WHERE Capacity > 10").verdict == -1


def test_limit_over_ties_sees_a_tie_across_the_limit(task):
    tie = "SELECT Stadium_ID FROM concert GROUP BY Stadium_ID ORDER BY count(*) DESC LIMIT 1"  # 2 and 3 both have 2
    v = run(X.limit_over_ties, task, tie)
    assert v.verdict == 1 and "LIMIT 1 cuts through a tie" in v.message
    assert run(X.limit_over_ties, task, "SELECT Name FROM stadium ORDER BY Capacity DESC LIMIT 1").verdict == 0
    assert run(X.limit_over_ties, task, "SELECT Name FROM stadium LIMIT 1").verdict == -1


def test_extra_aggregate_column_flags_a_figure_kept_only_to_order_by(task):
    sql = (
        "SELECT T2.Name, count(*) AS n FROM concert AS T1 JOIN stadium AS T2 ON T1.Stadium_ID = T2.Stadium_ID "
        "GROUP BY T2.Stadium_ID ORDER BY n DESC LIMIT 1"
    )
    v = run(S.extra_aggregate_column, task, sql)
    assert v.verdict == 1 and "count(*) as n" in v.message.lower()
    asks = {**task, "question": "Show the stadium name and the number of concerts, most first."}
    assert run(S.extra_aggregate_column, asks, sql).verdict == 0
    most = {**task, "question": "Which stadium has the most number of concerts?"}  # a superlative, not a figure
    assert run(S.extra_aggregate_column, most, sql).verdict == 1
    assert run(S.extra_aggregate_column, task, "SELECT Name FROM stadium").verdict == -1


def test_unused_join_flags_a_table_joined_for_nothing(task):
    sql = "SELECT T1.Name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    v = run(X.unused_join, task, sql)
    assert v.verdict == 1 and "singer_in_concert AS T2" in v.message and "repeats rows" in v.message
    used = "SELECT T1.Name, T2.concert_ID FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    assert run(X.unused_join, task, used).verdict == 0
    left = "SELECT T1.Name FROM singer AS T1 LEFT JOIN singer_in_concert AS T2 ON T1.Singer_ID = T2.Singer_ID"
    assert run(X.unused_join, task, left).verdict == 0
    assert run(X.unused_join, task, "SELECT Name FROM singer").verdict == -1


def test_a_query_that_times_out_on_the_original_is_not_run_on_the_variants(task):
    slow = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n"
    obs = observe({**task, "timeout": 0.2}, slow)
    assert not obs["ran"] and [row[:2] for row in obs["dbs"]] == [["original", "timeout"]]


def test_what_an_output_returns_is_kept_bounded(task):
    long = "SELECT '" + "x" * 5000 + "' FROM stadium, stadium AS b, stadium AS c"
    obs = observe(task, long)
    row = obs["dbs"][0]
    assert row[1] == "ok" and len(row[-1]) == P.SAMPLE_ROWS and all(len(c) <= P.CELL_CHARS for r in row[-1] for c in r)


def test_unanimity_is_clean_only_when_every_other_attempt_returns_the_same_result(task):
    from vx.families.sql.ops.agreement import outside_unanimity

    def unanimity(mine, others):
        return outside_unanimity.judge(task, observe(task, mine), [observe(task, s) for s in others])

    assert unanimity(RIGHT, [SAME, RIGHT]).verdict == 0  # the same result on every database
    v = unanimity(RIGHT, [SAME, WRONG])
    assert v.verdict == 1 and "different result" in v.message
    assert unanimity(RIGHT, [SAME]).verdict == -1  # one other attempt is no unanimity
    assert unanimity("SELECT nope FROM stadium", [RIGHT, SAME]).verdict == -1  # it does not run
    assert unanimity(RIGHT, [SAME, "SELECT nope FROM stadium"]).verdict == 1  # another does not run
