"""Run untrusted code (model outputs) in a fresh, isolated, time-bounded process.

Public API::

    from vx.sandbox import Sandbox, SandboxConfig, RunReport, CallOutcome, ScriptReport

    sb = Sandbox(SandboxConfig(memory_mb=1024, per_call_timeout=2.0, total_timeout=20.0,
                               nproc=64, fsize_mb=16, nofile=64))
    sb.layer          # "forkserver" | "bwrap" | "unshare" | "rlimits": strongest that works (detected once, cached)
    sb.describe()     # human text for `vx doctor` / `vx eval`

    rep = sb.run_calls(code, "add", [([1, 2], {}), ([3], {"b": 4})], setup="import math")
    rep.status        # "ok" | "syntax_error" | "load_error" | "no_entry_point" | "timeout" | "crashed"
    rep.load_stdout, rep.load_error, rep.load_error_type, rep.load_error_line, rep.wall_time,
    rep.detail        # why "timeout"/"crashed"
    rep.calls[0].status     # "ok" | "exception" | "timeout" | "unserializable" | "crashed" | "not_run"
    rep.calls[0].value      # plain data decoded in the parent (None unless status == "ok")
    rep.calls[0].type_name, .exc_type, .exc_message, .stdout, .duration, .cpu, .budget, .args_after

    srep = sb.run_script(program_text, timeout=10.0)   # whole programs, e.g. MBPP `test` strings
    srep.status       # "ok" (exit 0) | "error" (non-zero exit) | "timeout" | "crashed"
    srep.stdout, srep.stderr, srep.exit_code, srep.wall_time

Semantics callers rely on:

* One fresh process per ``run_calls``: all calls of one candidate run in it, in order, after
  ``setup`` and the candidate ``code`` were executed in one namespace (``__name__`` is
  ``"__vx_candidate__"``, so ``if __name__ == "__main__":`` blocks do not run; stdin is
  empty). Global state does not leak between ``run_calls`` invocations.
* Time limits are **CPU seconds** of the candidate's process (every thread; ``ITIMER_PROF``), so
  load on the machine does not shorten them; code that sleeps or blocks meets a wall-clock
  backstop, ``config.wall_for(budget)`` (10 x the budget + 2 s by default). ``timeouts`` entries
  are seconds or :class:`CallBudget` (relative to earlier reference calls of the run, within a
  cap). Each call reports ``cpu`` (used) and ``budget`` (the CPU budget it ran under).
* Module-level code (setup + candidate) gets ``config.load_timeout`` CPU seconds; past that the
  run is "timeout" (``rep.detail`` says so) and no call runs. A run that reaches its
  ``cpu_limit`` (RLIMIT_CPU) is "timeout" too.
* Calls may draw from named CPU pools (``CallBudget.pool``, ``run_calls(pools=...)``): once a pool's
  calls used its seconds, its later calls are "not_run" (skipped; the parent checks the child's
  claim against the CPU the pool's calls reported) and the calls of no pool run as before.
* A call that raises gets "exception" and later calls still run. A call that overruns its
  budget (or backstop) is interrupted ("timeout") and later calls still run, unless the candidate
  swallows the interruption: then the parent kills the process ``kill_grace`` seconds after the
  backstop, that call is "timeout", the rest "not_run" and ``rep.status`` is "timeout". A process that dies
  (``os._exit``, segfault, memory kill) makes the call in progress "crashed", the rest
  "not_run", and ``rep.status`` "crashed".
* Values come back as plain data only (None/bool/int/float/complex/str/bytes and
  list/tuple/dict/set/frozenset of those; inf/nan preserved). Subclasses of those types
  (Counter, namedtuple, IntEnum, ...) are reduced to the base type *without* calling their
  methods (``type_name`` keeps the real name). Anything else is "unserializable" with its
  type name. Values are never unpickled or evaluated.
* **Compare in the parent.** The child can forge anything it reports (it shares its
  interpreter with the candidate), so never send expected values into it: callers compare
  ``rep.calls[i].value`` with expected values the child never sees. A forged report is no
  stronger than the candidate returning that value.

* The child has the standard library only (plus ``SandboxConfig.import_paths``); stdin is
  empty; ``HOME``/cwd is a private directory removed afterwards; ``PYTHONHASHSEED`` is fixed
  (``SandboxConfig.hash_seed``) so runs are reproducible. Every call gets its own copy of
  its arguments.

Isolation layers, detection and the process model: see ``layers.py``, ``forkserver.py``, ``runner.py``
and docs/sandbox.md. ``$VX_SANDBOX_LAYER`` forces a layer.
"""

