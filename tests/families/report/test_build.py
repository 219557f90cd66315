"""The family builder: splits, labels, leakage hygiene, determinism — and the bundled family is current."""

import json
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.families.report.data.build import BuildError, build_family, load_sources

FAMILY_DIR = Path(__file__).resolve().parents[3] / "examples" / "report"
SOURCES = FAMILY_DIR / "sources"
GENERATED = ("tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "family.toml")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    report = build_family(SOURCES, out, seed=0)
    return out, report


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_bundled_family_matches_a_fresh_build(built):
    """examples/report is exactly what `vx data build report --sources examples/report/sources` writes."""
    out, _ = built
    for name in GENERATED:
        fresh = (out / name).read_text()
        if name == "family.toml":  # the sources path is recorded as given
            fresh = fresh.replace(str(SOURCES), "examples/report/sources")
        assert fresh == (FAMILY_DIR / name).read_text(), f"{name} is stale: rebuild with `vx data build report`"


def test_splits_sizes_labels_and_disjoint_tasks(built):
    out, report = built
    fam = Family(out)
    dev = fam.split("dev")
    assert len(dev) == 10 and sorted(it.hard_label() for it in dev) == ["fail"] * 5 + ["pass"] * 5
    assert all(it.reference for it in dev)
    locked = fam.audit().labeled_split()
    assert len(locked) >= 40
    tasks_of = {
        name: {it.task for it in split}
        for name, split in (("train", fam.split("train")), ("dev", dev), ("locked", locked))
    }
    assert not (tasks_of["train"] & tasks_of["dev"]) and not (tasks_of["train"] & tasks_of["locked"])
    assert not (tasks_of["dev"] & tasks_of["locked"])
    assert fam.objective["w"] == 0.25 and fam.root_name == "has_title"
    assert report.counts["tasks"] >= 30


def test_train_items_carry_no_label_and_no_hint(built):
    out, _ = built
    for r in rows(out / "train.jsonl"):
        assert set(r) == {"id", "task", "output"}
        assert r["id"].split("#")[1].isdigit()


def test_tasks_file_holds_no_golden_section(built):
    out, _ = built
    for r in rows(out / "tasks.jsonl"):
        assert "golden" not in r and {"title", "purpose", "caliber", "cards", "vocabulary"} <= set(r)


def test_dev_is_class_stratified_and_contains_the_gaming_pattern(built):
    out, report = built
    fails = [r for r in rows(out / "dev.jsonl") if r["label"] == "fail"]
    classes = {c for r in fails for c in r["meta"]["classes"]}
    assert "value_erasure" in classes and len(classes) >= 8
    assert report.provenance["dev_failure_classes"] == sorted(classes)


def test_locked_labels_come_from_the_rubric(built):
    out, _ = built
    from vx.families.report.data import rubric

    for r in rows(out / "locked.jsonl"):
        assert (r["label"] == "pass") == (r["meta"]["rubric"] >= rubric.PASS_THRESHOLD)
        if r["meta"]["degradation"] is None:
            assert r["label"] == "pass"


def test_seed_changes_the_split_and_is_deterministic(tmp_path):
    a = build_family(SOURCES, tmp_path / "a", seed=3)
    b = build_family(SOURCES, tmp_path / "b", seed=3)
    for name in ("dev.jsonl", "locked.jsonl", "train.jsonl"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    assert a.counts == b.counts
    assert a.provenance["dev_tasks"] != build_family(SOURCES, tmp_path / "c", seed=4).provenance["dev_tasks"]


def test_source_errors_name_file_and_task(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'topic = "x"\n[caliber]\ntext = "USD"\n[[tasks]]\nid = "t1"\ntitle = "T"\npurpose = "P"\n'
        'cards = [ { id = "E1", claim = "c", quote = "q", source = "s", date = "2026-01-01", '
        'stance = "supporting", credibility = "high" } ]\n'
    )
    with pytest.raises(BuildError) as e:
        load_sources(tmp_path)
    assert f"{bad}:5: task t1: cards[0].id must look like E0103" in str(e.value)  # file:line of the task
    assert "needs a 'golden' section" not in str(e.value)  # invalid tasks stop at validation
    bad.write_text(
        bad.read_text().replace('id = "E1"', 'id = "E0101"').replace('"supporting"', '"pro"') + 'golden = "## T"\n'
    )
    with pytest.raises(BuildError) as e:
        load_sources(tmp_path)
    assert f"{bad}:8: task t1: E0101.stance must be one of supporting" in str(e.value)  # the card's own line
    with pytest.raises(BuildError, match="too few"):
        build_family(SOURCES, tmp_path / "x", n_locked=400)
