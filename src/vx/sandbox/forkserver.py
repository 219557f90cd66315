"""The ``forkserver`` layer: one long-lived, already-isolated interpreter per worker that forks a
fresh, individually isolated child per candidate.

Why: under the other layers every candidate pays for a new wrapper process (bwrap/unshare), a new
interpreter and the harness (~15-20 ms before the candidate's first instruction). Here that is
paid once per worker; a candidate costs one fork of an interpreter that already has the harness
(and a few pure standard-library modules) loaded, plus the namespace set-up below (~1-3 ms).

Design (after AFL++'s fork server, multiprocessing's ``forkserver`` start method, nsjail's
clone-per-run mode and Chromium's zygote, which forks each renderer into a new pid namespace):

* **The server** runs under the same bubblewrap command line as the ``bwrap`` layer (new user,
  pid, network, ipc, uts and cgroup namespaces; only /usr and the interpreter, read-only;
  site-packages hidden; no nested user namespaces; ``--die-with-parent``), except that it keeps
  CAP_SYS_ADMIN *inside that user namespace* (to make namespaces and mounts for its children)
  and its root, /dev and everything else are read-only. It never holds candidate data: it
  receives only file descriptors (SCM_RIGHTS over a SOCK_SEQPACKET socket) and each child reads
  its own request, so no candidate can find another's code or inputs in inherited memory. One
  server runs one candidate at a time; concurrent callers (threads) get servers of their own.
* **Each child**, before any candidate code (harness.py, section "fork-server mode"): a new session; a new pid namespace
  of its own (it is that namespace's init, so everything it starts ends with it), so it can neither see nor signal the
  server, other candidates or vx; new mount and IPC namespaces with fresh size-limited tmpfs mounts on /sandbox (the
  workdir), /tmp and /dev/shm and a /proc that shows only its own namespace; all capabilities dropped; then
  no_new_privs, Landlock (where the kernel has it), the seccomp deny-list of the ``rlimits`` layer (compiled once by the
  server), the rlimits, and every descriptor it does not need closed. (As an init it ignores signals it sends itself
  without a handler, and orphans it leaves are reaped when it ends; an extra supervising process would cost ~1.7 ms of
  CPU per candidate.) When the run ends the parent kills the child's pid namespace through a pidfd and waits until the
  server has reaped it, so nothing of one candidate is alive when the next one starts.

The parent side (this module) keeps a pool of idle servers per configuration and process;
servers are started from one long-lived thread (bwrap's ``--die-with-parent`` is tied to the
*thread* that started it), dropped in forked children of vx (``os.register_at_fork``), and ended
at exit. A server that misbehaves or dies is killed and replaced; a run whose server vanished
before its child started is retried once on a fresh server.
"""

from __future__ import annotations

import array
import atexit
import fcntl
import json
import os
import queue
import select
import selectors
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import attrs

from vx.sandbox.runner import (
    SANDBOX_HOME,
    BwrapInit,
    Plan,
    RawRun,
    _Capped,
    _close_frames,
    _drain,
    _Frames,
    _take_output,
    harness_blob,
)
from vx.sandbox.serialize import encode_request

LAYER = "forkserver"

#: Pure standard-library modules imported once by the server, so candidates that import them
#: (most do: ``from typing import List``) do not pay for it. None of them keeps per-process
#: state that would make candidates differ from fresh interpreters (``random`` does: excluded).
PRELOAD: tuple[str, ...] = (
    "typing",
    "collections",
    "collections.abc",
    "itertools",
    "functools",
    "math",
    "re",
    "heapq",
    "bisect",
    "string",
    "operator",
    "copy",
)

#: Seconds a new server may take to report that it is ready.
START_TIMEOUT = 30.0
#: Idle servers kept per configuration and process (more are closed when released).
MAX_IDLE = 16
#: Seconds to wait for the server's report that a killed child is gone.
REAP_TIMEOUT = 5.0
#: Seconds the parent lets a run's call frames gather in their pipe after it read some, before it reads
#: again (it still wakes at once when the child exits, the server writes or a deadline comes): one wake-up
#: and one read for the frames of many short calls instead of one each (the stop rule and the per-call
#: deadlines see every frame, at most this much later).
FRAME_GATHER = 0.001
#: ... unless a read brought this many bytes or more: a stream of large values is read as fast as it comes.
_GATHER_BELOW = 16384