from __future__ import annotations

import marshal
import math
import os
import stat
import statistics
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.sandbox import forkserver
from vx.sandbox.config import LAYER_ENV, LAYERS, CallBudget, SandboxConfig
from vx.sandbox.harness import encode_value  # the child's own encoder: args_before byte for byte
from vx.sandbox.layers import LIMIT_TEXT, Detection, LayerStatus, SandboxUnavailable, clear_cache, detect
from vx.sandbox.layers import known_limits as _known_limits
from vx.sandbox.report import (
    CALL_STATUSES,
    RUN_STATUSES,
    SCRIPT_STATUSES,
    CallOutcome,
    FrameLimits,
    RunReport,
    ScriptReport,
    assemble,
    assemble_script,
    call_outcome,
)
from vx.sandbox.runner import Plan
from vx.sandbox.runner import launch as _launch_process
from vx.sandbox.serialize import MARSHAL_VERSION, check_plain

__all__ = [
    "CALL_STATUSES",
    "CallBudget",
    "LAYERS",
    "LAYER_ENV",
    "RUN_STATUSES",
    "SCRIPT_STATUSES",
    "CallOutcome",
    "Detection",
    "FrameLimits",
    "LayerStatus",
    "PreparedCalls",
    "RunReport",
    "Sandbox",
    "SandboxConfig",
    "SandboxUnavailable",
    "ScriptReport",
    "clear_cache",
]

Call = tuple[Sequence[Any], dict[str, Any]]

_PROBE_CODE = "def vx_probe(x):\n    return [x + 1, 'é']\n"


def launch(plan: Plan, request: dict[str, Any], **kwargs: Any) -> Any:
    """One candidate run: a child of a fork server (forkserver layer) or a fresh process tree."""
    if plan.layer == forkserver.LAYER:
        return forkserver.launch(plan, request, **kwargs)
    return _launch_process(plan, request, **kwargs)


@attrs.frozen(eq=False)
class PreparedCalls:
    """Calls checked, copied and encoded once (:meth:`Sandbox.prepare_calls`), to send to many candidates:
    one task's probes to every attempt at it. Later changes to the objects they were made from do not
    reach them."""

    #: The calls as the child receives them: ``[args tuple, kwargs dict]`` each (a private copy).
    calls: tuple[list[Any], ...]
    #: ``marshal`` of :attr:`calls` (the request carries it as it is).
    blob: bytes
    #: Whether each call reports its arguments afterwards (``run_calls``' ``args_after``), and the encoding
    #: the child compares them with.
    args_after: bool | tuple[bool, ...]
    args_before: tuple[str | None, ...] | None

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Any:
        return iter(self.calls)

    def __getitem__(self, index: int) -> list[Any]:
        return self.calls[index]


