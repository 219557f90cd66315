"""The metric loop: Sense → Grow → Select → Curate → Audit, round after round (docs/design.md §6).

Entry point: `Evolution(view, seed, ...)` with ``view`` a `vx.families.family.EvolutionView` —
unlabeled train, labeled dev, the op pool and the objective constants, never the locked labels.
The optional ``auditor`` is a callable ``auditor(expression, pool) -> {"agreement": …, …}`` built
*outside* the engine (`vx.evolve.audit.LockedAuditor`); its numbers are written to the run record
and never read by any step of the loop. Changing the locked labels therefore cannot change a
single choice of a run (`tests/evolve/test_loop.py::test_locked_labels_cannot_change_a_single_choice`).

The engine holds the run's fixed setup (`vx.evolve.state.RunSetup`) and its current state
(`vx.evolve.state.RunState`) and runs each round's phases in order, each a function of the state and
of what it needs: `sense` → `grow` → `select` → `curate` → `record.commit`.

Determinism: round ``r`` draws from ``numpy.random.default_rng([seed, r])``, sets are iterated in
sorted order and ties are broken by canonical text, so the same inputs and seed give a
byte-identical history — and a run resumed from its last committed round continues exactly as
the uninterrupted run would have.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.dsl.printer import to_text
from vx.evolve import curate, grow, record, select, sense
from vx.evolve.compose import Composer, Elite, EnumerativeComposer, EvolutionaryComposer
from vx.evolve.config import ABLATIONS, EvolutionError, EvolveConfig
from vx.evolve.lifecycle import Event, OpRecord, marginals
from vx.evolve.objective import Objective, ObjectiveConfig
from vx.evolve.record import Auditor, EvolutionResult, Round
from vx.evolve.state import Applied, RunSetup, RunState, canonical_columns, objective
from vx.evolve.store import RunStore, now
from vx.evolve.synthesize import Synthesizer, TemplateSynthesizer
from vx.families.family import EvolutionView, Item
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache
from vx.ops.pool import OpPool
from vx.ops.progress import Reporter
from vx.ops.specs import op_from_spec

__all__ = ["EvolveConfig", "Evolution", "EvolutionResult", "EvolutionError", "ABLATIONS", "Auditor", "Round"]


def _text(node: Node | None) -> str:
    return "" if node is None else to_text(node)


def run_setup(view: EvolutionView, seed: Node, pool: OpPool, config: EvolveConfig) -> RunSetup:
    """What a run over `view` holds fixed: the train items then the dev items, their labels, the pack's
    facts (taxonomy, classifier, evidence ops, template tags) and the rules it scores and curates under."""
    items: tuple[Item, ...] = (*view.train.items, *view.dev.items)
    train_mask = np.zeros(len(items), dtype=bool)
    train_mask[: len(view.train)] = True
    dev_p = np.full(len(items), np.nan)
    for i, it in enumerate(view.dev.items, len(view.train)):
        if it.label is None:
            raise EvolutionError(
                f"{view.dev.path}: dev item {it.id!r} has no label; every dev item is an anchor and needs one "
                "(label it with `vx anchor label`, or move it to the train split)"
            )
        dev_p[i] = float(it.label)
    pack = view.pack()  # the family's Pack contract: taxonomy, failure classifier, template tags
    return RunSetup(
        name=view.name,
        items=items,
        tasks=view.tasks,
        train_mask=train_mask,
        dev_p=dev_p,
        root=pool.root_name,
        seed=seed,
        objective_config=ObjectiveConfig.from_mapping(
            view.objective,
            abstain=config.abstain,
            consensus=config.consensus,
            pass_tolerance=config.pass_tolerance,
            estimator=config.estimator,
        ),
        guards=config.guards,
        policy=config.lifecycle,
        taxonomy=tuple(pack.taxonomy),
        classify=pack.classify_failure,
        gate=pack.gate,
        agreement=pack.agreement,
        template_families=tuple(dict.fromkeys((view.name, *pack.templates))),
    )


class Evolution:
    """One evolution run over an `EvolutionView`, recorded in a `RunStore`: it owns the run's state and
    runs the phases of each round in order."""

    def __init__(
        self,
        view: EvolutionView,
        seed: Node | str,
        *,
        store: RunStore,
        config: EvolveConfig | None = None,
        auditor: Auditor | None = None,
        composers: Sequence[Composer] | None = None,
        synthesizers: Sequence[Synthesizer] | None = None,
        cache: VerdictCache | None = None,
        on_round: Callable[[dict[str, Any]], None] | None = None,
        on_status: Callable[[str], None] | None = None,
        progress: bool | Reporter = False,
    ) -> None:
        if not isinstance(view, EvolutionView):
            raise TypeError(
                f"the evolution engine takes family.evolution_view() (an EvolutionView), not {type(view).__name__}"
            )
        config = config if config is not None else EvolveConfig()
        self.view = view
        self.config = config
        self.store = store
        self.auditor = auditor
        self.composers: list[Composer] = (
            list(composers)
            if composers is not None
            else [
                EnumerativeComposer(config.enum_max_size, config.enum_budget),
                EvolutionaryComposer(config.mutations_per_elite, config.crossovers, config.max_leaves),
            ]
        )
        self.synthesizers: list[Synthesizer] = (
            list(synthesizers)
            if synthesizers is not None
            else [TemplateSynthesizer(per_cluster=config.synth_per_cluster)]
        )
        self.cache = cache
        self.on_round = on_round or (lambda row: None)
        self.on_status = on_status or (lambda msg: None)
        self.progress = progress
        self._family_pool: OpPool = view.pool()
        seed_node = parse(seed, known_ops=self._family_pool.names) if isinstance(seed, str) else seed
        self.setup = run_setup(view, seed_node, self._family_pool, config)
        self._state: RunState | None = None

    # ------------------------------------------------------------------------------------------
    # the state, and what it holds

    @property
    def state(self) -> RunState:
        if self._state is None:
            raise EvolutionError("the run has not started: call run() first")
        return self._state

    @state.setter
    def state(self, state: RunState) -> None:
        self._state = state

    @property
    def pool(self) -> OpPool:
        return self._state.pool if self._state is not None else self._family_pool

    @property
    def specs(self) -> Mapping[str, Mapping[str, Any]]:
        return self._state.specs if self._state is not None else {}

    @property
    def incumbent(self) -> Node:
        return self._state.incumbent if self._state is not None else self.setup.seed

    @property
    def elites(self) -> tuple[Elite, ...]:
        return self.state.elites

    @property
    def records(self) -> Mapping[str, OpRecord]:
        return self.state.records

    @property
    def matrix(self) -> VerdictMatrix:
        return self.state.matrix

    @property
    def messages(self) -> Mapping[tuple[str, str], str]:
        return self.state.messages

    @property
    def items(self) -> tuple[Item, ...]:
        return self.setup.items

    @property
    def train_mask(self) -> np.ndarray:
        return self.setup.train_mask

    def objective(self) -> Objective:
        """The objective under the current state (what the next round scores under)."""
        return objective(self.setup, self.state)

    def selectable(self) -> list[str]:
        """The ops an expression may use now."""
        return self.state.selectable(self.setup.root)

    # ------------------------------------------------------------------------------------------
    # verdicts

    def apply(self, names: Sequence[str], pool: OpPool) -> Applied:
        """The verdict columns of the named ops of `pool` over every train and dev item (the `Apply` the
        phases are given)."""
        app = apply_ops(
            pool,
            list(self.setup.items),
            self.setup.tasks,
            ops=list(names),
            jobs=self.config.jobs,
            timeout=self.config.timeout,
            cache=self.cache,
            progress=self.progress,
            description=f"applying {len(names)} op(s)",
            peers=getattr(self.view, "peers", None),
        )
        return Applied(app.matrix, app.messages)

    def _initial_state(self, pool: OpPool, records: dict[str, OpRecord], **fields: Any) -> RunState:
        """The state over `pool` with every op's verdicts applied, root first."""
        applied = self.apply(pool.names, pool)
        matrix = applied.matrix.select_ops(canonical_columns(pool, self.setup.root))
        return RunState(pool, matrix, records, messages=dict(applied.messages), **fields)

    # ------------------------------------------------------------------------------------------
    # start / resume

    def _start(self) -> int:
        """Fresh run: apply the seed pool, score the seed, record round 0. Returns the next round."""
        setup, pool = self.setup, self._family_pool.copy()
        records = {o.name: OpRecord(o.name, o.status, "seed", 0) for o in pool}
        missing = [n for n in setup.seed.op_names() if n not in pool]
        if missing:
            raise EvolutionError("; ".join(pool.unknown_message(n) for n in missing) + " (in the seed expression)")
        selectable = {n for n, r in records.items() if r.status == "active" and n != setup.root}
        not_sel = [n for n in setup.seed.op_names() if n not in selectable]
        if not_sel:
            raise EvolutionError(
                f"the seed expression uses op(s) that are not selectable (root, shadow or retired): "
                f"{', '.join(not_sel)}"
            )
        self.on_status(f"applying {len(pool)} ops to {len(setup.items)} train+dev items")
        state = self._initial_state(pool, records, incumbent=setup.seed)
        self.store.set_meta({"status": "running", "started": now(), "seed_expression": _text(setup.seed)})
        t0 = time.perf_counter()
        obj = objective(setup, state)
        score = obj.score_one(state.incumbent)
        if score.selectable:
            state = attrs.evolve(state, elites=(Elite(state.incumbent, score.objective, score.a_dev, score.a_train),))
        for n, m in marginals(obj, state.incumbent).items():
            records[n].marginal = m
        events = tuple(Event(0, n, "seed", r.status) for n, r in records.items())
        done = Round(
            0,
            score,
            replaced=False,
            candidates=1,
            selectable=int(score.selectable),
            events=events,
            seconds=time.perf_counter() - t0,
            label_model=obj.label_model.summary() if obj.label_model is not None else None,
            false_alarms=record.false_alarms(state, setup, obj),
        )
        self.state = record.commit(state, done, store=self.store, auditor=self.auditor, on_round=self.on_round)
        return 1

    def _resume(self, last: int, saved: Mapping[str, Any]) -> int:
        """Resumed run: the state of round `last` rebuilt from the run file (its ops' verdicts applied
        again). Returns the next round."""
        self.store.truncate_after(last)
        pool = self._family_pool.copy()
        records: dict[str, OpRecord] = {}
        specs: dict[str, Mapping[str, Any]] = {}
        for rec in saved["ops"]:
            try:
                r = OpRecord(**rec)
            except TypeError as exc:
                raise EvolutionError(
                    f"{self.store.path}: damaged run file: rounds.state of round {last} has an "
                    f"unusable op record ({exc})"
                ) from None
            records[r.name] = r
            if r.origin == "synthesized":
                spec = saved["specs"][r.name]
                specs[r.name] = spec
                pool.add(
                    op_from_spec(spec, status=r.status, provenance={"origin": "synthesized", "round": r.born_round})
                )
            elif r.name in pool:
                pool.set_status(r.name, r.status)
            else:
                raise EvolutionError(f"the run uses op {r.name!r}, which the family's pool no longer has")
        known = list(records)
        incumbent = parse(saved["incumbent"], known_ops=known)
        elites = tuple(
            Elite(parse(e["expression"], known_ops=known), e["objective"], e["a_dev"], e["a_train"])
            for e in saved["elites"]
        )
        held = tuple(dict(h) for h in saved.get("held", [{"expression": saved["incumbent"], "round": last}]))
        self.on_status(f"resuming after round {last}: applying ops to {len(self.setup.items)} train+dev items")
        self.state = self._initial_state(
            pool,
            records,
            incumbent=incumbent,
            elites=elites,
            held=held,
            specs=specs,
            tried=frozenset(saved["tried"]),
            stale=int(saved["stale"]),
        )
        return last + 1

    # ------------------------------------------------------------------------------------------
    # the loop

    def run(self) -> EvolutionResult:
        last = self.store.last_state()
        start = self._start() if last is None else self._resume(*last)
        for r in range(start, self.config.rounds + 1):
            self.round(r)
            if self.config.patience is not None and self.state.stale >= self.config.patience:
                self.on_status(
                    f"early stop after round {r}: no improvement of at least "
                    f"{self.config.min_delta:g} in {self.config.patience} round(s)"
                )
                break
        return self.finish()

    def round(self, r: int) -> Round:
        """One round: Sense → Grow → Select → Curate, then Audit and record (docs/design.md §6); one module each."""
        t0 = time.perf_counter()
        rng = np.random.default_rng([self.config.seed, r])
        setup, state = self.setup, self.state
        obj = objective(setup, state)
        sensed = sense.sense(state, setup, obj)  # dev items the incumbent misses, train items the pool cannot decide
        clusters = sense.cluster(state, setup, sensed, self.config) if self.synthesizers else []
        growth, state = grow.grow(  # cluster → propose → admit
            state, setup, r, obj, clusters, sensed, synthesizers=self.synthesizers, apply=self.apply, say=self.on_status
        )
        if growth.born:
            obj = objective(setup, state)
        chosen, state = select.select(
            state, setup, r, rng, obj, sensed.gaps, clusters, composers=self.composers, config=self.config
        )
        curated, state = curate.curate(state, setup, r, obj)
        gained = chosen.replaced and chosen.gain >= self.config.min_delta and chosen.gain > 0
        state = attrs.evolve(state, stale=0 if gained else state.stale + 1)
        done = Round(
            r,
            obj.score_one(state.incumbent),
            replaced=chosen.replaced,
            candidates=len(chosen.nodes),
            selectable=int(chosen.scores.selectable.sum()),
            born=growth.born,
            rejected=growth.rejected,
            misses=int(sensed.misses.sum()),
            gaps=int(sensed.gaps.sum()),
            clusters=tuple(c.summary() for c in clusters),
            events=(*growth.events, *curated),
            top=chosen.top,
            seconds=time.perf_counter() - t0,
            label_model=obj.label_model.summary() if obj.label_model is not None else None,
            false_alarms=record.false_alarms(state, setup, obj),
        )
        self.state = record.commit(state, done, store=self.store, auditor=self.auditor, on_round=self.on_round)
        return done

    def finish(self) -> EvolutionResult:
        """The run's result, chosen among the incumbents it held, and its final record."""
        return record.finish(self.state, self.setup, self.objective(), store=self.store, auditor=self.auditor)
