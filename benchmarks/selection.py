"""Best of n in the quality benchmark: how much of the oracle's lift each verifier recovers when it
chooses one attempt per task.

For every family with two or more attempts per task and every method of ``bench_quality.py``, each task's
attempts are ranked and the top one is kept; its hidden-test label is the method's *selected pass@1* on
that task. Methods:

* **vx verifiers** (the hand-written seed, vx evolved and its ablations) rank as ``vx.selection`` does:
  final verdict, the verifier's evidence score, support among the peers (behaviour-cluster size), a
  digest tie-break; "(verdict only)" rows keep a random attempt among the best verdict instead, to show
  what the later keys add, and "(no support)" rows rank without the support key, to show what the family's
  behaviour clusters add;
* **every peer** (best single op, Snorkel, SPADE, the fixed rule...) gives verdicts only: a random attempt
  among those it passes (its top verdict), counted as the expected value over them, not one draw;
* **CodeT's dual agreement**: a random attempt of the top-scoring consensus set (the attempts its baseline
  op ``outside_dual_agreement`` keeps; every attempt where the task has no signal);
* **the plurality pick (MBR-exec)**: a random attempt of a largest behaviour cluster (the attempts its
  baseline op ``outside_plurality`` keeps);
* **random** (the expected pass@1 of one attempt) and the **oracle** (1 when any attempt passes).

Reported per family and seed on the **locked** tasks (never read by any method) and, for the design
choices, on the **train** tasks' hidden labels (``truth.json``; read by no method): selected pass@1 and
the **lift retention** (selected − random) / (oracle − random), pooled over tasks (sums over tasks, then
the ratio); over the seeds, the mean ± std and the retention pooled over every (seed, task); and the paired,
task-clustered permutation test of vx evolved against the best peer on the per-task selected values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

REF = "vx evolved (anchored)"
RANDOM, ORACLE = "random", "oracle"
PLURALITY, CODET = "plurality pick (MBR-exec)", "CodeT dual agreement (ranking)"
#: the ops whose CLEAN verdicts are the plurality pick's (the first of them in the pool: the code and SQL
#: families' ``outside_plurality``, the single-turn tools family's plurality over normalised answers, the
#: multi-turn one's over end states) and CodeT's top sets
PLURALITY_OPS = ("outside_plurality", "outside_normal_plurality", "outside_state_plurality")
CODET_OP = "outside_dual_agreement"
#: evidence scores compared on the design split (vx.selection's, plus the flat label model's P(pass))
DESIGN_SCORES = ("none", "evidence", "drawbacks", "label-model")
#: supports compared on the design split: the family's soft agreement, and the size of the behaviour cluster
SUPPORTS = ("soft", "clusters")

Key = tuple[Any, ...]


def _verdict_order(codes: np.ndarray) -> np.ndarray:
    """A final-code column as the ranking's first key: PASS 0, ABSTAIN 1, FAIL 2."""
    return np.where(codes == 0, 0, np.where(codes == -1, 1, 2))


def by_task(tasks: Sequence[str], scope: np.ndarray) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i in np.flatnonzero(scope):
        out.setdefault(tasks[i], []).append(int(i))
    return out


def top_value(keys: Sequence[Key], truth: np.ndarray, rows: Sequence[int]) -> float:
    """The expected hidden-test label of the attempt a ranking keeps: the mean label of the rows whose key
    is the smallest (one row when the key breaks every tie)."""
    best = min(keys[i] for i in rows)
    top = [i for i in rows if keys[i] == best]
    return float(np.mean([truth[i] for i in top]))


def selected(keys: Sequence[Key], truth: np.ndarray, groups: Mapping[str, Sequence[int]]) -> dict[str, float]:
    return {t: top_value(keys, truth, rows) for t, rows in groups.items()}


def retention(sel: Sequence[float], rand: Sequence[float], oracle: Sequence[float]) -> float:
    """(Σ selected − Σ random) / (Σ oracle − Σ random): NaN when no task leaves room (oracle = random)."""
    room = float(np.sum(oracle) - np.sum(rand))
    return float((np.sum(sel) - np.sum(rand)) / room) if room > 1e-12 else float("nan")


