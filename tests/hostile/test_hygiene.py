"""Process hygiene: when `vx eval -j 2` is killed with SIGKILL, its op workers
die, every sandboxed process dies, and no vx-sb-* workdir stays behind in the temp directory."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from .conftest import code_family

SLOW_ADD = "import time\n\ndef add(x: int, y: int):\n    time.sleep(1.5)\n    return x + y\n"
WRONG_ADD = "import time\n\ndef add(x: int, y: int):\n    time.sleep(1.5)\n    return x - y\n"


def _children(pid: int) -> list[int]:
    kids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            fields = stat[stat.rfind(b")") + 2 :].split()
            if int(fields[1]) == pid:
                kids.append(int(name))
    return kids


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X")


def _cwd_under(root: Path) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.readlink(f"/proc/{name}/cwd").startswith(str(root)) and _alive(int(name)):
                    found.append(int(name))
            except OSError:
                continue
    return found


def _wait(predicate, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _tree(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        for kid in _children(todo.pop()):
            out.append(kid)
            todo.append(kid)
    return out


@pytest.mark.parametrize("layer", list(__import__("vx.sandbox", fromlist=["LAYERS"]).LAYERS))
def test_killing_vx_eval_leaves_no_worker_sandbox_or_workdir(tmp_path: Path, layer: str) -> None:
    from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

    try:
        Sandbox(SandboxConfig(layer=layer))
    except SandboxUnavailable as exc:
        pytest.skip(f"layer {layer} is not available here: {exc}")
    dev = [("HumanEval/53", SLOW_ADD, "pass")] * 5 + [("HumanEval/53", WRONG_ADD, "fail")] * 5
    fam = code_family(tmp_path, ("HumanEval/53",), {"dev": dev, "train": dev[:1], "locked": dev[:2]})
    # a temp dir of its own that the sandbox account can traverse (pytest's is private to root)
    tmp = Path(tempfile.mkdtemp(prefix="vx-test-hygiene-", dir="/tmp"))
    os.chmod(tmp, 0o755)
    env = dict(os.environ, TMPDIR=str(tmp), VX_SANDBOX_LAYER=layer)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vx.cli.main",
            "eval",
            str(fam / "seed.vx"),
            "--family",
            str(fam),
            "-j",
            "2",
            "--no-cache",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    tree: list[int] = []
    try:

        def running() -> bool:  # two op workers, each running a sandboxed candidate
            workers[:] = [
                k
                for k in _children(proc.pid)
                if b"vx" in Path(f"/proc/{k}/cmdline").read_bytes()
                and b"shutil" not in Path(f"/proc/{k}/cmdline").read_bytes()
            ]
            return len(workers) >= 2 and all(_children(w) for w in workers[:2])

        assert _wait(running, 60.0), f"vx eval never started two workers running sandboxes ({workers})"
        time.sleep(0.5)
        tree = _tree(proc.pid)  # workers, sandboxes, the janitor: everything vx started
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    try:
        assert _wait(lambda: not any(_alive(w) for w in workers), 10.0), (
            f"op workers {[w for w in workers if _alive(w)]} outlived vx"
        )
        assert _wait(lambda: not any(_alive(p) for p in tree), 10.0), (
            f"processes {[p for p in tree if _alive(p)]} started by vx outlived it"
        )
        assert _wait(lambda: not _cwd_under(tmp), 10.0), f"sandboxed processes {_cwd_under(tmp)} outlived vx"
        assert _wait(lambda: not any(p.name.startswith("vx-sb-") for p in tmp.iterdir()), 10.0), (
            f"workdirs left behind: {sorted(p.name for p in tmp.iterdir())}"
        )
    finally:
        for pid in tree + _cwd_under(tmp):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
