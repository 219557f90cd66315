from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vx.dsl.ast import All, Any, Not, OpRef, Vote, WVote
from vx.dsl.parse import MAX_DEPTH, VxSyntaxError, parse, parse_file, parse_located
from vx.dsl.printer import to_text
from vx.dsl.vxfile import read_header

from .strategies import trees


def test_every_form():
    text = """
    ; family: humaneval
    (any crash            ; a comment
         (all a b)
         (not x.y)
         (vote 2 a b sql:select_star)
         (wvote -1.5 t-1@1 (not _z)@-0.25 c@2))
    """
    assert parse(text) == Any(
        [
            OpRef("crash"),
            All([OpRef("a"), OpRef("b")]),
            Not(OpRef("x.y")),
            Vote(2, [OpRef("a"), OpRef("b"), OpRef("sql:select_star")]),
            WVote(Fraction(-3, 2), [OpRef("t-1"), Not(OpRef("_z")), OpRef("c")], [1, Fraction(-1, 4), 2]),
        ]
    )


def test_a_bare_op_is_an_expression():
    assert parse("crash\n") == OpRef("crash")


def test_known_ops_accepts_known_names():
    assert parse("(any a b)", known_ops=["a", "b", "c"]) == Any([OpRef("a"), OpRef("b")])


def test_located_spans():
    node, spans = parse_located("(any a\n  (not bb))")
    assert spans[()].line == 1 and spans[()].column == 1
    assert spans[(1,)].line == 2 and spans[(1,)].column == 3
    assert (spans[(1, 0)].line, spans[(1, 0)].column, spans[(1, 0)].width) == (2, 8, 2)


# (text, kind, message, line, column, caret, hint fragment) — one row per error message
ERRORS = [
    ("(anyy a b)", "unknown-combinator", "unknown combinator 'anyy'", 1, 2, "^^^^", "did you mean 'any'?"),
    ("(wvot 1 a@1)", "unknown-combinator", "unknown combinator 'wvot'", 1, 2, "^^^^", "did you mean 'wvote'?"),
    ("(crash)", "unknown-combinator", "unknown combinator 'crash'", 1, 2, "^^^^^", "an op is written bare"),
    ("(any)", "empty", "empty (any)", 1, 1, "^", "needs at least one child"),
    ("(all)", "empty", "empty (all)", 1, 1, "^", "needs at least one child"),
    ("(not)", "empty", "empty (not)", 1, 1, "^", "exactly one child"),
    ("(vote)", "empty", "empty (vote)", 1, 1, "^", "needs K and children"),
    ("(vote 2)", "empty", "empty (vote)", 1, 1, "^", "at least K children"),
    ("(wvote 1)", "empty", "empty (wvote)", 1, 1, "^", "weighted children"),
    ("()", "empty", "empty ()", 1, 1, "^", "a form starts with a combinator"),
    ("(vote 4 a b c)", "vote-k", "vote K=4 but only 3 children", 1, 7, "^", "between 1 and the number of children (3)"),
    ("(vote 0 a)", "vote-k", "vote K=0 is out of range", 1, 7, "^", "between 1 and"),
    ("(vote -1 a)", "vote-k", "vote K=-1 is out of range", 1, 7, "^^", "between 1 and"),
    ("(vote 1.5 a b)", "vote-k", "vote K must be a whole number, got 1.5", 1, 7, "^^^", "whole number from 1 to 2"),
    ("(vote a b)", "param", "(vote) needs K before its children", 1, 7, "^", "(vote 2 a b c)"),
    ("(wvote a@1)", "param", "(wvote) needs a threshold before its children", 1, 8, "^", "(wvote 1.5"),
    ("(any a b", "unclosed", "unbalanced parentheses: this '(' is never closed", 1, 1, "^", "add ')' to close (any …)"),
    ("(any a\n  (not b)", "unclosed", "this '(' is never closed", 1, 1, "^", "add ')'"),
    ("(any a b))", "unmatched", "unbalanced parentheses: unmatched ')'", 1, 10, "^", "remove it"),
    (")", "unmatched", "unmatched ')'", 1, 1, "^", "remove it"),
    ("a b", "extra", "unexpected 'b' after the end of the expression", 1, 3, "^", "holds one expression"),
    ("(any a) (any b)", "extra", "unexpected '(' after the end", 1, 9, "^", "holds one expression"),
    ("(not a b)", "arity", "(not) takes exactly one child", 1, 8, "^", "(not (any a b))"),
    ("(wvote 1 a b@1)", "weight", "this wvote child has no weight", 1, 10, "^", "child@weight"),
    ("(wvote 1 a@1 b)", "weight", "this wvote child has no weight", 1, 14, "^", "child@weight"),
    ("(wvote 1 (not a) b@1)", "weight", "this wvote child has no weight", 1, 10, "^", "child@weight"),
    ("(wvote 1 a 2)", "weight", "missing '@' between a wvote child and its weight", 1, 12, "^", "child@weight"),
    ("(wvote 1 a@)", "weight", "expected a weight after '@', found ')'", 1, 12, "^", "child@weight"),
    ("(wvote 1 a@", "weight", "missing weight after '@'", 1, 11, "^", "child@weight"),
    ("(wvote 1 a@@1)", "weight", "expected a weight after '@', found '@'", 1, 12, "^", "child@weight"),
    ("(any a@1)", "weight", "'@weight' is only allowed on children of (wvote …)", 1, 7, "^", "weighted vote"),
    ("(any a 3)", "number", "unexpected number 3", 1, 8, "^", "vote K, the wvote threshold"),
    ("(vote 2 3 a b)", "number", "unexpected number 3", 1, 9, "^", "vote K"),
    ("(any any)", "keyword", "'any' is a combinator keyword and cannot name an op", 1, 6, "^^^", "no op may be named"),
    ("vote", "keyword", "'vote' is a combinator keyword", 1, 1, "^^^^", "(vote a b)"),
    ("((any a))", "combinator", "expected a combinator after '(', found '('", 1, 2, "^", "a form starts with one of"),
    ("(2 a)", "combinator", "expected a combinator after '(', found number 2", 1, 2, "^", "a form starts with one of"),
    ("3", "syntax", "expected an expression, found number 3", 1, 1, "^", "write an op name"),
    ("", "empty", "empty input: expected an expression", 1, 1, "^", "write an op name"),
    ("; family: x\n\n", "empty", "empty input", 1, 12, "^", "write an op name"),
    ("(any [a])", "character", "unexpected character '['", 1, 6, "^", "round parentheses"),
    ('(any "a")', "character", "unexpected character '\"'", 1, 6, "^", "no strings"),
    ("(wvote .5 a@1)", "character", "unexpected character '.'", 1, 8, "^", "leading digit"),
    ("(vote +2 a b)", "character", "unexpected character '+'", 1, 7, "^", "no '+' sign"),
    ("(any a %)", "character", "unexpected character '%'", 1, 8, "^", "';' starts a comment"),
    (
        "(" * (MAX_DEPTH + 1) + "a",
        "too-deep",
        f"nested deeper than {MAX_DEPTH} levels",
        1,
        MAX_DEPTH + 1,
        "^",
        "flatten",
    ),
    ("(wvote 1 a@" + "9" * 5000 + ")", "number", "number too long", 1, 12, "^", "digits"),
]


