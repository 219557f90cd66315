"""Does `vx anchor suggest` spend ten labels better than the default dev draw?

For each family and split seed (the families `bench_quality.py` builds, reused from its work dir):

* **default**: the family as built -- its 10 dev items (5 + 5, the builder's draw);
* **suggest**: the same family with 2 of those labels kept (the first failure and the first pass, by
  id) and the other 8 dev items (and their peers) removed, then `vx anchor suggest -n 8` on it and
  each suggested item labelled by the family's own dev teacher (`vx.families.code.data.teacher`, the
  differential execution teacher the builder used -- never the hidden tests), moved into dev with
  `vx anchor label`. The same budget: 10 labels.

Both are evolved with the same `EvolveConfig(rounds, seed)` and scored on the same locked items (and
on the train split's hidden labels, the design figures); the paired, task-clustered permutation test
compares them. The locked split is read only here, to report.

    python benchmarks/bench_anchor.py --families codet --seeds 0 1 2 3 4 --work ~/.cache/vx/bench-quality
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_quality as bq  # noqa: E402  (the families, their builder and the evaluation are shared)

KEEP = 2  # labels kept from the default draw (one failure, one pass)


def _rows(path: Path) -> list[dict[str, Any]]:
    return (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.is_file()
        else []
    )


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=True) + "\n" for r in rows), encoding="utf-8")


def reduced_copy(family_dir: Path, out: Path) -> list[str]:
    """The family with only KEEP dev labels (one fail, one pass); returns the ids kept."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(family_dir, out)
    dev = sorted(_rows(out / "dev.jsonl"), key=lambda r: r["id"])
    keep = [next(r for r in dev if r["label"] == "fail"), next(r for r in dev if r["label"] == "pass")]
    dropped_tasks = {r["task"] for r in dev if r not in keep}
    _write(out / "dev.jsonl", keep)
    peers = out / "peers.jsonl"
    if peers.is_file():
        _write(peers, [r for r in _rows(peers) if r["task"] not in dropped_tasks])
    (out / "anchor.jsonl").unlink(missing_ok=True)
    return [r["id"] for r in keep]


def teacher_for(builder: Any, spec: Any, family_dir: Path) -> Any:
    """The build's dev teacher on this family's tasks: what a verifier sees (prompt, entry point, visible
    examples, aliases) from the family's tasks.jsonl, the inputs the teacher compares on from the dataset."""
    from vx.families.code.data.teacher import teach
    from vx.families.code.examples import Example
    from vx.families.family import Family

    dataset = "mbpp+" if spec.kind == "mbpp" else "humaneval+"
    grader = builder.grader(dataset)
    fam = Family(family_dir)
    tasks = {}
    for tid, rec in fam.tasks.items():
        base = grader.tasks[tid]
        tasks[tid] = attrs.evolve(
            base,
            prompt=rec.get("prompt", base.prompt),
            entry_point=rec.get("entry_point", base.entry_point),
            reference=rec.get("reference", base.reference),
            examples=tuple(Example.from_json(e) for e in rec.get("examples", ())),
            aliases=tuple(rec.get("aliases") or ()),
            meta=dict(rec.get("meta") or {}),
        )
    grader.tasks.update(tasks)

    def label(task_id: str, output: str) -> Any:
        return teach(grader, tasks[task_id], output)

    return label


def run_seed(spec: Any, seed: int, args: argparse.Namespace, builder: Any, cache: Any) -> dict[str, Any]:
    from vx.evolve.anchor import suggest
    from vx.families.anchoring import label_item

    family_dir, _counts = builder.build(spec, seed)
    truth_path = family_dir.parent / bq.TRUTH_FILE
    truth = json.loads(truth_path.read_text(encoding="utf-8")) if truth_path.is_file() else None
    work = args.work / "anchor" / spec.key / f"seed-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    arm = work / "suggested"
    kept = reduced_copy(family_dir, arm)
    bq.log(f"{spec.title} seed {seed}: vx anchor suggest -n {10 - KEEP}")
    t0 = time.perf_counter()
    res = suggest(arm, n=10 - KEEP, rounds=args.suggest_rounds, seed=seed, jobs=args.jobs, cache=cache)
    teacher = teacher_for(builder, spec, family_dir)
    labelled = []
    for s in res.items:
        t = teacher(s.task, s.output)
        label_item(arm, s.item, t.label, note=f"teacher ({t.kind}): {t.evidence or 'pass'}")
        labelled.append(
            {
                "item": s.item,
                "why": s.why,
                "teacher": t.label,
                "evidence": t.evidence,
                "truth": (truth or {}).get(s.item),
            }
        )
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"seed": seed, "kept": kept, "suggested": labelled, "suggest_seconds": seconds}
    for name, d, runs in (("default", family_dir, work / "runs-default"), ("suggest", arm, work / "runs-suggest")):
        r = bq.evaluate_family(
            d,
            seed=seed,
            rounds=args.rounds,
            runs_dir=runs,
            jobs=args.jobs,
            cache=cache,
            ablations=[(bq.REF, None)],
            label=f"{spec.title} [{name}]",
            truth=truth,
        )
        out[name] = {
            "row": r["methods"][bq.REF],
            "locked_tasks": r["locked_tasks"],
            "locked_ids": r["locked_ids"],
            "trace": r["traces"].get(bq.REF),
        }
    return out


