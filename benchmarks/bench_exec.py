"""Execution speed: vx's sandboxed ground truth against evalplus's own (unsandboxed) evaluator.

Labels every sample of one ``samples/mbpp/<model>.jsonl`` file that is in MBPP+ (224 tasks)
against MBPP+'s base + plus inputs, twice in one run:

* **vx** -- :class:`vx.families.code.data.groundtruth.Grader`: one fresh sandboxed process per
  candidate (bubblewrap / unshare / rlimits, whichever is strongest here), comparison in the parent;
* **evalplus** -- evalplus 0.3.1's own ``check_correctness`` (what ``evalplus.evaluate`` runs per
  sample: two forked processes, base then plus, in-process comparison, no sandbox), through its
  Python API (its CLI idles ~20 s at exit).

Both use the same number of workers; each side runs ``--repeat`` times, alternating, and its
fastest run counts (the machine may be shared). Expected outputs (the canonical solutions' outputs) are
timed separately: vx computes them in the sandbox (cold cache here), evalplus with ``trusted_exec``
in-process. Prints both wall times, their ratio (the bar: vx within 1.5x of evalplus), the
per-candidate sandbox overhead and the label agreement.

    python benchmarks/bench_exec.py [--samples PATH] [--data-dir DIR] [--workers N]

Needs evalplus itself, which the ``[code]`` extra no longer installs: ``pip install 'vx-verifiers[bench]'``
(or just ``pip install 'evalplus>=0.3.1'``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=DATA / "samples" / "mbpp" / "gpt-3.5-turbo-0613.jsonl")
    parser.add_argument("--data-dir", type=Path, default=DATA / "evalplus")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--repeat",
        type=int,
        default=2,
        help="runs of each side, alternating; the fastest counts (the machine is shared)",
    )
    args = parser.parse_args()
    if not args.samples.is_file() or not args.data_dir.is_dir():
        print(f"needs {args.samples} and {args.data_dir} (../shared/data); not found", file=sys.stderr)
        return 2

    try:
        import evalplus  # noqa: F401
    except ImportError:
        print("needs evalplus: pip install 'vx-verifiers[bench]' (or pip install 'evalplus>=0.3.1')", file=sys.stderr)
        return 2
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader
    from vx.families.code.data.validate import evalplus_verdicts, mbpp_samples, vx_tasks
    from vx.sandbox import Sandbox, SandboxConfig

    plus = task_data.load_mbpp_plus(args.data_dir)
    samples = mbpp_samples(args.samples, plus)
    tasks = vx_tasks(samples, plus)

    version = task_data.plus_version("mbpp+", args.data_dir)
    vx_runs: list[float] = []
    evalplus_runs = []
    with tempfile.TemporaryDirectory() as cache:
        for attempt in range(args.repeat):
            grader = Grader(tasks, version=version, cache_dir=cache, workers=args.workers)  # no memo across runs
            start = time.perf_counter()
            problems = grader.prepare()
            if attempt == 0:
                vx_expected = time.perf_counter() - start  # cold: the cache dir starts empty
                samples = [s for s in samples if s.plus_id not in problems]
            start = time.perf_counter()
            truths = grader.grade_many([(tasks[s.plus_id], s.solution) for s in samples])
            vx_runs.append(time.perf_counter() - start)
            evalplus_runs.append(evalplus_verdicts(samples, args.data_dir, alias=True, workers=args.workers))
    vx_label = min(vx_runs)
    theirs = min(evalplus_runs, key=lambda run: run.check_seconds)

    sandbox = Sandbox(SandboxConfig(memory_mb=4096))
    overhead_ms = sandbox.measure_overhead(runs=15)
    n = len(samples)
    agree = sum(t.label == theirs.verdicts[f"{s.plus_id}#{s.model}"]["label"] for s, t in zip(samples, truths))
    ratio = vx_label / theirs.check_seconds
    print(
        f"samples: {args.samples.name}, {n} candidates on {len({s.plus_id for s in samples})} MBPP+ tasks "
        f"(base + plus inputs), {args.workers} workers, sandbox layer: {sandbox.layer}"
    )
    if problems:
        print(f"excluded (reference unusable in the sandbox): {problems}")
    print(
        f"label all candidates   vx (sandboxed) {vx_label:7.1f} s   evalplus {theirs.check_seconds:7.1f} s   "
        f"ratio {ratio:.2f}x  (bar: <= 1.5x; best of {args.repeat}: vx "
        f"{', '.join(f'{t:.1f}' for t in vx_runs)} s, evalplus "
        f"{', '.join(f'{r.check_seconds:.1f}' for r in evalplus_runs)} s)"
    )
    print(f"expected outputs       vx (sandboxed) {vx_expected:7.1f} s   evalplus {theirs.groundtruth_seconds:7.1f} s")
    total_ratio = (vx_label + vx_expected) / (theirs.check_seconds + theirs.groundtruth_seconds)
    print(
        f"total                  vx {vx_label + vx_expected:7.1f} s   evalplus "
        f"{theirs.check_seconds + theirs.groundtruth_seconds:7.1f} s   ratio {total_ratio:.2f}x"
    )
    print(
        f"per candidate          vx {1000 * vx_label * args.workers / n:6.0f} ms x worker   "
        f"evalplus {1000 * theirs.check_seconds * args.workers / n:6.0f} ms x worker"
    )
    print(
        f"sandbox overhead       {overhead_ms:.0f} ms per candidate (median start-to-report of a trivial one-call "
        f"candidate, {sandbox.layer})"
    )
    print(f"label agreement        {agree}/{n}")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
