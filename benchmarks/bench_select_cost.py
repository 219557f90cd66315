"""What best of n costs: `vx grade` on the same samples with and without ``--select``, each run in its own
process with an empty verdict cache, alternating, timed as wall and CPU seconds of the whole process tree
(the sandboxed children included).

    python benchmarks/bench_select_cost.py --tasks 5 --repeats 2        # CodeT's first 5 tasks: 500 samples

Skips cleanly (exit 0) when the CodeT files are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--codet-dir", type=Path, default=DATA / "samples" / "humaneval-codet")
    ap.add_argument("--data-dir", type=Path, default=DATA / "evalplus")
    ap.add_argument("--verifier", type=Path, default=ROOT / "examples" / "humaneval" / "seed.vx")
    ap.add_argument("--tasks", type=int, default=5, help="the first N tasks of CodeT's file (100 samples each)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    solutions = args.codet_dir / "codegen16B_code_solution.jsonl"
    task_file = args.codet_dir / "HumanEval_for_code_generation.jsonl"
    if not (solutions.is_file() and task_file.is_file()):
        print(f"no CodeT files in {args.codet_dir}: nothing to measure (skipped)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="vx-select-cost-"))
    samples = work / solutions.name
    samples.write_text("\n".join(solutions.read_text(encoding="utf-8").splitlines()[: args.tasks]) + "\n")
    (work / task_file.name).write_bytes(task_file.read_bytes())
    runs: dict[str, list[tuple[float, float]]] = {"plain": [], "select": []}
    for r in range(args.repeats):
        for mode in ("plain", "select") if r % 2 == 0 else ("select", "plain"):
            cmd = [
                sys.executable,
                "-m",
                "vx.cli.main",
                "grade",
                str(args.verifier),
                str(samples),
                "--tasks",
                "humaneval+",
                "--data-dir",
                str(args.data_dir),
                "--no-anchor",
                "-j",
                str(args.jobs),
                "--cache",
                str(work / f"cache-{mode}-{r}.sqlite"),
            ]
            if mode == "select":
                cmd += ["--select", str(work / f"chosen-{r}.jsonl")]
            c0, t0 = _children_cpu(), time.perf_counter()
            done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "VX_PROBE_CACHE": "off"})
            wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
            if done.returncode != 0:
                print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
                return done.returncode
            runs[mode].append((wall, cpu))
            print(f"{mode}: {wall:.1f} s wall, {cpu:.1f} s CPU", file=sys.stderr, flush=True)
    med = {m: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for m, v in runs.items()}
    out = {
        "samples": args.tasks * 100,
        "runs": runs,
        "median_wall": {m: v[0] for m, v in med.items()},
        "median_cpu": {m: v[1] for m, v in med.items()},
        "added_wall": med["select"][0] / med["plain"][0] - 1,
        "added_cpu": med["select"][1] / med["plain"][1] - 1,
    }
    print(json.dumps(out, indent=1))
    if args.out:
        args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
