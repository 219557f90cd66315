"""`vx evolve FAMILY` — evolve a family's verifier (a thin layer over `vx.evolve.run.evolve_family`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import click
from rich.console import Group, JustifyMethod
from rich.live import Live
from rich.table import Table
from rich.text import Text

from vx.cli.common import (
    COUNT,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_INT,
    NotKept,
    UserError,
    cache_options,
    console,
    err_console,
    fmt_num,
    friendly_errors,
    open_cache,
)
from vx.cli.llm import llm_options

#: below this width the history table leaves out its incumbent column (which would wrap every few
#: characters) and the expressions are printed whole under it instead
WIDE = 120


def _history_table(rows: Sequence[Mapping[str, Any]], limit: int = 12, width: int | None = None) -> Any:
    wide = (width or console.size.width) >= WIDE
    t = Table(title="evolution", title_justify="left", show_edge=False, pad_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("round", "right"),
        ("objective", "right"),
        ("A_dev", "right"),
        ("A_train", "right"),
        ("audit (locked)", "right"),
        ("cands", "right"),
        ("pool", "right"),
        ("born/rej", "right"),
        ("incumbent", "left"),
    )
    for col, just in columns:
        if col == "incumbent" and not wide:
            continue
        t.add_column(
            col, justify=just, overflow="fold" if col == "incumbent" else "ellipsis", no_wrap=col != "incumbent"
        )
    shown = rows[-limit:]
    if len(rows) > limit:
        t.add_row(*(["…"] + [""] * (len(t.columns) - 1)))
    for r in shown:
        mark = "*" if r.get("replaced") else " "
        t.add_row(
            *[
                f"{r['round']}{mark}",
                fmt_num(r["objective"], 4),
                fmt_num(r["a_dev"]),
                fmt_num(r["a_train"]),
                fmt_num(r.get("audit_agreement")),
                str(r["candidates"]),
                str(r["pool_size"]),
                f"{r['born']}/{r['rejected']}",
                " ".join(r["incumbent"].split()),
            ][: len(t.columns)]
        )
    if wide:
        return t
    # narrow: each new incumbent whole, on its own line (* = replaced in that round)
    changes = [r for r in shown if r.get("replaced") or r is shown[0]]
    lines = [
        Text(f"{r['round']}{'*' if r.get('replaced') else ' '} ", style="dim").append(" ".join(r["incumbent"].split()))
        for r in changes
    ]
    return Group(t, Text("incumbents (rounds where one was chosen):", style="bold"), *lines)


def round_line(row: dict[str, Any]) -> str:
    """One round as a plain line (for a pipe or a log file): its figures and, when it changed, the incumbent."""
    text = (
        f"round {row['round']} ({row['seconds']:.1f}s): objective {fmt_num(row['objective'], 4)}, "
        f"A_dev {fmt_num(row['a_dev'])}, A_train {fmt_num(row['a_train'])}, "
        f"audit {fmt_num(row.get('audit_agreement'))}, {row['candidates']} candidates, "
        f"born {row['born']}, rejected {row['rejected']}"
    )
    if row.get("replaced") or row["round"] == 0:
        text += f"; {'seed' if row['round'] == 0 else 'new incumbent'}: " + " ".join(row["incumbent"].split())
    else:
        text += "; incumbent unchanged"
    return text


def _summary_table(summary: dict[str, Any]) -> Table:
    t = Table(title="seed vs evolved", title_justify="left", show_edge=False)
    t.add_column("")
    cols = [("dev", "seed"), ("dev", "evolved")]
    if "locked" in summary:
        cols += [("locked", "seed"), ("locked", "evolved")]
    for split, which in cols:
        t.add_column(f"{split} {which}", justify="right")
    metrics = [
        ("agreement", "accuracy", "agreement"),
        ("recall-weighted", "recall_weighted", "recall_weighted"),
        ("κ", "kappa", "kappa"),
    ]
    for label, dev_key, locked_key in metrics:
        cells = []
        for split, which in cols:
            d = summary[split][which]
            cells.append(fmt_num(d.get(dev_key if split == "dev" else locked_key)))
        t.add_row(label, *cells)
    obj = summary["objective"]
    t.add_row(
        "objective S*",
        fmt_num(obj["seed"]["objective"], 4),
        fmt_num(obj["evolved"]["objective"], 4),
        *([""] * (len(cols) - 2)),
    )
    t.caption = FINAL_POOL_NOTE
    t.caption_justify = "left"
    return t


#: why the seed's S in the summary can differ from round 0's: A_train is agreement with the pool's consensus
FINAL_POOL_NOTE = (
    "* both scored against the final pool's train consensus; round 0 of the history scored the seed "
    "against the seed pool"
)


_FLAG_HINTS = (
    ("choose another output file or resume it", "choose another --out or continue it with --resume"),
    ("rounds must be", "--rounds must be"),
    ("abstain must be", "--abstain must be"),
    ("consensus must be", "--consensus must be"),
    ("estimator must be", "--estimator must be"),
    ("pass tolerance must be", "--pass-tolerance must be"),
)


def _with_flags(message: str) -> str:
    """The engine's message, with the flags of this command named where it names a parameter."""
    for plain, flagged in _FLAG_HINTS:
        message = message.replace(plain, flagged)
    return message


