"""`vx anchor label`: a person's label moves an item into dev (vx.families.anchoring)."""

import json
from pathlib import Path

import pytest

from vx.families.anchoring import AnchorError, anchor_log, label_item
from vx.families.family import Family

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


def ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def _disjoint(evo: Path) -> None:
    """The evo fixture shares tasks between splits; drop the train items of dev and locked tasks, as a
    builder's family is disjoint by task."""
    held = {
        json.loads(line)["task"]
        for name in ("dev.jsonl", "locked.jsonl")
        for line in (evo / name).read_text().splitlines()
        if line.strip()
    }
    held -= {"t2"}
    rows = [line for line in (evo / "train.jsonl").read_text().splitlines() if json.loads(line)["task"] not in held]
    (evo / "train.jsonl").write_text("\n".join(rows) + "\n")
    locked = [line for line in (evo / "locked.jsonl").read_text().splitlines() if json.loads(line)["task"] != "t2"]
    (evo / "locked.jsonl").write_text("\n".join(locked) + "\n")


def test_a_train_item_moves_into_dev_and_its_task_mates_become_peers(evo):
    _disjoint(evo)
    train_before = ids(evo / "train.jsonl")
    locked_before = (evo / "locked.jsonl").read_bytes()
    res = label_item(evo, "tr2", "pass", note="read it: fine")
    assert res.moved and res.label == "pass" and res.previous is None
    fam = Family(evo)
    dev = {it.id: it for it in fam.split("dev").items}
    assert dev["tr2"].label == 1.0
    task_of = {
        json.loads(line)["id"]: json.loads(line)["task"] for line in (FIXTURE / "train.jsonl").read_text().splitlines()
    }
    mates = [i for i in train_before if i != "tr2" and task_of[i] == dev["tr2"].task]
    assert res.peers_moved == len(mates) > 0
    assert set(mates) <= set(ids(evo / "peers.jsonl")) and not set(mates) & set(ids(evo / "train.jsonl"))
    assert dev["tr2"].task in fam.peers
    assert (evo / "locked.jsonl").read_bytes() == locked_before  # the locked split is never touched
    log = anchor_log(evo)
    assert log[-1]["item"] == "tr2" and log[-1]["note"] == "read it: fine" and log[-1]["status"] == "moved"
    assert 'peers = "peers.jsonl"' in (evo / "family.toml").read_text()


def test_relabelling_a_dev_item_records_the_previous_label(evo):
    res = label_item(evo, "dv5", "fail")
    assert res.moved and res.previous == "pass"
    assert {it.id: it.label for it in Family(evo).split("dev").items}["dv5"] == 0.0
    assert anchor_log(evo)[-1]["previous"] == "pass"


def test_a_locked_item_is_refused_and_an_unknown_one_gets_the_nearest_ids(evo):
    locked = ids(evo / "locked.jsonl")[0]
    with pytest.raises(AnchorError, match="is a locked item"):
        label_item(evo, locked, "pass")
    with pytest.raises(AnchorError, match="did you mean tr2"):
        label_item(evo, "tr2x", "pass")
    with pytest.raises(AnchorError, match="is not a label"):
        label_item(evo, "tr2", "maybe")


def test_a_task_of_the_locked_split_keeps_its_train_attempts(evo):
    res = label_item(evo, "tr2", "pass")  # in the fixture, t2 also has locked items
    assert res.moved and res.peers_moved == 0 and not (evo / "peers.jsonl").exists()
    Family(evo)


def test_a_label_waits_while_dev_would_hold_one_class_only(evo):
    rows = [
        line
        for line in (evo / "dev.jsonl").read_text().splitlines()
        if json.loads(line)["label"] == "fail" or json.loads(line)["id"] == "dv5"
    ]
    (evo / "dev.jsonl").write_text("\n".join(rows) + "\n")  # five failures and one pass (dv5)
    first = label_item(evo, "dv5", "fail")  # relabelling the only pass would leave no pass
    assert not first.moved and "pending" in first.summary()
    assert {it.id: it.label for it in Family(evo).split("dev").items}["dv5"] == 1.0  # unchanged for now
    second = label_item(evo, "tr2", "pass")
    assert second.moved and second.pending_moved == ("dv5",)
    dev = {it.id: it.label for it in Family(evo).split("dev").items}
    assert dev["tr2"] == 1.0 and dev["dv5"] == 0.0
    assert [r["status"] for r in anchor_log(evo)] == ["pending", "moved"]


def test_a_move_that_breaks_the_family_is_undone(evo, monkeypatch):
    import vx.families.anchoring as anchoring

    before = {p.name: p.read_bytes() for p in evo.iterdir() if p.is_file()}
    real = anchoring.Family
    calls = []

    def failing(d):
        calls.append(d)
        if len(calls) > 1:
            raise anchoring.FamilyError(["simulated damage"], str(d))
        return real(d)

    monkeypatch.setattr(anchoring, "Family", failing)
    with pytest.raises(anchoring.FamilyError, match="simulated damage"):
        label_item(evo, "tr2", "pass")
    after = {p.name: p.read_bytes() for p in evo.iterdir() if p.is_file()}
    assert after == before
