"""Evaluator speed: reference interpreter vs the packed vectorised evaluator.

    python benchmarks/bench_eval.py            # 10^4 and 10^6 items × 50 ops (about a minute)
    python benchmarks/bench_eval.py --quick    # 10^4 and 10^5 items, for a smoke run

For each size it builds a random verdict matrix (50 ops; each verdict ABSTAIN with p = 0.2,
otherwise DRAWBACK with p = 0.3) and random expressions with 3 and 10 leaves (mixed
combinators), plus pure-``any`` trees, and prints **item-leaf evaluations per second**: items ×
leaves / seconds, summed over the trees.

* reference: `vx.dsl.semantics.evaluate_item` on a subsample of items (the per-item rows are
  built before timing), extrapolated per item — it is linear in the number of items;
* fast: `vx.dsl.compile.BatchEvaluator` with the memo off (every node computed afresh), best
  of several runs;
* bound: ``np.bitwise_or`` of two packed rows of the same size (n_items bits as uint64 words,
  into a preallocated output) — one OR per item-leaf. A k-leaf ``any`` tree needs 2·(k−1) such
  ORs (opines and fires), so the evaluator cannot exceed about half of this bound.

Bars: fast ≥ 1000× reference at 10^6 items; pure-``any`` trees ≥ 25% of the bound.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

import numpy as np

from vx.dsl.ast import All, Any, Node, Not, OpRef, Vote, WVote
from vx.dsl.compile import BatchEvaluator
from vx.dsl.matrix import VerdictMatrix, n_words_for
from vx.dsl.semantics import evaluate_item

N_OPS = 50
N_TREES = 20
REFERENCE_SAMPLE = 2000
OPS = [f"op{j}" for j in range(N_OPS)]


def random_matrix(n_items: int, rng: np.random.Generator) -> VerdictMatrix:
    codes = np.zeros((n_items, N_OPS), dtype=np.int8)
    for j in range(N_OPS):  # column by column, to keep memory small
        u = rng.random(n_items, dtype=np.float32)
        codes[u < 0.2 + 0.8 * 0.3, j] = 1
        codes[u < 0.2, j] = -1
    return VerdictMatrix.from_array(codes, op_names=OPS)


def random_tree(n_leaves: int, rnd: random.Random, only_any: bool = False) -> Node:
    """A random tree with exactly ``n_leaves`` leaves."""
    if n_leaves == 1:
        leaf = OpRef(rnd.choice(OPS))
        return leaf if only_any or rnd.random() < 0.8 else Not(leaf)
    n_kids = rnd.randint(2, min(n_leaves, 4))
    cuts = sorted(rnd.sample(range(1, n_leaves), n_kids - 1))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n_leaves])]
    kids = [random_tree(s, rnd, only_any) for s in sizes]
    if only_any:
        return Any(kids)
    kind = rnd.choice(["any", "all", "vote", "wvote"])
    if kind == "any":
        return Any(kids)
    if kind == "all":
        return All(kids)
    if kind == "vote":
        return Vote(rnd.randint(1, len(kids)), kids)
    weights = [rnd.choice(["0.5", "1", "1.5", "-0.25", "2"]) for _ in kids]
    return WVote(rnd.choice(["0.5", "1", "1.5", "2"]), kids, weights)


def flat_any(n_leaves: int, rnd: random.Random) -> Node:
    return Any([OpRef(name) for name in rnd.sample(OPS, n_leaves)])


def time_fast(matrix: VerdictMatrix, trees: list[Node], repeats: int) -> float:
    ev = BatchEvaluator(matrix, memo_bytes=0)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for tree in trees:
            ev.evaluate(tree)
        best = min(best, time.perf_counter() - t0)
    return best


def time_reference_per_item(matrix: VerdictMatrix, trees: list[Node], rng: np.random.Generator) -> float:
    """Seconds per item to evaluate all ``trees`` with the reference interpreter."""
    sample = rng.choice(matrix.n_items, size=min(REFERENCE_SAMPLE, matrix.n_items), replace=False)
    codes = matrix.take(sample).to_array()
    rows = [dict(zip(OPS, map(int, row))) for row in codes]
    t0 = time.perf_counter()
    for row in rows:
        for tree in trees:
            evaluate_item(tree, row)
    return (time.perf_counter() - t0) / len(rows)


def bitwise_or_bound(n_items: int, repeats: int) -> float:
    """Items per second of one np.bitwise_or over packed rows of n_items bits."""
    words = n_words_for(n_items)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2**63, size=words, dtype=np.uint64)
    y = rng.integers(0, 2**63, size=words, dtype=np.uint64)
    out = np.empty_like(x)
    calls = max(1, 2_000_000 // max(words, 1))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            np.bitwise_or(x, y, out=out)
        best = min(best, (time.perf_counter() - t0) / calls)
    return n_items / best


def memo_lines(matrix: VerdictMatrix, rnd: random.Random) -> list[str]:
    """Scoring many candidates over one matrix, as evolution does: with and without the memo."""
    base = random_tree(10, rnd)
    leaf_paths = [p for p, node in base.walk() if isinstance(node, OpRef)]
    mutants = [base.replace_at(rnd.choice(leaf_paths), OpRef(rnd.choice(OPS))) for _ in range(200)]
    elites = [random_tree(10, rnd) for _ in range(20)]
    compositions = [
        rnd.choice([Any([a, b]), All([a, Not(b)]), Vote(2, [a, b, c])])
        for a, b, c in (rnd.sample(elites, 3) for _ in range(200))
    ]
    lines = []
    for label, candidates in [
        ("200 one-leaf mutants of a 10-leaf tree", mutants),
        ("200 compositions of 20 elite 10-leaf trees", compositions),
    ]:
        cold = time_fast(matrix, candidates, repeats=1)
        ev = BatchEvaluator(matrix)
        t0 = time.perf_counter()
        for candidate in candidates:
            ev.evaluate(candidate)
        warm = time.perf_counter() - t0
        lines.append(
            f"memo, {label}, {matrix.n_items:.0e} items: {cold * 1e3:.0f} ms without, "
            f"{warm * 1e3:.0f} ms with ({ev.hits} subtree results reused, {ev.misses} computed)"
        )
    return lines


def fmt_rate(x: float) -> str:
    return f"{x:.2e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="10^4 and 10^5 items instead of 10^4 and 10^6")
    args = parser.parse_args()
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**6]
    rnd = random.Random(7)
    rng = np.random.default_rng(7)

    print(
        f"vx evaluator benchmark — {N_OPS} ops, {N_TREES} trees per row, numpy {np.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}"
    )
    print(
        "rates are item-leaf evaluations per second; reference timed on "
        f"{REFERENCE_SAMPLE} sampled items and extrapolated per item\n"
    )
    header = "| items | trees | leaves | reference | fast | fast / reference | bitwise_or bound | fast / bound |"
    print(header)
    print("|---|---|---|---|---|---|---|---|")
    verdicts = []
    for n in sizes:
        matrix = random_matrix(n, rng)
        bound = bitwise_or_bound(n, repeats=5)
        repeats = 7 if n <= 10**5 else 3
        for label, leaves, make in [
            ("mixed", 3, lambda k: random_tree(k, rnd)),
            ("mixed", 10, lambda k: random_tree(k, rnd)),
            ("any", 3, lambda k: flat_any(k, rnd)),
            ("any", 10, lambda k: flat_any(k, rnd)),
        ]:
            trees = [make(leaves) for _ in range(N_TREES)]
            total_leaves = sum(t.size() for t in trees)
            fast = n * total_leaves / time_fast(matrix, trees, repeats)
            ref = total_leaves / time_reference_per_item(matrix, trees, rng)
            print(
                f"| {n:.0e} | {label} | {leaves} | {fmt_rate(ref)} | {fmt_rate(fast)} | "
                f"{fast / ref:,.0f}× | {fmt_rate(bound)} | {100 * fast / bound:.0f}% |"
            )
            verdicts.append((n, label, leaves, fast / ref, fast / bound))

    big = max(sizes)
    print()
    for line in memo_lines(random_matrix(big, rng), rnd):
        print(line)
    print()
    worst_ratio = min(r for n, _, _, r, _ in verdicts if n == big)
    worst_any = min(b for n, label, _, _, b in verdicts if n == big and label == "any")
    print(
        f"bar 1: fast ≥ 1000× reference at {big:.0e} items — worst {worst_ratio:,.0f}×: "
        f"{'PASS' if worst_ratio >= 1000 else 'FAIL'}"
    )
    print(
        f"bar 2: pure-any trees ≥ 25% of the bitwise_or bound at {big:.0e} items — worst "
        f"{100 * worst_any:.0f}%: {'PASS' if worst_any >= 0.25 else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
