"""The figures a ratchet run reports, all recomputed from its run file.

Per arm, on the held-out (locked) tasks, graded by the family's ground truth:

* **init** — round 0: the frozen solver with an empty bank;
* **peak** — the best round (an argmax over the held-out curve, hence optimistic);
* **final** — the mean of the last ``final_rounds`` rounds (fixed in advance, unselected);
* **lift** — peak − init and final − init;
* **improved** — held-out tasks failed at round 0 and passed in at least one later round;
* **train pass** — the share of training attempts the arm's own grader passed (what the loop "sees");
* for co arms, the **verifier validity** of each phase's verifier: its agreement with the locked split.

Across arms: **lift retention** = an arm's lift / the oracle's lift (peak and final), and the final judge's
win rate over decided pairs (a win only when both position orders agree), per rubric.

Held-out sets of tens of tasks move by one task at a time (1/15 ≈ 7 points on HumanEval's locked split):
read multi-round means, and several seeds, before reading a lift.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vx.ratchet.store import RatchetStore


def _mean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _r(x: float) -> float:
    return round(x, 10) + 0.0  # no -0.0


def arm_figures(store: RatchetStore, arm: str, final_rounds: int = 10) -> dict[str, Any]:
    rounds = store.rounds(arm)
    if not rounds:
        return {"rounds": 0}
    curve = [r["heldout"] for r in rounds]
    init = curve[0]
    peak_i = int(np.argmax(curve))
    later = curve[1:] if len(curve) > 1 else curve
    final = _mean(later[-final_rounds:])
    held = store.attempts(arm, kind="heldout")
    by_task: dict[str, dict[int, bool]] = {}
    for a in held:
        by_task.setdefault(a["task"], {})[a["round"]] = a["passed"]
    failed0 = [t for t, d in by_task.items() if not d.get(0, False)]
    improved = sorted(t for t in failed0 if any(v for rr, v in by_task[t].items() if rr > 0))
    train = [r["train_pass"] for r in rounds[1:] if r["train_pass"] is not None]
    events = store.events(arm)
    kinds = [e["kind"] for e in events]
    out: dict[str, Any] = {
        "rounds": len(rounds) - 1, "init": init, "peak": curve[peak_i], "peak_round": rounds[peak_i]["round"],
        "final": final, "lift_peak": _r(curve[peak_i] - init), "lift_final": None if final is None else _r(final - init),
        "improved": len(improved), "never_passed_at_round_0": len(failed0), "improved_tasks": improved,
        "train_pass": _mean(train), "bank_final": rounds[-1]["bank_size"], "born": kinds.count("born"),
        "evicted": kinds.count("evicted"), "retired": kinds.count("retired"),
        "rollbacks": sum(1 for r in rounds if r["rolled_back"]),
    }
    phases = store.phases(arm)
    if phases:
        out["verifier"] = [{"phase": p["phase"], "rounds": p["total_rounds"], "expression": p["verifier"],
                            "locked_agreement": p["validity"].get("agreement"),
                            "locked_recall_weighted": p["validity"].get("recall_weighted"),
                            "objective": p["validity"].get("objective")} for p in phases]
        out["verifier_validity"] = phases[-1]["validity"].get("agreement")
        phase_pass = []
        for p in phases:
            rs = [r["train_pass"] for r in rounds if r["phase"] == p["phase"] and r["round"] > 0]
            phase_pass.append(_mean(rs))
        out["train_pass_by_phase"] = phase_pass
    return out


def judge_figures(store: RatchetStore) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for row in store.judge():
        key = f"{row['arm']}/{row['against']}/{row['rubric']}"
        d = out.setdefault(key, {"arm": row["arm"], "against": row["against"], "rubric": row["rubric"],
                                 "win": 0, "loss": 0, "tie": 0})
        d[row["outcome"]] += 1
    for d in out.values():
        decided = d["win"] + d["loss"]
        d["decided"] = decided
        d["win_rate"] = d["win"] / decided if decided else None
    return out


def figures(store: RatchetStore, final_rounds: int = 10) -> dict[str, Any]:
    arms = store.arms()
    per = {a: arm_figures(store, a, final_rounds) for a in arms}
    retention: dict[str, Any] = {}
    oracle = per.get("oracle")
    if oracle and oracle.get("rounds"):
        for a, f in per.items():
            if a == "oracle" or not f.get("rounds"):
                continue
            retention[a] = {
                "peak": _r(f["lift_peak"] / oracle["lift_peak"]) if oracle["lift_peak"] else None,
                "final": (_r(f["lift_final"] / oracle["lift_final"])
                          if oracle.get("lift_final") and f.get("lift_final") is not None else None),
            }
            if "verifier_validity" in f:
                retention[a]["verifier_validity"] = f["verifier_validity"]
                retention[a]["train_pass"] = f["train_pass"]
    return {"arms": per, "retention": retention, "judge": judge_figures(store)}


def fmt_table_rows(fig: Mapping[str, Any]) -> list[list[str]]:
    """Rows of the summary table: arm, init, peak, final, lift (peak / final), retention, train pass, validity."""
    def f(x: Any, d: int = 3) -> str:
        return "—" if x is None else (f"{x:.{d}f}" if isinstance(x, float) else str(x))

    rows = []
    for arm, a in fig["arms"].items():
        if not a.get("rounds") and a.get("rounds") != 0:
            continue
        ret = fig["retention"].get(arm, {})
        pct = lambda x: "—" if x is None else f"{100 * x:.0f}%"  # noqa: E731
        rows.append([arm, f(a.get("init")), f(a.get("peak")), f(a.get("final")),
                     f"{f(a.get('lift_peak'))} / {f(a.get('lift_final'))}",
                     "—" if arm == "oracle" else f"{pct(ret.get('peak'))} / {pct(ret.get('final'))}",
                     f(a.get("train_pass")), f(a.get("verifier_validity")),
                     f"{a.get('improved', 0)}/{a.get('never_passed_at_round_0', 0)}",
                     f"{a.get('bank_final', 0)} (+{a.get('born', 0)} −{a.get('evicted', 0) + a.get('retired', 0)}, "
                     f"{a.get('rollbacks', 0)} rb)"])
    return rows


TABLE_HEADERS = ["arm", "init", "peak", "final", "lift peak / final", "retention peak / final", "train pass",
                 "verifier validity", "improved", "bank"]
