"""Evolution of verifiers: the anchored metric loop (docs/design.md §5, §6, §10).

objective (S = A_dev·A_train^w − C) · guards (fail-closed, validity gate, best-so-far) · batch
(many candidates over one verdict matrix) · lifecycle (birth gate, shadows, retirement) ·
synthesize (clusters, `Synthesizer`) · compose (`Composer`, enumeration, mutation, crossover) ·
loop (`Evolution`, the engine; takes an EvolutionView) · store (the SQLite run record) ·
audit (`LockedAuditor`, built outside the engine) · run (`evolve_family`, the public entry point).
"""

from vx.evolve.compose import Composer, CompositionContext, Elite
from vx.evolve.loop import (
    ABLATIONS,
    Evolution,
    EvolutionError,
    EvolutionResult,
    EvolveConfig,
)
from vx.evolve.objective import Objective, ObjectiveConfig, Score
from vx.evolve.synthesize import Cluster, SynthesisRequest, Synthesizer

__all__ = [
    "ABLATIONS",
    "Cluster",
    "Composer",
    "CompositionContext",
    "Elite",
    "Evolution",
    "EvolutionError",
    "EvolutionResult",
    "EvolveConfig",
    "Objective",
    "ObjectiveConfig",
    "Score",
    "SynthesisRequest",
    "Synthesizer",
    "evolve_family",
]


def __getattr__(name: str):
    if name == "evolve_family":  # imports the families layer; loaded on demand
        from vx.evolve.run import evolve_family

        return evolve_family
    raise AttributeError(name)
