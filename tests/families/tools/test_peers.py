"""The tools family's peer ops and normal forms: an answer against the other answers to its question."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.verdict import Verdict
from vx.families.tools.decode import decode
from vx.families.tools.dialect import functions
from vx.families.tools.normalize import answer_key, normal_answer, normal_value
from vx.families.tools.ops.peers import (
    abbreviates,
    answer_form,
    compatible,
    disagrees_on_arguments,
    disagrees_on_calls,
    disagrees_with_peers,
    misformatted,
    outside_consensus,
    outside_exact_plurality,
    outside_normal_plurality,
    vote,
)
from vx.ops.core import Context

TASK = {
    "id": "t",
    "question": "What is the weather in Paris, France in celsius?",
    "functions": [
        {
            "name": "weather.get",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "description": "Default is 'celsius'"},
                    "days": {"type": "integer"},
                },
                "required": ["city"],
            },
        },
        {
            "name": "news.get",
            "description": "News of a city.",
            "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    ],
}


def key(output):
    d = decode(output, TASK["functions"])
    return answer_key(normal_answer(d, functions(TASK["functions"])))


def test_equal_answers_in_other_forms_have_one_normal_form():
    same = [
        "[weather.get(city='Paris')]",
        "[weather.get(city='paris', unit='celsius')]",  # a documented default spelled out
        "[weather.get(city='PARIS', unit=None)]",
        [{"weather_get": '{"city": "Paris"}'}],
        '<tool_call>{"name": "weather_get", "arguments": {"city": "Paris"}}</tool_call>',
    ]
    assert len({key(o) for o in same}) == 1
    assert key("[weather.get(city='Paris', days=2)]") != key(same[0])
    assert key("[weather.get(city='Paris', unit='kelvin')]") != key(same[0])
    assert key("[weather.get(city='Paris'), news.get(city='Paris')]") == key(
        "[news.get(city='Paris'), weather.get(city='Paris')]"
    )


def test_normal_values():
    assert normal_value(5) == normal_value(5.0)
    assert json.dumps(normal_value(True)) != json.dumps(normal_value(1)) and not compatible(True, 1)
    assert normal_value("New York, NY") == normal_value("new york ny")
    assert normal_value([1, "A b"]) == [1, "ab"]


def test_compatible_values_name_the_same_thing():
    assert compatible("paris", "parisfrance") and compatible("lakers", "losangeleslakers")
    assert compatible(["wifi", "fiction"], ["fiction", "wifi"])
    assert compatible("cm", "centimeters") and compatible("unitedkingdom", "uk") and compatible("kg", "kilograms")
    assert not compatible("paris", "rome") and not compatible("pa", "paris") and not compatible(1, 2)
    assert not compatible("cm", "meters") and not compatible("km", "miles")


@settings(max_examples=200, deadline=None)
@given(st.text("abcdefghij", min_size=1, max_size=6), st.text("abcdefghij", min_size=1, max_size=12))
def test_compatible_is_symmetric_and_an_abbreviation_keeps_its_letters_in_order(a, b):
    assert compatible(a, b) == compatible(b, a)
    if abbreviates(a, b):
        rest = iter(b)
        assert a[0] == b[0] and all(ch in rest for ch in a) and len(a) < len(b)


def observations(outputs):
    return [answer_form(TASK, o, Context()) for o in outputs]


def judge(o, mine, others):
    obs = observations([mine, *others])
    return o.judge(TASK, obs[0], obs[1:], Context())


RIGHT = "[weather.get(city='Paris')]"


def test_a_wrong_argument_against_a_clear_plurality_is_named():
    res = judge(disagrees_with_peers, "[weather.get(city='Rome')]", [RIGHT] * 5 + ["[weather.get(city='Oslo')]"])
    assert res.verdict == Verdict.DRAWBACK and "city" in res.message and '"rome"' in res.message


def test_the_same_answer_in_another_form_is_clean():
    others = [RIGHT] * 3 + ["[weather.get(city='Paris, France')]"] * 2
    for mine in ([{"weather_get": '{"city": "Paris"}'}], "[weather.get(city='Paris, France', unit='celsius')]"):
        assert judge(disagrees_with_peers, mine, others).verdict == Verdict.CLEAN


def test_calling_where_others_decline_and_declining_where_all_call():
    declines = ["No offered function can tell the weather."] * 3 + [RIGHT] * 4
    res = judge(disagrees_with_peers, RIGHT, declines)
    assert res.verdict == Verdict.DRAWBACK and "call nothing" in res.message
    assert judge(disagrees_with_peers, "I cannot.", declines).verdict == Verdict.CLEAN
    res = judge(disagrees_with_peers, "I cannot.", [RIGHT] * 9)
    assert res.verdict == Verdict.DRAWBACK and "calls nothing" in res.message


def test_another_function_against_a_clear_plurality():
    res = judge(disagrees_with_peers, "[news.get(city='Paris')]", [RIGHT] * 4)
    assert res.verdict == Verdict.DRAWBACK and "news.get" in res.message


def test_an_optional_argument_against_more_than_half_of_the_others():
    given_days = ["[weather.get(city='Paris', days=3)]"] * 4 + [RIGHT] * 3
    res = judge(disagrees_with_peers, RIGHT, given_days)
    assert res.verdict == Verdict.DRAWBACK and "days" in res.message and "<left out>" in res.message
    half = ["[weather.get(city='Paris', days=3)]"] * 3 + [RIGHT] * 3
    assert judge(disagrees_with_peers, RIGHT, half).verdict == Verdict.CLEAN  # half is not more than half


def test_the_levels_of_disagreement_are_ops_of_their_own():
    wrong_value = "[weather.get(city='Rome')]"
    others = [RIGHT] * 5
    assert judge(disagrees_on_arguments, wrong_value, others).verdict == Verdict.DRAWBACK
    assert judge(disagrees_on_calls, wrong_value, others).verdict == Verdict.CLEAN
    other_fn = "[news.get(city='Paris')]"
    assert judge(disagrees_on_calls, other_fn, others).verdict == Verdict.DRAWBACK
    res = judge(disagrees_on_arguments, other_fn, others)
    assert res.verdict == Verdict.ABSTAIN and "disagrees_on_calls" in res.message
    declines = ["No offered function can tell the weather."] * 4 + [RIGHT] * 2
    assert judge(disagrees_on_calls, RIGHT, declines).verdict == Verdict.DRAWBACK
    assert judge(disagrees_on_arguments, RIGHT, declines).verdict == Verdict.ABSTAIN
    assert judge(disagrees_on_arguments, RIGHT, others).verdict == Verdict.CLEAN


def test_a_call_in_the_wrong_form_where_others_decline_counts_as_none():
    fenced = "```python\n" + RIGHT + "\n```"
    declines = ["No offered function can tell the weather."] * 4 + [RIGHT] * 3
    res = judge(disagrees_with_peers, fenced, declines)
    assert res.verdict == Verdict.CLEAN and "counts as no call" in res.message
    assert judge(disagrees_with_peers, RIGHT, declines).verdict == Verdict.DRAWBACK


def test_too_few_or_split_peers_abstain():
    assert judge(disagrees_with_peers, RIGHT, [RIGHT]).verdict == Verdict.ABSTAIN
    split = ["[weather.get(city='Rome')]", "[weather.get(city='Oslo')]", "[news.get(city='x')]", "[news.get(city='y')]"]
    assert judge(disagrees_with_peers, RIGHT, split).verdict == Verdict.ABSTAIN
    alone = disagrees_with_peers(TASK, RIGHT, Context())
    assert alone.verdict == Verdict.ABSTAIN and "graded alone" in alone.message


def test_the_baselines():
    others = [RIGHT] * 3 + ["[weather.get(city='Paris', unit='celsius')]"]
    assert judge(outside_normal_plurality, RIGHT, others).verdict == Verdict.CLEAN
    assert judge(outside_normal_plurality, "[weather.get(city='Rome')]", others).verdict == Verdict.DRAWBACK
    assert (
        judge(outside_exact_plurality, "[weather.get(city='Paris', unit='celsius')]", others).verdict
        == Verdict.DRAWBACK
    )
    assert judge(outside_consensus, RIGHT, others).verdict == Verdict.CLEAN
    assert judge(outside_consensus, "[weather.get(city='Rome')]", others).verdict == Verdict.DRAWBACK


def test_a_misformatted_call_fails_where_a_function_fits_and_counts_as_none_where_none_does():
    fenced = "```python\n" + RIGHT + "\n```"
    res = judge(misformatted, fenced, [RIGHT] * 6)
    assert res.verdict == Verdict.DRAWBACK and "fence" in res.message
    assert judge(misformatted, fenced, ["I cannot."] * 4 + [RIGHT] * 3).verdict == Verdict.CLEAN
    assert judge(misformatted, RIGHT, [RIGHT] * 3).verdict == Verdict.CLEAN
    assert judge(misformatted, "I cannot.", [RIGHT] * 3).verdict == Verdict.ABSTAIN
    assert judge(misformatted, fenced, []).verdict == Verdict.DRAWBACK  # no peers: the format alone


def test_calls_that_do_not_parse_are_misformatted_where_a_function_fits():
    broken = "[weather.get(city='Paris'"
    res = judge(misformatted, broken, [RIGHT] * 6)
    assert res.verdict == Verdict.DRAWBACK and "cannot be read" in res.message
    assert judge(misformatted, broken, ["I cannot."] * 4 + [RIGHT] * 3).verdict == Verdict.CLEAN
    assert judge(misformatted, broken, []).verdict == Verdict.DRAWBACK
    assert judge(disagrees_with_peers, broken, [RIGHT] * 6).verdict == Verdict.ABSTAIN  # misformatted speaks


_city = st.sampled_from(["Paris", "Rome", "Oslo", "Lima"])
_answer = st.one_of(
    _city.map(lambda c: f"[weather.get(city='{c}')]"),
    _city.map(lambda c: [{"weather_get": json.dumps({"city": c})}]),
    st.just("I cannot."),
    st.just("[weather.get(city="),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_answer, min_size=1, max_size=8), st.permutations(range(8)))
def test_the_peer_verdict_does_not_depend_on_the_peers_order(answers, order):
    obs = observations(answers)
    peers = obs[1:]
    shuffled = [peers[i] for i in order if i < len(peers)]
    assert vote(obs[0], peers) == vote(obs[0], shuffled)


@settings(max_examples=100, deadline=None)
@given(_city, st.integers(3, 8))
def test_an_answer_the_peers_all_give_is_never_a_drawback(city, n):
    answers = [f"[weather.get(city='{city}')]"] * n
    obs = observations(answers)
    assert vote(obs[0], obs[1:]).verdict == 0
