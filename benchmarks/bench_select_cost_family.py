"""What ranking adds to grading a built family's attempts, in one process: the CPU seconds of
``Verifier.grade_items(..., rank=True)`` (the verifier's ops and the similarity's observer) against those of
``Verifier.placements`` (support from the family's behaviour clusters, then the ranking), on the train split's
first N tasks, one worker, no verdict cache.

    python benchmarks/bench_select_cost_family.py FAMILY_DIR VERIFIER.vx --tasks 200

CPU is this process's and its reaped children's (``getrusage``); work done in a long-lived sandbox server is
not counted, so where ops run there the share printed is an upper bound of ranking's.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("family", type=Path, help="a built family directory (family.toml, tasks.jsonl, train.jsonl...)")
    ap.add_argument("verifier", type=Path, help="the .vx expression to grade and rank with")
    ap.add_argument("--tasks", type=int, default=200, help="the train split's first N tasks (default: 200)")
    args = ap.parse_args(argv)
    if not (args.family / "family.toml").is_file() or not args.verifier.is_file():
        print(f"error: {args.family} is not a built family or {args.verifier} is missing", file=sys.stderr)
        return 2
    from vx.families.family import Family
    from vx.verifier import Verifier

    family = Family(args.family)
    verifier = Verifier.load(args.verifier, family)
    train = list(family.split("train").items)
    keep = set(sorted({it.task for it in train})[: args.tasks])
    items = [it for it in train if it.task in keep]
    t0 = _cpu()
    grading = verifier.grade_items(items, jobs=1, peers={}, rank=True)
    t1 = _cpu()
    placements = verifier.placements(grading, items)
    t2 = _cpu()
    known = sum(1 for p in placements if p.support > 0)
    print(f"{len(items)} attempts at {len(keep)} tasks; {verifier.expr}")
    print(
        f"grading (rank=True): {t1 - t0:.2f} s CPU; ranking: {t2 - t1:.3f} s CPU: +{100 * (t2 - t1) / (t1 - t0):.2f} %"
    )
    print(f"support counted for {known} of {len(placements)} attempts")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
