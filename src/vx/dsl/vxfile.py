""".vx files: the header comments, the canonical formatting of a whole file, the specs sidecar.

A .vx file holds one expression, optionally preceded by header comments (``; key: value`` lines,
e.g. ``; family: humaneval``). ``vx evolve`` writes the typed specs of the synthesized ops an evolved
expression uses to a sidecar ``<name>.specs.json`` and names it in the header (``; specs: FILE``), so
the file is reproducible from the expression plus the registered op pool. This module is the one
place that reads and writes that format; the expression itself is the parser's and printer's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from vx.dsl.ast import Node
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import to_text
from vx.errors import VxError
from vx.inputs import read_input_text
from vx.text import storable

__all__ = ["VxFile", "VxFileError", "format_source", "read_header", "read_text", "split_header", "write_vx"]


#: the largest .vx file (or specs sidecar) vx reads: an expression is kilobytes, a sidecar a few hundred
MAX_VX_BYTES = 16 * 2**20


class VxFileError(VxError):
    """A .vx file (or its specs sidecar) that cannot be read; the message names the file."""


def read_text(path: str | Path) -> str:
    """A .vx file's text: a regular file of at most 16 MiB (a FIFO, a device or a directory is refused
    before a byte is read: `vx.inputs`), UTF-8 (a byte-order mark is dropped), never silently mis-decoded."""
    return read_input_text(
        path, ".vx file", limit=MAX_VX_BYTES, error=VxFileError, hint="a .vx file is UTF-8: re-save it as UTF-8"
    )


def read_header(text: str) -> dict[str, str]:
    """The ``; key: value`` comment lines before the expression, as a dict.

    Reading stops at the first line that is neither blank nor a comment. Comment lines
    without a ``key:`` are ignored.
    """
    header: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not line.startswith(";"):
            break
        body = line.lstrip(";").strip()
        key, sep, value = body.partition(":")
        key = key.strip()
        if sep and key and " " not in key:
            header[key] = value.strip()
    return header


def split_header(text: str) -> tuple[list[str], str, int]:
    """Split a .vx file into its header lines (the leading blank and ``;`` comment lines),
    the rest, and the 1-based line number where the rest starts."""
    lines = text.split("\n")
    n = 0
    while n < len(lines) and (not lines[n].strip() or lines[n].lstrip().startswith(";")):
        n += 1
    return lines[:n], "\n".join(lines[n:]), n + 1


def format_source(text: str, *, filename: str = "<string>", width: int = 80) -> str:
    """The canonical form of a whole .vx file: its header comments (trailing spaces removed,
    runs of blank lines collapsed to one, leading blank lines dropped), then the canonical
    expression and one newline.

    Raises `VxSyntaxError` for a syntax error, and for a comment after the header: it would
    be lost, because comments are not part of the tree.
    """
    header, body, body_line = split_header(text)
    node = parse(text, filename=filename)
    for offset, line in enumerate(body.split("\n")):
        column = line.find(";")
        if column >= 0:
            raise VxSyntaxError(
                "a comment after the start of the expression would be lost by formatting",
                filename=filename,
                line=body_line + offset,
                column=column + 1,
                source_line=line,
                hint="move the comment above the expression, into the header",
                width=len(line) - column,
                kind="comment",
            )
    kept: list[str] = []
    for line in header:
        line = line.strip()
        if line or (kept and kept[-1]):
            kept.append(line)
    return "".join(line + "\n" for line in kept) + to_text(node, width) + "\n"


@attrs.frozen
class VxFile:
    """A .vx file as read: its path, text and header (``VxFile.read(path)``)."""

    path: Path
    text: str
    header: Mapping[str, str]

    @classmethod
    def read(cls, path: str | Path) -> VxFile:
        text = read_text(path)
        return cls(Path(path), text, read_header(text))

    def expression(self, known_ops: Iterable[str] | None = None) -> Node:
        return parse(self.text, filename=str(self.path), known_ops=known_ops)

    @property
    def specs_path(self) -> Path | None:
        """The specs sidecar the header names (``; specs: FILE``, relative to the .vx file)."""
        name = self.header.get("specs")
        return self.path.parent / name if name else None

    def specs(self) -> list[dict[str, Any]]:
        """The typed op specs of the sidecar ([] when the header names none)."""
        side = self.specs_path
        if side is None:
            return []
        text = read_input_text(
            side, f"specs file named in the header of {self.path}", limit=MAX_VX_BYTES, error=VxFileError
        )
        try:
            specs = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise VxFileError(
                f"{self.path}: cannot read the specs file {side} named in its header: {str(exc)[:200]}"
            ) from None
        if not isinstance(specs, list) or not all(isinstance(s, dict) for s in specs):
            raise VxFileError(
                f"{self.path}: the specs file {side} named in its header must hold a JSON list of op specs"
            )
        return specs


def write_vx(
    path: str | Path, node: Node, *, header: Mapping[str, str] = {}, specs: Iterable[Mapping[str, Any]] = ()
) -> Path:
    """Write ``node`` as a canonical .vx file with ``; key: value`` header lines; typed ``specs``
    (of synthesized ops it uses) go to the sidecar ``<name>.specs.json``, named in the header."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"; {k}: {v}" for k, v in header.items()]
    specs = list(specs)
    if specs:
        side = path.with_suffix(".specs.json")
        side.write_text(json.dumps([dict(s) for s in specs], indent=2, sort_keys=True) + "\n", encoding="utf-8")
        lines.append(f"; specs: {side.name}")
    text = "".join(line + "\n" for line in lines) + to_text(node) + "\n"
    path.write_text(storable(text), encoding="utf-8")  # an unpaired surrogate (a header value) as its escape
    return path