def vx_keys(
    codes: np.ndarray, score: np.ndarray, support: np.ndarray, ties: Sequence[str], *, order: str = "score"
) -> list[Key]:
    """vx.selection's ranking keys (verdict, −score, −support, digest); ``order="support"`` swaps the
    middle two (a design alternative)."""
    v = _verdict_order(codes)
    if order == "support":
        return [(int(v[i]), -int(support[i]), -float(score[i]), ties[i]) for i in range(len(codes))]
    return [(int(v[i]), -float(score[i]), -int(support[i]), ties[i]) for i in range(len(codes))]


def verdict_keys(codes: np.ndarray) -> list[Key]:
    return [(int(x),) for x in _verdict_order(codes)]


def op_keys(column: np.ndarray, abstain_first: bool) -> list[Key]:
    """A baseline op's top set as keys: CLEAN first; an abstention ranks with CLEAN (`abstain_first`: the op
    has no signal at the task) or last (the attempt takes no part)."""
    return [(0 if c == 0 or (c == -1 and abstain_first) else (1 if c == 1 else 2),) for c in column]


def label_model_score(
    matrix: Any, ops: Sequence[str], root: str | None, modelled: np.ndarray, dev_p: np.ndarray
) -> np.ndarray:
    """The flat label model's P(pass | the verifier's op verdicts) (Dawid–Skene, `vx.evolve.labelmodel`),
    fitted on the unlabeled train items and the dev anchors the root leaves open; 0 where the root fails."""
    from vx.evolve.labelmodel import fit_label_model

    used = [o for o in dict.fromkeys(ops) if o in matrix.op_names and o != root]
    if not used:
        return np.zeros(matrix.n_items)
    votes = matrix.select_ops(used).to_array()
    root_open = matrix.column(root) != 1 if root else np.ones(matrix.n_items, bool)
    anchors = np.where(~np.isnan(dev_p), 1.0 - dev_p, np.nan)
    lm = fit_label_model(votes, used, modelled=modelled & root_open, anchors=anchors)
    return np.where(root_open, 1.0 - np.nan_to_num(lm.q, nan=0.5), 0.0)


