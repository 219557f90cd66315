"""`vx anchor suggest|label|log`: where ten labels tell most (vx.evolve.anchor), through the API and the CLI."""

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from vx.cli.main import main
from vx.evolve.anchor import suggest
from vx.families.family import Family

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


def test_suggestions_are_unlabeled_train_items_one_per_task_with_their_evidence(evo):
    fam = Family(evo)
    train_ids = set(fam.split("train").ids)
    res = suggest(evo, n=6, rounds=1, jobs=1)
    assert 0 < len(res.items) <= 6
    assert all(s.item in train_ids for s in res.items)  # never dev, never locked
    assert len({s.task for s in res.items}) == len(res.items)
    assert all(s.evidence and s.why for s in res.items)
    assert [s.score for s in res.items] == sorted((s.score for s in res.items), reverse=True)
    # the items that would change the choice between the elites come first
    changing = [s for s in res.items if "would change the choice" in s.why]
    assert changing and res.items[0] in changing
    # no op's lone drawbacks take more than half of the places
    lone = [s.why.split("only ")[1].split(" fires")[0] for s in res.items if "only " in s.why]
    assert all(lone.count(o) <= 3 for o in set(lone))
    # deterministic
    again = suggest(evo, n=6, rounds=1, jobs=1)
    assert [s.item for s in again.items] == [s.item for s in res.items]


def test_the_locked_split_changes_no_suggestion(evo, tmp_path):
    other = tmp_path / "flipped"
    shutil.copytree(evo, other)
    path = other / "locked.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text(
        "".join(json.dumps({**r, "label": "pass" if r["label"] == "fail" else "fail"}) + "\n" for r in rows)
    )
    a, b = suggest(evo, n=5, rounds=1, jobs=1), suggest(other, n=5, rounds=1, jobs=1)
    assert [s.as_dict() for s in a.items] == [s.as_dict() for s in b.items]


def test_the_cli_suggests_labels_and_logs(evo):
    runner = CliRunner()
    res = runner.invoke(
        main, ["anchor", "suggest", str(evo), "-n", "2", "--rounds", "1", "-j", "1", "--no-cache", "--json"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["schema"] == "vx-anchor-suggest/1" and len(doc["suggestions"]) == 2
    item = doc["suggestions"][0]["item"]
    res = runner.invoke(main, ["anchor", "suggest", str(evo), "-n", "1", "--rounds", "1", "-j", "1", "--no-cache"])
    assert res.exit_code == 0 and "vx anchor label" in res.output and "why:" in res.output
    res = runner.invoke(main, ["anchor", "label", str(evo), item, "fail", "--note", "checked by hand"])
    assert res.exit_code == 0 and "moved into dev as fail" in res.output
    res = runner.invoke(main, ["anchor", "log", str(evo)])
    assert res.exit_code == 0 and item in res.output and "checked by hand" in res.output
    locked = Family(evo).audit().split.ids[0]
    res = runner.invoke(main, ["anchor", "label", str(evo), locked, "pass"])
    assert res.exit_code == 2 and "is a locked item" in res.output
