"""Example invariants on real attempts: per kind, the failures it catches and the correct attempts it flags.

For each family directory given (built by ``vx data build``), every attempt of the chosen splits (never the
locked split: ``--splits`` refuses it) is labelled by the dataset's hidden tests (HumanEval+ / MBPP+, the same
sandboxed grader the builders use; expected outputs cached), run once in the sandbox over its probes (the one
shared run of the exec ops), and checked against every invariant kind of
:mod:`vx.families.code.ops.invariants` (:data:`~vx.families.code.ops.invariants.KINDS`). Per kind it reports

* ``tasks``: tasks where the kind is inferred (it has support in the visible examples);
* ``correct``: attempts that pass the hidden tests, judged by the kind (it is inferred and a probe the domain
  accepts returned), and how many it flags (false alarms, the rate the default is chosen on);
* ``hard``: attempts that fail the hidden tests but pass their visible examples, judged, and how many it catches.

``--tasks even`` keeps the HumanEval tasks with an even number: the development half of the CodeT data that
docs/peers.md measures on (the odd half is never read). ``--records FILE`` writes one line per attempt (its
truth, the kinds it breaks and the op's message) for reading the false alarms.

Example::

    python benchmarks/bench_invariants.py --family codet=/tmp/fam/codet --tasks even
    python benchmarks/bench_invariants.py --family mbpp2=/tmp/fam/mbpp2 --family he2=/tmp/fam/he2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def even_task(task_id: str) -> bool:
    try:
        return int(task_id.rsplit("/", 1)[1]) % 2 == 0
    except (IndexError, ValueError):
        return False


def grader_for(dataset: str, data_dir: Path, workers: int) -> tuple[Any, dict[str, Any]]:
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader

    plus = task_data.load_mbpp_plus(data_dir) if dataset == "mbpp+" else task_data.load_humaneval_plus(data_dir)
    version = task_data.plus_version(dataset, data_dir)
    return Grader(plus, version=version, workers=workers), plus


def judge(task: Mapping[str, Any], output: str) -> dict[str, Any]:
    """One attempt's run, checked against every invariant kind (and what the seed op says)."""
    from vx.families.code import ops as O
    from vx.families.code.ops import invariants as inv
    from vx.ops.core import Context

    ctx = Context()
    O.parses(task, output, ctx)
    example = int(O.fails_visible_example(task, output, ctx).verdict)
    inferred = inv.infer(task)
    run, _ = O.execution(task, output, ctx)
    row: dict[str, Any] = {
        "example": example,
        "kinds": sorted({i.kind for i in inferred.invariants}),
        "judged": [],
        "broken": {},
    }
    if run is None or not run.loaded or inferred.domain is None:
        return row
    broken, checked = inv.check_run(inferred, run)
    if checked:
        row["judged"] = row["kinds"]
    row["broken"] = {}
    for b in broken:
        row["broken"].setdefault(b.invariant.kind, b.message)
    op = inv.violates_example_invariant(task, output, ctx)
    row["op"] = [int(op.verdict), op.message]
    return row


def labels(grader: Any, plus: Mapping[str, Any], items: Sequence[Mapping[str, Any]], cache: Path | None) -> list[str]:
    """Each attempt's hidden-test label ("pass"/"fail"), remembered in `cache` (a JSON file keyed by the dataset
    version, task and a digest of the output) so that a rerun does not grade again."""
    import hashlib

    def key(it: Mapping[str, Any]) -> str:
        return (
            f"{grader.version}|{it['task']}|"
            + hashlib.sha256(it["output"].encode("utf-8", "surrogatepass")).hexdigest()
        )

    known: dict[str, str] = json.loads(cache.read_text(encoding="utf-8")) if cache and cache.is_file() else {}
    todo = [it for it in items if key(it) not in known]
    for it, truth in zip(todo, grader.grade_many([(plus[it["task"]], it["output"]) for it in todo])):
        known[key(it)] = truth.label
    if cache is not None and todo:
        cache.write_text(json.dumps(known), encoding="utf-8")
    return [known[key(it)] for it in items]


