"""Parent side: start one sandboxed child, feed it, watch it, kill it, collect raw output.

One call of :func:`launch` = one fresh process tree for one candidate:

1. a private working directory is created (owned by the sandbox account, mode 0700) and
   removed afterwards, whatever happened (under bwrap with a sized tmpfs the candidate's
   workdir lives in the sandbox's memory instead);
2. the child starts in its own session/process group, with an environment built from an
   allow-list, optionally as the unprivileged sandbox account (``Plan.popen_user``), under
   the layer's wrapper command (bwrap / unshare / none), running ``python -S -s -B -P -c
   BOOTSTRAP``;
3. stdin carries the harness (precompiled when possible) and the request; vx keeps stdin
   open for the whole run (its end of file tells the unshare/rlimits supervisors that vx
   died). The result fd, stdout and stderr are drained concurrently (with caps) and result
   frames are split as they arrive (an ``on_frame`` hook may stop the run early);
4. the parent's wall clock is the real timeout: a deadline for the whole run plus one per
   call (measured from the previous frame). On expiry, a protocol violation or a stop, the
   tree is taken down from the inside (the namespace's init, or the rlimits supervisor via
   SIGTERM, which freezes, kills and reaps every descendant), then the whole process group
   is SIGKILLed. Descendants that left the group (setsid) die with the pid namespace (bwrap,
   unshare) or are killed by the subreaper supervisor (rlimits).

Nothing here interprets frames beyond their length prefix; ``report.py`` validates them.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import json
import marshal
import os
import random
import selectors
import shutil
import signal
import stat as stat_mod
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import attrs

from vx.sandbox.serialize import encode_request

#: Python flags for the child: no site (-S), no user site (-s), no .pyc writes (-B), no
#: script/cwd directory on sys.path (-P). Not -E: PYTHONHASHSEED must be honoured; the
#: environment is built from an allow-list anyway.
PYTHON_FLAGS: tuple[str, ...] = ("-S", "-s", "-B", "-P")

SANDBOX_HOME = "/sandbox"
"""Where the working directory appears inside bubblewrap."""

_READ_CHUNK = 1 << 16

#: How long the rlimits layer's supervisor gets to kill and reap escaped descendants after
#: SIGTERM before the whole group is SIGKILLed (it needs a few /proc scans).
_SUPERVISOR_GRACE = 2.0


#: The child's whole ``-c`` program: reads the harness from stdin (a marshalled code object,
#: or source text when the child's Python cannot load this Python's bytecode) and runs it.
#: The request follows the harness on stdin.
BOOTSTRAP = (
    "import marshal,os\n"
    "def r(n):\n"
    " b=b''\n"
    " while len(b)<n:\n"
    "  c=os.read(0,n-len(b))\n"
    "  if not c:raise SystemExit(70)\n"
    "  b+=c\n"
    " return b\n"
    "k=r(1);n=int.from_bytes(r(8),'big');h=r(n)\n"
    "h=marshal.loads(h) if k==b'c' else compile(h,'<vx-harness>','exec')\n"
    "del r,k,n\n"
    "exec(h,{'__name__':'__main__','__builtins__':__builtins__})\n"
)


@lru_cache(maxsize=1)
def harness_source() -> str:
    """The child program (harness.py)."""
    return (Path(__file__).with_name("harness.py")).read_text(encoding="utf-8")


@lru_cache(maxsize=2)
def harness_blob(bytecode: bool) -> bytes:
    """The stdin prefix that carries the harness: kind byte, 8-byte length, payload."""
    if bytecode:
        body = marshal.dumps(compile(harness_source(), "<vx-harness>", "exec", dont_inherit=True))
        return b"c" + len(body).to_bytes(8, "big") + body
    body = harness_source().encode("utf-8")
    return b"s" + len(body).to_bytes(8, "big") + body


@attrs.frozen
class Plan:
    """How to start the child for one layer (built by ``layers.py``)."""

    layer: str
    python: str
    #: Wrapper argv before the interpreter; ``{workdir}`` is replaced by the host workdir.
    wrapper: tuple[str, ...] = ()
    #: Account for the exec'ed process (Popen user/group); None keeps the current one.
    popen_user: int | None = None
    popen_group: int | None = None
    #: Account the harness worker switches to before candidate code (rlimits layer as root,
    #: where the supervisor keeps root so the candidate cannot kill it).
    drop: tuple[int, int] | None = None
    #: "none" (bwrap provides the init), "init" (harness is pid 1 of a new pid namespace and
    #: forks the worker), "subreaper" (no namespace: supervisor kills escaped descendants).
    supervise: str = "none"
    no_new_privs: bool = False
    seccomp: dict[str, Any] | None = None
    #: Landlock file-system rules (``{"read": [dirs]}``; the workdir is writable), or None.
    landlock: dict[str, Any] | None = None
    #: The workdir as the child sees it (None: the host path).
    inner_workdir: str | None = None
    #: Owner to give the workdir (uid, gid), when the child runs as another account.
    workdir_owner: tuple[int, int] | None = None
    #: True when the child's Python has this Python's major.minor version, so the harness
    #: can be sent precompiled (saves compiling ~20 KB of source per candidate).
    same_bytecode: bool = False
    #: (first uid, count): each run takes a uid of its own from this range (vx as root, layers
    #: without a user namespace), so concurrent candidates share no RLIMIT_NPROC count and
    #: cannot signal each other. ``{uid}`` in the wrapper and the account fields are replaced.
    private_uids: tuple[int, int] | None = None

    def for_uid(self, uid: int) -> Plan:
        """This plan with the candidate running as ``uid`` (same group)."""
        gid = (self.drop or self.workdir_owner or (uid, uid))[1]
        return attrs.evolve(
            self,
            wrapper=tuple(part.replace("{uid}", str(uid)) for part in self.wrapper),
            drop=(uid, gid) if self.drop is not None else None,
            popen_user=uid if self.popen_user is not None else None,
            workdir_owner=(uid, gid) if self.workdir_owner is not None else None,
            private_uids=None,
        )

    def argv(
        self, workdir: str, ro_paths: Sequence[str] = (), disk_bytes: int = 64 << 20, info_fd: int | None = None
    ) -> list[str]:
        wrapper = [part.replace("{workdir}", workdir).replace("{disk_bytes}", str(disk_bytes)) for part in self.wrapper]
        if info_fd is not None and self.uses_bwrap:  # bubblewrap reports its init's pid there (BwrapInit)
            wrapper[1:1] = ["--info-fd", str(info_fd)]
        if ro_paths and self.layer == "bwrap":  # make them visible, read-only, at the same path
            assert wrapper[-1] == "--"
            binds = [arg for path in ro_paths for arg in ("--ro-bind", path, path)]
            wrapper = [*wrapper[:-1], *binds, "--"]
        return [*wrapper, self.python, *PYTHON_FLAGS, "-c", BOOTSTRAP]

    @property
    def uses_bwrap(self) -> bool:
        return (
            self.layer in ("bwrap", "forkserver")
            and bool(self.wrapper)
            and os.path.basename(self.wrapper[0]) == "bwrap"
        )

    def child_env(self, workdir: str, hash_seed: int | None) -> dict[str, str]:
        """The child's whole environment (an allow-list: nothing is inherited)."""
        home = self.inner_workdir or workdir
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "HOME": home,
            "TMPDIR": "/tmp" if self.inner_workdir else home,
            "PYTHONIOENCODING": "utf-8",
        }
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = str(hash_seed)
        return env


