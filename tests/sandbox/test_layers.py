"""Layer detection: fallbacks and the reasons reported for layers that do not work."""

from __future__ import annotations

import pytest

from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable, clear_cache
from vx.sandbox.layers import detect
from vx.sandbox.runner import Plan


@pytest.fixture
def fresh_detection():
    clear_cache()
    yield
    clear_cache()  # never leave a detection made with a fake probe behind


def _failing(*broken: str):
    def probe(plan: Plan, nproc: int) -> tuple[bool, str, float]:
        if plan.layer in broken:
            return False, f"{plan.layer}: No permissions to create a new namespace", 0.0
        return True, "", 1.0

    return probe


def test_falls_back_and_says_why(fresh_detection) -> None:
    found = detect(SandboxConfig(), _failing("forkserver", "bwrap"))  # the fork server runs inside bwrap
    statuses = {s.layer: s for s in found.statuses}
    if statuses["bwrap"].reason.startswith("bwrap is not installed"):
        assert found.layer == "unshare"
        return
    assert found.layer == "unshare"
    assert statuses["bwrap"].available is False
    assert "No permissions to create a new namespace" in statuses["bwrap"].reason
    assert statuses["rlimits"].available is None and "not tried" in statuses["rlimits"].reason


def test_nothing_works(fresh_detection) -> None:
    with pytest.raises(SandboxUnavailable, match="no sandbox layer works"):
        detect(SandboxConfig(), _failing("forkserver", "bwrap", "unshare", "rlimits"))


def test_fork_server_falls_back_to_bwrap(fresh_detection) -> None:
    found = detect(SandboxConfig(), _failing("forkserver"))
    statuses = {s.layer: s for s in found.statuses}
    if statuses["forkserver"].reason.startswith("needs bubblewrap"):
        assert found.layer == "unshare"
        return
    assert found.layer == "bwrap"
    assert statuses["forkserver"].available is False and "No permissions" in statuses["forkserver"].reason


def test_forced_layer_that_fails(fresh_detection) -> None:
    with pytest.raises(SandboxUnavailable, match="rlimits: rlimits: No permissions"):
        detect(SandboxConfig(layer="rlimits"), _failing("rlimits"))


def test_probe_reports_the_wrappers_own_error() -> None:
    try:
        sb = Sandbox(SandboxConfig(layer="rlimits"))
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    message = "bwrap: setting up uid map: Permission denied"
    broken = Plan(
        layer="bwrap", python=sb.detection.python, wrapper=("sh", "-c", f"echo '{message}' >&2; exit 1", "--")
    )
    ok, why, _ = sb._probe(broken, 64)
    assert not ok and why == message


def test_describe_lists_unavailable_layers(fresh_detection, monkeypatch) -> None:
    import vx.sandbox as package

    monkeypatch.setattr(
        package, "detect", lambda config, probe, all_layers=False: detect(config, _failing("forkserver", "bwrap"))
    )
    sb = Sandbox(SandboxConfig())
    text = sb.describe()
    assert text.startswith("sandbox layer: unshare")
    assert "bwrap: " in text and "forkserver: " in text


def test_every_fallback_variant_runs_here() -> None:
    """Each weaker variant (no Landlock, no seccomp, root + setpriv) is normally not chosen on
    this machine; probe them all so the fallbacks stay working."""
    import shutil

    from vx.sandbox.layers import SECCOMP_RULES, _rlimits_plans, _unshare_plans, landlock_spec

    try:
        sb = Sandbox(SandboxConfig(layer="rlimits"))
    except SandboxUnavailable as exc:
        pytest.skip(str(exc))
    d = sb.detection
    info = {"prefix": "/usr", "exec_prefix": "/usr"}
    lock = landlock_spec(d.python, info)
    seccomp_lib = d.plan.seccomp["library"] if d.plan.seccomp else None
    plans = _rlimits_plans(d.python, d.identity, seccomp_lib, lock)
    if shutil.which("unshare"):
        plans += _unshare_plans(d.python, d.identity, lock)
    assert plans
    for plan in plans:
        ok, why, _ = sb._probe(plan, 64 + 1000)
        assert ok, (
            f"{plan.layer} variant (landlock={plan.landlock is not None}, seccomp={plan.seccomp is not None}, "
            f"wrapper={plan.wrapper[:3]}) failed: {why}"
        )
    assert SECCOMP_RULES


def test_non_linux_is_refused_with_a_reason(fresh_detection, monkeypatch) -> None:
    import sys

    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(SandboxUnavailable, match="needs Linux.*darwin"):
        detect(SandboxConfig(), _failing())
