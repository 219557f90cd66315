"""`vx cache info|clear` — the verdict cache."""

from __future__ import annotations

import click
from rich.table import Table

from vx.cli.common import console, dump_document


@click.group("cache")
def cache_group():
    """Inspect or clear the verdict cache."""


@cache_group.command("info")
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False),
    help="Cache file (default: $VX_CACHE or ~/.cache/vx/verdicts.sqlite).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON (schema vx-cache-info/1).")
def info(cache_path, as_json):
    """Where the cache is, how big, and how many verdicts per op."""
    from vx.ops.cache import VerdictCache

    with VerdictCache(cache_path) as c:
        data = c.info()
    if as_json:
        dump_document("vx-cache-info/1", data)
        return
    console.print(f"cache {data['path']}: {data['entries']} verdicts, {data['bytes'] / 1e6:.1f} MB")
    if data["ops"]:
        t = Table()
        for col in ("op", "versions", "verdicts", "errors"):
            t.add_column(col, justify="left" if col == "op" else "right")
        for r in data["ops"]:
            t.add_row(r["op"], str(r["versions"]), str(r["entries"]), str(r["errors"]))
        console.print(t)


@cache_group.command("clear")
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False),
    help="Cache file (default: $VX_CACHE or ~/.cache/vx/verdicts.sqlite).",
)
@click.option("--op", "op_name", default=None, help="Only this op's verdicts.")
def clear(cache_path, op_name):
    """Delete cached verdicts (all, or one op's)."""
    from vx.ops.cache import VerdictCache

    with VerdictCache(cache_path) as c:
        n = c.clear(op_name)
    console.print(f"removed {n} cached verdicts")