@click.command("evolve")
@click.argument("family", required=False, type=click.Path(exists=True, file_okay=False))
@click.option("--rounds", type=COUNT, default=None, help="Rounds to run (default 10; with --resume: the run's own).")
@click.option("--seed", "seed", type=int, default=0, show_default=True, help="Random seed (same seed, same run).")
@click.option(
    "--ablation",
    type=click.Choice(["naive", "no-lifecycle"]),
    default=None,
    help="naive: the four guards off (fail-closed anchoring, the validity gate, the anchor guard, the "
    "pass-recall floor); no-lifecycle: birth gate, shadow tier and retirement off.",
)
@click.option(
    "--patience",
    type=POSITIVE_INT,
    default=None,
    help="Stop after this many rounds without improvement (off by default).",
)
@click.option(
    "--min-delta",
    type=NON_NEGATIVE,
    default=0.0,
    show_default=True,
    help="With --patience: the smallest objective gain that counts as an improvement.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Run file to write (default runs/<family>-<time>.vxrun.sqlite).",
)
@click.option(
    "--vx-out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the evolved expression (default: next to the run file, .vx).",
)
@click.option(
    "--from",
    "seed_from",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    metavar="FILE.vx",
    help="Start from this hand-written expression instead of the family's seed (its ops must be ops "
    "of the family's pool: `vx ops FAMILY` lists them).",
)
@click.option(
    "--resume",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Continue an interrupted (or finished) run from its last committed round.",
)
@click.option(
    "--abstain",
    type=click.Choice(["pass", "exclude"]),
    default="pass",
    show_default=True,
    help="How the objective scores a final ABSTAIN: as PASS (what consumers do), or left out.",
)
@click.option(
    "--consensus",
    type=click.Choice(["corroborated", "per-class", "label-model", "label-model-flat", "majority"]),
    default="corroborated",
    show_default=True,
    help="The train consensus A_train agrees with: a label model of the pool (class-conditional "
    "Dawid–Skene, or -flat: one latent), a vote within each failure class, or one majority vote.",
)
@click.option(
    "--pass-tolerance",
    type=NON_NEGATIVE,
    default=None,
    help="The pass-recall floor: a candidate's estimated pass recall on the train split's pseudo-positives "
    "may fall at most this far below the seed's (default: the family's [objective] pass_tolerance, "
    "else 0.01; 1 turns the floor off).",
)
@click.option(
    "--estimator",
    type=click.Choice(["pseudo-positives", "label-model"]),
    default="pseudo-positives",
    show_default=True,
    help="The pass evidence of the floor and of the false-alarm estimates: outputs that independent "
    "evidence calls correct (unanimous attempts passing their example; else outputs at most one op "
    "flags), or the flat label model's P(pass).",
)
@click.option(
    "--no-known-rules",
    is_flag=True,
    help="Do not consider the known rules (seed ∨ each peer op, the label model's wvote, SPADE) as candidates.",
)
@click.option("--no-audit", is_flag=True, help="Do not measure agreement with the locked split.")
@click.option(
    "--jobs", "-j", type=POSITIVE_INT, default=None, help="Worker processes for applying ops (default: CPU count)."
)
@click.option("--timeout", type=POSITIVE, default=10.0, show_default=True, help="Time limit per op call, in seconds.")
@click.option("--quiet", "-q", is_flag=True, help="No live progress; print the summary only.")
@cache_options
@llm_options
@friendly_errors
def evolve_cmd(
    family: str | None,
    rounds: int | None,
    seed: int,
    ablation: str | None,
    patience: int | None,
    min_delta: float,
    out: str | None,
    vx_out: str | None,
    seed_from: str | None,
    resume: str | None,
    abstain: str,
    consensus: str,
    pass_tolerance: float | None,
    estimator: str,
    no_known_rules: bool,
    no_audit: bool,
    jobs: int | None,
    timeout: float,
    quiet: bool,
    cache_path: str | None,
    no_cache: bool,
    llm: bool | None = None,
    llm_models: tuple[str, ...] = (),
    llm_budget: float | None = None,
) -> None:
    """Evolve FAMILY's verifier against its dev anchor; audit it on the locked split.

    Each round senses misses and gaps, synthesizes and gates new ops, selects the best
    composition, curates the pool, and records everything in one SQLite run file. The evolved
    expression is written as a .vx file and compared with the seed on dev and locked.
    """
    from vx.errors import NotKeptError
    from vx.evolve.config import EvolutionError, EvolveConfig
    from vx.evolve.run import evolve_family
    from vx.evolve.store import RunStoreError

    if family is None and resume is None:
        raise UserError("name a family directory (e.g. vx evolve examples/humaneval) or --resume RUN")
    if seed_from is not None and resume is not None:
        raise UserError("--from starts a new run and --resume continues one: give one of them")
    try:
        cfg = EvolveConfig(
            rounds=10 if rounds is None else rounds,
            seed=seed,
            ablation=ablation,
            patience=patience,
            min_delta=min_delta,
            jobs=jobs,
            timeout=timeout,
            abstain=abstain,
            consensus=consensus,
            pass_tolerance=pass_tolerance,
            estimator=estimator,
            known_rules=not no_known_rules,
        )
    except EvolutionError as exc:
        raise UserError(_with_flags(str(exc))) from None
    from vx.cli.llm import _user_error, llm_overrides
    from vx.llm.client import LLMUnavailable
    from vx.llm.config import LLMConfigError

    overrides = llm_overrides(llm_models, llm_budget)
    cache = open_cache(cache_path, no_cache)
    display = _Display(quiet)
    try:
        display.start()
        result = evolve_family(
            family,
            config=cfg,
            out=out,
            resume=resume,
            rounds=rounds,
            cache=cache,
            on_round=display.on_round,
            on_status=display.on_status,
            audit=not no_audit,
            vx_out=vx_out,
            progress=display.progress(),
            llm=llm,
            llm_overrides=overrides,
            say=lambda m: err_console.print(m, markup=False, highlight=False),
            seed_from=seed_from,
        )
    except (LLMUnavailable, LLMConfigError) as exc:
        raise _user_error(exc) from None
    except NotKeptError as exc:  # a full disk: the rounds shown above are kept in the run file; exit 4
        raise NotKept(_with_flags(str(exc))) from None
    except (EvolutionError, RunStoreError) as exc:
        raise UserError(_with_flags(str(exc))) from None
    except KeyboardInterrupt:
        display.stop()
        err_console.print(
            "[yellow]interrupted[/]: the last committed round is kept; continue with vx evolve --resume <run file>"
        )
        raise SystemExit(130) from None
    finally:
        display.stop()
        if cache is not None:
            cache.close()
    _print_result(result)


