from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.ast import Any, OpRef
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import format_number, to_text
from vx.dsl.vxfile import format_source

from .strategies import numbers, trees


@pytest.mark.parametrize(
    "value, text",
    [
        (Fraction(2), "2"),
        (Fraction(-1), "-1"),
        (Fraction(0), "0"),
        (Fraction(1, 2), "0.5"),
        (Fraction(-1, 8), "-0.125"),
        (Fraction(3, 2), "1.5"),
        (Fraction(1, 10), "0.1"),
        (Fraction(-123456789, 1000), "-123456.789"),
        (Fraction(1, 2**10), "0.0009765625"),
        (7, "7"),
    ],
)
def test_format_number(value, text):
    assert format_number(value) == text


@settings(deadline=None)
@given(numbers)
def test_numbers_round_trip_exactly(x):
    assert Fraction(format_number(x)) == x


def test_format_number_rejects_non_decimals():
    with pytest.raises(ValueError):
        format_number(Fraction(1, 3))


def test_canonical_one_line():
    e = parse("(any   crash\n (vote 2 a b c) (wvote 1.50 x@1.0 (not y)@-0.250))")
    assert to_text(e) == "(any crash (vote 2 a b c) (wvote 1.5 x@1 (not y)@-0.25))"


def test_wrapping():
    e = parse(
        "(any crash (vote 2 wrong_output raises timeout (not (all a b c d e f g h i j k l m n)))"
        " (wvote 1.5 flaky@1 slow@0.5 (any x y)@-0.25))"
    )
    assert to_text(e, width=60) == (
        "(any\n"
        "  crash\n"
        "  (vote 2\n"
        "    wrong_output\n"
        "    raises\n"
        "    timeout\n"
        "    (not (all a b c d e f g h i j k l m n)))\n"
        "  (wvote 1.5 flaky@1 slow@0.5 (any x y)@-0.25))"
    )


def test_weights_follow_wrapped_children():
    e = parse("(wvote 1 (any aaaaaaaaaa bbbbbbbbbb cccccccccc)@0.5 d@1)")
    assert to_text(e, width=30) == ("(wvote 1\n  (any\n    aaaaaaaaaa\n    bbbbbbbbbb\n    cccccccccc)@0.5\n  d@1)")


def test_long_op_names_stay_whole():
    assert to_text(Any([OpRef("x" * 50), OpRef("y")]), width=20) == "(any\n  " + "x" * 50 + "\n  y)"


@settings(deadline=None)
@given(trees(), st.integers(20, 100))
def test_lines_fit_the_width_unless_they_cannot_be_broken(e, width):
    for line in to_text(e, width).split("\n"):
        unit = line.strip()
        # only a lone head "(vote K" / "(wvote θ" or a lone child with its "@w)))" may overflow
        unbreakable = unit.count(" ") == 0 or (unit.startswith(("(vote ", "(wvote ")) and unit.count(" ") == 1)
        assert len(line) <= width or unbreakable


def test_format_source_keeps_the_header():
    src = "\n\n; family: humaneval   \n;   seed\n\n\n(any  crash\n   timeout)\n\n"
    out = format_source(src)
    assert out == "; family: humaneval\n;   seed\n\n(any crash timeout)\n"
    assert format_source(out) == out


def test_format_source_refuses_to_drop_comments():
    with pytest.raises(VxSyntaxError) as info:
        format_source("; header\n(any a ; why a\n  b)\n", filename="f.vx")
    assert info.value.kind == "comment"
    assert (info.value.line, info.value.column) == (2, 8)
    assert "move the comment above the expression" in info.value.hint


def test_to_text_rejects_non_nodes():
    with pytest.raises(TypeError):
        to_text("(any a)")  # type: ignore[arg-type]


def test_format_source_normalises_line_endings():
    assert format_source("; h  \r\n\r\n(any a\r\n  b)\r\n") == "; h\n\n(any a b)\n"
