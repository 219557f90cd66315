"""`vx ratchet FAMILY` — the skill loop and co-evolution (flags and rendering over `vx.ratchet.run_ratchet`)."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from vx.cli.common import (
    UserError,
    cache_options,
    console,
    dump_json,
    err_console,
    fmt_num,
    friendly_errors,
    open_cache,
)
from vx.cli.llm import llm_overrides

DEFAULT_SCHEDULE = "15,8,5,2:25,25,25,25"
DEMO_SCHEDULE = "1:12"  # a verifier phase of one round (co arms), then twelve skill rounds
DEMO_BATCH_SIZE = 16  # enough rounds × tasks that some tasks come back: contributions become measurable
DEMO_ARMS = ("oracle", "always-pass")
DEMO_LABEL = "SCRIPTED DEMO — no model is called: the solver, skill synthesizer and final judge are scripted"


def _config(
    *,
    demo,
    arms,
    verifier,
    schedule,
    seed,
    batch_size,
    capacity,
    route_k,
    holdout,
    new_skills,
    no_rollback,
    rollback_tolerance,
    rollback_share,
    papers_protocol,
    final_rounds,
    no_judge,
    judge_against,
    batch,
    jobs,
    timeout,
):
    """A new run's configuration from the flags (a demo's schedule, batch size and arms by default)."""
    from vx.ratchet.config import RatchetConfig, arms_from_flags, parse_schedule

    arms = list(arms) + (["verifier"] if verifier else [])
    if demo and not arms:
        arms = list(DEMO_ARMS)
    if not arms:
        raise UserError(
            "choose the arms to run: --oracle, --co, --naive, --always-pass, --frozen, "
            "--verifier FILE (e.g. --oracle --co)"
        )
    ver, skill = parse_schedule(schedule or (DEMO_SCHEDULE if demo else DEFAULT_SCHEDULE))
    return RatchetConfig(
        arms=arms_from_flags(arms),
        verifier_rounds=ver,
        skill_rounds=skill,
        seed=seed,
        batch_size=batch_size or (DEMO_BATCH_SIZE if demo else 8),
        capacity=capacity,
        route_k=route_k,
        holdout=holdout,
        new_skills=new_skills,
        rollback=not no_rollback,
        rollback_tolerance=rollback_tolerance,
        protocol="papers" if papers_protocol else "two-part",
        rollback_share=rollback_share,
        judge=not no_judge,
        judge_against=tuple(judge_against) or ("final",),
        batch=batch,
        verifier=verifier,
        jobs=jobs,
        timeout=timeout,
        **({"final_rounds": final_rounds} if final_rounds else {}),
    )


def _plan_table(p: dict[str, Any]) -> Table:
    parts = (
        f"{p['rollback_tasks']} rollback + {p['report_tasks']} report"
        if p["protocol"] == "two-part"
        else "rollback and report on the same tasks: the papers' protocol"
    )
    t = Table(
        title=f"dry run: {p['family']} — {p['train_tasks']} training tasks, {p['heldout_tasks']} held-out "
        f"tasks ({parts}), {p['skill_rounds']} skill rounds per arm",
        title_justify="left",
    )
    for c in ("arm", "role", "model", "calls", "worst-case USD"):
        t.add_column(c, justify="right" if c in ("calls", "worst-case USD") else "left")
    for a in p["arms"]:
        for role, d in a["roles"].items():
            t.add_row(a["arm"], role, d["model"], f"{d['calls']:,}", f"{d['worst_usd']:.2f}")
    t.add_row("all", "", "", "", f"{p['worst_usd']:.2f}")
    return t


@click.command("ratchet")
@click.argument("family", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--oracle",
    "arms",
    flag_value="oracle",
    multiple=True,
    help="The skill loop graded by the family's ground truth (the reference).",
)
@click.option(
    "--co",
    "arms",
    flag_value="co",
    multiple=True,
    help="Double Ratchet: the verifier co-evolves and grades the skill loop's training attempts.",
)
@click.option(
    "--naive",
    "arms",
    flag_value="naive",
    multiple=True,
    help="Co-evolution with the naive ablation (anchor guards and skill-side rollback off).",
)
@click.option(
    "--always-pass",
    "arms",
    flag_value="always-pass",
    multiple=True,
    help="A collapsed grader that passes everything (the control).",
)
@click.option("--frozen", "arms", flag_value="frozen", multiple=True, help="No skills: the frozen solver.")
@click.option(
    "--verifier",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Add an arm graded by this .vx verifier.",
)
@click.option(
    "--schedule",
    default=None,
    help=f"Verifier phase rounds : skill phase rounds (co arms alternate them; the others run the skill "
    f"rounds' sum). Default {DEFAULT_SCHEDULE} ({DEMO_SCHEDULE} with --demo).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same run).")
@click.option(
    "--batch-size",
    type=int,
    default=None,
    help=f"Training tasks attempted per round (default 8; {DEMO_BATCH_SIZE} with --demo).",
)
@click.option("--capacity", type=int, default=12, show_default=True, help="Skills the bank holds at most.")
@click.option("--route-k", type=int, default=3, show_default=True, help="Skills routed into one prompt at most.")
@click.option(
    "--holdout",
    type=float,
    default=0.25,
    show_default=True,
    help="Chance that a routed skill is left out of a training prompt (measures its contribution).",
)
@click.option("--new-skills", type=int, default=3, show_default=True, help="Skills written per round at most.")
@click.option("--no-rollback", is_flag=True, help="Never roll the bank back (the naive arm never does).")
@click.option(
    "--rollback-tolerance",
    type=float,
    default=0.0,
    show_default=True,
    help="Roll back only when the rollback part's score drops by more than this.",
)
@click.option(
    "--rollback-share",
    type=float,
    default=0.5,
    show_default=True,
    help="The share of the held-out tasks in the rollback part (the rest is the report part, read by "
    "no loop; seeded by --seed).",
)
@click.option(
    "--papers-protocol",
    is_flag=True,
    help="Roll back on the same held-out tasks the curves and lift are reported on, as the papers do "
    "(optimistic: a reported curve cannot fall); for comparison with the default two-part protocol.",
)
@click.option(
    "--final-rounds",
    type=int,
    default=None,
    help="The 'final' figure is the mean of the last this many rounds (default 10).",
)
@click.option("--no-judge", is_flag=True, help="Skip the final pairwise judge.")
@click.option(
    "--judge-against",
    type=click.Choice(["final", "peak"]),
    multiple=True,
    help="Which round's outputs meet the round-0 outputs (default final; repeatable).",
)
@click.option("--batch", is_flag=True, help="Send solver and judge requests through the Message Batches API.")
@click.option(
    "--data-dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Where the ground truth's dataset files are (evalplus releases, the SQL question file); default $VX_DATA_DIR.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Run file (default runs/<family>-ratchet-<time>.vxratchet.sqlite).",
)
@click.option(
    "--resume",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Continue a run from its last committed round (its options are the run's own).",
)
@click.option("--dry-run", is_flag=True, help="Print the calls per role and the worst-case USD; send nothing.")
@click.option(
    "--demo",
    is_flag=True,
    help="Offline and free: the family's scripted solver, synthesizer and judge stand in for the models "
    "(no key needed; labelled as scripted everywhere); writes the run file and its HTML report.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result (or the dry-run plan) as JSON.")
@click.option("--jobs", "-j", type=int, default=None, help="Worker processes for applying ops.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds per op call.")
@click.option("--quiet", "-q", is_flag=True, help="No per-round lines.")
@click.option(
    "--llm-model",
    "llm_models",
    multiple=True,
    metavar="ROLE=MODEL",
    help="Use MODEL for ROLE (solver, skill_synthesizer, final_judge, …); repeatable.",
)
@click.option(
    "--llm-budget",
    type=float,
    default=None,
    help="Stop once this many USD are spent (the run stops at the last whole round; --resume with a larger "
    "budget continues it).",
)
@cache_options
@friendly_errors
def ratchet_cmd(
    family,
    resume,
    dry_run,
    demo,
    as_json,
    data_dir,
    out,
    quiet,
    llm_models,
    llm_budget,
    cache_path,
    no_cache,
    **config_flags,
):
    """Run the skill loop on FAMILY with one or more graders and compare their held-out lift.

    A frozen solver attempts the family's training tasks with a bounded bank of routed skills; failed attempts
    become failure capsules, from which short named lessons are written; the bank is curated by measured
    contribution and rolled back when the score on the rollback part of the held-out (locked) tasks drops.
    Curves, lift and retention come from the report part, which no loop reads. --oracle grades with the
    family's ground truth, --co with a co-evolving verifier; lift retention is co's lift over the oracle's.
    Use --dry-run first (the calls and the worst-case cost), or --demo (a scripted solver, offline).
    """
    from vx.families.family import Family
    from vx.ratchet.config import RatchetConfig, RatchetError

    if family is None and resume is None:
        raise UserError("name a family directory (e.g. vx ratchet examples/humaneval --oracle --co) or --resume RUN")
    meta = _resumed_meta(resume, demo) if resume is not None else None
    if meta is not None:
        family = family or meta["family_dir"]
        demo = bool(meta.get("demo"))
    fam = Family(family)
    try:
        cfg = _config(demo=demo, **config_flags) if meta is None else RatchetConfig.from_dict(meta["config"])
        if dry_run:
            return _dry_run(fam, cfg, as_json, llm_models, llm_budget)
        return _run(fam, cfg, out, resume, demo, data_dir, quiet, as_json, llm_models, llm_budget, cache_path, no_cache)
    except RatchetError as exc:
        raise UserError(str(exc)) from None


def _resumed_meta(resume: str, demo: bool) -> dict[str, Any]:
    """The run file's meta of a resumed run; --demo only resumes a scripted demo."""
    from vx.ratchet.store import RatchetStore, RatchetStoreError

    try:
        with RatchetStore(resume) as s:
            meta = s.meta()
    except RatchetStoreError as exc:
        raise UserError(str(exc)) from None
    if demo and not meta.get("demo"):
        raise UserError(f"{resume} is a run with models, not a scripted demo: resume it without --demo")
    return meta


