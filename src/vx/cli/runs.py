"""`vx runs list|show|export` — read evolution run files (`vx.evolve.store.RunStore`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from vx.cli.common import UserError, console, dump_document, esc, fmt_num, friendly_errors


def _open(path: str):
    from vx.evolve.store import RunStore, RunStoreError

    try:
        return RunStore(path)
    except RunStoreError as exc:
        raise UserError(str(exc)) from None


@click.group("runs")
def runs_group() -> None:
    """Inspect evolution runs (the .vxrun.sqlite files `vx evolve` writes)."""


def run_rows(paths) -> list[dict[str, Any]]:
    """One summary per readable run file (unreadable ones are left out)."""
    from vx.evolve.store import RunStore, RunStoreError

    out = []
    for p in paths:
        try:
            with RunStore(p) as s:
                meta, rounds = s.meta(), s.rounds()
        except RunStoreError:
            continue
        last = rounds[-1] if rounds else {}
        cfg = meta.get("config") or {}
        out.append(
            {
                "run": str(p),
                "family": meta.get("family"),
                "status": meta.get("status"),
                "rounds": last.get("round"),
                "objective": last.get("objective"),
                "audit_agreement": last.get("audit_agreement"),
                "ablation": cfg.get("ablation"),
                "seed": cfg.get("seed"),
                "evolved": " ".join(str(last.get("incumbent", "")).split()) or None,
                "started": meta.get("started"),
                "finished": meta.get("finished"),
                "vx_file": meta.get("vx_file"),
            }
        )
    return out


@runs_group.command("list")
@click.argument("directory", required=False, default="runs", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON (schema vx-runs/1).")
@friendly_errors
def list_cmd(directory: str, as_json: bool) -> None:
    """Run files in DIRECTORY (default: runs/), newest first."""
    paths = sorted(Path(directory).glob("*.vxrun.sqlite"), key=lambda p: p.stat().st_mtime, reverse=True)
    if as_json:
        dump_document("vx-runs/1", {"directory": str(directory), "runs": run_rows(paths)})
        return
    if not paths:
        console.print(f"no run files in {directory}/ (vx evolve writes runs/<family>-<time>.vxrun.sqlite)")
        return
    t = Table(title=f"runs in {directory}/", title_justify="left", show_edge=False)
    for col in ("run", "family", "status", "rounds", "objective", "audit", "ablation", "evolved"):
        t.add_column(col, overflow="fold" if col in ("evolved", "run") else "ellipsis")
    for r in run_rows(paths):
        t.add_row(
            esc(Path(r["run"]).name),
            esc(r["family"] or "?"),
            esc(r["status"] or "?"),
            str(r["rounds"] if r["rounds"] is not None else "—"),
            fmt_num(r["objective"], 4),
            fmt_num(r["audit_agreement"]),
            esc(r["ablation"] or "—"),
            esc(r["evolved"] or ""),
        )
    console.print(t)


def funnel(store) -> dict[str, int]:
    """The lifecycle funnel: seed ops → born → rejected → final pool → leaves of the final verifier."""
    events = store.events()
    ops = store.ops()
    rounds = store.rounds()
    best = rounds[-1]["incumbent"] if rounds else ""
    from vx.dsl.parse import parse

    leaves = len(parse(best).op_names()) if best else 0
    return {
        "seed": sum(1 for o in ops if o["origin"] == "seed"),
        "born": sum(1 for e in events if e["kind"] == "born"),
        "rejected": sum(1 for e in events if e["kind"] == "rejected"),
        "promoted": sum(1 for e in events if e["kind"] == "promoted"),
        "retired": sum(1 for e in events if e["kind"] == "retired"),
        "pool": sum(1 for o in ops if o["status"] in ("active", "shadow")),
        "leaves": leaves,
    }


#: the history's columns, most telling first: (name, width it needs, the row's key, digits); a
#: narrower terminal (or --width) keeps the first ones that fit, and the incumbents go under the table
HISTORY_COLUMNS = (
    ("round", 5, "round", None),
    ("objective", 9, "objective", 4),
    ("A_dev", 5, "a_dev", 3),
    ("A_train", 7, "a_train", 3),
    ("audit", 5, "audit_agreement", 3),
    ("cands", 5, "candidates", None),
    ("born", 4, "born", None),
    ("rej", 3, "rejected", None),
    ("active", 6, "n_active", None),
    ("shadow", 6, "n_shadow", None),
    ("retired", 7, "n_retired", None),
    ("misses", 6, "misses", None),
    ("gaps", 4, "gaps", None),
    ("cost", 5, "cost", 3),
    ("s", 5, "seconds", 1),
)


def history_table(rounds: list[dict[str, Any]], width: int) -> Table:
    """The run's history as a table that fits `width` columns: whole figures, never `0.…`; the
    incumbent expressions are printed under it (:func:`incumbent_lines`), never squeezed into a cell."""
    cols: list[tuple[str, int, str, int | None]] = []
    used = 0
    for col in HISTORY_COLUMNS:
        need = max(col[1], len(col[0])) + 2
        if used + need > width and cols:
            break
        cols.append(col)
        used += need
    left = [c[0] for c in HISTORY_COLUMNS if c not in cols]
    title = "history (* = new incumbent)" + (
        f"; not shown at this width: {', '.join(left)} (--json has all)" if left else ""
    )
    t = Table(title=title, title_justify="left", show_edge=False, pad_edge=False, box=None)
    for name, _, _, _ in cols:
        t.add_column(name, justify="right", no_wrap=True)
    for r in rounds:
        cells = []
        for _, _, key, digits in cols:
            value = r.get(key)
            if key == "round":
                cells.append(f"{value}{'*' if r.get('replaced') else ''}")
            elif key == "seconds":
                cells.append(f"{value:.1f}" if isinstance(value, (int, float)) else "—")
            else:
                cells.append(fmt_num(value, digits) if digits is not None else fmt_num(value))
        t.add_row(*cells)
    return t


def incumbent_lines(rounds: list[dict[str, Any]]) -> list[str]:
    """The incumbent after round 0 and after each round that replaced it, one line each (wrapping as
    text does, not three letters a line inside a table cell)."""
    out = ["[bold]incumbents[/] (the rounds that chose one):"]
    for r in rounds:
        if r["round"] == 0 or r.get("replaced"):
            out.append(f"  [dim]round {r['round']}:[/] {esc(' '.join(str(r['incumbent']).split()))}")
    return out


@runs_group.command("show")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option("--events", "show_events", is_flag=True, help="List every lifecycle event (births, rejections...).")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the history, funnel and figures as JSON (schema vx-run-summary/1)."
)
@friendly_errors
def show_cmd(run: str, show_events: bool, as_json: bool) -> None:
    """History, lifecycle funnel and final figures of RUN."""
    with _open(run) as s:
        meta, rounds, summary = s.meta(), s.rounds(), s.summary()
        cfg = meta.get("config") or {}
        if as_json:
            doc: dict[str, Any] = {
                "run": run,
                "family": meta.get("family"),
                "status": meta.get("status"),
                "config": cfg,
                "rounds": rounds,
                "funnel": funnel(s),
                "summary": summary,
                "vx_file": meta.get("vx_file"),
            }
            if show_events:
                doc["events"] = [e for e in s.events() if e["kind"] != "seed"]
            dump_document("vx-run-summary/1", doc)
            return
        console.print(
            f"[bold]{esc(run)}[/]  family {esc(meta.get('family'))}  status {esc(meta.get('status'))}  "
            f"seed {esc(cfg.get('seed'))}  rounds {esc(rounds[-1]['round'] if rounds else 0)} of "
            f"{esc(cfg.get('rounds'))}  "
            f"ablation {esc(cfg.get('ablation') or 'none')}"
        )
        console.print(history_table(rounds, console.size.width))
        for line in incumbent_lines(rounds):
            console.print(line)
        f = funnel(s)
        console.print(
            f"lifecycle: seed {f['seed']} → born {f['born']} (rejected {f['rejected']}, promoted "
            f"{f['promoted']}, retired {f['retired']}) → pool {f['pool']} → leaves {f['leaves']}"
        )
        if show_events:
            et = Table(title="events", title_justify="left", show_edge=False)
            for col in ("round", "op", "kind", "status", "reason"):
                et.add_column(col, overflow="fold")
            for e in s.events():
                if e["kind"] != "seed":
                    et.add_row(str(e["round"]), esc(e["op"]), esc(e["kind"]), esc(e["status"]), esc(e["reason"]))
            console.print(et)
        if summary:
            from vx.cli.evolve import _summary_table

            console.print(_summary_table(summary))
        if meta.get("vx_file"):
            console.print(f"verifier: {esc(meta['vx_file'])}")


@runs_group.command("export")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Write JSON (the only format, and the default; accepted for scripts that pass it).",
)
@click.option("--no-verdicts", is_flag=True, help="Leave out per-item verdicts and traces.")
@friendly_errors
def export_cmd(run: str, as_json: bool, no_verdicts: bool) -> None:
    """The run record as JSON on stdout (config, history, ops, events, elites, candidates, verdicts)."""
    with _open(run) as s:
        rounds = s.rounds()
        out: dict[str, Any] = {
            "meta": s.meta(),
            "rounds": rounds,
            "ops": s.ops(),
            "events": s.events(),
            "elites": s.elites(),
            "candidates": {r["round"]: s.candidates(r["round"]) for r in rounds},
            "summary": s.summary(),
            "funnel": funnel(s),
        }
        if not no_verdicts:
            out["verdicts"] = s.verdicts()
            out["traces"] = s.traces()
    dump_document("vx-run/1", out)


@runs_group.command("verify")
@click.argument("run", type=click.Path(exists=True, dir_okay=False))
@friendly_errors
def verify_cmd(run: str) -> None:
    """Recompute every round's objective from RUN alone and compare with what was recorded."""
    from vx.evolve.recompute import RecomputeError, round_score
    from vx.evolve.store import RunStoreError

    bad = 0
    with _open(run) as s:
        if not s.rounds():
            raise UserError(f"{run}: no rounds recorded; there is nothing to verify")
        try:
            s.check()  # every record, not only what recomputing reads
        except RunStoreError as exc:
            raise UserError(str(exc)) from None
        t = Table(title="recorded vs recomputed", title_justify="left", show_edge=False)
        for col in ("round", "objective", "recomputed", "A_dev", "recomputed", "A_train", "recomputed", ""):
            t.add_column(col, justify="right")
        try:
            for r in s.rounds():
                g = round_score(s, r["round"])
                ok = all(
                    abs(a - b) <= 1e-9
                    for a, b in ((g.objective, r["objective"]), (g.a_dev, r["a_dev"]), (g.a_train, r["a_train"]))
                )
                bad += not ok
                t.add_row(
                    str(r["round"]),
                    fmt_num(r["objective"], 6),
                    fmt_num(g.objective, 6),
                    fmt_num(r["a_dev"], 6),
                    fmt_num(g.a_dev, 6),
                    fmt_num(r["a_train"], 6),
                    fmt_num(g.a_train, 6),
                    "ok" if ok else "[red]MISMATCH[/]",
                )
        except RecomputeError as exc:
            raise UserError(str(exc)) from None
    console.print(t)
    if bad:
        raise UserError(f"{bad} round(s) do not recompute to the recorded figures")
    console.print("every round recomputes to the recorded objective, A_dev and A_train")