def evaluate_selection(
    *,
    matrix: Any,
    items: Sequence[Any],
    tasks: Mapping[str, Mapping[str, Any]],
    is_train: np.ndarray,
    is_dev: np.ndarray,
    is_locked: np.ndarray,
    truth: Mapping[str, str],
    codes: Mapping[str, np.ndarray],
    nodes: Mapping[str, Any],
    root: str | None,
    observations: Mapping[str, Mapping[str, Mapping[str, Any]]],
    similarity: Any,
    dev_labels: np.ndarray,
    consensus_pass: np.ndarray | None = None,
) -> dict[str, Any]:
    """Every method's selection on one (family, seed): per scope ("locked", "design"), per method, the
    selected value of every task, beside random and the oracle (plain data for the summary). With
    ``consensus_pass`` (per item, whether the label-free train consensus evolution's objective reads calls
    it PASS), the design scope also has, per vx verifier, the share of tasks whose choice the consensus
    passes (``consensus_choice``): a label-free measure of selection, compared with the true one."""
    from vx.selection import DEFAULT_SCORE, SCORES, support_sizes, tie_key

    n = len(items)
    tasks_of = [it.task for it in items]
    locked_truth = np.array([1.0 if (it.label is not None and it.label >= 0.5) else 0.0 for it in items])
    design_truth = np.array([1.0 if truth.get(it.id) == "pass" else 0.0 for it in items])
    design = is_train & np.array([it.id in truth for it in items])
    seen = observations.get(similarity.observer, {}) if similarity is not None else {}
    supports = {}
    for kind in SUPPORTS:  # the family's soft agreement (vx.selection's default), and the cluster sizes
        sizes = support_sizes(seen, similarity, tasks, soft=kind == "soft")
        supports[kind] = np.array([sizes.get(it.id, (0, 0))[0] for it in items], dtype=float)
    support = supports["clusters"]  # vx.selection's default (chosen on the design split)
    ties = [tie_key(it.task, it.output) for it in items]
    dev_p = np.full(n, np.nan)
    dev_p[np.flatnonzero(is_dev)] = dev_labels

    keys: dict[str, list[Key]] = {}
    design_keys: dict[str, list[Key]] = {}
    for name, c in codes.items():
        if name in nodes:  # a vx verifier: its own ranking, and its verdict alone
            node = nodes[name]
            ops = ([root] if root else []) + list(node.op_names())
            keys[name] = vx_keys(c, SCORES[DEFAULT_SCORE](matrix, ops), support, ties)  # vx.selection's default
            keys[f"{name} (verdict only)"] = verdict_keys(c)
            if support.any():  # what the family's behaviour clusters add: the same ranking without support
                keys[f"{name} (no support)"] = vx_keys(c, SCORES[DEFAULT_SCORE](matrix, ops), np.zeros(n), ties)
            for score in DESIGN_SCORES:
                values = _score(score, matrix, ops, root, is_train | is_dev, dev_p)
                for kind, sup in supports.items():
                    design_keys[f"{name} | {score}, {kind} support"] = vx_keys(c, values, sup, ties)
                design_keys[f"{name} | {score}, soft support first"] = vx_keys(
                    c, values, supports["soft"], ties, order="support"
                )
        else:
            keys[name] = verdict_keys(c)
    plurality_op = next((o for o in PLURALITY_OPS if o in matrix.op_names), None)
    if plurality_op is not None:
        keys[PLURALITY] = op_keys(matrix.column(plurality_op), abstain_first=False)
    if CODET_OP in matrix.op_names and any(t.get("model_tests") for t in tasks.values()):
        keys[CODET] = op_keys(matrix.column(CODET_OP), abstain_first=True)
    keys[RANDOM] = [(0,)] * n

    out: dict[str, Any] = {}
    for scope_name, scope, lab in (("locked", is_locked, locked_truth), ("design", design, design_truth)):
        groups = by_task(tasks_of, scope)
        if not groups:
            continue
        table = dict(keys) if scope_name == "locked" else {**keys, **design_keys}
        per: dict[str, dict[str, float]] = {m: selected(k, lab, groups) for m, k in table.items()}
        per[ORACLE] = {t: float(max(lab[i] for i in rows)) for t, rows in groups.items()}
        out[scope_name] = {"tasks": list(groups), "attempts": {t: len(r) for t, r in groups.items()}, "selected": per}
        if scope_name == "design" and consensus_pass is not None:
            agreed = np.asarray(consensus_pass, dtype=float)
            out[scope_name]["consensus_choice"] = {
                name: float(np.mean(list(selected(keys[name], agreed, groups).values()))) for name in nodes
            }
        categories = {t: str(tasks.get(t, {}).get("category", "")) for t in groups}
        if any(categories.values()):  # tools: BFCL's categories, for the per-category table
            out[scope_name]["category"] = categories
    out["support_known"] = float(np.mean(support[is_locked] > 0)) if is_locked.any() else None
    return out


def _score(name: str, matrix: Any, ops: Sequence[str], root: str | None, modelled: np.ndarray, dev_p: np.ndarray):
    from vx.selection import SCORES

    if name == "label-model":
        return label_model_score(matrix, ops, root, modelled, dev_p)
    return SCORES[name](matrix, ops)


# ---------------------------------------------------------------------------------------------- report


def _peer(method: str) -> bool:
    return not method.startswith(("vx ", "hand-written seed")) and method not in (RANDOM, ORACLE)