_CHILD_RESULT_FD = 3


class ServerError(RuntimeError):
    """A fork server could not be started or broke its protocol."""


def forkserver_plans(
    bwrap_plans: Sequence[Plan], seccomp: dict[str, Any] | None, landlock: dict[str, Any] | None
) -> list[Plan]:
    """Fork-server variants of the bwrap plans, strongest first: the first bwrap variant with
    seccomp and Landlock, then without one or both (each is probed; the first that works wins)."""
    plans: list[Plan] = []
    for base in bwrap_plans[:1]:  # the strongest bwrap variant (the others only differ in bwrap options)
        wrapper = list(base.wrapper)
        if "--cap-drop" in wrapper:
            at = wrapper.index("--cap-drop") + 2
            wrapper[at:at] = ["--cap-add", "CAP_SYS_ADMIN"]
        # The server needs no workdir or /tmp of its own: every child mounts fresh ones.
        out: list[str] = []
        i = 0
        while i < len(wrapper):
            part = wrapper[i]
            if part == "--size":
                i += 2
                continue
            if part == "--tmpfs" and wrapper[i + 1] in ("/tmp", SANDBOX_HOME):
                out += ["--dir", wrapper[i + 1]]
                i += 2
                continue
            if part == "--bind" and i + 2 < len(wrapper) and wrapper[i + 2] == SANDBOX_HOME:
                out += ["--dir", SANDBOX_HOME]
                i += 3
                continue
            out.append(part)
            i += 1
        assert out[-1] == "--"
        chdir = out.index("--chdir")
        out[chdir:chdir] = ["--remount-ro", "/dev", "--remount-ro", "/"]
        for filt, lock in ((seccomp, landlock), (seccomp, None), (None, landlock), (None, None)):
            plan = attrs.evolve(
                base,
                layer=LAYER,
                wrapper=tuple(out),
                supervise="none",
                no_new_privs=True,
                seccomp=filt,
                landlock=lock,
                workdir_owner=None,
            )
            if plan not in plans:
                plans.append(plan)
    return plans


# --------------------------------------------------------------------------------------------
# servers
# --------------------------------------------------------------------------------------------


