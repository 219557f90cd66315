"""`vx report FILE` — a self-contained HTML page for an evolution or ratchet run, or an evaluation."""

from __future__ import annotations

from pathlib import Path

import click

from vx.cli.common import UserError, console
from vx.errors import VxError


def is_eval_file(path: str) -> bool:
    """An evaluation (`vx eval --json` output, or a `-o FILE.jsonl` export) rather than a run file."""
    from vx.inputs import read_input_bytes

    try:
        head = read_input_bytes(path, "file given to vx report")[:16]  # a FIFO or a device is refused
    except VxError as exc:
        raise UserError(str(exc)) from None
    return not head.startswith(b"SQLite format 3") and head.lstrip()[:1] in (b"{", b"[")


@click.command("report")
@click.argument("run_path", metavar="FILE", type=click.Path(exists=True, dir_okay=False))
@click.option("--out", "-o", type=click.Path(dir_okay=False), help="Output file (default: FILE with .html).")
def report_cmd(run_path, out):
    """Write an HTML page (viewable offline) for a run file or an evaluation.

    FILE is an evolution or ratchet run (.vxrun.sqlite), or an evaluation written by
    `vx eval --json > FILE.json` or `vx eval -o FILE.jsonl` (every item, filterable by verdict,
    label and op, each expandable to its failure capsule).
    """
    if is_eval_file(run_path):
        from vx.errors import VxError
        from vx.evaluation import load_eval_document
        from vx.pages import eval_page

        try:
            doc = load_eval_document(run_path)
        except VxError as exc:
            raise UserError(str(exc)) from None
        target = Path(out) if out else Path(run_path).with_suffix(".html")
        if target.resolve() == Path(run_path).resolve():
            raise UserError(f"{run_path}: the page would overwrite the evaluation; choose --out")
        target.write_text(eval_page(doc), encoding="utf-8")
        console.print(f"wrote {target}")
        return
    from vx.ratchet.store import is_ratchet_run

    if is_ratchet_run(run_path):  # a `vx ratchet` run: learning curves, the bank's life, the final judge
        from vx.ratchet.report import write_report as write_ratchet_report
        from vx.ratchet.store import RatchetStoreError

        try:
            console.print(f"wrote {write_ratchet_report(run_path, out)}")
        except RatchetStoreError as exc:  # not a run of this format, or its recorded parts are damaged
            raise UserError(str(exc)) from None
        return
    from vx.evolve.html import write_report
    from vx.evolve.store import RunStoreError

    try:
        path = write_report(run_path, out)
    except RunStoreError as exc:
        raise UserError(str(exc)) from None
    console.print(f"wrote {path}")
