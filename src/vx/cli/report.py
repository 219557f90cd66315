"""`vx report RUN` — a self-contained HTML page for an evolution run."""

from __future__ import annotations

import click

from vx.cli.common import UserError, console


@click.command("report")
@click.argument("run_path", metavar="RUN", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="Output file (default: RUN with .html).")
def report_cmd(run_path, out):
    """Write an HTML report of the evolution (or ratchet) run RUN (viewable offline)."""
    from vx.ratchet.store import is_ratchet_run

    if is_ratchet_run(run_path):  # a `vx ratchet` run: learning curves, the bank's life, the final judge
        from vx.ratchet.report import write_report as write_ratchet_report

        console.print(f"wrote {write_ratchet_report(run_path, out)}")
        return
    from vx.evolve.html import write_report
    from vx.evolve.store import RunStoreError

    try:
        path = write_report(run_path, out)
    except RunStoreError as exc:
        raise UserError(str(exc)) from None
    console.print(f"wrote {path}")