class _Spawner:
    """Starts processes from one long-lived thread: bwrap's --die-with-parent (PR_SET_PDEATHSIG)
    fires when the *thread* that started it ends, and callers are often short-lived pool threads."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def call(self, fn: Callable[[], Any]) -> Any:
        if threading.current_thread() is threading.main_thread():
            return fn()
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, name="vx-forkserver-spawner", daemon=True)
                self.thread.start()
        done: Future[Any] = Future()
        self.jobs.put((fn, done))
        return done.result()

    def _loop(self) -> None:
        while True:
            fn, done = self.jobs.get()
            try:
                done.set_result(fn())
            except BaseException as exc:  # handed to the caller
                done.set_exception(exc)


class _Server:
    """One running fork server (bwrap + the harness in server mode) and its control socket."""

    def __init__(self, key: str, plan: Plan, server_request: dict[str, Any], hash_seed: int | None) -> None:
        self.key = key
        self.owner = os.getpid()
        self.broken = False
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        request = dict(server_request, mode="server", supervise="none", control_fd=theirs.fileno())
        encoded = encode_request(request)
        payload = harness_blob(plan.same_bytecode) + len(encoded).to_bytes(8, "big") + encoded
        kwargs: dict[str, Any] = {}
        if plan.popen_user is not None:
            kwargs.update(user=plan.popen_user, group=plan.popen_group, extra_groups=[])
        self.init = BwrapInit()
        argv = plan.argv("/", (), server_request["disk_bytes"], info_fd=self.init.write_fd)
        # Import paths appear read-only at the same path; those below a directory every child
        # replaces with a fresh tmpfs (/tmp, ...) are bound elsewhere and re-bound by each child.
        stash = dict(server_request["rebind"])
        binds = [arg for path in server_request["import_paths"] for arg in ("--ro-bind", path, stash.get(path, path))]
        at = argv.index("--remount-ro")  # before / turns read-only
        argv[at:at] = binds

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(), self.init.write_fd),
                env=plan.child_env(SANDBOX_HOME, hash_seed),
                cwd="/",
                start_new_session=True,
                close_fds=True,
                **kwargs,
            )

        try:
            self.proc = _SPAWNER.call(start)
        except OSError as exc:
            ours.close()
            self.init.reap()
            raise ServerError(f"could not start bwrap: {exc}") from None
        finally:
            theirs.close()
            self.init.close_write()
        with _LOCK:
            _ALL.add(self)
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(payload)
            self.proc.stdin.close()
        except OSError:
            pass  # it died at once: the hello below says why
        self.sock.settimeout(START_TIMEOUT)
        try:
            hello = self.sock.recv(4096)
        except (TimeoutError, OSError) as exc:
            hello = b""
            why = f"no answer within {START_TIMEOUT:g} s ({exc})"
        else:
            why = ""
        self.sock.settimeout(None)
        if hello != b"H":
            if hello.startswith(b"F"):
                why = hello[1:].decode("utf-8", "replace")
            self.close(kill=True)
            err = self._stderr_tail()
            raise ServerError((why or err or "the fork server exited before it was ready")[:400])

    def _stderr_tail(self) -> str:
        if self.proc.stderr is None:
            return ""
        try:
            os.set_blocking(self.proc.stderr.fileno(), False)
            data = self.proc.stderr.read(65536) or b""
        except (OSError, ValueError):
            data = b""
        lines = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else ""

    def alive(self) -> bool:
        return not self.broken and self.proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """End the server (closing the control socket makes it kill its child and leave)."""
        self.broken = True
        try:
            self.sock.close()
        except OSError:
            pass
        if kill:
            _kill_tree(self.proc)
        else:
            try:
                self.proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                _kill_tree(self.proc)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        self.init.reap()  # bubblewrap's init, once the server's bwrap is gone (no zombie at exit)
        with _LOCK:
            _ALL.discard(self)

    def forget(self) -> None:
        """In a forked copy of vx: drop our copies of the descriptors, leave the server alone."""
        self.broken = True
        for closer in (
            self.sock.close,
            *(s.close for s in (self.proc.stdin, self.proc.stderr) if s),
            lambda: os.close(self.init.read_fd),
        ):
            try:
                closer()
            except OSError:
                pass


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except OSError:
        pass
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILLed processes exit
        pass


_LOCK = threading.Lock()
_IDLE: dict[str, list[_Server]] = {}
_ALL: set[_Server] = set()
_SPAWNER = _Spawner()


def _acquire(key: str, make: Callable[[], _Server]) -> _Server:
    while True:
        with _LOCK:
            idle = _IDLE.get(key)
            server = idle.pop() if idle else None
        if server is None:
            return make()
        if server.alive():
            return server
        server.close(kill=True)


def _release(server: _Server) -> None:
    if server.broken or server.owner != os.getpid():
        return
    with _LOCK:
        idle = _IDLE.setdefault(server.key, [])
        if len(idle) < MAX_IDLE:
            idle.append(server)
            return
    server.close()


def shutdown() -> None:
    """End every fork server of this process (also run at exit)."""
    with _LOCK:
        servers = list(_ALL)
        _IDLE.clear()
    for server in servers:
        try:
            server.sock.close()  # all at once: each server sees end of file and leaves
        except OSError:
            pass
    for server in servers:
        server.close()


def _after_fork_in_child() -> None:
    global _LOCK, _SPAWNER
    for server in list(_ALL):
        server.forget()
    _ALL.clear()
    _IDLE.clear()
    _LOCK = threading.Lock()
    _SPAWNER = _Spawner()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(shutdown)


def idle_servers() -> int:
    """Servers of this process waiting for work (for tests and `vx doctor`)."""
    with _LOCK:
        return sum(len(v) for v in _IDLE.values())


# --------------------------------------------------------------------------------------------
# one candidate
# --------------------------------------------------------------------------------------------


_KEYS: dict[tuple[Any, ...], tuple[str, dict[str, Any], Plan]] = {}


def _server_key(plan: Plan, request: dict[str, Any], hash_seed: int | None) -> tuple[str, dict[str, Any]]:
    """The server configuration a run needs (what is fixed for the server's lifetime) and its key."""
    disk = int(request.get("disk_bytes", 64 << 20))
    paths = tuple(request.get("import_paths", ()))
    memo = (id(plan), hash_seed, disk, paths)
    found = _KEYS.get(memo)
    if found is not None and found[2] is plan:
        return found[0], found[1]
    seccomp = plan.seccomp
    if seccomp is not None:
        seccomp = {"library": seccomp["library"], "rules": seccomp["rules"]}
    rebind = [[path, f"/.vx-import-{i}"] for i, path in enumerate(paths) if _replaced_in_child(path)]
    server_request = {
        "seccomp": seccomp,
        "landlock": plan.landlock,
        "preload": list(PRELOAD),
        "disk_bytes": disk,
        "import_paths": list(paths),
        "rebind": rebind,  # [path, where the server sees it]
    }
    key = json.dumps([attrs.asdict(plan), server_request, hash_seed], sort_keys=True, default=str)
    _KEYS[memo] = (key, server_request, plan)
    return key, server_request


#: Directories each child replaces with fresh mounts (see harness.py, ``_child``).
CHILD_MOUNTS = (SANDBOX_HOME, "/tmp", "/dev/shm", "/proc")


def _replaced_in_child(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in CHILD_MOUNTS)


def launch(
    plan: Plan,
    request: dict[str, Any],
    *,
    total_timeout: float,
    frame_timeouts: Sequence[float] = (),
    kill_grace: float,
    stream_cap: int,
    max_result_bytes: int,
    hash_seed: int | None,
    tmp_root: str | None = None,
    result_channel: bool = True,
    on_frame: Callable[[int, bytes], bool] | None = None,
) -> RawRun:
    """Run one candidate in a fresh child of a fork server; same contract as ``runner.launch``."""
    del tmp_root  # every child gets a fresh tmpfs workdir inside the sandbox
    start = time.monotonic()
    key, server_request = _server_key(plan, request, hash_seed)
    child_request = dict(request, seccomp=None, result_fd=_CHILD_RESULT_FD)
    encoded = encode_request(child_request)
    payload = len(encoded).to_bytes(8, "big") + encoded
    for attempt in (0, 1):
        run = RawRun()
        try:
            server = _acquire(key, lambda: _Server(key, plan, server_request, hash_seed))
        except ServerError as exc:
            run.spawn_error = f"could not start the forkserver sandbox: {exc}"
            run.wall_time = time.monotonic() - start
            return run
        outcome = "broken"
        try:
            outcome = _run_one(
                server,
                payload,
                run,
                start=start,
                total_timeout=total_timeout,
                frame_timeouts=frame_timeouts,
                kill_grace=kill_grace,
                stream_cap=stream_cap,
                max_result_bytes=max_result_bytes,
                result_channel=result_channel,
                on_frame=on_frame,
            )
        finally:
            if outcome == "ok":
                _release(server)
            else:
                server.close(kill=True)
        run.wall_time = time.monotonic() - start
        if outcome != "retry" or attempt == 1:
            if outcome == "retry":
                run.spawn_error = "the fork server died before starting the candidate (twice)"
            return run
    raise AssertionError("unreachable")  # pragma: no cover


def _recv(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    data, ancdata, _flags, _addr = sock.recvmsg(64, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, blob in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(blob[: len(blob) - len(blob) % fds.itemsize])
    return data, list(fds)


def _run_one(
    server: _Server,
    payload: bytes,
    run: RawRun,
    *,
    start: float,
    total_timeout: float,
    frame_timeouts: Sequence[float],
    kill_grace: float,
    stream_cap: int,
    max_result_bytes: int,
    result_channel: bool,
    on_frame: Callable[[int, bytes], bool] | None,
) -> str:
    """ "ok" (the server may be reused), "retry" (it died before the child did anything) or
    "broken" (kill it)."""
    req_r, req_w = os.pipe()
    if result_channel:
        res_r, res_w = os.pipe()
    else:  # scripts report through their exit code
        res_r, res_w = -1, os.open(os.devnull, os.O_WRONLY)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    mine = [req_w, out_r, err_r] + ([res_r] if res_r >= 0 else [])
    state = _RunState()
    try:
        # The request goes into its pipe before the child exists, so it can read it at once.
        if len(payload) > 1 << 16:
            try:
                fcntl.fcntl(req_w, fcntl.F_SETPIPE_SZ, min(len(payload), 1 << 20))
            except OSError:
                pass
        os.set_blocking(req_w, False)
        try:
            sent = os.write(req_w, payload)
        except BlockingIOError:
            sent = 0
        try:
            server.sock.sendmsg(
                [b"R"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [req_r, res_w, out_w, err_w]))]
            )
        except OSError:
            return "retry"
        finally:
            for fd in (req_r, res_w, out_w, err_w):
                os.close(fd)
        _watch(
            server,
            state,
            payload[sent:],
            req_w,
            res_r,
            out_r,
            err_r,
            run,
            start=start,
            total_timeout=total_timeout,
            frame_timeouts=frame_timeouts,
            kill_grace=kill_grace,
            stream_cap=stream_cap,
            max_result_bytes=max_result_bytes,
            on_frame=on_frame,
        )
        if state.error is not None:
            run.spawn_error = state.error
            return "ok"
        if state.lost:  # the server went away
            nothing = not (run.frames or run.stdout or run.stderr)
            return "retry" if state.pidfd is None and nothing else "broken"
        if state.pidfd is None and run.stopped and not state.error:
            # the caller stopped the run at a frame the child sent before the server's report of the
            # fork was read: take the report now, so that the child is ended and the server kept
            _await_fork(server, state, max(kill_grace, REAP_TIMEOUT))
            if state.error is not None:
                run.spawn_error = state.error
                return "ok"
        if state.pidfd is None:  # no report of the fork within the deadline: the server is stuck
            return "broken"
        if state.status is None:
            if not state.exited:
                try:
                    signal.pidfd_send_signal(state.pidfd, signal.SIGKILL)  # the init: its namespace ends
                except ProcessLookupError:
                    pass
            # The server reports once it has reaped the child: then its whole namespace is gone.
            if not _await_status(server, state, max(kill_grace, REAP_TIMEOUT)):
                return "broken"
        if state.status is None:  # (reported reaped, yet no status: the server is not to be trusted)
            return "broken"
        run.returncode = os.waitstatus_to_exitcode(state.status)
        return "ok"
    finally:
        if state.pidfd is not None:
            os.close(state.pidfd)
        for fd in mine:
            try:
                os.close(fd)
            except OSError:
                pass


@attrs.define
class _RunState:
    pidfd: int | None = None
    status: int | None = None
    exited: bool = False
    lost: bool = False
    error: str | None = None


def _on_message(server: _Server, state: _RunState) -> None:
    """Take one control message from the server (non-blocking) into ``state``."""
    try:
        data, fds = _recv(server.sock)
    except BlockingIOError:
        return
    except OSError:
        data, fds = b"", []
    if data.startswith(b"P") and len(data) == 5 and len(fds) == 1 and state.pidfd is None:
        state.pidfd = fds[0]
        return
    for fd in fds:
        os.close(fd)
    if data.startswith(b"S") and len(data) == 5 and state.pidfd is not None:
        state.status = int.from_bytes(data[1:], "big", signed=True)
        state.exited = True
    elif data.startswith(b"E") and state.pidfd is None:
        state.error = "the fork server could not start a child: " + data[1:].decode("utf-8", "replace")[:300]
    else:  # end of file, or not our protocol
        state.lost = True


def _await(server: _Server, state: _RunState, timeout: float, pending: Callable[[], bool]) -> None:
    """Take the server's control messages into ``state`` while ``pending()`` and the server is there, at
    most ``timeout`` s."""
    give_up = time.monotonic() + timeout
    while pending() and not state.lost:
        left = give_up - time.monotonic()
        if left <= 0:
            return
        if select.select([server.sock], [], [], left)[0]:
            _on_message(server, state)


def _await_fork(server: _Server, state: _RunState, timeout: float) -> None:
    """Wait for the server's report that it forked the child (its pidfd), or that it could not."""
    _await(server, state, timeout, lambda: state.pidfd is None and state.error is None)


def _await_status(server: _Server, state: _RunState, timeout: float) -> bool:
    """Wait for the server's report that it reaped the child; whether it came."""
    _await(server, state, timeout, lambda: state.status is None)
    return state.status is not None


def _watch(
    server: _Server,
    state: _RunState,
    pending: bytes,
    req_w: int,
    res_r: int,
    out_r: int,
    err_r: int,
    run: RawRun,
    *,
    start: float,
    total_timeout: float,
    frame_timeouts: Sequence[float],
    kill_grace: float,
    stream_cap: int,
    max_result_bytes: int,
    on_frame: Callable[[int, bytes], bool] | None,
) -> None:
    """Feed the rest of the request, collect output and control messages, enforce the
    deadlines (as ``runner._watch`` does for a process tree)."""
    out, err = _Capped(stream_cap), _Capped(stream_cap)
    frames = _Frames(max_result_bytes)
    readers: dict[int, Any] = {out_r: out, err_r: err}
    if res_r >= 0:
        readers[res_r] = frames
    sel = selectors.DefaultSelector()
    calm = selectors.DefaultSelector()  # everything but the result frames: watched while they gather
    for fd in readers:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
        if fd != res_r:
            calm.register(fd, selectors.EVENT_READ)
    sock = server.sock.fileno()
    server.sock.setblocking(False)
    sel.register(sock, selectors.EVENT_READ)
    calm.register(sock, selectors.EVENT_READ)
    view = memoryview(pending)
    if view:
        sel.register(req_w, selectors.EVENT_WRITE)
    total_deadline = start + total_timeout
    frame_deadline: float | None = None
    gather_until = 0.0  # frames arrived: until then the next ones gather in the pipe (see FRAME_GATHER)

    def take(fd: int) -> None:
        """Read what ``fd`` has; frames that came in a small read start a gathering window."""
        nonlocal frame_deadline, gather_until
        if fd not in sel.get_map():
            return
        had, size = len(frames.frames), frames.total
        frame_deadline = _take_output(
            fd, sel, readers, frames, run, on_frame, frame_timeouts, kill_grace, frame_deadline
        )
        if fd == res_r and FRAME_GATHER and len(frames.frames) > had and frames.total - size < _GATHER_BELOW:
            gather_until = time.monotonic() + FRAME_GATHER
        elif fd not in sel.get_map() and fd in calm.get_map():
            calm.unregister(fd)  # its end of file

    try:
        while True:
            now = time.monotonic()
            if gather_until and (now >= gather_until or (frame_deadline is not None and now >= frame_deadline)):
                gather_until = 0.0  # take what gathered before any deadline is judged (and gather again)
                take(res_r)
                if run.stopped or frames.error:
                    break
                continue
            deadline = total_deadline if frame_deadline is None else min(total_deadline, frame_deadline)
            if now >= deadline:
                run.deadline = "call" if frame_deadline is not None and frame_deadline < total_deadline else "total"
                break
            if gather_until:
                events = calm.select(min(deadline, gather_until) - now)
            else:
                events = sel.select(deadline - now)
            for key, _ in events:
                fd = key.fd
                if fd == req_w:
                    try:
                        written = os.write(fd, view[: 1 << 16])
                        view = view[written:]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        sel.unregister(fd)
                elif fd == sock:
                    had = state.pidfd
                    _on_message(server, state)
                    if state.pidfd is not None and had is None:
                        sel.register(state.pidfd, selectors.EVENT_READ)
                        calm.register(state.pidfd, selectors.EVENT_READ)
                elif fd == state.pidfd:
                    state.exited = True
                    sel.unregister(fd)
                    calm.unregister(fd)
                else:
                    take(fd)
                if run.stopped:
                    break
            if run.stopped or frames.error or state.exited or state.lost or state.error:
                break
        if frames.error:
            run.protocol_error = frames.error
        if state.exited and not run.stopped and not frames.error and res_r >= 0:
            take(res_r)  # the frames that gathered: taken as they would have been (the stop rule sees each)
        _drain(sel, readers, frames, run)
    finally:
        calm.close()
        sel.close()
        server.sock.setblocking(True)
    _close_frames(frames, run)
    run.stdout, run.stdout_truncated = bytes(out.data), out.truncated
    run.stderr, run.stderr_truncated = bytes(err.data), err.truncated
