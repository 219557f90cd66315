"""Text → expression tree, with syntax errors a person can act on.

``parse(text)`` returns a `vx.dsl.ast` node or raises `VxSyntaxError` — and nothing else, for
any input string. The error names the file, line and column, shows the source line with a
caret under the offending text, and gives a hint::

    seed.vx:2:4: error: unknown combinator 'anyy'
      2 |   (anyy crash timeout))
        |    ^^^^
      hint: did you mean 'any'?

The surface syntax is `vx/grammar/vx.lark` (an LALR grammar). When Lark rejects the input,
this module replays the tokens up to the failure to say *why* in the language's own terms
(an unknown combinator, a missing weight, an unclosed parenthesis …). Rules the grammar does
not express — vote K a whole number with 1 ≤ K ≤ k, known op names — are checked while the
tree is built, with the same kind of error.
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Iterable
from fractions import Fraction
from importlib import resources
from typing import Literal

import attrs
from lark import Lark, Token, Tree
from lark.exceptions import (
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    UnexpectedToken,
)

from vx.dsl.ast import KEYWORDS, All, Node, Not, OpRef, Path, Vote, WVote
from vx.dsl.ast import Any as AnyNode
from vx.errors import VxError

__all__ = [
    "MAX_DEPTH",
    "Span",
    "VxSyntaxError",
    "parse",
    "parse_file",
    "parse_located",
    "render_diagnostic",
]

#: Deepest nesting of parentheses accepted (deeper input is an error, never a crash).
MAX_DEPTH = 200

_KEYWORD_TYPES = {kw.upper(): kw for kw in KEYWORDS}  # Lark names keyword terminals ANY, ALL, …
_FORMS = "any, all, not, vote, wvote"
_EMPTY_HINTS = {
    "any": "(any …) needs at least one child, e.g. (any crash timeout)",
    "all": "(all …) needs at least one child, e.g. (all crash timeout)",
    "not": "(not …) needs exactly one child, e.g. (not crash)",
    "vote": "(vote K …) needs at least K children, e.g. (vote 2 a b c)",
    "wvote": "(wvote θ …) needs weighted children, e.g. (wvote 1.5 a@1 b@0.5 c@1)",
}


# --- diagnostics -----------------------------------------------------------------------
def render_diagnostic(
    *,
    filename: str,
    line: int,
    column: int,
    source_line: str,
    message: str,
    hint: str | None = None,
    width: int = 1,
    severity: str = "error",
) -> str:
    """The human form of a diagnostic: ``file:line:col: severity: message``, then the source
    line with a caret under columns ``column … column+width-1`` and the hint."""
    text = f"{filename}:{line}:{column}: {severity}: {message}"
    if source_line or line > 0:
        shown = source_line.replace("\t", " ")
        gutter = f"{line:>4} | "
        pad = " " * (len(gutter) - 2) + "| "
        caret_at = max(column - 1, 0)
        carets = "^" * max(1, min(width, max(len(shown) - caret_at, 1)))
        text += f"\n{gutter}{shown}\n{pad}{' ' * caret_at}{carets}"
    if hint:
        text += f"\n  hint: {hint}"
    return text


class VxSyntaxError(VxError):
    """A .vx text that is not a valid expression. ``str(error)`` is the full report.

    Attributes: ``filename``, ``line`` and ``column`` (1-based), ``source_line`` (the text
    of that line), ``hint`` (what to do, or None), ``message`` (the one-line problem),
    ``width`` (how many characters the caret underlines) and ``kind`` (a stable short code,
    e.g. ``"unknown-combinator"``, for programs and tests).
    """

    def __init__(
        self,
        message: str,
        *,
        filename: str,
        line: int,
        column: int,
        source_line: str,
        hint: str | None = None,
        width: int = 1,
        kind: str = "syntax",
    ) -> None:
        self.message = message
        self.filename = filename
        self.line = line
        self.column = column
        self.source_line = source_line
        self.hint = hint
        self.width = width
        self.kind = kind
        super().__init__(self.__str__())

    def __reduce__(self):  # keyword-only arguments: pickle (e.g. across processes) by fields
        fields = ("message", "filename", "line", "column", "source_line", "hint", "width", "kind")
        return _rebuild_syntax_error, (tuple(getattr(self, f) for f in fields),)

    def __str__(self) -> str:
        return render_diagnostic(
            filename=self.filename,
            line=self.line,
            column=self.column,
            source_line=self.source_line,
            message=self.message,
            hint=self.hint,
            width=self.width,
        )


def _rebuild_syntax_error(values: tuple) -> VxSyntaxError:
    message, filename, line, column, source_line, hint, width, kind = values
    return VxSyntaxError(
        message,
        filename=filename,
        line=line,
        column=column,
        source_line=source_line,
        hint=hint,
        width=width,
        kind=kind,
    )


@attrs.frozen
class Span:
    """Where a node's text is: 1-based line and column of its first character, and the
    number of characters its first line covers (for carets)."""

    line: int
    column: int
    width: int = 1


class _Source:
    """The text being parsed and how to point into it."""

    def __init__(self, text: str, filename: str) -> None:
        self.text = text
        self.filename = filename
        self.lines = text.split("\n")

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].rstrip("\r") if 1 <= line <= len(self.lines) else ""

    def error(
        self, kind: str, message: str, line: int, column: int, width: int = 1, hint: str | None = None
    ) -> VxSyntaxError:
        return VxSyntaxError(
            message,
            filename=self.filename,
            line=line,
            column=column,
            source_line=self.line_text(line),
            hint=hint,
            width=width,
            kind=kind,
        )

    def at_token(self, kind: str, message: str, tok: Token, hint: str | None = None) -> VxSyntaxError:
        return self.error(kind, message, tok.line or 1, tok.column or 1, _token_width(tok), hint)

    def at_end(self, kind: str, message: str, hint: str | None = None) -> VxSyntaxError:
        line = len(self.lines)
        while line > 1 and not self.line_text(line).strip():
            line -= 1
        return self.error(kind, message, line, len(self.line_text(line)) + 1, 1, hint)


def _token_width(tok: Token) -> int:
    first_line = str(tok).split("\n", 1)[0]
    return max(1, len(first_line))


# --- the parser ------------------------------------------------------------------------
@functools.cache
def _lark() -> Lark:
    grammar = resources.files("vx.grammar").joinpath("vx.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=False)


def parse(text: str, *, filename: str = "<string>", known_ops: Iterable[str] | None = None) -> Node:
    """Parse one vx expression. ``known_ops``, when given, makes any other op name an error
    (with the nearest known names as the hint). Raises only `VxSyntaxError`."""
    node, _ = parse_located(text, filename=filename, known_ops=known_ops)
    return node


def parse_file(path: str | os.PathLike[str], known_ops: Iterable[str] | None = None) -> Node:
    """Parse the .vx file at ``path`` (UTF-8). I/O errors propagate as ``OSError``."""
    with open(path, "rb") as fh:
        data = fh.read()
    name = os.fspath(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VxSyntaxError(
            f"the file is not UTF-8 text (byte {exc.start})",
            filename=name,
            line=1,
            column=1,
            source_line="",
            hint="save the file as UTF-8",
            kind="encoding",
        ) from None
    return parse(text, filename=name, known_ops=known_ops)


def parse_located(
    text: str, *, filename: str = "<string>", known_ops: Iterable[str] | None = None
) -> tuple[Node, dict[Path, Span]]:
    """Like `parse`, also returning where each node starts (path → `Span`)."""
    if not isinstance(text, str):
        raise TypeError(f"parse() takes a str, not {type(text).__name__}")
    src = _Source(text, filename)
    tokens = _tokens(src)
    _check_nesting(src, tokens)
    if not tokens:
        raise src.at_end(
            "empty",
            "empty input: expected an expression",
            hint="write an op name or a combinator, e.g. (any crash timeout)",
        )
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _explain(src, tokens, exc) from None
    builder = _Builder(src, frozenset(known_ops) if known_ops is not None else None)
    node = builder.build(tree.children[0], ())
    return node, builder.spans


def _tokens(src: _Source) -> list[Token]:
    try:
        return list(_lark().lex(src.text))
    except UnexpectedCharacters as exc:
        pos = exc.pos_in_stream if exc.pos_in_stream is not None else len(src.text)
        char = src.text[pos] if pos < len(src.text) else ""
        raise src.error(
            "character",
            f"unexpected character {char!r}",
            exc.line,
            exc.column,
            1,
            _character_hint(char),
        ) from None


def _character_hint(char: str) -> str:
    if char in "[]{}":
        return "vx uses only round parentheses: (any a b)"
    if char in "\"'`":
        return "vx has no strings; op names are bare identifiers such as crash or sql:select_star"
    if char == ".":
        return "write decimals with a leading digit, e.g. 0.5"
    if char == "+":
        return "numbers have no '+' sign: write 2, not +2"
    return (
        "op names use letters, digits and _ . : - (starting with a letter or _); "
        "numbers look like 2 or -0.5; ';' starts a comment"
    )


def _check_nesting(src: _Source, tokens: list[Token]) -> None:
    depth = 0
    for tok in tokens:
        if tok.type == "LPAR":
            depth += 1
            if depth > MAX_DEPTH:
                raise src.at_token(
                    "too-deep",
                    f"expression nested deeper than {MAX_DEPTH} levels",
                    tok,
                    "flatten it: (any a (any b c)) is (any a b c)",
                )
        elif tok.type == "RPAR":
            depth = max(depth - 1, 0)


# --- building the tree -----------------------------------------------------------------
class _Builder:
    def __init__(self, src: _Source, known_ops: frozenset[str] | None) -> None:
        self.src = src
        self.known_ops = known_ops
        self.spans: dict[Path, Span] = {}

    def build(self, tree: Tree | Token, path: Path) -> Node:
        assert isinstance(tree, Tree)
        kind = tree.data
        if kind == "op":
            (tok,) = tree.children
            assert isinstance(tok, Token)
            self.spans[path] = Span(tok.line or 1, tok.column or 1, _token_width(tok))
            self._check_known(tok)
            return OpRef(str(tok))
        self.spans[path] = Span(tree.meta.line, tree.meta.column, 1)
        kids = tree.children
        if kind == "any":
            return AnyNode(self.build(c, (*path, i)) for i, c in enumerate(kids))
        if kind == "all":
            return All(self.build(c, (*path, i)) for i, c in enumerate(kids))
        if kind == "not":
            return Not(self.build(kids[0], (*path, 0)))
        if kind == "vote":
            k_tok, rest = kids[0], kids[1:]
            assert isinstance(k_tok, Token)
            k = self._vote_k(k_tok, len(rest))
            return Vote(k, (self.build(c, (*path, i)) for i, c in enumerate(rest)))
        if kind == "wvote":
            assert isinstance(kids[0], Token)
            threshold = self._number(kids[0])
            children: list[Node] = []
            weights: list[Fraction] = []
            for i, weighted in enumerate(kids[1:]):
                assert isinstance(weighted, Tree)
                child_tree, weight_tok = weighted.children
                assert isinstance(weight_tok, Token)
                children.append(self.build(child_tree, (*path, i)))
                weights.append(self._number(weight_tok))
            return WVote(threshold, children, weights)
        raise AssertionError(f"grammar rule without a builder: {kind}")  # pragma: no cover

    def _check_known(self, tok: Token) -> None:
        if self.known_ops is None or str(tok) in self.known_ops:
            return
        raise self.src.at_token(
            "unknown-op", f"unknown op {str(tok)!r}", tok, unknown_op_hint(str(tok), self.known_ops)
        )

    def _number(self, tok: Token) -> Fraction:
        try:
            return Fraction(str(tok))
        except ValueError:  # only for absurdly long digit strings
            raise self.src.at_token("number", "number too long", tok, "use at most a few dozen digits") from None

    def _vote_k(self, tok: Token, n_children: int) -> int:
        value = self._number(tok)
        if value.denominator != 1:
            raise self.src.at_token(
                "vote-k",
                f"vote K must be a whole number, got {tok}",
                tok,
                f"K counts children that fire: use a whole number from 1 to {n_children}",
            )
        k = int(value)
        if not 1 <= k <= n_children:
            noun = "child" if n_children == 1 else "children"
            message = f"vote K={k} but only {n_children} {noun}" if k > n_children else f"vote K={k} is out of range"
            raise self.src.at_token(
                "vote-k",
                message,
                tok,
                f"K must be between 1 and the number of children ({n_children})",
            )
        return k


def unknown_op_hint(name: str, known_ops: Iterable[str]) -> str:
    """``did you mean 'x'?`` with the nearest known names, or a short list of what is known."""
    known = sorted(set(known_ops))
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    if near:
        return "did you mean " + " or ".join(repr(n) for n in near) + "?"
    if not known:
        return "no ops are known here"
    if len(known) <= 8:
        return "known ops: " + ", ".join(known)
    return f"none of the {len(known)} known ops is close; list them with the family's op pool"


# --- explaining a grammar error -------------------------------------------------------
@attrs.define
class _Frame:
    lpar: Token
    head: str | None = None  # a keyword, or None before the head is read
    has_param: bool = False  # vote K / wvote threshold seen
    n_children: int = 0
    awaiting: Literal["nothing", "at", "weight"] = "nothing"  # wvote: after a child / after '@'
    last_child: Token | None = None


def _explain(src: _Source, tokens: list[Token], exc: UnexpectedInput) -> VxSyntaxError:
    """Turn Lark's error into one that says what is wrong in vx terms."""
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        index = next((i for i, t in enumerate(tokens) if t.start_pos == exc.token.start_pos), len(tokens))
    elif isinstance(exc, (UnexpectedToken, UnexpectedEOF)):
        index = len(tokens)
    else:  # pragma: no cover - lexing errors were raised before parsing
        return src.error("syntax", "invalid syntax", getattr(exc, "line", 1), getattr(exc, "column", 1))

    stack: list[_Frame] = []
    prev: Token | None = None
    for tok in tokens[:index]:
        _advance(stack, tok)
        prev = tok
    frame = stack[-1] if stack else None

    if index >= len(tokens):
        return _explain_end(src, frame, prev)
    return _explain_token(src, tokens[index], frame, prev)


