"""The tools family's single-turn static ops: each fires on the failure it names and stays clean on
correct answers written in every form (false alarms matter as much as what an op catches)."""

from __future__ import annotations

import pytest

from vx.dsl.verdict import Verdict
from vx.families.tools.ops import (
    breaks_contract,
    decodes,
    missing_required,
    outside_enum,
    unknown_function,
    unknown_parameter,
    wrong_type,
)
from vx.families.tools.ops.artifact import build_answer
from vx.families.tools.ops.static import format_problem
from vx.families.tools.pack import PACK
from vx.ops.core import Context

TASK = {
    "id": "t1",
    "question": "What is the weather in Paris, in celsius?",
    "functions": [
        {
            "name": "weather.get",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "city": {"type": "string", "description": "The city."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Default is celsius"},
                    "days": {"type": "integer", "description": "Days ahead."},
                },
                "required": ["city"],
            },
        }
    ],
}

GOOD = (
    "[weather.get(city='Paris', unit='celsius')]",
    [{"weather_get": '{"city": "Paris", "unit": "celsius"}'}],
    '<tool_call>{"name": "weather_get", "arguments": {"city": "Paris"}}</tool_call>',
    "weather.get(city='Paris', days=1)",
)


def verdict(o, output):
    return o(TASK, output, Context()).verdict


@pytest.mark.parametrize("output", GOOD)
@pytest.mark.parametrize(
    "o", [decodes, unknown_function, missing_required, unknown_parameter, wrong_type, outside_enum, breaks_contract]
)
def test_correct_answers_in_every_form_are_clean(o, output):
    assert verdict(o, output) in (Verdict.CLEAN, Verdict.ABSTAIN)


@pytest.mark.parametrize(
    "o, output, says",
    [
        (decodes, 42, "neither text nor structured calls"),
        (decodes, "[weather.get(city='" + "x" * 100_001 + "')]", "characters"),
        (unknown_function, "[weather.fetch(city='Paris')]", "not one of the 1 offered function(s) (the nearest"),
        (missing_required, "[weather.get(unit='celsius')]", "leaves out the required parameter(s) city"),
        (unknown_parameter, "[weather.get(city='Paris', country='FR')]", "gives country"),
        (unknown_parameter, "[weather.get(cty='Paris')]", "did it mean city?"),
        (wrong_type, "[weather.get(city='Paris', days='1')]", "days should be an integer, got string '1'"),
        (outside_enum, "[weather.get(city='Paris', unit='kelvin')]", "is not one of its allowed values"),
        (breaks_contract, "[weather.get(city=3)]", "city should be a string"),
        (breaks_contract, "[weather.get(city='Paris'", "writes calls that cannot be read"),
    ],
)
def test_each_op_fires_on_its_failure_with_a_message(o, output, says):
    res = o(TASK, output, Context())
    assert res.verdict == Verdict.DRAWBACK and says in res.message, res.message


def test_calls_that_do_not_parse_are_a_format_problem_not_the_roots():
    # BFCL's decoders read such an answer as calling nothing: wrong where a function fits, right where none
    # does; misformatted judges it with the other answers, the root leaves it open
    out = "[weather.get(city='Paris'"
    res = decodes(TASK, out, Context())
    assert res.verdict == Verdict.CLEAN and "cannot be read" in res.message and "format problem" in res.message
    assert "cannot be read" in format_problem(build_answer(TASK, out).decoded)
    for o in (unknown_function, missing_required, unknown_parameter, wrong_type, outside_enum):
        assert verdict(o, out) == Verdict.ABSTAIN, o.name


def test_a_reply_in_words_leaves_the_call_checks_abstaining():
    text = "I cannot check the weather."
    assert verdict(decodes, text) == Verdict.CLEAN
    for o in (unknown_function, missing_required, unknown_parameter, wrong_type, outside_enum):
        assert verdict(o, text) == Verdict.ABSTAIN, o.name


def test_argument_checks_leave_unknown_functions_to_unknown_function():
    out = "[weather.fetch(town=3)]"
    assert verdict(unknown_function, out) == Verdict.DRAWBACK
    for o in (missing_required, unknown_parameter, wrong_type):
        assert verdict(o, out) == Verdict.ABSTAIN


def test_a_wrong_type_is_not_also_outside_the_enum():
    assert verdict(outside_enum, "[weather.get(city='Paris', unit=3)]") == Verdict.CLEAN
    assert verdict(wrong_type, "[weather.get(city='Paris', unit=3)]") == Verdict.DRAWBACK


def test_attack_a_control_character_name_is_shown_escaped():
    res = unknown_function(TASK, [{"evil\x1b[2J": "{}"}], Context())
    assert res.verdict == Verdict.DRAWBACK and "\x1b" not in res.message


def test_the_pack():
    assert PACK.name == "tools" and PACK.root == "decodes" and PACK.ops[0].name == "decodes"
    assert PACK.classify_failure(TASK, "[weather.fetch(city='x')]", None) == "unknown_function"
    assert PACK.classify_failure(TASK, "[weather.get(city='Paris', unit='fahrenheit')]", None) == "wrong_call"
    assert PACK.classify_failure(TASK, "x", {"failure_class": "no_call"}) == "no_call"
    assert PACK.classify_failure(TASK, "[weather.get(city=", None) == "unreadable"
    assert PACK.classify_failure(TASK, "```python\n[weather.get(city='Paris')]\n```", None) == "format"


@pytest.mark.parametrize(
    "output, problem",
    [
        ("[weather.get(city='Paris')]", ""),
        ("weather.get(city='Paris')", ""),
        ([{"weather_get": '{"city": "Paris"}'}], ""),
        ('<tool_call>{"name": "weather_get", "arguments": {"city": "Paris"}}</tool_call>', ""),
        ('{"tool_calls": [{"name": "weather.get", "arguments": {"city": "Paris"}}]}', ""),
        ("```python\n[weather.get(city='Paris')]\n```\n\nThis asks for the weather in Paris.", ""),
        ("```python\n[weather.get(city='Paris')]\n```", "wrapped in a markdown code fence"),
        ('[{"name": "weather.get", "params": {"city": "Paris"}}]', "call objects in text"),
        ("[{'name': 'weather.get', 'parameters': {'city': 'Paris'}}]", "call objects in text"),
        ("```\nweather.get(city='Paris')\n```\n\nThis asks for the weather.", "not a call list"),
        ("I cannot.", ""),
        ("[None]", ""),
        ([{"weather_get": '{"city": "Paris"}'}, "\n"], "stand among text parts"),
        (["No function can tell the weather."], ""),
        ("[weather.get(city='Paris'", "cannot be read"),
    ],
)
def test_format_problems(output, problem):
    found = format_problem(build_answer(TASK, output).decoded)
    assert (problem in found) if problem else found == ""
