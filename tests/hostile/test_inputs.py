"""Every path vx reads from a user is a regular file of bounded size: a FIFO
(which used to hang), a device such as /dev/zero (read until MemoryError), a directory or an
oversized file is refused before a byte is read, with a clear error naming the file. One reader
does it (`vx.inputs`); each test below is the attack on one of the paths that reach it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from vx.families.sources import tasks_file

from .test_bad_input import assert_error, edit_toml, eval_locked, run

DEVICE = "/dev/zero"


def fifo(path: Path) -> Path:
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    return path


def test_check_and_fmt_refuse_a_device_and_a_fifo(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "pipe.vx")
    for command in ("check", "fmt"):
        assert_error(run(command, DEVICE, timeout=60), "/dev/zero", "a device", "not a regular file")
        assert_error(run(command, pipe, timeout=60), "pipe.vx", "FIFO", "not a regular file")


def test_a_vx_file_that_is_a_fifo(fam: Path) -> None:
    fifo(fam / "seed.vx")
    assert_error(eval_locked(fam), "seed.vx", "FIFO")


@pytest.mark.parametrize("target", ["device", "fifo"])
def test_a_specs_header_naming_a_device_or_a_fifo(fam: Path, target: str) -> None:
    side = DEVICE if target == "device" else str(fifo(fam / "x.specs.json"))
    vx = fam / "evolved.vx"
    vx.write_text(f"; specs: {side}\n" + (fam / "seed.vx").read_text(encoding="utf-8"), encoding="utf-8")
    checked = run("check", vx, timeout=60)  # a warning (its synthesized ops would be unknown), not a hang
    assert "specs file" in checked.output and "not a regular file" in " ".join(checked.output.split())
    assert_error(
        run("eval", vx, "--family", fam, "-d", "locked", "-j", "1", "--no-cache"), "specs file", "not a regular file"
    )


@pytest.mark.parametrize("target", ["device", "fifo", "directory"])
def test_a_family_seed_naming_a_device_a_fifo_or_a_directory(fam: Path, target: str) -> None:
    seed = {"device": DEVICE, "fifo": str(fifo(fam / "seed.pipe")), "directory": str(fam)}[target]
    edit_toml(fam, 'seed = "seed.vx"', f"seed = {json.dumps(seed)}")
    assert_error(eval_locked(fam), "not a regular file")


def test_tasks_and_samples_files_that_are_fifos(fam: Path, tmp_path: Path) -> None:
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def f(): pass\n"}) + "\n")
    assert_error(
        run("grade", fam / "seed.vx", samples, "--tasks", fifo(tmp_path / "tasks.jsonl"), "--no-cache"),
        "tasks.jsonl",
        "FIFO",
    )
    assert_error(
        run("grade", fam / "seed.vx", fifo(tmp_path / "pipe.jsonl"), "--tasks", fam / "tasks.jsonl", "--no-cache"),
        "pipe.jsonl",
        "FIFO",
    )


def test_report_refuses_a_fifo(tmp_path: Path) -> None:
    assert_error(run("report", fifo(tmp_path / "run.json"), timeout=60), "run.json", "FIFO")


def test_a_file_over_the_size_limit_names_the_limit(fam: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VX_MAX_INPUT_MB", "0.01")  # 10 KiB: the bundled tasks file is larger
    assert_error(eval_locked(fam), "tasks.jsonl", "MiB", "VX_MAX_INPUT_MB")
    monkeypatch.setenv("VX_MAX_INPUT_MB", "lots")
    assert_error(eval_locked(fam), "VX_MAX_INPUT_MB", "positive number")


def test_a_200k_line_tasks_file_is_read_in_linear_time(tmp_path: Path) -> None:
    """200 000 task lines are read in seconds (CPU time, generous: it takes ~1 s)."""
    path = tmp_path / "tasks.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(200_000):
            fh.write(json.dumps({"id": f"T/{i}", "prompt": "def f(x):\n    pass\n", "entry_point": "f"}) + "\n")
    start = time.process_time()
    source = tasks_file(path)
    assert len(source.tasks) == 200_000 and time.process_time() - start < 30


def test_a_release_file_that_is_a_fifo(tmp_path: Path) -> None:
    from vx.errors import DataError
    from vx.families.code.data.tasks import read_plus_file

    for name in ("MbppPlus-v0.2.0.jsonl.gz", "MbppPlus-v0.2.0.jsonl"):
        with pytest.raises(DataError, match="FIFO"):
            read_plus_file("mbpp+", fifo(tmp_path / name))
