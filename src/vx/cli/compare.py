"""`vx compare A.vx B.vx --dataset locked` and `vx compare --seeds RUN…` (thin layer over
`vx.evolve.comparison`)."""

from __future__ import annotations

import click
from rich.table import Table

from vx.cli.common import (
    POSITIVE_INT,
    UserError,
    cache_options,
    console,
    dump_document,
    esc,
    family_option,
    fmt_num,
    friendly_errors,
    open_cache,
    run_options,
    show_option,
)


@click.command("compare")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--dataset",
    "-d",
    type=click.Choice(["locked", "dev"]),
    default="locked",
    show_default=True,
    help="The labeled split both verifiers are graded on.",
)
@click.option("--seeds", is_flag=True, help="PATHS are run files: compare each run's seed with its evolved verifier.")
@family_option("The family (default: found above the .vx files, or recorded in the runs).")
@click.option(
    "--permutations",
    type=POSITIVE_INT,
    default=10000,
    show_default=True,
    help="Sign flips of the paired permutation test.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON (schema vx-compare/1).")
@show_option(20, "fixed and broken items")
@run_options
@cache_options
@friendly_errors
def compare_cmd(
    paths: tuple[str, ...],
    dataset: str,
    seeds: bool,
    family_dir: str | None,
    permutations: int,
    as_json: bool,
    show: int,
    jobs: int | None,
    timeout: float,
    cache_path: str | None,
    no_cache: bool,
) -> None:
    """Compare two verifiers (or seed vs evolved over several runs) on a labeled split.

    Reports each verifier's agreement, the items B fixes and breaks relative to A, a paired
    sign-flip permutation test clustered by task and a bootstrap confidence interval.
    """
    from vx.evolve.comparison import compare_files, compare_runs
    from vx.evolve.store import RunStoreError
    from vx.families.family import Family

    fam = Family(family_dir) if family_dir else None
    cache = open_cache(cache_path, no_cache)
    try:
        if seeds:
            res = compare_runs(
                paths, dataset, family=fam, cache=cache, jobs=jobs, timeout=timeout, n_permutations=permutations
            )
        else:
            if len(paths) != 2:
                raise UserError("compare takes two .vx files (or several run files with --seeds)")
            res = compare_files(
                paths[0],
                paths[1],
                dataset,
                family=fam,
                cache=cache,
                jobs=jobs,
                timeout=timeout,
                n_permutations=permutations,
            )
    except (RunStoreError, ValueError) as exc:
        raise UserError(str(exc)) from None
    finally:
        if cache is not None:
            cache.close()
    if as_json:
        dump_document("vx-compare/1", res)
        return
    if seeds:
        _print_runs(res, dataset)
    else:
        _print_pair(res, dataset, show)


def _print_runs(res: dict, dataset: str) -> None:
    """Seed against evolved over several runs: a row per run, the mean difference and its tests."""
    t = Table(title=f"seed vs evolved on {dataset}", title_justify="left", show_edge=False)
    for col in ("run", "seed", "seed agr.", "evolved agr.", "Δ", "fixed", "broken", "evolved"):
        t.add_column(col, overflow="fold" if col == "evolved" else "ellipsis")
    for r in res["runs"]:
        t.add_row(
            r["run"],
            str(r["seed"]),
            fmt_num(r["seed_agreement"]),
            fmt_num(r["evolved_agreement"]),
            f"{r['diff']:+.3f}",
            str(r["fixed"]),
            str(r["broken"]),
            " ".join(str(r["evolved"]).split()),
        )
    console.print(t)
    console.print(
        f"mean Δ {res['mean_diff']:+.3f}  95% bootstrap CI over runs [{res['ci_low']:+.3f}, "
        f"{res['ci_high']:+.3f}]  paired permutation p = {res['p_value']:.4f} "
        f"({res['tasks']} task clusters, {res['n_permutations']} sign flips)"
    )


def _print_pair(res: dict, dataset: str, show: int) -> None:
    """Two verifiers on one split: their agreement figures, the items B fixes and breaks, the paired tests."""
    t = Table(title=f"{dataset}: {res['n']} items, {res['tasks']} tasks", title_justify="left", show_edge=False)
    t.add_column("")
    t.add_column("A", justify="right")
    t.add_column("B", justify="right")
    for label, key in (
        ("agreement", "accuracy"),
        ("recall-weighted", "recall_weighted"),
        ("κ", "kappa"),
        ("fail recall", "fail_recall"),
        ("pass recall", "pass_recall"),
        ("coverage", "coverage"),
    ):
        t.add_row(label, fmt_num(res["a"][key]), fmt_num(res["b"][key]))
    console.print(f"A = {res['a']['name']}\nB = {res['b']['name']}")
    console.print(t)
    ci = res["ci_task_mean_diff"]
    console.print(
        f"B vs A: fixed {res['fixed']}, broken {res['broken']} (both right {res['both_right']}, "
        f"both wrong {res['both_wrong']})"
    )
    for label, key in (("fixed", "fixed_items"), ("broken", "broken_items")):
        ids = res.get(key) or []
        if ids:
            shown = ", ".join(ids[:show]) + (
                f" … and {len(ids) - show} more (--json lists all)" if len(ids) > show else ""
            )
            console.print(f"  {label}: {esc(shown)}")
    console.print(
        f"Δ agreement {res['diff']:+.3f}  paired permutation p = {res['p_value']:.4f} (clustered by task, "
        f"{res['n_permutations']} sign flips)  95% bootstrap CI of the per-task mean Δ "
        f"[{ci['low']:+.3f}, {ci['high']:+.3f}]"
    )
