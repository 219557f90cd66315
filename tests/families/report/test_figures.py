"""Figures in prose: what counts as a number, and precision-aware comparison with the ledger."""

from hypothesis import given
from hypothesis import strategies as st

from vx.families.report.figures import find_figures, matches_number, matches_value, numeral_near, unit_scale


def figs(text):
    return [(f.text, f.value, f.scale, f.currency, f.unit, f.percent) for f in find_figures(text)]


def test_money_shares_units_and_scales():
    assert figs("reached $4.2B in 2026 Q2") == [("$4.2B", 4.2, 1e9, "USD", None, False)]
    assert figs("€3.9 billion, up 23.5%") == [
        ("€3.9 billion", 3.9, 1e9, "EUR", None, False),
        ("23.5%", 23.5, 1.0, None, None, True),
    ]
    assert figs("12,500 MWh") == [("12,500 MWh", 12500.0, 1.0, None, "MWh", False)]
    assert figs("4,200 million USD")[0][3] == "USD"
    assert figs("EUR 0.59 per kWh")[0][:4] == ("EUR 0.59", 0.59, 1.0, "EUR")
    assert figs("$139/kWh")[0][4] == "/kWh"
    assert figs("a 1.5x multiple")[0][:2] == ("1.5x", 1.5)


def test_years_quarters_ids_and_tags_are_not_figures():
    assert figs("in 2026, Q2 and H1, card [E0101], tag {M03}") == []
    assert [f.text for f in find_figures("by 2030 the 2,030 units")] == ["2,030"]


def test_quantity_versus_count():
    three, hundred = find_figures("three 3 vendors and 150 sites")
    assert not three.is_quantity and hundred.is_quantity


def test_value_matching_respects_printed_precision_and_scale():
    f = find_figures("4.2")[0]
    assert matches_value(f, 4.23, "USD billion") and not matches_value(f, 4.5, "USD billion")
    assert matches_value(find_figures("$4,200 million")[0], 4.2, "USD billion")
    assert matches_value(find_figures("75,000")[0], 75000, "wafers per month")
    assert not matches_value(find_figures("12,500 MWh")[0], 12.5, "GWh")
    assert unit_scale("USD billion") == 1e9 and unit_scale("GWh") == 1.0 and unit_scale("%") == 1.0
    a, b = find_figures("$5.9 billion and $5.9B")
    assert matches_number(a, b)


def test_numeral_near_a_tag():
    s = "It used about 212 TWh {M01} in 2025 and {M02} later"
    t1, t2 = s.index("{M01}"), s.index("{M02}")
    assert numeral_near(s, t1, t1 + 5).text == "212 TWh"
    assert numeral_near(s, t2, t2 + 5, before=10) is None  # the year does not count


@given(st.floats(min_value=0.01, max_value=99999, allow_nan=False), st.integers(0, 3))
def test_a_printed_value_matches_itself(value, decimals):
    text = f"{value:,.{decimals}f}"
    f = find_figures(text)[0]
    assert matches_value(f, float(text.replace(",", "")), "")
    assert matches_value(f, value, "")  # the printed rounding of the true value matches it
