"""A self-contained HTML page for one evolution run (`vx report RUN`).

Everything comes from the run file (no network needed to view the page): the objective and its
parts per round, the locked agreement per round (an audit, never a signal), the lifecycle funnel,
the final expression as a tree with per-leaf coverage and dev accuracy, confusion matrices, the
per-op table and the disagreeing dev items with their traces. Plots are drawn with matplotlib
(the ``viz`` extra) and embedded as inline SVG; without matplotlib the page still renders, with
tables in place of plots and a note saying why.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.dsl.ast import Node, Not, OpRef, Vote, WVote
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import to_text
from vx.evolve.estimates import HIGH_FALSE_ALARM
from vx.evolve.store import RunStore
from vx.pages import CSS as _CSS
from vx.pages import esc, inline_markdown, num, pyplot, svg, table
from vx.text import json_dumps

SECTIONS = (
    "summary",
    "objective",
    "audit",
    "funnel",
    "expression",
    "confusion",
    "ops",
    "disagreements",
    "locked-misses",
)


def _e(x: Any) -> str:
    return esc(x)


def _f(x: Any, d: int = 3) -> str:
    return num(x, d)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], kinds: str = "") -> str:
    """`kinds`: one letter per column: n = a number (right-aligned), p = prose (left, roomy), t = text."""
    names = {"n": "num", "p": "prose", "t": ""}
    return table(headers, rows, kinds=[names[k] for k in kinds.ljust(len(headers), "t")])


def value_range(values: Sequence[float | None]) -> tuple[float, float]:
    """The y range of a plot of shares: the data's own range with a margin (never a fixed 0–1 that
    squeezes a whole run into its top 20%), at least 0.05 tall, kept within [0, 1]."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return 0.0, 1.0
    lo, hi = min(vals), max(vals)
    pad = max((hi - lo) * 0.15, 0.02)
    lo, hi = max(0.0, lo - pad), min(1.0, hi + pad)
    if hi - lo < 0.05:
        need = 0.05 - (hi - lo)
        lo, hi = lo - need / 2, hi + need / 2
        shift = max(0.0, -lo) - max(0.0, hi - 1.0)
        lo, hi = lo + shift, hi + shift
    return round(lo, 6), round(hi, 6)


def _round_axis(ax: Any, values: Sequence[float | None]) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    lo, hi = value_range(values)
    ax.set_ylim(lo, hi)
    ax.grid(alpha=0.3)


# --------------------------------------------------------------------------------------------


def funnel(store: RunStore, best: str) -> dict[str, int]:
    """seed → born → rejected → pool (active + shadow at the end) → leaves of the final expression."""
    ops = store.ops()
    events = store.events()
    kinds = Counter(e["kind"] for e in events)
    try:
        leaves = len(parse(best).op_names())
    except VxSyntaxError:  # a run file written by another version of vx
        leaves = 0
    return {
        "seed": sum(o["origin"] == "seed" for o in ops),
        "born": kinds.get("born", 0),
        "rejected": kinds.get("rejected", 0),
        "promoted": kinds.get("promoted", 0),
        "retired": kinds.get("retired", 0),
        "pool": sum(o["status"] in ("active", "shadow") for o in ops),
        "leaves": leaves,
    }


def leaf_stats(store: RunStore) -> dict[str, dict[str, float]]:
    """Per op of the final verifier: coverage over all recorded items, fire rate, dev accuracy."""
    traces = store.traces()
    labels = {(v["split"], v["item"]): v["label"] for v in store.verdicts()}
    acc: dict[str, dict[str, float]] = defaultdict(lambda: {"n": 0, "opined": 0, "fired": 0, "lab": 0, "right": 0})
    for t in traces:
        s = acc[t["op"]]
        s["n"] += 1
        if t["verdict"] >= 0:
            s["opined"] += 1
            s["fired"] += t["verdict"] == 1
            lab = labels.get((t["split"], t["item"])) if t["split"] == "dev" else None
            if lab is not None:
                s["lab"] += 1
                s["right"] += (t["verdict"] == 1) == (lab < 0.5)
    out = {}
    for op, s in acc.items():
        out[op] = {
            "coverage": s["opined"] / s["n"] if s["n"] else float("nan"),
            "fire_rate": s["fired"] / s["n"] if s["n"] else float("nan"),
            "dev_accuracy": s["right"] / s["lab"] if s["lab"] else float("nan"),
            "dev_n": s["lab"],
        }
    return out