@attrs.define
class RawRun:
    """What one child produced, uninterpreted."""

    frames: list[bytes] = attrs.field(factory=list)
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    returncode: int | None = None
    #: "total" or "call" when the parent's deadline fired, else None.
    deadline: str | None = None
    #: Length-prefix level problem (oversized frame, too much data, trailing bytes).
    protocol_error: str | None = None
    spawn_error: str | None = None
    #: The caller's ``on_frame`` hook asked to stop after the last frame received.
    stopped: bool = False
    wall_time: float = 0.0


def _prctl(option: int, value: int) -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


_subreaper_pid: list[int] = [0]


def become_subreaper() -> bool:
    """Make this process a child subreaper (once per process; forked op workers make their own): an
    orphan among its descendants is re-parented here instead of to the machine's pid 1, which in many
    containers never reaps it. Needed for bubblewrap, whose outer process exits as soon as its init
    reports the command's exit status, before the init itself is reaped (see :class:`BwrapInit`)."""
    if _subreaper_pid[0] != os.getpid():
        if not _prctl(36, 1):  # PR_SET_CHILD_SUBREAPER
            return False
        _subreaper_pid[0] = os.getpid()
    return True


class BwrapInit:
    """Reaps bubblewrap's init process (its ``--info-fd`` names it): bubblewrap's outer process exits
    when the init reports the command's exit status, so the init becomes an orphan that nobody reaps
    (one zombie per candidate, and one per fork server at exit). vx is a child subreaper
    (:func:`become_subreaper`), so the orphan comes to vx, which waits for it by its pid only (never a
    child it did not start)."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        become_subreaper()

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def reap(self, timeout: float = 5.0) -> None:
        """Wait for the init (after the outer bwrap process was reaped) and close the pipe."""
        self.close_write()
        pid = self._pid()
        os.close(self.read_fd)
        if pid is None:
            return
        give_up = time.monotonic() + timeout
        while True:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (no subreaper here), or reaped already
                return
            if done or time.monotonic() > give_up:
                return
            time.sleep(0.001)

    def _pid(self) -> int | None:
        os.set_blocking(self.read_fd, False)
        data = b""
        try:
            while len(data) < 65536 and (chunk := os.read(self.read_fd, 65536)):
                data += chunk
        except BlockingIOError:
            pass
        try:
            pid = json.loads(data.decode("utf-8", "replace")).get("child-pid")
        except (ValueError, AttributeError):
            return None
        return pid if type(pid) is int and pid > 1 else None


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.truncated = True


class _Frames:
    """Splits the result stream into length-prefixed frames."""

    def __init__(self, max_total: int) -> None:
        self.buffer = bytearray()
        self.frames: list[bytes] = []
        self.total = 0
        self.max_total = max_total
        self.error: str | None = None

    def add(self, chunk: bytes) -> int:
        """Append data; return how many complete frames it finished."""
        self.total += len(chunk)
        if self.total > self.max_total:
            self.error = f"result stream exceeded {self.max_total} bytes"
            return 0
        self.buffer += chunk
        done = 0
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if size > self.max_total:
                self.error = f"frame length {size} exceeds the limit of {self.max_total} bytes"
                return done
            if len(self.buffer) < 4 + size:
                break
            self.frames.append(bytes(self.buffer[4 : 4 + size]))
            del self.buffer[: 4 + size]
            done += 1
        return done


class UidSlots:
    """Hands out uids of a private range, one per concurrent run, across every vx process of
    the machine: slot *k* is held by an exclusive ``flock`` on ``<dir>/<k>``, which the kernel
    releases when its holder exits, however it exits. ``dir`` is root's own (``/run`` when
    writable, else the temp dir, refused if another account could have planted it)."""

    _lock = threading.Lock()
    _dir: str | None = None

    @classmethod
    def directory(cls) -> str:
        with cls._lock:
            if cls._dir is None:
                for base in ("/run", tempfile.gettempdir()):
                    path = os.path.join(base, "vx-sandbox-uids")
                    try:
                        os.mkdir(path, 0o700)
                    except FileExistsError:
                        pass
                    except OSError:
                        continue
                    st = os.lstat(path)
                    if stat_mod.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
                        cls._dir = path
                        break
                else:
                    raise OSError("no private directory for uid slots (/run and the temp dir are unusable)")
            return cls._dir

    @classmethod
    def acquire(cls, first: int, count: int) -> tuple[int, int]:
        """(uid, fd holding its lock); raises OSError when every slot is taken."""
        directory = cls.directory()
        start = random.randrange(count)
        for k in range(count):
            slot = (start + k) % count
            fd = os.open(os.path.join(directory, str(slot)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            return first + slot, fd
        raise OSError(f"all {count} private sandbox uids are in use")


#: The janitor: a tiny process that outlives vx and removes the workdirs vx could not remove
#: itself (vx killed with SIGKILL, an op worker killed mid-run). vx tells it "+path" before a
#: workdir exists and "-path" after it is gone, through a pipe whose write end only vx (and the
#: processes it forks: op workers) holds; at that pipe's end of file (every holder is dead)
#: it removes whatever is still registered, then exits. Sandboxed children never get the pipe
#: (close_fds), and the janitor runs in its own session (Ctrl-C does not reach it).
JANITOR = (
    "import os,shutil,stat\n"
    "def fix(f,p,e):\n"
    " try:\n"
    "  os.chmod(os.path.dirname(p) or p,0o700);os.chmod(p,0o700)\n"
    "  shutil.rmtree(p,ignore_errors=True) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)\n"
    " except OSError:pass\n"
    "live=set();buf=b''\n"
    "while True:\n"
    " try:c=os.read(0,65536)\n"
    " except InterruptedError:continue\n"
    " if not c:break\n"
    " *lines,buf=(buf+c).split(b'\\n')\n"
    " for l in lines:\n"
    "  (live.add if l[:1]==b'+' else live.discard)(l[1:])\n"
    "for p in live:\n"
    " try:shutil.rmtree(os.fsdecode(p),onerror=fix)\n"
    " except OSError:pass\n"
)

_janitor_lock = threading.Lock()
_janitor: dict[str, Any] = {}


def _janitor_fd() -> int | None:
    """The write end of the janitor's pipe (started on first use; restarted if it died)."""
    with _janitor_lock:
        fd = _janitor.get("fd")
        if fd is not None and (_janitor["owner"] != os.getpid() or _janitor["proc"].poll() is None):
            return fd  # ours and alive, or inherited through fork (a dead one shows as EPIPE)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        read_end, write_end = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-S", "-s", "-B", "-c", JANITOR],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
                cwd="/",
            )
        except OSError:
            os.close(write_end)
            return None
        finally:
            os.close(read_end)
        _janitor.update(fd=write_end, proc=proc, owner=os.getpid())
        return write_end


