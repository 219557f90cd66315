"""Lost and blended data, in the attacker's (or the unlucky user's) words:

* **"Two of my ``vx evolve --out F`` start at once"**: both checked that F did not exist, both created it,
  both exited 0, and F held both runs' events under one run's meta. Now a run file is made whole under a
  temporary name and linked to F only if F is free, and the writer of a run holds a lock on it.
* **"My disk fills up during ``vx eval``"**: the verdict cache's write failed, its rollback failed again
  ("cannot rollback - no transaction is active") and nothing was printed. Now the results are printed, the
  error says what was not kept, and the exit status is 4.
* **"My disk is full when ``vx evolve`` starts"**: it left a 0-byte run file that ``--resume`` refused. Now
  no file is left behind, and a disk that fills up later ends the run with what was recorded kept (exit 4),
  which ``--resume`` finishes.

The full disk is real: the command runs in a child process with a file size limit (RLIMIT_FSIZE, SIGXFSZ
ignored), so its writes past the limit fail as they would on a full disk.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vx.evolve.store import FORMAT, RunStore, RunStoreError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _limited(size: int):
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))

    return limit


def _vx(args: list[str], env: dict[str, str], size: int | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from vx.cli.main import main; sys.exit(main())"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=_limited(size) if size is not None else None,
        timeout=600,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "VX_CACHE": str(tmp_path / "cache.sqlite"),
        "VX_PROBE_CACHE": "off",
        "COLUMNS": "200",
        "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
    }


@pytest.fixture
def big_family(tmp_path: Path) -> Path:
    """The tiny family with 3,000 train items: enough verdicts to fill a small disk."""
    fam = tmp_path / "fam"
    shutil.copytree(FIXTURES / "tiny", fam, ignore=shutil.ignore_patterns("__pycache__"))
    rows = [json.loads(line) for line in (fam / "train.jsonl").read_text(encoding="utf-8").split("\n") if line]
    with open(fam / "train.jsonl", "w", encoding="utf-8") as out:
        for i in range(3000):
            row = {**rows[i % len(rows)], "id": f"x{i}"}
            row["output"] = f"{row['output']} {i}"
            out.write(json.dumps(row) + "\n")
    return fam


# --------------------------------------------------------------------------- one file, one run


def test_a_run_file_that_exists_is_never_created_again(tmp_path: Path) -> None:
    path = tmp_path / "run.vxrun.sqlite"
    RunStore(path, create=True, meta={"format": FORMAT, "family": "a"}).close()
    with pytest.raises(RunStoreError, match="already exists"):
        RunStore(path, create=True, meta={"format": FORMAT, "family": "b"})
    with RunStore(path) as store:
        assert store.meta()["family"] == "a"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_of_many_runs_started_on_one_file_at_once_exactly_one_makes_it(tmp_path: Path) -> None:
    path = tmp_path / "run.vxrun.sqlite"
    start = threading.Barrier(8)
    made, refused = [], []

    def create(n: int) -> None:
        start.wait()
        try:
            RunStore(path, create=True, meta={"format": FORMAT, "family": f"run{n}"}).close()
            made.append(n)
        except RunStoreError:
            refused.append(n)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(refused) == 7
    with RunStore(path) as store:
        assert store.meta()["family"] == f"run{made[0]}"


def test_a_second_writer_of_a_run_is_refused_while_the_first_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "run.vxrun.sqlite"
    first = RunStore(path, create=True, lock=True, meta={"format": FORMAT})
    try:
        with pytest.raises(RunStoreError, match="is being written by another vx evolve"):
            RunStore(path, upgrade=True, lock=True)
        with RunStore(path) as reader:  # readers take no lock: vx runs show works during a run
            assert reader.meta()["format"] == FORMAT
    finally:
        first.close()
    RunStore(path, upgrade=True, lock=True).close()  # once it is closed, the next writer may go on


def test_two_vx_evolve_on_one_out_file_one_succeeds_and_the_other_says_why(tmp_path: Path, env) -> None:
    fam = tmp_path / "tiny"
    shutil.copytree(FIXTURES / "tiny", fam, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "run.vxrun.sqlite"
    args = ["evolve", str(fam), "--rounds", "1", "--out", str(out), "--no-llm"]
    code = "import sys; from vx.cli.main import main; sys.exit(main())"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=600), p.stderr.read().decode()) for p in procs]
    codes = sorted(rc for rc, _ in results)
    assert codes == [0, 2], results
    said = " ".join(" ".join(err.split()) for rc, err in results if rc == 2)
    assert "already exists" in said or "is being written by another vx evolve" in said
    with RunStore(out) as store:
        store.check(finished=True)


# --------------------------------------------------------------------------- a full disk


def test_a_full_disk_during_vx_eval_prints_the_results_and_says_what_was_not_kept(big_family: Path, env) -> None:
    res = _vx(["eval", str(big_family / "seed.vx"), "--dataset", "train", "-j", "1"], env, size=40_000)
    said = " ".join(res.stderr.split())
    assert res.returncode == 4, res.stderr[-2000:]
    assert "cannot rollback" not in res.stderr and "Traceback" not in res.stderr
    assert "12000 verdicts: 12000 computed" in res.stdout  # the results were printed
    assert "the verdict cache cannot be written" in said and "the results above are complete" in said


def test_a_full_disk_when_vx_evolve_starts_leaves_no_file_and_later_a_resumable_one(tmp_path: Path, env) -> None:
    fam = tmp_path / "tiny"
    shutil.copytree(FIXTURES / "tiny", fam, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "runs" / "run.vxrun.sqlite"
    args = ["evolve", str(fam), "--rounds", "3", "--out", str(out), "--no-llm"]
    first = _vx(args, env, size=70_000)  # the cache fits, the run file does not
    assert first.returncode == 4, first.stderr[-2000:]
    assert "the run file cannot be made" in " ".join(first.stderr.split())
    assert not out.exists() and not list(out.parent.iterdir()), "a 0-byte or half-made run file was left"
    later = _vx(args, env, size=140_000)  # it fills up after a round or two
    said = " ".join(later.stderr.split())
    assert later.returncode == 4 and "what was recorded before is kept" in said, later.stderr[-2000:]
    assert f"vx evolve --resume {out}" in said and "Traceback" not in said
    resumed = _vx(["evolve", "--resume", str(out), "--no-llm"], env)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    with RunStore(out) as store:
        store.check(finished=True)
        assert [r["round"] for r in store.rounds()][-1] == 3
