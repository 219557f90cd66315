"""`vx doctor`: renders :func:`vx.doctor.doctor_report` (the checks live in :mod:`vx.doctor`)."""

from __future__ import annotations

import attrs
import click

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.command("doctor")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON (schema vx-doctor/1).")
@click.option("--brief", is_flag=True, help="One line for the sandbox layer, then only the warnings and failures.")
def doctor(as_json: bool, brief: bool) -> None:
    """Show which sandbox layer is active (and why stronger ones are not), and other checks.

    Exit status 1 when a check fails.
    """
    from rich.table import Table

    from vx.cli.common import console, dump_document, esc
    from vx.doctor import doctor_report

    checks = doctor_report()
    if brief and not as_json:
        # one line per check whatever the terminal's width: a script reads them line by line
        layer = next((c for c in checks if c.name in ("sandbox layer", "sandbox")), None)
        if layer is not None:
            console.print(
                f"vx doctor: model code runs in [{_STYLE[layer.status]}]"
                f"{esc(_one_line(layer.detail.split(' - ')[0]))}[/]"
                + ("" if layer.status == "ok" else f" ({layer.status})"),
                highlight=False,
                soft_wrap=True,
            )
        for check in checks:
            if check.status in ("warn", "fail") and check is not layer:
                console.print(
                    f"  [{_STYLE[check.status]}]{check.status}[/] {esc(_one_line(check.name))}: "
                    f"{esc(_one_line(check.detail))}",
                    highlight=False,
                    soft_wrap=True,
                )
    elif as_json:
        dump_document(
            "vx-doctor/1",
            {"ok": not any(c.status == "fail" for c in checks), "checks": [attrs.asdict(c) for c in checks]},
        )
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
