"""Nothing of a candidate outlives it, on every layer, written as the attacks:

* **zombies** -- every process vx starts is reaped: none accumulates while vx runs candidates
  (bubblewrap's outer process exits before its init is reaped, which used to leave one zombie per
  candidate), and none is left when vx exits (each fork server used to leave one);
* **IPC that outlives a process** -- a candidate leaves System V shared memory, a message queue, a
  semaphore set and a POSIX message queue behind under well-known keys; the next candidate must
  find none of them, and none may remain on the host afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from vx.sandbox import Sandbox

# A driver that is a child subreaper starts a vx process: every orphan of that vx process then comes
# to the driver (instead of the machine's pid 1), where the test can count the zombies among them.
DRIVER = r"""
import ctypes, json, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

def zombie_children():
    me, found = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = open(f"/proc/{name}/stat", "rb").read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] == b"Z" and int(fields[1]) == me:
            found.append(int(name))
    return found

vx = subprocess.Popen([sys.executable, "-c", sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
line = vx.stdout.readline()            # the vx process ran its candidates and is still running
time.sleep(0.5)                        # orphans it made have had time to die
during = [p for p in zombie_children()]
vx.stdin.close()
vx.wait(timeout=60)
time.sleep(1.0)                        # whatever it left behind at exit has had time to die
after = [p for p in zombie_children() if p != vx.pid]
for pid in during + after:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
print(json.dumps({"vx": json.loads(line), "zombies_while_running": len(during), "zombies_after_exit": len(after)}))
"""

VX = """
import json, os, sys
from vx.sandbox import Sandbox, SandboxConfig
sb = Sandbox(SandboxConfig(layer={layer!r}, per_call_timeout=0.2))
statuses = []
for _ in range(6):
    statuses.append(sb.run_calls("def f():\\n    return 1\\n", "f", [([], {{}})]).status)
    statuses.append(sb.run_calls("def f():\\n    while True: pass\\n", "f", [([], {{}})]).calls[0].status)
print(json.dumps(statuses), flush=True)
sys.stdin.read()   # keep running until the driver has counted
"""


def test_no_zombie_accumulates_while_vx_runs_and_none_is_left_at_exit(sb: Sandbox) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, VX.format(layer=sb.layer)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["vx"] == ["ok", "timeout"] * 6
    assert result["zombies_while_running"] == 0, result
    assert result["zombies_after_exit"] == 0, result


# --------------------------------------------------------------------------------------------
# IPC

KEY = 0x7658_2023
MQ_NAME = b"/vx-leak-2023"

LEAVE = textwrap.dedent(f"""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.mq_open.restype = ctypes.c_int
    libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    libc.mq_send.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint]
    SECRET = b"secret of candidate one"

    def leave():
        made = {{}}
        shm = libc.shmget({KEY}, 4096, 0o1666)   # IPC_CREAT | 0666
        if shm >= 0:
            addr = libc.shmat(shm, None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(addr, SECRET, len(SECRET))
        made["shm"] = shm >= 0
        q = libc.msgget({KEY}, 0o1666)
        if q >= 0:
            buf = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + len(SECRET))
            ctypes.c_long.from_buffer(buf).value = 1
            buf[ctypes.sizeof(ctypes.c_long):] = SECRET
            libc.msgsnd(q, buf, len(SECRET), 0)
        made["msg"] = q >= 0
        made["sem"] = libc.semget({KEY}, 1, 0o1666) >= 0
        mq = libc.mq_open({MQ_NAME!r}, 0o102, 0o666, None)   # O_CREAT | O_RDWR
        if mq >= 0:
            libc.mq_send(mq, SECRET, len(SECRET), 0)
        made["mq"] = mq >= 0
        return made
""")

FIND = textwrap.dedent(f"""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    libc.mq_open.restype = ctypes.c_int
    libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
    libc.mq_receive.restype = ctypes.c_ssize_t
    libc.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]

    def find():
        seen = {{}}
        shm = libc.shmget({KEY}, 0, 0)
        text = b""
        if shm >= 0:
            addr = libc.shmat(shm, None, 0o10000)   # SHM_RDONLY
            if addr not in (None, ctypes.c_void_p(-1).value):
                text = ctypes.string_at(addr, 23)
        seen["shm"] = text.decode("latin-1")
        q = libc.msgget({KEY}, 0)
        got = b""
        if q >= 0:
            buf = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 64)
            n = libc.msgrcv(q, buf, 64, 0, 0o4000)   # IPC_NOWAIT
            if n > 0:
                got = buf.raw[ctypes.sizeof(ctypes.c_long):ctypes.sizeof(ctypes.c_long) + n]
        seen["msg"] = got.decode("latin-1")
        seen["sem"] = libc.semget({KEY}, 0, 0) >= 0
        mq = libc.mq_open({MQ_NAME!r}, 0o4000, 0, None)   # O_RDONLY | O_NONBLOCK
        text = b""
        if mq >= 0:
            buf = ctypes.create_string_buffer(8192)
            n = libc.mq_receive(mq, buf, 8192, None)
            text = buf.raw[:max(n, 0)]
        seen["mq"] = text.decode("latin-1")
        return seen
""")


def _host_objects() -> dict[str, bool]:
    """Whether the host holds an object under the attack's key (as root this sees every one)."""
    found = {}
    for kind, path in (("shm", "/proc/sysvipc/shm"), ("msg", "/proc/sysvipc/msg"), ("sem", "/proc/sysvipc/sem")):
        try:
            rows = open(path).read().splitlines()[1:]
        except OSError:
            rows = []
        found[kind] = any(row.split() and int(row.split()[0]) == KEY for row in rows)
    found["mq"] = os.path.exists("/dev/mqueue" + MQ_NAME.decode())
    return found


def _remove_host_objects() -> None:
    """Remove what a failed run of this attack (or of an unfixed vx) left on the host under its key."""
    if shutil.which("ipcrm"):
        for flag in ("-M", "-Q", "-S"):
            subprocess.run(["ipcrm", flag, str(KEY)], capture_output=True)
    try:
        os.unlink("/dev/mqueue" + MQ_NAME.decode())
    except OSError:
        pass


@pytest.fixture
def clean_host():
    _remove_host_objects()
    yield
    _remove_host_objects()


def test_ipc_left_by_one_candidate_is_not_there_for_the_next(sb: Sandbox, clean_host) -> None:
    if "host-ipc" in sb.known_limits():
        pytest.skip("known limit host-ipc on this machine: " + sb.describe().splitlines()[0])
    left = sb.run_calls(LEAVE, "leave", [([], {})])
    assert left.status == "ok" and left.calls[0].status == "ok", (left.detail, left.calls[0])
    found = sb.run_calls(FIND, "find", [([], {})])
    assert found.status == "ok" and found.calls[0].status == "ok", (found.detail, found.calls[0])
    seen = found.calls[0].value
    assert seen == {"shm": "", "msg": "", "sem": False, "mq": ""}, (left.calls[0].value, seen)
    assert not any(_host_objects().values()), f"IPC objects outlived the candidate on the host ({sb.layer})"
    if sb.layer == "rlimits":  # no IPC namespace: the seccomp filter refuses to create them at all
        assert left.calls[0].value == {"shm": False, "msg": False, "sem": False, "mq": False}