def _end_janitor() -> None:
    """At exit: close this process's end of the janitor's pipe and wait for the janitor, which leaves once
    every holder of the pipe is gone (so it is reaped here, not left a zombie of the machine's pid 1).
    Forked op workers that still hold the pipe keep it alive; then it leaves after them."""
    with _janitor_lock:
        fd, proc, owner = _janitor.get("fd"), _janitor.get("proc"), _janitor.get("owner")
        if fd is None or owner != os.getpid():
            return
        _janitor.clear()
    try:
        os.close(fd)
    except OSError:
        pass
    try:
        if proc is not None:
            proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass


atexit.register(_end_janitor)


def _tell_janitor(mark: str, path: str) -> None:
    line = os.fsencode(mark + path) + b"\n"
    if b"\n" in line[:-1] or len(line) > 4096:  # not expressible on one line: vx alone cleans it
        return
    fd = _janitor_fd()
    if fd is None:
        return
    try:
        os.write(fd, line)  # one write below PIPE_BUF: atomic among vx's processes
    except OSError:  # the janitor died: the next workdir starts a new one
        with _janitor_lock:
            if _janitor.get("fd") == fd:
                _janitor.clear()
                try:
                    os.close(fd)
                except OSError:
                    pass


def make_workdir(tmp_root: str | None, owner: tuple[int, int] | None) -> str:
    base = tmp_root or tempfile.gettempdir()
    for _ in range(100):
        path = os.path.join(base, "vx-sb-" + os.urandom(6).hex())
        _tell_janitor("+", path)  # before it exists: no moment where vx could die and leave it
        try:
            os.mkdir(path, 0o700)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 48 random bits collide 100 times
        raise FileExistsError(f"cannot create a sandbox workdir in {base}")
    if owner is not None:
        os.chown(path, *owner)
    os.chmod(path, 0o700)
    return path


