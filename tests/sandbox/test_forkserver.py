"""The forkserver layer: what it adds to the escape suite (which runs on it like on every layer).

Candidates of one server run one after another in children forked from the same interpreter, so
these tests check that nothing of one reaches the next or the server: files, SysV/POSIX IPC,
memory, processes, signals. And that the pool survives dead servers, short-lived threads and
forked copies of vx.
"""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
import uuid

import pytest

from vx.sandbox import Sandbox, SandboxConfig, forkserver

from .conftest import FAST, GENEROUS, sandbox_for


@pytest.fixture
def fs() -> Sandbox:
    return sandbox_for("forkserver")


def _code(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _server_pids() -> set[int]:
    with forkserver._LOCK:
        return {s.proc.pid for s in forkserver._ALL if s.owner == os.getpid()}


def test_one_server_serves_many_candidates(fs: Sandbox) -> None:
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    before = _server_pids()
    for _ in range(5):
        assert fs.run_calls("def f():\n    return 1\n", "f", [([], {})]).calls[0].value == 1
    assert _server_pids() == before and len(before) >= 1


def test_nothing_written_by_one_candidate_reaches_the_next(fs: Sandbox) -> None:
    token = uuid.uuid4().hex
    writer = _code(
        f"""
        import os
        def f():
            done = []
            for where in (".", "/tmp", "/dev/shm", "/", "/dev", "/etc", "/usr"):
                try:
                    with open(os.path.join(where, "vx-{token}"), "w") as fh:
                        fh.write("left behind")
                    done.append(where)
                except OSError:
                    pass
            return done
        """
    )
    rep = fs.run_calls(writer, "f", [([], {})])
    assert rep.status == "ok", rep.detail
    assert set(rep.calls[0].value) == {".", "/tmp", "/dev/shm"}  # only the private, fresh mounts
    reader = _code(
        f"""
        import os
        def f():
            return [w for w in (".", "/tmp", "/dev/shm", "/", "/dev", "/etc")
                    if os.path.exists(os.path.join(w, "vx-{token}"))] + sorted(os.listdir("."))
        """
    )
    for _ in range(3):
        again = fs.run_calls(reader, "f", [([], {})])
        assert again.status == "ok" and again.calls[0].value == []


def test_ipc_objects_do_not_outlive_their_candidate(fs: Sandbox) -> None:
    maker = _code(
        """
        import ctypes
        def f(key):
            libc = ctypes.CDLL(None, use_errno=True)
            shm = libc.shmget(key, 4096, 0o1666)       # IPC_CREAT | 0666
            msg = libc.msgget(key, 0o1666)
            return [shm >= 0, msg >= 0]
        """
    )
    finder = _code(
        """
        import ctypes
        def f(key):
            libc = ctypes.CDLL(None, use_errno=True)
            return [libc.shmget(key, 0, 0o666), libc.msgget(key, 0o666)]
        """
    )
    key = 0x5678
    made = fs.run_calls(maker, "f", [([key], {})])
    # with the seccomp filter System V IPC is refused outright; without it, the objects are made
    refused = fs.detection.plan.seccomp is not None
    assert made.status == "ok" and made.calls[0].value == ([False, False] if refused else [True, True])
    found = fs.run_calls(finder, "f", [([key], {})])
    assert found.calls[0].value == [-1, -1]  # a fresh IPC namespace per candidate


def test_a_candidate_sees_only_its_own_processes(fs: Sandbox) -> None:
    code = _code(
        """
        import os, signal
        def f():
            try:
                pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
            except OSError:
                pids = None
            killed = []
            for pid in range(1, 200):
                if pid in (os.getpid(), os.getppid()):
                    continue
                try:
                    os.kill(pid, 0)
                    killed.append(pid)
                except OSError:
                    pass
            return [os.getpid(), os.getppid(), pids, killed]
        """
    )
    rep = fs.run_calls(code, "f", [([], {})])
    assert rep.status == "ok", rep.detail
    pid, ppid, pids, others = rep.calls[0].value
    assert (pid, ppid) == (1, 0)  # the init of a namespace of its own; its parent is outside it
    assert pids in (None, [1])  # Landlock hides /proc; without it, only this namespace shows
    assert others == []


def test_killing_everything_it_can_leaves_the_server_alive(fs: Sandbox) -> None:
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    before = _server_pids()
    code = _code(
        """
        import os, signal
        def f():
            for target in (-1, 0, 1):
                try:
                    os.kill(target, signal.SIGKILL)
                except OSError:
                    pass
            return "still here"
        """
    )
    rep = fs.run_calls(code, "f", [([], {})])
    assert rep.status in ("ok", "crashed"), rep.detail
    assert fs.run_calls("def f():\n    return 2\n", "f", [([], {})]).calls[0].value == 2
    assert _server_pids() == before


def test_no_privileges_are_left(fs: Sandbox) -> None:
    code = _code(
        """
        import ctypes, socket
        def f():
            libc = ctypes.CDLL(None, use_errno=True)
            out = []
            try:
                socket.sethostname("escaped")
                out.append("sethostname worked")
            except OSError as exc:
                out.append(exc.errno)
            libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_char_p]
            out.append(libc.mount(b"none", b"/sandbox", b"tmpfs", 0, None))
            out.append(libc.unshare(0x00020000))  # CLONE_NEWNS
            out.append(libc.unshare(0x10000000))  # CLONE_NEWUSER
            return out
        """
    )
    rep = fs.run_calls(code, "f", [([], {})])
    assert rep.status == "ok", rep.detail
    assert rep.calls[0].value == [1, -1, -1, -1]  # EPERM everywhere


def test_earlier_inputs_are_not_in_a_later_candidates_memory(fs: Sandbox) -> None:
    secret = f"hidden-input-{uuid.uuid4().hex}"
    assert fs.run_calls("def f(x):\n    return len(x)\n", "f", [([secret], {})]).calls[0].value == len(secret)
    code = _code(
        """
        import gc
        KEEP = ["hidden-input-" + "mine"]  # proves the search finds what is there
        def f(prefix):
            gc.collect()
            found = set()
            for o in gc.get_objects():
                if type(o) is dict:
                    items = list(o.keys()) + list(o.values())
                else:
                    items = o if type(o) in (list, tuple, set) else [o]
                found.update(s for s in items if type(s) is str and s.startswith(prefix))
            return sorted(found)
        """
    )
    rep = fs.run_calls(code, "f", [(["hidden-input-"], {})])
    assert rep.status == "ok", rep.detail
    assert rep.calls[0].value == ["hidden-input-mine"]  # its own data only, never the earlier input


def test_a_dead_server_is_replaced(fs: Sandbox) -> None:
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    for pid in _server_pids():
        os.killpg(pid, signal.SIGKILL)
    time.sleep(0.1)
    rep = fs.run_calls("def f():\n    return 3\n", "f", [([], {})])
    assert rep.status == "ok" and rep.calls[0].value == 3


def test_a_run_stopped_before_the_fork_report_is_read_keeps_its_server(fs: Sandbox, monkeypatch) -> None:
    """The caller's stop rule can fire on a call frame that arrives in the same wake-up as the server's
    report of the fork (a loaded machine): the child is still ended, and the server is kept (it used to
    be killed and restarted, ~50 ms each)."""
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    before = _server_pids()
    watching = {"on": False}
    real_on_message, real_watch = forkserver._on_message, forkserver._watch

    def late_report(server, state):  # while the run is watched, leave the fork report unread
        if watching["on"] and state.pidfd is None:
            return
        real_on_message(server, state)

    def watch(*args, **kwargs):
        watching["on"] = True
        try:
            real_watch(*args, **kwargs)
        finally:
            watching["on"] = False

    monkeypatch.setattr(forkserver, "_on_message", late_report)
    monkeypatch.setattr(forkserver, "_watch", watch)
    code = "def f(x):\n    if x:\n        while True:\n            pass\n    return 0\n"
    for _ in range(3):
        rep = fs.run_calls(code, "f", [([0], {}), ([1], {})], timeouts=[10.0, 10.0], stop=lambda i, c: True)
        assert rep.stopped and rep.calls[0].status == "ok" and rep.calls[1].status == "not_run"
    assert _server_pids() == before
    monkeypatch.undo()
    assert fs.run_calls("def f():\n    return 8\n", "f", [([], {})]).calls[0].value == 8
    assert _server_pids() == before


def test_frames_that_gather_are_all_taken_when_the_child_exits(fs: Sandbox, monkeypatch) -> None:
    """Frames gather in their pipe between reads (``FRAME_GATHER``), but the child's exit wakes the parent at
    once: with a window far longer than the run's total deadline, a run still ends as it should, every call
    reported, the stop rule shown every frame in order."""
    monkeypatch.setattr(forkserver, "FRAME_GATHER", 600.0)
    seen: list[int] = []
    calls = [([i], {}) for i in range(40)]
    rep = fs.run_calls(
        "def f(x):\n    return x * 3\n", "f", calls, timeouts=[30.0] * 40, stop=lambda i, c: seen.append(i) or False
    )
    assert rep.status == "ok", rep.detail  # not the total deadline (8 s): the exit ended the wait
    assert [c.value for c in rep.calls] == [3 * i for i in range(40)] and seen == list(range(40))
    stopped = fs.run_calls("def f(x):\n    return x\n", "f", calls, timeouts=[30.0] * 40, stop=lambda i, c: i == 5)
    assert stopped.stopped and [c.status for c in stopped.calls] == ["ok"] * 6 + ["not_run"] * 34


def test_a_call_deadline_is_judged_after_the_frames_that_gathered(fs: Sandbox, monkeypatch) -> None:
    """A call's deadline runs from the last frame read. Frames that gathered unread are taken before a
    deadline is judged: calls that each return within their backstop, but together outlast one, are not
    cut off; the call that hangs (its alarms ignored) is."""
    monkeypatch.setattr(forkserver, "FRAME_GATHER", 600.0)
    code = _code(
        """
        import signal, time
        def f(s):
            if s is None:
                signal.signal(signal.SIGALRM, signal.SIG_IGN)
                signal.signal(signal.SIGPROF, signal.SIG_IGN)
                time.sleep(1000)
            time.sleep(s)
            return s
        """
    )
    # backstop of a 0.05 s budget: 2 x 0.05 + 1 s; the parent's deadline 0.5 s after it; 7 x 0.3 s > 1.6 s
    calls = [([0.3], {})] * 7 + [([None], {})]
    rep = fs.run_calls(code, "f", calls, timeouts=[0.05] * 8)
    assert [c.status for c in rep.calls] == ["ok"] * 7 + ["timeout"], rep.detail


def test_servers_started_by_short_lived_threads_survive_them(fs: Sandbox) -> None:
    forkserver.shutdown()
    results = []
    thread = threading.Thread(target=lambda: results.append(fs.run_calls("def f():\n    return 4\n", "f", [([], {})])))
    thread.start()
    thread.join()
    assert results[0].calls[0].value == 4
    started = _server_pids()
    time.sleep(0.2)  # bwrap's --die-with-parent would have fired by now if tied to that thread
    rep = fs.run_calls("def f():\n    return 5\n", "f", [([], {})])
    assert rep.calls[0].value == 5 and _server_pids() == started


def test_forked_copies_of_vx_start_their_own_servers(fs: Sandbox) -> None:
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    before = _server_pids()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            rep = fs.run_calls("def f():\n    return 6\n", "f", [([], {})])
            ok = rep.calls[0].value == 6 and not (_server_pids() & before)
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    answer = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert answer == b"1"
    assert fs.run_calls("def f():\n    return 7\n", "f", [([], {})]).calls[0].value == 7
    assert _server_pids() == before


def test_concurrent_callers_get_servers_of_their_own(fs: Sandbox) -> None:
    # Each call sleeps (no CPU) for NAP seconds: callers served one after another cannot finish in less than
    # 3 x NAP, however idle or busy the machine is; callers with servers of their own finish in about NAP plus
    # the servers' start-up.
    nap = 3.0
    patient = Sandbox(SandboxConfig(layer=fs.layer, **GENEROUS))
    code = f"import time\ndef f(x):\n    time.sleep({nap})\n    return x\n"
    results: dict[int, int] = {}

    def one(i: int) -> None:
        results[i] = patient.run_calls(code, "f", [([i], {})]).calls[0].value

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {0: 0, 1: 1, 2: 2}
    assert time.monotonic() - start < nap * 3  # they ran side by side


def test_shutdown_ends_every_server(fs: Sandbox) -> None:
    fs.run_calls("def f():\n    return 1\n", "f", [([], {})])
    pids = _server_pids()
    forkserver.shutdown()
    assert not _server_pids()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_overhead_is_below_the_bwrap_layer() -> None:
    fs = sandbox_for("forkserver")
    try:
        bwrap = Sandbox(SandboxConfig(layer="bwrap", **FAST))
    except Exception as exc:  # noqa: BLE001 - bwrap missing: nothing to compare with
        pytest.skip(str(exc))
    fast = fs.measure_overhead(runs=9)
    slow = bwrap.measure_overhead(runs=9)
    assert fast < slow, (fast, slow)
