"""benchmarks/selection.py: the expected value of a ranking's choice, the pooled lift retention, the baseline
ops' top sets, and that the quality benchmark reports every method's choice without reading locked labels."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


sel = load("selection")


def test_a_ranking_keeps_the_expected_value_of_its_tied_top():
    truth = np.array([1.0, 0.0, 0.0, 1.0])
    assert sel.top_value([(0,), (0,), (1,), (1,)], truth, [0, 1, 2, 3]) == 0.5  # a random one of the first two
    assert sel.top_value([(1,), (1,), (1,), (0,)], truth, [0, 1, 2, 3]) == 1.0
    assert sel.top_value([(0, "b"), (0, "a"), (1, "c"), (1, "d")], truth, [0, 1]) == 0.0  # the digest decides


def test_lift_retention_is_pooled_over_tasks():
    assert sel.retention([1.0, 0.5], [0.5, 0.5], [1.0, 1.0]) == pytest.approx(0.5)
    assert sel.retention([0.0], [0.5], [1.0]) == pytest.approx(-1.0)  # worse than random
    assert math.isnan(sel.retention([1.0, 0.0], [1.0, 0.0], [1.0, 0.0]))  # no task leaves room


def test_baseline_op_top_sets():
    # CodeT's op abstains at a task with no signal: every attempt is in its top set
    assert sel.op_keys(np.array([0, 1, -1]), abstain_first=True) == [(0,), (1,), (0,)]
    # the plurality op abstains on an attempt that does not run: it takes no part
    assert sel.op_keys(np.array([0, 1, -1]), abstain_first=False) == [(0,), (1,), (2,)]
    assert sel.vx_keys(np.array([1, 0]), np.array([0.0, 0.5]), np.array([3, 1]), ["x", "y"]) == [
        (2, -0.0, -3, "x"),
        (0, -0.5, -1, "y"),
    ]


def test_the_quality_benchmark_reports_every_method_s_choice(tmp_path):
    from vx.ops.cache import VerdictCache

    bench = load("bench_quality")
    fixture = ROOT / "tests" / "fixtures" / "evo"
    import shutil

    fam = tmp_path / "evo"
    shutil.copytree(fixture, fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    out = bench.evaluate_family(
        fam,
        seed=0,
        rounds=1,
        runs_dir=tmp_path / "runs",
        jobs=1,
        cache=VerdictCache(tmp_path / "v.sqlite"),
        ablations=(("vx evolved (anchored)", None),),
        label="evo",
    )
    locked = out["selection"]["locked"]
    methods = set(locked["selected"])
    assert {"vx evolved (anchored)", "hand-written seed", "random", "oracle", "best single op"} <= methods
    assert "vx evolved (anchored) (verdict only)" in methods
    # the same ranking without support, where the family's clusters give one
    assert ("vx evolved (anchored) (no support)" in methods) == (out["selection"]["support_known"] > 0)
    for task in locked["tasks"]:
        assert locked["selected"]["random"][task] <= locked["selected"]["oracle"][task]
        assert all(0.0 <= locked["selected"][m][task] <= 1.0 for m in methods)
    lines, summary = sel.summarize([out], 100, __import__("vx.metrics").metrics.paired_permutation_test)
    assert lines and "lift retention" in lines[0] and summary["methods"]["oracle"]["pooled_retention"] == 1.0


def test_the_per_category_table_pools_each_category_over_seeds_and_tasks():
    def run(values: dict[str, dict[str, float]]) -> dict:
        tasks = ["a", "b", "c"]
        return {
            "selection": {
                "locked": {
                    "tasks": tasks,
                    "category": {"a": "simple", "b": "simple", "c": "relevance"},
                    "selected": values,
                }
            }
        }

    seed0 = {
        sel.REF: {"a": 1.0, "b": 0.0, "c": 1.0},
        sel.PLURALITY: {"a": 1.0, "b": 1.0, "c": 0.0},
        sel.RANDOM: {"a": 0.5, "b": 0.5, "c": 0.5},
        sel.ORACLE: {"a": 1.0, "b": 1.0, "c": 1.0},
    }
    seed1 = {**seed0, sel.REF: {"a": 1.0, "b": 1.0, "c": 1.0}}
    lines, table = sel.summarize_categories([run(seed0), run(seed1)])
    assert table["simple"]["tasks"] == 4 and table["relevance"]["tasks"] == 2
    # simple: vx 3 of 4 against random 2 of 4 and the oracle 4 of 4: half the lift; the plurality pick all of it
    assert table["simple"][sel.REF] == {"pass_at_1": 0.75, "retention": pytest.approx(0.5)}
    assert table["simple"][sel.PLURALITY]["retention"] == pytest.approx(1.0)
    assert table["relevance"][sel.PLURALITY]["retention"] == pytest.approx(-1.0)
    assert sel.SEED not in table["simple"]  # a method missing from the runs has no column
    assert any(line.startswith("| simple | 4 | 0.750 / 0.500 | 1.000 / 1.000 | 0.500 | 1.000 |") for line in lines)
    # the family's best peer (the highest pooled pass@1 over every category) gets a column of its own
    seed0["SPADE"] = seed1["SPADE"] = {"a": 0.0, "b": 1.0, "c": 1.0}
    seed0[sel.PLURALITY] = seed1[sel.PLURALITY] = {"a": 1.0, "b": 0.0, "c": 0.0}
    seed0["best single op"] = seed1["best single op"] = {"a": 0.0, "b": 0.0, "c": 1.0}
    lines, table = sel.summarize_categories([run(seed0), run(seed1)])
    assert "SPADE" in table["simple"] and "best single op" not in table["simple"]
    assert table["relevance"]["SPADE"]["retention"] == pytest.approx(1.0)
    assert "| plurality pick (MBR-exec) | SPADE | random |" in lines[1]
    # a family whose tasks carry no category has no such table
    assert sel.summarize_categories([{"selection": {"locked": {"tasks": [], "selected": seed1}}}]) == ([], {})


def test_the_design_summary_sets_the_label_free_measure_beside_the_true_retention():
    row = sel.REF + " | drawbacks, clusters support"

    def run(consensus: float, vx: dict[str, float]) -> dict:
        return {
            "selection": {
                "design": {
                    "tasks": ["a", "b"],
                    "attempts": {"a": 3, "b": 3},
                    "selected": {row: vx, sel.RANDOM: {"a": 0.5, "b": 0.5}, sel.ORACLE: {"a": 1.0, "b": 1.0}},
                    "consensus_choice": {sel.REF: consensus},
                }
            }
        }

    runs = [run(0.5, {"a": 1.0, "b": 0.0}), run(1.0, {"a": 1.0, "b": 1.0})]
    test = __import__("vx.metrics").metrics.paired_permutation_test
    lines, summary = sel.summarize(runs, 10, test, "design")
    assert summary["consensus_choice"] == {sel.REF: pytest.approx(0.75)}
    # the consensus passes 0.75 of the choices; the true choices are right on 3 of 4 (retention 0.5)
    assert f"| {sel.REF} | 0.750 | 0.750 | 0.500 |" in lines
    # a run without the measure (no consensus given) has no such table
    del runs[0]["selection"]["design"]["consensus_choice"]
    assert "consensus_choice" not in sel.summarize(runs, 10, test, "design")[1]
