"""Audit and record (docs/design.md §6, step 5): each round audited (numbers only, never read back) and written in
one transaction; the run's result chosen among the incumbents it held, and its final record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine that holds the run's state (the phases are its steps)
    from vx.evolve.loop import Evolution

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.compile import evaluate_batch
from vx.dsl.matrix import Packed
from vx.dsl.parse import parse
from vx.dsl.printer import to_text
from vx.dsl.semantics import to_finals
from vx.evolve.compose import normalize, prune_ops
from vx.evolve.estimates import estimates_table, op_estimates
from vx.evolve.guards import best_index
from vx.evolve.lifecycle import Event
from vx.evolve.objective import Objective, Score
from vx.evolve.store import now, op_rows, round_row
from vx.metrics import agreement

__all__ = ["EvolutionResult", "Round", "best_held", "commit", "false_alarms", "finish"]


@attrs.frozen
class EvolutionResult:
    run_path: str
    seed: Node
    best: Node
    seed_score: Score
    best_score: Score
    rounds: int
    summary: Mapping[str, Any]
    history: tuple[Mapping[str, Any], ...] = ()  # every round's row (evolve_family fills it in)
    llm_usage: Mapping[str, Any] | None = None  # with LLM roles on: calls, tokens, cost
    vx_path: str | None = None  # the evolved .vx file written

    @property
    def best_text(self) -> str:
        return to_text(self.best)

    def _repr_html_(self) -> str:  # notebook display (vx.evolve.html)
        from vx.evolve.html import result_html

        return result_html(self)


@attrs.frozen
class Round:
    """What one round did: returned by `Evolution._round`, written to the run file by `_commit`."""

    number: int
    score: Score  # the incumbent's, after Curate
    replaced: bool = False
    candidates: int = 0
    selectable: int = 0
    born: int = 0
    rejected: int = 0
    misses: int = 0  # dev items the incumbent passed though labelled fail (Sense)
    gaps: int = 0  # train items the pool is silent or split on (Sense: `sense.gap_mask`)
    clusters: tuple[Mapping[str, Any], ...] = ()  # the Grow step's clusters, summarised
    events: tuple[Event, ...] = ()  # births, rejections, retirements, promotions
    top: tuple[Mapping[str, Any], ...] = ()  # the best candidates considered (Select)
    seconds: float = 0.0
    label_model: Mapping[str, Any] | None = None  # the label-model consensus's estimates (per op), when on
    false_alarms: Mapping[str, Any] | None = None  # each op's estimated false-alarm rate, the pass evidence, the floor


def _text(node: Node | None) -> str:
    return "" if node is None else to_text(node)


def false_alarms(ev: Evolution, obj: Objective) -> dict[str, Any] | None:
    """Each op's estimated false-alarm rate on the pass evidence, the evidence and the floor (for the record)."""
    if obj.evidence is None:
        return None
    names = [
        n for n in ev.matrix.op_names if n != ev.root and ev.records.get(n) is not None and not ev.pool[n].baseline
    ]
    return {
        "estimator": obj.evidence.estimator,
        "evidence": obj.evidence.describe(),
        "pseudo_positives": round(obj.evidence.n, 3),
        "floor": obj.pass_floor,
        "tolerance": ev.objective_config.pass_tolerance,
        "ops": estimates_table(op_estimates(ev.matrix, obj.evidence, names)),
    }


def commit(ev: Evolution, done: Round) -> None:
    """Audit the incumbent (numbers only, never read back) and write the round in one transaction."""
    audit = dict(ev.auditor(ev.incumbent, ev.pool)) if ev.auditor is not None else None
    text = _text(ev.incumbent)
    if all(h["expression"] != text for h in ev.held):
        ev.held.append({"expression": text, "round": done.number})
    state = {
        "round": done.number,
        "incumbent": _text(ev.incumbent),
        "elites": [
            {"expression": e.text, "objective": e.objective, "a_dev": e.a_dev, "a_train": e.a_train} for e in ev.elites
        ],
        "ops": [rec.as_dict() for rec in ev.records.values()],
        "specs": {n: s for n, s in ev.specs.items()},
        "tried": sorted(ev.tried),
        "stale": ev.stale,
        "held": list(ev.held),
        **({"label_model": dict(done.label_model)} if done.label_model is not None else {}),
        **({"false_alarms": dict(done.false_alarms)} if done.false_alarms is not None else {}),
    }
    statuses = [rec.status for rec in ev.records.values()]
    row = round_row(
        done.number,
        done.score,
        incumbent=_text(ev.incumbent),
        replaced=done.replaced,
        candidates=done.candidates,
        selectable=done.selectable,
        statuses=statuses,
        born=done.born,
        rejected=done.rejected,
        misses=done.misses,
        gaps=done.gaps,
        seconds=done.seconds,
        state=state,
        audit=audit,
    )
    ev.store.write_round(
        row,
        ops=op_rows(ev.records, ev.pool, ev.specs),
        events=done.events,
        elites=state["elites"],
        candidates=list(done.top),
    )
    ev.on_round({**row, "pool_size": statuses.count("active") + statuses.count("shadow")})