class Sandbox:
    """Runs untrusted code under the strongest isolation layer available (thread-safe)."""

    def __init__(self, config: SandboxConfig | None = None, *, probe_all: bool = False) -> None:
        self.config = config or SandboxConfig()
        self._detection: Detection = detect(self.config, self._probe, all_layers=probe_all)
        if self.config.tmp_root is not None:
            _check_reachable(self.config.tmp_root, self._detection, "tmp_root")
        self._tmp_root = self.config.tmp_root or _default_tmp_root()
        for path in self.config.import_paths:
            _check_reachable(path, self._detection, "import_paths entry", readable=True)

    # -- introspection ------------------------------------------------------------------------

    @property
    def layer(self) -> str:
        return self._detection.layer

    @property
    def detection(self) -> Detection:
        return self._detection

    @property
    def frame_limits(self) -> FrameLimits:
        """What the parent accepts of the child's reports (from the config)."""
        c = self.config
        return FrameLimits(
            stdout_chars=c.stdout_cap,
            message_chars=c.message_cap,
            decode_bytes=c.max_decode_mb << 20,
            run_decode_bytes=None if c.max_run_decode_mb is None else c.max_run_decode_mb << 20,
        )

    def describe(self) -> str:
        """Several lines of plain text: the layer, what it isolates, limits, why not stronger."""
        d, c = self._detection, self.config
        lock = (
            "Landlock: reads only system dirs and the interpreter, writes only the workdir"
            if d.plan.landlock
            else "no Landlock: the host file system is visible as the sandbox account"
        )
        disk = (
            f"workdir /sandbox and /tmp are private {c.disk_mb} MiB tmpfs mounts"
            if "--size" in d.plan.wrapper
            else "private /tmp; the workdir (/sandbox) is a host directory"
        )
        what = {
            "forkserver": "fork server: one bubblewrap sandbox per worker (new user/pid/net/ipc/uts "
            "namespaces, read-only /usr and interpreter, no network) forks each candidate into its own "
            "pid, mount and IPC namespaces with a fresh private /proc, private "
            f"{c.disk_mb} MiB tmpfs workdir (/sandbox), /tmp and /dev/shm, no capabilities, "
            + ("seccomp deny-list, " if d.plan.seccomp else "no seccomp, ")
            + ("Landlock" if d.plan.landlock else "no Landlock"),
            "bwrap": "bubblewrap: new user/pid/net/ipc/uts namespaces (no network), read-only "
            "/usr and interpreter, private /proc and /dev; " + disk,
            "unshare": "unshare: new user/pid/net/ipc/uts namespaces (no network); " + lock,
            "rlimits": "no namespaces; " + ("seccomp deny-list" if d.plan.seccomp else d.seccomp) + "; " + lock,
        }[d.layer]
        if d.layer == "unshare" and d.plan.seccomp:
            what += "; seccomp deny-list (no socket(): host UNIX sockets are out of reach)"
        if d.plan.private_uids:
            what += f"; a uid of its own per concurrent candidate ({d.plan.private_uids[0]}+)"
        who = (
            f"uid {d.identity.uid} ({d.identity.name}), switched from root"
            if d.identity.dropped
            else f"uid {d.identity.uid} ({d.identity.name}), the invoking user"
        )
        lines = [
            f"sandbox layer: {d.layer} - {what}",
            f"runs as: {who}",
            f"interpreter: {d.python_note}",
            f"limits: {c.memory_mb} MiB address space, {c.per_call_timeout:g} s of CPU per call (wall-clock "
            f"backstop {c.wall_for(c.per_call_timeout):g} s), {c.total_timeout:g} s per candidate, "
            f"files <= {c.fsize_mb} MiB, {c.nofile} open files, {d.nproc_limit} processes, no core dumps",
        ]
        for hole in self.known_limits():
            lines.append(LIMIT_TEXT[hole] + (f" ({d.uid_note})" if hole == "shared-nproc" and d.uid_note else ""))
        for status in d.statuses:
            if status.layer != d.layer and status.available is not True:
                lines.append(f"{status.layer}: {status.reason}")
        return "\n".join(lines)

    def known_limits(self) -> tuple[str, ...]:
        """Holes this layer cannot close here ("unix-sockets", "shared-nproc", "host-files", "host-ipc"); each
        is named in :meth:`describe` and covered by a test that skips only when it is listed."""
        return _known_limits(self._detection)

    # -- running ------------------------------------------------------------------------------

    def run_calls(
        self,
        code: str,
        entry_point: str,
        calls: Sequence[Call] | PreparedCalls,
        setup: str = "",
        *,
        timeouts: Sequence[float | CallBudget] | None = None,
        total_timeout: float | None = None,
        cpu_limit: float | None = None,
        load_timeout: float | None = None,
        args_after: bool | Sequence[bool] | None = None,
        stop: Callable[[int, CallOutcome], bool] | None = None,
        pools: Mapping[str, float] | None = None,
    ) -> RunReport:
        """Load ``setup`` + ``code`` in a fresh sandboxed process and call ``entry_point``.

        ``calls`` is a list of ``(args, kwargs)``; arguments must be plain data (exact
        built-in types); or the same made once by :meth:`prepare_calls`. ``timeouts`` optionally
        gives one CPU budget per call, in seconds or as a :class:`CallBudget` (default
        ``config.per_call_timeout``), each with its wall-clock backstop (``config.wall_for``);
        ``total_timeout`` overrides ``config.total_timeout`` (the wall-clock
        deadline of the whole run); ``cpu_limit`` is the process's CPU time limit (RLIMIT_CPU,
        whole seconds; default: the total timeout), past which the run is "timeout"; ``load_timeout``
        overrides ``config.load_timeout`` (CPU seconds of the setup and module-level code).
        ``args_after=False`` skips re-encoding the arguments after each call (faster); a sequence
        of booleans asks for them on some calls only (the others report None); left out, every call
        reports them (prepared calls: as they were prepared). Arguments that come
        back as they were sent are not sent back: the child compares their encoding with the one
        the parent made (``args_before``) and says "unchanged", and the parent fills in its own copy.
        ``stop(i, outcome)`` is called in the parent as each call's report arrives; returning
        True ends the run there (e.g. at the first wrong answer): the process is killed, later
        calls are "not_run", ``rep.status`` is "ok" and ``rep.stopped`` is True.
        ``pools`` names the CPU pools of the budgets' ``pool`` fields, with their seconds: a call whose
        pool its earlier calls have used up is skipped ("not_run", no CPU).
        """
        c = self.config
        if isinstance(calls, PreparedCalls):
            prepared = calls
            if args_after is not None and _wanted(args_after, len(prepared)) != prepared.args_after:
                raise ValueError(
                    "these calls were prepared for another args_after: leave it out, or pass the calls themselves"
                )
        else:
            prepared = self.prepare_calls(calls, args_after=True if args_after is None else args_after)
        call_list = prepared.calls
        budgets = (
            [_call_budget(t) for t in timeouts]
            if timeouts is not None
            else [CallBudget(c.per_call_timeout)] * len(call_list)
        )
        if len(budgets) != len(call_list):
            raise ValueError(f"timeouts has {len(budgets)} entries for {len(call_list)} calls")
        limits = [b.ceiling for b in budgets]
        total = c.total_timeout if total_timeout is None else total_timeout
        relative = any(b.per_reference for b in budgets)
        pool_of, pool_caps = _pools(budgets, pools)
        request = self._request(
            mode="calls",
            code=code,
            setup=setup,
            entry_point=entry_point,
            calls=prepared.blob,
            timeouts=[float(b.cpu) for b in budgets],
            scales=[float(b.per_reference) for b in budgets] if relative else None,
            caps=[b.ceiling for b in budgets] if relative else None,
            refs=[bool(b.reference) for b in budgets] if relative else None,
            pools=pool_of,
            pool_caps=pool_caps,
            args_after=prepared.args_after,
            args_before=prepared.args_before,
            total=total,
            cpu=cpu_limit,
            load=load_timeout,
        )
        parsed: dict[Any, Any] = {}  # frames parsed (and calls decoded) as they arrive, not again by assemble
        frame_limits = self.frame_limits

        def on_frame(index: int, payload: bytes) -> bool:
            if index == 0 or stop is None:  # frame 0 is the load report
                return False
            outcome = call_outcome(
                payload,
                index - 1,
                frame_limits,
                parsed,
                index,
                call_list,
                skippable=pool_of is not None and 0 <= index - 1 < len(pool_of) and pool_of[index - 1] >= 0,
            )
            return outcome is not None and bool(stop(index - 1, outcome))

        raw = launch(
            self._detection.plan,
            request,
            on_frame=on_frame if stop is not None else None,
            total_timeout=total,
            frame_timeouts=[*(c.wall_for(limit) for limit in limits), 0.0],
            kill_grace=c.kill_grace,
            stream_cap=c.stream_cap,
            max_result_bytes=c.max_result_mb << 20,
            hash_seed=c.hash_seed,
            tmp_root=self._tmp_root,
        )
        return assemble(
            raw,
            len(call_list),
            self.layer,
            limits,
            frame_limits,
            parsed,
            call_list,
            pools=None if pool_of is None or pool_caps is None else (pool_of, pool_caps),
        )

    def prepare_calls(self, calls: Sequence[Call], *, args_after: bool | Sequence[bool] = True) -> PreparedCalls:
        """``calls`` (``(args, kwargs)`` pairs of plain data) checked, copied and encoded for :meth:`run_calls`,
        which takes the result in their place: calls sent to many candidates are prepared once. ``args_after``
        as for ``run_calls``, which runs prepared calls with it. Raises ``ValueError`` for a
        malformed call and ``TypeError`` for an argument that is not plain data."""
        call_list = [_normalise_call(call, i) for i, call in enumerate(calls)]
        check_plain(call_list, where="request['calls']")
        blob = marshal.dumps(call_list, MARSHAL_VERSION)
        own = tuple(marshal.loads(blob))  # a copy no caller holds
        want = _wanted(args_after, len(own))
        before = (
            tuple(
                _args_text(call, self.config.max_value_nodes) if want is True or (want and want[i]) else None
                for i, call in enumerate(own)
            )
            if want
            else None
        )
        return PreparedCalls(own, blob, want, before)

    def run_script(self, code: str, timeout: float | None = None) -> ScriptReport:
        """Run a whole program as ``__main__``; its stdout/stderr/exit code come back as text."""
        c = self.config
        total = c.total_timeout if timeout is None else timeout
        request = self._request(
            mode="script",
            code=code,
            setup="",
            entry_point="",
            calls=[],
            timeouts=[],
            args_after=False,
            total=total,
        )
        raw = launch(
            self._detection.plan,
            request,
            total_timeout=total,
            kill_grace=c.kill_grace,
            stream_cap=c.stream_cap,
            max_result_bytes=c.max_result_mb << 20,
            hash_seed=c.hash_seed,
            tmp_root=self._tmp_root,
            result_channel=False,
        )
        return assemble_script(raw, self.layer, total)

    def measure_overhead(self, runs: int = 5) -> float:
        """Median wall time in ms of a trivial candidate with one call (per-candidate cost)."""
        times = []
        for _ in range(runs):
            rep = self.run_calls(_PROBE_CODE, "vx_probe", [([1], {})], args_after=False)
            if rep.status != "ok":
                raise SandboxUnavailable(f"probe candidate failed: {rep.status}: {rep.detail}")
            times.append(rep.wall_time * 1000)
        return statistics.median(times)

    # -- internals ----------------------------------------------------------------------------

    def _request(
        self,
        *,
        total: float,
        nproc: int | None = None,
        plan: Plan | None = None,
        cpu: float | None = None,
        load: float | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        c = self.config
        plan = plan or self._detection.plan
        nproc_limit = nproc if nproc is not None else self._detection.nproc_limit
        return {
            **fields,
            "limits": {
                "RLIMIT_AS": c.memory_mb << 20,
                "RLIMIT_CPU": int(math.ceil(total)) + 1 if cpu is None else max(1, int(math.ceil(cpu))),
                "RLIMIT_FSIZE": c.fsize_mb << 20,
                "RLIMIT_NOFILE": c.nofile,
                "RLIMIT_NPROC": nproc_limit,
                "RLIMIT_CORE": 0,
            },
            "drop": list(plan.drop) if plan.drop else None,
            "supervise": plan.supervise,
            "no_new_privs": plan.no_new_privs,
            "seccomp": dict(plan.seccomp, protect=[os.getpid()]) if plan.seccomp else None,
            "landlock": plan.landlock,
            "recursion_limit": c.recursion_limit,
            "load_timeout": float(min(c.load_timeout if load is None else load, total)),
            "load_wall": float(total),
            "wall_factor": float(c.wall_factor),
            "wall_slack": float(c.wall_slack),
            "stdout_cap": c.stdout_cap,
            "message_cap": c.message_cap,
            "max_value_nodes": c.max_value_nodes,
            "max_stream_bytes": c.max_result_mb << 20,
            "max_value_bytes": (c.max_result_mb << 20) // 4,
            "max_decode_bytes": c.max_decode_mb << 20,
            "import_paths": list(c.import_paths),
            "disk_bytes": c.disk_mb << 20,
        }

    def _probe(self, plan: Plan, nproc: int) -> tuple[bool, str, float]:
        """Try a plan with a trivial candidate: (works, why not, median ms)."""
        c = self.config
        times: list[float] = []
        for _ in range(3):
            request = self._request(
                mode="calls",
                code=_PROBE_CODE,
                setup="",
                entry_point="vx_probe",
                calls=[[[41], {}]],
                timeouts=[10.0],
                args_after=False,
                total=20.0,
                nproc=nproc,
                plan=plan,
            )
            raw = launch(
                plan,
                request,
                total_timeout=20.0,
                frame_timeouts=[10.0, 0.0],
                kill_grace=c.kill_grace,
                stream_cap=c.stream_cap,
                max_result_bytes=1 << 20,
                hash_seed=c.hash_seed,
                tmp_root=_default_tmp_root(),
            )
            rep = assemble(raw, 1, plan.layer, [10.0])
            if rep.status != "ok" or rep.calls[0].value != [42, "é"]:
                why = raw.spawn_error or rep.stderr.strip() or rep.detail or rep.status
                lines = [line for line in why.splitlines() if line.strip()]
                return False, (lines[-1] if lines else why)[:300], 0.0
            times.append(rep.wall_time * 1000)
        return True, "", statistics.median(times)


def _default_tmp_root() -> str | None:
    """The system temp dir, unless $TMPDIR points somewhere the sandbox account cannot reach
    (e.g. under /root): then /tmp."""
    if os.geteuid() != 0:
        return None
    path = tempfile.gettempdir()
    current = os.path.abspath(path)
    while True:
        try:
            if not os.stat(current).st_mode & stat.S_IXOTH:
                return "/tmp"
        except OSError:
            return "/tmp"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _check_reachable(path: str, detection: Detection, what: str, readable: bool = False) -> None:
    """The sandbox account must be able to reach (and, if ``readable``, list) ``path``."""
    ident = detection.identity
    if not os.path.isabs(path) or not os.path.isdir(path):
        raise SandboxUnavailable(f"SandboxConfig {what} {path!r} is not an absolute path to a directory")
    if not ident.dropped:
        return
    current, need = path, (stat.S_IROTH | stat.S_IXOTH) if readable else stat.S_IXOTH
    while True:
        st = os.stat(current)
        if st.st_uid == ident.uid:
            mode = (st.st_mode >> 6) & 0o7
        elif st.st_gid == ident.gid:
            mode = (st.st_mode >> 3) & 0o7
        else:
            mode = st.st_mode & 0o7
        if mode & need != need:
            raise SandboxUnavailable(
                f"SandboxConfig {what} {path!r} is not reachable by the sandbox account "
                f"{ident.name} (uid {ident.uid}): {current} has mode {stat.filemode(st.st_mode)}. "
                "Use a directory every account can traverse (e.g. under /tmp or /opt), or chmod o+x."
            )
        parent = os.path.dirname(current)
        if parent == current:
            return
        current, need = parent, stat.S_IXOTH


def _pools(
    budgets: Sequence[CallBudget], pools: Mapping[str, float] | None
) -> tuple[list[int] | None, list[float] | None]:
    """Each call's pool as an index into the pools' seconds (-1: none), or (None, None) when no call has one."""
    names = sorted(pools or {})
    for name in names:
        seconds = pools[name]  # type: ignore[index]
        if isinstance(seconds, bool) or not (
            isinstance(seconds, (int, float)) and seconds > 0 and math.isfinite(seconds)
        ):
            raise ValueError(f"pool {name!r}: its CPU seconds must be a positive finite number, got {seconds!r}")
    unknown = sorted({b.pool for b in budgets if b.pool and b.pool not in names})
    if unknown:
        raise ValueError(f"call budgets name pools that pools= does not give: {', '.join(unknown)}")
    if not any(b.pool for b in budgets):
        return None, None
    return [names.index(b.pool) if b.pool else -1 for b in budgets], [float(pools[n]) for n in names]  # type: ignore[index]


def _call_budget(value: Any) -> CallBudget:
    if isinstance(value, CallBudget):
        return value
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
        raise ValueError(f"call timeouts must be positive finite numbers or CallBudgets, got {value!r}")
    return CallBudget(float(value))


#: Encodings of call arguments already made, by their marshal bytes (exact types and values): a
#: task's probes are sent to every attempt at it, so each is encoded once (bounded in entries and bytes,
#: oldest out; the sandbox imports nothing of vx, so not with vx.memo).
_ARGS_TEXTS: dict[bytes, str | None] = {}
_ARGS_TEXTS_MAX = 8192
_ARGS_TEXTS_BYTES = 32 << 20
_args_texts_bytes = [0]
_args_texts_lock = threading.Lock()


def _args_text(call: Sequence[Any], max_nodes: int) -> str | None:
    """The harness's encoding of ``(args, kwargs)`` as it writes ``args_after`` (None: not encodable here,
    so the child sends whatever it finds)."""
    try:
        key = marshal.dumps(call)  # type: ignore[arg-type]  # (args, kwargs) of plain data, as marshal takes it
    except ValueError:
        return None
    if key in _ARGS_TEXTS:
        return _ARGS_TEXTS[key]
    try:
        text: str | None = (
            '{"tuple":[' + encode_value(tuple(call[0]), max_nodes) + "," + encode_value(call[1], max_nodes) + "]}"
        )
    except Exception:
        text = None
    size = len(key) + (len(text) if text is not None else 0)
    if size > _ARGS_TEXTS_BYTES // 4:
        return text  # one call's arguments larger than a quarter of the memo: not kept
    with _args_texts_lock:
        if key in _ARGS_TEXTS:
            return text
        while _ARGS_TEXTS and (len(_ARGS_TEXTS) >= _ARGS_TEXTS_MAX or _args_texts_bytes[0] + size > _ARGS_TEXTS_BYTES):
            old_key = next(iter(_ARGS_TEXTS))
            old_text = _ARGS_TEXTS.pop(old_key)
            _args_texts_bytes[0] -= len(old_key) + (len(old_text) if old_text is not None else 0)
        _ARGS_TEXTS[key] = text
        _args_texts_bytes[0] += size
    return text


def _wanted(args_after: bool | Sequence[bool], n: int) -> bool | tuple[bool, ...]:
    if isinstance(args_after, bool):
        return args_after
    want = tuple(bool(w) for w in args_after)
    if len(want) != n:
        raise ValueError(f"args_after has {len(want)} entries for {n} calls")
    return want


def _normalise_call(call: Any, index: int) -> list[Any]:
    try:
        args, kwargs = call
    except (TypeError, ValueError):
        raise ValueError(f"call {index} must be an (args, kwargs) pair, got {call!r:.80}") from None
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        raise ValueError(f"call {index}: args must be a list/tuple and kwargs a dict")
    if not all(isinstance(key, str) for key in kwargs):
        raise ValueError(f"call {index}: keyword argument names must be strings")
    return [tuple(args), dict(kwargs)]
