"""Is `vx grade`'s corrected pass@1 closer to the truth than the raw one, and does its interval cover it?

For every shared samples file (``../shared/data/samples``: HumanEval and MBPP, one file per model, and
CodeGen-16B's CodeT samples cut to their first `--codet-per-task` attempts per task) and every split
seed, the benchmark builds the family ``vx data build`` makes from that file (its dev split: the
anchor, 5 + 5 labels from the build's execution teacher, drawn with the seed; ``--dev-draw``), then
runs exactly what ``vx grade SEED.vx FILE --family DIR --truth`` runs (:func:`vx.grading.grade_samples`)
and records the raw pass@1, the corrected one with its 95% interval, Rogan–Gladen's point estimate and
the true pass@1 (the hidden tests). The grading of the samples is the same for every seed (the verdict
cache makes seeds after the first cheap); only the anchor changes.

Three anchors per (file, seed):

* ``dev``: the family's dev split as built (``vx grade --family DIR``): 5 failures and 5 passes, the
  failures stratified by the teacher's evidence (the builder's draw, made for evolution, not for
  measuring error rates);
* ``random-N`` (``--random``, default 10 and 30): N samples of the file drawn uniformly with the seed and
  labelled by the hidden tests -- what ``vx grade --labels FILE --no-anchor`` does when a person labels
  N random samples (``{"id", "label"}`` lines).

    python benchmarks/bench_grade.py                      # every file, seeds 0-4 (about 20 min on 2 loaded cores)
    python benchmarks/bench_grade.py --files humaneval/codellama.jsonl --seeds 0 1

Prints a markdown table (and writes it to `--out`, with every number in `--out`.json beside it).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from vx.families.code.data.build import SamplesBuild, build_humaneval_samples, build_mbpp
from vx.grading import SampleGrading, anchor_agreement, grade_samples, open_tasks, verifier_for
from vx.ops.cache import VerdictCache
from vx.verifier import Verifier

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SEED_EXPR = ROOT / "examples" / "humaneval" / "seed.vx"


def codet_cut(src_dir: Path, per_task: int, work: Path) -> Path:
    """CodeT's solution file with the first `per_task` samples of each task (same layout)."""
    out = work / f"codet-first{per_task}.jsonl"
    tasks = work / "HumanEval_for_code_generation.jsonl"  # the samples reader looks for it beside the file
    if not tasks.exists():
        tasks.write_bytes((src_dir / "HumanEval_for_code_generation.jsonl").read_bytes())
    if not out.exists():
        lines = (src_dir / "codegen16B_code_solution.jsonl").read_text(encoding="utf-8").splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        out.write_text(
            "".join(json.dumps({**r, "samples": r["samples"][:per_task]}) + "\n" for r in rows), encoding="utf-8"
        )
    return out


def samples_files(samples_dir: Path, codet_per_task: int, work: Path, only: list[str]) -> list[tuple[str, str, Path]]:
    """(name, dataset, path) of every samples file to benchmark."""
    out = []
    for kind, dataset in (("humaneval", "humaneval+"), ("mbpp", "mbpp+")):
        for path in sorted((samples_dir / kind).glob("*.jsonl")):
            out.append((f"{kind}/{path.name}", dataset, path))
    codet = samples_dir / "humaneval-codet"
    if (codet / "codegen16B_code_solution.jsonl").is_file() and codet_per_task > 0:
        out.append((f"humaneval-codet (first {codet_per_task})", "humaneval+", codet_cut(codet, codet_per_task, work)))
    return [f for f in out if not only or any(o in f[0] for o in only)]


def build(name: str, dataset: str, path: Path, seed: int, args: argparse.Namespace, codet_tasks: Path) -> Path:
    out = args.work / "families" / f"{name.replace('/', '-').replace(' ', '_')}-s{seed}"
    if (out / "family.toml").is_file():
        return out
    common = dict(
        seed=seed, data_dir=args.data_dir, workers=args.jobs, seed_expr=str(SEED_EXPR), dev_draw=args.dev_draw
    )
    if dataset == "mbpp+":
        build_mbpp([path], out, SamplesBuild(subset="all", **common))
    else:
        build_humaneval_samples(
            [path], out, SamplesBuild(subset="all", codet_tasks=codet_tasks if "codet" in name else None, **common)
        )
    return out


