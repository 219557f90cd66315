"""Markdown sections: blocks, sentences, citations, tags and lines."""

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.report.parse import CITATION, parse_section, split_sentences

TEXT = """## Market size

**TL;DR:** The market reached $4.2B {M03} in 2026 [E0101]. It grew 12%, e.g. in the U.S. market [E0102, E0103].
Second line of the paragraph. [E0104]

- An item with a tag {M04}
- Another item *emphasised* [E0101]

| metric | value |
|---|---|
| size | 4.2 |
"""


def test_blocks_sentences_citations_and_lines():
    sec = parse_section(TEXT)
    assert sec.title == "Market size"
    kinds = [b.kind for b in sec.blocks]
    assert kinds == ["heading", "paragraph", "item", "item", "row", "row"]
    s = [x for x in sec.sentences if x.kind == "paragraph"]
    assert [x.text for x in s] == [
        "TL;DR: The market reached $4.2B {M03} in 2026 [E0101].",
        "It grew 12%, e.g. in the U.S. market [E0102, E0103].",
        "Second line of the paragraph. [E0104]",
    ]
    assert s[1].cites == ("E0102", "E0103") and s[2].cites == ("E0104",)  # a trailing cite stays
    assert [x.line for x in s] == [3, 3, 4]
    assert s[0].tags[0].metric == "M03" and s[0].text[s[0].tags[0].start : s[0].tags[0].end] == "{M03}"
    assert sec.blocks[1].is_tldr
    assert sec.cited_cards() == ["E0101", "E0102", "E0103", "E0104"]
    assert sec.tagged_metrics() == ["M03", "M04"]
    assert "line 3: “TL;DR" in s[0].quote()


def test_no_title_when_the_section_opens_with_prose():
    assert parse_section("Just prose.\n\n## Later heading\n").title is None
    assert parse_section("### Too deep\n\nBody.").title is None


def test_quote_shortens_long_sentences():
    long = "word " * 200
    q = parse_section(long + ".").sentences[0].quote(limit=60)
    assert len(q) < 90 and " … " in q


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n#-*[]{}E0123M|$%,")), max_size=300))
def test_parsing_never_fails_and_citations_are_from_the_text(text):
    sec = parse_section(text)
    for s in sec.sentences:
        for c in s.cites:
            assert c in s.text
        assert all(0 <= t.start < t.end <= len(s.text) for t in s.tags)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "The market grew 4.2% [E0101].",
                "Prices fell.",
                "See e.g. the U.S. case.",
                "It rose to $3.1B {M01} [E0102].",
            ]
        ),
        min_size=1,
        max_size=6,
    )
)
def test_splitting_recovers_the_sentences(parts):
    text = " ".join(parts)
    got = [s.strip() for _, s in split_sentences(text)]
    assert got == parts
    assert all(text[st_:].startswith(s.strip()) for st_, s in split_sentences(text))
    assert len(CITATION.findall(text)) == sum(len(CITATION.findall(p)) for p in parts)


def test_a_section_wrapped_in_a_markdown_fence_is_unwrapped():
    sec = parse_section("```markdown\n## Title\n\nBody cites [E0101].\n```\n")
    assert sec.title == "Title"
    assert sec.sentences[1].line == 4 and sec.sentences[1].cites == ("E0101",)
    assert parse_section("```python\nx = 1\n```").title is None  # real code stays code