@pytest.mark.parametrize("text, kind, message, line, column, caret, hint", ERRORS, ids=[r[0][:30] for r in ERRORS])
def test_error_messages(text, kind, message, line, column, caret, hint):
    with pytest.raises(VxSyntaxError) as info:
        parse(text, filename="seed.vx")
    err = info.value
    assert (err.kind, err.line, err.column) == (kind, line, column), str(err)
    assert message in err.message
    assert hint in (err.hint or "")
    report = str(err).splitlines()
    assert report[0] == f"seed.vx:{line}:{column}: error: {err.message}"
    source_line = text.split("\n")[line - 1] if text else ""
    assert err.source_line == source_line
    assert report[1].endswith(f"| {source_line}".rstrip()) or report[1].endswith(f"| {source_line}")
    assert report[2].index(caret) == report[1].index("|") + 2 + column - 1 and report[2].strip("| ").startswith(caret)
    assert report[-1] == f"  hint: {err.hint}"


def test_error_on_a_later_line_shows_that_line():
    text = "; family: code\n(any crash\n     (anyy a b))\n"
    with pytest.raises(VxSyntaxError) as info:
        parse(text, filename="f.vx")
    assert str(info.value) == (
        "f.vx:3:7: error: unknown combinator 'anyy'\n"
        "   3 |      (anyy a b))\n"
        "     |       ^^^^\n"
        "  hint: did you mean 'any'?"
    )