def _dry_run(fam, cfg, as_json, llm_models, llm_budget) -> None:
    """The calls and the worst-case cost of a run, printed; nothing is sent."""
    from vx.llm.config import LLMConfigError, has_credentials, load_config
    from vx.ratchet.run import plan

    try:
        llm_cfg = load_config(
            fam.llm_config, family_path=fam.dir / "family.toml", overrides=llm_overrides(llm_models, llm_budget)
        )
    except LLMConfigError as exc:
        raise UserError(str(exc)) from None
    p = plan(fam, cfg, llm_cfg, verifier_llm=has_credentials())
    if as_json:
        dump_json(p)
    else:
        console.print(_plan_table(p))
        console.print(f"budget: ${p['budget_usd']:g} per run (--llm-budget); {p['note']}", markup=False)
        console.print("nothing was sent (dry run)", markup=False)


def _run(fam, cfg, out, resume, demo, data_dir, quiet, as_json, llm_models, llm_budget, cache_path, no_cache):
    from vx.cli.llm import usage_line
    from vx.ratchet.figures import TABLE_HEADERS, fmt_table_rows
    from vx.ratchet.report import write_report
    from vx.ratchet.run import run_ratchet
    from vx.ratchet.store import RatchetStoreError

    cache = open_cache(cache_path, no_cache)

    def say(msg: str) -> None:
        if not quiet:
            err_console.print(msg, markup=False, highlight=False)

    def on_round(row: dict[str, Any]) -> None:
        if quiet:
            return
        extra = f" [rolled back: round {row['bank_round']}'s bank stays]" if row["rolled_back"] else ""
        err_console.print(
            f"{'[scripted] ' if demo else ''}{row['arm']} round {row['round']}: rollback part "
            f"{fmt_num(row['rollback_measured'])} · report part {fmt_num(row['report_measured'])} · "
            f"train pass {fmt_num(row['train_pass'])} · bank {row['bank_size']} (+{row['born']} "
            f"−{row['removed']}){extra} · {row['seconds']:.1f}s",
            markup=False,
            highlight=False,
        )

    if demo:
        say(DEMO_LABEL)
    try:
        result = run_ratchet(
            fam,
            config=cfg,
            out=out,
            resume=resume,
            demo=demo,
            llm_overrides=llm_overrides(llm_models, llm_budget),
            data_dir=data_dir,
            verdict_cache=cache,
            say=say,
            on_round=on_round,
        )
    except RatchetStoreError as exc:
        raise UserError(str(exc)) from None
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]: committed rounds are kept; continue with vx ratchet --resume RUN")
        raise SystemExit(130) from None
    page = write_report(result.run_path) if demo else None
    usage = dict(result.usage or {})
    if as_json:
        dump_json(
            {
                "run": result.run_path,
                "demo": result.demo,
                "figures": result.figures,
                "stopped": result.stopped,
                "budget_spent": result.budget_spent,
                "usage": usage,
                "report": str(page) if page else None,
            }
        )
    else:
        held = result.figures["heldout"]
        what = (
            f"report part: {held['report_tasks']} held-out tasks no loop reads"
            if result.figures["protocol"] == "two-part"
            else f"the papers' protocol: rollback reads these {held['report_tasks']} held-out tasks too"
        )
        t = Table(
            title=f"{'[SCRIPTED DEMO] ' if demo else ''}held-out lift, graded by the ground truth ({what})",
            title_justify="left",
        )
        for h in TABLE_HEADERS:
            t.add_column(h, justify="left" if h == "arm" else "right")
        for row in fmt_table_rows(result.figures):
            t.add_row(*row)
        console.print(t)
        for d in result.figures["judge"].values():
            console.print(
                f"{'scripted ' if demo else ''}final judge {d['arm']} ({d['against']} vs round 0, "
                f"{d['rubric']} rubric): {d['win']} wins, {d['loss']} losses, {d['tie']} ties; win rate "
                f"{fmt_num(d['win_rate'])} of decided pairs",
                markup=False,
            )
        console.print(f"run file: {result.run_path} (vx report {result.run_path})", markup=False)
        if page is not None:
            console.print(f"report: {page} (a scripted demo: no model was called)", markup=False)
        if not demo:
            console.print(usage_line(usage), markup=False)
    if result.stopped:
        why = "the LLM budget ran out" if result.budget_spent else "an LLM call failed"
        err_console.print(
            f"stopped early: {why} ({result.stopped}). Every round before it is recorded; continue "
            f"with vx ratchet --resume {result.run_path}"
            + (" --llm-budget USD (a larger budget)" if result.budget_spent else ""),
            markup=False,
            highlight=False,
        )
        raise SystemExit(1)
