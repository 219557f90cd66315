"""No lost results: every writer takes any ``str`` Python can hold. A lone
surrogate (what a JSON ``\\udXXX`` escape produces) in an item id or an output used to kill
`vx evolve` at its final write (the run stayed "running", no .vx), make `vx eval --json` print
nothing (or invalid UTF-8), and abort a whole `vx data build`."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from vx.evolve.store import RunStore
from vx.text import json_dumps, storable

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def vx(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """The real command line in a process of its own (its real stdout, whose encoding is the test)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "vx.cli.main", *args], cwd=cwd, env=env, capture_output=True, timeout=timeout
    )


def surrogate_family(tmp_path: Path) -> Path:
    """The evo family with a lone surrogate in a train id, a dev id and a dev output."""
    fam = tmp_path / "evo"
    shutil.copytree(FIXTURES / "evo", fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    for split, edits in (("train", {"id": "tr\udc80x"}), ("dev", {"id": "dv\udc81x", "output": "odd \udc80 text"})):
        path = fam / f"{split}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows[0].update(edits)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")  # ASCII: \udXXX escapes
    return fam


def test_text_helpers_keep_distinct_surrogates_distinct_and_json_exact() -> None:
    assert storable("a\udc80") != storable("a\udc81") and storable("ok é") == "ok é"
    assert json.loads(json_dumps({"k\udc80": ["v\ud800"]})) == {"k\udc80": ["v\ud800"]}
    json_dumps({"k\udc80": ["v\ud800"]}).encode("utf-8")


