"""`vx llm` — the LLM roles: configuration, reachability, teacher labels, usage of a run."""

from __future__ import annotations

from collections.abc import Callable

import click
from rich.table import Table

from vx.cli.common import UserError, console, dump_document, err_console, fmt_num, friendly_errors


def _user_error(exc: Exception) -> UserError:
    """A UserError for an LLM configuration problem (UserError shows every message literally)."""
    from vx.evolve.roles.session import REQUIRED_NO_KEY

    return UserError(str(exc).replace(REQUIRED_NO_KEY, "--llm needs an API key"))


def llm_options(fn):
    """--llm/--no-llm, --llm-model ROLE=MODEL (repeatable), --llm-budget USD: shared by commands that run roles."""
    fn = click.option(
        "--llm-budget",
        "llm_budget",
        type=float,
        default=None,
        help="Stop LLM calls once this many USD are spent in the run (default: budget_usd, 5.0).",
    )(fn)
    fn = click.option(
        "--llm-model",
        "llm_models",
        multiple=True,
        metavar="ROLE=MODEL",
        help="Use MODEL for ROLE (solver, teacher, composer, synthesizer, judge, final_judge, "
        "skill_synthesizer); "
        "repeatable.",
    )(fn)
    fn = click.option(
        "--llm/--no-llm",
        "llm",
        default=None,
        help="LLM roles on (needs ANTHROPIC_API_KEY) or off. Default: on when a key is set.",
    )(fn)
    return fn


def teacher_options(fn: Callable) -> Callable:
    """--llm-model ROLE=MODEL (repeatable) and --llm-budget USD of the commands that label with the teacher."""
    fn = click.option(
        "--llm-budget",
        type=float,
        default=None,
        metavar="USD",
        help="Stop spending after this many US dollars in this run (default: the configuration's budget).",
    )(fn)
    return click.option(
        "--llm-model",
        "llm_models",
        multiple=True,
        metavar="ROLE=MODEL",
        help="Use MODEL for ROLE (repeatable), e.g. teacher=claude-sonnet-4-5.",
    )(fn)


def llm_overrides(llm_models, llm_budget) -> dict:
    from vx.llm.config import LLMConfigError, parse_model_overrides

    try:
        out: dict = parse_model_overrides(llm_models)
    except LLMConfigError as exc:
        raise _user_error(exc) from None
    if llm_budget is not None:
        out["budget_usd"] = llm_budget
    return out


def start_llm(family, llm, llm_models, llm_budget, run_id=None):
    """Start the run's LLM session (or None when roles are off), turning problems into messages."""
    from vx.evolve.roles.session import start_session
    from vx.llm.client import LLMUnavailable
    from vx.llm.config import LLMConfigError

    try:
        return start_session(
            family,
            mode=llm,
            overrides=llm_overrides(llm_models, llm_budget),
            run_id=run_id,
            say=lambda m: err_console.print(m, markup=False, highlight=False),
        )
    except (LLMUnavailable, LLMConfigError) as exc:
        raise _user_error(exc) from None


def _family(family_dir):
    from vx.families.family import Family, find_family_dir

    if family_dir is None:
        try:
            family_dir = find_family_dir(".")
        except Exception:
            return None
    return Family(family_dir)


def _config(family, llm_models=(), llm_budget=None):
    from vx.llm.config import LLMConfigError, load_config

    try:
        return load_config(
            getattr(family, "llm_config", None),
            family_path=(family.dir / "family.toml") if family is not None else None,
            overrides=llm_overrides(llm_models, llm_budget),
        )
    except LLMConfigError as exc:
        raise _user_error(exc) from None


@click.group("llm")
def llm_group():
    """LLM roles: configuration, reachability, teacher labels, usage."""


@llm_group.command("config")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--llm-model",
    "llm_models",
    multiple=True,
    metavar="ROLE=MODEL",
    help="Use MODEL for ROLE (repeatable), e.g. judge=claude-haiku-4-5.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the configuration as JSON (schema vx-llm-config/1).")
