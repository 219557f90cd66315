"""Shared builders for the evolution tests."""

from __future__ import annotations

import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.evolve.objective import EvalData

ITEMS = ["t0", "t1", "t2", "t3", "d0", "d1", "d2", "d3"]
OPS = ["r", "a", "b", "c", "z"]
#            r   a   b   c   z
ROWS = [
    [0, 1, 1, 0, 1],  # t0   consensus (a, b, c): 2 fire vs 1 clean  -> FAIL
    [0, 0, 0, 0, 0],  # t1   3 clean                                 -> PASS
    [1, -1, -1, -1, -1],  # t2  the root fires                         -> not decided by the expression
    [0, 1, 0, -1, 1],  # t3   1 vs 1                                  -> tie, no consensus
    [0, 1, -1, 0, -1],  # d0   label fail
    [0, 0, 1, -1, -1],  # d1   label fail
    [0, 0, 0, 0, -1],  # d2   label pass
    [0, -1, 1, -1, -1],
]  # d3   label pass
LABELS = {"d0": 0.0, "d1": 0.0, "d2": 1.0, "d3": 1.0}


def hand_data(labels: dict[str, float] | None = None) -> EvalData:
    labels = LABELS if labels is None else labels
    m = VerdictMatrix.from_array(np.array(ROWS, dtype=np.int8), ITEMS, OPS)
    train = np.array([i.startswith("t") for i in ITEMS])
    dev_p = np.array([labels.get(i, np.nan) for i in ITEMS], dtype=float)
    return EvalData(m, train, dev_p, "r")
