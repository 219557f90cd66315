"""Audit and record (docs/design.md §6, step 5): each round audited (numbers only, never read back) and written in
one transaction; the run's result chosen among the incumbents it held, and its final record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

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
from vx.evolve.state import RunSetup, RunState
from vx.evolve.store import RunStore, now, op_rows, round_row
from vx.metrics import agreement

__all__ = ["Auditor", "EvolutionResult", "Round", "best_held", "commit", "false_alarms", "finish"]

#: Audits an expression over a pool on the locked split, built outside the engine
#: (`vx.evolve.audit.LockedAuditor`): numbers recorded, never read back.
Auditor = Callable[[Node, Any], Mapping[str, Any]]


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
    """What one round did: returned by `Evolution.round`, written to the run file by `commit`."""

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


def false_alarms(state: RunState, setup: RunSetup, obj: Objective) -> dict[str, Any] | None:
    """Each op's estimated false-alarm rate on the pass evidence, the evidence and the floor (for the record)."""
    if obj.evidence is None:
        return None
    names = [
        n
        for n in state.matrix.op_names
        if n != setup.root and state.records.get(n) is not None and not state.pool[n].baseline
    ]
    return {
        "estimator": obj.evidence.estimator,
        "evidence": obj.evidence.describe(),
        "pseudo_positives": round(obj.evidence.n, 3),
        "floor": obj.pass_floor,
        "tolerance": setup.objective_config.pass_tolerance,
        "ops": estimates_table(op_estimates(state.matrix, obj.evidence, names)),
    }


def commit(
    state: RunState,
    done: Round,
    *,
    store: RunStore,
    auditor: Auditor | None = None,
    on_round: Callable[[dict[str, Any]], None] = lambda row: None,
) -> RunState:
    """Audit the incumbent (numbers only, never read back) and write the round in one transaction.
    Returns the state with the incumbent among those held."""
    audit = dict(auditor(state.incumbent, state.pool)) if auditor is not None else None
    text = _text(state.incumbent)
    if all(h["expression"] != text for h in state.held):
        state = attrs.evolve(state, held=(*state.held, {"expression": text, "round": done.number}))
    elites = [
        {"expression": e.text, "objective": e.objective, "a_dev": e.a_dev, "a_train": e.a_train} for e in state.elites
    ]
    row_state = {
        "round": done.number,
        "incumbent": _text(state.incumbent),
        "elites": elites,
        "ops": [rec.as_dict() for rec in state.records.values()],
        "specs": {n: s for n, s in state.specs.items()},
        "tried": sorted(state.tried),
        "stale": state.stale,
        "held": list(state.held),
        **({"label_model": dict(done.label_model)} if done.label_model is not None else {}),
        **({"false_alarms": dict(done.false_alarms)} if done.false_alarms is not None else {}),
    }
    statuses = [rec.status for rec in state.records.values()]
    row = round_row(
        done.number,
        done.score,
        incumbent=_text(state.incumbent),
        replaced=done.replaced,
        candidates=done.candidates,
        selectable=done.selectable,
        statuses=statuses,
        born=done.born,
        rejected=done.rejected,
        misses=done.misses,
        gaps=done.gaps,
        seconds=done.seconds,
        state=row_state,
        audit=audit,
    )
    store.write_round(
        row,
        ops=op_rows(state.records, state.pool, state.specs),
        events=done.events,
        elites=elites,
        candidates=list(done.top),
    )
    on_round({**row, "pool_size": statuses.count("active") + statuses.count("shadow")})
    return state


def best_held(state: RunState, setup: RunSetup, obj: Objective) -> tuple[Node, Score, dict[str, Any]]:
    """The run's result: the best incumbent it ever held, rescored under the final pool and
    consensus (an op retired since is pruned from it first; ties: fewer leaves, then the text),
    in its normal form -- what is written is what is scored. Curation can therefore never make the
    result worse than an incumbent the run held."""
    known = list(state.records)
    selectable = set(state.selectable(setup.root))
    first_round: dict[Node, int] = {}
    for h in [*state.held, {"expression": _text(state.incumbent), "round": -1}]:
        node = parse(h["expression"], known_ops=known)
        pruned = prune_ops(node, [n for n in node.op_names() if state.records[n].status == "retired"])
        # only selectable ops are ever written: never a shadow, a baseline or the root
        if pruned is not None and set(pruned.op_names()) <= selectable:
            first_round.setdefault(pruned, int(h["round"]))
    nodes = list(first_round)
    scores = obj.score(nodes)
    i = best_index(scores, nodes)
    if i is None:  # nothing selectable under the final pool: the final incumbent, as it is
        node = normalize(state.incumbent)
        return (
            node,
            obj.score_one(node),
            {"from_round": None, "why": "no held incumbent is selectable under the final pool"},
        )
    r = first_round[nodes[i]]
    last = normalize(state.incumbent)
    why = (
        "the final incumbent"
        if nodes[i] == last
        else f"the best incumbent held (first in round {r}), rescored under the final pool"
    )
    return nodes[i], scores.get(i), {"from_round": r if r >= 0 else None, "why": why, "held": len(state.held)}


