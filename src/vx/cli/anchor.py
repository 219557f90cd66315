"""`vx anchor suggest|label|log` — choose the items a person labels, and record the labels."""

from __future__ import annotations

import click

from vx.cli.common import (
    COUNT,
    POSITIVE_INT,
    cache_options,
    console,
    dump_document,
    err_console,
    esc,
    friendly_errors,
    open_cache,
)


@click.group("anchor")
def anchor_group() -> None:
    """The ten-item anchor: which unlabeled items to label, and the labels (dev split) themselves."""


@anchor_group.command("suggest")
@click.argument("family_dir", type=click.Path(exists=True, file_okay=False))
@click.option("-n", "n", type=POSITIVE_INT, default=10, show_default=True, help="How many items to suggest.")
@click.option("--rounds", type=COUNT, default=2, show_default=True, help="Rounds of the short evolution.")
@click.option("--seed", type=int, default=0, show_default=True, help="The short evolution's seed.")
@click.option("--jobs", "-j", type=POSITIVE_INT, default=None, help="Worker processes (default: CPU count).")
@click.option("--json", "as_json", is_flag=True, help="Print the suggestions as JSON (schema vx-anchor-suggest/1).")
@cache_options
@friendly_errors
def suggest_cmd(
    family_dir: str,
    n: int,
    rounds: int,
    seed: int,
    jobs: int | None,
    as_json: bool,
    cache_path: str | None,
    no_cache: bool,
) -> None:
    """Rank FAMILY's unlabeled train items by how much a label would tell evolution: items on which the
    best expressions of a short evolution disagree, and items where one op fires and nothing confirms it.
    Label them with `vx anchor label`."""
    from vx.evolve.anchor import suggest

    cache = open_cache(cache_path, no_cache)
    status = (lambda msg: None) if as_json else (lambda msg: err_console.print(f"[dim]{esc(msg)}[/]"))
    res = suggest(
        family_dir, n=n, rounds=rounds, seed=seed, jobs=jobs, cache=cache, on_status=status, progress=not as_json
    )
    if as_json:
        dump_document("vx-anchor-suggest/1", res.as_dict())
        return
    console.print(
        f"[bold]{len(res.items)} item(s) of {esc(res.family)} to label[/] (from a {res.rounds}-round "
        f"evolution; its best expressions:)"
    )
    for text, objective in res.elites[:3]:
        console.print(f"  {objective:.4f}  {esc(text)}")
    for k, s in enumerate(res.items, 1):
        console.rule(f"{k}. {esc(s.item)} (task {esc(s.task)}), score {s.score:.3f}")
        console.print(f"[bold]why:[/] {esc(s.why)}")
        for op, verdict, message in s.evidence:
            mark = "[red]drawback[/]" if verdict == "drawback" else "[green]clean[/]"
            console.print(f"  {esc(op)}: {mark}" + (f" — {esc(message)}" if message else ""))
        _show_output(s.output)
        console.print(f"[dim]label it: vx anchor label {esc(family_dir)} {esc(s.item)} pass|fail[/]")


def _show_output(output: object) -> None:
    """The graded output, as plain text (escaped: it is untrusted), cut at 4000 characters."""
    text = output if isinstance(output, str) else repr(output)
    console.print(
        esc(text[:4000]) + ("\n… (cut at 4000 characters)" if len(text) > 4000 else ""), markup=True, highlight=False
    )


@anchor_group.command("label")
@click.argument("family_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("item")
@click.argument("label")
@click.option("--note", default=None, help="Why (kept in the family's anchor.jsonl).")
@friendly_errors
def label_cmd(family_dir: str, item: str, label: str, note: str | None) -> None:
    """Label ITEM of FAMILY as LABEL (pass, fail or a probability of pass): it moves into the dev split
    (a dev item is relabelled); the locked split is never touched; every label is recorded."""
    from vx.families.anchoring import label_item

    res = label_item(family_dir, item, label, note=note)
    console.print(esc(res.summary()))


@anchor_group.command("log")
@click.argument("family_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the records as JSON (schema vx-anchor-log/1).")
@friendly_errors
def log_cmd(family_dir: str, as_json: bool) -> None:
    """The labels recorded for FAMILY (anchor.jsonl), oldest first."""
    from vx.families.anchoring import anchor_log

    rows = anchor_log(family_dir)
    if as_json:
        dump_document("vx-anchor-log/1", {"records": rows})
        return
    if not rows:
        console.print("no labels recorded yet (vx anchor suggest FAMILY proposes items to label)")
    for r in rows:
        prev = f" (was {r['previous']})" if r.get("previous") is not None else ""
        note = f" — {r['note']}" if r.get("note") else ""
        console.print(esc(f"{r.get('time', '?')}  {r.get('item')}  {r.get('label')}{prev}  {r.get('status')}{note}"))
