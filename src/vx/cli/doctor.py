"""`vx doctor` — what this machine can do: the sandbox layer in force and why not a stronger one.

``doctor_report()`` returns plain ``Check`` records (the CLI only renders them), built by the
section functions in ``SECTIONS``. To add a section (e.g. LLM roles), write a function
``() -> list[Check]`` and append it to ``SECTIONS``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import attrs
import click

STATUSES = ("ok", "warn", "fail", "info")


@attrs.frozen
class Check:
    """One line of the report: ``status`` is "ok", "warn" (works, weaker than it could be),
    "fail" (does not work) or "info"."""

    name: str
    status: str = attrs.field(validator=attrs.validators.in_(STATUSES))
    detail: str


def python_section() -> list[Check]:
    return [Check("python", "ok", f"{sys.version.split()[0]} ({sys.executable})")]


def sandbox_section(measure: bool = True) -> list[Check]:
    """The sandbox: every layer tried, the one in force, account, interpreter, overhead."""
    from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

    try:
        sb = Sandbox(SandboxConfig(), probe_all=True)
    except SandboxUnavailable as exc:
        return [Check("sandbox", "fail", f"{exc}. Untrusted code cannot be run on this machine.")]
    except ValueError as exc:  # e.g. a bad $VX_SANDBOX_LAYER
        return [Check("sandbox", "fail", str(exc))]
    d = sb.detection
    checks = [
        Check(
            "sandbox layer",
            "ok" if d.layer == "bwrap" else "warn",
            sb.describe().splitlines()[0].removeprefix("sandbox layer: ")
            + ("" if d.layer == "bwrap" else " (weaker than bwrap: see the lines below)"),
        )
    ]
    for status in d.statuses:
        if status.available:
            state, text = "ok", status.reason
            if status.overhead_ms is not None:
                text += f"; {status.overhead_ms:.0f} ms per trivial candidate"
        elif status.available is None:
            state, text = "info", status.reason
        else:
            state, text = "warn", status.reason
        checks.append(Check(f"  {status.layer}", state, text))
    ident = d.identity
    if ident.dropped:
        dedicated = ident.name == "vx-sandbox"
        checks.append(
            Check(
                "sandbox account",
                "ok" if dedicated else "warn",
                f"running as root; candidates run as {ident.name} (uid {ident.uid}, gid {ident.gid})"
                + ("" if dedicated else "; create the dedicated account: sudo bash .ci/install-system.sh"),
            )
        )
    else:
        weak = d.layer != "bwrap" and d.plan.landlock is None
        checks.append(
            Check(
                "sandbox account",
                "warn" if weak else "ok",
                f"candidates run as you ({ident.name}, uid {ident.uid})"
                + ("; without bwrap or Landlock they can read and write your files" if weak else ""),
            )
        )
    checks.append(Check("sandbox python", "info", d.python_note))
    checks.append(Check("seccomp", "info", d.seccomp))
    if measure:
        try:
            ms = sb.measure_overhead(runs=5)
            checks.append(Check("sandbox overhead", "info", f"{ms:.1f} ms per candidate (median of 5, {d.layer})"))
        except SandboxUnavailable as exc:
            checks.append(Check("sandbox overhead", "fail", str(exc)))
    return checks


def llm_section() -> list[Check]:
    """LLM roles: configured models and whether they are reachable (free Models API; no tokens spent)."""
    from vx.cli.llm import doctor_checks

    return doctor_checks()


SECTIONS: list[Callable[[], list[Check]]] = [python_section, sandbox_section, llm_section]


def doctor_report() -> list[Check]:
    """All checks, section by section."""
    checks: list[Check] = []
    for section in SECTIONS:
        checks.extend(section())
    return checks


_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor(as_json: bool) -> None:
    """Show which sandbox layer is active (and why stronger ones are not), and other checks.

    Exit status 1 when a check fails.
    """
    from rich.table import Table

    from vx.cli.common import console, dump_json

    checks = doctor_report()
    if as_json:
        dump_json([attrs.asdict(c) for c in checks])
    else:
        table = Table(title="vx doctor", title_justify="left", show_lines=False)
        table.add_column("check", no_wrap=True)
        table.add_column("status", no_wrap=True)
        table.add_column("detail", overflow="fold")
        for check in checks:
            table.add_row(check.name, f"[{_STYLE[check.status]}]{check.status}[/]", check.detail)
        console.print(table)
    if any(check.status == "fail" for check in checks):
        raise SystemExit(1)
