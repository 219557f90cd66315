import json

import pytest

from vx.families.family import Family, FamilyError, find_family_dir


def _rewrite(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" if not isinstance(x, str) else x + "\n" for x in lines))


def test_loads_the_tiny_family(tiny_family):
    fam = Family(tiny_family)
    assert fam.name == "tiny"
    assert fam.counts() == {"train": 4, "dev": 6, "locked": 4}
    assert fam.split("dev").items[5].label == 0.2
    assert fam.split("dev").items[5].hard_label() == "fail"
    pool = fam.pool()
    assert pool.root_name == "nonempty"
    assert pool.names[:2] == ["nonempty", "missing_keyword"]
    assert fam.objective["fail_weight"] == 2.0


def test_locked_labels_only_through_audit(tiny_family):
    fam = Family(tiny_family)
    with pytest.raises(PermissionError):
        fam.split("locked")
    view = fam.evolution_view()
    assert not hasattr(view, "locked") and not hasattr(view, "audit")
    assert all(it.label is None for it in view.train)
    # the view (and the pool factory it carries) reaches no object holding locked labels
    import gc
    import sys
    import types

    # module namespaces are shared by everything; the family must not be reachable otherwise
    seen = {id(m.__dict__) for m in list(sys.modules.values()) if m is not None}
    stack = [view]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (str, int, float, type, types.ModuleType)):
            continue
        seen.add(id(obj))
        assert obj is not fam and type(obj).__name__ != "Audit"
        stack.extend(gc.get_referents(obj))
    audit = fam.audit()
    assert all(it.label is None for it in audit.split)
    assert [it.hard_label() for it in audit.labeled_split()] == ["pass", "fail", "fail", "pass"]


@pytest.mark.parametrize(
    "split,line,msg",
    [
        (
            "dev.jsonl",
            '{"id": "x", "task": "t1", "output": "a", "label": "maybe"}',
            'must be "pass", "fail" or a probability',
        ),
        ("dev.jsonl", '{"id": "x", "task": "t1", "output": "a", "label": 1.5}', "probability"),
        (
            "dev.jsonl",
            '{"id": "x", "task": "nope", "output": "a", "label": "pass"}',
            "task 'nope' is not in the tasks file",
        ),
        (
            "dev.jsonl",
            '{"id": "d1", "task": "t1", "output": "a", "label": "pass"}',
            "duplicate item id 'd1' (first at line 1)",
        ),
        ("dev.jsonl", '{"id": "x", "task": "t1", "label": "pass"}', "missing field(s) 'output'"),
        ("dev.jsonl", '{"id": "x", "task": "t1", "output": "a"}', 'need a "label"'),
        ("dev.jsonl", '{"id": "x", "task": "t1", "output": "a", "label": "pass"', "malformed JSON"),
        ("train.jsonl", '{"id": "x", "task": "t1", "output": "a", "label": "pass"}', "train items are unlabeled"),
        ("locked.jsonl", '{"id": "d2", "task": "t1", "output": "a", "label": "pass"}', "also in the dev split"),
        ("tasks.jsonl", '{"id": "t1"}', "duplicate task id 't1'"),
    ],
)
def test_every_loader_error_names_file_and_line(tiny_family, split, line, msg):
    p = tiny_family / split
    n = len(p.read_text().splitlines()) + 1
    with p.open("a") as f:
        f.write(line + "\n")
    with pytest.raises(FamilyError) as ei:
        Family(tiny_family)
    text = str(ei.value)
    assert msg in text
    assert f"{split}:{n}:" in text


def test_dev_needs_both_classes(tiny_family):
    dev = tiny_family / "dev.jsonl"
    dev.write_text("".join(line for line in dev.read_text().splitlines(True) if '"pass"' in line))
    with pytest.raises(FamilyError, match="the dev split has no fail items"):
        Family(tiny_family)


def test_all_problems_reported_at_once(tiny_family):
    with (tiny_family / "dev.jsonl").open("a") as f:
        f.write('not json\n{"id": "q", "task": "zz", "output": 1, "label": "pass"}\n')
    with pytest.raises(FamilyError) as ei:
        Family(tiny_family)
    assert len(ei.value.problems) == 2


def test_missing_family_toml(tmp_path):
    with pytest.raises(FamilyError, match="no family.toml found"):
        find_family_dir(tmp_path)
    with pytest.raises(FamilyError, match="needs a family.toml"):
        Family(tmp_path)


def test_bad_pack_is_reported(tiny_family):
    toml = tiny_family / "family.toml"
    toml.write_text(toml.read_text().replace('packs = ["ops.py"]', 'packs = ["nosuch.py"]'))
    from vx.families.pack import PackError

    with pytest.raises(PackError, match="nosuch.py does not exist"):
        Family(tiny_family).pool()


def test_find_family_upwards(tiny_family):
    sub = tiny_family / "a" / "b"
    sub.mkdir(parents=True)
    assert find_family_dir(sub) == tiny_family.resolve()
    assert find_family_dir(tiny_family / "seed.vx") == tiny_family.resolve()


def test_train_reaches_evolution_without_meta(tiny_family):
    train = tiny_family / "train.jsonl"
    train.write_text(
        train.read_text().replace('"output": "apples"}', '"output": "apples", "meta": {"operator": "off_by_one"}}')
    )
    fam = Family(tiny_family)
    assert fam.split("train").items[0].meta == {"operator": "off_by_one"}  # a person still sees provenance
    assert all(it.meta == {} for it in fam.evolution_view().train)  # evolution does not


def test_load_reads_the_files_and_the_family_holds_what_was_read(tiny_family):
    """Family.load reads and checks the directory (read_family); the family is made from what it read."""
    from vx.families.family import FamilyData, read_family

    data = read_family(tiny_family)
    assert isinstance(data, FamilyData) and set(data.splits) == {"train", "dev", "locked"}
    loaded, made, shorthand = Family.load(tiny_family), Family(data), Family(tiny_family)
    for fam in (loaded, made, shorthand):
        assert fam.counts() == {"train": len(data.splits["train"]), "dev": len(data.splits["dev"]), "locked": 4}
        assert fam.tasks == data.tasks and fam.seed_text == data.seed_text
        assert fam.pool().names == loaded.pool().names
    with pytest.raises(PermissionError):
        made.split("locked")
