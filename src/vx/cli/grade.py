"""`vx grade` — grade samples files with a verifier and print pass@k (a thin layer over `vx.grading`)."""

from __future__ import annotations

import click
from rich.table import Table

from vx.cli.common import (
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
    show_option,
    written,
)
from vx.cli.eval import check_export_path, print_failures, progress_for, verdicts_line


@click.command("grade")
@click.argument("expr_path", metavar="VERIFIER.vx", type=click.Path(exists=True, dir_okay=False))
@click.argument(
    "samples", metavar="SAMPLES.jsonl...", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False)
)
@click.option(
    "--tasks",
    "tasks_spec",
    required=True,
    metavar="humaneval+|mbpp+|FILE",
    help="The tasks the samples answer: a dataset name (humaneval+, mbpp+, humaneval), a dataset's "
    "release file, or a family's tasks.jsonl.",
)
@click.option(
    "--data-dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Folder holding the dataset's release file (e.g. ../shared/data/evalplus); default: "
    "$HUMANEVAL_OVERRIDE_PATH / $MBPP_OVERRIDE_PATH, then evalplus's cache.",
)
@click.option(
    "--truth",
    is_flag=True,
    help="Also run the dataset's hidden tests: the true pass@k beside vx's estimate, and how well the "
    "verifier agrees with the tests (precision and recall of its PASS verdicts).",
)
@family_option(
    "The family whose ops the verifier uses (default: the nearest family.toml above VERIFIER.vx, "
    "else the op pack that knows the tasks)."
)
@export_options("id, task, verdict, truth, every op's verdict and message", "sample")
@click.option(
    "--labels",
    "labels_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help='More anchor labels for the corrected pass@1 (repeatable): JSON lines {"id", "label"} naming a '
    'graded sample (<task>#<k>, as -o writes ids) or {"task", "output", "label"}; label pass, fail '
    "or a probability of pass.",
)
@click.option(
    "--no-anchor",
    is_flag=True,
    help="Leave the family's dev labels out of the anchor (only --labels): when the dev items are not "
    "like the samples (e.g. mutants of canonical solutions).",
)
@click.option(
    "--select",
    "select_path",
    type=click.Path(dir_okay=False),
    default=None,
    metavar="FILE.jsonl",
    help="Best of n: rank every task's samples (verdict, the verifier's evidence, support among the samples, "
    "a digest tie-break) and write the chosen one per task to FILE.jsonl (task_id, solution, rank, score, "
    "reason...: itself a samples file); prints pass@1 after selection.",
)
@json_option("Print the summary and every row as JSON (schema vx-grade/1).")
@show_option(10, "samples where vx and the hidden tests disagree (with --truth)")
@run_options
@cache_options
@friendly_errors
def grade_cmd(
    expr_path,
    samples,
    tasks_spec,
    data_dir,
    truth,
    family_dir,
    export_path,
    csv_formulas,
    html_path,
    labels_paths,
    no_anchor,
    select_path,
    as_json,
    show,
    jobs,
    timeout,
    cache_path,
    no_cache,
):
    """Grade every sample in SAMPLES.jsonl... with VERIFIER.vx and print pass@k.

    The attempts at one task are graded together (peer ops compare them). vx-estimated pass@k
    counts the samples the verifier passes (ABSTAIN counts as a pass), with the unbiased estimator
    1 - C(n-c, k)/C(n, k), for k = 1, 10, 100 as far as every task has k samples. A samples line
    is {"task_id", "solution"} (a whole program) or {"task_id", "completion"} (continuing the
    prompt), as evalplus writes them; CodeT's {"prompt", "samples": [...]} files work too.

    Beside it, pass@1 corrected for the verifier's own errors, with a 95% interval: a Bayesian
    estimate from the verifier's verdicts on anchor labels (the family's dev split, --labels).

    Resumable: verdicts are kept in the verdict cache and hidden-test results beside the expected
    outputs, so running the same command again after an interruption only does what is left.
    """
    if export_path:
        check_export_path(export_path)
    if select_path and not str(select_path).endswith(".jsonl"):
        raise UserError(f"--select {select_path}: the chosen samples are written as JSON lines: name a .jsonl file")
    from vx.families.family import Family, FamilyError, find_family_dir
    from vx.grading import grade_samples, open_tasks, read_labels, verifier_for

    packs = []
    try:
        packs = [Family(family_dir or find_family_dir(expr_path)).pack()]
    except FamilyError:
        pass
    source = open_tasks(tasks_spec, data_dir=data_dir, packs=packs)
    if truth and source.truth is None:
        raise UserError(
            f"--truth: the tasks in {tasks_spec} have no hidden tests; a dataset such as humaneval+ or mbpp+ has them"
        )
    verifier = verifier_for(expr_path, source, family_dir)
    labels = [row for path in labels_paths for row in read_labels(path)]
    cache = open_cache(cache_path, no_cache)
    progress = progress_for(as_json)
    try:
        result = grade_samples(
            verifier,
            source,
            samples,
            truth=truth,
            jobs=jobs,
            timeout=timeout,
            cache=cache,
            progress=progress,
            on_phase=None if as_json else _say,
            anchor=not no_anchor,
            labels=labels,
            select=bool(select_path),
        )
    except KeyboardInterrupt:
        err_console.print(
            "[yellow]interrupted[/]: what was graded is kept (verdict cache, hidden-test results); "
            "run the same command again to continue"
        )
        raise SystemExit(130) from None
    not_kept: list[str] = []  # files a full disk refused: said after the results, exit 4
    if export_path:
        from vx.cli.eval import write_export

        if rows := written(lambda: write_export(result, export_path, csv_formulas), not_kept):
            err_console.print(f"wrote {len(result.items)} rows to {rows}")
    if html_path and (page := written(lambda: result.write_html(html_path), not_kept)):
        err_console.print(f"wrote {page}")
    if select_path and (chosen := written(lambda: result.write_selection(select_path), not_kept)):
        err_console.print(f"wrote the chosen sample of {len(result.chosen)} tasks to {chosen}")
    if as_json:
        dump_json(result.as_dict())
    else:
        print_result(result, expr_path, show, cache)
    exit_if_not_kept(cache, not_kept)


