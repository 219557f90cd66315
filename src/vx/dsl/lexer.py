"""A Pygments lexer for .vx files (registered as the ``vx`` lexer: entry point group ``pygments.lexers``).

Pygments comes with rich, a core dependency, so highlighting needs nothing more: ``vx explain`` and
``vx fmt -`` colour expressions with it, MkDocs / Sphinx pages highlight ```` ```vx ```` blocks, and
``pygmentize -l vx seed.vx`` works once vx is installed. The token rules follow the grammar
(``vx/grammar/vx.lark``): ``;`` comments (a header line ``; key: value`` is a special comment), the
five combinator keywords right after ``(``, op names, numbers, and ``@`` before a wvote weight.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, Text, Whitespace

KEYWORDS = ("any", "all", "not", "vote", "wvote")
NAME = r"[A-Za-z_][A-Za-z0-9_.:\-]*"
NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"


class VxLexer(RegexLexer):
    """The vx expression language: S-expressions over named drawback detectors."""

    name = "vx"
    aliases = ["vx"]
    filenames = ["*.vx"]
    mimetypes = ["text/x-vx"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (
                r"(;[ \t]*)([A-Za-z_][A-Za-z0-9_-]*)(:)([^\n]*)",
                bygroups(Comment.Special, Comment.Special, Comment.Special, Comment.Special),
            ),
            (r";[^\n]*", Comment.Single),
            (r"(\()(\s*)(" + "|".join(KEYWORDS) + r")(?=[\s();@]|$)", bygroups(Punctuation, Whitespace, Keyword)),
            (r"[()]", Punctuation),
            (r"@", Operator),
            (NUMBER + r"(?=[\s();@]|$)", Number),
            (NAME, Name.Function),
            (r".", Text),  # anything else: vx check / vx fmt report it; the highlighter just shows it
        ],
    }


def highlight(text: str, *, style: str = "default") -> str:
    """`text` highlighted for a terminal (ANSI 256 colours)."""
    from pygments import highlight as _highlight
    from pygments.formatters import Terminal256Formatter

    return _highlight(text, VxLexer(), Terminal256Formatter(style=style))


__all__ = ["KEYWORDS", "VxLexer", "highlight"]
