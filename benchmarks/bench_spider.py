"""Measurements behind docs/sql.md's Spider section, on ../shared/data/sql/spider (every prediction run).

    python benchmarks/bench_spider.py variants    # what the neighbour databases catch, and false differences
    python benchmarks/bench_spider.py ops         # every SQL op alone on every prediction (k = 20)

``variants``: for every prediction, Spider's match with the gold on the original database (the ground
truth) and on each variant the task uses (the dev teacher's extra evidence). It prints the counts, then
every distinct prediction that matches on the original but differs on a variant -- to be read by a
person: a wrong query that matched by luck (what the variants are for) or a false difference -- and the
share of *gold mutants* (vx's SQL mutation engine applied to the gold queries) that match the gold on
the original database and that some variant tells apart.

``ops``: builds the all-attempts family (k = 20) into ``--work`` and applies the SQL pool to every attempt
with all its siblings as peers; per op: how often it opines and fires, on failures and on passes
(ground truth), recall, false-alarm rate and precision, for all questions and for the development half
(even question numbers) the peer op's parameters were chosen on. Skips (exit 0) when the data is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
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
    return {"seconds": time.perf_counter() - t0, "variants_per_database": n_variants,
            "tasks_by_variants_used": dict(sorted(Counter(len(u) for u in use.values()).items())),
            "predictions": dict(counts), "flagged_passes": len(sum(flagged.values(), [])),
            "flagged_distinct": [{"task": t, "sql": s, "runs": len(r)} for (t, s), r in sorted(flagged.items())],
            "gold_mutants": dict(sorted(mutants.items()))}


def ops_report(data: Path, work: Path, jobs: int) -> str:
    from vx.families.family import Family
    from vx.families.sql.data.spider import build_spider
    from vx.ops.apply import apply_ops
    from vx.ops.item import Item

    out = work / "spider-all"
    if not (out / "family.toml").is_file():
        build_spider(data, out, seed=0)
    fam = Family(out)
    questions, specs, truth, _ = _setup(data, 0)
    items = list(fam.split("train").items) + list(fam.split("dev").items) + list(fam.audit().labeled_split().items)
    items += [Item(id=p["id"], task=p["task"], output=p["output"])
              for p in (json.loads(x) for x in (out / "peers.jsonl").read_text().splitlines() if x.strip())]
    fail = np.array([truth.grade(it.task, it.output).label == "fail" for it in items])
    even = np.array([int(it.task.rsplit("-", 1)[1]) % 2 == 0 for it in items])
    t0 = time.perf_counter()
    m = apply_ops(fam.pool(), items, fam.tasks, jobs=jobs, progress=False).matrix
    seconds = time.perf_counter() - t0
    lines = [f"{len(items)} predictions ({int(fail.sum())} wrong by Spider's rule), {len(m.op_names)} ops, "
             f"{seconds:.0f} s with {jobs} workers", "",
             "| op | status | opines | fires | on failures | on passes | fail recall | false alarms | precision "
             "| precision, even half |", "|---|---|---|---|---|---|---|---|---|---|"]
    pool = fam.pool()
    for op in m.op_names:
        c = m.column(op)
        tp, fp = int(((c == 1) & fail).sum()), int(((c == 1) & ~fail).sum())
        tpe, fpe = int(((c == 1) & fail & even).sum()), int(((c == 1) & ~fail & even).sum())
        lines.append(f"| `{op}` | {pool[op].status} | {int((c != -1).sum())} | {tp + fp} | {tp} | {fp} | "
                     f"{tp / fail.sum():.3f} | {fp / (~fail).sum():.3f} | {tp / max(1, tp + fp):.2f} | "
                     f"{tpe / max(1, tpe + fpe):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("variants", "ops"))
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--variants", type=int, default=8, help="neighbour databases per database (default 8)")
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "vx" / "bench-spider")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if not (args.data_dir / "questions.jsonl").is_file():
        print(f"no Spider data in {args.data_dir}: nothing to measure (skipped)")
        return 0
    if args.what == "variants":
        print(json.dumps(variants_report(args.data_dir, args.variants), indent=1))
    else:
        args.work.mkdir(parents=True, exist_ok=True)
        print(ops_report(args.data_dir, args.work, args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
