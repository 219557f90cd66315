"""A self-contained HTML page for a ratchet run (`vx report RUN` on a ``.vxratchet.sqlite`` file).

Everything comes from the run file: the held-out protocol, the summary table (init, peak, final-rounds mean,
lift and lift retention against the oracle on the report part, the grader's own training pass rate, the
verifier validity, the rollback part's lift), the learning curves of every arm on the report part (read by no
loop) and on the rollback part (read by rollback), the frozen solver's round-0 score dotted, the training
pass rate each arm's grader reported (what the loop itself sees: the always-pass control's is 1.0
throughout), the bank's life (a bar per skill from birth to removal, marked by how it ended), the verifier
phases, the skill table and the final judge's win rates. A scripted demo run says so at the top. Plots are matplotlib
SVG inlined (the ``viz`` extra); without matplotlib the page shows the same numbers as tables.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vx.pages import pyplot, svg
from vx.ratchet.figures import TABLE_HEADERS, figures, fmt_table_rows
from vx.ratchet.store import RatchetStore

_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1d232a;
line-height:1.45}h2{margin-top:2em;border-bottom:1px solid #d8dee4}table{border-collapse:collapse;margin:.6em 0;
font-size:.92em}th,td{border:1px solid #d8dee4;padding:.3em .6em;text-align:right}th{background:#f6f8fa}
td.l,th.l{text-align:left}.muted{color:#6a737d}.note{background:#fff8c5;padding:.5em .8em;border-radius:6px}
code{font-family:ui-monospace,monospace;font-size:.92em}"""
STYLES = {
    "oracle": ("-", 2.6),
    "co": ("--", 1.6),
    "naive": ("-.", 1.4),
    "always-pass": (":", 1.6),
    "verifier": ("--", 1.4),
    "frozen": (":", 1.0),
}
COLORS = {
    "oracle": "#d9730d",
    "co": "#2f6fdb",
    "naive": "#8e44ad",
    "always-pass": "#b31d28",
    "verifier": "#22863a",
    "frozen": "#6a737d",
}


