"""The state of an evolution run: what the run holds fixed (`RunSetup`) and what its rounds change (`RunState`).

A round's phases (`vx.evolve.sense`, `grow`, `select`, `curate`, `record`) are functions of these and of
the collaborators they need (an `Apply` that builds verdict columns, the composers, the synthesizers, the
run file). A phase that changes the state returns a new `RunState`; the one it was given is left as it
was. `vx.evolve.loop.Evolution` holds the current state and runs the phases in order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.matrix import VerdictMatrix
from vx.evolve.compose import Elite
from vx.evolve.guards import Guards
from vx.evolve.lifecycle import LifecyclePolicy, OpRecord
from vx.evolve.objective import EvalData, Objective, ObjectiveConfig, engine_objective
from vx.ops.item import Item
from vx.ops.pool import OpPool

__all__ = [
    "Applied",
    "Apply",
    "RunSetup",
    "RunState",
    "canonical_columns",
    "copy_records",
    "eval_data",
    "objective",
]


@attrs.frozen
class RunSetup:
    """What one run holds fixed: its items (train first, then dev) and what is known of them, the seed
    expression, and the rules it scores and curates under."""

    name: str  # the family's name (synthesis requests carry it)
    items: tuple[Item, ...]
    tasks: Mapping[str, Mapping[str, Any]] = attrs.field(eq=False, repr=False)
    train_mask: np.ndarray = attrs.field(eq=False, repr=False)  # bool per item: a train item
    dev_p: np.ndarray = attrs.field(eq=False, repr=False)  # P(pass) of each dev item, NaN on train
    root: str | None
    seed: Node
    objective_config: ObjectiveConfig
    guards: Guards = Guards()
    policy: LifecyclePolicy = LifecyclePolicy()
    taxonomy: tuple[str, ...] = ()  # the pack's failure classes
    classify: Callable[..., str | None] | None = attrs.field(default=None, eq=False, repr=False)
    gate: str | None = None  # the pack's evidence ops (`vx.evolve.estimates`)
    agreement: str | None = None
    template_families: tuple[str, ...] = ()  # the tags of the check templates synthesizers may use


@attrs.frozen
class RunState:
    """What a run's rounds change: the pool and its records, the verdict matrix over every train and dev
    item (root first, then the pool's other ops in pool order, retired ones included), the incumbent and
    the elites, every incumbent held, the synthesized ops' specs, the spec names tried, the rounds
    without a gain and the op messages (item id, op) -> message."""

    pool: OpPool = attrs.field(eq=False)
    matrix: VerdictMatrix = attrs.field(eq=False)
    records: Mapping[str, OpRecord]
    incumbent: Node
    elites: tuple[Elite, ...] = ()
    held: tuple[Mapping[str, Any], ...] = ()  # every incumbent held: {"expression", "round"}
    specs: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict)
    tried: frozenset[str] = frozenset()
    stale: int = 0
    messages: Mapping[tuple[str, str], str] = attrs.field(factory=dict, eq=False, repr=False)

    def selectable(self, root: str | None) -> list[str]:
        """The ops an expression may use: active ones but the root, sorted."""
        return sorted(n for n, r in self.records.items() if r.status == "active" and n != root)


@attrs.frozen
class Applied:
    """Verdict columns an `Apply` built: the matrix over the run's items and the ops' non-empty messages."""

    matrix: VerdictMatrix
    messages: Mapping[tuple[str, str], str] = attrs.field(factory=dict)


#: Builds the verdict columns of the named ops of a pool over every train and dev item of the run.
Apply = Callable[[Sequence[str], OpPool], Applied]


def canonical_columns(pool: OpPool, root: str | None) -> list[str]:
    """The matrix's column order: every op of the pool, retired ones included (their verdicts stay on
    record; they are neither selectable nor part of the consensus), root first."""
    names = [o.name for o in pool]
    if root is not None:
        names = [root] + [n for n in names if n != root]
    return names


def copy_records(records: Mapping[str, OpRecord]) -> dict[str, OpRecord]:
    """The op records as a new dict of new records (a phase changes its copies, never its input)."""
    return {n: attrs.evolve(r) for n, r in records.items()}


def eval_data(setup: RunSetup, state: RunState) -> EvalData:
    return EvalData(state.matrix, setup.train_mask, setup.dev_p, setup.root)


def objective(setup: RunSetup, state: RunState) -> Objective:
    """The objective a round scores under, given the state's matrix, records and pool."""
    return engine_objective(
        eval_data(setup, state),
        statuses={n: r.status for n, r in state.records.items()},
        marginals={n: r.marginal for n, r in state.records.items()},
        classes={o.name: o.detects for o in state.pool},
        llm_ops=[o.name for o in state.pool if o.uses_llm],
        config=setup.objective_config,
        guards=setup.guards,
        gate=setup.gate,
        agreement=setup.agreement,
        floor_node=setup.seed,
    )
