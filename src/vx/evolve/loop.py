"""The metric loop: Sense → Grow → Select → Curate → Audit, round after round (DESIGN §6).

Entry point: `Evolution(view, seed, ...)` with ``view`` a `vx.families.family.EvolutionView` —
unlabeled train, labeled dev, the op pool and the objective constants, never the locked labels.
The optional ``auditor`` is a callable ``auditor(expression, pool) -> {"agreement": …, …}`` built
*outside* the engine (`vx.evolve.audit.LockedAuditor`); its numbers are written to the run record
and never read by any step of the loop. Changing the locked labels therefore cannot change a
single choice of a run (`tests/evolve/test_leakage.py`).

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

from vx.dsl.ast import Any as AnyNode, Node, OpRef
from vx.dsl.compile import evaluate_batch
from vx.dsl.matrix import Packed, VerdictMatrix
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import to_text
from vx.dsl.semantics import to_finals
from vx.errors import VxError
from vx.evolve.compose import (
    Composer,
    CompositionContext,
    Elite,
    EnumerativeComposer,
    EvolutionaryComposer,
    normalize,
    prune_op,
)
from vx.evolve.estimates import DEFAULT_ESTIMATOR, ESTIMATORS, estimates_table, op_estimates
from vx.evolve.guards import Guards, best_index, rank_key
from vx.evolve.lifecycle import (
    Event,
    LifecyclePolicy,
    OpRecord,
    admission_reason,
    birth_gate,
    marginals,
    promotable,
    update_streaks,
)
from vx.evolve.rules import known_rules
from vx.evolve.objective import (
    CONSENSUS_MODES,
    EvalData,
    Objective,
    ObjectiveConfig,
    Score,
    engine_objective,
    gap_mask,
)
from vx.evolve.store import RunStore, now, op_rows, round_row
from vx.evolve.synthesize import (
    Cluster,
    SynthesisRequest,
    Synthesizer,
    TemplateSynthesizer,
    cluster_items,
    family_templates,
)
from vx.families.family import EvolutionView, Item
from vx.metrics import agreement
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache
from vx.ops.core import Op
from vx.ops.pool import OpPool
from vx.ops.specs import TEMPLATES, SpecError, op_from_spec

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
    gaps: int = 0  # train items the pool is silent or split on (Sense: `objective.gap_mask`)
    clusters: tuple[Mapping[str, Any], ...] = ()  # the Grow step's clusters, summarised
    events: tuple[Event, ...] = ()  # births, rejections, retirements, promotions
    top: tuple[Mapping[str, Any], ...] = ()  # the best candidates considered (Select)
    seconds: float = 0.0
    label_model: Mapping[str, Any] | None = None  # the label-model consensus's estimates (per op), when on
    false_alarms: Mapping[str, Any] | None = None  # each op's estimated false-alarm rate, the pass evidence, the floor


@attrs.frozen
class Growth:
    """The Grow step's outcome: ops born and rejected, with their events."""

    born: int = 0
    rejected: int = 0
    events: tuple[Event, ...] = ()


def _text(node: Node | None) -> str:
    return "" if node is None else to_text(node)


