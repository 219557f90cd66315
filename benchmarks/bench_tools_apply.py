"""Grading throughput of single-turn tools answers beside the code family's, in one run.

    python benchmarks/bench_tools_apply.py [--jobs 2] [--tools DIR] [--code DIR] [--json OUT]

Applies each family's whole op pool (every op, peer ops and baselines included) to its train split with
``apply_ops`` at ``--jobs`` workers and no verdict cache (identical attempts run once, as always), and prints
answers per second and the tools/code ratio. Defaults: ``examples/tools`` and ``examples/humaneval``; a built
BFCL family (``vx data build tools``) can be given as ``--tools``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(family_dir: Path, jobs: int) -> dict[str, float | int | str]:
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    fam = Family(family_dir)
    pool = fam.pool()
    items = list(fam.split("train").items)
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    app = apply_ops(pool, items, fam.tasks, jobs=jobs, cache=None, progress=False, peers=fam.peers)
    wall = time.perf_counter() - t0
    return {
        "family": str(family_dir),
        "items": len(items),
        "ops": app.matrix.n_ops,
        "seconds": round(wall, 2),
        "parent_cpu_seconds": round(time.process_time() - cpu0, 2),
        "items_per_second": round(len(items) / wall, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--tools", type=Path, default=ROOT / "examples" / "tools")
    ap.add_argument("--code", type=Path, default=ROOT / "examples" / "humaneval")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    tools = measure(args.tools, args.jobs)
    code = measure(args.code, args.jobs)
    ratio = float(tools["items_per_second"]) / float(code["items_per_second"])
    out = {"jobs": args.jobs, "tools": tools, "code": code, "ratio_tools_to_code": round(ratio, 2)}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
