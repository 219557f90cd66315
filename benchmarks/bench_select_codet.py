"""Best of n on CodeT's whole HumanEval file: vx's choice among CodeGen-16B's 100 samples per task, beside
CodeT's own dual-execution-agreement ranking of the same samples.

The samples are graded exactly as ``vx grade VERIFIER.vx codegen16B_code_solution.jsonl --tasks humaneval+
--truth --select chosen.jsonl`` grades them (:func:`vx.grading.grade_samples` with ``select=True``), except
that each task record also carries the shared model-written test cases (``codegen16B_test_case.jsonl``,
read as the family builder reads them: CodeT's extraction, the distinct literal ``f(args) == expected``
tests, most often written first, at most 30 per task), so that vx and CodeT see the same unlabeled tests.
CodeT's pick is its top-scoring consensus set (``outside_dual_agreement``'s CLEAN attempts, CodeT's
scoring of ``src/agreement.py``: tests passed x sqrt(attempts in the set)), counted as the expected value of
a random attempt of that set; where no attempt passes a test it has no signal, and its pick is a random
attempt. Everything is labelled by HumanEval+'s hidden tests.

    python benchmarks/bench_select_codet.py --out /tmp/codet-select.json [--tasks 20]

Skips cleanly (exit 0) when the CodeT files are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--codet-dir", type=Path, default=DATA / "samples" / "humaneval-codet")
    ap.add_argument("--data-dir", type=Path, default=DATA / "evalplus")
    ap.add_argument("--verifier", type=Path, default=ROOT / "examples" / "humaneval" / "seed.vx")
    ap.add_argument("--tasks", type=int, default=None, help="only the first N tasks of the file (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None, help="verdict cache (default: $VX_CACHE)")
    ap.add_argument("--out", type=Path, required=True, help="JSON file with every figure")
    ap.add_argument("--select", type=Path, default=None, help="also write vx's chosen samples (JSON lines)")
    args = ap.parse_args(argv)
    solutions = args.codet_dir / "codegen16B_code_solution.jsonl"
    tests = args.codet_dir / "codegen16B_test_case.jsonl"
    task_file = args.codet_dir / "HumanEval_for_code_generation.jsonl"
    if not (solutions.is_file() and tests.is_file() and task_file.is_file()):
        print(f"no CodeT files in {args.codet_dir}: nothing to measure (skipped)")
        return 0

    import numpy as np

    from vx.families.code.data import codet
    from vx.grading import grade_samples, open_tasks, verifier_for
    from vx.ops.apply import apply_ops
    from vx.ops.cache import VerdictCache

    source = open_tasks("humaneval+", data_dir=args.data_dir)
    prompts, entries = codet.read_task_prompts(task_file)
    written = codet.read_tests(tests, prompts, entries)
    tasks = {}
    for tid, record in source.tasks.items():
        cases = written.get(tid)
        model_tests = codet.model_test_records(cases, entries[tid])[0] if cases else []
        tasks[tid] = {**record, **({"model_tests": model_tests} if model_tests else {})}
    samples = solutions
    if args.tasks is not None:  # the first N lines of the file (tasks in the file's order)
        lines = solutions.read_text(encoding="utf-8").splitlines()[: args.tasks]
        where = Path(tempfile.mkdtemp(prefix="codet-first-"))
        (where / task_file.name).write_bytes(task_file.read_bytes())  # read beside the samples
        samples = where / solutions.name
        samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    source = attrs.evolve(source, tasks=tasks)
    verifier = verifier_for(args.verifier, source)
    cache = VerdictCache(args.cache or os.environ.get("VX_CACHE") or Path.home() / ".cache" / "vx" / "verdicts.sqlite")

    t0, c0 = time.perf_counter(), _cpu()
    graded = grade_samples(
        verifier, source, [samples], truth=True, jobs=args.jobs, cache=cache, progress=False, select=True, anchor=False
    )
    seconds, cpu = time.perf_counter() - t0, _cpu() - c0
    items = graded.items
    # CodeT's ranking of the same samples: the dual-agreement baseline op on the same observations (cached)
    app = apply_ops(
        verifier.pool, items, tasks, ops=["outside_dual_agreement"], jobs=args.jobs, cache=cache, progress=False
    )
    dual = app.matrix.column("outside_dual_agreement")
    ok = np.array([t["label"] == "pass" for t in graded.truth])
    keep = graded.truth_tasks
    by_task: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        if it.task in keep:
            by_task.setdefault(it.task, []).append(i)
    codet_pick = []
    for rows in by_task.values():
        top = [i for i in rows if dual[i] == 0] or rows  # abstain everywhere: no signal, a random attempt
        codet_pick.append(float(ok[top].mean()))
    sel = graded.selection_truth()
    out: dict[str, Any] = {
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "python": platform.python_version(),
        "verifier": str(args.verifier),
        "expression": verifier.text,
        "samples": len(items),
        "tasks": len(by_task),
        "tasks_without_truth": graded.no_truth,
        "grading_seconds": seconds,
        "grading_cpu_seconds": cpu,
        "vx": {
            "pass_at_1_after_selection_estimated": graded.selected_estimated,
            "raw_estimated_pass_at_1": graded.estimated.get(1),
            **(sel or {}),
        },
        "codet_dual_agreement": {
            "selected": float(np.mean(codet_pick)),
            "tasks_with_signal": int(sum(any(dual[i] == 0 for i in rows) for rows in by_task.values())),
        },
        "true_pass_at_k": graded.true,
    }
    args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")
    if args.select:
        graded.write_selection(args.select)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
