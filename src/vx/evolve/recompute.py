"""Recomputing a run's reported numbers from its run file alone (docs/design.md §10).

`round_score(store, r)` rebuilds the objective that round ``r`` selected under — the pool's
verdict matrix (`matrix` table), the dev labels (`verdicts` table), the op statuses and
leave-one-out marginals at the start of the round (the previous round's `state`), the ops born
active in the round (`events`), the objective constants and options (`meta`) — and scores the
round's incumbent with it. Nothing is re-run and no family is needed.
"""

from __future__ import annotations

import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.errors import VxError
from vx.evolve.guards import Guards
from vx.evolve.objective import EvalData, ObjectiveConfig, Score, engine_objective
from vx.evolve.store import RunStore

__all__ = ["round_score", "RecomputeError"]


class RecomputeError(VxError):
    """The run file lacks what recomputation needs (an unfinished run has no verdict matrix)."""


def round_score(store: RunStore, r: int) -> Score:
    meta = store.meta()
    rounds = {row["round"]: row for row in store.rounds()}
    if r not in rounds:
        raise RecomputeError(f"{store.path}: round {r} was not recorded")
    cols = store.matrix()
    if not cols:
        raise RecomputeError(f"{store.path}: no verdict matrix (the run did not finish)")
    damaged = f"{store.path}: damaged run file:"
    dev_rows = store.verdicts("dev")
    train_rows = store.verdicts("train")
    items = [v["item"] for v in train_rows] + [v["item"] for v in dev_rows]
    if not dev_rows:
        raise RecomputeError(f"{damaged} no dev verdicts (the objective is measured on dev)")
    unlabeled = next((v["item"] for v in dev_rows if v["label"] is None), None)
    if unlabeled is not None:
        raise RecomputeError(f"{damaged} verdicts.label of dev item {unlabeled!r} is NULL, expected its label")
    ops = sorted(cols)
    for o in ops:
        missing = next((i for i in items if i not in cols[o]), None)
        if missing is not None:
            raise RecomputeError(f"{damaged} the verdict matrix has no verdict of op {o!r} on item {missing!r}")
    arr = np.array([[cols[o][i] for o in ops] for i in items], dtype=np.int8)
    matrix = VerdictMatrix.from_array(arr, items, ops)
    train = np.array([True] * len(train_rows) + [False] * len(dev_rows))
    dev_p = np.array([np.nan] * len(train_rows) + [v["label"] for v in dev_rows], dtype=float)
    root = meta.get("root") or None
    if root is not None and root not in cols:
        raise RecomputeError(f"{damaged} the verdict matrix has no column of the root op {root!r}")
    cfg = meta.get("config")
    if not isinstance(cfg, dict):
        raise RecomputeError(f"{damaged} meta.config is missing")
    objective_cfg = ObjectiveConfig.from_mapping(
        meta.get("objective_constants") or {},
        abstain=cfg.get("abstain", "pass"),
        consensus=cfg.get("consensus", "per-class"),
    )
    guards = Guards.naive() if cfg.get("ablation") == "naive" else Guards()
    op_rows = {o["name"]: o for o in store.ops()}
    if r == 0:
        status = {e["op"]: e["status"] for e in store.events() if e["round"] == 0 and e["kind"] == "seed"}
        marginal: dict[str, float | None] = {n: None for n in status}
    else:
        if r - 1 not in rounds:
            raise RecomputeError(f"{damaged} round {r - 1} is missing (round {r} is scored from the pool after it)")
        prev = rounds[r - 1]["state"]["ops"]
        bad = next(
            (
                o
                for o in prev
                if not isinstance(o, dict)
                or not isinstance(o.get("name"), str)
                or not isinstance(o.get("status"), str)
                or "marginal" not in o
            ),
            None,
        )
        if bad is not None:
            raise RecomputeError(
                f"{damaged} rounds.state of round {r - 1}: an entry of 'ops' is {str(bad)[:80]}, "
                "expected an object with a name, a status and a marginal"
            )
        status = {o["name"]: o["status"] for o in prev}
        marginal = {o["name"]: o["marginal"] for o in prev}
        for e in store.events():
            if e["round"] == r and e["kind"] == "born":
                status[e["op"]] = e["status"]
                marginal[e["op"]] = None
    unknown = sorted(n for n in status if n not in cols or n not in op_rows)
    if unknown:
        raise RecomputeError(
            f"{damaged} op {unknown[0]!r} of round {r}'s pool is not in the "
            f"{'verdict matrix' if unknown[0] not in cols else 'ops table'}"
        )
    obj = engine_objective(
        EvalData(matrix, train, dev_p, root),
        statuses=status,
        marginals=marginal,
        classes={n: o["detects"] for n, o in op_rows.items()},
        llm_ops=[n for n, o in op_rows.items() if o["uses_llm"]],
        config=objective_cfg,
        guards=guards,
    )
    incumbent = parse(rounds[r]["incumbent"])
    absent = sorted(n for n in incumbent.op_names() if n not in cols)
    if absent:
        raise RecomputeError(
            f"{damaged} rounds.incumbent of round {r} uses op {absent[0]!r}, which the verdict matrix does not hold"
        )
    return obj.score_one(incumbent)
