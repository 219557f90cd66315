"""Selection-speed benchmark for `vx.evolve`.

1. Candidates scored per second on a random 50-op verdict matrix (a root plus 49 ops; half the
   items train, 10 dev items labelled, the rest unlabeled) at 100 and 10,000 items, for 3-leaf and
   10-leaf candidates: the batch path (`Objective.score`: compile to shape groups, evaluate on
   packed bits, popcount objective) against the reference definition (`Objective.reference`: the
   per-item interpreter, one candidate at a time) on the same candidates, in one run.
   Candidates come in a handful of shapes with random leaves, as evolution produces them.
2. Wall time per round of `vx evolve` on the bundled family (examples/humaneval when present,
   else the `evo` test family), with a warm verdict cache.

    python benchmarks/bench_evolve.py [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from vx.dsl.ast import All, Any, Node, Not, OpRef, Vote
from vx.dsl.matrix import VerdictMatrix
from vx.evolve.objective import EvalData, Objective

ROOT = Path(__file__).resolve().parents[1]


def random_matrix(n_items: int, n_ops: int, rng: np.random.Generator) -> EvalData:
    arr = rng.choice(np.array([-1, 0, 1], dtype=np.int8), size=(n_items, n_ops), p=[0.2, 0.6, 0.2])
    arr[:, 0] = np.where(rng.random(n_items) < 0.05, 1, 0)  # the root fires on 5 %
    names = ["root"] + [f"op{j}" for j in range(1, n_ops)]
    m = VerdictMatrix.from_array(arr, [f"i{i}" for i in range(n_items)], names)
    train = np.zeros(n_items, dtype=bool)
    train[: n_items - 10] = True
    dev_p = np.full(n_items, np.nan)
    dev_p[-10:] = [0.0] * 5 + [1.0] * 5
    return EvalData(m, train, dev_p, "root")


def shapes_3(leaves: list[str]) -> list[Node]:
    a, b, c = (OpRef(x) for x in leaves)
    return [Any([a, b, c]), All([a, b, c]), Vote(2, [a, b, c]), Any([a, All([b, c])]), Any([a, Not(b), c])]


def shapes_10(leaves: list[str]) -> list[Node]:
    o = [OpRef(x) for x in leaves]
    return [
        Any(o),
        Vote(3, o),
        Any([All(o[0:2]), Vote(2, o[2:5]), *o[5:8], Not(o[8]), o[9]]),
        All([Any(o[0:5]), Any(o[5:10])]),
    ]


def candidates(n: int, size: int, ops: list[str], rng: np.random.Generator) -> list[Node]:
    make = shapes_3 if size == 3 else shapes_10
    out: list[Node] = []
    while len(out) < n:
        leaves = [ops[i] for i in rng.choice(len(ops), size=size, replace=False)]
        forms = make(leaves)
        out.append(forms[int(rng.integers(len(forms)))])
    return out


def bench_scoring(n_items: int, size: int, n_batch: int, n_ref: int, seed: int = 0) -> dict:
    rng = np.random.default_rng([seed, n_items, size])
    data = random_matrix(n_items, 50, rng)
    ops = list(data.matrix.op_names[1:])
    obj = Objective(data, consensus_ops=ops)
    cands = candidates(n_batch, size, ops, rng)
    obj.score(cands[:50])  # warm-up
    t0 = time.perf_counter()
    batch = obj.compile(cands)
    t1 = time.perf_counter()
    scores = obj.score_batch(batch)
    t2 = time.perf_counter()
    ref_cands = cands[:n_ref]
    t3 = time.perf_counter()
    ref = [obj.reference(c) for c in ref_cands]
    t4 = time.perf_counter()
    for i, r in enumerate(ref):  # the two paths agree
        assert abs(r.objective - scores.objective[i]) < 1e-9, (i, r, scores.get(i))
    score_rate = n_batch / (t2 - t1)
    e2e_rate = n_batch / (t2 - t0)
    ref_rate = n_ref / (t4 - t3)
    return {
        "items": n_items,
        "leaves": size,
        "candidates": n_batch,
        "shapes": len(batch.groups),
        "batch_per_s": score_rate,
        "batch_with_compile_per_s": e2e_rate,
        "reference_per_s": ref_rate,
        "speedup": score_rate / ref_rate,
        "speedup_with_compile": e2e_rate / ref_rate,
    }


def bench_rounds(rounds: int, jobs: int | None) -> dict:
    from vx.evolve.loop import EvolveConfig
    from vx.evolve.run import evolve_family
    from vx.evolve.store import RunStore
    from vx.ops.cache import VerdictCache

    fam = ROOT / "examples" / "humaneval"
    if not (fam / "family.toml").exists():
        fam = ROOT / "tests" / "fixtures" / "evo"
    tmp = Path(tempfile.mkdtemp(prefix="vx-bench-evolve-"))
    try:
        cache = VerdictCache(tmp / "cache.sqlite")
        cfg = EvolveConfig(rounds=rounds, seed=0, jobs=jobs)
        evolve_family(fam, config=cfg, out=tmp / "warm.vxrun.sqlite", cache=cache)  # fills the cache
        t0 = time.perf_counter()
        evolve_family(fam, config=cfg, out=tmp / "run.vxrun.sqlite", cache=cache)
        total = time.perf_counter() - t0
        with RunStore(tmp / "run.vxrun.sqlite") as s:
            secs = [r["seconds"] for r in s.rounds() if r["round"] > 0]
            cands = [r["candidates"] for r in s.rounds() if r["round"] > 0]
        cache.close()
        return {
            "family": fam.name,
            "rounds": rounds,
            "total_s": total,
            "mean_round_s": float(np.mean(secs)),
            "max_round_s": float(np.max(secs)),
            "mean_candidates": float(np.mean(cands)),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer candidates (a smoke run)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args(argv)
    k = 10 if args.quick else 1
    plan = [
        (100, 3, 200_000 // k, 200 // k),
        (100, 10, 100_000 // k, 100 // k),
        (10_000, 3, 20_000 // k, 6),
        (10_000, 10, 10_000 // k, 3),
    ]
    print(
        f"{'items':>6} {'leaves':>6} {'cands':>7} {'shapes':>6} {'batch/s':>12} {'+compile/s':>12} "
        f"{'reference/s':>12} {'speedup':>9} {'(+compile)':>10}"
    )
    ok = True
    for n_items, size, n_batch, n_ref in plan:
        r = bench_scoring(n_items, size, n_batch, n_ref)
        print(
            f"{r['items']:>6} {r['leaves']:>6} {r['candidates']:>7} {r['shapes']:>6} {r['batch_per_s']:>12,.0f} "
            f"{r['batch_with_compile_per_s']:>12,.0f} {r['reference_per_s']:>12,.1f} {r['speedup']:>8,.0f}x "
            f"{r['speedup_with_compile']:>9,.0f}x",
            flush=True,
        )
        if n_items == 100 and r["speedup"] < 500:
            ok = False
    r = bench_rounds(args.rounds, args.jobs)
    print(
        f"\nper round on the {r['family']} family ({r['rounds']} rounds, warm cache): mean {r['mean_round_s']:.2f} s, "
        f"max {r['max_round_s']:.2f} s, {r['mean_candidates']:.0f} candidates per round; "
        f"whole run {r['total_s']:.1f} s"
    )
    print("bar (batch >= 500x reference at 100 items):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