def finish(
    state: RunState, setup: RunSetup, obj: Objective, *, store: RunStore, auditor: Auditor | None = None
) -> EvolutionResult:
    """The run's result (`best_held`), its verdicts and traces on every item (the locked ones from the
    auditor), the seed-vs-evolved summary, and the final record written to the run file."""
    best, best_score, chosen = best_held(state, setup, obj)
    seed_score = obj.score_one(setup.seed)
    codes = obj.final_codes(best)
    finals = to_finals(codes)
    verdicts, traces = item_rows(state, setup, obj, best, finals)
    locked_rows = getattr(auditor, "verdicts", None)
    if callable(locked_rows):
        for item, task, final, e, tr in locked_rows(best, state.pool):
            verdicts.append(("locked", item, task, final, e, None))
            traces.extend(("locked", item, n, v, msg) for n, (v, msg) in tr.items())
    summary = run_summary(state, setup, obj, best, finals, seed_score, best_score, chosen)
    if auditor is not None:
        summary["locked"] = {
            "seed": dict(auditor(setup.seed, state.pool)),
            "evolved": dict(auditor(best, state.pool)),
        }
    last = store.last_state()
    store.write_final(
        verdicts,
        traces,
        summary,
        {
            "status": "finished",
            "finished": now(),
            "best_expression": _text(best),
            "root": setup.root or "",
            "peer_ops": ",".join(o.name for o in state.pool if o.is_peer),
        },
        matrix=matrix_rows(state, setup),
    )
    return EvolutionResult(str(store.path), setup.seed, best, seed_score, best_score, last[0] if last else 0, summary)


def item_rows(
    state: RunState, setup: RunSetup, obj: Objective, best: Node, finals: Any
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The result's verdict on every train and dev item, and the verdict and message of every op it runs."""
    verdicts: list[tuple[Any, ...]] = []
    traces: list[tuple[Any, ...]] = []
    o, f = evaluate_batch(obj.compile([best]), state.matrix)
    expr = Packed(o[0], f[0], state.matrix.n_items).to_int8()
    ops_run = ([setup.root] if setup.root else []) + [n for n in best.op_names() if n != setup.root]
    cols = {n: state.matrix.column(n) for n in ops_run}
    for i, it in enumerate(setup.items):
        split = "train" if setup.train_mask[i] else "dev"
        label = None if split == "train" else float(setup.dev_p[i])
        verdicts.append((split, it.id, it.task, finals[i].value, int(expr[i]), label))
        for n in ops_run:
            traces.append((split, it.id, n, int(cols[n][i]), state.messages.get((it.id, n), "")))
    return verdicts, traces


def run_summary(
    state: RunState,
    setup: RunSetup,
    obj: Objective,
    best: Node,
    finals: Any,
    seed_score: Score,
    best_score: Score,
    chosen: Mapping[str, Any],
) -> dict[str, Any]:
    """The seed against the result: objective, dev agreement, expressions, why this result, false alarms."""
    dev_idx = np.flatnonzero(obj.data.dev)
    dev_labels = [float(setup.dev_p[i]) for i in dev_idx]
    fw = setup.objective_config.fail_weight
    seed_finals = to_finals(obj.final_codes(setup.seed))
    dev_seed = agreement([seed_finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
    dev_best = agreement([finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
    return {
        "objective": {"seed": seed_score.as_dict(), "evolved": best_score.as_dict()},
        "dev": {"seed": dev_seed.as_dict(), "evolved": dev_best.as_dict()},
        "expressions": {"seed": _text(setup.seed), "evolved": _text(best)},
        "selected": dict(chosen),
        **({"false_alarms": false_alarms(state, setup, obj)} if obj.evidence is not None else {}),
    }


def matrix_rows(state: RunState, setup: RunSetup) -> list[tuple[str, str, str, int]]:
    """Every op's verdict on every train and dev item, as the run file's matrix table keeps them."""
    arr = state.matrix.to_array()
    splits = ["train" if t else "dev" for t in setup.train_mask.tolist()]
    return [
        (op, splits[i], it.id, int(arr[i, j]))
        for j, op in enumerate(state.matrix.op_names)
        for i, it in enumerate(setup.items)
    ]
