"""Comparing verifiers on a labeled split (docs/design.md §9) — used by `vx compare`, never by evolution.

* `compare_files(a, b, dataset)` — two .vx files on the same items: agreement of each, per-item
  changes (fixed: A wrong → B right; broken: A right → B wrong), a paired sign-flip permutation
  test clustered by task, and a bootstrap confidence interval of the difference computed over
  tasks (each task's mean per-item difference is one observation, so items of one task move together).
* `compare_runs(runs, dataset)` — seed composition vs evolved verifier of several runs (seeds):
  the per-run differences, their mean with a bootstrap interval over runs, and one clustered
  permutation test pooling every (run, item) pair with the task as the cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.parse import parse
from vx.families.family import Family, find_family_dir
from vx.metrics import agreement, bootstrap_ci, paired_permutation_test
from vx.ops.cache import VerdictCache
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.ops.specs import op_from_spec
from vx.verifier import Verifier

__all__ = ["Graded", "grade", "compare_graded", "compare_files", "compare_runs", "run_verifiers"]


@attrs.frozen
class Graded:
    name: str
    item_ids: tuple[str, ...]
    tasks: tuple[str, ...]
    finals: tuple[str, ...]
    labels: tuple[float, ...]
    fail_weight: float = 2.0

    def correct(self) -> np.ndarray:
        says_fail = np.array([f == "fail" for f in self.finals])
        is_fail = np.array([lab < 0.5 for lab in self.labels])
        return says_fail == is_fail

    def agreement(self):
        return agreement(list(self.finals), list(self.labels), fail_weight=self.fail_weight)


def grade(
    name: str,
    expr: Node,
    pool: OpPool,
    family: Family,
    dataset: str,
    *,
    cache: VerdictCache | None = None,
    jobs: int | None = None,
    timeout: float = 10.0,
) -> Graded:
    split = family.labeled(dataset)
    if dataset == "train":
        raise ValueError("the train split is unlabeled; compare on dev or locked")
    v = Verifier(expr, pool, family.tasks)
    g = v.grade_items(list(split.items), cache=cache, jobs=jobs, timeout=timeout, progress=False)
    return Graded(
        name,
        tuple(it.id for it in split.items),
        tuple(it.task for it in split.items),
        tuple(f.value for f in g.finals),
        tuple(_label(it) for it in split.items),
        float(family.objective.get("fail_weight", 2.0)),
    )


def _label(it: Item) -> float:
    if it.label is None:  # the family's loader requires a label on every dev and locked item
        raise ValueError(f"item {it.id} has no label")
    return float(it.label)


def _task_bootstrap(diff: np.ndarray, tasks: Sequence[str], seed: int = 0) -> tuple[float, float, float]:
    keys = list(dict.fromkeys(tasks))
    index = {t: i for i, t in enumerate(keys)}
    idx = np.array([index[t] for t in tasks])
    per_task = np.bincount(idx, weights=diff, minlength=len(keys)) / np.bincount(idx, minlength=len(keys))
    return bootstrap_ci(per_task.tolist(), seed=seed)


def compare_graded(a: Graded, b: Graded, *, n_permutations: int = 10000, seed: int = 0) -> dict[str, Any]:
    if a.item_ids != b.item_ids:
        raise ValueError("the two verifiers were graded on different items")
    ca, cb = a.correct(), b.correct()
    test = paired_permutation_test(cb, ca, a.tasks, n_permutations=n_permutations, seed=seed)
    mean, lo, hi = _task_bootstrap(cb.astype(float) - ca.astype(float), a.tasks, seed)
    return {
        "a": {"name": a.name, **a.agreement().as_dict()},
        "b": {"name": b.name, **b.agreement().as_dict()},
        "n": len(ca),
        "tasks": test.n_clusters,
        "fixed": int((~ca & cb).sum()),
        "broken": int((ca & ~cb).sum()),
        "both_right": int((ca & cb).sum()),
        "both_wrong": int((~ca & ~cb).sum()),
        "fixed_items": [i for i, x, y in zip(a.item_ids, ca, cb) if y and not x],
        "broken_items": [i for i, x, y in zip(a.item_ids, ca, cb) if x and not y],
        "diff": test.diff,
        "p_value": test.p_value,
        "n_permutations": test.n_permutations,
        "ci_task_mean_diff": {"mean": mean, "low": lo, "high": hi},
    }


def _family_of(path: Path) -> Family:
    """The family above a .vx file, else the family of the run named in its ``; run:`` header."""
    from vx.dsl.vxfile import read_header, read_text
    from vx.families.family import FamilyError

    try:
        return Family.load(find_family_dir(path))
    except FamilyError:
        run = read_header(read_text(path)).get("run")
        if not run:
            raise
        from vx.evolve.store import RunStore, RunStoreError

        run_path = Path(run) if Path(run).is_absolute() else path.parent / run  # relative to the .vx file
        try:
            with RunStore(run_path) as s:
                return Family.load(s.meta()["family_dir"])
        except (RunStoreError, KeyError):
            raise FamilyError(
                f"{path}: no family.toml above it, and its run file {run} cannot tell; "
                "name the family directory explicitly (the command line: --family DIR)"
            ) from None


def load_vx(path: str | Path, family: Family | None = None) -> tuple[Node, OpPool, Family]:
    from vx.evolve.run import load_pool_for_vx

    path = Path(path)
    fam = family or _family_of(path)
    pool = load_pool_for_vx(path, fam)
    from vx.dsl.vxfile import read_text

    return parse(read_text(path), filename=str(path), known_ops=pool.names), pool, fam


def compare_files(
    a: str | Path,
    b: str | Path,
    dataset: str = "locked",
    *,
    family: Family | None = None,
    cache: VerdictCache | None = None,
    jobs: int | None = None,
    timeout: float = 10.0,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict[str, Any]:
    ea, pa, fam = load_vx(a, family)
    eb, pb, fam_b = load_vx(b, family or fam)
    if fam_b.dir != fam.dir:
        raise ValueError(
            f"{a} and {b} belong to different families ({fam.dir} and {fam_b.dir}); name the family to compare them in"
        )
    ga = grade(str(a), ea, pa, fam, dataset, cache=cache, jobs=jobs, timeout=timeout)
    gb = grade(str(b), eb, pb, fam, dataset, cache=cache, jobs=jobs, timeout=timeout)
    return {"dataset": dataset, **compare_graded(ga, gb, n_permutations=n_permutations, seed=seed)}


def run_verifiers(run: str | Path, family: Family | None = None) -> tuple[Node, Node, OpPool, Family, dict]:
    """(seed expression, evolved expression, pool with the run's synthesized ops, family, meta) of a run file."""
    from vx.evolve.store import RunStore

    with RunStore(run) as s:
        meta, ops, rounds = s.meta(), s.ops(), s.rounds()
    fam = family or Family.load(meta["family_dir"])
    pool = fam.pool()
    for o in ops:
        if o["origin"] == "synthesized" and o["spec"] and o["name"] not in pool:
            pool.add(op_from_spec(o["spec"], provenance={"origin": "synthesized", "run": str(run)}))
    best = meta.get("best_expression") or (rounds[-1]["incumbent"] if rounds else None)
    if not best:
        raise ValueError(f"{run}: the run has no completed round")
    return parse(meta["seed_text"], known_ops=pool.names), parse(best, known_ops=pool.names), pool, fam, meta


def compare_runs(
    runs: Sequence[str | Path],
    dataset: str = "locked",
    *,
    family: Family | None = None,
    cache: VerdictCache | None = None,
    jobs: int | None = None,
    timeout: float = 10.0,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict[str, Any]:
    per_run: list[dict[str, Any]] = []
    all_seed: list[bool] = []
    all_best: list[bool] = []
    clusters: list[str] = []
    for run in runs:
        seed_expr, best_expr, pool, fam, meta = run_verifiers(run, family)
        gs = grade("seed", seed_expr, pool, fam, dataset, cache=cache, jobs=jobs, timeout=timeout)
        gb = grade("evolved", best_expr, pool, fam, dataset, cache=cache, jobs=jobs, timeout=timeout)
        cs, cb = gs.correct(), gb.correct()
        all_seed += cs.tolist()
        all_best += cb.tolist()
        clusters += list(gs.tasks)
        per_run.append(
            {
                "run": str(run),
                "seed": (meta.get("config") or {}).get("seed"),
                "seed_agreement": float(cs.mean()) if len(cs) else float("nan"),
                "evolved_agreement": float(cb.mean()) if len(cb) else float("nan"),
                "diff": float(cb.mean() - cs.mean()) if len(cs) else float("nan"),
                "fixed": int((~cs & cb).sum()),
                "broken": int((cs & ~cb).sum()),
                "evolved": meta.get("best_expression"),
            }
        )
    mean, lo, hi = bootstrap_ci([r["diff"] for r in per_run], seed=seed)
    test = paired_permutation_test(all_best, all_seed, clusters, n_permutations=n_permutations, seed=seed)
    return {
        "dataset": dataset,
        "runs": per_run,
        "mean_diff": mean,
        "ci_low": lo,
        "ci_high": hi,
        "p_value": test.p_value,
        "tasks": test.n_clusters,
        "n_permutations": test.n_permutations,
    }