@friendly_errors
def config_cmd(family_dir, llm_models, as_json):
    """Show the role-to-model table and where each value comes from (default: the family around here)."""
    from vx.llm.config import has_credentials, user_config_path

    cfg = _config(_family(family_dir), llm_models)
    if as_json:
        dump_document(
            "vx-llm-config/1",
            {
                **cfg.as_dict(),
                "sources": dict(cfg.sources),
                "key_set": has_credentials(),
                "user_config": str(user_config_path()),
            },
        )
        return
    t = Table(title="LLM roles", title_justify="left")
    for c in ("role", "model", "max_tokens", "temperature", "model set by"):
        t.add_column(c)
    for role, rc in cfg.roles.items():
        t.add_row(
            role, rc.model, str(rc.max_tokens), f"{rc.temperature:g}", cfg.sources.get(f"{role}.model", "default")
        )
    console.print(t)
    console.print(
        f"budget: ${cfg.budget_usd:g} / {cfg.budget_tokens:,} tokens per run · concurrency {cfg.concurrency}"
        f" · retries {cfg.max_retries} · cache {cfg.cache}",
        markup=False,
    )
    console.print(f"user config file: {user_config_path()}", markup=False)
    console.print(
        "key: "
        + (
            "set (ANTHROPIC_API_KEY)"
            if has_credentials()
            else "not set — LLM roles are off (set ANTHROPIC_API_KEY to enable them)"
        ),
        markup=False,
    )


@llm_group.command("check")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--no-probe", is_flag=True, help="Only show the configuration; send no request.")
@click.option("--json", "as_json", is_flag=True, help="Print the roles' states as JSON (schema vx-llm-check/1).")
@friendly_errors
def check_cmd(family_dir, no_probe, as_json):
    """Which roles are configured and whether their models are reachable (free: spends no tokens)."""
    from vx.doctor import role_status, summary_line

    statuses = role_status(_config(_family(family_dir)), probe=not no_probe)
    ok, line = summary_line(statuses)
    if as_json:
        dump_document("vx-llm-check/1", {"ok": ok, "summary": line, "roles": [s.as_dict() for s in statuses]})
    else:
        t = Table(title="LLM roles", title_justify="left")
        for c in ("role", "model", "state", "detail"):
            t.add_column(c, overflow="fold")
        for s in statuses:
            colour = {"reachable": "green", "unreachable": "red"}.get(s.state, "yellow")
            t.add_row(s.role, s.model, f"[{colour}]{s.state}[/]", s.detail)
        console.print(t)
        console.print(line, markup=False)
    if ok is False:
        raise SystemExit(1)


@llm_group.command("teach")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--split",
    type=click.Choice(["dev", "train"]),
    default="dev",
    show_default=True,
    help="Which split to label (the locked split is never shown to the teacher).",
)
@teacher_options
@click.option(
    "--apply",
    "apply_",
    is_flag=True,
    help="Also write the soft labels into the split's file as the items' labels (the old label is kept "
    "in meta.label_before).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the labels and their agreement as JSON (schema vx-llm-teach/1)."
)
@friendly_errors
def teach_cmd(family_dir, split, llm_models, llm_budget, apply_, as_json):
    """Soft labels from the teacher model, comparing each output with its golden reference.

    Writes teacher_labels.jsonl into the family directory and reports agreement with the split's labels."""
    from vx.evolve.roles.teacher import apply_labels, teach_family

    fam = _family(family_dir)
    if fam is None:
        raise UserError("no family.toml found here or above; pass FAMILY_DIR")
    session = start_llm(fam, True, llm_models, llm_budget)
    try:
        path, records, agree = teach_family(session.client(), fam, split)
        usage = session.usage()
    finally:
        session.close()
    labelled = sum(1 for r in records if r.get("label") is not None)
    try:
        applied = apply_labels(fam.split(split).path, records) if apply_ else None
    except ValueError as exc:
        raise _user_error(exc) from None
    if as_json:
        dump_document(
            "vx-llm-teach/1",
            {"path": str(path), "records": records, "agreement": agree, "usage": usage, "applied": applied},
        )
        return
    if applied is not None:
        console.print(f"wrote {applied} soft label(s) into {fam.split(split).path}", markup=False)
    console.print(f"teacher: {labelled}/{len(records)} items labelled → {path}", markup=False)
    for r in records:
        if r.get("label") is None:
            why = r.get("skipped") or r.get("error") or f"unparsable reply: {str(r.get('raw', ''))[:120]!r}"
            console.print(f"  {r['id']}: no label ({why})", markup=False)
    if agree["compared"]:
        console.print(
            f"agreement with the {split} labels: {agree['agree']}/{agree['compared']} ({fmt_num(agree['agreement'])})",
            markup=False,
        )
    console.print(_usage_line(usage), markup=False)


