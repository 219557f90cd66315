"""`vx fmt`: rewrite .vx files in their canonical form."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from vx.dsl.parse import VxSyntaxError
from vx.dsl.vxfile import VxFileError, format_source, read_text


def vx_files(paths: tuple[str, ...]) -> Iterator[Path]:
    """The given files, and every ``*.vx`` file under the given directories (sorted)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.vx") if p.is_file())
        else:
            yield path


def _write_atomically(path: Path, text: str) -> None:
    """Replace the file's contents in one step, so an interruption never leaves half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@click.command("fmt")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--check", "check_only", is_flag=True, help="Change nothing; exit 1 and list the files that are not canonical."
)
@click.option(
    "--width",
    default=80,
    show_default=True,
    type=click.IntRange(min=20),
    help="Wrap expressions longer than this many columns.",
)
def fmt(paths: tuple[str, ...], check_only: bool, width: int) -> None:
    """Print .vx files in canonical form, rewriting them in place.

    PATH may be a file, a directory (all *.vx files below it), or - to read standard input
    and write the canonical form to standard output. Header comments (e.g. "; family: humaneval")
    are kept; a comment inside the expression is an error, since formatting would lose it.
    """
    failed = changed = unchanged = 0
    for path in [None] if paths == ("-",) else list(vx_files(paths)):
        if path is None:
            text, name = sys.stdin.read(), "<stdin>"
        else:
            if str(path) == "-":
                raise click.UsageError("'-' (standard input) cannot be mixed with file names")
            try:
                text, name = read_text(path), str(path)  # a FIFO or /dev/zero is refused (vx.inputs)
            except VxFileError as exc:
                click.echo(f"error: {exc}", err=True)
                failed += 1
                continue
        try:
            canonical = format_source(text, filename=name, width=width)
        except VxSyntaxError as exc:
            click.echo(str(exc), err=True)
            failed += 1
            continue
        if path is None:
            if check_only:
                changed += canonical != text
            else:
                click.echo(canonical, nl=False)
            continue
        if canonical == text:
            unchanged += 1
        elif check_only:
            changed += 1
            click.echo(f"would reformat {path}")
        else:
            _write_atomically(path, canonical)
            changed += 1
            click.echo(f"reformatted {path}")
    if paths != ("-",):
        verb = "would be reformatted" if check_only else "reformatted"
        summary = f"{changed} file{'s' * (changed != 1)} {verb}, {unchanged} already canonical"
        if failed:
            summary += f", {failed} with errors"
        click.echo(summary, err=True)
    if failed or (check_only and changed):
        sys.exit(1)
