"""What the generated probes expose: per probe class, on the CodeT HumanEval data's DEVELOPMENT half.

    python benchmarks/bench_probes.py [--k 10] [--seed 0] [--jobs 2] [--json OUT] [--items OUT.jsonl]

The development half is the gradable tasks with an even number (docs/peers.md); the odd half is never
read here. ``--k`` attempts per task are drawn as ``vx data build humaneval --per-task K --seed S``
draws them (CodeGen-16B's samples, ``../shared/data/samples/humaneval-codet``), labelled by HumanEval+'s
hidden tests (vx's grader). Every attempt runs its task's probes exactly as grading does
(``vx.families.code.ops.run.execution``: one sandboxed process per attempt, the run's budgets and stop
rule); so does the task's canonical solution. Reported per probe class:

* **coverage**: among the failures that pass their visible example (hidden label fail,
  ``fails_visible_example`` clean), the share whose answer differs from the canonical solution's on
  some probe of the class on which the canonical solution returns a value (reference-differential:
  an upper bound for any detector that reads these probes, and the measure of docs/peers.md);
* **correct differ**: the share of correct attempts (hidden label pass) that differ likewise;
* **crash / crash on correct**: the share of those failures (of the correct attempts) that raise, kill
  their process or run out of their own CPU budget on a probe of the class -- what ``crashes_in_domain``
  would see without any reference (split into raised / timeout);
* **small-k peers**: the attempts of each task cut into disjoint groups of 2 and of 3; the peer vote
  with ``quorum=1.0, min_support=2`` (every other example-passing attempt of the group, at least two,
  agree) and, for reference, the seed rule (½, 3) on the whole k -- recall on the failures that pass
  their example and the share of correct attempts it fires on.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
CODET = DATA / "samples" / "humaneval-codet"

CLASS_SETS = {
    "mutant": ("gen_mutant",),
    "boundary": ("gen_boundary",),
    "large": ("gen_large",),
    "edge": ("gen_edge",),
    "drawn": ("gen_drawn",),
    "wide": ("gen_wide",),
    "mutant+boundary+large (main's default)": ("gen_mutant", "gen_boundary", "gen_large"),
    "mutant+boundary+large+drawn": ("gen_mutant", "gen_boundary", "gen_large", "gen_drawn"),
    "mutant+boundary+large+drawn+wide": ("gen_mutant", "gen_boundary", "gen_large", "gen_drawn", "gen_wide"),
    "all generated": ("gen_mutant", "gen_boundary", "gen_large", "gen_edge", "gen_drawn", "gen_wide"),
}


def load(k: int, seed: int) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """(tasks of the development half, [(item id, task id, program)]) as the builder draws them."""
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.attempts import read_attempts

    tasks = task_data.load_humaneval_plus(DATA / "evalplus")
    attempts, _ = read_attempts(
        [CODET / "codegen16B_code_solution.jsonl"], tasks, codet_tasks=None, prepend_prompt=True, stats=Counter()
    )
    items = []
    dev = {}
    for tid in sorted(attempts, key=lambda t: int(t.split("/")[1])):
        if int(tid.split("/")[1]) % 2:
            continue  # the confirmation half: never read here
        dev[tid] = tasks[tid]
        idx = list(range(len(attempts[tid])))
        if len(idx) > k:
            idx = sorted(random.Random(f"vx-per-task:{seed}:{tid}").sample(idx, k))
        items += [(f"{tid}#{i}", tid, attempts[tid][i][0]) for i in idx]
    return dev, items


def observe(record: dict[str, Any], program: str) -> dict[str, Any]:
    """One attempt's run over its probes (as grading runs it) in plain data. Retried on CPython 3.11's
    "AST constructor recursion depth mismatch" (ast.parse racing in two threads: gh-106905)."""
    for attempt in range(3):
        try:
            return _observe(record, program)
        except SystemError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _observe(record: dict[str, Any], program: str) -> dict[str, Any]:
    from vx.families.code.ops.exec import crashes_in_domain, fails_visible_example
    from vx.families.code.ops.peers import _answer
    from vx.families.code.ops.run import execution
    from vx.ops.core import Context

    ctx = Context()
    run, why = execution(record, program, ctx)
    if run is None or not run.loaded:
        return {"loaded": False, "examples_ok": False, "answers": [], "why": why or (run.load_message if run else "")}
    verdict = int(fails_visible_example(record, program, ctx).verdict)
    crashes = crashes_in_domain(record, program, ctx)
    answers = [
        _answer(c) for p, c in zip(run.probes, run.calls) if p.klass.startswith("gen_") or p.klass == "model_test"
    ]
    return {
        "loaded": True,
        "examples_ok": verdict == 0,
        "answers": answers,
        "crashes_in_domain": [int(crashes.verdict), crashes.message],
        "classes": [p.klass for p in run.probes if p.klass.startswith("gen_") or p.klass == "model_test"],
        "calls": [p.call for p in run.probes if p.klass.startswith("gen_") or p.klass == "model_test"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--drawn", type=int, help="drawn probes per task (default: draw.N_DRAWN)")
    ap.add_argument("--wide", type=int, help="wide drawn probes per task (default: draw.N_WIDE)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--items", type=Path, help="per-item results (JSON lines)")
    args = ap.parse_args()

    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.groundtruth import Grader
    from vx.families.code.ops.peers import PROBE_SETS, Behaviour, same_answer, vote
    from vx.families.code.probes import draw, probe

    if args.drawn is not None:
        probe.MAX_GENERATED += args.drawn - draw.N_DRAWN
        draw.N_DRAWN = args.drawn
    if args.wide is not None:
        probe.MAX_GENERATED += args.wide - draw.N_WIDE
        draw.N_WIDE = args.wide

    t0 = time.time()
    tasks, items = load(args.k, args.seed)
    grader = Grader(tasks, version=task_data.dataset_version("humaneval+", DATA / "evalplus"), workers=args.jobs)
    problems = grader.prepare(sorted(tasks))
    items = [it for it in items if it[1] not in problems]
    truths = grader.grade_many([(tasks[tid], prog) for _, tid, prog in items])
    t_label = time.time() - t0
    print(
        f"{len(items)} attempts of {len({i[1] for i in items})} dev-half tasks labelled in {t_label:.0f} s "
        f"(pass {sum(t.label == 'pass' for t in truths)})",
        file=sys.stderr,
    )

    records = {tid: t.family_record() for tid, t in tasks.items()}
    t_gen = time.process_time()
    for r in records.values():  # generate every task's probes once, before the threads (timed apart)
        probe.probes_for(r)
    t_gen = time.process_time() - t_gen
    t1 = time.time()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        refs = dict(
            zip(
                sorted({i[1] for i in items}),
                pool.map(lambda tid: observe(records[tid], tasks[tid].reference), sorted({i[1] for i in items})),
            )
        )
        obs = list(pool.map(lambda it: observe(records[it[1]], it[2]), items))
    t_run = time.time() - t1
    print(f"ran in {t_run:.0f} s ({len(items) / t_run:.1f} attempts/s)", file=sys.stderr)

    rows = []
    for (iid, tid, _), truth, o in zip(items, truths, obs):
        ref = refs[tid]
        row: dict[str, Any] = {
            "id": iid,
            "task": tid,
            "truth": truth.label,
            "examples_ok": o["examples_ok"],
            "crashes_in_domain": o.get("crashes_in_domain", [-1, o.get("why", "")]),
            "differs": {},
            "raises": {},
            "times_out": {},
            "first": {},
        }
        for klass in ("gen_mutant", "gen_boundary", "gen_large", "gen_edge", "gen_drawn", "gen_wide"):
            differs = raises = timeout = False
            first = ""
            if o["loaded"] and ref["loaded"] and len(o["answers"]) == len(ref["answers"]):
                for c, call, a, r in zip(ref["classes"], ref["calls"], o["answers"], ref["answers"]):
                    if c != klass:
                        continue
                    if a.kind in ("raised", "crashed"):
                        raises = True
                    if a.kind == "timeout":
                        timeout = True
                    if r.kind == "value" and a.kind != "not_run" and not same_answer(a, r):
                        if not differs:
                            first = f"{call} {a.text()}; the reference {r.text('returns')}"
                        differs = True
            row["differs"][klass], row["raises"][klass], row["times_out"][klass] = differs, raises, timeout
            if first:
                row["first"][klass] = first
        rows.append(row)

    hard = [r for r in rows if r["truth"] == "fail" and r["examples_ok"]]
    good = [r for r in rows if r["truth"] == "pass"]
    good_ok = [r for r in good if r["examples_ok"]]

    def share(group: list[dict[str, Any]], key: str, classes: tuple[str, ...]) -> float:
        return sum(any(r[key][c] for c in classes) for r in group) / max(1, len(group))

    table = []
    for name, classes in CLASS_SETS.items():
        table.append(
            {
                "classes": name,
                "coverage": share(hard, "differs", classes),
                "correct_differ": share(good, "differs", classes),
                "hard_raise": share(hard, "raises", classes),
                "correct_raise": share(good, "raises", classes),
                "hard_timeout": share(hard, "times_out", classes),
                "correct_timeout": share(good, "times_out", classes),
            }
        )

    fails = [r for r in rows if r["truth"] == "fail"]
    crash_op = {
        "fires_on_hard": sum(r["crashes_in_domain"][0] == 1 for r in hard) / max(1, len(hard)),
        "fires_on_correct": sum(r["crashes_in_domain"][0] == 1 for r in good) / max(1, len(good)),
        "fires_on_failures": sum(r["crashes_in_domain"][0] == 1 for r in fails) / max(1, len(fails)),
        "correct_fired": [[r["id"], r["crashes_in_domain"][1]] for r in good if r["crashes_in_domain"][0] == 1],
    }

    # small-k peers: disjoint groups of each task's attempts
    by_task: dict[str, list[int]] = {}
    for n, (_, tid, _) in enumerate(items):
        by_task.setdefault(tid, []).append(n)
    behaviours = [Behaviour(o["loaded"], o["examples_ok"] if o["loaded"] else False, tuple(o["answers"])) for o in obs]
    peers_rows = []
    for probes_name in ("generated", "generated+drawn+wide"):
        selected = PROBE_SETS["generated"] | ({"gen_drawn", "gen_wide"} if "drawn" in probes_name else frozenset())
        for group_size, quorum, support in ((2, 1.0, 2), (3, 1.0, 2), (args.k, 0.5, 3), (args.k, 1.0, 2)):
            fired = Counter()
            for tid, members in by_task.items():
                groups = [members[i : i + group_size] for i in range(0, len(members) - group_size + 1, group_size)]
                ref = refs[tid]
                for g in groups:
                    for m in g:
                        mine = behaviours[m]
                        others = [behaviours[x] for x in g if x != m]
                        v = vote(
                            mine,
                            others,
                            ref.get("calls", []),
                            ref.get("classes", []),
                            selected,
                            quorum=quorum,
                            min_support=support,
                            min_peers=support,
                        )
                        kind = (
                            "hard"
                            if rows[m]["truth"] == "fail" and rows[m]["examples_ok"]
                            else "good"
                            if rows[m]["truth"] == "pass"
                            else "other"
                        )
                        fired[(kind, v.verdict)] += 1
            n_hard = sum(fired[("hard", v)] for v in (1, 0, -1))
            n_good = sum(fired[("good", v)] for v in (1, 0, -1))
            peers_rows.append(
                {
                    "probes": probes_name,
                    "group": group_size,
                    "quorum": quorum,
                    "min_support": support,
                    "hard_recall": fired[("hard", 1)] / max(1, n_hard),
                    "hard_abstain": fired[("hard", -1)] / max(1, n_hard),
                    "correct_fired": fired[("good", 1)] / max(1, n_good),
                    "n_hard": n_hard,
                    "n_good": n_good,
                }
            )

    result = {
        "k": args.k,
        "seed": args.seed,
        "drawn": draw.N_DRAWN,
        "wide": draw.N_WIDE,
        "attempts": len(rows),
        "tasks": len(by_task),
        "hard": len(hard),
        "correct": len(good),
        "correct_passing_example": len(good_ok),
        "label_seconds": round(t_label, 1),
        "generation_cpu_seconds": round(t_gen, 1),
        "run_seconds": round(t_run, 1),
        "attempts_per_second_run": round(len(items) / t_run, 2),
        "classes": table,
        "crashes_in_domain": crash_op,
        "small_k_peers": peers_rows,
    }
    print(
        f"\nCodeT dev half, k={args.k}, seed {args.seed}: {len(rows)} attempts, {len(hard)} failures passing "
        f"their visible example, {len(good)} correct"
    )
    print(
        f"{'classes':42} {'coverage':>8} {'corr.diff':>9} {'hard rai':>8} {'corr rai':>8} {'hard t/o':>8} "
        f"{'corr t/o':>8}"
    )
    for r in table:
        print(
            f"{r['classes']:42} {r['coverage']:8.3f} {r['correct_differ']:9.3f} {r['hard_raise']:8.3f} "
            f"{r['correct_raise']:8.3f} {r['hard_timeout']:8.3f} {r['correct_timeout']:8.3f}"
        )
    print(
        f"\ncrashes_in_domain: fires on {crash_op['fires_on_hard']:.3f} of the failures passing their example, "
        f"{crash_op['fires_on_failures']:.3f} of all failures, {crash_op['fires_on_correct']:.3f} of correct attempts "
        f"{crash_op['correct_fired']}"
    )
    print("\nsmall-k peer vote (disjoint groups of each task's attempts)")
    for r in peers_rows:
        print(
            f"  {r['probes']:16} group {r['group']:2} quorum {r['quorum']:.1f} support {r['min_support']}: "
            f"hard recall {r['hard_recall']:.3f} (abstains {r['hard_abstain']:.3f}, n={r['n_hard']}), "
            f"fires on correct {r['correct_fired']:.3f} (n={r['n_good']})"
        )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    if args.items:
        with args.items.open("w") as fh:
            for r in rows:
                fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