def summarize(
    runs: Sequence[Mapping[str, Any]],
    n_permutations: int,
    permutation_test: Callable[..., Any],
    scope: str = "locked",
) -> tuple[list[str], dict[str, Any]]:
    """The markdown table of one family (every method: selected pass@1 and lift retention, mean ± std
    over seeds and pooled, the paired test of vx evolved against the best peer) and its summary data."""
    sels = [r["selection"][scope] for r in runs if scope in r.get("selection", {})]
    if not sels:
        return [], {}
    methods = [m for m in sels[0]["selected"] if all(m in s["selected"] for s in sels)]
    if scope == "design":
        methods = [m for m in methods if "|" in m or m in (RANDOM, ORACLE)]
    else:
        methods = [m for m in methods if "|" not in m]
    rows: dict[str, dict[str, Any]] = {}
    for m in methods:
        per_seed_sel, per_seed_ret, pooled_sel, pooled_rand, pooled_or, clusters = [], [], [], [], [], []
        for s in sels:
            ts = s["tasks"]
            sel = [s["selected"][m][t] for t in ts]
            rand = [s["selected"][RANDOM][t] for t in ts]
            orc = [s["selected"][ORACLE][t] for t in ts]
            per_seed_sel.append(float(np.mean(sel)))
            per_seed_ret.append(retention(sel, rand, orc))
            pooled_sel += sel
            pooled_rand += rand
            pooled_or += orc
            clusters += ts
        rows[m] = {
            "pass_at_1": per_seed_sel,
            "retention": per_seed_ret,
            "pooled_pass_at_1": float(np.mean(pooled_sel)),
            "pooled_retention": retention(pooled_sel, pooled_rand, pooled_or),
            "values": pooled_sel,
        }
    peers = [m for m in methods if _peer(m)]
    best_peer = max(peers, key=lambda m: rows[m]["pooled_pass_at_1"]) if peers else None
    clusters = [t for s in sels for t in s["tasks"]]
    ref = REF if REF in rows else None
    lines = []
    k = sorted({a for s in sels for a in s["attempts"].values()})
    title = "locked tasks" if scope == "locked" else "design split (train tasks' hidden labels, read by no method)"
    lines.append(
        f"Best of n on the {title}: {len(sels[0]['tasks'])} tasks per seed ({k[0]}–{k[-1]} attempts each); "
        f"selected pass@1 and lift retention (selected − random) / (oracle − random), pooled over tasks; "
        "mean ± std over seeds, then pooled over every (seed, task)"
        + (f"; Δ and p: {REF} minus the method, paired task-clustered permutation test" if ref else "")
        + (f"; best peer: {best_peer}" if best_peer else "")
        + ".\n"
    )
    lines.append("| method | selected pass@1 | lift retention | pooled pass@1 | pooled retention | Δ pass@1 | p |")
    lines.append("|---|---|---|---|---|---|---|")
    tests: dict[str, Any] = {}
    order = sorted(methods, key=lambda m: -rows[m]["pooled_pass_at_1"])
    for m in order:
        r = rows[m]
        cells = ["", ""]
        if ref is not None and m not in (ref, ORACLE) and scope == "locked":
            t = permutation_test(rows[ref]["values"], r["values"], clusters, n_permutations=n_permutations, seed=0)
            cells = [f"{t.diff:+.3f}", f"{t.p_value:.4f}"]
            tests[m] = {"diff": t.diff, "p": t.p_value, "clusters": t.n_clusters, "items": t.n_items}
        name = f"**{m}**" if m == ref else m
        lines.append(
            f"| {name} | {_ms(r['pass_at_1'])} | {_ms(r['retention'])} | {r['pooled_pass_at_1']:.3f} | "
            f"{r['pooled_retention']:.3f} | " + " | ".join(cells) + " |"
        )
    lines.append("")
    summary = {
        m: {k2: v for k2, v in r.items() if k2 != "values"} | ({"test": tests[m]} if m in tests else {})
        for m, r in rows.items()
    }
    out: dict[str, Any] = {"methods": summary, "best_peer": best_peer}
    if scope == "design" and all("consensus_choice" in s for s in sels):
        names = [m for m in sels[0]["consensus_choice"] if all(m in s["consensus_choice"] for s in sels)]
        lines.append(
            "Label-free: the share of the design tasks whose choice (the default ranking) the train consensus "
            "evolution's objective reads calls PASS, beside the true pooled retention (mean over seeds).\n"
        )
        lines.append("| vx verifier | consensus passes the choice | true selected pass@1 | true retention |")
        lines.append("|---|---|---|---|")
        out["consensus_choice"] = {}
        for m in names:
            c = float(np.mean([s["consensus_choice"][m] for s in sels]))
            out["consensus_choice"][m] = c
            r = rows.get(f"{m} | drawbacks, clusters support")
            true = f"{r['pooled_pass_at_1']:.3f} | {r['pooled_retention']:.3f}" if r else "— | —"
            lines.append(f"| {m} | {c:.3f} | {true} |")
        lines.append("")
    return lines, out