def pool_stats(store: RunStore) -> dict[str, dict[str, float]]:
    """Per op of the whole pool (peer ops included): coverage and fire rate over the train and dev
    items, from the run's verdict matrix."""
    out = {}
    for op, col in store.matrix().items():
        n = len(col)
        vals = list(col.values())
        out[op] = {
            "coverage": sum(v >= 0 for v in vals) / n if n else float("nan"),
            "fire_rate": sum(v == 1 for v in vals) / n if n else float("nan"),
        }
    return out


def _tree_html(node: Node, stats: Mapping[str, Mapping[str, float]]) -> str:
    if isinstance(node, OpRef):
        s = stats.get(node.name, {})
        return (
            f"<li><code>{_e(node.name)}</code> <span class='muted'>coverage {_f(s.get('coverage'))} · "
            f"fires {_f(s.get('fire_rate'))} · dev accuracy {_f(s.get('dev_accuracy'))} "
            f"(n={s.get('dev_n', 0)})</span></li>"
        )
    kids = (node.child,) if isinstance(node, Not) else node.children
    if isinstance(node, Vote):
        head = f"vote {node.k}"
    elif isinstance(node, WVote):
        head = to_text(node).split()[0][1:] + " " + to_text(node).split()[1]
    else:
        head = type(node).__name__.lower()
    inner = "".join(_tree_html(c, stats) for c in kids)
    return f"<li><code>({_e(head)} …)</code><ul class='tree'>{inner}</ul></li>"


def _confusion_html(title: str, c: Mapping[str, Any] | None) -> str:
    if not c:
        return f"<p class='muted'>{_e(title)}: not recorded</p>"
    tp, fp, tn, fn = (c.get(k, 0) for k in ("tp", "fp", "tn", "fn"))
    return (
        f"<div><b>{_e(title)}</b>"
        + _table(
            ["", "label fail", "label pass"], [["verifier FAIL", tp, fp], ["verifier PASS / abstain", fn, tn]], "tnn"
        )
        + "</div>"
    )


def _family_record(meta: Mapping[str, Any]) -> tuple[dict[str, float], dict[str, Any], str]:
    """The locked labels and every item's output, from the run's family ({}, {} and the reason when the
    family cannot be read). The run file holds verdicts only; the outputs are the family's own."""
    from vx.families.family import Family

    where = meta.get("family_dir")
    if not where:
        return {}, {}, "the run file does not name its family directory"
    try:
        fam = Family.load(where)
    except Exception as exc:  # moved, deleted or changed since the run: the rest of the page still renders
        return {}, {}, f"the family at {where} cannot be loaded ({exc})"
    if fam.name != meta.get("family"):
        return {}, {}, f"{where} now holds family {fam.name!r}, not {meta.get('family')!r}"
    split = fam.audit().labeled_split()
    outputs = {it.id: it.output for name in ("dev", "train") for it in fam.split(name).items}
    outputs.update({it.id: it.output for it in split.items})
    return {it.id: it.label for it in split.items if it.label is not None}, outputs, ""


def _output_html(output: Any) -> str:
    """An item's output, collapsed (what was graded: the code, the query, the section)."""
    if output is None:
        return ""
    text = output if isinstance(output, str) else _json(output)
    lines = len(text.splitlines()) or 1
    return f"<details class='output'><summary>output ({lines} lines)</summary><pre>{_e(text)}</pre></details>"


