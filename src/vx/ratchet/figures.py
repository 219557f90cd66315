"""The figures a ratchet run reports, all recomputed from its run file.

Per arm, on the **report part** of the held-out (locked) tasks — the part no loop reads — graded by the
family's ground truth:

* **init** — round 0: the frozen solver with an empty bank;
* **peak** — the best round (an argmax over the report curve, hence optimistic);
* **final** — the mean of the last ``final_rounds`` rounds (fixed in advance, unselected);
* **lift** — peak − init and final − init;
* **improved** — report-part tasks failed at round 0 and passed in at least one later round;
* **train pass** — the share of training attempts the arm's own grader passed (what the loop "sees");
* **verifier validity** — co arms: each phase's verifier's agreement with the locked split; the always-pass
  control: ``"vacuous"`` (a grader that passes everything tells nothing apart).

The same init / peak / final / lift on the **rollback part** (the held-out tasks rollback reads) are under
``rollback_part``: rollback selects on that part, so its curve is optimistic (under the papers' protocol the
two parts are the same tasks and the two sets of figures are equal).

Across arms: **lift retention** = an arm's report-part lift / the oracle's (peak and final), and the final
judge's win rate over decided pairs (a win only when both position orders agree), per rubric.

Held-out sets of tens of tasks move by one task at a time (1/15 ≈ 7 points on HumanEval's locked split;
twice that on a half): read multi-round means, and several seeds, before reading a lift.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vx.ratchet.store import RatchetStore

VACUOUS = "vacuous"


def _mean(xs: Sequence[float | None]) -> float | None:
    known = [x for x in xs if x is not None]
    return float(np.mean(known)) if known else None


def _r(x: float) -> float:
    return round(x, 10) + 0.0  # no -0.0


def curve_figures(curve: Sequence[float], rounds: Sequence[int], final_rounds: int) -> dict[str, Any]:
    """init, peak (and its round), final-rounds mean and the two lifts of one held-out curve."""
    init = curve[0]
    peak_i = int(np.argmax(curve))
    later = curve[1:] if len(curve) > 1 else curve
    final = _mean(later[-final_rounds:])
    return {
        "init": init,
        "peak": curve[peak_i],
        "peak_round": rounds[peak_i],
        "final": final,
        "lift_peak": _r(curve[peak_i] - init),
        "lift_final": None if final is None else _r(final - init),
    }


def arm_figures(
    store: RatchetStore, arm: str, final_rounds: int = 10, parts: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    rounds = store.rounds(arm)
    if not rounds:
        return {"rounds": 0}
    parts = parts or store.parts()
    numbers = [r["round"] for r in rounds]
    report = set(parts["report_tasks"])
    by_task: dict[str, dict[int, bool]] = {}
    for a in store.attempts(arm, kind="heldout"):
        if a["task"] in report:
            by_task.setdefault(a["task"], {})[a["round"]] = a["passed"]
    failed0 = [t for t, d in by_task.items() if not d.get(0, False)]
    improved = sorted(t for t in failed0 if any(v for rr, v in by_task[t].items() if rr > 0))
    train = [r["train_pass"] for r in rounds[1:] if r["train_pass"] is not None]
    kinds = [e["kind"] for e in store.events(arm)]
    out: dict[str, Any] = {
        "rounds": len(rounds) - 1,
        **curve_figures([r["report_score"] for r in rounds], numbers, final_rounds),
        "improved": len(improved),
        "never_passed_at_round_0": len(failed0),
        "improved_tasks": improved,
        "train_pass": _mean(train),
        "bank_final": rounds[-1]["bank_size"],
        "born": kinds.count("born"),
        "evicted": kinds.count("evicted"),
        "retired": kinds.count("retired"),
        "rollbacks": sum(1 for r in rounds if r["rolled_back"]),
        "rollback_part": curve_figures([r["rollback_score"] for r in rounds], numbers, final_rounds),
    }
    if arm == "always-pass":
        out["verifier_validity"] = VACUOUS
    phases = store.phases(arm)
    if phases:
        out["verifier"] = [
            {
                "phase": p["phase"],
                "rounds": p["total_rounds"],
                "expression": p["verifier"],
                "locked_agreement": p["validity"].get("agreement"),
                "locked_recall_weighted": p["validity"].get("recall_weighted"),
                "objective": p["validity"].get("objective"),
            }
            for p in phases
        ]
        out["verifier_validity"] = phases[-1]["validity"].get("agreement")
        out["train_pass_by_phase"] = [
            _mean([r["train_pass"] for r in rounds if r["phase"] == p["phase"] and r["round"] > 0]) for p in phases
        ]
    return out


def judge_figures(store: RatchetStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for row in store.judge():
        key = f"{row['arm']}/{row['against']}/{row['rubric']}"
        d = out.setdefault(
            key, {"arm": row["arm"], "against": row["against"], "rubric": row["rubric"], "win": 0, "loss": 0, "tie": 0}
        )
        d[row["outcome"]] += 1
    for d in out.values():
        decided = d["win"] + d["loss"]
        d["decided"] = decided
        d["win_rate"] = d["win"] / decided if decided else None
    return out


def _ratio(x: float | None, of: float | None) -> float | None:
    return _r(x / of) if x is not None and of else None


def figures(store: RatchetStore, final_rounds: int = 10) -> dict[str, Any]:
    parts = store.parts()
    per = {a: arm_figures(store, a, final_rounds, parts) for a in store.arms()}
    retention: dict[str, Any] = {}
    oracle = per.get("oracle")
    if oracle and oracle.get("rounds"):
        for a, f in per.items():
            if a == "oracle" or not f.get("rounds"):
                continue
            retention[a] = {
                "peak": _ratio(f["lift_peak"], oracle["lift_peak"]),
                "final": _ratio(f["lift_final"], oracle["lift_final"]),
            }
            if "verifier_validity" in f:
                retention[a]["verifier_validity"] = f["verifier_validity"]
                retention[a]["train_pass"] = f["train_pass"]
    return {
        "protocol": parts["protocol"],
        "heldout": {"rollback_tasks": len(parts["rollback_tasks"]), "report_tasks": len(parts["report_tasks"])},
        "arms": per,
        "retention": retention,
        "judge": judge_figures(store),
    }


def fmt_table_rows(fig: Mapping[str, Any]) -> list[list[str]]:
    """Rows of the summary table (`TABLE_HEADERS`): the report part's figures, then the rollback part's lift."""

    def f(x: Any, d: int = 3) -> str:
        return "—" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{100 * x:.0f}%"

    rows = []
    for arm, a in fig["arms"].items():
        if not a.get("rounds") and a.get("rounds") != 0:
            continue
        ret = fig["retention"].get(arm, {})
        rb = a.get("rollback_part") or {}
        rows.append(
            [
                arm,
                f(a.get("init")),
                f(a.get("peak")),
                f(a.get("final")),
                f"{f(a.get('lift_peak'))} / {f(a.get('lift_final'))}",
                "—" if arm == "oracle" else f"{pct(ret.get('peak'))} / {pct(ret.get('final'))}",
                f(a.get("train_pass")),
                f(a.get("verifier_validity")),
                f"{a.get('improved', 0)}/{a.get('never_passed_at_round_0', 0)}",
                f"{a.get('bank_final', 0)} (+{a.get('born', 0)} −{a.get('evicted', 0) + a.get('retired', 0)}, "
                f"{a.get('rollbacks', 0)} rb)",
                f"{f(rb.get('lift_peak'))} / {f(rb.get('lift_final'))}",
            ]
        )
    return rows


TABLE_HEADERS = [
    "arm",
    "init",
    "peak",
    "final",
    "lift peak / final",
    "retention peak / final",
    "train pass",
    "verifier validity",
    "improved",
    "bank",
    "rollback-part lift",
]
