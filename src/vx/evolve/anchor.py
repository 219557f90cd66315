"""Where ten labels tell most: ``vx anchor suggest`` ranks unlabeled train items for a person to label.

Ten labels cannot measure a detector's false-alarm rate; what they can do is settle the choices that
evolution is unsure of. So the ranking comes from a short evolution (`Evolution`, its own run file in a
temporary directory, nothing of the locked split) and asks, of every open train item, *would a label
here change which expression is chosen?*

* ``e*`` is the best elite of the short run and the other elites are its runners-up;
* a *fail* label on an item ``e*`` passes and some runner-up fails makes every expression that passes it
  lose to the anchor guard (`vx.evolve.guards`), and a *pass* label on an item ``e*`` fails does the same
  the other way; the item's value is the probability of the label that would change the choice,
  ``q`` (the train consensus's P(fail), `vx.evolve.labelmodel`) or ``1 − q``;
* an item where exactly one op fires and no other op confirms it is where a specialist's precision is
  measured: it gets a bonus (``LONE_BONUS``) scaled by how unsure the consensus is (``4 q (1 − q)``);
* and every item a little of that uncertainty (``UNSURE_WEIGHT``), so the list fills where nothing else
  tells. ``q`` comes from the flat label model (one latent "fails") whatever consensus the run selects
  under: the class-conditional one calls every firing of a one-op class a defect.

One item per task (a label moves its task into dev: `vx.families.anchoring`), and no op's lone
drawbacks take more than half of the places. Each suggestion carries its evidence: every op's verdict
and message on it, how the elites split, and the output itself.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vx.dsl.printer import to_text
from vx.evolve.config import EvolveConfig
from vx.evolve.loop import Evolution
from vx.evolve.objective import engine_objective
from vx.evolve.store import RunStore
from vx.families.family import Family
from vx.ops.cache import VerdictCache
from vx.ops.progress import Reporter

__all__ = ["Suggestion", "Suggestions", "suggest", "LONE_BONUS"]

LONE_BONUS = 0.25
UNSURE_WEIGHT = 0.05  # every item: how unsure the consensus is (fills the list where nothing else tells)


@attrs.frozen
class Suggestion:
    item: str
    task: str
    score: float
    q_fail: float  # the train consensus's P(fail) of the item
    why: str
    elites_fail: int  # how many of the elites fail it
    elites: int
    evidence: tuple[tuple[str, str, str], ...]  # (op, "drawback" | "clean", message) of every opining op
    output: Any = attrs.field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "task": self.task,
            "score": round(self.score, 6),
            "q_fail": round(self.q_fail, 6),
            "why": self.why,
            "elites_fail": self.elites_fail,
            "elites": self.elites,
            "evidence": [{"op": o, "verdict": v, "message": m} for o, v, m in self.evidence],
            "output": self.output,
        }


@attrs.frozen
class Suggestions:
    family: str
    items: tuple[Suggestion, ...]
    elites: tuple[tuple[str, float], ...]  # the short run's elites: (expression, objective)
    rounds: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "rounds": self.rounds,
            "elites": [{"expression": e, "objective": s} for e, s in self.elites],
            "suggestions": [s.as_dict() for s in self.items],
        }


def suggest(
    family: str | Path | Family,
    *,
    n: int = 10,
    rounds: int = 2,
    seed: int = 0,
    top: int = 8,
    jobs: int | None = None,
    cache: VerdictCache | None = None,
    on_status: Callable[[str], None] | None = None,
    progress: bool | Reporter = False,
) -> Suggestions:
    """The ``n`` train items whose labels would tell evolution most (module docstring)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    fam = family if isinstance(family, Family) else Family.load(family)
    engine = _short_run(fam, EvolveConfig(rounds=rounds, seed=seed, jobs=jobs), cache, on_status, progress)
    obj = engine.objective()
    elites = [e.node for e in engine.elites[:top]] or [engine.incumbent]
    codes = np.stack([obj.final_codes(e) for e in elites])  # elites × items: 1 FAIL, 0 PASS, -1 ABSTAIN
    fails = codes == 1
    # how sure the pool is of each item: the flat label model, whatever the run's consensus (the
    # class-conditional one calls every firing of a one-op class a defect: docs/evolve.md)
    lm = (
        obj.label_model
        if obj.config.consensus == "label-model-flat"
        else engine_objective(
            obj.data,
            statuses={k: r.status for k, r in engine.records.items()},
            marginals={k: r.marginal for k, r in engine.records.items()},
            classes={o.name: o.detects for o in engine.pool},
            config=attrs.evolve(obj.config, consensus="label-model-flat"),
        ).label_model
    )
    m = engine.matrix
    if lm is None or m is None:  # (the engine was set up above: its matrix and label model exist)
        raise RuntimeError("the evolution engine has no verdict matrix or label model to rank items by")
    q = np.nan_to_num(lm.q, nan=0.5)
    sel = engine.selectable()
    firing = np.stack([m.column(o) == 1 for o in sel], axis=1) if sel else np.zeros((m.n_items, 0), bool)
    n_fire = firing.sum(axis=1)
    open_train = engine.train_mask & obj.decide
    best = fails[0]
    some_fail, some_pass = fails.any(axis=0), (~fails).any(axis=0)
    value = np.where(~best & some_fail, q, 0.0) + np.where(best & some_pass, 1.0 - q, 0.0)
    lone = n_fire == 1
    unsure = 4.0 * q * (1.0 - q)
    score = value + LONE_BONUS * lone * unsure + UNSURE_WEIGHT * unsure
    order = sorted(
        np.flatnonzero(open_train & (score > 0)).tolist(),
        key=lambda i: (-round(float(score[i]), 12), -float(4 * q[i] * (1 - q[i])), engine.items[i].id),
    )
    cap = max(1, math.ceil(n / 2))
    per_op: dict[str, int] = {}
    tasks: set[str] = set()
    picked: list[Suggestion] = []
    for i in order:
        it = engine.items[i]
        if it.task in tasks:
            continue
        lone_op = sel[int(np.flatnonzero(firing[i])[0])] if lone[i] else None
        if lone_op is not None and per_op.get(lone_op, 0) >= cap:
            continue
        tasks.add(it.task)
        if lone_op is not None:
            per_op[lone_op] = per_op.get(lone_op, 0) + 1
        why = []
        if value[i] > 0:
            side = "fail" if not best[i] else "pass"
            why.append(
                f"a {side} label would change the choice between the top expressions "
                f"({int(fails[:, i].sum())} of {len(elites)} fail it; P({side}) ≈ "
                f"{q[i] if side == 'fail' else 1 - q[i]:.2f})"
            )
        if lone_op is not None:
            why.append(f"only {lone_op} fires on it: a label measures its precision")
        evidence = tuple(
            (o, "drawback" if m.get(it.id, o) == 1 else "clean", engine.messages.get((it.id, o), ""))
            for o in m.op_names
            if m.get(it.id, o) in (0, 1)
        )
        picked.append(
            Suggestion(
                it.id,
                it.task,
                float(score[i]),
                float(q[i]),
                "; ".join(why),
                int(fails[:, i].sum()),
                len(elites),
                evidence,
                it.output,
            )
        )
        if len(picked) >= n:
            break
    elite_rows = tuple((to_text(e.node), float(e.objective)) for e in engine.elites[:top])
    return Suggestions(fam.name, tuple(picked), elite_rows, rounds)


def _short_run(
    fam: Family,
    config: EvolveConfig,
    cache: VerdictCache | None,
    on_status: Callable[[str], None] | None,
    progress: bool | Reporter,
) -> Evolution:
    """A short evolution of the family from its seed, its run file thrown away: the engine, whose elites,
    verdict matrix and label model rank the items."""
    with tempfile.TemporaryDirectory(prefix="vx-anchor-") as tmp:
        store = RunStore(Path(tmp) / "suggest.vxrun.sqlite", create=True)
        try:
            store.set_meta(
                {"format": 1, "family": fam.name, "family_dir": str(fam.dir), "purpose": "vx anchor suggest"}
            )
            engine = Evolution(
                fam.evolution_view(),
                fam.seed_text or "",
                store=store,
                config=config,
                cache=cache,
                on_status=on_status,
                progress=progress,
            )
            engine.run()
        finally:
            store.close()
    return engine