def _json(value: Any) -> str:
    try:
        return json_dumps(value, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def render_html(run_path: str | Path, *, max_items: int = 40) -> str:
    """The report page for one run, as a string."""
    store = RunStore(run_path)
    try:
        return _render(store, Path(run_path), max_items)
    finally:
        store.close()


@attrs.frozen
class _Run:
    """What the sections of the page read from the run file (read once)."""

    store: RunStore
    run_path: Path
    meta: Mapping[str, Any]
    rounds: list[dict[str, Any]]
    summary: Mapping[str, Any]
    best: str  # the final expression's text
    seed_expr: str
    plt: Any  # matplotlib's pyplot, or None without the viz extra

    @property
    def dev(self) -> Mapping[str, Any]:
        return self.summary.get("dev", {})

    @property
    def locked(self) -> Mapping[str, Any]:
        return self.summary.get("locked", {})


def _render(store: RunStore, run_path: Path, max_items: int) -> str:
    """The page: one section per part of the run (`SECTIONS`), each built by its own function."""
    meta = store.meta()
    rounds = store.rounds()
    run = _Run(
        store,
        run_path,
        meta,
        rounds,
        store.summary(),
        meta.get("best_expression") or (rounds[-1]["incumbent"] if rounds else ""),
        meta.get("seed_expression", ""),
        pyplot(),
    )
    stats = leaf_stats(store)
    locked_labels, outputs, why_not = _family_record(meta)
    parts = [
        _summary_section(run),
        _objective_section(run),
        _audit_section(run),
        _funnel_section(run),
        _expression_section(run, stats),
        _confusion_section(run),
        _ops_section(run, stats),
        _disagreements_section(run, outputs, max_items),
        _locked_misses_section(run, locked_labels, outputs, why_not, max_items),
    ]
    return _page(run, parts)


def _page(run: _Run, parts: Sequence[str]) -> str:
    """The sections as one self-contained page: title, the expressions, a note without matplotlib, contents."""
    note = (
        ""
        if run.plt
        else (
            "<p class='muted'>matplotlib is not installed (pip install 'vx-verifiers[viz]'): "
            "plots are shown as tables.</p>"
        )
    )
    title = f"vx run — {run.meta.get('family', '?')}"
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width,initial-scale=1'><title>{_e(title)}</title>"
        f"<style>{_CSS}</style></head><body><h1>{_e(title)}</h1><p class='muted'>{_e(run.run_path.name)} · "
        f"seed <code>{_e(run.seed_expr)}</code> → evolved <code>{_e(run.best)}</code></p>{note}"
        + toc_html(parts)
        + "".join(parts)
        + "</body></html>"
    )


def _summary_section(run: _Run) -> str:
    """The seed and the evolved expression on dev and on the locked audit, and the run's facts."""
    meta, rounds = run.meta, run.rounds
    rows = []
    for name in ("seed", "evolved"):
        d, lk = run.dev.get(name, {}), run.locked.get(name, {})
        rows.append(
            [
                name,
                "<code>"
                + _e(run.summary.get("expressions", {}).get(name, run.seed_expr if name == "seed" else run.best))
                + "</code>",
                _f(d.get("accuracy")),
                _f(d.get("recall_weighted")),
                _f(lk.get("agreement")),
                _f(lk.get("recall_weighted")),
                _f(lk.get("kappa")),
            ]
        )
    return (
        "<section id='summary'><h2>Summary</h2>"
        + _table(
            [
                "",
                "expression",
                "dev accuracy",
                "dev recall-weighted",
                "locked agreement (audit)",
                "locked recall-weighted",
                "locked κ",
            ],
            rows,
            "tpnnnnn",
        )
        + "<table class='kv'>"
        + "".join(
            f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>"
            for k, v in (
                ("family", meta.get("family")),
                ("run file", run.run_path.name),
                ("status", meta.get("status")),
                ("rounds", max((r["round"] for r in rounds), default=0)),
                ("started", meta.get("started")),
                ("finished", meta.get("finished", "—")),
                ("ablation", (meta.get("config") or {}).get("ablation") or "none"),
                ("seed", (meta.get("config") or {}).get("seed")),
            )
        )
        + "</table></section>"
    )


def _objective_section(run: _Run) -> str:
    """The incumbent's objective and its parts after each round: a plot and a table."""
    rounds, plt = run.rounds, run.plt
    xs = [r["round"] for r in rounds]
    sec = (
        "<section id='objective'><h2>Objective per round</h2>"
        "<p>S = A<sub>dev</sub> · A<sub>train</sub><sup>w</sup> − λC "
        "of the incumbent after each round (round 0 is the seed).</p>"
    )
    if plt and rounds:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for key, style in (("objective", "-o"), ("a_dev", "--s"), ("a_train", ":^")):
            ax.plot(xs, [r[key] if r[key] is not None else float("nan") for r in rounds], style, label=key)
        _round_axis(ax, [r[k] for r in rounds for k in ("objective", "a_dev", "a_train")])
        ax.legend(loc="lower right")
        sec += svg(fig)
    sec += _table(
        ["round", "objective", "A_dev", "A_train", "cost", "candidates", "replaced", "incumbent"],
        [
            [
                r["round"],
                _f(r["objective"]),
                _f(r["a_dev"]),
                _f(r["a_train"]),
                _f(r["cost"], 4),
                r["candidates"],
                "yes" if r["replaced"] else "",
                f"<code>{_e(r['incumbent'])}</code>",
            ]
            for r in rounds
        ],
        "nnnnnntp",
    )
    return sec + "</section>"


