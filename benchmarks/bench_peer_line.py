"""Whom `disagrees_with_peers` accuses, by the hidden tests' label, on real samples graded together.

    python benchmarks/bench_peer_line.py --samples CODET10.jsonl codellama.jsonl gpt-3.5-turbo-0613.jsonl \
        --data-dir ../shared/data/evalplus [--line 1.0 4.0] [--line 0.05 10]

Grades every sample with the expression ``(any disagrees_with_peers)`` against HumanEval+ (the attempts at one
task together, so the peer op compares them), with ``--truth`` (the hidden tests), and counts, per half of the
tasks (``design``: even task numbers, the half the peer rules are chosen on; ``check``: the odd ones) and per
source file, the correct attempts the op accuses and the failures it catches, and how many of those messages
speak of time. Each ``--line FLOOR FACTOR`` re-judges the same observations (kept in a verdict cache under
``--work``) with the peer line ``max(FLOOR, FACTOR x the median)``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from vx import Verifier
    from vx.families.code.probes import budgets
    from vx.grading import grade_samples, open_tasks
    from vx.ops.cache import VerdictCache

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", nargs="+", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--line", nargs=2, type=float, action="append", metavar=("FLOOR", "FACTOR"))
    ap.add_argument("--work", default="/tmp/vx-bench-peer-line")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    lines = args.line or [(budgets.PEER_FLOOR, budgets.PEER_FACTOR)]
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    expr = work / "peer.vx"
    expr.write_text("(any disagrees_with_peers)\n", encoding="utf-8")
    verifier = Verifier.load(str(expr), ROOT / "examples" / "humaneval")
    source = open_tasks("humaneval+", data_dir=args.data_dir)
    base = work / "observed.sqlite"
    for floor, factor in lines:
        path = work / f"line-{floor:g}-{factor:g}.sqlite"
        path.unlink(missing_ok=True)
        if base.exists():  # the observations of the first grading; the peer verdicts judged again
            shutil.copy(base, path)
            with VerdictCache(path) as cache:
                cache._db.execute("DELETE FROM verdicts WHERE op = 'disagrees_with_peers'")
        budgets.PEER_FLOOR, budgets.PEER_FACTOR = floor, factor
        with VerdictCache(path) as cache:
            graded = grade_samples(
                verifier, source, args.samples, truth=True, jobs=args.jobs, cache=cache, progress=False, anchor=False
            )
        if not base.exists():
            shutil.copy(path, base)
        counts: dict[str, dict[str, int]] = {}
        for row in graded.rows():
            half = "design" if int(str(row["task"]).rsplit("/", 1)[-1]) % 2 == 0 else "check"
            where = f"{half} {row.get('model') or '?'}"
            c = counts.setdefault(where, {"pass": 0, "accused": 0, "fail": 0, "caught": 0, "about time": 0})
            fired = row.get("verdict:disagrees_with_peers") == "drawback"
            timely = "in time" in str(row.get("message:disagrees_with_peers") or "")
            if row["truth"] == "pass":
                c["pass"] += 1
                c["accused"] += fired
            elif row["truth"] == "fail":
                c["fail"] += 1
                c["caught"] += fired
            c["about time"] += fired and timely
        print(json.dumps({"line": [floor, factor], "counts": counts}, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
