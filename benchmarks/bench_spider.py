"""Measurements behind docs/sql.md's Spider section, on ../shared/data/sql/spider (every prediction run).

    python benchmarks/bench_spider.py variants    # what the neighbour databases catch, and false differences
    python benchmarks/bench_spider.py ops --dump V.json   # every SQL op alone on every prediction, per file
    python benchmarks/bench_spider.py draws --dump V.json # the dev draws compared on the train labels

``variants``: for every prediction, Spider's match with the gold on the original database (the ground
truth) and on each variant the task uses (the dev teacher's extra evidence). It prints the counts, then
every distinct prediction that matches on the original but differs on a variant -- to be read by a
person: a wrong query that matched by luck (what the variants are for) or a false difference -- and the
share of *gold mutants* (vx's SQL mutation engine applied to the gold queries) that match the gold on
the original database and that some variant tells apart.

``ops``: builds two all-attempts families into ``--work`` -- DIN-SQL's 20 runs (``samples/``, k = 20) and the
four frontier systems (``samples-frontier/``, k = 4) -- and applies the SQL pool to every attempt with its
set's other attempts as peers; per op: its false alarms on the predictions Spider's match calls right, per
set and per prediction file (the worst file, and how many are above 1%), and its fail recall per set.
Skips (exit 0) when the data is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "sql" / "spider"


def _setup(data: Path, n_variants: int):
    from vx.families.sql.data.spider import Databases, Skipped, SpiderTruth, read_questions, useful_variants
    from vx.families.sql.scripts import script_spec

    questions = read_questions(data / "questions.jsonl", Skipped())
    specs = {db: script_spec(data / "databases" / f"{db}.sql", db) for db in {q.database for q in questions.values()}}
    truth = SpiderTruth(questions, specs, Databases())
    use = {qid: useful_variants(truth, qid, specs[q.database], n_variants, 0) for qid, q in questions.items()}
    return questions, specs, truth, use


def variants_report(data: Path, n_variants: int) -> dict:
    from vx.families.sql.catalog import Catalog
    from vx.families.sql.data.mutate import HARMFUL, MutationError, mutate
    from vx.families.sql.data.spider import Skipped, read_attempts
    from vx.families.sql.variants import variant_spec

    questions, specs, truth, use = _setup(data, n_variants)
    t0 = time.perf_counter()
    counts: Counter[str] = Counter()
    flagged: dict[tuple[str, str], list[str]] = defaultdict(list)
    for f in sorted((data / "samples").glob("*.jsonl")):
        for a in read_attempts(f, questions, Skipped()):
            label = truth.grade(a.task, a.sql).label
            spec = specs[questions[a.task].database]
            diff = [i for i in use[a.task] if not truth.matches(a.task, a.sql, variant_spec(spec, i))[0]]
            counts[f"{label}, {'a variant differs' if diff else 'no variant differs'}"] += 1
            if label == "pass" and diff:
                flagged[(a.task, " ".join(a.sql.split()))].append(a.run)
    # gold mutants that match the gold on the original database
    mutants = Counter()
    catalogs: dict[str, Catalog] = {}
    for qid, q in sorted(questions.items()):
        spec = specs[q.database]
        if q.database not in catalogs:
            catalogs[q.database] = Catalog.from_warehouse(truth.dbs.get(spec))
        for op in HARMFUL:
            if op in ("drop_distinct", "syntax_error", "misspell_identifier"):  # Spider's rule ignores DISTINCT
                continue
            try:
                m = mutate(q.gold, op, dialect="sqlite", catalog=catalogs[q.database], seed=0)
            except MutationError:
                continue
            if m is None or not truth.matches(qid, m.sql)[0]:
                continue
            caught = any(not truth.matches(qid, m.sql, variant_spec(spec, i))[0] for i in use[qid])
            mutants["matching on the original"] += 1
            mutants["told apart by a variant"] += caught
            mutants[f"{op}: {'caught' if caught else 'missed'}"] += 1
    return {
        "seconds": time.perf_counter() - t0,
        "variants_per_database": n_variants,
        "tasks_by_variants_used": dict(sorted(Counter(len(u) for u in use.values()).items())),
        "predictions": dict(counts),
        "flagged_passes": len(sum(flagged.values(), [])),
        "flagged_distinct": [{"task": t, "sql": s, "runs": len(r)} for (t, s), r in sorted(flagged.items())],
        "gold_mutants": dict(sorted(mutants.items())),
    }


SYSTEM_SETS = {"din-sql": "samples", "frontier": "samples-frontier"}


def _verdicts(data: Path, work: Path, jobs: int, name: str, samples_dir: str):
    """Every attempt of one set of prediction files with the SQL pool (all its siblings as peers):
    ``(op names, statuses, [(run, task, fail?, {op: verdict})])``."""
    from vx.families.family import Family
    from vx.families.sql.data.spider import BUILDER_VERSION, SpiderBuild, build_spider
    from vx.ops.apply import apply_ops
    from vx.ops.item import Item

    out = work / f"spider-{name}-v{BUILDER_VERSION}"
    if not (out / "family.toml").is_file():
        build_spider(data, out, SpiderBuild(seed=0, samples_dir=samples_dir))
    fam = Family(out)
    questions, specs, truth, _ = _setup(data, 0)
    items = list(fam.split("train").items) + list(fam.split("dev").items) + list(fam.audit().labeled_split().items)
    items += [
        Item(id=p["id"], task=p["task"], output=p["output"])
        for p in (json.loads(x) for x in (out / "peers.jsonl").read_text().splitlines() if x.strip())
    ]
    m = apply_ops(fam.pool(), items, fam.tasks, jobs=jobs, progress=False).matrix
    pool = fam.pool()
    rows = []
    cols = {op: m.column(op) for op in m.op_names}
    for i, it in enumerate(items):
        rows.append(
            (
                it.id.split("#", 1)[1],
                it.task,
                truth.grade(it.task, it.output).label == "fail",
                {op: int(cols[op][i]) for op in m.op_names},
            )
        )
    return list(m.op_names), {op: pool[op].status for op in m.op_names}, rows


def ops_report(data: Path, work: Path, jobs: int, dump: Path | None = None) -> str:
    """Per op and prediction file: false alarms on the predictions Spider's match calls right, and fail
    recall, with each set's attempts as one another's peers (DIN-SQL's 20 runs, k = 20; the four
    frontier systems, k = 4)."""
    t0 = time.perf_counter()
    everything = {}
    ops: list[str] = []
    status: dict[str, str] = {}
    for name, folder in SYSTEM_SETS.items():
        if not any((data / folder).glob("*.jsonl")):
            continue
        names, st, rows = _verdicts(data, work, jobs, name, folder)
        ops = ops or names
        status.update(st)
        everything[name] = rows
    seconds = time.perf_counter() - t0
    if dump is not None:
        dump.write_text(json.dumps({"ops": ops, "status": status, "rows": everything}), encoding="utf-8")
    return format_table(ops, status, everything, seconds)


def format_table(ops, status, everything, seconds=None) -> str:
    runs: dict[str, list] = defaultdict(list)
    for rows in everything.values():
        for r in rows:
            runs[r[0]].append(r)
    n = sum(len(v) for v in everything.values())
    wrong = sum(r[2] for v in everything.values() for r in v)
    lines = [
        f"{n} predictions in {len(runs)} files ({wrong} wrong by Spider's rule), {len(ops)} ops"
        + (f", {seconds:.0f} s" if seconds is not None else ""),
        "",
        "False alarms: the share of a file's right predictions an op fires on (worst file, and how many of the "
        f"{len(runs)} files are above 1%); fail recall: the share of the wrong ones it fires on, per set.",
        "",
        "| op | status | false alarms, DIN-SQL | false alarms, frontier | worst file | files > 1% "
        "| fail recall, DIN-SQL | fail recall, frontier |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for op in ops:
        per_set = {}
        for name, rows in everything.items():
            passes = [r for r in rows if not r[2]]
            fails = [r for r in rows if r[2]]
            per_set[name] = (
                sum(r[3][op] == 1 for r in passes) / max(1, len(passes)),
                sum(r[3][op] == 1 for r in fails) / max(1, len(fails)),
            )
        rates = {}
        for run, rows in runs.items():
            passes = [r for r in rows if not r[2]]
            rates[run] = sum(r[3][op] == 1 for r in passes) / max(1, len(passes))
        worst = max(rates, key=rates.get)
        over = sum(v > 0.01 for v in rates.values())
        fa = {k: f"{v[0]:.3f}" for k, v in per_set.items()}
        rec = {k: f"{v[1]:.3f}" for k, v in per_set.items()}
        lines.append(
            f"| `{op}` | {status[op]} | {fa.get('din-sql', '—')} | {fa.get('frontier', '—')} | "
            f"{rates[worst]:.3f} ({worst}) | {over} | {rec.get('din-sql', '—')} | {rec.get('frontier', '—')} |"
        )
    lines += ["", "Per file (false alarms / right predictions, for the ops that fire on any right one):", ""]
    firing = [op for op in ops if any(r[3][op] == 1 and not r[2] for v in everything.values() for r in v)]
    lines += ["| file | right | " + " | ".join(f"`{op}`" for op in firing) + " |", "|---|---|" + "---|" * len(firing)]
    for run in sorted(runs):
        passes = [r for r in runs[run] if not r[2]]
        lines.append(
            f"| {run} | {len(passes)} | " + " | ".join(str(sum(r[3][op] == 1 for r in passes)) for op in firing) + " |"
        )
    return "\n".join(lines)


def draws_report(data: Path, work: Path, verdicts: Path, seeds: Sequence[int], per_task: int) -> str:
    """Which dev draw anchors better, judged on the TRAIN labels only (never the locked split): for each
    seed, the DIN-SQL family's attempts (a seeded subsample of ``per_task`` per question, as the builder
    draws it) are split by task with each draw; the dev items pick the single active op of the best dev
    balanced accuracy (what the anchor rewards; the mean over ties), and that op is scored on the train
    items' ground truth. The verdicts are the ``ops`` dump's (peers: all of a question's attempts).
    Also reported: how many teacher evidence classes the five dev failures cover."""
    import random

    import attrs

    from vx.families.family import Family
    from vx.families.split import LabelledItem, split_by_task
    from vx.families.sql.data.spider import BUILDER_VERSION, DRAW_STRATA, SpiderTeacher

    dump = json.loads(verdicts.read_text(encoding="utf-8"))
    rows = dump["rows"]["din-sql"]
    active = [op for op in dump["ops"] if dump["status"][op] == "active"]
    fam = Family(work / f"spider-din-sql-v{BUILDER_VERSION}")
    questions, specs, truth, _ = _setup(data, 0)
    teacher = SpiderTeacher(truth, fam.tasks)
    by_task: dict[str, list] = defaultdict(list)
    for r in rows:
        if r[1] in fam.tasks:
            by_task[r[1]].append(r)
    cache: dict[str, object] = {}

    def teach(it):
        if it.id not in cache:
            label = teacher.teach(it.task, it.output)
            cache[it.id] = label
        label = cache[it.id]
        if draw == "stratified" and label.evidence == "variant_only":  # as build_spider's teacher does
            label = attrs.evolve(label, label="unsure")
        return label

    def balanced(pred, fails):
        tp = sum(p and f for p, f in zip(pred, fails))
        tn = sum((not p) and (not f) for p, f in zip(pred, fails))
        nf = sum(fails)
        npass = len(fails) - nf
        return 0.5 * (tp / max(1, nf) + tn / max(1, npass))

    sql_of = {}
    for f in sorted((data / "samples").glob("*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                o = json.loads(line)
                sql_of[(o["task_id"], f.stem)] = o["sql"]
    lines = [
        f"dev draws on the DIN-SQL family, k = {per_task}, seeds {list(seeds)}: the dev-chosen op's balanced "
        "accuracy on the train labels",
        "",
        "| draw | seed | dev failures' evidence | op chosen on dev | balanced accuracy on train |",
        "|---|---|---|---|---|",
    ]
    means: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        for draw in ("gross", "stratified"):
            items = []
            for qid, rs in sorted(by_task.items()):
                idx = list(range(len(rs)))
                if len(idx) > per_task:
                    idx = sorted(random.Random(f"vx-per-task:{seed}:{qid}").sample(idx, per_task))
                for i in idx:
                    r = rs[i]
                    items.append(
                        LabelledItem(
                            id=f"{qid}#{r[0]}",
                            task=qid,
                            output=sql_of[(qid, r[0])],
                            truth="fail" if r[2] else "pass",
                            meta={"v": r[3]},
                        )
                    )
            sp = split_by_task(
                items, seed=seed, teacher=teach, n_locked=max(1, len(items) // 3), dev_draw=draw, strata=DRAW_STRATA
            )
            dev_fail = [it.teacher_label == "fail" for it in sp.dev]
            on_dev = {op: balanced([it.meta["v"][op] == 1 for it in sp.dev], dev_fail) for op in active}
            best = [op for op in active if on_dev[op] == max(on_dev.values())]  # ties: their mean on train
            train_fail = [it.truth == "fail" for it in sp.train]
            train_acc = float(
                np.mean([balanced([it.meta["v"][op] == 1 for it in sp.train], train_fail) for op in best])
            )
            ev = Counter(it.teacher.evidence for it in sp.dev if it.teacher_label == "fail")
            means[draw].append(train_acc)
            lines.append(
                f"| {draw} | {seed} | {dict(sorted(ev.items()))} | {', '.join(f'`{b}`' for b in best)} | "
                f"{train_acc:.3f} |"
            )
    lines += ["", "| draw | mean balanced accuracy on train |", "|---|---|"]
    lines += [f"| {d} | {np.mean(v):.3f} |" for d, v in means.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("variants", "ops", "draws"))
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--variants", type=int, default=8, help="neighbour databases per database (default 8)")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "vx" / "bench-spider")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument(
        "--dump",
        type=Path,
        default=None,
        help="ops: also write every verdict to this JSON file; draws: the file ops wrote",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4], help="draws: split seeds")
    ap.add_argument("--per-task", type=int, default=5, help="draws: attempts per question")
    args = ap.parse_args(argv)
    if not (args.data_dir / "questions.jsonl").is_file():
        print(f"no Spider data in {args.data_dir}: nothing to measure (skipped)")
        return 0
    if args.what == "variants":
        print(json.dumps(variants_report(args.data_dir, args.variants), indent=1))
    elif args.what == "draws":
        if args.dump is None or not args.dump.is_file():
            print("draws needs --dump FILE, the verdicts `ops --dump FILE` wrote")
            return 2
        print(draws_report(args.data_dir, args.work, args.dump, args.seeds, args.per_task))
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        print(ops_report(args.data_dir, args.work, args.jobs, args.dump))
    return 0


if __name__ == "__main__":
    sys.exit(main())