def _advance(stack: list[_Frame], tok: Token) -> None:
    """Replay one token of a (so far valid) token stream."""
    t = tok.type
    frame = stack[-1] if stack else None
    if t == "LPAR":
        stack.append(_Frame(tok))
    elif t in _KEYWORD_TYPES and frame is not None and frame.head is None:
        frame.head = _KEYWORD_TYPES[t]
    elif t == "NUMBER" and frame is not None:
        if frame.awaiting == "weight":
            frame.awaiting = "nothing"
        else:
            frame.has_param = True
    elif t == "AT" and frame is not None:
        frame.awaiting = "weight"
    elif t == "NAME" and frame is not None:
        _child_done(frame, tok)
    elif t == "RPAR" and stack:
        closed = stack.pop()
        if stack:
            _child_done(stack[-1], closed.lpar)


def _child_done(frame: _Frame, start: Token) -> None:
    frame.n_children += 1
    frame.last_child = start
    if frame.head == "wvote":
        frame.awaiting = "at"


def _explain_end(src: _Source, frame: _Frame | None, prev: Token | None) -> VxSyntaxError:
    if frame is None:  # pragma: no cover - a complete expression followed by nothing parses
        return src.at_end("syntax", "unexpected end of input")
    if prev is not None and prev.type == "AT":
        return src.at_token("weight", "missing weight after '@'", prev, "write child@weight, e.g. crash@0.5")
    head = f"({frame.head} …)" if frame.head else "this form"
    return src.at_token(
        "unclosed",
        "unbalanced parentheses: this '(' is never closed",
        frame.lpar,
        f"add ')' to close {head}",
    )


