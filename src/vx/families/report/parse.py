"""Markdown → the parsed section every report op reads (the root op stores it in ``ctx["artifact"]``).

Parsing uses markdown-it-py (CommonMark plus tables). A `Section` is the section's title, its
blocks (headings, paragraphs, list items, quotes, table rows, code) and its sentences; each
sentence knows its source line, the evidence cards it cites (``[E0103]``, ``[E0103, E0107]``) and
the ledger tags it carries (``{M03}``), with their offsets in the sentence's plain text.

Sentence splitting is rule-based: a sentence ends at ``.``, ``!`` or ``?`` followed by space and
a capital, digit, quote or bracket — but not after common abbreviations (``e.g.``, ``U.S.``,
``approx.``), and a citation group written after the full stop (``… grew. [E0101]``) stays with
the sentence it follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

try:  # markdown-it-py is a dependency of the `report` extra
    from markdown_it import MarkdownIt
except ModuleNotFoundError as exc:  # pragma: no cover - exercised only without the extra
    raise ModuleNotFoundError(
        "the report op pack needs markdown-it-py: pip install 'vx-verifiers[report]'", name=exc.name
    ) from exc

CITATION = re.compile(r"\[\s*(E\d{3,5}(?:\s*[,;]\s*E\d{3,5})*)\s*\]")
CARD_REF = re.compile(r"E\d{3,5}")
TAG = re.compile(r"\{\s*(M\d{2,4})\s*\}")
TLDR = re.compile(r"^\W*(tl\s*;?\s*dr|tldr)\b", re.IGNORECASE)

ABBREVIATIONS = frozenset(
    "e.g i.e etc vs approx est inc corp ltd co no fig dr mr ms st jan feb mar apr jun jul aug sep sept oct nov dec "
    "u.s u.k e.u cf al resp incl excl avg yr yrs mo mos".split()
)
_END = re.compile(r"[.!?][\"'”’)\]*_]*\s+(?=[\"“'‘(\[*_]*[A-Z0-9$€£¥])")


@attrs.frozen
class Tag:
    """A ledger tag ``{M03}`` at `start:end` of its sentence's text."""

    metric: str
    start: int
    end: int


@attrs.frozen
class Block:
    kind: str  # heading | paragraph | item | quote | row | code
    text: str  # plain inline text (markup removed, line breaks as "\n")
    line: int  # 1-based line of the block's first line
    level: int = 0  # heading level (1 = "#"), list depth for items

    @property
    def is_tldr(self) -> bool:
        return bool(TLDR.match(self.text))


