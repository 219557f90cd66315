"""`vx eval` — how a verifier agrees with a split's labels, item by item."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from vx.cli.common import (
    COUNT,
    FINITE,
    UserError,
    cache_options,
    console,
    dump_json,
    err_console,
    esc,
    exit_if_not_kept,
    export_options,
    family_option,
    fmt_num,
    friendly_errors,
    json_option,
    open_cache,
    run_options,
    written,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from vx.evaluation import Evaluation
    from vx.families.family import Family
    from vx.metrics import Agreement, OpSummary
    from vx.verifier import Verifier


def load_verifier(expr_path: str, family_dir: str | None):
    from vx.families.family import Family, find_family_dir
    from vx.verifier import Verifier

    fam = Family(family_dir or find_family_dir(expr_path))
    return Verifier.load(expr_path, fam), fam


#: the agreement figures --fail-under can gate on (= vx.evaluation.METRICS; kept here so that
#: `vx eval --help` imports nothing heavy)
METRIC_CHOICES = ("accuracy", "balanced", "recall-weighted", "kappa")


def evaluate_split(verifier, fam, dataset: str, *, jobs, timeout, cache, progress=None, executor=None):
    """Grade a split; returns (evaluation, agreement or None, op summaries) (`vx.evaluation.evaluate`)."""
    from vx.evaluation import evaluate

    ev = evaluate(
        verifier, dataset, family=fam, jobs=jobs, timeout=timeout, cache=cache, progress=progress, executor=executor
    )
    return ev, (ev.metrics if dataset != "train" else None), ev.op_stats


def failure_rows(app):
    rows = []
    for (op_name, kind), fs in sorted(app.failure_summary().items()):
        rows.append(
            {"op": op_name, "kind": kind, "count": len(fs), "example_item": fs[0].item, "example_error": fs[0].error}
        )
    return rows


def print_failures(app) -> None:
    rows = failure_rows(app)
    if not rows:
        return
    t = Table(title="op failures (each such op abstained on those items)", title_justify="left")
    for c in ("op", "kind", "items", "first item", "error"):
        t.add_column(c)
    for r in rows:
        t.add_row(esc(r["op"]), r["kind"], str(r["count"]), esc(r["example_item"]), esc(r["example_error"]))
    console.print(t)


@click.command("eval")
@click.argument("expr_path", metavar="EXPR.vx", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--dataset",
    "-d",
    type=click.Choice(["dev", "train", "locked"]),
    default="dev",
    show_default=True,
    help="Which split to evaluate on (locked: a person auditing; never used by evolution).",
)
@family_option("Family directory (default: the nearest family.toml above EXPR.vx).")
@json_option("Print the whole evaluation as JSON (schema vx-eval/1; `vx report` renders it).")
@export_options("id, task, label, final verdict, every op's verdict and message", "item")
@click.option(
    "--fail-under",
    type=FINITE,
    default=None,
    metavar="X",
    help="Exit 1 when the chosen --metric is below X (a CI gate): a number from 0 to 1 (from -1 for "
    "kappa), checked before anything is graded.",
)
@click.option(
    "--metric",
    type=click.Choice(METRIC_CHOICES),
    default="accuracy",
    show_default=True,
    help="The agreement figure --fail-under gates on.",
)
@click.option("--show", type=COUNT, default=20, show_default=True, help="How many disagreeing items to list.")
@click.option(
    "--max-op-failures",
    type=COUNT,
    default=0,
    show_default=True,
    help="Exit 3 when ops failed on the infrastructure side (raised, timed out, lost their worker) on "
    "more items than this; the failures table names them.",
)
@run_options
@cache_options
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default=None,
    help="Where the ops run: this machine's worker processes (default, or $VX_EXECUTOR), or a Dask "
    "cluster (--scheduler, $VX_DASK_SCHEDULER, else a local cluster of --jobs workers). "
    "See docs/scale.md.",
)
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address (tcp://host:8786).")
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Grade only every N-th item, starting at the I-th (1-based), and write a partial matrix "
    "to --out; join the shards with `vx matrix merge`.",
)
@click.option(
    "--matrix",
    "out_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE",
    help="Write the verdict matrix to FILE (vx-matrix/1 JSON); required with --shard. (Not to be "
    "confused with -o/--export, the per-item rows.)",
)
@click.option(
    "--out", "legacy_out", type=click.Path(dir_okay=False), default=None, hidden=True, help="The old name of --matrix."
)
@friendly_errors
def eval_cmd(
    expr_path,
    dataset,
    family_dir,
    as_json,
    export_path,
    csv_formulas,
    html_path,
    fail_under,
    metric,
    show,
    max_op_failures,
    jobs,
    timeout,
    cache_path,
    no_cache,
    executor,
    scheduler,
    shard,
    out_path,
    legacy_out,
):
    """Evaluate the verifier EXPR.vx on a split of its family.

    Prints agreement with the labels, a per-op table and the items where the verifier and the
    labels disagree (with the ops that fired). ABSTAIN counts as PASS in agreement figures.

    Exit status: 0 done; 1 agreement below --fail-under; 2 bad input (a message says what and
    where); 3 ops failed on more than --max-op-failures items (their verdicts are missing, so the
    figures are not to be trusted).
    """
    out_path = _matrix_path(out_path, legacy_out)
    _check_flags(export_path, fail_under, metric, dataset)
    verifier, fam = load_verifier(expr_path, family_dir)
    cache = open_cache(cache_path, no_cache)
    from vx.ops.executors import make_executor

    runner = make_executor(executor, jobs=jobs, address=scheduler)
    try:
        if shard is not None:
            _eval_shard(
                verifier,
                fam,
                dataset,
                shard,
                out_path,
                jobs=jobs,
                timeout=timeout,
                cache=cache,
                executor=runner,
                as_json=as_json,
            )
            return
        ev, agr, summ = evaluate_split(
            verifier,
            fam,
            dataset,
            jobs=jobs,
            timeout=timeout,
            cache=cache,
            progress=progress_for(as_json),
            executor=runner,
        )
        split, grading = ev.items, ev.grading
    finally:
        runner.close()
        if cache is not None:
            cache.close()  # (its path is still printed below)
    not_kept: list[str] = []  # files a full disk refused: said after the results, exit 4
    if out_path:
        matrix = _matrix_file(verifier, fam, dataset, grading.application, (1, 1), len(split), list(range(len(split))))
        written(lambda: matrix.save(out_path), not_kept)
    app = grading.application
    if export_path and (done := written(lambda: write_export(ev, export_path, csv_formulas), not_kept)):
        err_console.print(f"wrote {len(ev.items)} rows to {done}")
    if html_path and (page := written(lambda: ev.write_html(html_path), not_kept)):
        err_console.print(f"wrote {page}")
    if as_json:
        dump_json(ev.as_dict())  # every op's verdict, the trace, the output
    else:
        _print_evaluation(expr_path, verifier, fam, dataset, ev, agr, summ, show, cache)
    _gate(ev, agr, dataset, fail_under, metric, max_op_failures, sorted({f.item for f in app.failures}))
    exit_if_not_kept(cache, not_kept)


def _matrix_path(out_path: str | None, legacy_out: str | None) -> str | None:
    """--matrix, or its old name --out (with a note); both at once is a usage error."""
    if legacy_out is None:
        return out_path
    if out_path is not None:
        raise click.UsageError("--out is the old name of --matrix: give one of them")
    err_console.print(
        "[yellow]note[/]: vx eval --out is now --matrix (the verdict matrix file; -o/--export writes the per-item rows)"
    )
    return legacy_out


def _check_flags(export_path: str | None, fail_under: float | None, metric: str, dataset: str) -> None:
    """The flags checked before anything is graded: an export file vx can write, a --fail-under within the
    metric's range, on a labeled split."""
    if export_path:
        check_export_path(export_path)
    if fail_under is None:
        return
    low = -1.0 if metric == "kappa" else 0.0
    if not low <= fail_under <= 1.0:
        raise click.BadParameter(
            f"{fail_under:g} is outside the range of {metric}: give a number from {low:g} to 1",
            param_hint="'--fail-under'",
        )
    if dataset == "train":
        raise click.BadParameter(
            "the train split is unlabeled: there is no agreement to gate on; use --dataset dev or locked",
            param_hint="'--fail-under'",
        )