def _audit_section(run: _Run) -> str:
    """The locked agreement after each round (a measurement evolution never reads)."""
    rounds, plt = run.rounds, run.plt
    sec = (
        "<section id='audit'><h2>Locked agreement per round (audit)</h2><p class='audit'>Measured on the locked "
        "split after each round. Evolution never reads it: it is a measurement, not a signal.</p>"
    )
    audit = [r.get("audit_agreement") for r in rounds]
    if plt and any(a is not None for a in audit):
        fig, ax = plt.subplots(figsize=(8, 2.8))
        ax.plot(
            [r["round"] for r in rounds],
            [a if a is not None else float("nan") for a in audit],
            "-o",
            color="#b08800",
            label="locked agreement",
        )
        _round_axis(ax, audit)
        ax.legend(loc="lower right")
        sec += svg(fig)
    elif not any(a is not None for a in audit):
        sec += "<p class='muted'>This run was made without an audit.</p>"
    return sec + "</section>"


def _funnel_section(run: _Run) -> str:
    """How many ops were seeded, born, rejected, promoted and retired, and the lifecycle events."""
    fun = funnel(run.store, run.best)
    plt = run.plt
    sec = "<section id='funnel'><h2>Lifecycle funnel</h2>"
    if plt:
        fig, ax = plt.subplots(figsize=(8, 2.6))
        keys = ["seed", "born", "rejected", "promoted", "retired", "pool", "leaves"]
        ax.barh(keys[::-1], [fun[k] for k in keys[::-1]], color="#0366d6")
        for i, k in enumerate(keys[::-1]):
            ax.text(fun[k], i, f" {fun[k]}", va="center")
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # op counts: whole numbers only
        ax.set_xlabel("ops")
        sec += svg(fig)
    sec += _table(list(fun), [list(fun.values())], "n" * len(fun))
    events = [e for e in run.store.events() if e["kind"] != "seed"]
    if events:
        sec += (
            f"<details><summary>lifecycle events ({len(events)})</summary>"
            + _table(
                ["round", "op", "event", "status", "reason"],
                [
                    [
                        e["round"],
                        f"<code>{_e(e['op'])}</code>",
                        _e(e["kind"]),
                        _e(e["status"]),
                        inline_markdown(e["reason"]),
                    ]
                    for e in events
                ],
                "nttttp",
            )
            + "</details>"
        )
    return sec + "</section>"


def _expression_section(run: _Run, stats: Mapping[str, Mapping[str, float]]) -> str:
    """The final expression, as text and as a tree with each leaf's coverage and dev accuracy."""
    sec = f"<section id='expression'><h2>Final expression</h2><pre>{_e(run.best)}</pre>"
    try:
        sec += "<ul class='tree'>" + _tree_html(parse(run.best), stats) + "</ul>"
    except Exception as exc:  # a run file written by another version
        sec += f"<p class='muted'>cannot draw the tree: {_e(exc)}</p>"
    return sec + "</section>"


def _confusion_section(run: _Run) -> str:
    """The evolved verifier's confusion matrices on dev and on the locked audit."""
    return (
        "<section id='confusion'><h2>Confusion matrices (evolved verifier)</h2><div class='flex'>"
        + _confusion_html("dev", run.dev.get("evolved", {}).get("confusion"))
        + _confusion_html("locked (audit)", run.locked.get("evolved"))
        + "</div></section>"
    )


