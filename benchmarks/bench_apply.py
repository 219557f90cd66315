"""Throughput of op application: items/s of the bundled family's whole seed pool, cold cache.

    python benchmarks/bench_apply.py [--per-task 10] [--layers forkserver,bwrap] [--jobs 1,2]
                                     [--label] [--evalplus] [--train] [--json OUT]

What it measures, in one run (so ratios are comparable on a shared machine):

* **grade** -- ``apply_ops`` of ``(any ...every seed op...)`` (all runnable ops of
  ``examples/humaneval``, root first) with no verdict cache, for each sandbox layer and each ``-j``:
  (a) the bundled train split (544 items: canonical solutions and AST mutants, some of them endless
  loops by construction), (b) CodeT's CodeGen-16B HumanEval samples
  (``../shared/data/samples/humaneval-codet/``), ``--per-task`` attempts per task (10: 1,640 programs;
  100: all 16,400);
* **label** (``--label``) -- vx's ground truth (``Grader``: HumanEval+ base + plus inputs, one sandboxed
  process per program, stop at the first wrong answer) on the same CodeT programs, expected outputs
  computed cold;
* **evalplus** (``--evalplus``) -- evalplus's own evaluator on the same programs (``check_correctness``,
  what ``evalplus.evaluate`` runs per sample: unsandboxed, forked processes; expected outputs with its
  ``trusted_exec``), with the same number of workers: the reference a user would otherwise run.

CodeT loader: vx's own (``vx.families.code.data.codet``, as ``vx data build humaneval`` reads the
files): each line of ``codegen16B_code_solution.jsonl`` is matched to its task by its exact prompt in
``HumanEval_for_code_generation.jsonl``; a program is ``prompt + sample`` cut at the earliest of CodeT's
stop sequences (``\\nclass``, ``\\ndef``, ``\\n#``, ``\\nif``, ``\\nprint``), so trailing test code is not run.
(Until the reader landed, this benchmark cut at the first column-0 ``def ``/``class ``/``if ``/``print(``/
``assert ``/``#`` line instead.)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
CODET = DATA / "samples" / "humaneval-codet"
#: An item whose op calls take this long ran into a time limit (an endless loop, a huge probe).
SLOW = 0.5


def load_codet(per_task: int) -> list[tuple[str, str, str]]:
    """(item id, task id, program), ``per_task`` attempts per task, in task order: vx's CodeT reader
    (lines matched to tasks by prompt, completions cut as CodeT's harness cuts them)."""
    from vx.families.code.data import codet

    prompts, _ = codet.read_task_prompts(CODET / "HumanEval_for_code_generation.jsonl")
    order = {tid: i for i, tid in enumerate(prompts.values())}
    rows = codet.read_solutions(CODET / "codegen16B_code_solution.jsonl", prompts)
    out = [(f"{r.task_id}#codet{k}", r.task_id, program)
           for r in sorted(rows, key=lambda r: order[r.task_id]) for k, program in enumerate(r.programs[:per_task])]
    return out


def _use_layer(layer: str) -> None:
    from vx.families.code.ops import run as code_ops
    from vx.sandbox import forkserver

    os.environ["VX_SANDBOX_LAYER"] = layer
    forkserver.shutdown()
    code_ops._sandbox_instance = None


def all_tasks(fam) -> dict:
    """The family's task records; tasks it left out (no usable example) get one without examples."""
    tasks = dict(fam.tasks)
    for line in (CODET / "HumanEval_for_code_generation.jsonl").open():
        t = json.loads(line)
        tasks.setdefault(t["task_id"], {"id": t["task_id"], "prompt": t["prompt"], "entry_point": t["entry_point"],
                                        "examples": []})
    return tasks


def grade(fam, items, jobs: int) -> tuple[float, object]:
    from vx.ops.apply import apply_ops

    from vx.families.code.ops import run as code_ops

    code_ops._runs.clear()  # cold: no sandbox run remembered from an earlier measurement
    pool = fam.pool()
    start = time.perf_counter()
    app = apply_ops(pool, items, all_tasks(fam), jobs=jobs, cache=None, progress=False)
    return time.perf_counter() - start, app


def label_vx(programs, jobs: int, layer: str) -> tuple[float, float, dict]:
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader
    from vx.sandbox import Sandbox, SandboxConfig

    plus = task_data.load_humaneval_plus(DATA / "evalplus")
    version = task_data.plus_version("humaneval+", DATA / "evalplus")
    with tempfile.TemporaryDirectory() as cache:
        grader = Grader(plus, version=version, cache_dir=cache, workers=jobs,
                        sandbox=Sandbox(SandboxConfig(memory_mb=4096, layer=layer)))
        start = time.perf_counter()
        problems = grader.prepare({t for _, t, _ in programs})
        expected = time.perf_counter() - start
        usable = [p for p in programs if p[1] not in problems]  # references the sandbox cannot report
        start = time.perf_counter()
        truths = grader.grade_many([(plus[t], prog) for _, t, prog in usable])
        seconds = time.perf_counter() - start
    return seconds, expected, {i: t.label for (i, _, _), t in zip(usable, truths)}


def label_evalplus(programs, jobs: int) -> tuple[float, float, dict]:
    from concurrent.futures import ProcessPoolExecutor

    from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
    from evalplus.evaluate import check_correctness
    from evalplus.gen.util import trusted_exec

    from vx.families.code.data import tasks as task_data

    path = task_data.find_plus_file("humaneval+", DATA / "evalplus")
    with task_data._override("humaneval+", path):
        from evalplus.data import get_human_eval_plus

        problems = get_human_eval_plus()
    start = time.perf_counter()
    expected = {}
    for tid in sorted({t for _, t, _ in programs}):
        p = problems[tid]
        oracle = {}
        for phase in ("base", "plus"):
            oracle[phase], oracle[f"{phase}_time"] = trusted_exec(
                p["prompt"] + p["canonical_solution"], p[f"{phase}_input"], p["entry_point"], record_time=True,
                output_not_none=False)
        expected[tid] = oracle
    expected_seconds = time.perf_counter() - start
    start = time.perf_counter()
    labels = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {i: pool.submit(check_correctness, "humaneval", n, problems[t], prog, expected[t], False, True, i,
                                  DEFAULT_MIN_TIME_LIMIT, DEFAULT_GT_TIME_LIMIT_FACTOR)
                   for n, (i, t, prog) in enumerate(programs)}
        for i, fut in futures.items():
            r = fut.result()
            labels[i] = "pass" if r["base"][0] == r["plus"][0] == "pass" else "fail"
    return time.perf_counter() - start, expected_seconds, labels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-task", type=int, default=10, help="CodeT attempts per task (10: 1,640; 100: 16,400)")
    parser.add_argument("--layers", default="forkserver,bwrap")
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--train", action="store_true", help="also the bundled train split")
    parser.add_argument("--label", action="store_true", help="also vx's ground-truth labelling of the CodeT programs")
    parser.add_argument("--evalplus", action="store_true", help="also evalplus's own evaluator on them")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not CODET.is_dir():
        print(f"needs {CODET} (../shared/data); not found", file=sys.stderr)
        return 2

    from vx.families.family import Family
    from vx.ops.item import Item

    fam = Family(ROOT / "examples" / "humaneval")
    programs = load_codet(args.per_task)
    codet_items = [Item(id=i, task=t, output=p) for i, t, p in programs]
    layers = args.layers.split(",")
    jobs_list = [int(j) for j in args.jobs.split(",")]
    rows = []

    def report(row: dict) -> None:
        rows.append(row)
        print(json.dumps(row), flush=True)

    for layer in layers:
        _use_layer(layer)
        from vx.families.code.ops.run import sandbox

        overhead = sandbox().measure_overhead(runs=9)
        report({"what": "overhead", "layer": layer, "ms_per_trivial_candidate": round(overhead, 2)})
        for jobs in jobs_list:
            if args.train:
                items = list(fam.split("train").items)
                secs, app = grade(fam, items, jobs)
                report({"what": "grade", "data": "train", "layer": layer, "jobs": jobs, "items": len(items),
                        "seconds": round(secs, 2), "items_per_s": round(len(items) / secs, 1)})
            secs, app = grade(fam, codet_items, jobs)
            slow = [it for it in codet_items if app.item_seconds.get(it.id, 0.0) >= SLOW]
            report({"what": "grade", "data": f"codet x{args.per_task}", "layer": layer, "jobs": jobs,
                    "items": len(codet_items), "seconds": round(secs, 2),
                    "items_per_s": round(len(codet_items) / secs, 1), "slow_items": len(slow),
                    "seconds_in_slow_items": round(sum(app.item_seconds[it.id] for it in slow), 1)})
            if slow:  # the same, cold again, without the items that run into a time limit
                quick = [it for it in codet_items if app.item_seconds.get(it.id, 0.0) < SLOW]
                secs, _ = grade(fam, quick, jobs)
                report({"what": "grade", "data": f"codet x{args.per_task} without slow items", "layer": layer,
                        "jobs": jobs, "items": len(quick), "seconds": round(secs, 2),
                        "items_per_s": round(len(quick) / secs, 1)})
            if args.label:
                secs, exp, labels = label_vx(programs, jobs, layer)
                report({"what": "label", "data": f"codet x{args.per_task}", "by": "vx", "layer": layer, "jobs": jobs,
                        "items": len(labels), "seconds": round(secs, 2), "expected_seconds": round(exp, 2),
                        "items_per_s": round(len(labels) / secs, 1),
                        "pass": sum(v == "pass" for v in labels.values())})
                rows[-1]["_labels"] = labels
    if args.evalplus:
        for jobs in jobs_list:
            secs, exp, labels = label_evalplus(programs, jobs)
            report({"what": "label", "data": f"codet x{args.per_task}", "by": "evalplus", "jobs": jobs,
                    "items": len(programs), "seconds": round(secs, 2), "expected_seconds": round(exp, 2),
                    "items_per_s": round(len(programs) / secs, 1), "pass": sum(v == "pass" for v in labels.values())})
            rows[-1]["_labels"] = labels
    ours = [r for r in rows if r.get("what") == "label" and r.get("by") == "vx"]
    theirs = [r for r in rows if r.get("what") == "label" and r.get("by") == "evalplus"]
    if ours and theirs:
        a, b = ours[0]["_labels"], theirs[0]["_labels"]
        report({"what": "label agreement", "agree": sum(a[k] == b[k] for k in a if k in b), "of": len(a),
                "left_out_by_vx": len(b) - len(a)})
    if args.json:
        args.json.write_text(json.dumps([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
