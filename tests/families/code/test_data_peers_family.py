"""A multi-attempt code family on disk: peers.jsonl, peer verdicts through the family, label leakage."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path

import pytest

from vx.families.family import Family, FamilyError
from vx.ops.apply import apply_ops
from vx.verifier import Verifier


def example(call: str, expected_src: str) -> dict:
    node = ast.parse(call, mode="eval").body
    args = tuple(ast.literal_eval(a) for a in node.args)
    return {
        "call": call,
        "function": node.func.id,
        "args": list(args),
        "expected": ast.literal_eval(expected_src),
        "args_src": repr(args),
        "expected_src": expected_src,
        "source": "doctest",
    }


RIGHT = "def below(l, t):\n    return all(x < t for x in l)\n"
RIGHT2 = "def below(l, t):\n    for x in l:\n        if x >= t:\n            return False\n    return True\n"
OFF = "def below(l, t):\n    return all(x <= t for x in l)\n"
WRONG = "def below(l, t):\n    return True\n"


def write(d: Path, rows: dict[str, list[dict]], toml_extra: str = "") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    tasks = [
        {
            "id": f"T/{i}",
            "prompt": "",
            "entry_point": "below",
            "examples": [example("below([1, 2, 4, 10], 100)", "True"), example("below([1, 20, 4, 10], 5)", "False")],
        }
        for i in range(6)
    ]
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    for name, items in rows.items():
        (d / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    (d / "seed.vx").write_text("(any fails_visible_example disagrees_with_peers)\n")
    (d / "family.toml").write_text(
        'name = "t"\npacks = ["code"]\nroot = "parses"\nseed = "seed.vx"\n'
        '[splits]\ntrain = "train.jsonl"\ndev = "dev.jsonl"\nlocked = "locked.jsonl"\n' + toml_extra
    )
    return d


def rows(seed: int = 0) -> dict[str, list[dict]]:
    outs = [RIGHT, RIGHT2, RIGHT, OFF, WRONG]
    rng = random.Random(seed)
    lab = lambda o: "pass" if o in (RIGHT, RIGHT2) else "fail"  # noqa: E731
    train = [{"id": f"T/0#{k}", "task": "T/0", "output": o} for k, o in enumerate(outs)]
    dev = [
        {"id": "T/1#3", "task": "T/1", "output": OFF, "label": "fail"},
        {"id": "T/2#0", "task": "T/2", "output": RIGHT, "label": "pass"},
    ]
    peers = [{"id": f"T/1#{k}", "task": "T/1", "output": o} for k, o in enumerate(outs) if k != 3] + [
        {"id": f"T/2#{k}", "task": "T/2", "output": o} for k, o in enumerate(outs) if k != 0
    ]
    locked = [
        {"id": f"T/{t}#{k}", "task": f"T/{t}", "output": o, "label": lab(o)} for t in (3, 4) for k, o in enumerate(outs)
    ]
    if seed:  # permute every label of the family
        for split in (dev, locked):
            labels = [r["label"] for r in split]
            rng.shuffle(labels)
            for r, new in zip(split, labels):
                r["label"] = new
    return {"train": train, "dev": dev, "locked": locked, "peers": peers}


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available():
    from vx.families.code import ops as O
    from vx.sandbox import SandboxUnavailable

    try:
        O.sandbox()
    except SandboxUnavailable as exc:  # pragma: no cover
        pytest.skip(f"no sandbox layer works here: {exc}")


def peer_verdicts(fam: Family) -> dict[str, tuple[int, str]]:
    pool = fam.pool()
    items = list(fam.split("train").items) + list(fam.split("dev").items) + list(fam.audit().split.items)
    app = apply_ops(
        pool,
        items,
        fam.tasks,
        jobs=1,
        progress=False,
        peers=fam.peers,
        ops=["parses", "fails_visible_example", "disagrees_with_peers", "outside_plurality"],
    )
    return {
        it.id: tuple(
            (int(app.matrix.row(it.id)[n]), app.message(it.id, n))
            for n in ("disagrees_with_peers", "outside_plurality")
        )
        for it in items
    }


def test_dev_items_are_judged_against_their_peers_and_labels_never_matter(tmp_path):
    a = Family(write(tmp_path / "a", rows(0), 'peers = "peers.jsonl"\n'))
    assert sorted(a.peers) == ["T/1", "T/2"] and len(a.peers["T/1"]) == 4
    assert set(a.evolution_view().peers) == {"T/1", "T/2"}
    va = peer_verdicts(a)
    assert va["T/1#3"][0][0] == 1, va["T/1#3"]  # the dev off-by-one disagrees with its peers
    assert va["T/2#0"][0][0] == 0 and va["T/0#3"][0][0] == 1 and va["T/3#3"][0][0] == 1
    # permuting every label of the family leaves every peer verdict identical
    b = Family(write(tmp_path / "b", rows(1), 'peers = "peers.jsonl"\n'))
    assert [it.label for it in b.audit().labeled_split().items] != [it.label for it in a.audit().labeled_split().items]
    assert peer_verdicts(b) == va
    # without the peers file the dev item has nobody to compare with
    c = Family(write(tmp_path / "c", {k: v for k, v in rows(0).items() if k != "peers"}))
    assert peer_verdicts(c)["T/1#3"][0][0] == -1


def test_the_verifier_of_a_family_grades_an_item_with_its_task_s_other_attempts(tmp_path):
    fam = Family(write(tmp_path / "a", rows(0), 'peers = "peers.jsonl"\n'))
    v = Verifier.from_family(fam)
    locked = {it.id: it for it in fam.audit().split.items}
    g = v.explain(locked["T/3#3"])  # graded alone, but the family supplies the other attempts
    assert g.verdict.name == "FAIL" and g.drawbacks[0][0] == "disagrees_with_peers"
    assert "other attempts that pass the visible example return False" in g.drawbacks[0][1]


def test_peers_of_a_train_task_are_refused(tmp_path):
    bad = rows(0)
    bad["peers"].append({"id": "T/0#9", "task": "T/0", "output": RIGHT})
    with pytest.raises(FamilyError, match="dev tasks only"):
        Family(write(tmp_path / "bad", bad, 'peers = "peers.jsonl"\n'))


def test_tasks_with_model_written_tests_as_the_builder_writes_them_load(tmp_path):
    """The builder stores CodeT's test cases per task (``model_tests``); the family's task schema
    must accept exactly that record, and say what is wrong with a broken one."""
    from vx.families.code.data.codet import model_test_records

    records, skipped = model_test_records(
        [
            ["assert below([1, 2], 3) == True", "assert below([5], 3) == False"],
            ["assert below([1, 2], 3) == True", "print(1)"],
        ],
        "below",
    )
    assert skipped == 1 and records[0]["count"] == 2
    d = write(tmp_path / "fam", rows(0), 'peers = "peers.jsonl"\n')
    tasks = [json.loads(line) for line in (d / "tasks.jsonl").read_text().splitlines()]
    for t in tasks:
        t["model_tests"] = records
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    fam = Family(d)
    assert fam.tasks["T/1"]["model_tests"][0]["expected_src"] == "True"
    tasks[2]["model_tests"] = [{"args_src": "([1],)"}]
    (d / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    with pytest.raises(FamilyError, match=r"tasks.jsonl:3: .*expected_src"):
        Family(d)


def test_vx_explain_shows_the_probes_and_the_peers(tmp_path):
    import json as _json

    from click.testing import CliRunner

    from vx.cli.main import main

    d = write(tmp_path / "a", rows(0), 'peers = "peers.jsonl"\n')
    r = CliRunner().invoke(
        main, ["explain", str(d / "seed.vx"), "--item", "T/1#3", "-j", "1", "--no-cache"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert "peers: 4 other attempt(s) at T/1" in r.output
    assert "generated probes (" in r.output and "boundary: below([1, 2, 4, 10], 10)" in r.output
    assert "inferred domain" in r.output and "disagrees_with_peers" in r.output
    r = CliRunner().invoke(
        main,
        ["explain", str(d / "seed.vx"), "--item", "T/1#3", "-j", "1", "--no-cache", "--json"],
        catch_exceptions=False,
    )
    data = _json.loads(r.output)
    assert data["other_attempts"] == 4 and len(data["task_inputs"]["generated probes"]) > 20
    assert data["verdict"] == "fail"


def test_bare_bodies_get_the_prompt_prepended_and_are_counted(tmp_path):
    from collections import Counter

    from vx.families.code.data.attempts import read_attempts
    from vx.families.code.data.tasks import Task

    task = Task("HumanEval/0", "humaneval+", 'def f(x):\n    """doc"""\n', "f", "def f(x):\n    return x\n")
    path = tmp_path / "m.jsonl"
    path.write_text(
        json.dumps({"task_id": "HumanEval/0", "solution": "    return x\n"})
        + "\n"
        + json.dumps({"task_id": "HumanEval/0", "solution": "def f(x):\n    return x\n"})
        + "\n"
        + json.dumps({"task_id": "HumanEval/99", "solution": "x"})
        + "\n"
    )
    stats: Counter = Counter()
    attempts, sources = read_attempts([path], {"HumanEval/0": task}, codet_tasks=None, prepend_prompt=True, stats=stats)
    programs = [p for p, _ in attempts["HumanEval/0"]]
    assert programs[0] == task.prompt + "    return x\n" and programs[1].startswith("def f")
    assert stats["prompt_prepended"] == 1 and stats["attempts_of_unknown_tasks"] == 1
    assert sources[0]["attempts"] == 2 and sources[0]["format"] == "one-per-task"
    stats2: Counter = Counter()
    kept, _ = read_attempts([path], {"HumanEval/0": task}, codet_tasks=None, prepend_prompt=False, stats=stats2)
    assert kept["HumanEval/0"][0][0] == "    return x\n" and stats2["bare_bodies_kept"] == 1