def test_unknown_op_with_known_ops():
    with pytest.raises(VxSyntaxError) as info:
        parse("(any crsh timeout)", known_ops=["crash", "timeout", "slow"])
    assert info.value.kind == "unknown-op"
    assert info.value.message == "unknown op 'crsh'"
    assert info.value.hint == "did you mean 'crash'?"
    with pytest.raises(VxSyntaxError) as info:
        parse("(any zzz timeout)", known_ops=["crash", "timeout"])
    assert info.value.hint == "known ops: crash, timeout"
    with pytest.raises(VxSyntaxError) as info:
        parse("zzz", known_ops=[f"op{i}" for i in range(20)])
    assert "none of the 20 known ops is close" in info.value.hint


def test_nesting_up_to_the_limit_parses():
    text = "(not " * (MAX_DEPTH - 1) + "a" + ")" * (MAX_DEPTH - 1)
    node = parse(text)
    assert node.depth() == MAX_DEPTH
    assert parse(to_text(node)) == node


def test_parse_file(tmp_path):
    path = tmp_path / "seed.vx"
    path.write_text("; family: humaneval\n(any a\n  b)\n", encoding="utf-8")
    assert parse_file(path) == Any([OpRef("a"), OpRef("b")])
    path.write_text("(any a\n  b\n", encoding="utf-8")
    with pytest.raises(VxSyntaxError, match=r"seed.vx:1:1: error: unbalanced"):
        parse_file(path)
    path.write_bytes(b"(any \xff)")
    with pytest.raises(VxSyntaxError, match="not UTF-8"):
        parse_file(path)
    with pytest.raises(OSError):
        parse_file(tmp_path / "missing.vx")


def test_read_header():
    text = "; family: humaneval\n;  seed: hand-written  \n; just a note\n\n(any a) ; family: not-header\n"
    assert read_header(text) == {"family": "humaneval", "seed": "hand-written"}
    assert read_header("(any a)") == {}


def test_syntax_errors_pickle():
    import pickle

    with pytest.raises(VxSyntaxError) as info:
        parse("(anyy a)", filename="f.vx")
    copy = pickle.loads(pickle.dumps(info.value))
    assert str(copy) == str(info.value) and copy.kind == "unknown-combinator"


def test_parse_rejects_non_text():
    with pytest.raises(TypeError):
        parse(b"(any a)")  # type: ignore[arg-type]


# --- fuzzing: any text either parses or raises VxSyntaxError with a sane position ---------
ALPHABET = st.sampled_from(
    list("()@;.-_:\n\t 0123456789abxyz") + ["any", "all", "not", "vote", "wvote", "é", "\x00", "[", "\r"]
)


def _assert_parses_or_explains(text: str) -> None:
    try:
        parse(text, filename="fuzz.vx")
    except VxSyntaxError as err:
        lines = text.split("\n")
        assert 1 <= err.line <= max(len(lines), 1)
        assert err.source_line == lines[err.line - 1].rstrip("\r")
        assert 1 <= err.column <= len(err.source_line) + 1
        assert err.message and str(err).startswith(f"fuzz.vx:{err.line}:{err.column}: error: ")


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_fuzz_token_soup(text):
    _assert_parses_or_explains(text)


@settings(deadline=None, max_examples=200)
@given(st.text(max_size=60))
def test_fuzz_random_unicode(text):
    _assert_parses_or_explains(text)


@st.composite
def mutated_programs(draw):
    text = to_text(draw(trees()), width=draw(st.integers(20, 100)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["delete", "insert", "duplicate", "swap"]))
        if action == "delete" and text:
            j = draw(st.integers(i, min(len(text), i + 5)))
            text = text[:i] + text[j:]
        elif action == "insert":
            text = text[:i] + draw(ALPHABET) + text[i:]
        elif action == "duplicate":
            j = draw(st.integers(i, min(len(text), i + 8)))
            text = text[:j] + text[i:j] + text[j:]
        elif action == "swap" and len(text) > 1:
            k = draw(st.integers(0, len(text) - 1))
            chars = list(text)
            chars[min(i, len(text) - 1)], chars[k] = chars[k], chars[min(i, len(text) - 1)]
            text = "".join(chars)
    return text


@settings(deadline=None, max_examples=300)
@given(mutated_programs())
def test_fuzz_mutated_valid_programs(text):
    _assert_parses_or_explains(text)


def test_crlf_and_tabs():
    assert parse("; h\r\n(any a\r\n  b)\r\n") == Any([OpRef("a"), OpRef("b")])
    with pytest.raises(VxSyntaxError) as info:
        parse("(any a\r\n\t(anyy b))\r\n", filename="c.vx")
    assert str(info.value).splitlines()[1:3] == ["   2 |  (anyy b))", "     |   ^^^^"]
