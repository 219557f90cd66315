"""Attacks on the CPU budgets, on every layer: a candidate that switches its CPU timer off,
or ignores the CPU-limit signal, is still stopped -- by the wall-clock backstop, then the parent's kill,
or by RLIMIT_CPU's hard limit."""

from __future__ import annotations

from vx.sandbox import Sandbox, SandboxConfig


def test_a_candidate_that_switches_off_its_cpu_timer_meets_the_wall_clock_backstop(sb: Sandbox) -> None:
    code = (
        "import signal\ndef f():\n    signal.setitimer(signal.ITIMER_PROF, 0)\n"
        "    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n    while True:\n        pass\n"
    )
    short = Sandbox(
        SandboxConfig(layer=sb.layer, per_call_timeout=0.2, wall_factor=1.0, wall_slack=0.5, kill_grace=0.5)
    )
    rep = short.run_calls(code, "f", [([], {}), ([], {})])
    assert rep.calls[0].status == "timeout", (rep.status, rep.detail)
    assert "wall-clock" in (rep.calls[0].exc_message or rep.detail or "")


def test_a_candidate_that_ignores_the_cpu_limit_signal_is_ended_by_the_hard_limit(sb: Sandbox) -> None:
    code = (
        "import signal\ndef f():\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "    signal.setitimer(signal.ITIMER_PROF, 0)\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n"
        "    while True:\n        pass\n"
    )
    rep = sb.run_calls(code, "f", [([], {})], timeouts=[30.0], cpu_limit=1, total_timeout=60.0)
    assert rep.status in ("timeout", "crashed") and rep.calls[0].status in ("timeout", "crashed"), rep.detail
    assert rep.wall_time < 50.0  # ended by RLIMIT_CPU's hard limit (2 s of CPU), long before the 60 s deadline