def _disagreements(ev: Evaluation) -> list[dict[str, Any]]:
    """The labeled items whose final verdict disagrees with the label, with the ops that fired on each."""
    app = ev.grading.application
    items = []
    for it, final in zip(ev.items, ev.grading.finals):
        fired = [op for op in app.matrix.op_names if app.matrix.get(it.id, op) == 1]
        items.append(
            {
                "id": it.id,
                "task": it.task,
                "label": it.hard_label(),
                "verdict": final.value,
                "fired": [{"op": op, "message": app.message(it.id, op)} for op in fired],
            }
        )
    return [r for r in items if r["label"] is not None and (r["verdict"] == "fail") != (r["label"] == "fail")]


def _print_evaluation(
    expr_path: str,
    verifier: Verifier,
    fam: Family,
    dataset: str,
    ev: Evaluation,
    agr: Agreement | None,
    summ: Sequence[OpSummary],
    show: int,
    cache: Any,
) -> None:
    """The evaluation for a person: the expression, the agreement (or the verdict counts of an unlabeled
    split), the ops, the disagreements, the op failures and how the verdicts were had."""
    app = ev.grading.application
    console.print(
        f"[bold]vx eval[/] {esc(expr_path)} — family [cyan]{esc(fam.name)}[/], split [cyan]{dataset}[/] "
        f"({len(ev.items)} items)"
    )
    from vx.dsl.printer import to_text

    console.print(f"expression: [green]{esc(to_text(verifier.expr, width=10_000))}[/]")
    for line in verifier.pool.describe_environment():
        console.print(f"[dim]{esc(line)}[/]")
    if agr:
        _print_agreement(agr)
    else:
        from collections import Counter

        counts = Counter(f.value for f in ev.grading.finals)
        console.print("verdicts (unlabeled split): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    console.print(_ops_table(verifier, summ))
    disagree = _disagreements(ev)
    if disagree:
        t = Table(title=f"disagreements ({len(disagree)}; showing {min(show, len(disagree))})", title_justify="left")
        for col in ("item", "label", "verdict", "fired ops"):
            t.add_column(col, overflow="fold")
        for r in disagree[:show]:
            said = "; ".join(f"{f['op']}: {f['message']}" if f["message"] else f["op"] for f in r["fired"])
            t.add_row(esc(r["id"]), r["label"], r["verdict"], esc(said) if said else "—")
        console.print(t)
    elif agr:
        console.print("no disagreements")
    print_failures(app)
    console.print(verdicts_line(app, cache))


def _print_agreement(agr: Agreement) -> None:
    """The agreement figures and the confusion counts."""
    t = Table(title="agreement with labels (abstain counts as pass)", title_justify="left")
    for c in ("accuracy", "recall-weighted", "balanced acc", "fail recall", "pass recall", "κ", "coverage"):
        t.add_column(c, justify="right")
    figures = (
        agr.accuracy,
        agr.recall_weighted,
        agr.balanced_accuracy,
        agr.fail_recall,
        agr.pass_recall,
        agr.kappa,
        agr.coverage,
    )
    t.add_row(*(fmt_num(x) for x in figures))
    console.print(t)
    console.print(
        f"confusion: [red]FAIL & fail {agr.tp}[/] · FAIL & pass {agr.fp} (false alarm) · "
        f"[green]PASS & pass {agr.tn}[/] · PASS & fail {agr.fn} (missed) · abstained {agr.abstained}"
    )


def _ops_table(verifier: Verifier, summ: Sequence[OpSummary]) -> Table:
    """A row per op: tier, coverage, fire rate, accuracy; on a wide terminal its overlaps and conflicts."""
    tiers = {o.name: o.tier for o in verifier.pool}
    narrow = console.size.width < 100  # 80 columns: op names whole, the two overlap figures left out
    t = Table(
        title="ops" + (" (overlaps, conflicts: --json or a wider terminal)" if narrow else ""), title_justify="left"
    )
    widest = max((len(s.op) + (7 if s.op == verifier.pool.root_name else 0) for s in summ), default=2)
    cols = ("op", "tier", "coverage", "fires", "accuracy", "n labeled") + (() if narrow else ("overlaps", "conflicts"))
    for c in cols:
        # op names are never cut or wrapped; figures never wrap
        t.add_column(
            c,
            justify="left" if c in ("op", "tier") else "right",
            no_wrap=True,
            min_width=widest if c == "op" else None,
        )
    for s in summ:
        t.add_row(
            *(
                esc(s.op) + (" (root)" if s.op == verifier.pool.root_name else ""),
                tiers.get(s.op, "?"),
                fmt_num(s.coverage),
                fmt_num(s.fire_rate),
                fmt_num(s.accuracy),
                str(s.n_labeled),
                fmt_num(s.overlaps),
                fmt_num(s.conflicts),
            )[: len(cols)]
        )
    return t


def _gate(
    ev: Evaluation,
    agr: Agreement | None,
    dataset: str,
    fail_under: float | None,
    metric: str,
    max_op_failures: int,
    failed_items: list[str],
) -> None:
    """The exit status: 3 when ops failed on more than --max-op-failures items, 1 below --fail-under, 2 when
    there is no agreement to gate on."""
    if len(failed_items) > max_op_failures:
        err_console.print(
            f"ops failed on {len(failed_items)} item(s) (more than --max-op-failures {max_op_failures}): "
            f"first {esc(failed_items[0])}; their verdicts are missing (see the op failures)"
        )
        sys.exit(3)
    if fail_under is None:
        return
    if agr is None:
        err_console.print("--fail-under needs a labeled split (dev or locked)")
        sys.exit(2)
    if not len(ev.items):
        err_console.print(f"the {dataset} split is empty: there is no agreement to compare with --fail-under")
        sys.exit(2)
    value = ev.metric(metric)
    if not value >= fail_under:  # NaN (e.g. κ when one class is absent) does not pass the gate
        err_console.print(f"{metric} {value:.3f} is below --fail-under {fail_under}")
        sys.exit(1)


def progress_for(as_json: bool):
    """Counted progress on stderr: bars on a terminal, plain lines in a pipe or a log file, none with --json."""
    from vx.ops.progress import for_console

    return False if as_json else for_console(err_console)


def verdicts_line(app, cache) -> str:
    """How the verdicts were had: computed now, read from the cache, or copied from an identical attempt of
    the batch (disjoint counts), and the time."""
    shared = f", {app.shared} copied from identical attempts" if app.shared else ""
    return (
        f"[dim]{app.calls + app.cache_hits + app.shared} verdicts: {app.calls} computed, {app.cache_hits} "
        f"from the cache{shared}, {app.seconds:.1f}s"
        + (f" · cache {esc(cache.path)}" if cache else " · cache off")
        + "[/]"
    )


def check_export_path(path: str) -> None:
    """Refuse an export file name vx cannot write before any op runs."""
    from pathlib import Path

    suffix = Path(path).suffix.lower()
    if suffix not in (".csv", ".jsonl", ".parquet"):
        raise click.BadParameter(f"{path}: name a .csv, .jsonl or .parquet file", param_hint="'--export' / '-o'")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserError(
                f"{path}: writing .parquet needs pyarrow: pip install pyarrow (or pip install "
                "'vx-verifiers[export]'); .csv and .jsonl need nothing"
            ) from None


def write_export(ev, path: str, csv_formulas: bool = False):
    from vx.errors import VxError

    try:
        return ev.write(path, escape_formulas=not csv_formulas)
    except (VxError, OSError) as exc:
        raise UserError(f"{path}: {exc}") from None


def _summ_dict(s) -> dict:
    import attrs

    return attrs.asdict(s)


def _matrix_file(verifier, fam, dataset, app, shard, n_items, indices):
    from vx.ops.shards import from_application

    versions = {o.name: o.version for o in verifier.pool}
    return from_application(
        app,
        family=fam.name,
        split=dataset,
        expression=verifier.text,
        shard=shard,
        n_items=n_items,
        indices=indices,
        versions=versions,
    )


def _eval_shard(verifier, fam, dataset, shard, out_path, *, jobs, timeout, cache, executor, as_json) -> None:
    from vx.ops.shards import parse_shard, shard_indices

    i, n = parse_shard(shard)
    if not out_path:
        raise click.UsageError("--shard needs --matrix FILE (where the partial matrix goes)")
    split = fam.split(dataset) if dataset != "locked" else fam.labeled(dataset)
    items = list(split.items)
    indices = shard_indices(len(items), i, n)
    grading = verifier.grade_items(
        [items[k] for k in indices],
        jobs=jobs,
        timeout=timeout,
        cache=cache,
        progress=progress_for(as_json),
        executor=executor,
    )
    _matrix_file(verifier, fam, dataset, grading.application, (i, n), len(items), indices).save(out_path)
    if as_json:
        dump_json({"shard": [i, n], "items": len(indices), "of": len(items), "out": out_path})
    else:
        console.print(
            f"shard {i}/{n}: {len(indices)} of {len(items)} items of {fam.name}/{dataset} graded; "
            f"matrix written to {out_path} (join the shards with `vx matrix merge`)"
        )