def test_a_surrogate_item_id_does_not_lose_a_finished_evolve_run(tmp_path: Path) -> None:
    fam = surrogate_family(tmp_path)
    run = tmp_path / "run.vxrun.sqlite"
    res = vx(
        "evolve", str(fam), "--rounds", "1", "-q", "-j", "1", "--no-cache", "--no-llm", "--out", str(run), cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert (tmp_path / "run.vx").read_text(encoding="utf-8")
    with RunStore(run) as store:
        assert store.meta()["status"] == "finished"
        ids = {v["item"] for v in store.verdicts()}
    assert storable("dv\udc81x") in ids
    res = vx("runs", "verify", str(run), cwd=tmp_path)
    assert res.returncode == 0, res.stdout.decode(errors="replace")[-2000:]
    res = vx("report", str(run), "-o", str(tmp_path / "run.html"), cwd=tmp_path)
    assert res.returncode == 0 and (tmp_path / "run.html").read_bytes().decode("utf-8")


def test_eval_json_with_a_surrogate_output_prints_valid_json(tmp_path: Path) -> None:
    fam = surrogate_family(tmp_path)
    res = vx("eval", str(fam / "seed.vx"), "--family", str(fam), "--json", "--no-cache", "-j", "1", cwd=tmp_path)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    doc = json.loads(res.stdout.decode("utf-8"))  # strict UTF-8: no raw surrogate bytes
    items = {it["id"]: it for it in doc["items"]}
    assert items["dv\udc81x"]["output"] == "odd \udc80 text"  # exact: JSON escapes read back as the same str


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_exports_and_html_take_a_surrogate(tmp_path: Path, suffix: str) -> None:
    fam = surrogate_family(tmp_path)
    out, page = tmp_path / f"rows{suffix}", tmp_path / "page.html"
    res = vx(
        "eval",
        str(fam / "seed.vx"),
        "--family",
        str(fam),
        "--no-cache",
        "-j",
        "1",
        "-o",
        str(out),
        "--html",
        str(page),
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-2000:]
    assert "dv" in out.read_bytes().decode("utf-8") and page.read_bytes().decode("utf-8")


def test_the_run_store_writes_and_reads_back_any_str(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with RunStore(path, create=True) as store:
        store.set_meta({"format": "vx-run/1", "family": "f\udc80"})
        store.write_final(
            [("dev", "id\udc80", "pass", "pass", 1.0, None)],
            [("dev", "id\udc80", "op", "drawback", "msg \ud800")],
            {"note\udc80": "v\udc80"},
            {"status": "finished"},
            [("op", "dev", "id\udc80", "clean")],
        )
    db = sqlite3.connect(path)
    assert db.execute("SELECT item FROM verdicts").fetchone()[0] == "id\\udc80"
    assert json.loads(db.execute("SELECT value FROM summary").fetchone()[0]) == "v\udc80"


def test_the_teacher_shows_a_huge_int_instead_of_aborting(tmp_path: Path) -> None:
    """A candidate returning 10**5000 on a probe: repr() refuses it; the teacher describes it."""
    from vx.families.code.data.groundtruth import Grader
    from vx.families.code.data.tasks import Task
    from vx.families.code.data.teacher import teach
    from vx.families.code.examples import Example

    example = Example(
        call="inc(1)", function="inc", args=[1], expected=2, args_src="(1,)", expected_src="2", source="doctest"
    )
    task = Task(
        id="T/9",
        dataset="mbpp+",
        prompt="",
        entry_point="inc",
        reference="def inc(x):\n    return x + 1\n",
        examples=(example,),
        base_inputs=([1],),
        plus_inputs=(),
    )
    grader = Grader({task.id: task}, version="writers", cache_dir=tmp_path, workers=1)
    assert grader.prepare() == {}
    label = teach(grader, task, "def inc(x):\n    return x + 1 if x == 1 else 10**5000\n")
    assert label.label == "fail"
    disagreement = label.detail.get("teacher_probe_disagreement")
    assert disagreement is not None and "digits" in disagreement["candidate"]


@pytest.mark.data
def test_data_build_skips_a_surrogate_sample_with_a_listed_reason(tmp_path: Path) -> None:
    from conftest import shared_data

    samples = shared_data("samples", "mbpp", "codellama.jsonl")
    plus = shared_data("evalplus")
    import gzip

    in_plus = {json.loads(line)["task_id"] for line in gzip.open(plus / "MbppPlus-v0.2.0.jsonl.gz", "rt")}
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if r["task_id"].replace("MBPP", "Mbpp") in in_plus][:14]
    rows[0]["solution"] = f"def {rows[0]['entry_point']}(*a):\n    return 1{'0' * 5000}\n"  # a 5001-digit literal
    rows[1]["solution"] = f"def {rows[1]['entry_point']}(*a):\n    return '\udc80'\n"
    rows[2]["solution"] = f"def {rows[2]['entry_point']}(*a):\n    return 10**5000\n"
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = vx(
        "data",
        "build",
        "mbpp",
        "--samples",
        str(path),
        "--data-dir",
        str(plus),
        "--subset",
        "all",
        "--out",
        str(tmp_path / "fam"),
        "-j",
        "2",
        "--n-locked",
        "2",
        "--cache-dir",
        str(tmp_path / "c"),
        "--json",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-3000:]
    out = json.loads(res.stdout)
    assert out["counts"]["input_skipped"] == 1 and len(out["input_skipped"]["listed"]) == 1
    text = (tmp_path / "fam" / "family.toml").read_text(encoding="utf-8")
    assert "unpaired surrogate" in out["input_skipped"]["listed"][0] and "input_skipped" in text


def test_the_verdict_cache_keeps_an_observation_holding_a_surrogate(tmp_path: Path) -> None:
    """A peer op's observation is a candidate's returned value: it may be a str with a lone surrogate."""
    from vx.ops.cache import VerdictCache

    with VerdictCache(tmp_path / "c.sqlite") as cache:
        cache.put_observations([("obs", "1", "h", {"returned": ["x\udc80", ("\ud800",)]})])
        assert cache.get_observations([("obs", "1", "h")]) == {
            ("obs", "1", "h"): {"returned": ["x\udc80", ("\ud800",)]}
        }