def _e(x: Any) -> str:
    return html.escape(str(x))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], left: int = 1) -> str:
    head = "".join(f"<th class='{'l' if i < left else ''}'>{_e(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f"<td class='{'l' if i < left else ''}'>{_e(c)}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _curves(store: RatchetStore, key: str, ylabel: str, frozen: bool, measured: str | None = None) -> str:
    """One line per arm of the rounds' `key`; with `measured`, rolled-back rounds' measured scores as ×."""
    plt = pyplot()
    arms = store.arms()
    if plt is None:
        return "<p class='muted'>matplotlib is not installed (pip install 'vx-verifiers[viz]'): no plot.</p>"
    fig, ax = plt.subplots(figsize=(8, 3.6))
    base = []
    for arm in arms:
        rows = [r for r in store.rounds(arm) if r[key] is not None]
        if not rows:
            continue
        ls, lw = STYLES.get(arm, ("-", 1.4))
        ax.plot(
            [r["round"] for r in rows],
            [r[key] for r in rows],
            label=arm,
            color=COLORS.get(arm),
            ls=ls,
            lw=lw,
            marker="o" if len(rows) < 30 else None,
            ms=3,
        )
        rb = [r for r in rows if r["rolled_back"] and r[measured] is not None] if measured else []
        if measured and rb:
            ax.scatter(
                [r["round"] for r in rb], [r[measured] for r in rb], marker="x", color=COLORS.get(arm or ""), s=30
            )
        if frozen:
            base.append(rows[0][key])
    if frozen and base:
        ax.axhline(sum(base) / len(base), ls=":", color="#333", label="frozen solver (round 0)")
    for p in store.phases():
        ax.axvline(p["first_skill_round"] - 0.5, color="#ccc", lw=0.8)
    ax.set_xlabel("skill round")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    return svg(fig)


def _bank_life(store: RatchetStore) -> str:
    plt = pyplot()
    skills = store.skills()
    if not skills:
        return "<p class='muted'>No skill was ever written.</p>"
    if plt is None:
        return ""
    arms = store.arms()
    last = {a: (store.last_round(a) or {"round": 0})["round"] for a in arms}
    fig, ax = plt.subplots(figsize=(8, max(2.0, 0.22 * len(skills) + 1)))
    ends = {"evicted": "#f0ad4e", "retired": "#b31d28", "rolled_back": "#8e44ad", "active": "#22863a"}
    labels = []
    for i, s in enumerate(skills):
        end = s["removed_round"] if s["removed_round"] is not None else last.get(s["arm"], s["born"]) + 1
        ax.barh(i, max(0.6, end - s["born"]), left=s["born"], color=ends.get(s["status"], "#999"), height=0.7)
        labels.append(f"{s['arm']}: {s['name']}")
    ax.set_yticks(range(len(skills)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("skill round (green: active at the end · orange: evicted · red: retired · purple: rolled back)")
    return svg(fig)


def write_report(run_path: str | Path, out: str | Path | None = None) -> Path:
    run_path = Path(run_path)
    out = Path(out) if out is not None else run_path.with_suffix(".html")
    with RatchetStore(run_path) as store:
        meta = store.meta()
        cfg = meta.get("config") or {}
        fig = figures(store, int(cfg.get("final_rounds", 10)))
        held = store.parts()
        demo = meta.get("demo") or {}
        n_rb, n_rp = len(held["rollback_tasks"]), len(held["report_tasks"])
        protocol = _protocol_note(held)
        parts = [f"<h1>vx ratchet — {_e(meta.get('family', '?'))}{' (scripted demo)' if demo else ''}</h1>"]
        if demo:
            parts.append(
                f"<p class='note'><b>Scripted demo.</b> No model was called: the solver, the skill "
                f"synthesizer and the final judge are scripted stand-ins ({_e(demo.get('solver', ''))}). "
                "The page shows what the loop records, not how any model learns.</p>"
            )
        parts += [
            f"<p class='muted'>run file {_e(run_path.name)} · status {_e(meta.get('status', '?'))} · arms "
            f"{_e(', '.join(cfg.get('arms', [])))} · schedule verifier {_e(cfg.get('verifier_rounds'))} / skill "
            f"{_e(cfg.get('skill_rounds'))} · ground truth {_e((meta.get('ground_truth') or {}).get('kind', '?'))}"
            f" · seed {_e(cfg.get('seed'))}</p>",
            f"<p class='note'>{protocol} Held-out scores are graded by the family's ground truth; a set of "
            "tens of tasks moves in steps of one task, so read the final-rounds mean and several seeds, not "
            "one round. Training pass rates are the arm's own grader's view; a grader that passes everything "
            "reports 1.0 whatever it teaches.</p>",
            "<h2>Summary (report part)</h2>",
            _table(TABLE_HEADERS, fmt_table_rows(fig)),
            f"<h2>Learning curves: report part ({n_rp} tasks, read by no loop)</h2>",
            _curves(store, "report_score", "report-part score", True, "report_measured"),
            f"<h2>Learning curves: rollback part ({n_rb} tasks, read by rollback)</h2>",
            _curves(store, "rollback_score", "rollback-part score", True, "rollback_measured"),
            "<p class='muted'>Each curve is the score of the bank in force; × marks what the round's own bank "
            "scored when its rollback-part score triggered a rollback (the curve then shows the restored "
            "bank). Grey lines separate skill phases.</p>",
            "<h2>Training pass rate (the arm's own grader)</h2>",
            _curves(store, "train_pass", "train pass rate", False),
            "<h2>The bank's life</h2>",
            _bank_life(store),
        ]
        parts += _record_tables(store, fig)
    out.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'><title>vx ratchet</title><style>{_CSS}"
        f"</style></head><body>{''.join(parts)}</body></html>",
        encoding="utf-8",
    )
    return out


def _protocol_note(held: dict[str, Any]) -> str:
    """How the held-out tasks were used: the papers' protocol (rollback reads the reported tasks) or the
    two-part one (a rollback part and a report part no loop reads)."""
    n_rb, n_rp = len(held["rollback_tasks"]), len(held["report_tasks"])
    if held["protocol"] == "papers":
        return (
            f"<b>The papers' protocol</b>: rollback reads the same {n_rp} held-out tasks the curves, lift "
            "and retention are computed on, so a reported curve cannot fall below a bank rollback kept "
            "(an optimistic measurement, kept for comparison)."
        )
    return (
        f"<b>Two-part protocol</b>: the held-out (locked) tasks are split, seeded, into a rollback "
        f"part ({n_rb} tasks: the only held-out tasks rollback reads) and a report part ({n_rp} "
        "tasks, read by no loop). Lift and retention come from the report part."
    )


def _record_tables(store: RatchetStore, fig: dict[str, Any]) -> list[str]:
    """The run's records as tables, each section only when the run has some: the co arms' verifier phases,
    the skills, the final pairwise judge."""
    parts: list[str] = []
    phases = store.phases()
    if phases:
        parts += [
            "<h2>Verifier phases (co arms)</h2>",
            _table(
                ["arm", "phase", "rounds (total)", "verifier", "locked agreement", "objective", "run file"],
                [
                    [
                        p["arm"],
                        p["phase"] + 1,
                        p["total_rounds"],
                        " ".join(p["verifier"].split()),
                        _f(p["validity"].get("agreement")),
                        _f(p["validity"].get("objective")),
                        p["run_file"],
                    ]
                    for p in phases
                ],
                left=4,
            ),
        ]
    skills = store.skills()
    if skills:
        parts += [
            "<h2>Skills</h2>",
            _table(
                ["arm", "name", "when", "lesson", "born", "status", "removed", "contribution", "routed"],
                [
                    [
                        s["arm"],
                        s["name"],
                        s["when"],
                        s["lesson"],
                        s["born"],
                        s["status"],
                        "" if s["removed_round"] is None else s["removed_round"],
                        _f((s["contribution"] or {}).get("effect")),
                        (s["contribution"] or {}).get("routed", ""),
                    ]
                    for s in skills
                ],
                left=4,
            ),
        ]
    if fig["judge"]:
        parts += [
            "<h2>Final pairwise judge</h2>",
            "<p class='muted'>Each pair (round-0 output, final or peak output) is judged twice with the "
            "positions swapped; a win or a loss counts only when both orders agree.</p>",
            _table(
                ["arm", "against", "rubric", "wins", "losses", "ties", "win rate (decided)"],
                [
                    [d["arm"], d["against"], d["rubric"], d["win"], d["loss"], d["tie"], _f(d["win_rate"])]
                    for d in fig["judge"].values()
                ],
                left=3,
            ),
        ]
    return parts


def _f(x: Any) -> str:
    return "—" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))
