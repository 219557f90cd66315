"""`vx ratchet FAMILY` — the skill loop and co-evolution (flags and rendering over `vx.ratchet.run_ratchet`)."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from vx.cli.common import UserError, cache_options, console, dump_json, err_console, fmt_num, friendly_errors, \
    open_cache
from vx.cli.llm import llm_overrides


def _config(arms, schedule, seed, batch_size, capacity, route_k, holdout, new_skills, no_rollback,
            rollback_tolerance, no_judge, judge_against, batch, verifier, jobs, timeout):
    from vx.ratchet.config import RatchetConfig, arms_from_flags, parse_schedule

    ver, skill = parse_schedule(schedule)
    return RatchetConfig(arms=arms_from_flags(arms), verifier_rounds=ver, skill_rounds=skill, seed=seed,
                         batch_size=batch_size, capacity=capacity, route_k=route_k, holdout=holdout,
                         new_skills=new_skills, rollback=not no_rollback, rollback_tolerance=rollback_tolerance,
                         judge=not no_judge, judge_against=tuple(judge_against) or ("final",), batch=batch,
                         verifier=verifier, jobs=jobs, timeout=timeout)


def _plan_table(p: dict[str, Any]) -> Table:
    t = Table(title=f"dry run: {p['family']} — {p['train_tasks']} training tasks, {p['heldout_tasks']} held-out "
                    f"tasks, {p['skill_rounds']} skill rounds per arm", title_justify="left")
    for c in ("arm", "role", "model", "calls", "worst-case USD"):
        t.add_column(c, justify="right" if c in ("calls", "worst-case USD") else "left")
    for a in p["arms"]:
        for role, d in a["roles"].items():
            t.add_row(a["arm"], role, d["model"], f"{d['calls']:,}", f"{d['worst_usd']:.2f}")
    t.add_row("all", "", "", "", f"{p['worst_usd']:.2f}")
    return t


@click.command("ratchet")
@click.argument("family", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--oracle", "arms", flag_value="oracle", multiple=True,
              help="The skill loop graded by the family's ground truth (the reference).")
@click.option("--co", "arms", flag_value="co", multiple=True,
              help="Double Ratchet: the verifier co-evolves and grades the skill loop's training attempts.")
@click.option("--naive", "arms", flag_value="naive", multiple=True,
              help="Co-evolution with the naive ablation (anchor guards and skill-side rollback off).")
@click.option("--always-pass", "arms", flag_value="always-pass", multiple=True,
              help="A collapsed grader that passes everything (the control).")
@click.option("--frozen", "arms", flag_value="frozen", multiple=True, help="No skills: the frozen solver.")
@click.option("--verifier", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Add an arm graded by this .vx verifier.")
@click.option("--schedule", default="15,8,5,2:25,25,25,25", show_default=True,
              help="Verifier phase rounds : skill phase rounds (co arms alternate them; the others run the skill "
                   "rounds' sum).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed (same seed, same run).")
@click.option("--batch-size", type=int, default=8, show_default=True, help="Training tasks attempted per round.")
@click.option("--capacity", type=int, default=12, show_default=True, help="Skills the bank holds at most.")
@click.option("--route-k", type=int, default=3, show_default=True, help="Skills routed into one prompt at most.")
@click.option("--holdout", type=float, default=0.25, show_default=True,
              help="Chance that a routed skill is left out of a training prompt (measures its contribution).")
@click.option("--new-skills", type=int, default=3, show_default=True, help="Skills written per round at most.")
@click.option("--no-rollback", is_flag=True, help="Never roll the bank back (the naive arm never does).")
@click.option("--rollback-tolerance", type=float, default=0.0, show_default=True,
              help="Roll back only when the held-out score drops by more than this.")
@click.option("--no-judge", is_flag=True, help="Skip the final pairwise judge.")
@click.option("--judge-against", type=click.Choice(["final", "peak"]), multiple=True,
              help="Which round's outputs meet the round-0 outputs (default final; repeatable).")
@click.option("--batch", is_flag=True, help="Send solver and judge requests through the Message Batches API.")
@click.option("--data-dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="Where the ground truth's dataset files are (evalplus releases, the SQL question file); "
                   "default $VX_DATA_DIR.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Run file (default runs/<family>-ratchet-<time>.vxratchet.sqlite).")
@click.option("--resume", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Continue a run from its last committed round (its options are the run's own).")
@click.option("--dry-run", is_flag=True, help="Print the calls per role and the worst-case USD; send nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the result (or the dry-run plan) as JSON.")
@click.option("--jobs", "-j", type=int, default=None, help="Worker processes for applying ops.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds per op call.")
@click.option("--quiet", "-q", is_flag=True, help="No per-round lines.")
@click.option("--llm-model", "llm_models", multiple=True, metavar="ROLE=MODEL",
              help="Use MODEL for ROLE (solver, skill_synthesizer, final_judge, …); repeatable.")
@click.option("--llm-budget", type=float, default=None, help="Stop LLM calls once this many USD are spent.")
@cache_options
@friendly_errors
def ratchet_cmd(family, arms, verifier, schedule, seed, batch_size, capacity, route_k, holdout, new_skills,
                no_rollback, rollback_tolerance, no_judge, judge_against, batch, data_dir, out, resume, dry_run,
                as_json, jobs, timeout, quiet, llm_models, llm_budget, cache_path, no_cache):
    """Run the skill loop on FAMILY with one or more graders and compare their held-out lift.

    A frozen solver attempts the family's training tasks with a bounded bank of routed skills; failed attempts
    become failure capsules, from which short named lessons are written; the bank is curated by measured
    contribution and rolled back when the held-out score (the locked tasks, graded by the family's ground
    truth) drops. --oracle grades with the ground truth, --co with a co-evolving verifier; lift retention is
    co's lift over the oracle's. Use --dry-run first: it prints the calls and the worst-case cost.
    """
    from vx.llm.config import LLMConfigError, has_credentials, load_config
    from vx.ratchet.config import RatchetError
    from vx.ratchet.store import RatchetStore, RatchetStoreError

    arms = list(arms)
    if verifier:
        arms.append("verifier")
    if family is None and resume is None:
        raise UserError("name a family directory (e.g. vx ratchet examples/humaneval --oracle --co) or --resume RUN")
    from vx.families.family import Family

    run_id = None
    if resume is not None:
        try:
            with RatchetStore(resume) as s:
                meta = s.meta()
        except RatchetStoreError as exc:
            raise UserError(str(exc)) from None
        family = family or meta["family_dir"]
        run_id = (meta.get("llm") or {}).get("run") or None
    fam = Family(family)
    try:
        if resume is None:
            if not arms:
                raise UserError("choose the arms to run: --oracle, --co, --naive, --always-pass, --frozen, "
                                "--verifier FILE (e.g. --oracle --co)")
            cfg = _config(arms, schedule, seed, batch_size, capacity, route_k, holdout, new_skills, no_rollback,
                          rollback_tolerance, no_judge, judge_against, batch, verifier, jobs, timeout)
        else:
            from vx.ratchet.config import RatchetConfig

            cfg = RatchetConfig.from_dict(meta["config"])
        try:
            llm_cfg = load_config(fam.llm_config, family_path=fam.dir / "family.toml",
                                  overrides=llm_overrides(llm_models, llm_budget))
        except LLMConfigError as exc:
            raise UserError(str(exc)) from None
        if dry_run:
            from vx.ratchet.run import plan

            p = plan(fam, cfg, llm_cfg, verifier_llm=has_credentials())
            if as_json:
                dump_json(p)
            else:
                console.print(_plan_table(p))
                console.print(f"budget: ${p['budget_usd']:g} per run (--llm-budget); {p['note']}", markup=False)
                console.print("nothing was sent (dry run)", markup=False)
            return
        if not has_credentials():
            raise UserError("vx ratchet needs the LLM roles solver, skill_synthesizer and final_judge, and "
                            "ANTHROPIC_API_KEY is not set: set it (export ANTHROPIC_API_KEY=…) and run again; "
                            "--dry-run shows the calls and the worst-case cost without a key")
        return _run(fam, cfg, out, resume, run_id, data_dir, quiet, as_json, llm_models, llm_budget, cache_path,
                    no_cache)
    except RatchetError as exc:
        raise UserError(str(exc)) from None


def _run(fam, cfg, out, resume, run_id, data_dir, quiet, as_json, llm_models, llm_budget, cache_path, no_cache):
    from vx.cli.llm import engine_roles, start_llm, usage_line
    from vx.ratchet.figures import TABLE_HEADERS, fmt_table_rows
    from vx.ratchet.run import run_ratchet
    from vx.ratchet.store import RatchetStoreError

    session = start_llm(fam, True, llm_models, llm_budget, run_id=run_id)
    cache = open_cache(cache_path, no_cache)

    def say(msg: str) -> None:
        if not quiet:
            err_console.print(msg, markup=False, highlight=False)

    def on_round(row: dict[str, Any]) -> None:
        if quiet:
            return
        extra = " [rolled back]" if row["rolled_back"] else ""
        err_console.print(f"{row['arm']} round {row['round']}: held-out {fmt_num(row['heldout'])} · train pass "
                          f"{fmt_num(row['train_pass'])} · bank {row['bank_size']} (+{row['born']} −{row['removed']})"
                          f"{extra} · {row['seconds']:.1f}s", markup=False, highlight=False)

    try:
        result = run_ratchet(fam, config=cfg, out=out, resume=resume, client=session.client(), data_dir=data_dir,
                             verifier_roles=lambda econf: engine_roles(session, econf), verdict_cache=cache, say=say,
                             on_round=on_round)
        usage = session.usage()
    except RatchetStoreError as exc:
        raise UserError(str(exc)) from None
    except RuntimeError as exc:  # the ground truth cannot run here (no sandbox layer, a warehouse that will not open)
        from vx.families.code.data.groundtruth import GroundTruthError
        from vx.families.sql.warehouse import WarehouseError

        if isinstance(exc, (GroundTruthError, WarehouseError)):
            raise UserError(f"the ground truth cannot be computed: {exc}") from None
        raise
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/]: committed rounds are kept; continue with vx ratchet --resume RUN")
        raise SystemExit(130) from None
    finally:
        session.close()
        if cache is not None:
            cache.close()
    if as_json:
        dump_json({"run": result.run_path, "figures": result.figures, "stopped": result.stopped, "usage": usage})
    else:
        t = Table(title="held-out (locked tasks, ground truth)", title_justify="left")
        for h in TABLE_HEADERS:
            t.add_column(h, justify="left" if h == "arm" else "right")
        for row in fmt_table_rows(result.figures):
            t.add_row(*row)
        console.print(t)
        for d in result.figures["judge"].values():
            console.print(f"final judge {d['arm']} ({d['against']} vs round 0, {d['rubric']} rubric): {d['win']} wins, "
                          f"{d['loss']} losses, {d['tie']} ties; win rate {fmt_num(d['win_rate'])} of decided pairs",
                          markup=False)
        console.print(f"run file: {result.run_path} (vx report {result.run_path})", markup=False)
        console.print(usage_line(usage), markup=False)
    if result.stopped:
        err_console.print(f"stopped early — {result.stopped}; continue with vx ratchet --resume {result.run_path}"
                          " (e.g. with a larger --llm-budget)", markup=False, highlight=False)
        raise SystemExit(1)