def remove_workdir(path: str) -> None:
    """Remove a workdir even if the candidate left unreadable or immutable-mode entries."""

    def fix(func: Callable[..., Any], target: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(target) or target, 0o700)
            os.chmod(target, 0o700)
        except OSError:
            pass
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)
    _tell_janitor("-", path)


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
    tmp_root: str | None,
    result_channel: bool = True,
    on_frame: Callable[[int, bytes], bool] | None = None,
) -> RawRun:
    """Run one child to completion (or death) and return what it produced.

    ``frame_timeouts[k]`` bounds the time between frame k and frame k+1 (frame 0 is the load
    report, frame k+1 the report of call k); the first frame is bounded only by
    ``total_timeout``. ``request["result_fd"]`` is filled in here.
    """
    slot_fd = None
    if plan.private_uids is not None:
        try:
            uid, slot_fd = UidSlots.acquire(*plan.private_uids)
        except OSError as exc:
            return RawRun(spawn_error=f"could not start {plan.layer} sandbox: {exc}")
        plan = plan.for_uid(uid)
        if request.get("drop") is not None:  # the harness's worker switches to this uid
            request = dict(request, drop=list(plan.drop) if plan.drop else None)
    try:
        return _launch_with_workdir(
            plan,
            request,
            total_timeout=total_timeout,
            frame_timeouts=frame_timeouts,
            kill_grace=kill_grace,
            stream_cap=stream_cap,
            max_result_bytes=max_result_bytes,
            hash_seed=hash_seed,
            tmp_root=tmp_root,
            result_channel=result_channel,
            on_frame=on_frame,
        )
    finally:
        if slot_fd is not None:
            os.close(slot_fd)  # releases the slot