def measure(
    name: str,
    family: Path,
    *,
    splits: Sequence[str],
    tasks_filter: str,
    data_dir: Path,
    workers: int,
    records: Any = None,
    truth_cache: Path | None = None,
) -> dict[str, Any]:
    from vx.families.code.ops import invariants as inv

    tasks = {t["id"]: t for t in read_jsonl(family / "tasks.jsonl")}
    items = [it for s in splits for it in read_jsonl(family / f"{s}.jsonl")]
    if tasks_filter == "even":
        items = [it for it in items if even_task(it["task"])]
    dataset = "mbpp+" if any(t.startswith("Mbpp/") for t in tasks) else "humaneval+"
    started = time.perf_counter()
    grader, plus = grader_for(dataset, data_dir, workers)
    items = [it for it in items if it["task"] in plus]
    truths = labels(grader, plus, items, truth_cache)
    graded = time.perf_counter() - started
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(lambda it: judge(tasks[it["task"]], it["output"]), items))
    ran = time.perf_counter() - started
    per_kind = {k: Counter() for k in inv.KINDS}
    op = Counter()
    for it, truth, row in zip(items, truths, rows):
        correct = truth == "pass"
        hard = not correct and row["example"] == 0
        for k in inv.KINDS:
            c = per_kind[k]
            if k in row["kinds"]:
                c["tasks_" + it["task"]] = 1
            if k not in row["judged"]:
                continue
            hit = k in row["broken"]
            if correct:
                c["correct"] += 1
                c["false_alarms"] += hit
            elif hard:
                c["hard"] += 1
                c["caught"] += hit
            else:
                c["other_fail"] += 1
                c["other_fail_hit"] += hit
        if "op" in row:
            v = row["op"][0]
            group = "correct" if correct else ("hard" if hard else "other_fail")
            op[f"{group}_judged"] += v != -1
            op[f"{group}_fired"] += v == 1
        op["correct_total"] += correct
        op["hard_total"] += hard
        if records is not None:
            records.write(
                json.dumps(
                    {
                        "family": name,
                        "id": it["id"],
                        "task": it["task"],
                        "truth": truth,
                        "passes_example": row["example"] == 0,
                        **row,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    table = {}
    for k, c in per_kind.items():
        table[k] = {
            "tasks": sum(1 for key in c if key.startswith("tasks_")),
            "correct_judged": c["correct"],
            "false_alarms": c["false_alarms"],
            "false_alarm_rate": round(c["false_alarms"] / c["correct"], 4) if c["correct"] else None,
            "hard_judged": c["hard"],
            "hard_caught": c["caught"],
            "other_fail_judged": c["other_fail"],
            "other_fail_hit": c["other_fail_hit"],
        }
    return {
        "family": name,
        "dir": str(family),
        "splits": list(splits),
        "tasks_filter": tasks_filter,
        "dataset": dataset,
        "attempts": len(items),
        "tasks": len({it["task"] for it in items}),
        "correct": op["correct_total"],
        "hard_failures": op["hard_total"],
        "op": {"default_kinds": list(inv.DEFAULT_KINDS), **dict(op)},
        "kinds": table,
        "seconds": {"grading": round(graded, 1), "runs": round(ran, 1)},
    }


def render(result: Mapping[str, Any]) -> str:
    lines = [
        f"## {result['family']} ({result['dataset']}, splits {'+'.join(result['splits'])}, tasks "
        f"{result['tasks_filter']}): {result['attempts']} attempts of {result['tasks']} tasks, "
        f"{result['correct']} correct, {result['hard_failures']} failures that pass their visible example",
        "",
        "| kind | tasks | correct judged | false alarms | rate | hard judged | hard caught |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, r in result["kinds"].items():
        rate = "" if r["false_alarm_rate"] is None else f"{100 * r['false_alarm_rate']:.1f}%"
        lines.append(
            f"| {k} | {r['tasks']} | {r['correct_judged']} | {r['false_alarms']} | {rate} | "
            f"{r['hard_judged']} | {r['hard_caught']} |"
        )
    op = result["op"]
    lines += [
        "",
        f"`violates_example_invariant` (kinds: {', '.join(op['default_kinds'])}): fires on "
        f"{op.get('correct_fired', 0)} of {result['correct']} correct attempts "
        f"({op.get('correct_judged', 0)} judged), catches {op.get('hard_fired', 0)} of "
        f"{result['hard_failures']} failures that pass their visible example "
        f"({op.get('hard_judged', 0)} judged); fires on {op.get('other_fail_fired', 0)} other failures",
        f"time: grading {result['seconds']['grading']} s, runs {result['seconds']['runs']} s",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--family",
        action="append",
        required=True,
        metavar="NAME=DIR",
        help="a family directory built by vx data build (repeatable)",
    )
    ap.add_argument(
        "--splits",
        default="train,dev,peers",
        help="which splits to read, comma-separated (never locked) (default: %(default)s)",
    )
    ap.add_argument(
        "--tasks",
        choices=("all", "even"),
        default="all",
        help="even: only HumanEval tasks with an even number (the CodeT development half)",
    )
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA / "evalplus",
        help="folder with the HumanEval+ / MBPP+ release files (default: %(default)s)",
    )
    ap.add_argument("-j", "--jobs", type=int, default=2, help="sandboxes at once (default: %(default)s)")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    ap.add_argument("--records", type=Path, help="write one line per attempt here (JSONL)")
    ap.add_argument("--truth-cache", type=Path, help="a JSON file remembering the hidden-test labels between runs")
    args = ap.parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    if "locked" in splits:
        print("bench_invariants: the locked split is never read here (choose from train, dev, peers)", file=sys.stderr)
        return 2
    records = args.records.open("w", encoding="utf-8") if args.records else None
    results = []
    try:
        for spec in args.family:
            name, _, d = spec.partition("=")
            if not d:
                name, d = Path(spec).name, spec
            if not (Path(d) / "tasks.jsonl").is_file():
                print(f"bench_invariants: {d} is not a family directory (no tasks.jsonl); skipped", file=sys.stderr)
                continue
            res = measure(
                name,
                Path(d),
                splits=splits,
                tasks_filter=args.tasks,
                data_dir=args.data_dir,
                workers=args.jobs,
                records=records,
                truth_cache=args.truth_cache,
            )
            results.append(res)
            print(render(res), flush=True)
            print()
    finally:
        if records is not None:
            records.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