@llm_group.command("prefetch")
@click.argument("family_dir", required=False, type=click.Path(exists=True, file_okay=False))
@click.option(
    "--split",
    "splits",
    type=click.Choice(["train", "dev", "locked"]),
    multiple=True,
    help="Splits whose items to sweep (default: all three — evolution applies ops to train and dev, "
    "the audit to locked; no label is read).",
)
@click.option("--poll", "poll_seconds", type=float, default=30.0, show_default=True, help="Seconds between polls.")
@click.option(
    "--max-wait",
    type=float,
    default=24 * 3600.0,
    show_default=True,
    help="Stop waiting after this many seconds; a later prefetch collects what is still running.",
)
@teacher_options
@friendly_errors
def prefetch_cmd(family_dir, splits, poll_seconds, max_wait, llm_models, llm_budget):
    """Answer every judge op of a family on every item through the Message Batches API (half price) and
    store the answers in the LLM cache, so that evaluation and evolution then make no judge calls."""
    from vx.llm.batch import prefetch
    from vx.llm.client import LLMError
    from vx.ops.judge import judge_sweep_requests

    fam = _family(family_dir)
    if fam is None:
        raise UserError("no family.toml found here or above; pass FAMILY_DIR")
    judges = [o for o in fam.pool() if o.uses_llm and o.status != "retired"]
    if not judges:
        raise UserError(f'family {fam.name} has no judge ops (add e.g. "vx.families.code.ops.judge" to its packs)')
    pairs = []
    for name in splits or ("train", "dev", "locked"):
        items = fam.audit().split.items if name == "locked" else fam.split(name).items
        pairs += [(fam.tasks[it.task], it.output) for it in items]
    session = start_llm(fam, True, llm_models, llm_budget)
    try:
        client = session.client()
        requests = judge_sweep_requests(client, judges, pairs)
        try:
            report = prefetch(
                client,
                "judge",
                requests,
                poll_seconds=poll_seconds,
                max_wait=max_wait,
                say=lambda m: err_console.print(m, markup=False, highlight=False),
            )
        except LLMError as exc:
            raise _user_error(exc) from None
        usage = session.usage()
    finally:
        session.close()
    console.print(
        f"{report.requested} judge requests for {len(judges)} op(s): {report.cached} already cached, "
        f"{report.submitted} submitted, {report.succeeded} answered, {report.failed} failed"
        + (f", still running: {', '.join(report.pending)}" if report.pending else ""),
        markup=False,
    )
    console.print(_usage_line(usage), markup=False)


def _usage_line(u: dict) -> str:
    return (
        f"LLM usage: {u.get('api_calls', 0)} API calls, {u.get('cache_hits', 0)} cache hits, "
        f"{u.get('errors', 0)} errors, {u.get('input_tokens', 0):,} in / {u.get('output_tokens', 0):,} out tokens, "
        f"${u.get('cost_usd', 0.0):.4f}"
    )


@llm_group.command("usage")
@click.argument("run")
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False),
    help="LLM cache file (default: from the configuration, ~/.cache/vx/llm.sqlite).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the usage as JSON (schema vx-llm-usage/1).")
@friendly_errors
def usage_cmd(run, cache_path, as_json):
    """Calls, cache hits, tokens and cost of one run: RUN is a run file (its stored record) or an LLM run id
    (read from the cache's ledger)."""
    import json
    from pathlib import Path

    if Path(run).is_file():
        from vx.evolve.store import RunStore

        with RunStore(run) as store:
            raw = store.meta().get("llm_usage")
        if raw is None:
            raise UserError(f"{run}: this run made no use of LLM roles (no usage recorded)")
        u = json.loads(raw) if isinstance(raw, str) else raw
    else:
        from vx.llm.cache import ResponseCache

        cache = ResponseCache(cache_path or _config(None).cache)
        u = cache.usage(run)
        if not u["by_role"]:
            raise UserError(
                f"no LLM calls are recorded for run {run!r} in {cache.path} "
                "(pass a run file, or the run id stored in it)"
            )
    if as_json:
        dump_document("vx-llm-usage/1", u)
        return
    t = Table(title=f"LLM usage of run {u.get('run', run)}", title_justify="left")
    for c in ("role", "model", "API calls", "cache hits", "errors", "tokens in", "tokens out", "USD"):
        t.add_column(c)
    for r in u["by_role"]:
        t.add_row(
            r["role"],
            r["model"],
            str(r["api_calls"]),
            str(r["cache_hits"]),
            str(r["errors"]),
            f"{r['input_tokens']:,}",
            f"{r['output_tokens']:,}",
            f"{r['cost_usd']:.4f}",
        )
    console.print(t)
    console.print(_usage_line(u), markup=False)


# ------------------------------------------------------------------------------------------------
# used by `vx evolve`


def usage_line(usage: dict) -> str:
    return _usage_line(usage)
