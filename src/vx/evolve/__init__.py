"""Evolution of verifiers: the anchored metric loop (docs/design.md §5, §6, §10).

The public entry point is `run.evolve_family`; `loop.Evolution` is the engine (it takes an `EvolutionView`, never
the locked labels) and runs the round's phases, one module each (`sense`, `grow`, `select`, `curate`, `record`),
over the objective (`objective`, `guards`, `estimates`, `labelmodel`, `rules`), the op lifecycle (`lifecycle`,
`synthesize`, `compose`) and the run record (`store`, `audit`, `recompute`). docs/ARCHITECTURE.md lists every
module.
"""

from vx.evolve.compose import Composer, CompositionContext, Elite
from vx.evolve.config import ABLATIONS, EvolutionError, EvolveConfig
from vx.evolve.loop import Evolution
from vx.evolve.objective import Objective, ObjectiveConfig, Score
from vx.evolve.record import EvolutionResult
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
