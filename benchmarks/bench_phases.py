"""Where a real attempt's time goes: the phases of grading CodeT attempts with the bundled seed pool.

    python benchmarks/bench_phases.py [--tasks 30] [--stored] [--json OUT]

Grades the first ``--tasks`` HumanEval tasks' CodeT x10 attempts (as ``bench_apply.py`` loads them) with
the whole seed pool in this process (-j 1, fork server, no verdict cache) and times each phase with
wrappers around the functions that do it (``time.perf_counter``; no profiler, whose overhead would
inflate the Python-heavy phases):

* **probe generation** -- the task's generated and drawn probes (``probe.generated``: once per task and
  process, shown per run; from an empty probe store, or with ``--stored`` read from a filled one);
* **run budgets** -- ``run.run_budgets`` (once per task);
* **waiting for the child** -- the fork server's ``_watch``: fork, isolation, load, every call, the
  child's encoding and the transfer of its frames (the parent decodes frames inside this wait);
* **parent decoding** -- ``call_outcome`` (each frame as it arrives, for the stop rule) and ``assemble``;
* **peer comparison** -- ``apply._PeerJudge._judge`` (every peer op of every attempt, in the driver);
* in the child, the time inside the candidate's function per probe class (``CallOutcome.duration``);
* the trivial candidate's cost (``Sandbox.measure_overhead``) before and after, for the ratio.

Everything else (static ops, the exec ops' own bodies, apply's bookkeeping) is the total minus these.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_apply as B  # noqa: E402  (the CodeT loader and the task records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=30, help="the first N CodeT tasks (x10 attempts each)")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="with the generated probes found in the probe store (a second process), not cold",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ["VX_SANDBOX_LAYER"] = "forkserver"

    import vx.ops.apply as A
    import vx.sandbox as S
    import vx.sandbox.forkserver as FS
    from vx.families.code.ops import run as R
    from vx.families.code.probes import probe as P
    from vx.families.family import Family
    from vx.ops.item import Item

    fam = Family(B.ROOT / "examples" / "humaneval")
    programs = B.load_codet(10)
    order: list[str] = []
    for _, t, _ in programs:
        if t not in order:
            order.append(t)
    keep = set(order[: args.tasks])
    items = [Item(id=i, task=t, output=p) for i, t, p in programs if t in keep]
    tasks = B.all_tasks(fam)
    box = R.sandbox()

    seconds: dict[str, float] = defaultdict(float)
    depth: dict[str, int] = defaultdict(int)

    def wrap(owner, name: str, key: str) -> None:
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def timed(*a, **k):
            depth[key] += 1
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                depth[key] -= 1
                if depth[key] == 0:  # outermost call only (recursive or nested calls counted once)
                    seconds[key] += time.perf_counter() - start

        setattr(owner, name, timed)

    wrap(P, "generated", "probe generation")
    wrap(R, "run_budgets", "run budgets")
    wrap(S.Sandbox, "run_calls", "sandbox run, parent side in all")
    wrap(FS, "_watch", "waiting for the child (fork .. last frame)")
    wrap(S, "call_outcome", "parent decoding: frames as they arrive")
    wrap(S, "assemble", "parent decoding: assemble")
    wrap(A._PeerJudge, "_judge", "peer comparison")

    os.environ["VX_PROBE_CACHE"] = tempfile.mkdtemp(prefix="vx-bench-probes-")  # an empty probe store: cold
    if args.stored:  # fill the store, then measure what a second process grading these tasks does
        A.apply_ops(fam.pool(), items, tasks, jobs=1, cache=None, progress=False)
        seconds.clear()
    B.forget_per_task_work()
    trivial = [box.measure_overhead(runs=15)]
    start = time.perf_counter()
    A.apply_ops(fam.pool(), items, tasks, jobs=1, cache=None, progress=False)
    total = time.perf_counter() - start
    trivial.append(box.measure_overhead(runs=15))
    runs = list(R._runs.values())
    inside: dict[str, float] = defaultdict(float)
    calls = 0
    for r in runs:
        for p, c in zip(r.probes, r.calls):
            if c.status != "not_run":
                inside[p.klass] += c.duration or 0.0
                calls += 1
    n, nr = len(items), max(1, len(runs))
    out = {
        "items": n,
        "runs": len(runs),
        "loadavg": [round(x, 1) for x in os.getloadavg()],
        "trivial_candidate_ms": [round(x, 2) for x in trivial],
        "ms_per_item": round(1000 * total / n, 2),
        "calls_per_run": round(calls / nr, 1),
        "ms_per_run": {k: round(1000 * v / nr, 2) for k, v in seconds.items()},
        "child_in_function_ms_per_run": round(1000 * sum(inside.values()) / nr, 2),
        "child_in_function_ms_per_run_by_class": {
            k: round(1000 * v / nr, 3) for k, v in sorted(inside.items(), key=lambda kv: -kv[1])
        },
        "child_wall_ms_per_run": round(1000 * sum(r.report.wall_time for r in runs) / nr, 2),
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