def _say(text: str) -> None:
    err_console.print(f"[dim]{esc(text)}[/]", soft_wrap=True)


def print_result(result, expr_path: str, show: int, cache) -> None:
    s = result.summary()
    per = s["attempts_per_task"]
    per_text = f"{per[0]} per task" if len(per) == 1 else f"{per[0]}–{per[-1]} per task"
    console.print(
        f"[bold]vx grade[/] {esc(expr_path)} — {s['attempts']} samples of {s['tasks_graded']} tasks "
        f"([cyan]{esc(s['tasks'])}[/], {per_text})"
    )
    console.print(f"expression: [green]{esc(' '.join(s['expression'].split()))}[/]")
    for note in result.notes:
        console.print(f"[yellow]note[/]: {esc(note)}")
    est, true = result.estimated, result.true
    if result.no_truth:
        reasons = sorted(set(result.no_truth.values()))
        console.print(
            f"[yellow]{len(result.no_truth)} task(s) have no ground truth[/] "
            f"({esc(', '.join(sorted(result.no_truth)))}; their reference cannot run: {esc(reasons[0])}"
            f"{' …' if len(reasons) > 1 else ''}); the table compares the other "
            f"{len(result.truth_tasks)} tasks (vx's estimate on all: "
            + ", ".join(f"pass@{k} {fmt_num(v)}" for k, v in est.items())
            + ")"
        )
        est = result.estimated_on_truth
    corrected = result.corrected_on_truth if result.no_truth else result.corrected
    t = Table(title="pass@k", title_justify="left", show_edge=False)
    t.add_column("")
    t.add_column("vx estimate", justify="right")
    if corrected is not None:
        t.add_column("corrected (95% interval)", justify="right")
    if true is not None:
        t.add_column("true (hidden tests)", justify="right")
        t.add_column("difference", justify="right")
    for k, value in est.items():
        row = [f"pass@{k}", fmt_num(value)]
        if corrected is not None:
            row.append(f"{corrected.estimate:.3f} [{corrected.low:.3f}, {corrected.high:.3f}]" if k == 1 else "")
        if true is not None:
            row += [fmt_num(true.get(k)), f"{value - true[k]:+.3f}" if k in true else "—"]
        t.add_row(*row)
    console.print(t)
    if corrected is not None:
        pr, fr = corrected.anchor_pass, corrected.anchor_fail
        console.print(
            f"corrected for the verifier's errors on {result.anchor.n} anchor labels "
            f"({esc('; '.join(result.anchor_sources))}): it passes {pr[0]}/{pr[1]} labelled passes and "
            f"{fr[0]}/{fr[1]} labelled failures (Bayesian, Beta priors; Rogan–Gladen "
            f"{fmt_num(corrected.rogan_gladen)})"
        )
    else:
        console.print("[dim]no anchor labels (no family dev split, no --labels): no corrected pass@1[/]")
    if len(per) > 1 and 1 in est:
        console.print("[dim]pass@10 and pass@100 need at least that many samples of every task[/]")
    print_selection(result, est)
    v = s["verdicts"]
    console.print(
        "verdicts: "
        + " · ".join(f"{name.upper()} {v.get(name, 0)}" for name in ("pass", "fail", "abstain"))
        + ("  (ABSTAIN counts as a pass)" if v.get("abstain") else "")
    )
    agr = result.agreement
    if agr is not None:
        console.print(
            f"against the hidden tests ({esc(s['agreement']['truth'])}): agreement {fmt_num(agr.accuracy)} · "
            f"precision of PASS {fmt_num(agr.pass_precision)} · recall of PASS {fmt_num(agr.pass_recall)} · "
            f"recall of FAIL {fmt_num(agr.fail_recall)} · κ {fmt_num(agr.kappa)}"
        )
        console.print(
            f"confusion: [green]PASS & passes {agr.tn}[/] · PASS & fails {agr.fn} (missed) · "
            f"[red]FAIL & fails {agr.tp}[/] · FAIL & passes {agr.fp} (false alarm)"
        )
        rows = [r for r in result.rows() if (r["verdict"] == "fail") != (r["truth"] == "fail")]
        if rows and show:
            d = Table(
                title=f"vx and the hidden tests disagree ({len(rows)}; showing {min(show, len(rows))})",
                title_justify="left",
                show_edge=False,
            )
            for c in ("sample", "vx", "hidden tests", "why"):
                d.add_column(c, overflow="fold", no_wrap=c in ("vx",))
            for r in rows[:show]:
                fired = [k.split(":", 1)[1] for k, val in r.items() if k.startswith("verdict:") and val == "drawback"]
                why = (
                    "; ".join(f"{op}: {r.get('message:' + op) or ''}".rstrip(": ") for op in fired)
                    if r["verdict"] == "fail"
                    else (r["truth_detail"] or "")
                )
                d.add_row(esc(r["id"]), r["verdict"].upper(), esc(r["truth"]), esc(why))
            console.print(d)
    app = result.evaluation.grading.application
    print_failures(app)
    console.print(verdicts_line(app, cache))


def print_selection(result, est) -> None:
    """Best of n: pass@1 after selection beside the raw estimate; with the hidden tests, the chosen
    attempts' true pass@1 beside a random attempt's and the oracle's."""
    after = result.selected_estimated
    if after is None:
        return
    console.print(
        f"best of n: [bold]pass@1 after selection {fmt_num(after)}[/] (vx estimate; raw {fmt_num(est.get(1))}) "
        f"over {len(result.chosen)} tasks"
    )
    truth = result.selection_truth()
    if truth is not None:
        console.print(
            f"  true pass@1 over {truth['tasks']} tasks: chosen [bold]{fmt_num(truth['selected'])}[/] · a random "
            f"attempt {fmt_num(truth['random'])} (expected) · oracle {fmt_num(truth['oracle'])} · lift retention "
            f"{fmt_num(truth['retention'])}"
        )