@attrs.frozen
class Sentence:
    text: str
    line: int
    block: int  # index into Section.blocks
    kind: str  # the block's kind
    cites: tuple[str, ...]  # card ids, in order, without repeats
    tags: tuple[Tag, ...]

    def quote(self, limit: int = 180) -> str:
        """The sentence for a message: ``line 7: “…”`` (shortened in the middle when long)."""
        t = " ".join(self.text.split())
        if len(t) > limit:
            t = t[: limit * 2 // 3] + " … " + t[-(limit // 3 - 3) :]
        return f"line {self.line}: “{t}”"


@attrs.frozen
class Section:
    text: str
    blocks: tuple[Block, ...]
    sentences: tuple[Sentence, ...]

    @property
    def title(self) -> str | None:
        """The first block's text when it is a heading of level 1 or 2."""
        if self.blocks and self.blocks[0].kind == "heading" and self.blocks[0].level <= 2:
            return self.blocks[0].text.strip() or None
        return None

    @property
    def headings(self) -> list[Block]:
        return [b for b in self.blocks if b.kind == "heading"]

    def body(self) -> Iterator[Sentence]:
        """Sentences outside headings and code."""
        return (s for s in self.sentences if s.kind not in ("heading", "code"))

    def cited_cards(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.sentences:
            for c in s.cites:
                seen.setdefault(c)
        return list(seen)

    def tagged_metrics(self) -> list[str]:
        seen: dict[str, None] = {}
        for s in self.sentences:
            for t in s.tags:
                seen.setdefault(t.metric)
        return list(seen)

    def word_count(self) -> int:
        return sum(len(s.text.split()) for s in self.body())


_MD = MarkdownIt("commonmark").enable("table")


def _inline_text(token) -> str:
    out: list[str] = []
    for c in token.children or []:
        if c.type in ("text", "code_inline"):
            out.append(c.content)
        elif c.type in ("softbreak", "hardbreak"):
            out.append("\n")
        elif c.type == "image":
            out.append(c.content)
    return "".join(out)


_FENCED = re.compile(r"\A(\s*)```[ \t]*(?:markdown|md)?[ \t]*\n(.*?)\n```[ \t]*\s*\Z", re.DOTALL | re.IGNORECASE)


def parse_section(text: str) -> Section:
    """Parse a markdown section. Never raises on any string (markdown has no syntax errors).

    A section wholly wrapped in one ```markdown fence (a common artifact of chat models) is
    unwrapped; line numbers still refer to the original text."""
    source = text
    shift = 0
    m = _FENCED.match(text)
    if m:
        shift = m.group(1).count("\n") + 1
        text = m.group(2)
    tokens = _MD.parse(text)
    blocks: list[Block] = []
    stack: list[str] = []  # enclosing containers: "li", "quote", "row"
    row_cells: list[str] = []
    row_line = 0
    pending_heading: tuple[int, int] | None = None
    in_cell = False
    for tok in tokens:
        t = tok.type
        if t == "list_item_open":
            stack.append("li")
        elif t == "blockquote_open":
            stack.append("quote")
        elif t in ("list_item_close", "blockquote_close"):
            if stack:
                stack.pop()
        elif t == "heading_open":
            pending_heading = (int(tok.tag[1:]), tok.map[0] + 1 if tok.map else 0)
        elif t in ("th_open", "td_open"):
            in_cell = True
        elif t in ("th_close", "td_close"):
            in_cell = False
        elif t == "tr_open":
            row_cells, row_line = [], (tok.map[0] + 1 if tok.map else 0)
        elif t == "tr_close":
            blocks.append(Block("row", " | ".join(row_cells), row_line))
        elif t in ("fence", "code_block"):
            blocks.append(Block("code", tok.content, tok.map[0] + 1 if tok.map else 0))
        elif t == "inline":
            line = tok.map[0] + 1 if tok.map else 0
            body = _inline_text(tok)
            if pending_heading is not None:
                blocks.append(Block("heading", body, pending_heading[1], pending_heading[0]))
                pending_heading = None
            elif in_cell:
                row_cells.append(body.strip())
            elif "li" in stack:
                blocks.append(Block("item", body, line, stack.count("li")))
            elif "quote" in stack:
                blocks.append(Block("quote", body, line))
            else:
                blocks.append(Block("paragraph", body, line))
    if shift:
        blocks = [attrs.evolve(b, line=b.line + shift) for b in blocks]
    sentences: list[Sentence] = []
    for i, b in enumerate(blocks):
        if b.kind in ("heading", "row", "code"):
            parts = [(0, b.text)]
        else:
            parts = split_sentences(b.text)
        for start, s in parts:
            if not s.strip():
                continue
            line = b.line + b.text.count("\n", 0, start)
            flat = s.replace("\n", " ").strip()
            sentences.append(Sentence(flat, line, i, b.kind, citations(flat), tags(flat)))
    return Section(source, tuple(blocks), tuple(sentences))


def split_sentences(text: str) -> list[tuple[int, str]]:
    """(start offset, sentence) pairs of a block's text."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _END.finditer(text):
        head = text[start : m.start() + 1]
        word = re.search(r"([A-Za-z][A-Za-z.]*)\.$", head)
        if word and word.group(1).lower().rstrip(".") in ABBREVIATIONS:
            continue
        if word and re.fullmatch(r"[A-Z]", word.group(1)):  # an initial: "J. Smith"
            continue
        out.append((start, text[start : m.end()]))
        start = m.end()
    out.append((start, text[start:]))
    # a citation group written after the full stop belongs to the sentence before it
    merged: list[tuple[int, str]] = []
    for st, s in out:
        lead = re.match(r"\s*(?:\[\s*E\d{3,5}(?:\s*[,;]\s*E\d{3,5})*\s*\]\s*)+", s)
        if merged and lead:
            pst, ps = merged[-1]
            merged[-1] = (pst, ps + s[: lead.end()])
            rest = s[lead.end() :]
            if rest.strip():
                merged.append((st + lead.end(), rest))
        else:
            merged.append((st, s))
    return merged


def citations(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for m in CITATION.finditer(text):
        for cid in CARD_REF.findall(m.group(1)):
            seen.setdefault(cid)
    return tuple(seen)


def tags(text: str) -> tuple[Tag, ...]:
    return tuple(Tag(m.group(1), m.start(), m.end()) for m in TAG.finditer(text))


def mask_markup(text: str) -> str:
    """`text` with citation groups and ledger tags blanked out (same length, offsets kept)."""
    text = CITATION.sub(lambda m: " " * len(m.group(0)), text)
    return TAG.sub(lambda m: " " * len(m.group(0)), text)
