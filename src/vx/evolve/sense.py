"""Sense (docs/design.md §6, step 1): what the incumbent misses and where the pool cannot decide.

* *misses* -- dev items labelled fail that the incumbent passes (or abstains on);
* *gaps* -- train items the root leaves open on which the active pool is silent or split (`gap_mask`);
* both grouped into recurring clusters by failure class (`cluster`), what Grow synthesizes for.
"""

from __future__ import annotations

import attrs
import numpy as np

from vx.evolve.config import EvolveConfig
from vx.evolve.objective import Objective
from vx.evolve.state import RunSetup, RunState
from vx.evolve.synthesize import Cluster, cluster_items

__all__ = ["GAP_SPLIT_SHARE", "Sensed", "cluster", "gap_mask", "sense"]

#: The gap rule's split share: the minority side of the active pool's weighted vote on an item must
#: hold at least this share of the total for the item to count as split.
GAP_SPLIT_SHARE = 1 / 3


def gap_mask(obj: Objective, train_mask: np.ndarray) -> np.ndarray:
    """The gap rule (docs/design.md §6, Sense): a train item the root leaves to the expression is a *gap*
    when the active pool is silent on it (no op opines) or split (both sides hold weight and the
    smaller at least `GAP_SPLIT_SHARE` of it). Gaps are where the pool needs a new detector."""
    total = obj.fire_w + obj.clean_w
    silent = total == 0
    split = (obj.fire_w > 0) & (obj.clean_w > 0) & (3 * np.minimum(obj.fire_w, obj.clean_w) >= total)
    return train_mask & obj.decide & (silent | split)


@attrs.frozen
class Sensed:
    """The incumbent's final verdicts, its dev misses and the train gaps (bool masks over the items)."""

    inc_codes: np.ndarray
    misses: np.ndarray
    gaps: np.ndarray


def sense(state: RunState, setup: RunSetup, obj: Objective) -> Sensed:
    """The incumbent's final verdicts, the dev items labelled fail it does not flag, and the train gaps."""
    inc_codes = obj.final_codes(state.incumbent)
    misses = obj.data.dev & (setup.dev_p < 0.5) & (inc_codes != 1)
    return Sensed(inc_codes, misses, gap_mask(obj, setup.train_mask))


def cluster(state: RunState, setup: RunSetup, sensed: Sensed, config: EvolveConfig) -> list[Cluster]:
    """Misses and gaps grouped by failure class (the pack's classifier, else the signature of the
    selectable ops that fire), recurring clusters only, largest first (at most ``config.max_clusters``)."""
    misses, gaps = sensed.misses, sensed.gaps
    idx = np.flatnonzero(misses | gaps)
    if len(idx) == 0:
        return []
    arr = state.matrix.to_array()
    col = {n: j for j, n in enumerate(state.matrix.op_names)}
    sel = state.selectable(setup.root)
    entries = []
    for i in idx.tolist():
        it = setup.items[i]
        fired = [n for n in sel if arr[i, col[n]] == 1]
        sig = "sig:" + ("+".join(fired) if fired else "none")
        entries.append((it.id, setup.tasks[it.task], it.output, it.meta, bool(misses[i]), sig))
    return cluster_items(entries, setup.classify, min_cluster=config.min_cluster, max_items=config.max_cluster_items)[
        : config.max_clusters
    ]
