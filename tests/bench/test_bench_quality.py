"""benchmarks/bench_quality.py's evaluation on the small synthetic `evo` family (no MBPP data needed)."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "evo"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_quality", ROOT / "benchmarks" / "bench_quality.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def family_copy(tmp_path: Path, name: str, flip_locked: bool = False) -> Path:
    d = tmp_path / name
    shutil.copytree(FIXTURE, d)
    if flip_locked:
        path = d / "locked.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        labels = ["pass" if r["label"] == "fail" else "fail" for r in rows]  # every locked label flipped
        path.write_text("".join(json.dumps({**r, "label": lab}) + "\n" for r, lab in zip(rows, labels)))
    return d


ABLATIONS = (("vx evolved (anchored)", None), ("vx naive", "naive"))


def evaluate(bench, family: Path, tmp_path: Path, tag: str):
    from vx.ops.cache import VerdictCache

    return bench.evaluate_family(
        family,
        seed=0,
        rounds=1,
        runs_dir=tmp_path / f"runs-{tag}",
        jobs=1,
        cache=VerdictCache(tmp_path / "verdicts.sqlite"),
        ablations=ABLATIONS,
        label=tag,
    )


def test_every_method_is_scored_on_the_same_locked_items_and_locked_labels_change_no_choice(tmp_path):
    bench = load_bench()
    a = evaluate(bench, family_copy(tmp_path, "a"), tmp_path, "a")
    b = evaluate(bench, family_copy(tmp_path, "b", flip_locked=True), tmp_path, "b")
    expected = {
        "hand-written seed",
        "best single op",
        "majority vote",
        "SPADE (min. conjunction)",
        "logistic regression (dev)",
        "vx evolved (anchored)",
        "vx naive",
    }
    assert expected <= set(a["methods"])
    n_locked = len(a["locked_tasks"])
    assert n_locked == 40
    for name, row in a["methods"].items():
        if "missing" in row:  # a Snorkel peer without the bench extra: reported, never faked
            assert "vx-verifiers[bench]" in row["missing"]
            continue
        assert len(row["correct"]) == n_locked
        assert 0.0 <= row["accuracy"] <= 1.0 and 0.0 <= row["train_pass_share"] <= 1.0
        assert 0.0 <= row["dev_recall_weighted"] <= 1.0
        assert row["accuracy"] == pytest.approx(sum(row["correct"]) / n_locked)
        # with every locked label flipped every method chooses exactly the same …
        assert b["methods"][name]["detail"] == row["detail"], name
        assert b["methods"][name]["train_pass_share"] == row["train_pass_share"], name
        # … and is scored against the other labels: every locked verdict is now wrong where it was right
        assert [1 - c for c in row["correct"]] == b["methods"][name]["correct"], name


def test_prebuilt_families_run_alone_for_every_seed_and_print_what_evolution_did(tmp_path, capsys):
    bench = load_bench()
    for seed in (0, 1):
        family_copy(tmp_path / f"s{seed}", "evo")
    truth = {json.loads(line)["id"]: "fail" for line in (FIXTURE / "train.jsonl").read_text().splitlines()[:30]}
    (tmp_path / "s0" / bench.TRUTH_FILE).write_text(json.dumps(truth))
    out = tmp_path / "q.md"
    args = [
        "--family-dir",
        str(tmp_path / "s{seed}" / "evo"),
        "--seeds",
        "0",
        "1",
        "--rounds",
        "1",
        "--jobs",
        "1",
        "--work",
        str(tmp_path / "work"),
        "--out",
        str(out),
        "--permutations",
        "200",
    ]
    specs = bench.family_specs(
        type(
            "A",
            (),
            {
                "families": None,
                "family_dir": [args[1]],
                "dev_draw": "gross",
                "samples_dir": tmp_path / "none",
                "humaneval_dir": tmp_path / "none",
                "codet_dir": tmp_path / "none",
                "subset": "all",
                "per_task": 10,
                "codet_locked": 540,
            },
        )()
    )
    assert [s.kind for s in specs] == ["prebuilt"]  # no default family runs beside a prebuilt one
    assert specs[0].prebuilt_dir(1) == tmp_path / "s1" / "evo"
    assert bench.main(args) == 0
    text = out.read_text()
    data = json.loads(out.with_suffix(".json").read_text())
    runs = next(iter(data.values()))["runs"]
    assert [r["seed"] for r in runs] == [0, 1]  # every seed, not only the first
    assert "evolution per seed" in text and "objective by round" in text
    assert "seed 1, vx evolved (anchored)" in text
    # the design figures come from the truth file beside the family (seed 0 only here: not every seed has one)
    assert runs[0]["methods"]["hand-written seed"]["design"]["items"] == 30
    assert runs[1]["methods"]["hand-written seed"]["design"] == {}
    assert "fixed rule" not in text  # the evo pool has no peer op


def test_bench_anchor_keeps_two_labels_of_the_default_draw(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_anchor", ROOT / "benchmarks" / "bench_anchor.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from vx.families.family import Family

    kept = mod.reduced_copy(FIXTURE, tmp_path / "arm")
    dev = Family(tmp_path / "arm").split("dev").items
    assert [it.id for it in dev] == kept and sorted(it.hard_label() for it in dev) == ["fail", "pass"]
    assert Family(tmp_path / "arm").audit().split.ids == Family(FIXTURE).audit().split.ids  # locked untouched