def _ops_section(run: _Run, stats: Mapping[str, Mapping[str, float]]) -> str:
    """Every op of the pool: origin, status, coverage, firing rate, dev accuracy, estimated false alarms."""
    every = pool_stats(run.store)
    peer_ops = set(filter(None, str(run.meta.get("peer_ops", "")).split(",")))

    def stat(name: str, key: str) -> Any:
        return stats.get(name, {}).get(key, every.get(name, {}).get(key))

    def origin(o: Mapping[str, Any]) -> str:
        return _e(o["origin"]) + (f" <span class='muted'>round {_e(o['born_round'])}</span>" if o["born_round"] else "")

    def op_cell(o: Mapping[str, Any]) -> str:
        extra = [f"detects {_e(o['detects'])}"] if o["detects"] and o["detects"] != o["name"] else []
        extra += ["peer op"] if o["name"] in peer_ops else []
        return f"<code>{_e(o['name'])}</code>" + (
            f"<br><span class='muted'>{' · '.join(extra)}</span>" if extra else ""
        )

    fa = (run.summary or {}).get("false_alarms") or {}
    est = {r["op"]: r for r in fa.get("ops") or () if isinstance(r, Mapping) and "op" in r}

    def est_cell(name: str) -> str:
        r = est.get(name)
        if r is None or r.get("rate") is None:
            return "—"
        cell = f"{float(r['rate']):.1%} <span class='muted'>({float(r['fires']):.0f} of {float(r['n']):.0f})</span>"
        return f"<strong>{cell}</strong>" if float(r["rate"]) >= HIGH_FALSE_ALARM else cell

    return (
        "<section id='ops'><h2>Op pool</h2>"
        + _table(
            ["op", "origin", "status", "tier", "coverage", "fires", "dev acc.", "est. false alarms", "description"],
            [
                [
                    op_cell(o),
                    origin(o),
                    _e(o["status"]),
                    _e(o["tier"]),
                    _f(stat(o["name"], "coverage")),
                    _f(stat(o["name"], "fire_rate")),
                    _f(stats.get(o["name"], {}).get("dev_accuracy")),
                    est_cell(o["name"]),
                    inline_markdown(o["description"]),
                ]
                for o in run.store.ops()
            ],
            "ttttnnnnp",
        )
        + "<p class='muted'>coverage and fires: over the recorded items (train, dev and, for the final verifier's ops, "
        "the audited locked items), for every op of the pool, peer ops (which compare an attempt with the other "
        "attempts at its task) included; dev accuracy for the ops the final verifier runs. Est. false alarms: the "
        "op's firing rate on the train split's pseudo-positives, estimated without labels ("
        + _e(fa.get("evidence") or "no pass evidence recorded")
        + "); bold: at least "
        f"{HIGH_FALSE_ALARM:.0%}.</p></section>"
    )


_VERDICT_HTML = {
    1: "<span class='fail'>DRAWBACK</span>",
    0: "<span class='pass'>CLEAN</span>",
    -1: "<span class='abstain'>ABSTAIN</span>",
}


def _traces_by_item(store: RunStore, split: str) -> dict[str, list[dict[str, Any]]]:
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in store.traces(split):
        traces[t["item"]].append(t)
    return traces


