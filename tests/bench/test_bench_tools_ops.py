"""benchmarks/bench_tools_ops.py: each op's false alarms and recall per category, and the messages a person
sees when the labels are missing."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tools"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_tools_ops", ROOT / "benchmarks" / "bench_tools_ops.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rates_count_false_alarms_on_good_recall_on_bad_and_abstentions_on_both():
    bench = load_bench()
    col = np.array([1, 0, -1, 1, 1, 0, -1, 0])
    good = np.array([True, True, True, True, False, False, False, False])
    fa, rec, ab = bench.rates(col, good, ~good)
    assert (fa, rec, ab) == (50.0, 25.0, 25.0)
    fa, rec, _ = bench.rates(col, good, np.zeros(8, bool))
    assert fa == 50.0 and np.isnan(rec)


def train_ids(family: Path) -> list[str]:
    lines = (family / "train.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["id"] for line in lines if line.strip()]


def test_without_labels_it_says_where_it_looked_and_what_to_give(tmp_path, capsys):
    bench = load_bench()
    family = tmp_path / "family"
    shutil.copytree(EXAMPLE, family)
    assert bench.main([str(family)]) == 2
    err = capsys.readouterr().err
    assert f"no labels at {tmp_path / 'truth.json'}" in err and "give --truth" in err
    ids = train_ids(family)
    (tmp_path / "truth.json").write_text(json.dumps({i: "pass" for i in ids[1:]}), encoding="utf-8")
    assert bench.main([str(family)]) == 2
    err = capsys.readouterr().err
    assert "no label for 1 train item(s)" in err and ids[0] in err


def test_the_table_has_a_row_per_op_and_a_column_per_category(tmp_path, capsys):
    bench = load_bench()
    ids = train_ids(EXAMPLE)
    # the example's labels by construction: its id names the answer's kind (a correct form, a mutant)
    correct = ("python", "structured", "tagged", "alternative", "optional-spelled", "reordered", "declines")
    correct += ("declines-structured", "empty-list")
    truth = {i: "pass" if i.rsplit("#", 1)[-1] in correct else "fail" for i in ids}
    (tmp_path / "truth.json").write_text(json.dumps(truth), encoding="utf-8")
    assert bench.main([str(EXAMPLE), "--truth", str(tmp_path / "truth.json"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| op ")]
    assert {r.split(" | ")[0][2:] for r in rows} >= {"decodes", "unknown_function", "disagrees_with_peers"}
    header = next(line for line in out.splitlines() if line.startswith("| op "))
    assert all(r.count("|") == header.count("|") for r in rows)
