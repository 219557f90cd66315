"""Editor support for .vx: the Pygments lexer (entry point `vx`) and the TextMate grammar in editors/."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = """; family: humaneval
; a plain comment (any not a keyword here)
(any crash
  (vote 2 fails_visible_example returns_not_print_only pkg.mod:op-1)
  (wvote 1.5 timeout@2 (not wrong_entry_point)@-0.5))
"""
EXPECTED = [  # (text, kind) for every non-blank token, in order
    (";", "header"),
    ("family", "header-key"),
    (":", "header"),
    ("humaneval", "header"),
    ("; a plain comment (any not a keyword here)", "comment"),
    ("(", "paren"),
    ("any", "keyword"),
    ("crash", "op"),
    ("(", "paren"),
    ("vote", "keyword"),
    ("2", "number"),
    ("fails_visible_example", "op"),
    ("returns_not_print_only", "op"),
    ("pkg.mod:op-1", "op"),
    (")", "paren"),
    ("(", "paren"),
    ("wvote", "keyword"),
    ("1.5", "number"),
    ("timeout", "op"),
    ("@", "weight"),
    ("2", "number"),
    ("(", "paren"),
    ("not", "keyword"),
    ("wrong_entry_point", "op"),
    (")", "paren"),
    ("@", "weight"),
    ("-0.5", "number"),
    (")", "paren"),
    (")", "paren"),
]


def pygments_kind(token) -> str:
    from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation

    for kind, base in (
        ("keyword", Keyword),
        ("number", Number),
        ("op", Name),
        ("weight", Operator),
        ("paren", Punctuation),
        ("header", Comment.Special),
        ("comment", Comment),
    ):
        if token in base:
            return kind
    return str(token)


def test_pygments_finds_the_lexer_by_name_and_file_name():
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    from vx.dsl.lexer import VxLexer

    assert isinstance(get_lexer_by_name("vx"), VxLexer)  # through the pygments.lexers entry point
    assert isinstance(get_lexer_for_filename("seed.vx"), VxLexer)


def test_pygments_tokens():
    from vx.dsl.lexer import VxLexer

    got = []
    for token, text in VxLexer().get_tokens(SAMPLE):
        if not text.strip():
            continue
        got.append((text.strip(), pygments_kind(token)))
    want = [(t, "header" if k == "header-key" else k) for t, k in EXPECTED]
    assert got == want


def test_pygments_lexes_every_example_without_errors():
    from pygments.token import Error, Text

    from vx.dsl.lexer import VxLexer

    files = sorted((ROOT / "examples").rglob("*.vx"))
    assert files
    for path in files:
        for token, text in VxLexer().get_tokens(path.read_text()):
            assert token is not Error and (token is not Text or not text.strip()), (path, text)


# ---------------------------------------------------------------- TextMate


def load_grammar():
    return json.loads((ROOT / "editors" / "vx.tmLanguage.json").read_text())


def tm_tokens(grammar, text):
    """A small TextMate interpreter for this grammar's shape: top-level `include`s of `match` rules
    (with captures) or of `patterns` of match rules, tried in order at each position of each line."""
    rules = []

    def add(rule):
        if "patterns" in rule:
            for r in rule["patterns"]:
                add(grammar["repository"][r["include"][1:]] if "include" in r else r)
        else:
            rules.append((re.compile(rule["match"]), rule))

    for p in grammar["patterns"]:
        add(grammar["repository"][p["include"][1:]])
    out = []
    for line in text.splitlines():
        pos = 0
        while pos < len(line):
            if line[pos].isspace():
                pos += 1
                continue
            for regex, rule in rules:
                m = regex.match(line, pos)
                if m and m.end() > pos:
                    if "captures" in rule:
                        for group, spec in sorted(rule["captures"].items(), key=lambda kv: int(kv[0])):
                            if m.group(int(group)):
                                out.append((m.group(int(group)).strip(), spec["name"]))
                    else:
                        out.append((m.group(0), rule["name"]))
                    pos = m.end()
                    break
            else:
                pytest.fail(f"no rule matches at {line[pos:]!r}")
    return [(t, s) for t, s in out if t]


def tm_kind(scope: str) -> str:
    for prefix, kind in (
        ("keyword.control", "keyword"),
        ("constant.numeric", "number"),
        ("entity.name.function", "op"),
        ("keyword.operator.weight", "weight"),
        ("punctuation.section", "paren"),
        ("keyword.other.header", "header-key"),
        ("comment.line.semicolon", "comment"),
    ):
        if scope.startswith(prefix):
            return kind
    if scope.endswith(".header.vx") or scope.startswith(("punctuation.definition.comment", "punctuation.separator")):
        return "header"
    return scope


def test_textmate_grammar_is_valid_json_with_its_scope():
    grammar = load_grammar()
    assert grammar["scopeName"] == "source.vx" and grammar["fileTypes"] == ["vx"]
    for rule in grammar["repository"].values():
        for r in rule.get("patterns", [rule]):
            re.compile(r["match"])  # every regex compiles (and uses only syntax Python shares with Oniguruma)


def test_textmate_grammar_scopes_sample_tokens():
    got = [(t, tm_kind(s)) for t, s in tm_tokens(load_grammar(), SAMPLE)]
    assert got == EXPECTED


def test_textmate_and_pygments_agree_on_every_example():
    from vx.dsl.lexer import VxLexer

    grammar = load_grammar()
    for path in sorted((ROOT / "examples").rglob("*.vx")):
        text = path.read_text()
        tm = [
            (t, "header" if k == "header-key" else k) for t, k in ((t, tm_kind(s)) for t, s in tm_tokens(grammar, text))
        ]
        pg = [(v.strip(), pygments_kind(tok)) for tok, v in VxLexer().get_tokens(text) if v.strip()]
        assert tm == pg, path
