"""The tools family's decoder: every form it reads, what it refuses and why, and attacks written as
attacks (it never evaluates model output)."""

from __future__ import annotations

import json
import keyword

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vx.families.tools.decode import MAX_CALLS, MAX_CHARS, MAX_DEPTH, NO_CALL_NAMES, Call, Decoded, decode

DOCS = [
    {"name": "math.factorial", "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}}},
    {"name": "get_weather", "parameters": {"type": "dict", "properties": {"city": {"type": "string"}}}},
]


def calls(d: Decoded) -> list[tuple[str, dict]]:
    assert d.ok, d.error
    return [(c.name, dict(c.args)) for c in d.calls]


FACT = [("math.factorial", {"number": 5})]


@pytest.mark.parametrize(
    "output",
    [
        "math.factorial(number=5)",
        "[math.factorial(number=5)]",
        "  [math.factorial(number=5)]\n",
        "(math.factorial(number=5),)",
        '{"name": "math.factorial", "arguments": {"number": 5}}',
        '[{"name": "math.factorial", "arguments": {"number": 5}}]',
        '{"name": "math.factorial", "arguments": "{\\"number\\": 5}"}',
        '{"function": "math.factorial", "parameters": {"number": 5}}',
        '{"type": "function", "function": {"name": "math.factorial", "arguments": {"number": 5}}}',
        '{"tool_calls": [{"name": "math.factorial", "arguments": {"number": 5}}]}',
        '{"math.factorial": {"number": 5}}',
        '[{"math_factorial": {"number": 5}}]',
        "```json\n[math.factorial(number=5)]\n```",
        "```python\nmath.factorial(number=5)\n```",
        '<tool_call>\n{"arguments": {"number": 5}, "name": "math_factorial"}\n</tool_call>\n',
        '<function_call> {"name": "math_factorial", "arguments": {"number": 5}}',
        "[math\\_factorial(number=5)]",
        "['math.factorial(number=5)']",
        "{'name': 'math.factorial', 'arguments': {'number': 5}}",
        "[math.factorial(number=5)]\n\nThis calls the factorial function.",
        "```python\n[math.factorial(number=5)]\n```\n\nThe factorial of 5 is computed here.",
        [{"math_factorial": '{"number": 5}'}],
        [{"math.factorial": {"number": 5}}],
        {"name": "math.factorial", "arguments": {"number": 5}},
    ],
)
def test_every_form_reads_the_same_call(output):
    assert calls(decode(output, DOCS)) == FACT


def test_dotted_names_sent_with_underscores_resolve_to_the_offered_name():
    d = decode([{"math_factorial": '{"number": 5}'}], DOCS)
    assert d.calls[0].name == "math.factorial" and d.calls[0].written == "math_factorial" and d.calls[0].offered
    unknown = decode("math_sqrt(x=4)", DOCS)
    assert unknown.calls[0].name == "math_sqrt" and not unknown.calls[0].offered


def test_several_calls_in_every_separator():
    want = [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    for output in (
        "[get_weather(city='Paris'), get_weather(city='Rome')]",
        "get_weather(city='Paris'); get_weather(city='Rome')",
        "get_weather(city='Paris')\nget_weather(city='Rome')",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>',
        [{"get_weather": '{"city": "Paris"}'}, {"get_weather": '{"city": "Rome"}'}],
    ):
        assert calls(decode(output, DOCS)) == want, output


def test_markdown_escaped_underscores_are_read_only_when_nothing_else_reads():
    assert calls(decode("[math\\_factorial(number=5)]", DOCS)) == FACT
    assert calls(decode("[f(a='x\\_y')]", ())) == [("f", {"a": "x\\_y"})]


def test_values_are_read_as_literals_with_bounded_arithmetic():
    d = decode("f(a=2*3.5, b=-4, c=[1, (2, 3)], d={'k': True}, e=None, f=10**3, g='x' + 'y')", ())
    assert dict(d.calls[0].args) == {
        "a": 7.0,
        "b": -4,
        "c": [1, [2, 3]],
        "d": {"k": True},
        "e": None,
        "f": 1000,
        "g": "xy",
    }
    assert d.calls[0].expressions == ()


def test_a_bare_name_is_kept_as_its_text_and_marked_as_an_expression():
    d = decode("f(city=paris, n=math.pi)", ())
    assert dict(d.calls[0].args) == {"city": "paris", "n": "math.pi"}
    assert d.calls[0].expressions == ("city", "n")


@pytest.mark.parametrize(
    "output, form",
    [
        ("I cannot help with that: none of the functions computes roots.", "text"),
        ("The answer is 120.", "text"),
        ("[]", "json"),
        ("", "empty"),
        (None, "empty"),
        ("None", "text"),
        ("[None]", "python"),
        ("```python\n[None]\n```", "python"),
        ([], "structured"),
        (["I am sorry, no function fits."], "structured"),
        ('<function_call> {"name": "no_function", "arguments": {}}', "tagged"),
    ],
)
def test_a_reply_in_words_calls_nothing(output, form):
    d = decode(output, DOCS)
    assert d.ok and d.no_call and d.form == form


@pytest.mark.parametrize(
    "output, reason",
    [
        ("[math.factorial(number=5", "looks like a call but cannot be read"),
        ('<tool_call>{"name": "f", "arguments": {"a": </tool_call>', "holds neither a JSON call nor a Python call"),
        ([{"f": "{not json"}], "are not JSON"),
        ("[math.hypot(4, 5)]", "positional argument"),
        ('[{"name": "math.gcd", "num1": 12}]', "not a call"),
        ("[f(a=1, a=2)]", "names the argument a twice"),
        ("[f(**kw)]", "arguments must be named"),
        (42, "neither text nor structured calls"),
        ("[f(a=lambda: 1)]", "not a value"),
    ],
)
def test_what_it_cannot_read_is_an_error_with_the_reason(output, reason):
    d = decode(output, DOCS)
    assert not d.ok and reason in d.error and d.calls == ()
    # calls that do not parse are within reach (a format problem); only what is not an answer is beyond
    assert d.beyond == (not isinstance(output, (str, list, dict)))


def test_text_parts_among_structured_calls_are_marked():
    d = decode([{"math_factorial": '{"number": 5}'}, "\n", {"get_weather": '{"city": "Oslo"}'}], DOCS)
    assert [c.name for c in d.calls] == ["math.factorial", "get_weather"] and d.prose
    assert not decode([{"math_factorial": '{"number": 5}'}], DOCS).prose
    assert not decode(["No function fits."], DOCS).prose  # a reply in words: no call, nothing to mark


# --------------------------------------------------------------------------- attacks


def test_attack_a_dunder_import_is_never_called():
    d = decode("__import__('os').system(command='touch /tmp/vx-pwned')", ())
    assert not d.ok and "not a name" in d.error
    d = decode("[os.system(command='rm -rf /')]", ())  # read as data: a call named os.system, never run
    assert d.calls[0].name == "os.system" and not decode("[os.system(command='x')]", DOCS).calls[0].offered


def test_attack_huge_power_is_refused_without_computing_it():
    for text in ("[f(a=10**10**10)]", "[f(a=2**100000)]", "[f(a=9**9**9**9)]", "[f(a=(10**4000)*(10**4000))]"):
        d = decode(text, ())
        assert not d.ok and "bits" in d.error and d.beyond, text


def test_attack_huge_integer_literals_and_json_numbers():
    assert not decode("[f(a=" + "9" * 5000 + ")]", ()).ok
    d = decode([{"f": '{"a": ' + "9" * 5000 + "}"}], ())
    assert not d.ok


def test_attack_deep_nesting_is_refused():
    deep = "[" * 5000 + "]" * 5000
    assert not decode(f"[f(a={deep})]", ()).ok
    assert not decode([{"f": '{"a": ' + deep + "}"}], ()).ok
    assert not decode('{"a": ' + deep + "}", ()).ok
    nested = "1"
    for _ in range(MAX_DEPTH + 2):
        nested = f"[{nested}]"
    assert "deeper" in decode(f"f(a={nested})", ()).error


def test_attack_a_megabyte_output_is_refused_at_once():
    d = decode("[f(a='" + "x" * (MAX_CHARS + 10) + "')]", ())
    assert not d.ok and "characters" in d.error and d.beyond
    d = decode([{"f": '{"a": "' + "x" * (MAX_CHARS + 10) + '"}'}], ())
    assert not d.ok and "characters" in d.error and d.beyond


def test_attack_string_repetition_is_not_evaluated():
    d = decode("[f(a='x' * 10**9)]", ())
    assert not d.ok and "arithmetic" in d.error


def test_attack_too_many_calls():
    text = "[" + ", ".join("f(a=1)" for _ in range(MAX_CALLS + 1)) + "]"
    d = decode(text, ())
    assert not d.ok and str(MAX_CALLS) in d.error and d.beyond


def test_attack_unicode_lookalike_names_do_not_resolve():
    # a Cyrillic 'а' in "mаth.factorial": not the offered function
    d = decode([{"m\u0430th_factorial": '{"number": 5}'}], DOCS)
    assert d.ok and not d.calls[0].offered
    d = decode([{"math.factorial\u200b": '{"number": 5}'}], DOCS)
    assert not d.calls[0].offered


def test_attack_a_name_with_control_characters_stays_data():
    d = decode([{"f\x1b[31m": "{}"}], DOCS)
    assert d.ok and d.calls[0].written == "f\x1b[31m" and not d.calls[0].offered


# --------------------------------------------------------------------------- laws

_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_names = st.from_regex(r"[a-z][a-z0-9_]{0,6}(\.[a-z][a-z0-9_]{0,6})?", fullmatch=True).filter(
    lambda n: n not in NO_CALL_NAMES and not any(keyword.iskeyword(part) for part in n.split("."))
)
_args = st.dictionaries(
    st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n)),
    _values,
    max_size=4,
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_names, _args), min_size=1, max_size=4))
def test_calls_written_as_python_json_or_structured_decode_to_the_same_calls(spec):
    py = "[" + ", ".join(f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")" for n, a in spec) + "]"
    js = json.dumps([{"name": n, "arguments": a} for n, a in spec])
    structured = [{n: json.dumps(a)} for n, a in spec]
    want = [(n, json.loads(json.dumps(a))) for n, a in spec]
    for output in (py, js, structured, f"```python\n{py}\n```"):
        got = [(c.name, json.loads(json.dumps(dict(c.args)))) for c in decode(output, ()).calls]
        assert got == want, output


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=50).map(lambda b: b.decode("latin-1"))))
def test_decode_never_raises_on_any_text(text):
    d = decode(text, DOCS)
    assert isinstance(d, Decoded) and (d.ok or d.error)


@settings(max_examples=200)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        lambda x: st.lists(x, max_size=3) | st.dictionaries(st.text(max_size=4), x, max_size=3),
        max_leaves=10,
    )
)
def test_decode_never_raises_on_any_structure(value):
    d = decode(value, DOCS)
    assert isinstance(d, Decoded)


def test_decoded_round_trips_through_plain_data():
    d = decode("[get_weather(city='Paris'), math_factorial(number=5)]", DOCS)
    again = Decoded.from_data(json.loads(json.dumps(d.to_data())))
    assert again == d and isinstance(again.calls[0], Call)
