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
* **overhead** -- the trivial candidate's cost one at a time (``Sandbox.measure_overhead``) and per worker
  with ``-j`` workers running it side by side (the measure a real attempt's cost at that ``-j`` is given in:
  workers x wall per item);
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
import contextlib
import json
import os
import subprocess
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
    out = [
        (f"{r.task_id}#codet{k}", r.task_id, program)
        for r in sorted(rows, key=lambda r: order[r.task_id])
        for k, program in enumerate(r.programs[:per_task])
    ]
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
        tasks.setdefault(
            t["task_id"], {"id": t["task_id"], "prompt": t["prompt"], "entry_point": t["entry_point"], "examples": []}
        )
    return tasks


def forget_per_task_work() -> None:
    """Clear this process's memos of per-task work (probes, examples, domains, run plans, sandbox runs), so
    that a measurement -- and the workers it forks, which inherit the memos -- starts cold."""
    from vx.families.code.ops import invariants, peers
    from vx.families.code.ops import run as code_ops
    from vx.families.code.probes import probe

    for memo in (
        code_ops._runs,
        code_ops._plans,
        probe._GENERATED_CACHE,
        probe._PROBES_CACHE,
        probe._TEXTS_CACHE,
        probe._EXAMPLES_CACHE,
        invariants._INFERRED,
        invariants._ACCEPTED,
        peers._DECODED,
        peers._SAME,
    ):
        memo.clear()


def grade(fam, items, jobs: int, probes_dir: Path | None = None) -> tuple[float, object]:
    """Seconds and the Application of grading `items` with the whole seed pool, `jobs` workers, cold: no
    verdict cache, no per-task work in memory, and the generated probes from an empty store (a fresh
    directory) -- unless `probes_dir` names a store an earlier grading filled (what a second process
    grading the same tasks finds: ``vx.families.code.probes.store``)."""
    from vx.ops.apply import apply_ops

    forget_per_task_work()
    os.environ["VX_PROBE_CACHE"] = str(probes_dir or tempfile.mkdtemp(prefix="vx-bench-probes-"))
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
        grader = Grader(
            plus,
            version=version,
            cache_dir=cache,
            workers=jobs,
            sandbox=Sandbox(SandboxConfig(memory_mb=4096, layer=layer)),
        )
        start = time.perf_counter()
        problems = grader.prepare({t for _, t, _ in programs})
        expected = time.perf_counter() - start
        usable = [p for p in programs if p[1] not in problems]  # references the sandbox cannot report
        start = time.perf_counter()
        truths = grader.grade_many([(plus[t], prog) for _, t, prog in usable])
        seconds = time.perf_counter() - start
    return seconds, expected, {i: t.label for (i, _, _), t in zip(usable, truths)}


