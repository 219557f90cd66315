"""benchmarks/bench_apply.py's comparison with evalplus's evaluator (``--evalplus`` crashed with
``AttributeError: ... no attribute '_override'``). Skips without evalplus or the shared data."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_apply", ROOT / "benchmarks" / "bench_apply.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_evalplus_labels_codet_programs_and_the_ratios_are_reported():
    pytest.importorskip("evalplus")
    bench = load_bench()
    if not bench.CODET.is_dir() or not (bench.DATA / "evalplus").is_dir():
        pytest.skip("needs ../shared/data (CodeT samples and the HumanEval+ release)")
    programs = [p for p in bench.load_codet(1) if p[1] in ("HumanEval/0", "HumanEval/2")]
    secs, expected, labels = bench.label_evalplus(programs, 1)
    assert set(labels) == {i for i, _, _ in programs} and set(labels.values()) <= {"pass", "fail"}
    assert secs > 0 and expected > 0
    rows = [
        {"what": "label", "by": "evalplus", "jobs": 1, "data": "codet x1", "items_per_s": 50.0, "_labels": labels},
        {"what": "grade", "data": "codet x1", "layer": "forkserver", "jobs": 1, "items_per_s": 25.0},
        {
            "what": "label",
            "by": "vx",
            "data": "codet x1",
            "layer": "forkserver",
            "jobs": 1,
            "items_per_s": 100.0,
            "_labels": labels,
        },
    ]
    out: list[dict] = []
    bench._agreement(rows, out.append)
    ratios = {r["of"]: r["ratio"] for r in out if r["what"] == "ratio to evalplus"}
    assert ratios == {"vx grade": 0.5, "vx label": 2.0}
    assert any(r["what"] == "label agreement" and r["agree"] == len(labels) for r in out)
