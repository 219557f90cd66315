"""The audit: agreement of a verifier with the locked split — measurement only.

`LockedAuditor` is built *outside* the evolution engine from ``family.audit()`` (the only holder
of locked labels) and handed to it as a plain callable: ``auditor(expression, pool)`` returns
numbers (agreement, recall-weighted agreement, κ, coverage, n). The engine writes them to the run
record and never reads them back; no step of the loop receives the labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vx.dsl.ast import Node
from vx.dsl.compile import BatchEvaluator
from vx.dsl.semantics import final_codes, to_finals
from vx.families.family import Audit
from vx.metrics import agreement
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache
from vx.ops.pool import OpPool
from vx.ops.progress import Reporter

__all__ = ["LockedAuditor"]


class LockedAuditor:
    """Scores expressions on the locked split; keeps the labels to itself."""

    def __init__(
        self,
        audit: Audit,
        tasks: Mapping[str, Mapping[str, Any]],
        *,
        cache: VerdictCache | None = None,
        jobs: int | None = None,
        timeout: float = 10.0,
        fail_weight: float = 2.0,
        progress: bool | Reporter = False,
    ) -> None:
        self._labels = audit.labels()
        self._items = list(audit.split.items)
        self._tasks = tasks
        self._cache = cache
        self._jobs = jobs
        self._timeout = timeout
        self._fail_weight = fail_weight
        self._progress = progress
        self._memo: dict[tuple[str, str], tuple[np.ndarray, dict[str, str]]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def _columns(self, pool: OpPool, names: list[str]) -> dict[str, tuple[np.ndarray, dict[str, str]]]:
        need = [n for n in names if (n, pool[n].version) not in self._memo]
        if need:
            app = apply_ops(
                pool,
                self._items,
                self._tasks,
                ops=need,
                jobs=self._jobs,
                timeout=self._timeout,
                cache=self._cache,
                progress=self._progress,
                description="audit: locked items",
            )
            for n in need:
                msgs = {it.id: app.message(it.id, n) for it in self._items}
                self._memo[(n, pool[n].version)] = (app.matrix.column(n), msgs)
        return {n: self._memo[(n, pool[n].version)] for n in names}

    def _evaluate(self, expr: Node, pool: OpPool) -> tuple[np.ndarray, np.ndarray, dict]:
        root = pool.root_name
        names = ([root] if root else []) + [n for n in expr.op_names() if n != root]
        cols = self._columns(pool, names)
        from vx.dsl.matrix import VerdictMatrix

        m = VerdictMatrix.from_columns({n: c for n, (c, _) in cols.items()}, [it.id for it in self._items])
        e = BatchEvaluator(m, memo_bytes=0).evaluate_int8(expr)
        finals = final_codes(cols[root][0] if root else None, e)
        return finals, e, cols

    def __call__(self, expr: Node, pool: OpPool) -> dict[str, Any]:
        if not self._items:
            return {"n": 0}
        finals, _e, _cols = self._evaluate(expr, pool)
        a = agreement(to_finals(finals), self._labels, fail_weight=self._fail_weight)
        return {
            "agreement": a.accuracy,
            "recall_weighted": a.recall_weighted,
            "kappa": a.kappa,
            "coverage": a.coverage,
            "n": a.n,
            "tp": a.tp,
            "fp": a.fp,
            "tn": a.tn,
            "fn": a.fn,
        }

    def verdicts(self, expr: Node, pool: OpPool) -> list[tuple[str, str, str, int, dict[str, tuple[int, str]]]]:
        """Per locked item: (item id, task id, final verdict, expression verdict, {op: (verdict, message)}).
        Verdicts only — never the labels."""
        if not self._items:
            return []
        finals, e, cols = self._evaluate(expr, pool)
        out = []
        for i, (it, fin) in enumerate(zip(self._items, to_finals(finals))):
            out.append(
                (
                    it.id,
                    it.task,
                    fin.value,
                    int(e[i]),
                    {n: (int(c[i]), msgs.get(it.id, "")) for n, (c, msgs) in cols.items()},
                )
            )
        return out

    def correct(self, expr: Node, pool: OpPool) -> tuple[list[str], list[str], np.ndarray]:
        """(item ids, task ids, per-item correctness) — for paired comparisons outside evolution."""
        finals, _e, _c = self._evaluate(expr, pool)
        says_fail = finals == 1
        is_fail = np.array([lab is not None and lab < 0.5 for lab in self._labels])
        return [it.id for it in self._items], [it.task for it in self._items], says_fail == is_fail
