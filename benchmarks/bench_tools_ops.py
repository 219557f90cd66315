"""Each op of a single-turn tools family per category: false alarms on correct answers, recall on failures.

    python benchmarks/bench_tools_ops.py FAMILY_DIR [--truth FILE] [--jobs 2] [--cache FILE]

Applies the family's whole op pool (peer ops and shadow baselines included) to its train split and prints,
per BFCL category, each op's false-alarm rate on the correct answers, its recall on the failures, and the
share of answers it abstains on (all in %). Correct answers and failures the root fails are left out of the
other ops' rates (the root's own rates count every answer). The labels are the train split's BFCL labels
(the design split; never the locked split's): ``truth.json`` beside the family, as ``bench_quality.py``
writes it for each built family. A figure above 1% on correct answers is starred.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

CATEGORIES = ("simple", "multiple_function", "parallel_function", "parallel_multiple_function", "relevance")


def rates(col: np.ndarray, good: np.ndarray, bad: np.ndarray) -> tuple[float, float, float]:
    """(false alarms % on ``good``, recall % on ``bad``, abstentions % on both) of one op's verdict column."""
    both = good | bad
    fa = float((col[good] == 1).mean() * 100) if good.any() else float("nan")
    rec = float((col[bad] == 1).mean() * 100) if bad.any() else float("nan")
    ab = float((col[both] == -1).mean() * 100) if both.any() else float("nan")
    return fa, rec, ab


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family", type=Path, help="a built single-turn tools family (vx data build tools)")
    ap.add_argument("--truth", type=Path, default=None, help="item id -> pass/fail (default: truth.json beside it)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None, help="a verdict cache file to read and fill")
    args = ap.parse_args(argv)

    from vx.families.family import Family
    from vx.ops.apply import apply_ops
    from vx.ops.cache import VerdictCache

    truth_file = args.truth or args.family.parent / "truth.json"
    if not truth_file.is_file():
        print(f"error: no labels at {truth_file}: give --truth (item id -> pass/fail)", file=sys.stderr)
        return 2
    truth = json.loads(truth_file.read_text(encoding="utf-8"))
    fam = Family(args.family)
    items = list(fam.split("train").items)
    missing = [it.id for it in items if it.id not in truth]
    if missing:
        print(f"error: {truth_file} has no label for {len(missing)} train item(s), e.g. {missing[0]}", file=sys.stderr)
        return 2
    pool = fam.pool()
    cache = VerdictCache(args.cache) if args.cache else None
    t0 = time.perf_counter()
    app = apply_ops(pool, items, fam.tasks, jobs=args.jobs, cache=cache, progress=False, peers=fam.peers)
    m = app.matrix
    print(f"{m.n_items} train answers x {m.n_ops} ops in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    ok = np.array([truth[it.id] == "pass" for it in items])
    cat = np.array([str(fam.tasks[it.task].get("category", "")) for it in items])
    root = pool.root_name
    root_col = m.column(root) if root else np.zeros(len(items), np.int8)
    cats = [c for c in CATEGORIES if (cat == c).any()]
    print(f"{len(items)} train answers: " + ", ".join(f"{c} {(cat == c).sum()}" for c in cats))
    print("| op | " + " | ".join(f"{c} FA / recall / abst." for c in cats) + " |")
    print("|---|" + "---|" * len(cats))
    for name in m.op_names:
        col = m.column(name)
        cells = []
        for c in cats:
            here = cat == c
            open_ = here if name == root else here & (root_col != 1)
            fa, rec, ab = rates(col, open_ & ok, open_ & ~ok)
            star = "*" if fa > 1.0 else ""
            cells.append(f"{fa:.2f}{star} / {rec:.1f} / {ab:.0f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