def summarize(spec: Any, runs: list[dict[str, Any]], n_permutations: int) -> str:
    from vx.metrics import paired_permutation_test

    lines = [f"### {spec.title}\n"]
    lines.append(
        "| dev draw | locked balanced acc. | locked accuracy | pass recall | recall, failures passing the "
        "visible example | train balanced acc. (design) |"
    )
    lines.append("|---|---|---|---|---|---|")
    for arm in ("default", "suggest"):
        rows = [r[arm]["row"] for r in runs]
        lines.append(
            f"| {arm} | "
            + " | ".join(
                bq.mean_std([x[k] for x in rows])
                for k in ("balanced_accuracy", "accuracy", "pass_recall", "hard_recall")
            )
            + " | "
            + bq.mean_std([x.get("design", {}).get("balanced_accuracy", float("nan")) for x in rows])
            + " |"
        )
    clusters = [t for r in runs for t in r["default"]["locked_tasks"]]
    a = [x for r in runs for x in r["suggest"]["row"]["weighted_correct"]]
    b = [x for r in runs for x in r["default"]["row"]["weighted_correct"]]
    t = paired_permutation_test(a, b, clusters, n_permutations=n_permutations, seed=0)
    lines.append(
        f"\nsuggest − default, balanced accuracy: {t.diff:+.3f} (paired task-clustered sign-flip test, "
        f"p = {t.p_value:.4f}, {t.n_clusters} tasks)\n"
    )
    lines.append("<details><summary>what was suggested and written, per seed</summary>\n")
    for r in runs:
        agree = sum(1 for s in r["suggested"] if s["truth"] is not None and s["teacher"] == s["truth"])
        lines.append(
            f"- seed {r['seed']}: kept {', '.join(r['kept'])}; suggested {len(r['suggested'])} "
            f"(teacher agrees with the hidden tests on {agree}); default wrote "
            f"`{r['default']['row']['detail']}`, suggest wrote `{r['suggest']['row']['detail']}`"
        )
        for s in r["suggested"]:
            lines.append(f"  - `{s['item']}` → {s['teacher']} ({s['evidence'] or 'pass'}): {s['why']}")
    lines.append("\n</details>\n")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    code = [f for f in bq.FAMILIES if f != "spider"]  # the labels come from the code family's dev teacher
    ap.add_argument("--families", nargs="+", choices=code, default=[f for f in bq.DEFAULT_FAMILIES if f in code])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--suggest-rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path.home() / ".cache" / "vx" / "bench-quality")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--permutations", type=int, default=10000)
    ap.add_argument("--samples-dir", type=Path, default=bq.DEFAULT_DATA / "samples" / "mbpp")
    ap.add_argument("--humaneval-dir", type=Path, default=bq.DEFAULT_DATA / "samples" / "humaneval")
    ap.add_argument("--codet-dir", type=Path, default=bq.DEFAULT_DATA / "samples" / "humaneval-codet")
    ap.add_argument("--data-dir", type=Path, default=bq.DEFAULT_DATA / "evalplus")
    ap.add_argument("--per-task", type=int, default=10)
    ap.add_argument("--codet-locked", type=int, default=540)
    ap.add_argument("--subset", choices=("hard", "all"), default="all")
    ap.add_argument("--seed-expr", type=Path, default=bq.ROOT / "examples" / "humaneval" / "seed.vx")
    args = ap.parse_args(argv)
    args.family_dir, args.dev_draw, args.spider_dir, args.spider_per_task = [], "stratified", Path("-"), []
    specs = bq.family_specs(args)
    if not specs:
        print("no data: nothing to benchmark (skipped)")
        return 0
    from vx.ops.cache import VerdictCache

    args.work.mkdir(parents=True, exist_ok=True)
    cache = VerdictCache(args.work / "verdicts.sqlite")
    builder = bq.Builder(args.data_dir if args.data_dir.is_dir() else None, args.work, args.seed_expr, args.jobs)
    sections, everything = [], {}
    t0 = time.perf_counter()
    for spec in specs:
        runs = [run_seed(spec, s, args, builder, cache) for s in args.seeds]
        sections.append(summarize(spec, runs, args.permutations))
        everything[spec.key] = runs
    head = (
        f"## Spending the ten labels: `vx anchor suggest` against the default dev draw\n\n"
        f"`python benchmarks/bench_anchor.py --families {' '.join(args.families)} --seeds "
        f"{' '.join(map(str, args.seeds))}` — {(time.perf_counter() - t0) / 60:.1f} min, vx at "
        f"{bq.git_revision()}; {KEEP} labels kept from the default draw + {10 - KEEP} suggested (labelled by the "
        f"family's dev teacher) against the default 10; evolution `EvolveConfig(rounds={args.rounds}, seed=<seed>)`.\n"
    )
    text = "\n".join([head] + sections)
    out = args.out or args.work / "anchor.md"
    out.write_text(text + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(everything, indent=1, default=str), encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