SEED = "hand-written seed"
#: the methods of the per-category table, in its column order
CATEGORY_METHODS = (REF, SEED, PLURALITY, RANDOM, ORACLE)


def summarize_categories(runs: Sequence[Mapping[str, Any]], scope: str = "locked") -> tuple[list[str], dict[str, Any]]:
    """The per-category table of a family whose tasks carry a category (tools: BFCL's): per category and
    method (vx evolved, the seed, the plurality pick, the family's best peer, random, the oracle), the selected
    pass@1 and the lift retention pooled over every (seed, task) of that category."""
    sels = [r["selection"][scope] for r in runs if scope in r.get("selection", {})]
    if not sels or not all("category" in s for s in sels):
        return [], {}
    methods = [m for m in CATEGORY_METHODS if all(m in s["selected"] for s in sels)]
    peers = [m for m in sels[0]["selected"] if _peer(m) and "|" not in m and all(m in s["selected"] for s in sels)]
    if peers:  # the best peer of the whole family (as in `summarize`), beside the plurality pick
        best_peer = max(peers, key=lambda m: sum(sum(s["selected"][m][t] for t in s["tasks"]) for s in sels))
        if best_peer not in methods:
            methods.insert(methods.index(RANDOM) if RANDOM in methods else len(methods), best_peer)
    cats = sorted({c for s in sels for c in s["category"].values() if c})
    table: dict[str, Any] = {}
    for cat in cats:
        pooled: dict[str, list[float]] = {m: [] for m in (*methods, RANDOM, ORACLE)}
        n = 0
        for s in sels:
            ts = [t for t in s["tasks"] if s["category"].get(t) == cat]
            n += len(ts)
            for m in pooled:
                pooled[m] += [s["selected"][m][t] for t in ts]
        table[cat] = {
            "tasks": n,
            **{
                m: {
                    "pass_at_1": float(np.mean(pooled[m])) if pooled[m] else float("nan"),
                    "retention": retention(pooled[m], pooled[RANDOM], pooled[ORACLE]),
                }
                for m in methods
            },
        }
    lines = [
        f"Best of n per category ({scope} tasks): selected pass@1 / lift retention, pooled over every (seed, task) "
        "of the category.\n",
        "| category | (seed, task) pairs | " + " | ".join(methods) + " |",
        "|---|---|" + "---|" * len(methods),
    ]
    for cat, row in table.items():
        cells = [
            f"{row[m]['pass_at_1']:.3f}"
            + ("" if m in (RANDOM, ORACLE) or np.isnan(row[m]["retention"]) else f" / {row[m]['retention']:.3f}")
            for m in methods
        ]
        lines.append(f"| {cat} | {row['tasks']} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines, table


def _ms(values: Sequence[float]) -> str:
    v = np.asarray([x for x in values if x is not None and not np.isnan(x)], dtype=float)
    if len(v) == 0:
        return "—"
    return f"{v.mean():.3f} ± {(v.std(ddof=1) if len(v) > 1 else 0.0):.3f}"


__all__ = [
    "CODET",
    "DESIGN_SCORES",
    "ORACLE",
    "PLURALITY",
    "RANDOM",
    "evaluate_selection",
    "label_model_score",
    "retention",
    "selected",
    "summarize",
    "summarize_categories",
    "top_value",
    "vx_keys",
]
