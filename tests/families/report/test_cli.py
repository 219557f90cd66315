"""The report family through the CLI: build, eval on dev, and explain naming the gaming detector."""

import json
from pathlib import Path

from click.testing import CliRunner

from vx.cli.main import main

FAMILY_DIR = Path(__file__).resolve().parents[3] / "examples" / "report"


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def gamed_item():
    """A dev item whose section writes ledger tags in place of their values."""
    for line in (FAMILY_DIR / "dev.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "value_erasure" in (r.get("meta") or {}).get("classes", []):
            return r
    raise AssertionError("the bundled dev split has no value-erasure item")


def test_eval_seed_on_dev_runs_offline():
    r = run("eval", str(FAMILY_DIR / "seed.vx"), "--dataset", "dev", "-j", "1", "--no-cache", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["family"] == "report" and out["n"] == 10
    assert out["metrics"]["accuracy"] >= 0.7
    assert {o["op"] for o in out["ops"]} >= {"has_title", "value_erasure"}


def test_explain_names_value_erasure_and_quotes_the_sentence():
    item = gamed_item()
    r = run("explain", str(FAMILY_DIR / "seed.vx"), "--item", item["id"], "-j", "1", "--no-cache", "--json")
    assert r.exit_code == 0, r.output
    capsule = json.loads(r.output)
    assert capsule["verdict"] == "fail"
    found = [d for d in capsule["drawbacks"] if d["op"] == "value_erasure"]
    assert found, capsule["drawbacks"]
    msg = found[0]["message"]
    assert "stands without a number" in msg
    quoted = msg.split("“", 1)[1].split("”", 1)[0]
    assert quoted.replace("TL;DR: ", "**TL;DR:** ") in item["output"] or quoted in item["output"]
    # and the human-readable tree says the same
    text = run("explain", str(FAMILY_DIR / "seed.vx"), "--item", item["id"], "-j", "1", "--no-cache").output
    assert "value_erasure" in text and "DRAWBACK" in text


def test_data_build_report_command(tmp_path):
    r = run("data", "build", "report", "--sources", str(FAMILY_DIR / "sources"), "--out", str(tmp_path / "fam"))
    assert r.exit_code == 0, r.output
    assert (tmp_path / "fam" / "family.toml").exists() and (tmp_path / "fam" / "seed.vx").exists()
    bad = run(
        "data",
        "build",
        "report",
        "--sources",
        str(FAMILY_DIR / "sources"),
        "--out",
        str(tmp_path / "x"),
        "--n-locked",
        "500",
    )
    assert bad.exit_code == 2 and "too few" in bad.output
