"""`vx matrix merge` — join the partial matrices written by `vx eval --shard i/n`."""

from __future__ import annotations

from collections import Counter

import click

from vx.cli.common import console, dump_json, friendly_errors


@click.group("matrix")
def matrix_group() -> None:
    """Verdict matrix files (vx-matrix/1, written by `vx eval --out` / `--shard`)."""


@matrix_group.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--out", "-o", "out_path", required=True, type=click.Path(dir_okay=False), help="Where the joined matrix goes."
)
@click.option("--allow-missing", is_flag=True, help="Write the join even when some shards are missing.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable summary.")
@friendly_errors
def merge_cmd(shards, out_path, allow_missing, as_json) -> None:
    """Join SHARDS (files of one `vx eval --shard i/n` run) into one matrix.

    Refuses shards of different evaluations (family, split, expression, ops and versions), items
    given twice, and (unless --allow-missing) an incomplete set.
    """
    from vx.ops.shards import ShardError, load, merge

    try:
        merged = merge([load(p) for p in shards], names=list(shards))
    except ShardError as exc:
        raise click.ClickException(str(exc)) from None
    missing = merged.n_items - len(merged.indices)
    if missing and not allow_missing:
        raise click.ClickException(
            f"{missing} of {merged.n_items} items are in none of the {len(shards)} shards; "
            "pass the missing shards (or --allow-missing)"
        )
    merged.save(out_path)
    counts = Counter(int(v) for v in merged.verdicts.ravel())
    summary = {
        "out": out_path,
        "items": len(merged.indices),
        "of": merged.n_items,
        "ops": len(merged.ops),
        "drawback": counts.get(1, 0),
        "clean": counts.get(0, 0),
        "abstain": counts.get(-1, 0),
    }
    if as_json:
        dump_json(summary)
    else:
        console.print(
            f"joined {len(shards)} shards: {summary['items']} of {summary['of']} items x {summary['ops']} ops "
            f"({summary['drawback']} drawback, {summary['clean']} clean, {summary['abstain']} abstain) "
            f"-> {out_path}"
        )
