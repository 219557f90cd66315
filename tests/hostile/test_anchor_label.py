"""`vx anchor label` against a hostile family folder, in the attacker's words:
"make anchor.jsonl a FIFO and the command hangs; a garbage line, a record labelled 'banana', a `[1, 2]`
line or a directory in its place give a traceback; `0.7` is refused although --help offers probability
labels; and two of three labels run at once fail with 'invalid TOML: Cannot overwrite a value'"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main
from vx.families.anchoring import anchor_log
from vx.families.family import Family

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


@pytest.fixture
def fam(tmp_path) -> Path:
    """The evo fixture made disjoint by task, as a builder writes it: train holds the attempts at t2 only,
    so a label moves their task-mates to peers.jsonl and names it in family.toml."""
    dst = tmp_path / "evo"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))

    def rows(name):
        return [line for line in (dst / name).read_text(encoding="utf-8").split("\n") if line.strip()]

    (dst / "train.jsonl").write_text(
        "\n".join(r for r in rows("train.jsonl") if json.loads(r)["task"] == "t2") + "\n", encoding="utf-8"
    )
    (dst / "locked.jsonl").write_text(
        "\n".join(r for r in rows("locked.jsonl") if json.loads(r)["task"] != "t2") + "\n", encoding="utf-8"
    )
    return dst


def label(fam: Path, item: str, value: str):
    return CliRunner().invoke(main, ["anchor", "label", str(fam), item, value])


def clean_error(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    flat = " ".join(res.output.split())  # the message is wrapped at the terminal's width (long tmp paths)
    for needle in needles:
        assert " ".join(needle.split()) in flat, res.output


def test_a_fifo_as_the_anchor_log_is_refused_at_once(fam):
    os.mkfifo(fam / "anchor.jsonl")
    clean_error(label(fam, "tr2", "pass"), "anchor.jsonl", "FIFO")
    clean_error(CliRunner().invoke(main, ["anchor", "log", str(fam)]), "anchor.jsonl", "FIFO")


def test_a_directory_as_the_anchor_log_is_refused(fam):
    (fam / "anchor.jsonl").mkdir()
    clean_error(label(fam, "tr2", "pass"), "anchor.jsonl", "directory")


@pytest.mark.parametrize(
    "line, says",
    [
        (
            "{garbage",
            "anchor.jsonl:2: malformed JSON (Expecting property name enclosed in double quotes at column 2); fix",
        ),
        ("[1, 2]", "anchor.jsonl:2: expected a label record (a JSON object), got list"),
        ('{"item": "tr3", "label": "banana", "status": "pending"}', "anchor.jsonl:2: label 'banana' must be"),
        ('{"item": 7, "label": "pass", "status": "pending"}', "anchor.jsonl:2: a label record needs the item's id"),
        ('{"item": "tr3", "label": "pass", "status": "maybe"}', "anchor.jsonl:2: status 'maybe'"),
    ],
)
def test_a_damaged_anchor_log_is_a_clear_error_naming_its_line(fam, line, says):
    good = {"time": "2026-01-01T00:00:00Z", "item": "tr9", "task": "t2", "label": "fail", "status": "pending"}
    (fam / "anchor.jsonl").write_text(json.dumps(good) + "\n" + line + "\n", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in fam.iterdir() if p.is_file()}
    clean_error(label(fam, "tr2", "pass"), says, "fix or delete that line" if "JSON line" not in says else "")
    clean_error(CliRunner().invoke(main, ["anchor", "log", str(fam)]), says)
    assert {p.name: p.read_bytes() for p in fam.iterdir() if p.is_file()} == before  # nothing changed


def test_a_probability_label_is_accepted_as_help_offers(fam):
    assert "probability of pass" in CliRunner().invoke(main, ["anchor", "label", "--help"]).output
    res = label(fam, "tr2", "0.7")
    assert res.exit_code == 0, res.output
    dev = {it.id: it for it in Family(fam).split("dev").items}
    assert dev["tr2"].label == 0.7
    row = next(
        json.loads(x)
        for x in (fam / "dev.jsonl").read_text(encoding="utf-8").split("\n")
        if x.strip() and json.loads(x)["id"] == "tr2"
    )
    assert row["label"] == 0.7  # a number, a soft label, as docs/design.md §4 defines dev.jsonl's
    for bad in ("banana", "1.5", "nan", "inf", "-0.1"):
        clean_error(CliRunner().invoke(main, ["anchor", "label", str(fam), "tr8", "--", bad]), "is not a label")


def test_three_labels_at_once_all_succeed(fam):
    items = ["tr2", "tr14", "tr26"]
    ids = [json.loads(x)["id"] for x in (fam / "train.jsonl").read_text(encoding="utf-8").split("\n") if x.strip()]
    assert set(items) <= set(ids)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "vx.cli.main", "anchor", "label", str(fam), item, lab],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for item, lab in zip(items, ["pass", "fail", "0.7"])
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    fam_now = Family(fam)
    dev = {it.id: it.label for it in fam_now.split("dev").items}
    assert dev["tr2"] == 1.0 and dev["tr14"] == 0.0 and dev["tr26"] == 0.7
    assert (fam / "family.toml").read_text(encoding="utf-8").count("peers =") == 1
    assert sorted(r["item"] for r in anchor_log(fam) if r["status"] == "moved") == sorted(items)