class _Display:
    """What a person sees while a run goes: on a terminal a live table of the rounds, the best expression,
    the status and counted bars; in a pipe or a log file plain lines; nothing with --quiet."""

    def __init__(self, quiet: bool) -> None:
        from vx.ops.progress import Bars

        self.rows: list[dict[str, Any]] = []
        self.status = Text("starting", style="dim")
        self.bars = Bars(err_console, embedded=True)  # counted bars with ETA for each phase applying ops
        self.live = (
            None
            if quiet or not err_console.is_terminal
            else Live(self.render(), console=err_console, refresh_per_second=4, transient=True)
        )
        self.plain = not quiet and self.live is None  # a pipe or a log file: plain lines, no live display

    def render(self) -> Group:
        parts: list[Any] = [_history_table(self.rows, limit=8, width=err_console.size.width)] if self.rows else []
        if self.rows:
            parts.append(Text("best: ", style="bold").append(" ".join(self.rows[-1]["incumbent"].split())))
        parts.append(self.status)
        parts.append(self.bars)
        return Group(*parts)

    def progress(self) -> Any:
        from vx.ops.progress import Lines

        return self.bars if self.live is not None else (Lines(err_console.file) if self.plain else False)

    def start(self) -> None:
        if self.live is not None:
            self.live.start()

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()

    def on_round(self, row: dict[str, Any]) -> None:
        self.rows.append(row)
        self.status.plain = f"round {row['round']} done in {row['seconds']:.1f}s"
        if self.live is not None:
            self.live.update(self.render())
        elif self.plain:
            err_console.print(round_line(row), markup=False, highlight=False)

    def on_status(self, msg: str) -> None:
        self.status.plain = msg
        if self.live is not None:
            self.live.update(self.render())
        elif self.plain:
            err_console.print(msg, markup=False, highlight=False)


def _print_result(result: Any) -> None:
    """The run's history, summary, evolved expression and its objective against the seed's, and the files."""
    from vx.cli.llm import usage_line

    history = list(result.history)  # the whole history, also of a resumed run
    console.print(_history_table(history, limit=len(history)))
    console.print(_summary_table(dict(result.summary)))
    s = result.best_score
    console.print(f"[bold]evolved[/]: {' '.join(result.best_text.split())}")
    first = history[0]["objective"] if history else None
    console.print(
        f"objective {s.objective:.4f} (the seed's, scored with the final pool: {result.seed_score.objective:.4f}"
        + (f"; in round 0, with the seed pool: {first:.4f})" if first is not None else ")")
    )
    console.print(f"run file: {result.run_path}\nverifier: {result.vx_path}")
    if result.llm_usage is not None:
        console.print(usage_line(dict(result.llm_usage)), markup=False)
