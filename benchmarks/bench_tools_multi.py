"""The multi-turn tools family's design figures: every op's false alarms and recall per BFCL category on
the train split's labels, and the replay's cost beside the code family's.

    python benchmarks/bench_tools_multi.py --data-dir ../shared/data/tools --work /tmp/vx-tools-multi \\
        --out /tmp/vx-tools-multi/ops.json [--split train] [-j 2] [--cost]

It builds the multi-turn family (``vx.families.tools.data.multi.build_multi``, seed 0, labels as the files
give them), applies the ``tools-multi`` pack to the split (its peers: the other attempts of the same
tasks), and prints, per op and per category, the share of correct trajectories it flags (false alarms),
of failing ones it flags (recall), and how often it abstains. Train labels come from the build, never from
the family files (train is stored unlabeled). ``--split locked`` is for the audit only: never choose a
constant on it.

``--cost``: the replay's CPU per trajectory (the sandboxed child's CPU on its requests, as the sandbox
measures it, and the parent's) and grading throughput with ``-j`` workers (trajectories per second, the
verdict cache off), beside the same for the bundled HumanEval family's seed (the code family's sandboxed runs).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def self_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def op_table(family_dir: Path, truth: dict[str, str], split: str, jobs: int) -> dict[str, Any]:
    """Per op and category: flagged share of correct and failing trajectories, abstentions."""
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    fam = Family(family_dir)
    items = list(fam.audit().labeled_split().items) if split == "locked" else list(fam.split(split).items)
    pool = fam.pool()
    t0 = time.perf_counter()
    app = apply_ops(pool, items, fam.tasks, jobs=jobs, cache=None, progress=False, peers=fam.peers)
    seconds = time.perf_counter() - t0
    rows: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for it in items:
        cat = str(fam.tasks[it.task].get("category", "")).removeprefix("multi_turn_")
        label = truth.get(it.id)
        if label not in ("pass", "fail"):
            continue
        for name in app.matrix.op_names:
            v = int(app.matrix.get(it.id, name))
            cell = rows[name][cat]
            cell[f"n_{label}"] += 1
            cell[f"{label}_{'fires' if v == 1 else 'clean' if v == 0 else 'abstains'}"] += 1
    table: dict[str, Any] = {}
    for name, cats in rows.items():
        table[name] = {}
        for cat, c in sorted(cats.items()):
            table[name][cat] = {
                "false_alarms": round(c["pass_fires"] / max(1, c["n_pass"]), 4),
                "false_alarm_count": f"{c['pass_fires']}/{c['n_pass']}",
                "recall": round(c["fail_fires"] / max(1, c["n_fail"]), 4),
                "recall_count": f"{c['fail_fires']}/{c['n_fail']}",
                "abstains": round((c["pass_abstains"] + c["fail_abstains"]) / max(1, c["n_pass"] + c["n_fail"]), 4),
            }
    return {"split": split, "items": len(items), "seconds": round(seconds, 1), "ops": table}


def replay_cost(family_dir: Path, n: int) -> dict[str, Any]:
    """CPU of replaying ``n`` trajectories one by one: the sandboxed children's and the parent's, per trajectory."""
    from vx.families.family import Family
    from vx.families.tools.replay import replay
    from vx.families.tools.trajectory import TrajectoryError, read_trajectory

    fam = Family(family_dir)
    items = list(fam.split("train").items)[:n]
    replay(fam.tasks[items[0].task], read_trajectory(items[0].output))  # sandbox and staging made once
    s0, w0 = self_cpu(), time.perf_counter()
    done = 0
    child = 0.0
    for it in items:
        try:
            traj = read_trajectory(it.output)
        except TrajectoryError:
            continue
        child += replay(fam.tasks[it.task], traj).cpu
        done += 1
    return {
        "trajectories": done,
        "child_cpu_ms": round(1000 * child / done, 2),
        "parent_cpu_ms": round(1000 * (self_cpu() - s0) / done, 2),
        "wall_ms": round(1000 * (time.perf_counter() - w0) / done, 2),
    }


def throughput(family_dir: Path, expr: str, split: str, jobs: int) -> dict[str, Any]:
    """Items per second of applying ``expr``'s ops to a split with ``jobs`` workers, no verdict cache."""
    from vx.dsl.parse import parse
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    fam = Family(family_dir)
    pool = fam.pool()
    node = parse(expr, known_ops=list(pool.names))
    items = list(fam.split(split).items)
    c0, w0 = children_cpu() + self_cpu(), time.perf_counter()
    apply_ops(pool, items, fam.tasks, ops=list(node.op_names()), jobs=jobs, cache=None, progress=False, peers=fam.peers)
    wall = time.perf_counter() - w0
    return {
        "items": len(items),
        "seconds": round(wall, 1),
        "items_per_s": round(len(items) / wall, 2),
        "cpu_s": round(children_cpu() + self_cpu() - c0, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data" / "tools")
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--split", choices=("train", "dev", "locked"), default="train")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument(
        "--cost", action="store_true", help="also measure replay cost and throughput (and the code family's)"
    )
    ap.add_argument("--cost-items", type=int, default=200)
    args = ap.parse_args(argv)

    from vx.families.tools.data.multi import build_multi

    fam_dir = args.work / "multi"
    log(f"building the multi-turn family into {fam_dir}")
    report = build_multi(args.data_dir, fam_dir, seed=0, relabel=False)
    result: dict[str, Any] = {"family": str(fam_dir), "counts": report.counts}
    log(f"applying the tools-multi pack to {args.split}")
    result["ops"] = op_table(fam_dir, report.truth, args.split, args.jobs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    if args.cost:
        log("replay cost")
        result["replay"] = replay_cost(fam_dir, args.cost_items)
        log("throughput: tools-multi")
        seed = (fam_dir / "seed.vx").read_text(encoding="utf-8")
        result["throughput_tools"] = throughput(fam_dir, seed, "train", args.jobs)
        log("throughput: humaneval (the code family)")
        he = ROOT / "examples" / "humaneval"
        result["throughput_code"] = throughput(he, (he / "seed.vx").read_text(encoding="utf-8"), "train", args.jobs)
        result["throughput_ratio"] = round(
            result["throughput_tools"]["items_per_s"] / result["throughput_code"]["items_per_s"], 3
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    for name, cats in result["ops"]["ops"].items():
        line = "  ".join(
            f"{cat}: FA {c['false_alarm_count']} ({c['false_alarms']:.3f}) recall {c['recall_count']}"
            for cat, c in cats.items()
        )
        print(f"{name:28s} {line}")
    if args.cost:
        print(json.dumps({k: result[k] for k in ("replay", "throughput_tools", "throughput_code", "throughput_ratio")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