def random_anchor(g: SampleGrading, source: Any, verifier: Verifier, n: int, seed: int) -> SampleGrading:
    """The grading with, as its anchor, `n` of its samples drawn uniformly (with `seed`) and labelled by the
    hidden tests -- as ``--labels FILE --no-anchor`` with a person's labels."""
    labelled = [(it.id, t["label"]) for it, t in zip(g.items, g.truth or []) if t["label"] is not None]
    drawn = random.Random(seed).sample(labelled, min(n, len(labelled)))
    agr, sources = anchor_agreement(
        verifier,
        g.evaluation,
        source,
        family=False,
        labels=[{"id": i, "label": 1.0 if lab == "pass" else 0.0, "where": "bench"} for i, lab in drawn],
    )
    return attrs.evolve(g, anchor=agr, anchor_sources=sources)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--samples-dir", type=Path, default=SHARED / "samples")
    p.add_argument("--data-dir", type=Path, default=SHARED / "evalplus")
    p.add_argument("--files", nargs="*", default=[], help="only the files whose name contains one of these")
    p.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4])
    p.add_argument("--codet-per-task", type=int, default=10, help="CodeT attempts per task (0: leave CodeT out)")
    p.add_argument("--dev-draw", choices=["stratified", "gross"], default="stratified")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--random", type=int, nargs="*", default=[10, 30], help="sizes of the random labelled anchors")
    p.add_argument("--no-dev", action="store_true", help="leave the dev anchor out (no family is built: fast)")
    p.add_argument("--work", type=Path, default=Path.home() / ".cache" / "vx" / "bench-grade")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--cache", type=Path, default=None, help="verdict cache (default: $VX_CACHE, else vx's own)")
    args = p.parse_args(argv)
    if not args.samples_dir.is_dir():
        print(f"{args.samples_dir}: no samples: nothing to benchmark (skipped)")
        return 0
    args.work.mkdir(parents=True, exist_ok=True)
    cache = VerdictCache(args.cache)
    codet_tasks = args.samples_dir / "humaneval-codet" / "HumanEval_for_code_generation.jsonl"
    rows: list[dict[str, Any]] = []
    out = args.out or args.work / "grade.md"
    for name, dataset, path in samples_files(args.samples_dir, args.codet_per_task, args.work, args.files):
        source = open_tasks(dataset, data_dir=args.data_dir)
        for seed in args.seeds:
            t0 = time.perf_counter()
            if args.no_dev:  # the verifier with the pack's pool, as `vx grade` outside a family
                fam, verifier = None, verifier_for(SEED_EXPR, source, family_dir=None)
                verifier.family = None
            else:
                fam = build(name, dataset, path, seed, args, codet_tasks)
                verifier = Verifier.load(fam / "seed.vx", fam)
            built = time.perf_counter() - t0
            t0 = time.perf_counter()
            g = grade_samples(verifier, source, [path], truth=True, jobs=args.jobs, cache=cache, anchor=not args.no_dev)
            graded = time.perf_counter() - t0
            anchors = [] if args.no_dev else [("dev", g)]
            anchors += [(f"random-{n}", random_anchor(g, source, verifier, n, seed)) for n in args.random]
            for anchor, graded_with in anchors:
                c, true, raw = graded_with.corrected_on_truth, g.true[1], g.estimated_on_truth[1]
                assert c is not None, f"{fam}: no anchor labels"
                rows.append(
                    {
                        "file": name,
                        "seed": seed,
                        "anchor": anchor,
                        "attempts": len(g.items),
                        "tasks": len(g.truth_tasks),
                        "raw": raw,
                        "corrected": c.estimate,
                        "low": c.low,
                        "high": c.high,
                        "rogan_gladen": c.rogan_gladen,
                        "true": true,
                        "raw_error": abs(raw - true),
                        "corrected_error": abs(c.estimate - true),
                        "covered": c.low <= true <= c.high,
                        "anchor_pass": list(c.anchor_pass),
                        "anchor_fail": list(c.anchor_fail),
                        "verdicts": g.summary()["verdicts"],
                        "build_s": round(built, 1),
                        "grade_s": round(graded, 1),
                    }
                )
                write(rows, out)  # after every row: an interrupted run keeps what it measured
                print(
                    f"{name} seed {seed} {anchor}: raw {raw:.3f} corrected {c.estimate:.3f} [{c.low:.3f}, "
                    f"{c.high:.3f}] RG {c.rogan_gladen:.3f} true {true:.3f} ({graded:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    if not rows:
        print("nothing to benchmark (skipped)")
        return 0
    print(write(rows, out))
    return 0


def write(rows: list[dict[str, Any]], out: Path) -> str:
    text = table(rows)
    out.write_text(text + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return text


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| file | seed | anchor | attempts | raw | corrected [95% interval] | Rogan–Gladen | true | |raw − true| | "
        "|corrected − true| | covered | anchor: passes passed, failures passed |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['file']} | {r['seed']} | {r['anchor']} | {r['attempts']} | {r['raw']:.3f} | {r['corrected']:.3f} "
            f"[{r['low']:.3f}, {r['high']:.3f}] | {r['rogan_gladen']:.3f} | {r['true']:.3f} | "
            f"{r['raw_error']:.3f} | {r['corrected_error']:.3f} | {'yes' if r['covered'] else 'no'} | "
            f"{r['anchor_pass'][0]}/{r['anchor_pass'][1]}, {r['anchor_fail'][0]}/{r['anchor_fail'][1]} |"
        )
    lines += [
        "",
        "| anchor | file | mean |raw − true| | mean |corrected − true| | corrected closer | coverage | mean width |",
        "|---|---|---|---|---|---|---|",
    ]
    files = list(dict.fromkeys(r["file"] for r in rows))
    for a, f in [(a, f) for a in dict.fromkeys(r["anchor"] for r in rows) for f in [*files, "all"]]:
        sub = [r for r in rows if r["anchor"] == a and f in ("all", r["file"])]
        n = len(sub)
        if not n:
            continue
        lines.append(
            f"| {a} | {f} | {sum(r['raw_error'] for r in sub) / n:.3f} | "
            f"{sum(r['corrected_error'] for r in sub) / n:.3f} | "
            f"{sum(r['corrected_error'] < r['raw_error'] for r in sub)}/{n} | "
            f"{sum(r['covered'] for r in sub)}/{n} | {sum(r['high'] - r['low'] for r in sub) / n:.3f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