def best_held(ev: Evolution, obj: Objective) -> tuple[Node, Score, dict[str, Any]]:
    """The run's result: the best incumbent it ever held, rescored under the final pool and
    consensus (an op retired since is pruned from it first; ties: fewer leaves, then the text),
    in its normal form -- what is written is what is scored. Curation can therefore never make the
    result worse than an incumbent the run held."""
    known = list(ev.records)
    first_round: dict[Node, int] = {}
    for h in ev.held + [{"expression": _text(ev.incumbent), "round": -1}]:
        node = parse(h["expression"], known_ops=known)
        pruned = prune_ops(node, [n for n in node.op_names() if ev.records[n].status == "retired"])
        # only selectable ops are ever written: never a shadow, a baseline or the root
        if pruned is not None and set(pruned.op_names()) <= set(ev._selectable()):
            first_round.setdefault(pruned, int(h["round"]))
    nodes = list(first_round)
    scores = obj.score(nodes)
    i = best_index(scores, nodes)
    if i is None:  # nothing selectable under the final pool: the final incumbent, as it is
        node = normalize(ev.incumbent)
        return (
            node,
            obj.score_one(node),
            {"from_round": None, "why": "no held incumbent is selectable under the final pool"},
        )
    r = first_round[nodes[i]]
    last = normalize(ev.incumbent)
    why = (
        "the final incumbent"
        if nodes[i] == last
        else f"the best incumbent held (first in round {r}), rescored under the final pool"
    )
    return nodes[i], scores.get(i), {"from_round": r if r >= 0 else None, "why": why, "held": len(ev.held)}


def finish(ev: Evolution) -> EvolutionResult:
    obj = ev._objective()
    best, best_score, chosen = best_held(ev, obj)
    seed_score = obj.score_one(ev.seed_node)
    verdicts: list[tuple] = []
    traces: list[tuple] = []
    codes = obj.final_codes(best)
    o, f = evaluate_batch(obj.compile([best]), ev.matrix)
    expr = Packed(o[0], f[0], ev.matrix.n_items).to_int8()
    ops_run = ([ev.root] if ev.root else []) + [n for n in best.op_names() if n != ev.root]
    cols = {n: ev.matrix.column(n) for n in ops_run}
    finals = to_finals(codes)
    for i, it in enumerate(ev.items):
        split = "train" if ev.train_mask[i] else "dev"
        label = None if split == "train" else float(ev.dev_p[i])
        verdicts.append((split, it.id, it.task, finals[i].value, int(expr[i]), label))
        for n in ops_run:
            traces.append((split, it.id, n, int(cols[n][i]), ev.messages.get((it.id, n), "")))
    locked_rows = getattr(ev.auditor, "verdicts", None)
    if callable(locked_rows):
        for item, task, final, e, tr in locked_rows(best, ev.pool):
            verdicts.append(("locked", item, task, final, e, None))
            traces.extend(("locked", item, n, v, msg) for n, (v, msg) in tr.items())
    dev_idx = np.flatnonzero(obj.data.dev)
    dev_labels = [float(ev.dev_p[i]) for i in dev_idx]
    fw = ev.objective_config.fail_weight
    seed_finals = to_finals(obj.final_codes(ev.seed_node))
    dev_seed = agreement([seed_finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
    dev_best = agreement([finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
    summary: dict[str, Any] = {
        "objective": {"seed": seed_score.as_dict(), "evolved": best_score.as_dict()},
        "dev": {"seed": dev_seed.as_dict(), "evolved": dev_best.as_dict()},
        "expressions": {"seed": _text(ev.seed_node), "evolved": _text(best)},
        "selected": chosen,
        **({"false_alarms": false_alarms(ev, obj)} if obj.evidence is not None else {}),
    }
    if ev.auditor is not None:
        summary["locked"] = {
            "seed": dict(ev.auditor(ev.seed_node, ev.pool)),
            "evolved": dict(ev.auditor(best, ev.pool)),
        }
    last = ev.store.last_state()
    arr = ev.matrix.to_array()
    splits = ["train" if t else "dev" for t in ev.train_mask.tolist()]
    matrix_rows = [
        (op, splits[i], it.id, int(arr[i, j]))
        for j, op in enumerate(ev.matrix.op_names)
        for i, it in enumerate(ev.items)
    ]
    ev.store.write_final(
        verdicts,
        traces,
        summary,
        {
            "status": "finished",
            "finished": now(),
            "best_expression": _text(best),
            "root": ev.root or "",
            "peer_ops": ",".join(o.name for o in ev.pool if o.is_peer),
        },
        matrix=matrix_rows,
    )
    return EvolutionResult(
        str(ev.store.path), ev.seed_node, best, seed_score, best_score, last[0] if last else 0, summary
    )