def _launch_with_workdir(plan: Plan, request: dict[str, Any], *, tmp_root: str | None, **kwargs: Any) -> RawRun:
    workdir = make_workdir(tmp_root, plan.workdir_owner)
    try:
        return _launch_in(plan, request, workdir, **kwargs)
    finally:
        remove_workdir(workdir)


def _launch_in(
    plan: Plan,
    request: dict[str, Any],
    workdir: str,
    *,
    total_timeout: float,
    frame_timeouts: Sequence[float],
    kill_grace: float,
    stream_cap: int,
    max_result_bytes: int,
    hash_seed: int | None,
    result_channel: bool,
    on_frame: Callable[[int, bytes], bool] | None,
) -> RawRun:
    run = RawRun()
    result_r, result_w = os.pipe()
    if not result_channel:  # scripts report through their exit code; no frames expected
        os.close(result_w)
        result_w = os.open(os.devnull, os.O_WRONLY)
    request = dict(request, result_fd=result_w)
    encoded = encode_request(request)
    payload = harness_blob(plan.same_bytecode) + len(encoded).to_bytes(8, "big") + encoded
    popen_kwargs: dict[str, Any] = {}
    if plan.popen_user is not None:
        popen_kwargs.update(user=plan.popen_user, group=plan.popen_group, extra_groups=[])
    init = BwrapInit() if plan.uses_bwrap else None
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            plan.argv(
                workdir,
                request.get("import_paths", ()),
                request.get("disk_bytes", 64 << 20),
                info_fd=init.write_fd if init else None,
            ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(result_w,) + ((init.write_fd,) if init else ()),
            env=plan.child_env(workdir, hash_seed),
            cwd=workdir,
            start_new_session=True,
            close_fds=True,
            **popen_kwargs,
        )
    except OSError as exc:
        os.close(result_r)
        os.close(result_w)
        if init is not None:
            init.reap()
        run.spawn_error = f"could not start {plan.layer} sandbox: {exc}"
        run.wall_time = time.monotonic() - start
        return run
    os.close(result_w)
    if init is not None:
        init.close_write()
    try:
        _watch(
            proc,
            plan,
            payload,
            result_r,
            run,
            start=start,
            total_timeout=total_timeout,
            frame_timeouts=frame_timeouts,
            kill_grace=kill_grace,
            stream_cap=stream_cap,
            max_result_bytes=max_result_bytes,
            on_frame=on_frame,
        )
    finally:
        _terminate(proc, plan, kill_grace)
        if init is not None:
            init.reap()
        os.close(result_r)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        run.returncode = proc.returncode
        run.wall_time = time.monotonic() - start
    return run


