"""Fixtures: one Sandbox per available isolation layer (unavailable layers are skipped)."""

from __future__ import annotations

import os
import time

import pytest

from vx.sandbox import LAYERS, Sandbox, SandboxConfig, SandboxUnavailable

# Short limits keep the suite fast; the escape tests rely on these values.
FAST = {"per_call_timeout": 0.5, "total_timeout": 8.0, "kill_grace": 0.5, "wall_factor": 2.0, "wall_slack": 1.0}
#: For tests about what a run reports, not about its limits: CPU budgets and wall-clock backstops that
#: a correct run meets on a loaded 2-core machine (two busy processes beside the suite).
GENEROUS = {
    "per_call_timeout": 10.0,
    "total_timeout": 120.0,
    "kill_grace": 2.0,
    "wall_factor": 10.0,
    "wall_slack": 10.0,
}

_SANDBOXES: dict[str, Sandbox | str] = {}


def sandbox_for(layer: str) -> Sandbox:
    """A Sandbox forced to ``layer`` (cached), or pytest.skip with the detection's reason."""
    if layer not in _SANDBOXES:
        try:
            _SANDBOXES[layer] = Sandbox(SandboxConfig(layer=layer, **FAST))
        except SandboxUnavailable as exc:
            _SANDBOXES[layer] = str(exc)
    found = _SANDBOXES[layer]
    if isinstance(found, str):
        pytest.skip(f"layer {layer} is not available here: {found}")
    return found


@pytest.fixture(params=LAYERS)
def sb(request: pytest.FixtureRequest) -> Sandbox:
    return sandbox_for(request.param)


@pytest.fixture
def any_sb() -> Sandbox:
    """The strongest available layer (for tests about the API, not about isolation)."""
    for layer in LAYERS:
        try:
            return sandbox_for(layer)
        except pytest.skip.Exception:
            continue
    pytest.skip("no sandbox layer is available on this machine")


def processes_with(token: str) -> list[int]:
    """Pids (host view) whose command line contains ``token``."""
    found = []
    needle = token.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if needle in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found


def wait_until_gone(token: str, within: float = 2.0) -> list[int]:
    """Poll until no process carries ``token`` (kernel teardown is asynchronous); return stragglers."""
    deadline = time.monotonic() + within
    while True:
        left = processes_with(token)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)
