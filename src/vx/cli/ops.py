"""`vx ops` — the op pool of a family: tier, status, failure class, description."""

from __future__ import annotations

import click
from rich.table import Table

from vx.cli.common import cache_options, console, dump_document, esc, friendly_errors, open_cache, run_options


@click.command("ops")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the ops as JSON (schema vx-ops/1).")
@click.option(
    "--false-alarms",
    "false_alarms",
    is_flag=True,
    help="Also estimate each op's false-alarm rate on the train split without labels: the pool is "
    "applied to the train and dev items (sandboxed; cached) and each op's firing rate on the "
    "pseudo-positives is shown with n and its evidence.",
)
@click.option(
    "--estimator",
    type=click.Choice(["pseudo-positives", "label-model"]),
    default="pseudo-positives",
    show_default=True,
    help="With --false-alarms: the pass evidence (docs/evolve.md).",
)
@run_options
@cache_options
@friendly_errors
def ops_cmd(family_dir, as_json, false_alarms, estimator, jobs, timeout, cache_path, no_cache):
    """List the ops of a family (default: the family around the current directory)."""
    from vx.families.family import Family, find_family_dir

    fam = Family(family_dir or find_family_dir("."))
    pool = fam.pool()
    cat = pool.catalog()
    est = None
    if false_alarms:
        from vx.evolve.estimates import family_false_alarms

        est = family_false_alarms(
            fam,
            estimator=estimator,
            jobs=jobs,
            timeout=timeout,
            cache=open_cache(cache_path, no_cache),
            progress=not as_json,
        )
    if as_json:
        dump_document(
            "vx-ops/1",
            {
                "family": fam.name,
                "root": pool.root_name,
                "ops": cat,
                **({"false_alarms": est.as_dict()} if est is not None else {}),
            },
        )
        return
    t = Table(title=f"ops of family {fam.name} (root: {pool.root_name})", title_justify="left")
    cols = ["op", "tier", "status", "detects", "description", "version"]
    if est is not None:
        cols.insert(4, "est. false alarms")
    for col in cols:
        t.add_column(col, overflow="fold")
    for c in cat:
        row = [
            esc(c["name"]) + (" (root)" if c["root"] else ""),
            esc(c["tier"]),
            esc(c["status"]) + (" (baseline)" if c["baseline"] else ""),
            esc(c["detects"]),
            esc(c["description"]),
            esc(c["version"]),
        ]
        if est is not None:
            e = est.ops.get(c["name"])
            cell = "—" if e is None or e.n == 0 else f"{e.rate:.1%} ({e.fires:.0f} of {e.n:.0f})"
            row.insert(4, f"[yellow]{cell}[/]" if e is not None and e.high else cell)
        t.add_row(*row)
    console.print(t)
    if est is not None:
        console.print(
            f"false alarms estimated without labels on {esc(est.evidence.describe())} "
            '(docs/evolve.md, "False alarms without labels"); yellow: at least 2%'
        )