def _watch(
    proc: subprocess.Popen[bytes],
    plan: Plan,
    payload: bytes,
    result_r: int,
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
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capped(stream_cap), _Capped(stream_cap)
    frames = _Frames(max_result_bytes)
    sel = selectors.DefaultSelector()
    stdin_fd = proc.stdin.fileno()
    readers = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, result_r: frames}
    for fd in (stdin_fd, *readers):
        os.set_blocking(fd, False)
    sel.register(stdin_fd, selectors.EVENT_WRITE)
    for fd in readers:
        sel.register(fd, selectors.EVENT_READ)
    pidfd: int | None
    try:
        pidfd = opened = os.pidfd_open(proc.pid)
        sel.register(opened, selectors.EVENT_READ)
    except (AttributeError, OSError):  # kernel < 5.3: poll instead
        pidfd = None
    view = memoryview(payload)
    total_deadline = start + total_timeout
    frame_deadline: float | None = None
    exited = False
    try:
        while True:
            now = time.monotonic()
            deadline = total_deadline if frame_deadline is None else min(total_deadline, frame_deadline)
            if now >= deadline:
                run.deadline = "call" if frame_deadline is not None and frame_deadline < total_deadline else "total"
                break
            wait = deadline - now if pidfd is not None else min(deadline - now, 0.01)
            for key, _ in sel.select(wait):
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        written = os.write(fd, view[:_READ_CHUNK])
                        view = view[written:]
                    except BrokenPipeError:
                        view = view[:0]
                    if not view:
                        # Keep our end open: its closing (also when vx dies) is the lifeline
                        # the supervisors of the unshare/rlimits layers watch.
                        sel.unregister(fd)
                elif fd == pidfd:
                    exited = True
                else:
                    frame_deadline = _take_output(
                        fd, sel, readers, frames, run, on_frame, frame_timeouts, kill_grace, frame_deadline
                    )
                if run.stopped:
                    break
            if run.stopped:
                break
            if frames.error:
                run.protocol_error = frames.error
                break
            if pidfd is None and not _alive(proc.pid):
                exited = True
            if exited:
                break
        _drain(sel, readers, frames, run)
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    _close_frames(frames, run)
    run.stdout, run.stdout_truncated = bytes(out.data), out.truncated
    run.stderr, run.stderr_truncated = bytes(err.data), err.truncated


