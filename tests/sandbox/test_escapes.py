"""Escape suite: hostile candidates must be contained by every available layer.

Each test runs a candidate that tries one escape and asserts both containment (the canary
survives, no process outlives the run, no connection arrives, no secret leaks) and that the
reported outcome is the right one. Network attempts go only to loopback listeners started
here. Bounded: every run has sub-second call timeouts and an 8 s total deadline.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import textwrap
import threading
import time
import uuid

import pytest
from conftest import TIME_MARGIN

from vx.sandbox import Sandbox, SandboxConfig

from .conftest import processes_with, wait_until_gone


def _code(text: str) -> str:
    return textwrap.dedent(text).strip() + "\n"


def _same_account(sb: Sandbox) -> bool:
    """The candidate runs as the invoking user (vx not started as root)."""
    return not sb.detection.identity.dropped


def _fs_confined(sb: Sandbox) -> bool:
    """The layer limits file access beyond Unix permissions (bwrap mounts, or Landlock)."""
    return sb.layer == "bwrap" or sb.detection.plan.landlock is not None


def _assert_no_survivors(token: str, within: float = 3.0) -> None:
    left = wait_until_gone(token, within)
    for pid in left:  # never leak processes from a failing test
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not left, f"processes carrying {token} outlived the run: {left}"


def _spawn_marked(token: str, body: str) -> str:
    """Source of an argv list `python -c body token` (the token marks the process). The token
    is split in the source, so only the processes started with it carry it whole."""
    return f"[sys.executable, '-S', '-c', {body!r}, {token[:6]!r} + {token[6:]!r}]"


# --------------------------------------------------------------------------------------------
# processes
# --------------------------------------------------------------------------------------------


def test_fork_bomb_is_bounded_and_killed(sb: Sandbox) -> None:
    token = f"vx-forkbomb-{uuid.uuid4().hex}"
    bomb = "import os, time\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
    code = _code(
        f"""
        import os, sys, time
        def f():
            while True:
                try:
                    pid = os.fork()
                except OSError:
                    time.sleep(0.01)
                    continue
                if pid == 0:
                    try:
                        os.execv(sys.executable, {_spawn_marked(token, bomb)})
                    finally:
                        os._exit(0)
        """
    )
    start = time.monotonic()
    rep = sb.run_calls(code, "f", [([], {}), ([], {})])
    assert time.monotonic() - start < 8.0 + 2.0 * TIME_MARGIN  # bounded by the 8 s total deadline
    # Interrupted by the in-child alarm (status "ok", both calls "timeout") or, if the
    # alarm could not be delivered in time, killed by the parent (status "timeout").
    assert rep.status in ("ok", "timeout"), rep.detail
    assert rep.calls[0].status == "timeout"
    assert rep.calls[1].status in ("timeout", "not_run")
    _assert_no_survivors(token)


@pytest.mark.parametrize("then", ["returns", "hangs"])
def test_setsid_daemon_does_not_survive(sb: Sandbox, then: str, tmp_path) -> None:
    token = f"vx-daemon-{uuid.uuid4().hex}"
    drop = tmp_path / "drop"
    drop.mkdir()
    drop.chmod(0o777)  # so only the sandbox, not file permissions, can stop the daemon
    touched = drop / "daemon-was-here"
    body = f"import time\ntime.sleep(1.0)\nopen({str(touched)!r}, 'w').write('escaped')\n"
    code = _code(
        f"""
        import os, sys, time
        def f():
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, {_spawn_marked(token, body)})
                os._exit(0)
            time.sleep(0.2)
            while {then == "hangs"}:
                try:
                    time.sleep(0.05)
                except BaseException:
                    pass
            return "spawned"
        """
    )
    rep = sb.run_calls(code, "f", [([], {})])
    if then == "returns":
        assert rep.status == "ok" and rep.calls[0].value == "spawned"
    else:
        assert rep.status == "timeout"
    _assert_no_survivors(token)
    time.sleep(1.3)
    assert not touched.exists(), "the daemon outlived the sandbox and wrote a file"


def test_killing_the_parent_is_contained(sb: Sandbox) -> None:
    me = os.getpid()
    code = _code(
        """
        import os, signal
        def f(target):
            errors = []
            for pid in (os.getppid(), target, -1):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError as exc:
                    errors.append(type(exc).__name__)
            return errors
        """
    )
    rep = sb.run_calls(code, "f", [([me], {})])
    # We are still alive (the candidate could not signal this test process); the run either
    # finished or lost its own processes, but never reports anything false.
    assert rep.status in ("ok", "crashed"), rep.detail
    if rep.status == "ok":
        assert "PermissionError" in rep.calls[0].value or "ProcessLookupError" in rep.calls[0].value
    else:
        assert rep.calls[0].status == "crashed"


# --------------------------------------------------------------------------------------------
# files, environment, network
# --------------------------------------------------------------------------------------------


def test_canary_outside_the_workdir_survives(sb: Sandbox, tmp_path) -> None:
    if _same_account(sb) and not _fs_confined(sb):
        pytest.skip(
            f"layer {sb.layer} without Landlock as a non-root user: the candidate runs as you and "
            "can write your files (documented in the README, section on the sandbox); run as root or install bubblewrap"
        )
    canary = tmp_path / "canary.txt"
    canary.write_text("alive")
    code = _code(
        """
        import os, shutil, posix
        def f(path):
            tried = []
            for attempt in (
                lambda: os.remove(path),
                lambda: posix.unlink(path),
                lambda: os.rename(path, path + ".moved"),
                lambda: open(path, "w").write("dead"),
                lambda: os.chmod(path, 0),
                lambda: shutil.rmtree(os.path.dirname(path)),
                lambda: os.system("rm -rf " + os.path.dirname(path)),
            ):
                try:
                    attempt()
                    tried.append("no error")
                except Exception as exc:
                    tried.append(type(exc).__name__)
            return tried
        """
    )
    rep = sb.run_calls(code, "f", [([str(canary)], {})])
    assert rep.status == "ok", rep.detail
    mode = canary.stat().st_mode & 0o777
    canary.chmod(0o644)
    assert canary.read_text() == "alive"  # exists, same name, same content
    if _same_account(sb) and sb.layer == "unshare":
        return  # Landlock does not cover modes; without seccomp here chmod works (documented)
    assert mode != 0


def test_secret_environment_is_not_visible(sb: Sandbox, monkeypatch) -> None:
    if _same_account(sb) and sb.layer == "rlimits" and not _fs_confined(sb):
        pytest.skip(
            "layer rlimits without Landlock as a non-root user: /proc/<pid>/environ of your other "
            "processes is readable by code running as you (documented); run as root or install bubblewrap"
        )
    secret = f"canary-{uuid.uuid4().hex}"
    for name in ("ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "SNOWFLAKE_PASSWORD", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, secret)
    code = _code(
        """
        import os
        def f(parent):
            seen = [repr(dict(os.environ))]
            pids = {"self", str(os.getppid()), "1", str(parent)}
            for pid in pids:
                try:
                    with open("/proc/%s/environ" % pid, "rb") as fh:
                        seen.append(fh.read().decode("latin-1"))
                except OSError as exc:
                    seen.append(type(exc).__name__)
            return "\\n".join(seen), sorted(os.environ)
        """
    )
    rep = sb.run_calls(code, "f", [([os.getpid()], {})])
    assert rep.status == "ok", rep.detail
    text, names = rep.calls[0].value
    assert secret not in text
    assert set(names) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "PYTHONIOENCODING", "PYTHONHASHSEED", "PWD"}


def test_loopback_listener_gets_no_connection(sb: Sandbox) -> None:
    if sb.layer == "rlimits" and sb.detection.plan.seccomp is None:
        pytest.skip("rlimits layer without libseccomp cannot block sockets (documented)")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.2)
    udp_port = udp.getsockname()[1]
    arrived: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                arrived.append(conn)
                conn.close()
            except OSError:
                pass
            try:
                arrived.append(udp.recvfrom(100))
            except OSError:
                pass

    watcher = threading.Thread(target=accept)
    watcher.start()
    code = _code(
        """
        import socket
        def f(port, udp_port):
            out = []
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=1.0)
                s.sendall(b"escaped")
                out.append("connected")
            except OSError as exc:
                out.append(type(exc).__name__)
            try:
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                u.sendto(b"escaped", ("127.0.0.1", udp_port))
                out.append("sent")
            except OSError as exc:
                out.append(type(exc).__name__)
            return out
        """
    )
    try:
        rep = sb.run_calls(code, "f", [([port, udp_port], {})], timeouts=[3.0])
    finally:
        time.sleep(0.3)  # anything sent during the run has arrived by now
        stop.set()
        watcher.join()
        listener.close()
        udp.close()
    assert rep.status == "ok", rep.detail
    assert arrived == []
    assert "connected" not in rep.calls[0].value


# --------------------------------------------------------------------------------------------
# resources
# --------------------------------------------------------------------------------------------


def test_huge_allocation_fails_inside(sb: Sandbox) -> None:
    code = "def f(n):\n    return len(bytearray(n)) if n else 'still alive'\n"
    rep = sb.run_calls(code, "f", [([8 * 1024**3], {}), ([0], {})])
    assert rep.status == "ok", rep.detail
    assert rep.calls[0].status == "exception"
    assert rep.calls[0].exc_type == "MemoryError"
    assert rep.calls[1].value == "still alive"


def test_100_mb_write_is_refused(sb: Sandbox) -> None:
    code = _code(
        """
        def f(where):
            chunk = b"x" * (1 << 20)
            written = 0
            with open(where, "wb") as fh:
                for _ in range(100):
                    fh.write(chunk)
                    fh.flush()
                    written += len(chunk)
            return written
        """
    )
    # /tmp is private under bwrap but the host's under the other layers: use a fresh name there.
    outside = f"/tmp/vx-big-{uuid.uuid4().hex}.bin"
    try:
        rep = sb.run_calls(code, "f", [(["big.bin"], {}), ([outside], {})])
    finally:
        if os.path.exists(outside):
            assert os.path.getsize(outside) <= 16 << 20
            os.remove(outside)
    assert rep.status == "ok", rep.detail
    in_workdir, in_tmp = rep.calls
    assert in_workdir.status == "exception"
    assert in_workdir.exc_type == "OSError" and "too large" in in_workdir.exc_message.lower()
    assert in_tmp.status == "exception"  # too large, or (Landlock) not writable at all
    assert (in_tmp.exc_type, "too large" in in_tmp.exc_message.lower()) in (
        ("OSError", True),
        ("PermissionError", False),
    )


def test_infinite_loop_times_out_and_later_calls_run(sb: Sandbox) -> None:
    code = "def f(n):\n    while n:\n        pass\n    return 'done'\n"
    start = time.monotonic()
    rep = sb.run_calls(code, "f", [([1], {}), ([0], {})])
    assert time.monotonic() - start < 3.0 * TIME_MARGIN
    assert rep.status == "ok"
    assert [c.status for c in rep.calls] == ["timeout", "ok"]
    assert rep.calls[1].value == "done"


def test_sleep_loop_swallowing_every_exception_is_killed(sb: Sandbox) -> None:
    code = _code(
        """
        import time
        def f():
            while True:
                try:
                    time.sleep(0.05)
                except BaseException:
                    pass
        """
    )
    # A sleeping call spends no CPU: its wall-clock backstop (here 1 x 0.5 s + 0.5 s) stops it, and the
    # parent kills the process kill_grace later when the candidate swallows that too.
    short = Sandbox(
        SandboxConfig(layer=sb.layer, per_call_timeout=0.5, wall_factor=1.0, wall_slack=0.5, kill_grace=0.5)
    )
    start = time.monotonic()
    rep = short.run_calls(code, "f", [([], {}), ([], {})])
    elapsed = time.monotonic() - start
    assert rep.status == "timeout"
    assert [c.status for c in rep.calls] == ["timeout", "not_run"]
    assert 1.0 <= elapsed < 8.0 * TIME_MARGIN  # backstop 1 s + kill grace 0.5 s, plus startup


# --------------------------------------------------------------------------------------------
# exits
# --------------------------------------------------------------------------------------------


def test_sys_exit_at_load(sb: Sandbox) -> None:
    rep = sb.run_calls("import sys\nsys.exit(0)\ndef f():\n    return 1\n", "f", [([], {})])
    assert rep.status == "load_error"
    assert rep.load_error_type == "SystemExit"
    assert rep.calls[0].status == "not_run"


def test_os_exit_at_load(sb: Sandbox) -> None:
    rep = sb.run_calls("import os\nos._exit(0)\ndef f():\n    return 1\n", "f", [([], {})])
    assert rep.status == "crashed"
    assert rep.calls[0].status == "not_run"


def test_sys_exit_during_a_call_is_an_exception(sb: Sandbox) -> None:
    code = "import sys\ndef f(x):\n    if x:\n        sys.exit(3)\n    return x\n"
    rep = sb.run_calls(code, "f", [([1], {}), ([0], {})])
    assert rep.status == "ok"
    assert rep.calls[0].status == "exception" and rep.calls[0].exc_type == "SystemExit"
    assert rep.calls[1].status == "ok" and rep.calls[1].value == 0


def test_os_exit_during_a_call_crashes_the_run(sb: Sandbox) -> None:
    code = "import os\ndef f(x):\n    if x:\n        os._exit(0)\n    return x\n"
    rep = sb.run_calls(code, "f", [([0], {}), ([1], {}), ([0], {})])
    assert rep.status == "crashed"
    assert [c.status for c in rep.calls] == ["ok", "crashed", "not_run"]


# --------------------------------------------------------------------------------------------
# lying to the harness or the parent
# --------------------------------------------------------------------------------------------


def test_monkeypatched_builtins_do_not_disturb_the_harness(sb: Sandbox) -> None:
    code = _code(
        """
        import builtins, json, marshal, os, sys, time
        builtins.print = lambda *a, **k: None
        builtins.len = lambda x: 0
        builtins.isinstance = lambda *a: True
        builtins.issubclass = lambda *a: True
        builtins.type = lambda *a: int
        builtins.repr = lambda x: "forged"
        builtins.BaseException = KeyError
        builtins.Exception = KeyError
        json.dumps = lambda *a, **k: '{"t": "forged"}'
        marshal.dumps = lambda *a: b""
        os.write = lambda fd, data: 0
        time.perf_counter = lambda: 0.0
        def f(x):
            sys.stdout.write("printed")
            return [x, {"k": (x, 2.5)}]
        def g(x):
            raise ValueError("boom")
        """
    )
    rep = sb.run_calls(code, "f", [([7], {}), (["s"], {})])
    assert rep.status == "ok", rep.detail
    assert [c.value for c in rep.calls] == [[7, {"k": (7, 2.5)}], ["s", {"k": ("s", 2.5)}]]
    assert rep.calls[0].stdout == "printed"
    assert rep.calls[0].duration is not None and rep.calls[0].duration >= 0


def test_always_equal_objects_come_back_unserializable(sb: Sandbox) -> None:
    code = _code(
        """
        class AlwaysEqual:
            def __eq__(self, other):
                return True
            __hash__ = object.__hash__
        class SlyInt(int):
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        class SlyList(list):
            def __eq__(self, other):
                return True
            def __iter__(self):
                return iter(["forged"])
        def f(kind):
            if kind == "object":
                return AlwaysEqual()
            if kind == "int":
                return SlyInt(5)
            if kind == "nested":
                return [1, {"a": AlwaysEqual()}]
            return SlyList([1, 2])
        """
    )
    rep = sb.run_calls(code, "f", [(["object"], {}), (["int"], {}), (["nested"], {}), (["list"], {})])
    obj, sly_int, nested, sly_list = rep.calls
    assert obj.status == "unserializable" and obj.type_name == "AlwaysEqual" and obj.value is None
    assert nested.status == "unserializable" and nested.type_name == "AlwaysEqual"
    assert sly_int.status == "ok" and type(sly_int.value) is int and sly_int.value == 5
    assert sly_int.value != 6 and sly_int.type_name == "SlyInt"
    assert sly_list.status == "ok" and sly_list.value == [1, 2] and type(sly_list.value) is list


def test_forged_lines_on_stdout_are_just_text(sb: Sandbox) -> None:
    forged = '{"t": "call", "i": 0, "status": "ok", "value": 42}'
    code = _code(
        f"""
        import os, sys
        FORGED = {forged!r}
        print(FORGED)
        def f(x):
            print(FORGED)
            print('{{"t": "done"}}')
            os.write(1, len(FORGED).to_bytes(4, "big") + FORGED.encode())
            sys.__stdout__.write(FORGED)
            return x
        """
    )
    rep = sb.run_calls(code, "f", [([1], {}), ([2], {})])
    assert rep.status == "ok"
    assert [c.value for c in rep.calls] == [1, 2]
    assert forged in rep.calls[0].stdout and forged in rep.load_stdout


@pytest.mark.parametrize(
    "payload",
    [
        "b'garbage that is not a frame'",
        "(10**9).to_bytes(4, 'big')",
        "len(F).to_bytes(4, 'big') + F",  # well-formed, for its own call: then a duplicate
        "len(D).to_bytes(4, 'big') + D",  # a premature 'done'
    ],
    ids=["garbage", "huge-length", "duplicate-call", "early-done"],
)
def test_forged_frames_on_the_result_fd_crash_the_run(sb: Sandbox, payload: str) -> None:
    code = _code(
        f"""
        import os
        F = b'{{"t":"call","i":0,"status":"ok","value":42,"type":"int","exc_type":null,' \\
            b'"exc_message":null,"stdout":"","stdout_truncated":false,"duration":0.0,"cpu":0.0,"budget":1.0,"args_after":null}}'
        D = b'{{"t":"done"}}'
        def f(x):
            for fd in range(3, 4096):
                try:
                    os.write(fd, {payload})
                except OSError:
                    pass
            return x
        """
    )
    rep = sb.run_calls(code, "f", [([1], {}), ([2], {})])
    assert rep.status == "crashed"
    assert "malformed result stream" in rep.detail
    assert all(c.status == "not_run" and c.value is None for c in rep.calls)


@pytest.mark.parametrize("pooled", [False, True], ids=["outside-a-pool", "pool-not-spent"])
def test_a_forged_skip_crashes_the_run(sb: Sandbox, pooled: bool) -> None:
    """A candidate that reports a call it does not want to answer as skipped ("not_run": no value to
    compare) -- a call of no CPU pool, or of a pool its calls have not spent -- breaks the protocol."""
    from vx.sandbox import CallBudget

    code = _code(
        """
        import os
        S = b'{"t":"call","i":1,"status":"skipped","value":null,"type":null,"exc_type":null,' \
            b'"exc_message":null,"stdout":"","stdout_truncated":false,"duration":0.0,"cpu":0.0,"budget":0.0,' \
            b'"args_after":null,"raised":false}'
        D = b'{"t":"done"}'
        def f(x):
            if x == 1:  # the report of this call, skipped, and the end of the stream: a complete one
                for fd in range(3, 4096):
                    try:
                        os.write(fd, len(S).to_bytes(4, 'big') + S + len(D).to_bytes(4, 'big') + D)
                    except OSError:
                        pass
                os._exit(0)
            return x
        """
    )
    budget = CallBudget(1.0, pool="p" if pooled else "")
    rep = sb.run_calls(code, "f", [([0], {}), ([1], {})], timeouts=[budget, budget], pools={"p": 5.0})
    assert rep.status == "crashed", rep.summary()
    assert "malformed result stream" in rep.detail and ("skipped" in rep.detail), rep.detail
    assert all(c.status == "not_run" for c in rep.calls)


def test_the_result_channel_is_a_low_descriptor_whatever_the_parent_holds(sb: Sandbox) -> None:
    # A parent with many files open (a long-lived agent loop, a test session) must not move the
    # result channel above the candidate's descriptor limit, where a forging candidate scanning
    # its descriptors would miss it -- nor let the candidate learn how many files the parent holds.
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(100)]
    try:
        code = _code(
            """
            import os
            def f():
                return [int(n) for n in os.listdir('/proc/self/fd')]
            """
        )
        rep = sb.run_calls(code, "f", [([], {})])
    finally:
        for fd in held:
            os.close(fd)
    assert rep.status == "ok", rep.summary()
    call = rep.calls[0]
    if call.status == "ok":  # /proc is readable on this layer: every descriptor is a low one
        assert max(call.value) < 16, call.value


def test_never_runs_as_root(sb: Sandbox) -> None:
    code = "import os\ndef f():\n    return [os.getuid(), os.geteuid(), os.getgid(), os.getgroups()]\n"
    rep = sb.run_calls(code, "f", [([], {})])
    uid, euid, gid, groups = rep.calls[0].value
    assert uid != 0 and euid != 0  # as seen inside (no user namespace maps anyone to root)
    if os.geteuid() == 0:  # and vx's own privileges were dropped, groups included
        assert gid != 0 and 0 not in groups


def test_host_files_are_out_of_reach(sb: Sandbox) -> None:
    if not _fs_confined(sb):
        pytest.skip(f"layer {sb.layer} without Landlock sees the host file system (documented)")
    import tempfile

    folder = tempfile.mkdtemp(prefix="vx-test-host-")
    os.chmod(folder, 0o755)
    readable = os.path.join(folder, "readable.txt")  # world-readable, world-traversable
    with open(readable, "w") as fh:
        fh.write("host data")
    os.chmod(readable, 0o644)
    code = _code(
        """
        def f(paths):
            out = []
            for path in paths:
                try:
                    with open(path) as fh:
                        out.append(fh.read(20))
                except OSError as exc:
                    out.append(type(exc).__name__)
            return out
        """
    )
    here = os.path.abspath(__file__)
    try:
        rep = sb.run_calls(code, "f", [([[readable, here, "/etc/hostname"]], {})])
    finally:
        import shutil

        shutil.rmtree(folder)
    assert rep.status == "ok", rep.detail
    host_file, test_file, _ = rep.calls[0].value
    assert host_file in ("FileNotFoundError", "PermissionError")
    assert test_file in ("FileNotFoundError", "PermissionError")


def test_interpreter_settings_changed_by_the_candidate_are_undone(sb: Sandbox) -> None:
    # A raising profile/trace hook left behind by the candidate must not break the harness
    # (the call that installed it may fail, later calls must be reported normally).
    code = _code(
        """
        import signal, sys
        def hook(frame, event, arg):
            raise RuntimeError("hook ran")
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        sys.setrecursionlimit(60)
        def f(x):
            if x == "hooks":
                sys.setrecursionlimit(60)
                sys.settrace(hook)
                sys.setprofile(hook)
                return "hooked"
            if x:
                while True:
                    pass
            return x
        """
    )
    rep = sb.run_calls(code, "f", [(["hooks"], {}), ([0], {}), ([1], {}), ([2], {})])
    assert rep.status == "ok", rep.detail
    assert [c.status for c in rep.calls][1:] == ["ok", "timeout", "timeout"]
    assert rep.calls[0].status in ("ok", "exception")


def test_everything_dies_with_vx(sb: Sandbox) -> None:
    """If the vx process itself is SIGKILLed mid-run, the candidate and its daemons die too."""
    token = f"vx-orphan-{uuid.uuid4().hex}"
    body = "import time\ntime.sleep(30)\n"
    candidate = _code(
        f"""
        import os, subprocess, sys, time
        def f():
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, {_spawn_marked(token, body)})
            subprocess.Popen({_spawn_marked(token, body)})
            while True:
                try:
                    time.sleep(0.05)
                except BaseException:
                    pass
        """
    )
    driver = _code(
        f"""
        from vx.sandbox import Sandbox, SandboxConfig
        sb = Sandbox(SandboxConfig(layer={sb.layer!r}, per_call_timeout=20.0, total_timeout=30.0))
        sb.run_calls({candidate!r}, "f", [([], {{}})])
        """
    )
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", driver])
    try:
        deadline = time.monotonic() + 20.0
        while len(processes_with(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(processes_with(token)) >= 2, "the candidate never started its processes"
    finally:
        proc.kill()
        proc.wait()
    _assert_no_survivors(token, within=6.0)  # the supervisors notice at once; allow a busy machine


def test_many_files_cannot_fill_the_disk(sb: Sandbox) -> None:
    sized = sb.layer == "forkserver" or (sb.layer == "bwrap" and "--size" in sb.detection.plan.wrapper)
    if not sized:
        pytest.skip(
            "only bubblewrap (>= 0.6) and the fork server give the workdir a size limit; elsewhere time bounds it"
        )
    code = _code(
        """
        def f(where):
            chunk = b"x" * (8 << 20)
            written = 0
            for i in range(64):  # 512 MB in 8 MB files, each under the 16 MB file limit
                with open("%s/f%d" % (where, i), "wb") as fh:
                    fh.write(chunk)
                written += len(chunk)
            return written
        """
    )
    rep = sb.run_calls(code, "f", [(["."], {}), (["/tmp"], {})], timeouts=[5.0, 5.0])
    assert rep.status == "ok", rep.detail
    for call in rep.calls:
        assert call.status == "exception" and "No space left" in call.exc_message


def test_endless_module_code_is_stopped(sb: Sandbox) -> None:
    # Loading that spins is stopped by its CPU budget (0.5 s); the wall-clock deadline is far away, so that on a
    # busy machine, where 0.5 s of CPU can take many seconds, the CPU budget is still what stops it.
    spinning = Sandbox(SandboxConfig(layer=sb.layer, load_timeout=0.5, total_timeout=120.0, kill_grace=0.5))
    rep = spinning.run_calls("while True:\n    pass\ndef f():\n    return 1\n", "f", [([], {})])
    assert rep.status == "timeout" and "loading used more than 0.5 s of CPU time" in rep.detail
    assert rep.load_error_line in (1, 2) and rep.calls[0].status == "not_run"
    # Loading that sleeps and swallows every signal it can is stopped by the total deadline.
    fast = Sandbox(SandboxConfig(layer=sb.layer, load_timeout=0.5, total_timeout=3.0, kill_grace=0.5))
    start = time.monotonic()
    stubborn = "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except BaseException:\n        pass\n"
    rep = fast.run_calls(stubborn, "f", [([], {})])
    assert rep.status == "timeout" and rep.calls[0].status == "not_run"
    assert time.monotonic() - start < 3.0 + 2.0 * TIME_MARGIN  # a 3 s total deadline


def test_installed_packages_are_hidden_under_bwrap(sb: Sandbox) -> None:
    if sb.layer not in ("bwrap", "forkserver"):
        pytest.skip(
            "only bubblewrap (and the fork server, which runs inside it) can hide directories inside the "
            "interpreter's prefix"
        )
    code = _code(
        """
        import os, site
        def f():
            return {p: os.listdir(p) for p in site.getsitepackages() if os.path.isdir(p)}
        """
    )
    rep = sb.run_calls(code, "f", [([], {})])
    assert rep.status == "ok", rep.detail
    assert all(listing == [] for listing in rep.calls[0].value.values()), rep.calls[0].value


def test_segfault_is_a_crash_with_its_signal_named(sb: Sandbox) -> None:
    rep = sb.run_calls(
        "import ctypes\ndef f(x):\n    if x:\n        ctypes.string_at(0)\n    return x\n",
        "f",
        [([0], {}), ([1], {}), ([0], {})],
    )
    assert rep.status == "crashed"
    assert [c.status for c in rep.calls] == ["ok", "crashed", "not_run"]
    assert "SIGSEGV" in rep.detail