class Evolution:
    """One evolution run over an `EvolutionView`, recorded in a `RunStore`."""

    def __init__(self, view: EvolutionView, seed: Node | str, *, store: RunStore, config: EvolveConfig = EvolveConfig(),
                 auditor: Auditor | None = None, composers: Sequence[Composer] | None = None,
                 synthesizers: Sequence[Synthesizer] | None = None, cache: VerdictCache | None = None,
                 on_round: Callable[[dict[str, Any]], None] | None = None,
                 on_status: Callable[[str], None] | None = None, progress: bool = False) -> None:
        if not isinstance(view, EvolutionView):
            raise TypeError("the evolution engine takes family.evolution_view() (an EvolutionView), "
                            f"not {type(view).__name__}")
        self.view = view
        self.config = config
        self.store = store
        self.auditor = auditor
        self.composers = list(composers) if composers is not None else [
            EnumerativeComposer(config.enum_max_size, config.enum_budget),
            EvolutionaryComposer(config.mutations_per_elite, config.crossovers, config.max_leaves)]
        self.synthesizers = list(synthesizers) if synthesizers is not None else [
            TemplateSynthesizer(per_cluster=config.synth_per_cluster)]
        self.cache = cache
        self.on_round = on_round or (lambda row: None)
        self.on_status = on_status or (lambda msg: None)
        self.progress = progress
        self.guards = config.guards
        self.policy = config.lifecycle
        self.objective_config = ObjectiveConfig.from_mapping(view.objective, abstain=config.abstain,
                                                             consensus=config.consensus,
                                                             pass_tolerance=config.pass_tolerance,
                                                             estimator=config.estimator)
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
        app = apply_ops(pool, self.items, self.view.tasks, ops=list(names), jobs=self.config.jobs,
                        timeout=self.config.timeout, cache=self.cache, progress=self.progress,
                        description=f"applying {len(names)} op(s)", peers=getattr(self.view, "peers", None))
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
        return engine_objective(self._data(), statuses={n: r.status for n, r in self.records.items()},
                                marginals={n: r.marginal for n, r in self.records.items()},
                                classes={o.name: o.detects for o in self.pool},
                                llm_ops=[o.name for o in self.pool if o.uses_llm], config=self.objective_config,
                                guards=self.guards, gate=self.gate, agreement=self.agreement,
                                floor_node=self.seed_node)

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
            raise EvolutionError(f"the seed expression uses op(s) that are not selectable (root, shadow or retired): "
                                 f"{', '.join(not_sel)}")
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
        self._commit(Round(0, score, replaced=False, candidates=1, selectable=int(score.selectable), events=events,
                           seconds=time.perf_counter() - t0,
                           label_model=obj.label_model.summary() if obj.label_model is not None else None,
                           false_alarms=self._false_alarms(obj)))
        return 1

    def _known_rules(self, obj: Objective) -> list[tuple[Node, str]]:
        """seed ∨ each peer op, the label model's wvote, SPADE (`vx.evolve.rules`), over the selectable ops."""
        if not self.config.known_rules:
            return []
        sel = self._selectable()
        peers = [o.name for o in self.pool if o.is_peer and not o.baseline and o.name in sel]
        return known_rules(obj, self.seed_node, sel, peers)

    def _false_alarms(self, obj: Objective) -> dict[str, Any] | None:
        """Each op's estimated false-alarm rate on the pass evidence, the evidence and the floor (for the record)."""
        if obj.evidence is None:
            return None
        names = [n for n in self.matrix.op_names if n != self.root and self.records.get(n) is not None
                 and not self.pool[n].baseline]
        return {"estimator": obj.evidence.estimator, "evidence": obj.evidence.describe(),
                "pseudo_positives": round(obj.evidence.n, 3), "floor": obj.pass_floor,
                "tolerance": self.objective_config.pass_tolerance,
                "ops": estimates_table(op_estimates(self.matrix, obj.evidence, names))}

    def _resume(self, last: int, state: Mapping[str, Any]) -> int:
        self.store.truncate_after(last)
        for rec in state["ops"]:
            try:
                r = OpRecord(**rec)
            except TypeError as exc:
                raise EvolutionError(f"{self.store.path}: damaged run file: rounds.state of round {last} has an "
                                     f"unusable op record ({exc})") from None
            self.records[r.name] = r
            if r.origin == "synthesized":
                spec = state["specs"][r.name]
                self.specs[r.name] = spec
                self.pool.add(op_from_spec(spec, status=r.status, provenance={"origin": "synthesized",
                                                                              "round": r.born_round}))
            elif r.name in self.pool:
                self.pool.set_status(r.name, r.status)
            else:
                raise EvolutionError(f"the run uses op {r.name!r}, which the family's pool no longer has")
        self.tried = set(state["tried"])
        self.stale = int(state["stale"])
        self.held = [dict(h) for h in state.get("held", [{"expression": state["incumbent"], "round": last}])]
        known = list(self.records)
        self.incumbent = parse(state["incumbent"], known_ops=known)
        self.elites = [Elite(parse(e["expression"], known_ops=known), e["objective"], e["a_dev"], e["a_train"])
                       for e in state["elites"]]
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
                self.on_status(f"early stop after round {r}: no improvement of at least "
                               f"{self.config.min_delta:g} in {self.config.patience} round(s)")
                break
        return self._finish()

    def _round(self, r: int) -> Round:
        """One round: Sense → Grow → Select → Curate, then Audit and record (DESIGN §6)."""
        t0 = time.perf_counter()
        rng = np.random.default_rng([self.config.seed, r])
        obj = self._objective()

        # --- Sense: dev items the incumbent misses, train items the pool cannot decide -----
        inc_codes = obj.final_codes(self.incumbent)
        misses = obj.data.dev & (self.dev_p < 0.5) & (inc_codes != 1)
        gaps = gap_mask(obj, self.train_mask)

        # --- Grow: cluster → propose → admit --------------------------------------------------
        clusters = self._cluster(misses, gaps)
        growth = self._grow(r, obj, clusters, misses, gaps, inc_codes)
        if growth.born:
            obj = self._objective()

        # --- Select ---------------------------------------------------------------------------
        nodes, origin = self._candidates(r, rng, obj, gaps, clusters)
        scores = obj.score(nodes)
        inc_score = scores.get(0)
        best_i = self._argbest(scores, nodes)
        replaced = False
        gain = 0.0
        if best_i is not None and best_i != 0:
            cand = scores.get(best_i)
            better = (not inc_score.selectable) or round(cand.objective, 12) > round(inc_score.objective, 12)
            if better:
                gain = cand.objective - inc_score.objective if inc_score.selectable else float("inf")
                self.incumbent = nodes[best_i]
                replaced = True
        self._update_elites(nodes, scores)
        top = self._top_candidates(nodes, origin, scores)

        # --- Curate ---------------------------------------------------------------------------
        events = list(growth.events)
        self._curate(r, obj, events)

        # --- bookkeeping ----------------------------------------------------------------------
        if replaced and gain >= self.config.min_delta and gain > 0:
            self.stale = 0
        else:
            self.stale += 1
        done = Round(r, obj.score_one(self.incumbent), replaced=replaced, candidates=len(nodes),
                     selectable=int(scores.selectable.sum()), born=growth.born, rejected=growth.rejected,
                     misses=int(misses.sum()), gaps=int(gaps.sum()), clusters=tuple(c.summary() for c in clusters),
                     events=tuple(events), top=tuple(top), seconds=time.perf_counter() - t0,
                     label_model=obj.label_model.summary() if obj.label_model is not None else None,
                     false_alarms=self._false_alarms(obj))
        self._commit(done)
        return done

    # ------------------------------------------------------------------------------------------
    # Grow: cluster → propose → admit

    def _cluster(self, misses: np.ndarray, gaps: np.ndarray) -> list[Cluster]:
        """Misses and gaps grouped by failure class (the pack's classifier, else the signature of the
        selectable ops that fire), recurring clusters only, largest first."""
        if not self.synthesizers:
            return []
        idx = np.flatnonzero(misses | gaps)
        if len(idx) == 0:
            return []
        arr = self.matrix.to_array()
        col = {n: j for j, n in enumerate(self.matrix.op_names)}
        sel = self._selectable()
        entries = []
        for i in idx.tolist():
            it = self.items[i]
            fired = [n for n in sel if arr[i, col[n]] == 1]
            sig = "sig:" + ("+".join(fired) if fired else "none")
            entries.append((it.id, self.view.tasks[it.task], it.output, it.meta, bool(misses[i]), sig))
        return cluster_items(entries, self.classify, min_cluster=self.config.min_cluster,
                             max_items=self.config.max_cluster_items)[: self.config.max_clusters]

    def _known_good(self, obj: Objective) -> tuple[tuple[Any, Any], ...]:
        """What inducers may treat as good: dev outputs labelled pass and the dev golden references
        (when a reference is an output of the same kind). Unlabeled train items only enter the gate."""
        good = []
        for i in np.flatnonzero(obj.data.dev).tolist():
            it = self.items[i]
            task = self.view.tasks[it.task]
            if self.dev_p[i] >= 0.5:
                good.append((task, it.output))
            if it.reference is not None and type(it.reference) is type(it.output):
                good.append((task, it.reference))
        return tuple(good)

    def _grow(self, r: int, obj: Objective, clusters: list[Cluster], misses: np.ndarray, gaps: np.ndarray,
              inc_codes: np.ndarray) -> Growth:
        if not clusters:
            return Growth()
        proposals, events = self._propose(r, obj, clusters)
        if not proposals:
            return Growth(events=tuple(events))
        born, rejected, admitted_events = self._admit(r, obj, proposals, gaps, inc_codes)
        return Growth(born, rejected, tuple(events + admitted_events))

    def _propose(self, r: int, obj: Objective, clusters: list[Cluster]
                 ) -> tuple[list[tuple[dict[str, Any], Cluster, str]], list[Event]]:
        """Every synthesizer's typed specs for every cluster, new names only (failures are events)."""
        req_args = (self._known_good(obj), tuple(t.schema() for t in family_templates(self.template_families)),
                    tuple(self.pool.catalog()), self.taxonomy, self.template_families)
        events: list[Event] = []
        proposals: list[tuple[dict[str, Any], Cluster, str]] = []
        seen: set[str] = set()
        for cl in clusters:
            good, templates, catalog, taxonomy, tags = req_args
            req = SynthesisRequest(self.view.name, cl, good, templates, catalog, taxonomy, tags)
            for synth in self.synthesizers:
                try:
                    specs = synth.propose(req)
                except Exception as exc:  # a synthesizer failure costs this cluster, not the run
                    events.append(Event(r, f"<{synth.name}>", "rejected", "", f"synthesizer failed: {exc}",
                                        {"cluster": cl.failure_class}))
                    continue
                for check, err in getattr(synth, "last_errors", ()) or ():
                    events.append(Event(r, f"<{synth.name}:{check}>", "rejected", "", f"inducer failed: {err}",
                                        {"cluster": cl.failure_class}))
                for spec in specs:
                    name = str(spec.get("name") or "")
                    if not name or name in seen or name in self.tried or name in self.pool:
                        continue
                    seen.add(name)
                    proposals.append((spec, cl, synth.name))
        return proposals, events

    def _admit(self, r: int, obj: Objective, proposals: list[tuple[dict[str, Any], Cluster, str]],
               gaps: np.ndarray, inc_codes: np.ndarray) -> tuple[int, int, list[Event]]:
        """Build each proposal, apply it to every train+dev item, and admit it through the birth gate
        and the redundancy rule (`vx.evolve.lifecycle.admission_reason`). Returns (born, rejected,
        events)."""
        events: list[Event] = []
        trial = self.pool.copy()
        built: list[tuple[Op, dict[str, Any], Cluster, str]] = []
        rejected = 0
        for spec, cl, sname in proposals:
            self.tried.add(spec["name"])
            try:
                o = op_from_spec(spec, status="active", provenance={"origin": "synthesized", "round": r,
                                                                   "cluster": cl.failure_class, "synthesizer": sname})
            except (SpecError, TypeError, ValueError) as exc:
                rejected += 1
                events.append(Event(r, spec["name"], "rejected", "", f"invalid spec: {exc}",
                                    {"spec": spec, "cluster": cl.failure_class}))
                continue
            trial.add(o)
            built.append((o, o.spec, cl, sname))
        if not built:
            return 0, rejected, events

        self.on_status(f"round {r}: applying {len(built)} synthesized op(s)")
        new = self._apply([o.name for o, *_ in built], pool=trial)
        labelled_good = obj.data.dev & (self.dev_p >= 0.5)
        unlabeled_good = self.train_mask & obj.cons_pass & (inc_codes == 0) & ~gaps
        pseudo_positive = obj.evidence.known_good() if obj.evidence is not None else None
        index = {it.id: i for i, it in enumerate(self.items)}
        item_tasks = np.array([it.task for it in self.items], dtype=object)
        existing_names = [n for n in self.matrix.op_names if self.records[n].status != "retired"]
        existing_cols = [self.matrix.column(n) for n in existing_names]
        admitted: list[str] = []
        for o, spec, cl, sname in built:
            column = new.column(o.name)
            cmask = np.zeros(len(self.items), dtype=bool)
            cmask[[index[i] for i in cl.items]] = True
            tpl = TEMPLATES.get(str(spec.get("check"))) if isinstance(spec, Mapping) else None
            gate = birth_gate(column, cmask, labelled_good, unlabeled_good, tolerance=self.policy.good_tolerance,
                              min_support=self.policy.min_support, presence=bool(tpl is not None and tpl.presence),
                              cluster_tasks=item_tasks, presence_tolerance=self.policy.presence_tolerance,
                              presence_lift=self.policy.presence_lift, pseudo_positive=pseudo_positive,
                              pseudo_positive_tolerance=self.policy.pseudo_positive_tolerance)
            evidence = {"spec": spec, "cluster": cl.summary(), "synthesizer": sname, **gate.evidence()}
            same = (np.stack(existing_cols) == column).mean(axis=1) if existing_cols else np.zeros(0)
            reason = admission_reason(gate, same, existing_names, self.policy)
            if reason:
                rejected += 1
                events.append(Event(r, o.name, "rejected", "", reason, evidence))
                continue
            status = "active" if (cl.anchored or not self.policy.shadow_tier) else "shadow"
            self.pool.add(o.with_status(status))
            self.records[o.name] = OpRecord(o.name, status, "synthesized", r)
            self.specs[o.name] = dict(spec)
            existing_names.append(o.name)
            existing_cols.append(column)
            admitted.append(o.name)
            events.append(Event(r, o.name, "born", status,
                                "anchored miss" if cl.anchored else "unlabeled gap", evidence))
        if admitted:
            self.matrix = self.matrix.with_ops(new.select_ops(admitted))
            self._reorder()
        return len(admitted), rejected, events

    # ------------------------------------------------------------------------------------------
    # Select

    def _candidates(self, r: int, rng: np.random.Generator, obj: Objective, gaps: np.ndarray,
                    clusters: Sequence[Cluster]) -> tuple[list[Node], list[str]]:
        sel = self._selectable()
        allowed = set(sel)
        gap_summary = ({"gaps": int(gaps.sum()), "clusters": [c.summary() for c in clusters]},)
        elites = tuple(attrs.evolve(e, shortcomings=self._shortcomings(obj, e.node)) for e in self.elites)
        ctx = CompositionContext(r, tuple(sel), self.incumbent, elites, tuple(self.pool.catalog()), gap_summary, rng)
        found: dict[Node, str] = {self.incumbent: "incumbent"}
        if set(self.seed_node.op_names()) <= allowed:
            found.setdefault(self.seed_node, "seed")
        for e in self.elites:
            found.setdefault(e.node, "elite")
        for comp in self.composers:
            for p in comp.propose(ctx):
                if isinstance(p, str):
                    try:
                        p = parse(p, known_ops=sel)
                    except VxSyntaxError:
                        continue
                if not set(p.op_names()) <= allowed:
                    continue
                found.setdefault(normalize(p), comp.name)
        for node, rule in self._known_rules(obj):
            found.setdefault(normalize(node), f"known rule: {rule}")
        # the anchor cover: the fewest selectable ops that flag every dev failure the pool can flag without
        # flagging a dev pass, alone and added to the incumbent -- so some candidate always meets the guard
        cover = [OpRef(n) for n in obj.guard_cover()]
        if cover:
            found.setdefault(normalize(AnyNode(cover)), "anchor cover")
            found.setdefault(normalize(AnyNode([self.incumbent, *cover])), "anchor cover")
        return list(found), list(found.values())

    def _shortcomings(self, obj: Objective, node: Node) -> tuple[dict[str, Any], ...]:
        """The dev items an expression gets wrong (what an LLM composer is shown about an elite)."""
        codes = obj.final_codes(node)
        out = []
        for i in np.flatnonzero(obj.data.dev).tolist():
            fail_label = self.dev_p[i] < 0.5
            says_fail = codes[i] == 1
            if fail_label != says_fail:
                out.append({"item": self.items[i].id, "kind": "missed drawback" if fail_label else "false alarm"})
        return tuple(out)

    def _argbest(self, scores, nodes: list[Node]) -> int | None:
        return best_index(scores, nodes, incumbent=0)

    def _update_elites(self, nodes: list[Node], scores) -> None:
        sel = np.flatnonzero(scores.selectable)
        if len(sel) == 0:
            self.elites = []
            return
        order = sel[np.lexsort((scores.size[sel], -np.round(scores.objective[sel], 12)))]
        head = order[: self.config.elite_size * 4].tolist()
        ranked = sorted(head, key=lambda i: rank_key(scores.objective[i], int(scores.size[i]), to_text(nodes[i])))
        self.elites = [Elite(nodes[i], float(scores.objective[i]), float(scores.a_dev[i]), float(scores.a_train[i]))
                       for i in ranked[: self.config.elite_size]]

    def _top_candidates(self, nodes: list[Node], origin: list[str], scores) -> list[dict[str, Any]]:
        k = self.config.record_candidates
        if k <= 0:
            return []
        key = np.where(scores.selectable, np.round(scores.objective, 12), -np.inf)
        order = np.lexsort((scores.size, -key))[: k * 2].tolist()
        ranked = sorted(order, key=lambda i: (-key[i], int(scores.size[i]), to_text(nodes[i])))[:k]
        out = []
        for i in ranked:
            s = scores.get(i)
            out.append({"expression": to_text(nodes[i]), "composer": origin[i], "objective": s.objective,
                        "a_dev": s.a_dev, "a_train": s.a_train, "cost": s.cost, "selectable": s.selectable,
                        "reason": s.reason})
        return out

    # ------------------------------------------------------------------------------------------
    # Curate

    def _harm(self, obj: Objective) -> dict[str, str]:
        """Evidence that an active op hurts, by op (the only grounds for retiring it; a zero marginal on
        the ten dev items is not): it fires on a dev item labelled pass that the root leaves open, or it
        is in the incumbent and removing it raises S."""
        out: dict[str, str] = {}
        dev_pass = obj.data.dev & (self.dev_p >= 0.5) & obj.decide
        for name in self._selectable():
            hits = np.flatnonzero((self.matrix.column(name) == 1) & dev_pass).tolist()
            if hits:
                ids = ", ".join(self.items[i].id for i in hits[:3]) + (" …" if len(hits) > 3 else "")
                out[name] = f"fires on {len(hits)} dev item(s) labelled pass ({ids})"
        names = [n for n in self.incumbent.op_names() if n != self.root]
        if len(names) > 1:
            pruned = [(n, prune_op(self.incumbent, n)) for n in names]
            pruned = [(n, normalize(p)) for n, p in pruned if p is not None]
            scores = obj.score([self.incumbent] + [p for _, p in pruned])
            merit = np.round(scores.objective + scores.cost, 12)  # leaf cost is not harm: S before its size cost
            base = float(merit[0])
            for k, (n, _p) in enumerate(pruned, 1):
                after = float(merit[k])
                if scores.selectable[k] and after > base:
                    out.setdefault(n, f"removing it from the incumbent raises S (before the size cost) from "
                                      f"{base:.4f} to {after:.4f}")
        return out

    def _curate(self, r: int, obj: Objective, events: list[Event]) -> None:
        margins = marginals(obj, self.incumbent)
        harm = self._harm(obj)
        distinct = self.incumbent.op_names()
        protected = frozenset({self.root} if self.root else set()) | (frozenset(distinct) if len(distinct) == 1 else frozenset())
        due = update_streaks(self.records, margins, harm, policy=self.policy, protected=protected)
        # Retire one op at a time -- the one whose retirement leaves the best incumbent (then by name) --
        # and measure the others' harm again on what is left: "removing it raises S" is a property of
        # the incumbent, and no longer holds of a second op once the first is gone.
        retired: list[str] = []
        while due:
            options = []
            for name in due:
                node = self.incumbent
                if name in node.op_names():
                    pruned = prune_op(node, name) if len(node.op_names()) > 1 else None
                    if pruned is None:
                        continue
                    node = normalize(pruned)
                options.append((name, node))
            if not options:
                break
            after = obj.score([node for _, node in options]).objective
            k = min(range(len(options)), key=lambda i: (-round(float(after[i]), 12), options[i][0]))
            name, self.incumbent = options[k]
            retired.append(name)
            rec = self.records[name]
            rec.status = "retired"
            self.pool.set_status(name, "retired")
            events.append(Event(r, name, "retired", "retired",
                                f"{harm[name]}, for {rec.streak} rounds (grace {self.policy.grace})",
                                {"marginal": rec.marginal, "harm": harm[name], "streak": rec.streak}))
            harm_now = self._harm(obj)
            for other in due:
                if other != name and other not in harm_now:  # no longer harmful once this one went
                    self.records[other].streak = 0
            due = [n for n in due if n != name and n in harm_now]
        if retired:
            elites = []
            for e in self.elites:
                node = e.node
                for name in retired:
                    node = prune_op(node, name) if node is not None else None
                node = normalize(node) if node is not None else None
                if node is not None and all(e2.node != node for e2 in elites):
                    elites.append(attrs.evolve(e, node=node))
            self.elites = elites
        # promotion of shadows whose verdicts raise dev agreement (never a baseline: it is compared with, not used)
        shadows = sorted(n for n, rec in self.records.items() if rec.status == "shadow" and not self.pool[n].baseline)
        for s, before, after, trial in promotable(obj, self.incumbent, shadows):
            self.records[s].status = "active"
            self.pool.set_status(s, "active")
            events.append(Event(r, s, "promoted", "active", "adding it to the incumbent raises dev agreement",
                                {"a_dev_before": before, "a_dev_after": after, "trial": to_text(trial)}))
        self._reorder()

    # ------------------------------------------------------------------------------------------
    # Audit and record

    def _commit(self, done: Round) -> None:
        """Audit the incumbent (numbers only, never read back) and write the round in one transaction."""
        audit = dict(self.auditor(self.incumbent, self.pool)) if self.auditor is not None else None
        text = _text(self.incumbent)
        if all(h["expression"] != text for h in self.held):
            self.held.append({"expression": text, "round": done.number})
        state = {
            "round": done.number,
            "incumbent": _text(self.incumbent),
            "elites": [{"expression": e.text, "objective": e.objective, "a_dev": e.a_dev, "a_train": e.a_train}
                       for e in self.elites],
            "ops": [rec.as_dict() for rec in self.records.values()],
            "specs": {n: s for n, s in self.specs.items()},
            "tried": sorted(self.tried),
            "stale": self.stale,
            "held": list(self.held),
            **({"label_model": dict(done.label_model)} if done.label_model is not None else {}),
            **({"false_alarms": dict(done.false_alarms)} if done.false_alarms is not None else {}),
        }
        statuses = [rec.status for rec in self.records.values()]
        row = round_row(done.number, done.score, incumbent=_text(self.incumbent), replaced=done.replaced,
                        candidates=done.candidates, selectable=done.selectable, statuses=statuses, born=done.born,
                        rejected=done.rejected, misses=done.misses, gaps=done.gaps, seconds=done.seconds,
                        state=state, audit=audit)
        self.store.write_round(row, ops=op_rows(self.records, self.pool, self.specs), events=done.events,
                               elites=state["elites"], candidates=list(done.top))
        self.on_round({**row, "pool_size": statuses.count("active") + statuses.count("shadow")})

    def _best_held(self, obj: Objective) -> tuple[Node, Score, dict[str, Any]]:
        """The run's result: the best incumbent it ever held, rescored under the final pool and
        consensus (an op retired since is pruned from it first; ties: fewer leaves, then the text),
        in its normal form -- what is written is what is scored. Curation can therefore never make the
        result worse than an incumbent the run held."""
        known = list(self.records)
        first_round: dict[Node, int] = {}
        for h in self.held + [{"expression": _text(self.incumbent), "round": -1}]:
            node: Node | None = parse(h["expression"], known_ops=known)
            for name in sorted(node.op_names()):
                if node is not None and self.records[name].status == "retired":
                    node = prune_op(node, name)
            # only selectable ops are ever written: never a shadow, a baseline or the root
            if node is not None and set(node.op_names()) <= set(self._selectable()):
                first_round.setdefault(normalize(node), int(h["round"]))
        nodes = list(first_round)
        scores = obj.score(nodes)
        i = best_index(scores, nodes)
        if i is None:  # nothing selectable under the final pool: the final incumbent, as it is
            node = normalize(self.incumbent)
            return node, obj.score_one(node), {"from_round": None, "why": "no held incumbent is selectable "
                                                                          "under the final pool"}
        r = first_round[nodes[i]]
        last = normalize(self.incumbent)
        why = ("the final incumbent" if nodes[i] == last else
               f"the best incumbent held (first in round {r}), rescored under the final pool")
        return nodes[i], scores.get(i), {"from_round": r if r >= 0 else None, "why": why,
                                         "held": len(self.held)}

    def _finish(self) -> EvolutionResult:
        obj = self._objective()
        best, best_score, chosen = self._best_held(obj)
        seed_score = obj.score_one(self.seed_node)
        verdicts: list[tuple] = []
        traces: list[tuple] = []
        codes = obj.final_codes(best)
        o, f = evaluate_batch(obj.compile([best]), self.matrix)
        expr = Packed(o[0], f[0], self.matrix.n_items).to_int8()
        ops_run = ([self.root] if self.root else []) + [n for n in best.op_names() if n != self.root]
        cols = {n: self.matrix.column(n) for n in ops_run}
        finals = to_finals(codes)
        for i, it in enumerate(self.items):
            split = "train" if self.train_mask[i] else "dev"
            label = None if split == "train" else float(self.dev_p[i])
            verdicts.append((split, it.id, it.task, finals[i].value, int(expr[i]), label))
            for n in ops_run:
                traces.append((split, it.id, n, int(cols[n][i]), self.messages.get((it.id, n), "")))
        locked_rows = getattr(self.auditor, "verdicts", None)
        if callable(locked_rows):
            for item, task, final, e, tr in locked_rows(best, self.pool):
                verdicts.append(("locked", item, task, final, e, None))
                traces.extend(("locked", item, n, v, msg) for n, (v, msg) in tr.items())
        dev_idx = np.flatnonzero(obj.data.dev)
        dev_labels = [float(self.dev_p[i]) for i in dev_idx]
        fw = self.objective_config.fail_weight
        seed_finals = to_finals(obj.final_codes(self.seed_node))
        dev_seed = agreement([seed_finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
        dev_best = agreement([finals[i] for i in dev_idx], dev_labels, fail_weight=fw)
        summary: dict[str, Any] = {
            "objective": {"seed": seed_score.as_dict(), "evolved": best_score.as_dict()},
            "dev": {"seed": dev_seed.as_dict(), "evolved": dev_best.as_dict()},
            "expressions": {"seed": _text(self.seed_node), "evolved": _text(best)},
            "selected": chosen,
            **({"false_alarms": self._false_alarms(obj)} if obj.evidence is not None else {}),
        }
        if self.auditor is not None:
            summary["locked"] = {"seed": dict(self.auditor(self.seed_node, self.pool)),
                                 "evolved": dict(self.auditor(best, self.pool))}
        last = self.store.last_state()
        arr = self.matrix.to_array()
        splits = ["train" if t else "dev" for t in self.train_mask.tolist()]
        matrix_rows = [(op, splits[i], it.id, int(arr[i, j]))
                       for j, op in enumerate(self.matrix.op_names) for i, it in enumerate(self.items)]
        self.store.write_final(verdicts, traces, summary, {"status": "finished", "finished": now(),
                                                           "best_expression": _text(best),
                                                           "root": self.root or "",
                                                           "peer_ops": ",".join(o.name for o in self.pool
                                                                                if o.is_peer)}, matrix=matrix_rows)
        return EvolutionResult(str(self.store.path), self.seed_node, best, seed_score, best_score,
                               last[0] if last else 0, summary)
