"""The one writer of family.toml: what it writes reads back as what it was given (TOML has no null: a None
is left out), and Family loads a family it wrote."""

from __future__ import annotations

import tomllib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.family_toml import OBJECTIVE, family_toml, write_family_toml

KEYS = st.text(min_size=1, max_size=12)
SCALARS = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
PLAIN = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, min_size=1, max_size=4)),
    max_leaves=12,
)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, st.one_of(PLAIN, st.none()), max_size=6), st.text(max_size=40), st.booleans())
def test_what_is_written_reads_back_as_it_was_given(provenance, description, peers):
    text = family_toml(
        name="fam", description=description, packs=["code"], root="parses", provenance=provenance, peers=peers
    )
    data = tomllib.loads(text)
    assert data["provenance"] == _without_none(provenance)
    assert data["description"] == description and data["objective"] == dict(OBJECTIVE)
    assert ("peers" in data["splits"]) == peers and data["splits"]["dev"] == "dev.jsonl"


def test_no_seed_is_named_when_there_is_none_and_comments_come_first():
    text = family_toml(
        name="f", description="d", packs=["sql"], root="parses", provenance={}, seed=None, comments=["x"]
    )
    assert text.startswith("# x\n") and "seed" not in tomllib.loads(text)


def test_a_written_family_loads(tmp_path):
    import shutil
    from pathlib import Path

    from vx.families.family import Family

    src = Path(__file__).resolve().parents[1] / "fixtures" / "evo"
    fam = tmp_path / "evo"
    shutil.copytree(src, fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py", "family.toml"))
    write_family_toml(
        fam / "family.toml",
        name="evo",
        description="rewritten",
        packs=["ops.py"],
        root="nonempty",
        objective={"w": 1.0},
        provenance={"builder": "test", "counts": {"train": 90}},
    )
    loaded = Family(fam)
    assert loaded.name == "evo" and loaded.seed_text and len(loaded.split("dev")) == 10


def test_text_toml_cannot_hold_is_escaped_or_replaced():
    text = family_toml(name="f", description='a "q" \\ \x7f\x00\n\ud800 é', packs=["x"], root="r", provenance={})
    assert tomllib.loads(text)["description"] == 'a "q" \\ \x7f\x00\n\ufffd é'  # a lone surrogate: U+FFFD