def _explain_token(src: _Source, tok: Token, frame: _Frame | None, prev: Token | None) -> VxSyntaxError:
    t, text = tok.type, str(tok)
    starts_child = t in ("NAME", "LPAR") or t in _KEYWORD_TYPES

    if frame is None and prev is None:  # the very first token
        if t in _KEYWORD_TYPES:
            return _keyword_error(src, tok)
        if t != "RPAR":
            return src.at_token(
                "syntax",
                f"expected an expression, found {_describe(tok)}",
                tok,
                "write an op name or a combinator, e.g. (any crash timeout)",
            )
    if frame is None:
        if t == "RPAR":
            return src.at_token(
                "unmatched", "unbalanced parentheses: unmatched ')'", tok, "remove it, or add the '(' it should close"
            )
        return src.at_token(
            "extra",
            f"unexpected {_describe(tok)} after the end of the expression",
            tok,
            "a .vx file holds one expression; combine several with a combinator, e.g. (any a b)",
        )

    # Right after '(' a combinator keyword must come.
    if prev is not None and prev.type == "LPAR":
        if t == "NAME":
            near = difflib.get_close_matches(text, sorted(KEYWORDS), n=1, cutoff=0.6)
            hint = (
                f"did you mean {near[0]!r}?"
                if near
                else f"a form starts with one of: {_FORMS}; an op is written bare (crash, not (crash))"
            )
            return src.at_token("unknown-combinator", f"unknown combinator {text!r}", tok, hint)
        if t == "RPAR":
            return src.at_token("empty", "empty ()", prev, f"a form starts with a combinator: {_FORMS}")
        return src.at_token(
            "combinator",
            f"expected a combinator after '(', found {_describe(tok)}",
            tok,
            f"a form starts with one of: {_FORMS}",
        )

    head = frame.head
    if frame.awaiting == "weight":
        return src.at_token(
            "weight", f"expected a weight after '@', found {_describe(tok)}", tok, "write child@weight, e.g. crash@0.5"
        )
    if head == "wvote" and frame.awaiting == "at" and (starts_child or t in ("RPAR", "NUMBER")):
        child = frame.last_child
        assert child is not None
        if t == "NUMBER":
            return src.at_token(
                "weight", "missing '@' between a wvote child and its weight", tok, "write child@weight, e.g. crash@0.5"
            )
        return src.at_token(
            "weight",
            "this wvote child has no weight",
            child,
            "every child of (wvote θ …) carries a weight: write child@weight, e.g. crash@0.5",
        )
    if t == "AT":
        if head != "wvote":
            return src.at_token(
                "weight",
                "'@weight' is only allowed on children of (wvote …)",
                tok,
                "use (wvote θ a@w1 b@w2 …) for a weighted vote",
            )
        return src.at_token("weight", "'@' must follow a child", tok, "write child@weight, e.g. crash@0.5")
    if head in ("vote", "wvote") and not frame.has_param:
        what = "K" if head == "vote" else "a threshold"
        example = "(vote 2 a b c)" if head == "vote" else "(wvote 1.5 a@1 b@0.5 c@1)"
        if t == "RPAR":
            return src.at_token(
                "empty", f"empty ({head})", frame.lpar, f"({head}) needs {what} and children, e.g. {example}"
            )
        return src.at_token("param", f"({head}) needs {what} before its children", tok, f"e.g. {example}")
    if t == "RPAR" and frame.n_children == 0:
        return src.at_token("empty", f"empty ({head})", frame.lpar, _EMPTY_HINTS[head or "any"])
    if head == "not" and starts_child and frame.n_children >= 1:
        return src.at_token(
            "arity", "(not) takes exactly one child", tok, "to negate several, wrap them: (not (any a b))"
        )
    if t in _KEYWORD_TYPES:
        return _keyword_error(src, tok)
    if t == "NUMBER":
        return src.at_token(
            "number",
            f"unexpected number {text}",
            tok,
            "numbers only appear as vote K, the wvote threshold, and weights after '@'",
        )
    return src.at_token("syntax", f"unexpected {_describe(tok)}", tok)  # pragma: no cover


def _keyword_error(src: _Source, tok: Token) -> VxSyntaxError:
    return src.at_token(
        "keyword",
        f"{str(tok)!r} is a combinator keyword and cannot name an op",
        tok,
        f"write it as a form, e.g. ({tok} a b); no op may be named any, all, not, vote or wvote",
    )


def _describe(tok: Token) -> str:
    if tok.type == "LPAR":
        return "'('"
    if tok.type == "RPAR":
        return "')'"
    if tok.type == "AT":
        return "'@'"
    if tok.type == "NUMBER":
        return f"number {tok}"
    if tok.type in _KEYWORD_TYPES:
        return f"keyword {str(tok)!r}"
    return repr(str(tok))
