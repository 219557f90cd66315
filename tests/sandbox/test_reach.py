"""Sandbox reach: host UNIX sockets and shared process limits.

* A candidate must not reach a UNIX socket of the host: a pathname socket (a file the sandbox
  account may open, e.g. a world-writable daemon socket), an abstract one, or a datagram
  socket such as /dev/log.
* One candidate's fork bomb must not make a concurrent honest candidate fail (with a shared
  RLIMIT_NPROC, the second one cannot even start its worker).

Each test runs the attack on every available layer; a layer that cannot close a hole says so in
`vx doctor`'s layer description (``Sandbox.limits_text()``), and the test then checks that it
does say so.
"""

from __future__ import annotations

import os
import socket
import tempfile
import textwrap
import threading
import time
import uuid

import pytest

from vx.sandbox import LAYERS, Sandbox, SandboxConfig

from .conftest import sandbox_for


def _documented(sb: Sandbox, hole: str) -> bool:
    """True when the layer states this hole as a known limit (then the attack may succeed)."""
    return hole in getattr(sb, "known_limits", lambda: ())()


@pytest.fixture
def host_sockets():
    """A world-reachable pathname stream socket, a pathname datagram socket and an abstract
    socket on the host, each recording what reaches it."""
    folder = tempfile.mkdtemp(prefix="vx-test-sock-", dir="/tmp")
    os.chmod(folder, 0o777)
    stream_path, dgram_path = os.path.join(folder, "stream"), os.path.join(folder, "dgram")
    abstract = "\0vx-test-" + uuid.uuid4().hex
    stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stream.bind(stream_path)
    stream.listen(4)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(dgram_path)
    hidden = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hidden.bind(abstract)
    hidden.listen(4)
    for path in (stream_path, dgram_path):
        os.chmod(path, 0o777)
    for s in (stream, dgram, hidden):
        s.settimeout(0.1)
    arrived: list[object] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            for s in (stream, hidden):
                try:
                    conn, _ = s.accept()
                    arrived.append("connection")
                    conn.close()
                except OSError:
                    pass
            try:
                arrived.append(dgram.recv(100))
            except OSError:
                pass

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        yield {"stream": stream_path, "dgram": dgram_path, "abstract": abstract}, arrived
    finally:
        time.sleep(0.3)
        stop.set()
        watcher.join()
        for s in (stream, dgram, hidden):
            s.close()
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


UNIX_CLIENT = textwrap.dedent(
    """
    import socket
    def f(paths):
        out = []
        for kind, path in sorted(paths.items()):
            try:
                if kind == "dgram":
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    s.sendto(b"escaped", path)
                    out.append(kind + ": sent")
                else:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.settimeout(1.0)
                    s.connect(path)
                    s.sendall(b"escaped")
                    out.append(kind + ": connected")
            except OSError as exc:
                out.append(kind + ": " + type(exc).__name__)
        a, b = socket.socketpair()  # a private pair (multiprocessing, asyncio) keeps working
        a.sendall(b"ok")
        out.append("socketpair: " + b.recv(2).decode())
        return out
    """
)


def test_host_unix_sockets_are_unreachable(sb: Sandbox, host_sockets) -> None:
    paths, arrived = host_sockets
    rep = sb.run_calls(UNIX_CLIENT, "f", [([paths], {})], timeouts=[4.0])
    assert rep.status == "ok", rep.detail
    result = rep.calls[0].value
    if _documented(sb, "unix-sockets"):
        pytest.skip(f"{sb.layer} documents host UNIX sockets as reachable: {result}")
    assert arrived == [], result
    assert not any(r.endswith(("connected", "sent")) for r in result), result
    assert "socketpair: ok" in result


FORK_BOMB = textwrap.dedent(
    """
    import os, time
    def bomb():
        while True:
            try:
                if os.fork() == 0:
                    while True:
                        try:
                            os.fork()
                        except OSError:
                            time.sleep(0.01)
            except OSError:
                time.sleep(0.01)
    """
)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_fork_bomb_does_not_starve_a_concurrent_candidate(layer: str) -> None:
    sandbox_for(layer)  # skips when the layer is unavailable
    sb = Sandbox(SandboxConfig(layer=layer, per_call_timeout=4.0, total_timeout=10.0, kill_grace=0.5))
    bomb_done = threading.Event()

    def run_bomb() -> None:
        try:
            sb.run_calls(FORK_BOMB, "bomb", [([], {})])
        finally:
            bomb_done.set()

    thread = threading.Thread(target=run_bomb)
    thread.start()
    try:
        time.sleep(1.5)  # the bomb has used up its process budget by now
        assert not bomb_done.is_set(), "the fork bomb ended too early to test anything"
        # an honest candidate that starts one process of its own (as subprocess or
        # multiprocessing code does)
        honest = (
            "import os\ndef f(x):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(7)\n"
            "    return x + os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) - 6\n"
        )
        reports = [sb.run_calls(honest, "f", [([i], {})]) for i in range(3)]
    finally:
        thread.join()
    if _documented(sb, "shared-nproc"):
        pytest.skip(f"{layer} documents a process limit shared by concurrent candidates")
    for i, rep in enumerate(reports):
        assert rep.status == "ok", rep.detail
        assert rep.calls[0].value == i + 1


def test_known_limits_are_described(sb: Sandbox) -> None:
    """Whatever a layer cannot close is named in its description (`vx doctor`)."""
    text = sb.describe()
    for hole in getattr(sb, "known_limits", lambda: ())():
        assert hole in text, f"{hole} is a known limit of {sb.layer} but `vx doctor` does not say so"


def test_a_layer_without_seccomp_or_private_uids_names_its_holes(any_sb: Sandbox) -> None:
    import attrs

    from vx.sandbox.layers import LIMIT_TEXT, known_limits

    d = any_sb.detection
    weak = attrs.evolve(
        d, plan=attrs.evolve(d.plan, layer="rlimits", seccomp=None, private_uids=None, landlock=None), userns=False
    )
    assert set(known_limits(weak)) == {"unix-sockets", "shared-nproc", "host-files", "host-ipc"}
    strong = attrs.evolve(
        d,
        plan=attrs.evolve(d.plan, layer="rlimits", seccomp={"rules": []}, private_uids=(1, 2), landlock={"read": []}),
        userns=False,
    )
    assert known_limits(strong) == ()
    assert all(f"({hole})" in LIMIT_TEXT[hole] for hole in LIMIT_TEXT)