@contextlib.contextmanager
def busy(n: int):
    """``n`` busy background processes (pure-Python loops) for the duration, killed afterwards."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def hidden_labels(dataset: str, items, tasks, cache: Path, jobs: int) -> dict[str, str]:
    """Hidden-test labels ("pass"/"fail") of the items (vx's ``Grader``: the + tests, evalplus's rules),
    computed once and kept in ``cache`` (JSON): labels must not move between the runs they compare."""
    import attrs

    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader

    known = json.loads(cache.read_text()) if cache.is_file() else {}
    todo = [it for it in items if it.id not in known]
    if todo:
        plus = task_data.load(dataset, DATA / "evalplus")
        version = task_data.plus_version(dataset, DATA / "evalplus")
        graded = {}
        for it in todo:
            rec = tasks[it.task]
            base = plus.get(str((rec.get("meta") or {}).get("evalplus_task") or it.task))
            if base is None:
                continue
            graded[it.task] = attrs.evolve(
                base, entry_point=rec.get("entry_point") or base.entry_point, aliases=tuple(rec.get("aliases") or ())
            )
        grader = Grader(graded, version=version, workers=jobs)
        problems = grader.prepare(sorted(graded))
        usable = [it for it in todo if it.task in graded and it.task not in problems]
        for it, truth in zip(usable, grader.grade_many([(graded[it.task], it.output) for it in usable])):
            known[it.id] = truth.label
        cache.write_text(json.dumps(known))
    return {it.id: known[it.id] for it in items if it.id in known}


#: Words of an op message that say a call ran out of time (the ``timeout`` op and the peer ops), or that
#: the attempt ended its own run (died, or starved its own probes of the run's CPU budget) -- what a slow or
#: memory-hungry correct attempt could be accused of.
TIME_WORDS = (
    "did not return",
    "in time",
    "time limit",
    "timed out",
    "timeout",
    "cpu budget",
    "killed its process",
    "got no answer",
    "were ended",
)


def accused(app, items, labels: dict[str, str]) -> dict:
    """Hidden-test-passing items that a time limit made an op flag: the ``timeout`` op's drawbacks, and
    drawbacks of any other op whose message says a call ran out of time (peer ops: "did not return in
    time"). Load must not change these counts."""
    from vx.dsl.verdict import Verdict

    m = app.matrix
    passing = [it for it in items if labels.get(it.id) == "pass"]
    by_timeout, by_other = [], []
    for it in passing:
        for op_name in m.op_names:
            if m.get(it.id, op_name) != Verdict.DRAWBACK:
                continue
            text = app.message(it.id, op_name).lower()
            if op_name == "timeout":
                by_timeout.append(it.id)
            elif any(w in text for w in TIME_WORDS):
                by_other.append(f"{it.id}:{op_name}")
    return {
        "passing": len(passing),
        "flagged_timeout": len(by_timeout),
        "timeout_items": by_timeout[:20],
        "flagged_by_time_elsewhere": len(by_other),
        "elsewhere": by_other[:20],
    }


def label_evalplus(programs, jobs: int) -> tuple[float, float, dict]:
    from concurrent.futures import ProcessPoolExecutor

    from evalplus.config import DEFAULT_GT_TIME_LIMIT_FACTOR, DEFAULT_MIN_TIME_LIMIT
    from evalplus.evaluate import check_correctness
    from evalplus.gen.util import trusted_exec

    from vx.families.code.data import tasks as task_data

    path = task_data.find_plus_file("humaneval+", DATA / "evalplus")
    if path is None:
        raise SystemExit(f"--evalplus needs the HumanEval+ release file ({DATA / 'evalplus'} or evalplus's cache)")
    # evalplus reads its override variable when evalplus.data.humaneval is imported (and keeps it there)
    os.environ["HUMANEVAL_OVERRIDE_PATH"] = str(path)
    from evalplus.data import humaneval as evalplus_humaneval

    evalplus_humaneval.HUMANEVAL_OVERRIDE_PATH = str(path)
    problems = evalplus_humaneval.get_human_eval_plus()
    start = time.perf_counter()
    expected = {}
    for tid in sorted({t for _, t, _ in programs}):
        p = problems[tid]
        oracle = {}
        for phase in ("base", "plus"):
            oracle[phase], oracle[f"{phase}_time"] = trusted_exec(
                p["prompt"] + p["canonical_solution"],
                p[f"{phase}_input"],
                p["entry_point"],
                record_time=True,
                output_not_none=False,
            )
        expected[tid] = oracle
    expected_seconds = time.perf_counter() - start
    start = time.perf_counter()
    labels = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {
            i: pool.submit(
                check_correctness,
                "humaneval",
                n,
                problems[t],
                prog,
                expected[t],
                False,
                True,
                i,
                DEFAULT_MIN_TIME_LIMIT,
                DEFAULT_GT_TIME_LIMIT_FACTOR,
            )
            for n, (i, t, prog) in enumerate(programs)
        }
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
    parser.add_argument(
        "--accused",
        action="store_true",
        help="count hidden-test-passing attempts flagged for running out of time (labels cached)",
    )
    parser.add_argument(
        "--mbpp",
        type=Path,
        default=None,
        help="also an MBPP+ family built with `vx data build mbpp --subset all` (its every item)",
    )
    parser.add_argument(
        "--quickstart",
        action="store_true",
        help="also the bundled family's 614 outputs: sandbox seconds (wall and CPU) of their runs",
    )
    parser.add_argument("--busy", type=int, default=0, help="busy background processes during the measurements")
    parser.add_argument("--no-rerun", action="store_true", help="do not grade CodeT again without its slow items")
    parser.add_argument("--skip-codet", action="store_true", help="skip the CodeT grading rows")
    parser.add_argument(
        "--labels",
        type=Path,
        default=Path(tempfile.gettempdir()) / "vx-bench-labels",
        help="directory where hidden-test labels are cached between runs",
    )
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

    with busy(args.busy):
        _measure(args, fam, programs, codet_items, layers, jobs_list, rows, report)
    if args.json:
        args.json.write_text(
            json.dumps([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], indent=1)
        )
    return 0


def sandbox_time(fam, items) -> dict:
    """Grade ``items`` in this process (-j 1) and sum the wall and CPU seconds of their sandbox runs (the
    runs memo of ``vx.families.code.ops.run`` holds each run once)."""
    from vx.families.code.ops import run as code_ops

    secs, _ = grade(fam, items, 1)
    runs = list(code_ops._runs.values())

    def cpu(run) -> float:
        return sum(getattr(c, "cpu", None) or c.duration or 0.0 for c in run.calls)

    timed_out = [r for r in runs if any(c.status == "timeout" for c in r.calls) or r.report.status == "timeout"]
    return {
        "items": len(items),
        "seconds": round(secs, 2),
        "runs": len(runs),
        "sandbox_wall_s": round(sum(r.report.wall_time for r in runs), 2),
        "calls_cpu_s": round(sum(cpu(r) for r in runs), 2),
        "runs_with_a_timeout": len(timed_out),
        "their_wall_s": round(sum(r.report.wall_time for r in timed_out), 2),
    }


def _trivial_runs(n: int, ready) -> None:
    from vx.families.code.ops.run import sandbox

    box = sandbox()
    box.measure_overhead(runs=3)  # warm: its fork server started
    ready.wait()  # the timed runs of every worker start together
    box.measure_overhead(runs=n)


def trivial_per_worker(jobs: int, runs: int = 150) -> float:
    """The trivial candidate's cost per worker with `jobs` workers running it side by side (forked processes,
    each with its own fork server, as `apply_ops` workers; ``Sandbox.run_calls`` whole, parent side
    included): `jobs` x wall ms per run -- the measure a real attempt's cost at that `-j` is given in
    (`jobs` x wall per item), so that the two compare alike when the workers compete for the cores."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    ready = ctx.Barrier(jobs + 1)
    procs = [ctx.Process(target=_trivial_runs, args=(runs, ready)) for _ in range(jobs)]
    for p in procs:
        p.start()
    ready.wait()
    start = time.perf_counter()
    for p in procs:
        p.join()
    return jobs * 1000 * (time.perf_counter() - start) / (jobs * runs)


def _measure(args, fam, programs, codet_items, layers, jobs_list, rows, report) -> None:
    from vx.families.family import Family

    args.labels.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        _use_layer(layer)
        from vx.families.code.ops.run import sandbox

        overhead = sandbox().measure_overhead(runs=9)
        report({"what": "overhead", "layer": layer, "ms_per_trivial_candidate": round(overhead, 2)})
        for jobs in jobs_list:
            report(
                {
                    "what": "overhead",
                    "layer": layer,
                    "jobs": jobs,
                    "ms_per_trivial_candidate_per_worker": round(trivial_per_worker(jobs), 2),
                }
            )
            if args.train:
                items = list(fam.split("train").items)
                secs, app = grade(fam, items, jobs)
                report(
                    {
                        "what": "grade",
                        "data": "train",
                        "layer": layer,
                        "jobs": jobs,
                        "items": len(items),
                        "seconds": round(secs, 2),
                        "items_per_s": round(len(items) / secs, 1),
                    }
                )
            if not args.skip_codet:
                _codet(args, fam, codet_items, layer, jobs, report)
            if args.mbpp is not None:
                mfam = Family(args.mbpp)
                mitems = [it for split in ("train", "dev") for it in mfam.split(split).items]  # never the locked split
                secs, app = grade(mfam, mitems, jobs)
                report(
                    {
                        "what": "grade",
                        "data": f"mbpp+ {args.mbpp.name}",
                        "layer": layer,
                        "jobs": jobs,
                        "items": len(mitems),
                        "seconds": round(secs, 2),
                        "items_per_s": round(len(mitems) / secs, 1),
                        "busy": args.busy,
                    }
                )
                if args.accused:
                    labels = hidden_labels(
                        "mbpp+", mitems, mfam.tasks, args.labels / f"mbpp-{args.mbpp.name}.json", jobs
                    )
                    report(
                        {
                            "what": "accused",
                            "data": f"mbpp+ {args.mbpp.name}",
                            "layer": layer,
                            "jobs": jobs,
                            "busy": args.busy,
                            **accused(app, mitems, labels),
                        }
                    )
            if args.quickstart:
                qitems = [it for split in ("train", "dev") for it in fam.split(split).items]
                report(
                    {
                        "what": "quickstart sandbox time",
                        "layer": layer,
                        "jobs": 1,
                        "busy": args.busy,
                        **sandbox_time(fam, qitems),
                    }
                )
            if args.label:
                secs, exp, labels = label_vx(programs, jobs, layer)
                report(
                    {
                        "what": "label",
                        "data": f"codet x{args.per_task}",
                        "by": "vx",
                        "layer": layer,
                        "jobs": jobs,
                        "items": len(labels),
                        "seconds": round(secs, 2),
                        "expected_seconds": round(exp, 2),
                        "items_per_s": round(len(labels) / secs, 1),
                        "pass": sum(v == "pass" for v in labels.values()),
                    }
                )
                rows[-1]["_labels"] = labels
    if args.evalplus:
        for jobs in jobs_list:
            secs, exp, labels = label_evalplus(programs, jobs)
            report(
                {
                    "what": "label",
                    "data": f"codet x{args.per_task}",
                    "by": "evalplus",
                    "jobs": jobs,
                    "items": len(programs),
                    "seconds": round(secs, 2),
                    "expected_seconds": round(exp, 2),
                    "items_per_s": round(len(programs) / secs, 1),
                    "pass": sum(v == "pass" for v in labels.values()),
                }
            )
            rows[-1]["_labels"] = labels
    _agreement(rows, report)


def _codet(args, fam, codet_items, layer, jobs, report) -> None:
    secs, app = grade(fam, codet_items, jobs)
    probes_dir = Path(os.environ["VX_PROBE_CACHE"])  # the store this cold grading filled
    slow = [it for it in codet_items if app.item_seconds.get(it.id, 0.0) >= SLOW]
    report(
        {
            "what": "grade",
            "data": f"codet x{args.per_task}",
            "layer": layer,
            "jobs": jobs,
            "items": len(codet_items),
            "seconds": round(secs, 2),
            "items_per_s": round(len(codet_items) / secs, 1),
            "slow_items": len(slow),
            "seconds_in_slow_items": round(sum(app.item_seconds[it.id] for it in slow), 1),
        }
    )
    # the same again in a process that finds the probes stored (a second `vx grade` of these tasks)
    secs, _ = grade(fam, codet_items, jobs, probes_dir=probes_dir)
    report(
        {
            "what": "grade",
            "data": f"codet x{args.per_task}, probes stored",
            "layer": layer,
            "jobs": jobs,
            "items": len(codet_items),
            "seconds": round(secs, 2),
            "items_per_s": round(len(codet_items) / secs, 1),
        }
    )
    if args.accused:
        labels = hidden_labels("humaneval+", codet_items, all_tasks(fam), args.labels / "codet.json", jobs)
        report(
            {
                "what": "accused",
                "data": f"codet x{args.per_task}",
                "layer": layer,
                "jobs": jobs,
                "busy": args.busy,
                **accused(app, codet_items, labels),
            }
        )
    if slow and not args.no_rerun:  # the same, cold again (empty store), without the items that run into a time limit
        quick = [it for it in codet_items if app.item_seconds.get(it.id, 0.0) < SLOW]
        secs, _ = grade(fam, quick, jobs)
        report(
            {
                "what": "grade",
                "data": f"codet x{args.per_task} without slow items",
                "layer": layer,
                "jobs": jobs,
                "items": len(quick),
                "seconds": round(secs, 2),
                "items_per_s": round(len(quick) / secs, 1),
            }
        )
        secs, _ = grade(fam, quick, jobs, probes_dir=probes_dir)
        report(
            {
                "what": "grade",
                "data": f"codet x{args.per_task} without slow items, probes stored",
                "layer": layer,
                "jobs": jobs,
                "items": len(quick),
                "seconds": round(secs, 2),
                "items_per_s": round(len(quick) / secs, 1),
            }
        )


def _agreement(rows, report) -> None:
    ours = [r for r in rows if r.get("what") == "label" and r.get("by") == "vx"]
    theirs = [r for r in rows if r.get("what") == "label" and r.get("by") == "evalplus"]
    if ours and theirs:
        a, b = ours[0]["_labels"], theirs[0]["_labels"]
        report(
            {
                "what": "label agreement",
                "agree": sum(a[k] == b[k] for k in a if k in b),
                "of": len(a),
                "left_out_by_vx": len(b) - len(a),
            }
        )
    # vx's grading (the whole seed pool) and labelling as ratios of evalplus's evaluator, same programs and
    # workers, measured in this run: > 1 is faster than evalplus
    for ref in theirs:
        same = [
            r
            for r in rows
            if r.get("jobs") == ref["jobs"]
            and r.get("data") == ref["data"]
            and (r.get("what") == "grade" or (r.get("what") == "label" and r.get("by") == "vx"))
        ]
        for r in same:
            report(
                {
                    "what": "ratio to evalplus",
                    "of": "vx grade" if r["what"] == "grade" else "vx label",
                    "layer": r.get("layer"),
                    "jobs": ref["jobs"],
                    "items_per_s": r["items_per_s"],
                    "evalplus_items_per_s": ref["items_per_s"],
                    "ratio": round(r["items_per_s"] / ref["items_per_s"], 3),
                }
            )


if __name__ == "__main__":
    sys.exit(main())
