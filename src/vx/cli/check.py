"""`vx check`: parse .vx files and report problems (unknown ops, duplicates, constant parts)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import click

from vx.cli.common import family_option
from vx.cli.fmt import vx_files
from vx.dsl.check import check as check_node
from vx.dsl.parse import VxSyntaxError, parse_located, render_diagnostic
from vx.dsl.vxfile import VxFileError, read_text


def known_ops_from_options(ops: str | None) -> frozenset[str] | None:
    """The op names an expression may use, from the command line; None when not given.

    This is the one place that decides what is known: other sources (a family directory's
    op pool) plug in here.
    """
    if ops is None:
        return None
    names = frozenset(name.strip() for name in ops.split(",") if name.strip())
    if not names:
        raise click.BadParameter("give at least one op name, e.g. --ops crash,timeout", param_hint="--ops")
    return names


_FAMILY_OPS: dict[str, frozenset[str] | None] = {}


def family_ops(family_dir: str | os.PathLike[str] | None, path: str | Path | None) -> frozenset[str] | None:
    """The op names of the family given, or of the family found above `path` (None if there is none).

    A .vx file's ``; specs:`` header adds the synthesized ops it names.
    """
    from vx.families.family import Family, FamilyError, find_family_dir

    try:
        d = Path(family_dir) if family_dir else (find_family_dir(path) if path else None)
    except FamilyError:
        return None
    if d is None:
        return None
    key = str(Path(d).resolve())
    if key not in _FAMILY_OPS:
        try:
            _FAMILY_OPS[key] = frozenset(Family(d).pool().names)
        except Exception as exc:  # a broken family: say so, check the syntax only
            click.echo(f"{d}: warning: cannot load the family's op pool, checking syntax only: {exc}", err=True)
            _FAMILY_OPS[key] = None
    names = _FAMILY_OPS[key]
    if names is not None and path is not None:
        from vx.dsl.vxfile import VxFile, VxFileError

        try:
            vx = VxFile.read(path)
            names = names | {s.get("name", "") for s in vx.specs()}
        except VxFileError as exc:
            click.echo(f"warning: {exc} (its synthesized ops will be reported as unknown)", err=True)
    return names


def check_text(text: str, filename: str, known_ops: Iterable[str] | None) -> tuple[int, int, list[str]]:
    """Check one file's text: (number of errors, number of warnings, rendered reports)."""
    try:
        node, spans = parse_located(text, filename=filename)
    except VxSyntaxError as exc:
        return 1, 0, [str(exc)]
    lines = text.split("\n")
    errors = warnings = 0
    reports = []
    for problem in check_node(node, known_ops):
        span = spans[problem.path]
        width = span.width if problem.code == "unknown-op" else 1
        reports.append(
            render_diagnostic(
                filename=filename,
                line=span.line,
                column=span.column,
                source_line=lines[span.line - 1] if span.line <= len(lines) else "",
                message=problem.message,
                hint=problem.hint,
                width=width,
                severity=problem.severity,
            )
        )
        if problem.severity == "error":
            errors += 1
        else:
            warnings += 1
    return errors, warnings, reports


@click.command("check")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option(
    "--ops",
    default=None,
    metavar="A,B,C",
    help="Comma-separated names of the ops that exist; any other op is an error.",
)
@family_option(
    "Take the known ops from this family's op pool (default: the family.toml found above each file, if any)."
)
def check(paths: tuple[str, ...], ops: str | None, family_dir: str | None) -> None:
    """Check .vx files: syntax, unknown ops (with the nearest names), duplicate children,
    vote K out of range, and subtrees that can never fire or never be clean.

    PATH may be a file, a directory (all *.vx files below it) or - for standard input.
    Exits 1 if any file has an error; warnings alone exit 0.
    """
    explicit = known_ops_from_options(ops)
    total_errors = total_warnings = 0
    files = [None] if paths == ("-",) else list(vx_files(paths))
    for path in files:
        if path is None:
            text, name = sys.stdin.read(), "<stdin>"
        else:
            try:
                text, name = read_text(path), str(path)  # a FIFO or /dev/zero is refused (vx.inputs)
            except VxFileError as exc:
                click.echo(f"error: {exc}")
                total_errors += 1
                continue
        known = explicit if explicit is not None else family_ops(family_dir, path)
        errors, warnings, reports = check_text(text, name, known)
        for report in reports:
            click.echo(report)
        total_errors += errors
        total_warnings += warnings
    n = len(files)
    click.echo(
        f"checked {n} file{'s' * (n != 1)}: {total_errors} error{'s' * (total_errors != 1)}, "
        f"{total_warnings} warning{'s' * (total_warnings != 1)}",
        err=True,
    )
    if total_errors:
        sys.exit(1)
