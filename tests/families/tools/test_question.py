"""Ops that compare calls with the question: a function that serves nothing asked, a value grounded
nowhere, an enumeration left short. Each fires on its failure and stays clean on correct answers."""

from __future__ import annotations

import pytest

from vx.dsl.verdict import Verdict
from vx.families.tools.ops.question import (
    enumerations,
    grounding,
    missed_enumerated,
    no_function_fits,
    ungrounded_value,
)
from vx.families.tools.ops.text import numbers, stems
from vx.ops.core import Context


def task(question, *docs):
    return {"id": "t", "question": question, "functions": list(docs)}


WEATHER = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "dict",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Default is 'celsius'"},
            "days": {"type": "integer", "description": "Days ahead."},
        },
        "required": ["city"],
    },
}
CONVERT = {
    "name": "unit_conversion.convert",
    "description": "Convert a value from one unit to another.",
    "parameters": {
        "type": "dict",
        "properties": {"value": {"type": "float"}, "from_unit": {"type": "string"}, "to_unit": {"type": "string"}},
        "required": ["value", "from_unit", "to_unit"],
    },
}
AREA = {
    "name": "geometry.circle_area",
    "description": "Area of a circle.",
    "parameters": {"type": "dict", "properties": {"radius": {"type": "float"}}, "required": ["radius"]},
}


def test_words_numbers_and_stems():
    assert stems("Directions to Palo Alto") == stems("direction palo alto") and "the" not in stems("the")
    assert {5.0, 1000.0, 0.05, 2.0, 12.0} <= numbers("5 cars, 1,000 people, 5% off, twice a dozen")


@pytest.mark.parametrize(
    "question, docs, output, verdict",
    [
        ("What is the weather in Paris?", (WEATHER,), "[get_weather(city='Paris')]", Verdict.CLEAN),
        ("Find the area of a circle of radius 3.", (AREA,), "[geometry.circle_area(radius=3)]", Verdict.CLEAN),
        ("Who won the NBA final in 2023?", (WEATHER,), "[get_weather(city='Denver')]", Verdict.DRAWBACK),
        ("Who won the NBA final in 2023?", (WEATHER,), "I cannot tell.", Verdict.ABSTAIN),
        # no word of the docs, but the call takes the question's words: it serves what is asked
        (
            "The vase is 24 inches tall. How tall is it in centimeters?",
            (CONVERT,),
            "[unit_conversion.convert(value=24, from_unit='inches', to_unit='centimeters')]",
            Verdict.CLEAN,
        ),
        (
            "I have 100 euro. How much is it in US dollars?",
            ({**CONVERT, "name": "currency_conversion", "description": "Convert an amount."},),
            "[currency_conversion(value=100, from_unit='EUR', to_unit='USD')]",
            Verdict.CLEAN,
        ),
        # a call in a form the answer format does not take counts as none: misformatted judges it
        ("Who won the NBA final in 2023?", (WEATHER,), "```python\n[get_weather(city='Denver')]\n```", Verdict.ABSTAIN),
    ],
)
def test_no_function_fits(question, docs, output, verdict):
    res = no_function_fits(task(question, *docs), output, Context())
    assert res.verdict == verdict, res.message
    if verdict == Verdict.DRAWBACK:
        assert "share no word with the question" in res.message


def test_enumerations_are_names_not_clauses():
    assert enumerations("What is the weather in Paris, London and Rome?") == [["Paris", "London", "Rome"]]
    assert enumerations("Price and availability of a P125 in Berlin and Madrid's stores") == [["Berlin", "Madrid's"]]
    assert enumerations("Sum the multiples of 3 and 5 between 1 and 1000") == []
    assert enumerations("I want the biography and main contributions of Pope Innocent III") == []
    assert enumerations("Find a recipe in New York, and I would like a cake") == []


@pytest.mark.parametrize(
    "output, verdict",
    [
        ("[get_weather(city='Paris'), get_weather(city='London'), get_weather(city='Rome')]", Verdict.CLEAN),
        ("[get_weather(city='Paris')]", Verdict.DRAWBACK),
        ("[get_weather(city='Paris'), get_weather(city='London')]", Verdict.DRAWBACK),
        ("[get_weather(city='Oslo')]", Verdict.ABSTAIN),
    ],
)
def test_missed_enumerated(output, verdict):
    res = missed_enumerated(task("What is the weather in Paris, London and Rome?", WEATHER), output, Context())
    assert res.verdict == verdict, res.message
    if verdict == Verdict.DRAWBACK:
        assert "Rome" in res.message


def test_an_enumeration_the_question_narrows_down_is_left_alone():
    q = "Of the cities Paris, London, Rome and Oslo, I care about Paris and London: what is the weather there?"
    both = "[get_weather(city='Paris'), get_weather(city='London')]"
    assert missed_enumerated(task(q, WEATHER), both, Context()).verdict == Verdict.CLEAN
    res = missed_enumerated(task(q, WEATHER), "[get_weather(city='Paris')]", Context())
    assert res.verdict == Verdict.DRAWBACK and "London" in res.message


def judge_grounding(question, mine, others):
    t = task(question, WEATHER)
    obs = [grounding(t, o, Context()) for o in [mine, *others]]
    return ungrounded_value.judge(t, obs[0], obs[1:], Context())


def test_a_made_up_value_no_other_answer_gives_is_ungrounded():
    q = "What will the weather be in Paris in 3 days?"
    res = judge_grounding(q, "[get_weather(city='Lyon', days=3)]", ["[get_weather(city='Paris', days=3)]"] * 4)
    assert res.verdict == Verdict.DRAWBACK and "Lyon" in res.message and "no other answer gives it" in res.message
    res = judge_grounding(q, "[get_weather(city='Paris', days=9)]", ["[get_weather(city='Paris', days=3)]"] * 4)
    assert res.verdict == Verdict.DRAWBACK and "days = 9" in res.message


@pytest.mark.parametrize(
    "question, mine",
    [
        ("What will the weather be in Paris in 3 days?", "[get_weather(city='paris', days=3)]"),
        ("Weather in Paris for the next week?", "[get_weather(city='Paris', days=7)]"),  # a week: 7 days
        ("Weather in Paris for the next three days?", "[get_weather(city='Paris', days=3)]"),  # spelled
        ("Weather in Paris in fahrenheit?", "[get_weather(city='Paris', unit='fahrenheit')]"),
        ("Weather in Paris?", "[get_weather(city='Paris', unit='celsius')]"),  # the documented default
    ],
)
def test_grounded_values_are_clean(question, mine):
    assert judge_grounding(question, mine, []).verdict == Verdict.CLEAN


def test_a_value_in_a_call_of_the_wrong_form_is_left_to_misformatted():
    q = "What will the weather be in Paris in 3 days?"
    res = judge_grounding(q, "```python\n[get_weather(city='Lyon', days=3)]\n```", ["[get_weather(city='Paris')]"])
    assert res.verdict == Verdict.ABSTAIN and "misformatted" in res.message


def test_what_other_answers_give_too_is_grounded_by_them():
    q = "What is the weather where the Eiffel Tower stands?"
    mine = "[get_weather(city='Paris')]"
    assert judge_grounding(q, mine, [mine] * 2 + ["[get_weather(city='Lyon')]"]).verdict == Verdict.CLEAN
    assert judge_grounding(q, mine, [mine] + ["[get_weather(city='Lyon')]"] * 3).verdict == Verdict.DRAWBACK
