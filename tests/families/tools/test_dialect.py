"""BFCL's function-doc dialect as the tools ops read it."""

from __future__ import annotations

import pytest

from vx.families.tools.dialect import NO_DEFAULT, documented_default, functions, parse_function, resolve, value_problem

DOC = {
    "name": "stock.price",
    "description": "Get a stock's price.",
    "parameters": {
        "type": "dict",
        "properties": {
            "ticker": {"type": "string", "description": "The ticker."},
            "market": {"type": "string", "description": "The stock market. Default is 'NASDAQ'"},
            "days": {"type": "integer", "description": "Days back (optional, default is 7)."},
            "ratio": {"type": "float", "description": "A ratio."},
            "detailed": {"type": "boolean", "description": "Details. Defaults to false."},
            "unit": {"type": "string", "enum": ["USD", "EUR"], "description": "Currency."},
            "dates": {"type": "array", "items": {"type": "string", "format": "date"}},
            "point": {"type": "tuple", "items": {"type": "integer"}},
            "filters": {"type": "dict", "properties": {"sector": {"type": "string"}}},
            "anything": {"type": "any"},
            "venue": {"type": "string", "description": "Venue. If not provided, default that all venues count."},
            "late": {"type": "boolean", "default": True, "optional": True},
        },
        "required": ["ticker", "nope"],
    },
}


def test_a_function_reads_its_params_required_and_defaults():
    fn = parse_function(DOC)
    assert fn.name == "stock.price" and fn.required == ("ticker",)  # a required name with no property is dropped
    p = fn.params
    assert p["market"].default == "NASDAQ" and p["days"].default == 7 and p["detailed"].default is False
    assert p["late"].default is True and p["ticker"].default is NO_DEFAULT and p["venue"].default is NO_DEFAULT
    assert p["unit"].enum == ("USD", "EUR") and p["dates"].items.format == "date"
    assert p["filters"].properties["sector"].type == "string"


@pytest.mark.parametrize(
    "text, type_, want",
    [
        ("Default is 5.", "integer", 5),
        ("Default 0.1", "float", 0.1),
        ("Default is 12.57e-7 (Vacuum Permeability).", "float", 12.57e-7),
        ("Defaults to square meters.", "string", "square meters"),
        ("Type of route (e.g., fastest, scenic). Default is fastest.", "string", "fastest"),
        ("If not provided, default is true.", "boolean", True),
        ("Default: 'vivian'", "string", "vivian"),
        ("Default to 'None', which searches every state.", "string", "None"),
        ("Defaults to the current season if not provided.", "string", NO_DEFAULT),
        ("Default is all if not specified.", "string", NO_DEFAULT),
        ("The number.", "integer", NO_DEFAULT),
        # written after the value
        ("Type of gas, with air as default.", "string", "air"),
        ("Optional, 'Nominal' by default.", "string", "Nominal"),
        ("If not given, assumes it's 0 as default.", "integer", 0),
        ("True if years ago is to be calculated. False by default", "boolean", False),
        ("If not specified, search for 'all' types by default.", "string", NO_DEFAULT),
        ("If not provided, all venues will be considered by default.", "string", NO_DEFAULT),
        ("Metrics to retrieve; all of them are returned by default.", "string", NO_DEFAULT),
    ],
)
def test_defaults_documented_in_words(text, type_, want):
    assert documented_default(text, type_) == want


def test_names_resolve_with_dots_sent_as_underscores():
    offered = functions([DOC, {"name": "math.factorial"}, {"name": "a.b_c"}, {"name": "a_b.c"}])
    assert resolve("stock_price", offered) == "stock.price"
    assert resolve("math.factorial", offered) == "math.factorial"
    assert resolve("a_b_c", offered) is None  # two offered names read so: ambiguous
    assert resolve("other", offered) is None


@pytest.mark.parametrize(
    "param, value, fits",
    [
        ("ticker", "AAPL", True),
        ("ticker", 5, False),
        ("days", 7, True),
        ("days", 7.0, False),
        ("days", True, False),  # a boolean is not an integer
        ("ratio", 3, True),  # an integer is a float too
        ("detailed", 1, False),
        ("unit", "usd", True),  # compared as BFCL compares strings
        ("unit", "GBP", False),
        ("dates", ["2024-01-31"], True),
        ("dates", ["31/01/2024"], False),
        ("dates", "2024-01-31", False),
        ("point", [1, 2], True),
        ("point", [1, "2"], False),
        ("filters", {"sector": "tech"}, True),
        ("filters", "tech", False),
        ("anything", [1, {"a": 2}], True),
        ("ticker", None, True),
    ],
)
def test_value_problems(param, value, fits):
    p = parse_function(DOC).params[param]
    why = value_problem(value, p)
    assert (why is None) == fits, why
    if why:
        assert param in why
