"""The options of an evolution run (`EvolveConfig`) and the error a run that cannot start or go on raises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vx.errors import VxError
from vx.evolve.estimates import DEFAULT_ESTIMATOR, ESTIMATORS
from vx.evolve.guards import Guards
from vx.evolve.lifecycle import LifecyclePolicy
from vx.evolve.objective import CONSENSUS_MODES

__all__ = ["ABLATIONS", "EvolutionError", "EvolveConfig"]

ABLATIONS = ("naive", "no-lifecycle")


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
