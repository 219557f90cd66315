"""A third-party family (tests/fixtures/thirdparty: a package shaped like vx's own families, with a
dist-info registering its Pack under the `vx.ops` entry-point group) plugs in without touching vx."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.families.pack import Pack, known_packs, load_pack
from vx.verifier import Verifier

THIRDPARTY = Path(__file__).resolve().parents[1] / "fixtures" / "thirdparty"


@pytest.fixture
def installed(monkeypatch):
    """The fixture directory on sys.path, as site-packages would hold the installed distribution."""
    monkeypatch.syspath_prepend(str(THIRDPARTY))
    yield
    for name in [m for m in sys.modules if m.startswith("vx_family_greetings")]:
        del sys.modules[name]


def test_the_entry_point_finds_the_pack(installed):
    assert "greetings" in known_packs()
    pack = load_pack("greetings")
    assert isinstance(pack, Pack) and pack.root == "is_text"
    assert [o.name for o in pack.ops] == ["is_text", "greets_someone_else", "rude"]
    assert pack.taxonomy == ("not_text", "wrong_name", "rude") and len(pack.version) == 12


@pytest.mark.parametrize("ref", ["greetings", "vx_family_greetings.pack"])
def test_a_family_names_the_pack_and_grades_with_it(installed, tmp_path, ref):
    from vx_family_greetings.data.build import build

    family = Family(build(tmp_path / "fam", pack=ref))
    pack = family.pack()
    assert pack.classify_failure({"name": "Ada"}, "Go away.", None) == "wrong_name"
    verifier = Verifier.from_family(family)
    assert verifier.grade({"id": "x", "name": "Ada"}, "Hello, Ada!").passed
    grade = verifier.grade({"id": "x", "name": "Ada"}, "Hello, Bob!")
    assert not grade.passed and "never says 'Ada'" in str(grade.as_dict())


def test_the_pack_s_task_schema_is_checked_on_load(installed, tmp_path):
    import json

    from vx_family_greetings.data.build import build

    from vx.families.family import FamilyError

    fam = build(tmp_path / "fam", pack="greetings")
    tasks = fam / "tasks.jsonl"
    rows = [json.loads(line) for line in tasks.read_text().splitlines() if line.strip()]
    rows[0] = {"id": rows[0]["id"], "nmae": "Ada"}
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(FamilyError, match=r"tasks.jsonl:1: .*'name' is required|tasks.jsonl:1: unknown key 'nmae'"):
        Family(fam)


def test_an_unknown_pack_names_the_known_ones():
    from vx.families.pack import PackError

    with pytest.raises(PackError, match="did you mean code"):
        load_pack("cod")
