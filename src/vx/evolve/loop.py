"""The metric loop: Sense → Grow → Select → Curate → Audit, round after round (docs/design.md §6).

Entry point: `Evolution(view, seed, ...)` with ``view`` a `vx.families.family.EvolutionView` —
unlabeled train, labeled dev, the op pool and the objective constants, never the locked labels.
The optional ``auditor`` is a callable ``auditor(expression, pool) -> {"agreement": …, …}`` built
*outside* the engine (`vx.evolve.audit.LockedAuditor`); its numbers are written to the run record
and never read by any step of the loop. Changing the locked labels therefore cannot change a
single choice of a run (`tests/evolve/test_loop.py::test_locked_labels_cannot_change_a_single_choice`).

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
from vx.errors import VxError
from vx.evolve import curate, grow, record, select, sense
from vx.evolve.compose import Composer, Elite, EnumerativeComposer, EvolutionaryComposer
from vx.evolve.estimates import DEFAULT_ESTIMATOR, ESTIMATORS
from vx.evolve.guards import Guards
from vx.evolve.lifecycle import Event, LifecyclePolicy, OpRecord, marginals
from vx.evolve.objective import CONSENSUS_MODES, EvalData, Objective, ObjectiveConfig, engine_objective
from vx.evolve.record import EvolutionResult, Round
from vx.evolve.store import RunStore, now
from vx.evolve.synthesize import Synthesizer, TemplateSynthesizer
from vx.families.family import EvolutionView, Item
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache
from vx.ops.pool import OpPool
from vx.ops.specs import op_from_spec

__all__ = ["EvolveConfig", "Evolution", "EvolutionResult", "EvolutionError", "ABLATIONS", "Auditor", "Round"]

ABLATIONS = ("naive", "no-lifecycle")
Auditor = Callable[[Node, OpPool], Mapping[str, Any]]


class EvolutionError(VxError):
    """A run that cannot start or continue (bad seed expression, incompatible resume...)."""


@attrs.frozen
class EvolveConfig:
    """Run options. Everything here is stored with the run; a resumed run reuses it."""

    rounds: int = 10  # rounds after round 0 (the seed)
    seed: int = 0  # round r draws from numpy.random.default_rng([seed, r])
    ablation: str | None = None  # None, "naive" or "no-lifecycle"
    patience: int | None = None  # early stop after this many rounds without a gain >= min_delta (off: None)
    min_delta: float = 0.0
    elite_size: int = 12  # expressions kept in the elite archive
    enum_max_size: int = 3  # subset seeding: any/all/vote over up to this many ops
    enum_budget: int = 4000  # ... sampled when the full enumeration is larger
    mutations_per_elite: int = 40
    crossovers: int = 200
    max_leaves: int = 8  # mutated / crossed candidates larger than this are dropped
    min_cluster: int = 2  # a recurring cluster has at least this many misses and gaps
    max_clusters: int = 4  # clusters synthesized for per round (most misses first)
    max_cluster_items: int = 24  # items of a cluster shown to synthesizers and used by the birth gate
    synth_per_cluster: int = 8  # specs the offline synthesizer proposes per cluster
    record_candidates: int = 50  # candidates stored per round (the best ones)
    jobs: int | None = None  # worker processes for applying ops (None: CPU count)
    timeout: float = 10.0  # seconds per op call
    abstain: str = "pass"  # how the objective scores a final ABSTAIN ("pass" or "exclude")
    consensus: str = "corroborated"  # the train consensus (`vx.evolve.objective.CONSENSUS_MODES`)
    pass_tolerance: float | None = None  # the pass-recall floor's tolerance (None: the family's, else 0.01)
    estimator: str = DEFAULT_ESTIMATOR  # the pass evidence (`vx.evolve.estimates.ESTIMATORS`)
    known_rules: bool = True  # also consider seed ∨ each peer op, the label model's wvote and SPADE

    def __attrs_post_init__(self) -> None:
        if self.ablation is not None and self.ablation not in ABLATIONS:
            raise EvolutionError(f"unknown ablation {self.ablation!r}; choose one of {', '.join(ABLATIONS)}")
        if self.rounds < 0:
            raise EvolutionError(f"rounds must be 0 or more, not {self.rounds}")
        if self.abstain not in ("pass", "exclude"):
            raise EvolutionError(f"abstain must be pass or exclude, not {self.abstain!r}")
        if self.consensus not in CONSENSUS_MODES:
            raise EvolutionError(f"consensus must be one of {', '.join(CONSENSUS_MODES)}, not {self.consensus!r}")
        if self.estimator not in ESTIMATORS:
            raise EvolutionError(f"estimator must be one of {', '.join(ESTIMATORS)}, not {self.estimator!r}")
        if self.pass_tolerance is not None and not 0.0 <= self.pass_tolerance <= 1.0:
            raise EvolutionError(f"pass tolerance must be between 0 and 1, not {self.pass_tolerance!r}")

    @property
    def guards(self) -> Guards:
        return Guards.naive() if self.ablation == "naive" else Guards()

    @property
    def lifecycle(self) -> LifecyclePolicy:
        return LifecyclePolicy.off() if self.ablation == "no-lifecycle" else LifecyclePolicy()

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvolveConfig:
        fields = {f.name for f in attrs.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in fields})


def _text(node: Node | None) -> str:
    return "" if node is None else to_text(node)


class Evolution:
    """One evolution run over an `EvolutionView`, recorded in a `RunStore`."""

    def __init__(
        self,
        view: EvolutionView,
        seed: Node | str,
        *,
        store: RunStore,
        config: EvolveConfig = EvolveConfig(),
        auditor: Auditor | None = None,
        composers: Sequence[Composer] | None = None,
        synthesizers: Sequence[Synthesizer] | None = None,
        cache: VerdictCache | None = None,
        on_round: Callable[[dict[str, Any]], None] | None = None,
        on_status: Callable[[str], None] | None = None,
        progress: bool = False,
    ) -> None:
        if not isinstance(view, EvolutionView):
            raise TypeError(
                f"the evolution engine takes family.evolution_view() (an EvolutionView), not {type(view).__name__}"
            )
        self.view = view
        self.config = config
        self.store = store
        self.auditor = auditor
        self.composers = (
            list(composers)
            if composers is not None
            else [
                EnumerativeComposer(config.enum_max_size, config.enum_budget),
                EvolutionaryComposer(config.mutations_per_elite, config.crossovers, config.max_leaves),
            ]
        )
        self.synthesizers = (
            list(synthesizers)
            if synthesizers is not None
            else [TemplateSynthesizer(per_cluster=config.synth_per_cluster)]
        )
        self.cache = cache
        self.on_round = on_round or (lambda row: None)
        self.on_status = on_status or (lambda msg: None)
        self.progress = progress
        self.guards = config.guards
        self.policy = config.lifecycle
        self.objective_config = ObjectiveConfig.from_mapping(
            view.objective,
            abstain=config.abstain,
            consensus=config.consensus,
            pass_tolerance=config.pass_tolerance,
            estimator=config.estimator,
        )
        # items: train first, then dev
        self.items: list[Item] = list(view.train.items) + list(view.dev.items)
        n = len(self.items)
        self.train_mask = np.zeros(n, dtype=bool)
        self.train_mask[: len(view.train)] = True
        self.dev_p = np.full(n, np.nan)
        for i, it in enumerate(view.dev.items, len(view.train)):
            self.dev_p[i] = float(it.label)
        self.pool: OpPool = view.pool()
        self.root = self.pool.root_name
        self.seed_node = parse(seed, known_ops=self.pool.names) if isinstance(seed, str) else seed
        self.messages: dict[tuple[str, str], str] = {}
        self.records: dict[str, OpRecord] = {}
        self.specs: dict[str, dict[str, Any]] = {}
        self.tried: set[str] = set()
        self.incumbent: Node = self.seed_node
        self.elites: list[Elite] = []
        self.held: list[dict[str, Any]] = []  # every incumbent the run has held: {"expression", "round"}
        self.stale = 0
        self.matrix: VerdictMatrix | None = None
        pack = view.pack()  # the family's Pack contract: taxonomy, failure classifier, template tags
        self.taxonomy, self.classify = pack.taxonomy, pack.classify_failure
        self.gate, self.agreement = pack.gate, pack.agreement
        self.template_families = tuple(dict.fromkeys((view.name, *pack.templates)))

    # ------------------------------------------------------------------------------------------
    # verdicts

    def _apply(self, names: Sequence[str], pool: OpPool | None = None) -> VerdictMatrix:
        pool = pool or self.pool
        app = apply_ops(
            pool,
            self.items,
            self.view.tasks,
            ops=list(names),
            jobs=self.config.jobs,
            timeout=self.config.timeout,
            cache=self.cache,
            progress=self.progress,
            description=f"applying {len(names)} op(s)",
            peers=getattr(self.view, "peers", None),
        )
        self.messages.update(app.messages)
        return app.matrix

    def _canonical_columns(self) -> list[str]:
        # every op of the pool, retired ones included (their verdicts stay on record; they are
        # neither selectable nor part of the consensus), root first
        names = [o.name for o in self.pool]
        if self.root is not None:
            names = [self.root] + [n for n in names if n != self.root]
        return names

    def _reorder(self) -> None:
        assert self.matrix is not None
        self.matrix = self.matrix.select_ops(self._canonical_columns())

    def _data(self) -> EvalData:
        assert self.matrix is not None
        return EvalData(self.matrix, self.train_mask, self.dev_p, self.root)

    def _selectable(self) -> list[str]:
        return sorted(n for n, r in self.records.items() if r.status == "active" and n != self.root)

    def _objective(self) -> Objective:
        return engine_objective(
            self._data(),
            statuses={n: r.status for n, r in self.records.items()},
            marginals={n: r.marginal for n, r in self.records.items()},
            classes={o.name: o.detects for o in self.pool},
            llm_ops=[o.name for o in self.pool if o.uses_llm],
            config=self.objective_config,
            guards=self.guards,
            gate=self.gate,
            agreement=self.agreement,
            floor_node=self.seed_node,
        )

    # ------------------------------------------------------------------------------------------
    # start / resume

    def _start(self) -> int:
        """Fresh run: apply the seed pool, score the seed, record round 0. Returns the next round."""
        for o in self.pool:
            self.records[o.name] = OpRecord(o.name, o.status, "seed", 0)
        missing = [n for n in self.seed_node.op_names() if n not in self.pool]
        if missing:
            raise EvolutionError("; ".join(self.pool.unknown_message(n) for n in missing) + " (in the seed expression)")
        not_sel = [n for n in self.seed_node.op_names() if n not in self._selectable()]
        if not_sel:
            raise EvolutionError(
                f"the seed expression uses op(s) that are not selectable (root, shadow or retired): "
                f"{', '.join(not_sel)}"
            )
        self.on_status(f"applying {len(self.pool)} ops to {len(self.items)} train+dev items")
        self.matrix = self._apply(self.pool.names)
        self._reorder()
        self.store.set_meta({"status": "running", "started": now(), "seed_expression": _text(self.seed_node)})
        t0 = time.perf_counter()
        obj = self._objective()
        score = obj.score_one(self.incumbent)
        self.elites = [Elite(self.incumbent, score.objective, score.a_dev, score.a_train)] if score.selectable else []
        for n, m in marginals(obj, self.incumbent).items():
            self.records[n].marginal = m
        events = tuple(Event(0, n, "seed", r.status) for n, r in self.records.items())
        record.commit(
            self,
            Round(
                0,
                score,
                replaced=False,
                candidates=1,
                selectable=int(score.selectable),
                events=events,
                seconds=time.perf_counter() - t0,
                label_model=obj.label_model.summary() if obj.label_model is not None else None,
                false_alarms=record.false_alarms(self, obj),
            ),
        )
        return 1

    def _resume(self, last: int, state: Mapping[str, Any]) -> int:
        self.store.truncate_after(last)
        for rec in state["ops"]:
            try:
                r = OpRecord(**rec)
            except TypeError as exc:
                raise EvolutionError(
                    f"{self.store.path}: damaged run file: rounds.state of round {last} has an "
                    f"unusable op record ({exc})"
                ) from None
            self.records[r.name] = r
            if r.origin == "synthesized":
                spec = state["specs"][r.name]
                self.specs[r.name] = spec
                self.pool.add(
                    op_from_spec(spec, status=r.status, provenance={"origin": "synthesized", "round": r.born_round})
                )
            elif r.name in self.pool:
                self.pool.set_status(r.name, r.status)
            else:
                raise EvolutionError(f"the run uses op {r.name!r}, which the family's pool no longer has")
        self.tried = set(state["tried"])
        self.stale = int(state["stale"])
        self.held = [dict(h) for h in state.get("held", [{"expression": state["incumbent"], "round": last}])]
        known = list(self.records)
        self.incumbent = parse(state["incumbent"], known_ops=known)
        self.elites = [
            Elite(parse(e["expression"], known_ops=known), e["objective"], e["a_dev"], e["a_train"])
            for e in state["elites"]
        ]
        self.on_status(f"resuming after round {last}: applying ops to {len(self.items)} train+dev items")
        self.matrix = self._apply(self.pool.names)
        self._reorder()
        return last + 1

    # ------------------------------------------------------------------------------------------
    # the loop

    def run(self) -> EvolutionResult:
        last = self.store.last_state()
        start = self._start() if last is None else self._resume(*last)
        for r in range(start, self.config.rounds + 1):
            self._round(r)
            if self.config.patience is not None and self.stale >= self.config.patience:
                self.on_status(
                    f"early stop after round {r}: no improvement of at least "
                    f"{self.config.min_delta:g} in {self.config.patience} round(s)"
                )
                break
        return record.finish(self)

    def _round(self, r: int) -> Round:
        """One round: Sense → Grow → Select → Curate, then Audit and record (docs/design.md §6); one module each."""
        t0 = time.perf_counter()
        rng = np.random.default_rng([self.config.seed, r])
        obj = self._objective()
        sensed = sense.sense(self, obj)  # dev items the incumbent misses, train items the pool cannot decide
        clusters = sense.cluster(self, sensed)
        growth = grow.grow(self, r, obj, clusters, sensed)  # cluster → propose → admit
        if growth.born:
            obj = self._objective()
        chosen = select.select(self, r, rng, obj, sensed.gaps, clusters)
        events = list(growth.events)
        curate.curate(self, r, obj, events)
        if chosen.replaced and chosen.gain >= self.config.min_delta and chosen.gain > 0:
            self.stale = 0
        else:
            self.stale += 1
        done = Round(
            r,
            obj.score_one(self.incumbent),
            replaced=chosen.replaced,
            candidates=len(chosen.nodes),
            selectable=int(chosen.scores.selectable.sum()),
            born=growth.born,
            rejected=growth.rejected,
            misses=int(sensed.misses.sum()),
            gaps=int(sensed.gaps.sum()),
            clusters=tuple(c.summary() for c in clusters),
            events=tuple(events),
            top=chosen.top,
            seconds=time.perf_counter() - t0,
            label_model=obj.label_model.summary() if obj.label_model is not None else None,
            false_alarms=record.false_alarms(self, obj),
        )
        record.commit(self, done)
        return done
