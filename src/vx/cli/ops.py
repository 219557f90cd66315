"""`vx ops` — the op pool of a family: tier, status, failure class, description."""

from __future__ import annotations

import click
from rich.table import Table

from vx.cli.common import console, dump_document, esc, friendly_errors


@click.command("ops")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the ops as JSON (schema vx-ops/1).")
@friendly_errors
def ops_cmd(family_dir, as_json):
    """List the ops of a family (default: the family around the current directory)."""
    from vx.families.family import Family, find_family_dir

    fam = Family(family_dir or find_family_dir("."))
    pool = fam.pool()
    cat = pool.catalog()
    if as_json:
        dump_document("vx-ops/1", {"family": fam.name, "root": pool.root_name, "ops": cat})
        return
    t = Table(title=f"ops of family {fam.name} (root: {pool.root_name})", title_justify="left")
    for c in ("op", "tier", "status", "detects", "description", "version"):
        t.add_column(c, overflow="fold")
    for c in cat:
        t.add_row(esc(c["name"]) + (" (root)" if c["root"] else ""), esc(c["tier"]),
                  esc(c["status"]) + (" (baseline)" if c["baseline"] else ""),
                  esc(c["detects"]), esc(c["description"]), esc(c["version"]))
    console.print(t)