def _trace_rows(traces: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """One row per op the final verifier ran on an item: the op, its verdict, its message."""
    return [[f"<code>{_e(t['op'])}</code>", _VERDICT_HTML[t["verdict"]], _e(t["message"])] for t in traces]


def _disagreements_section(run: _Run, outputs: Mapping[str, Any], max_items: int) -> str:
    """The dev items whose label the evolved verifier contradicts, each with its trace and output."""
    traces = _traces_by_item(run.store, "dev")
    verdicts = run.store.verdicts("dev")
    bad = [v for v in verdicts if v["label"] is not None and (v["final"] == "fail") != (v["label"] < 0.5)]
    sec = f"<section id='disagreements'><h2>Disagreeing dev items ({len(bad)})</h2>"
    if not bad:
        sec += "<p>The evolved verifier agrees with every dev label.</p>"
    for v in bad[:max_items]:
        lab = "fail" if v["label"] < 0.5 else "pass"
        sec += (
            f"<details open><summary><code>{_e(v['item'])}</code> (task {_e(v['task'])}): label <b>{lab}</b>, "
            f"verdict <span class='{_e(v['final'])}'>{_e(v['final']).upper()}</span></summary>"
            + _table(["op", "verdict", "message"], _trace_rows(traces[v["item"]]), "ttp")
            + _output_html(outputs.get(v["item"]))
            + "</details>"
        )
    return sec + "</section>"


def _locked_misses_section(
    run: _Run, locked_labels: Mapping[str, float], outputs: Mapping[str, Any], why_not: str, max_items: int
) -> str:
    """The locked items the evolved verifier gets wrong (the audit: shown to people, never read by
    evolution; the run file holds the locked verdicts only, so the labels come from the family itself, as
    for `vx eval --dataset locked`)."""
    locked_v = [{**v, "label": locked_labels.get(v["item"])} for v in run.store.verdicts("locked")]
    ltraces = _traces_by_item(run.store, "locked")
    lbad = [v for v in locked_v if v["label"] is not None and (v["final"] == "fail") != (v["label"] < 0.5)]
    sec = (
        f"<section id='locked-misses'><h2>Locked misses ({len(lbad)} of {len(locked_v)}, audit)</h2>"
        "<p class='audit'>Locked items the evolved verifier gets wrong. Evolution never read these labels; "
        "they show where the verifier does not transfer.</p>"
    )
    if not locked_v:
        sec += "<p class='muted'>This run recorded no locked verdicts (made without an audit).</p>"
    elif why_not:
        sec += f"<p class='muted'>Cannot list them: {_e(why_not)}.</p>"
    elif not lbad:
        sec += "<p>The evolved verifier agrees with every locked label.</p>"
    else:
        missed = [v for v in lbad if v["label"] < 0.5]
        sec += (
            f"<p>{len(missed)} missed drawback(s) (label fail, verdict pass or abstain) · "
            f"{len(lbad) - len(missed)} false alarm(s) (label pass, verdict fail)</p>"
        )
    for v in lbad[:max_items]:
        lab = "fail" if v["label"] < 0.5 else "pass"
        kind = "missed drawback" if lab == "fail" else "false alarm"
        rows = _trace_rows(ltraces[v["item"]])
        sec += (
            f"<details><summary><code>{_e(v['item'])}</code> (task {_e(v['task'])}): {kind} — label <b>{lab}</b>, "
            f"verdict <span class='{_e(v['final'])}'>{_e(v['final']).upper()}</span></summary>"
            + (
                _table(["op", "verdict", "message"], rows, "ttp")
                if rows
                else "<p class='muted'>no per-op trace recorded</p>"
            )
            + _output_html(outputs.get(v["item"]))
            + "</details>"
        )
    if len(lbad) > max_items:
        sec += f"<p class='muted'>… and {len(lbad) - max_items} more (vx runs export RUN --json has them all)</p>"
    return sec + "</section>"


def toc_html(sections: Sequence[str]) -> str:
    """A table of contents: one link per ``<section id=…><h2>…</h2>`` of the page, in order."""
    import re

    links = []
    for sec in sections:
        found = re.match(r"<section id='([^']+)'><h2>(.*?)</h2>", sec)
        if found:
            links.append(f"<li><a href='#{found.group(1)}'>{found.group(2)}</a></li>")
    return f"<nav class='toc' aria-label='contents'><b>Contents</b><ol>{''.join(links)}</ol></nav>" if links else ""


def summary_html(summary: Mapping[str, Any]) -> str:
    """Seed vs evolved on dev (and locked, when audited): the table `vx evolve` prints, as HTML."""
    cols = [("dev", "seed"), ("dev", "evolved")]
    if "locked" in summary:
        cols += [("locked", "seed"), ("locked", "evolved")]
    rows = []
    for label, dev_key, locked_key in (
        ("agreement", "accuracy", "agreement"),
        ("recall-weighted", "recall_weighted", "recall_weighted"),
        ("κ", "kappa", "kappa"),
    ):
        rows.append(
            [_e(label)]
            + [
                _f((summary.get(split) or {}).get(which, {}).get(dev_key if split == "dev" else locked_key))
                for split, which in cols
            ]
        )
    obj = summary.get("objective") or {}
    rows.append(
        [
            "objective S*",
            _f((obj.get("seed") or {}).get("objective"), 4),
            _f((obj.get("evolved") or {}).get("objective"), 4),
        ]
        + [""] * (len(cols) - 2)
    )
    return _table(
        [""] + [f"{split} {which}" + (" (audit)" if split == "locked" else "") for split, which in cols],
        rows,
        "t" + "n" * len(cols),
    ) + (
        "<p class='muted'>* both scored against the final pool's train consensus (round 0 "
        "scored the seed against the seed pool)</p>"
    )


def result_html(result: Any) -> str:
    """An evolution result (`EvolutionResult`) for a notebook: evolved vs seed, figures, the run file."""
    s, seed = result.best_score, result.seed_score
    from vx.pages import notebook

    return notebook(
        f"<div class='vx-run'><p><b>evolved</b> <code>{_e(result.best_text)}</code><br>"
        f"<span class='muted'>seed <code>{_e(to_text(result.seed))}</code></span></p>"
        f"<p>objective {_f(s.objective, 4)} (seed {_f(seed.objective, 4)}) · A_dev {_f(s.a_dev)} · "
        f"A_train {_f(s.a_train)} · {_e(result.rounds)} round(s)</p>"
        + summary_html(result.summary)
        + f"<p class='muted'>run file {_e(result.run_path)} (vx report makes the full page)</p></div>"
    )


def write_report(run_path: str | Path, out: str | Path | None = None) -> Path:
    out = Path(out) if out else Path(run_path).with_suffix("").with_suffix(".html")
    out.write_text(render_html(run_path), encoding="utf-8")
    return out