def _take_output(
    fd: int,
    sel: selectors.BaseSelector,
    readers: dict[int, Any],
    frames: _Frames,
    run: RawRun,
    on_frame: Callable[[int, bytes], bool] | None,
    frame_timeouts: Sequence[float],
    kill_grace: float,
    frame_deadline: float | None,
) -> float | None:
    """Read what a candidate's output fd has into its reader (``readers[fd]``): the result frames
    or a capped stream. A new frame restarts the per-call deadline (returned) and goes to
    ``on_frame``; when that asks to stop, nothing after that frame is kept (``run.stopped``).
    Shared by the per-process layers and the fork server."""
    chunk = _read(fd)
    if chunk is None:
        return frame_deadline
    if not chunk:
        sel.unregister(fd)
        return frame_deadline
    target = readers[fd]
    before = len(frames.frames)
    target.add(chunk)
    if target is frames and len(frames.frames) > before:
        frame_deadline = _next_frame_deadline(frames, frame_timeouts, kill_grace)
        for index in range(before, len(frames.frames)) if on_frame is not None else ():
            if on_frame is not None and on_frame(index, frames.frames[index]):
                run.stopped = True  # keep nothing after the frame it stopped at
                del frames.frames[index + 1 :]
                frames.buffer.clear()
                break
    return frame_deadline


def _drain(sel: selectors.BaseSelector, readers: dict[int, Any], frames: _Frames, run: RawRun) -> None:
    """Whatever was written before the exit (or the kill decision) is still in the pipes."""
    for fd, target in readers.items():
        if run.stopped and target is frames:
            continue  # the caller is done with the results
        if fd in sel.get_map():
            while chunk := _read(fd):
                target.add(chunk)
                if frames.error:
                    run.protocol_error = run.protocol_error or frames.error
                    break


def _close_frames(frames: _Frames, run: RawRun) -> None:
    """The frames a run ends with; bytes after the last complete one are a protocol error."""
    if frames.buffer and run.protocol_error is None and run.deadline is None and not run.stopped:
        run.protocol_error = f"{len(frames.buffer)} trailing bytes after the last complete frame"
    run.frames = frames.frames


def _next_frame_deadline(frames: _Frames, frame_timeouts: Sequence[float], kill_grace: float) -> float:
    index = len(frames.frames) - 1  # frames[index] just arrived; next is frames[index + 1]
    limit = frame_timeouts[index] if index < len(frame_timeouts) else 0.0
    return time.monotonic() + limit + kill_grace


def _read(fd: int) -> bytes | None:
    """Read what is available: data, b"" at end of file, None if nothing right now."""
    try:
        return os.read(fd, _READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno == errno.EIO:
            return b""
        raise


def _alive(pid: int) -> bool:
    """True while the process has not exited (without reaping it)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:
        return False


def _children_of(pid: int) -> list[int]:
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            kids.append(int(name))
    return kids


def _wait_exit(pid: int, timeout: float) -> None:
    give_up = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < give_up:
        time.sleep(0.002)


def _terminate(proc: subprocess.Popen[bytes], plan: Plan, kill_grace: float) -> None:
    """Make sure nothing of this run survives, then reap the main child.

    A still-running tree is taken down from the inside out, so every process is reaped by
    its own parent: killing the wrapper first would leave the namespace's init to the host's
    pid 1, which in many containers never reaps it (zombies pile up over long evaluations).
    """
    if _alive(proc.pid):
        if plan.supervise == "subreaper":
            # The supervisor kills and reaps its worker and escaped descendants, then exits.
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except OSError:
                pass
            _wait_exit(proc.pid, max(kill_grace, _SUPERVISOR_GRACE))
        else:
            # bwrap / unshare: their child is the namespace's init; when it dies the kernel
            # kills the whole namespace and the wrapper reaps it and exits.
            for kid in _children_of(proc.pid):
                try:
                    os.kill(kid, signal.SIGKILL)
                except OSError:
                    pass
            _wait_exit(proc.pid, kill_grace)
    # The main child is not reaped yet, so its pid (= the process group id) cannot be reused.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=max(kill_grace, 5.0))
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILLed processes always exit
        proc.kill()
        proc.wait()
