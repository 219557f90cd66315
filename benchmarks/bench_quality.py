"""Verifier quality against peers on real data: does an evolved vx verifier agree with the truth
better than what a person could use instead?

Families (``--families``; default: all but ``mbpp-per-file``):

* ``mbpp-per-file`` -- one MBPP+ family per samples file in ``<samples-dir>/*.jsonl`` (one attempt per
  task; the benchmark's original rows);
* ``mbpp-both`` -- one MBPP+ family from every samples file together (two attempts per task);
* ``codet`` -- the CodeT HumanEval family: CodeGen-16B's samples in ``<codet-dir>``, ``--per-task`` (10)
  attempts per task (seeded), its model-written test cases as the tasks' ``model_tests``, labelled
  with HumanEval+'s hidden tests;
* ``spider`` -- the Spider family (``vx data build spider``): DIN-SQL's 20 prediction runs on 191 Spider dev
  questions in ``<spider-dir>``, ``--spider-per-task`` attempts per question (seeded; several values give
  one family each, default 5 and 20), labelled by Spider's execution match;
* ``tools-multi`` -- BFCL's multi-turn family (``vx data build tools --kind multi``): 300 tasks on stateful
  backends, seven real trajectories each, in ``<tools-dir>/multi``, labelled by BFCL's multi-turn checker;
* ``spider-frontier`` -- the Spider family of the four published systems' predictions in
  ``<spider-dir>/samples-frontier`` (C3SQL, DAIL-SQL with and without self-consistency, Graphix-T5) on the
  same questions, all four attempts per question (k = 4);
* ``tools`` -- the single-turn tools family (``vx data build tools``): BFCL's 620 questions in ``<tools-dir>``
  (simple, multiple, parallel, parallel-multiple, relevance) with 36 models' answers each, labelled by BFCL;
  locked balanced accuracy is also reported per category;
* ``--family-dir DIR`` (repeatable) adds a prebuilt family directory, evaluated as built for every seed
  (``{seed}`` in DIR is replaced by each seed: one prebuilt family per seed); alone, it runs without the defaults.

For each family and seed (a different task-disjoint train/dev/locked draw, so a different 10-item dev
set) the script

1. builds the family (``vx data build mbpp|humaneval --subset <subset> --seed S``; cached under the
   work dir; one ground-truth grader per dataset is shared by all builds, so each output is run on
   the hidden tests once per invocation);
2. builds ONE verdict matrix over every item (train, dev and locked) with the family's op pool
   (verdict cache on; the attempts of a task are each other's peers, the dev tasks' other attempts
   come from the family's peers.jsonl), timed: items/s for a cold cache;
3. evaluates every method on that matrix and those splits: the hand-written seed, the best single
   op (chosen on dev), a majority vote of the active ops, Snorkel's LabelModel and
   MajorityLabelVoter, SPADE-style minimal conjunction (α, τ), logistic regression on the dev
   items, the peers a user would pick for many attempts -- a plurality vote (MBR-exec) and CodeT's
   dual agreement, alone and with the visible example -- and vx evolution (anchored) with its
   `naive` and `no-lifecycle` ablations. Every method's final verdict is conjoined with the family
   root, as a vx verifier's is. Peers see the train verdicts (unlabeled) and the dev verdicts and
   labels, never locked labels (`vx.baselines`); evolution sees `family.evolution_view()` only.

Reported per family: locked accuracy, balanced accuracy, fail and pass recall, recall on the failures
that pass their visible example (mean ± std over seeds), the share of train items each method passes
(the collapse signature), and the paired, task-clustered sign-flip permutation test of vx-evolved
against each method on the locked items -- on accuracy, and on balanced accuracy (each item weighted
by 1 / (2 × its class's size), so the weighted mean is the balanced accuracy) -- pooled over seeds
with one cluster per *task*.

    python benchmarks/bench_quality.py                       # every family, 5 seeds, 3 rounds (hours on 2 cores)
    python benchmarks/bench_quality.py --families codet --seeds 0 1 --rounds 2 --work /tmp/vxq   # a quick look

Needs the ``bench`` extra for the Snorkel and SPADE peers (a missing one is reported, not faked).
Skips cleanly (exit 0) when the data folders are absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import selection  # noqa: E402  (best of n: every method's selection, benchmarks/selection.py)

DEFAULT_DATA = ROOT.parent / "shared" / "data"
REF = "vx evolved (anchored)"  # the row every other method is tested against
ABLATIONS: tuple[tuple[str, str | None], ...] = (
    (REF, None),
    ("vx naive", "naive"),
    ("vx no-lifecycle", "no-lifecycle"),
)
BUILD_FORMAT = 3  # 3: the dev draw is part of the build, and every item's hidden-test label is kept beside it


TRUTH_FILE = "truth.json"  # beside a built family: item id -> hidden-test label, for the design figures
#: --reuse-runs: a finished evolution run is reused even when vx's code changed since (to re-measure what the
#: change cannot touch, e.g. how the written verifiers rank attempts)
REUSE_RUNS = False


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------------------------- build


@attrs.frozen
class FamilySpec:
    """One benchmarked family: how to build it (or where it is, when prebuilt)."""

    key: str  # work-dir name
    title: str
    kind: str  # "mbpp" | "humaneval" | "prebuilt"
    samples: tuple[Path, ...] = ()
    tests: Path | None = None
    per_task: int | None = None
    subset: str = "all"
    n_locked: int | None = 40
    directory: str | Path | None = (
        None  # prebuilt: a family directory ("{seed}" replaced by the seed); spider: its data
    )
    dev_draw: str = "stratified"

    def prebuilt_dir(self, seed: int) -> Path:
        return Path(str(self.directory).replace("{seed}", str(seed)))


class Builder:
    """Builds (or reuses) one family per (spec, seed), sharing one ground-truth grader per dataset."""

    def __init__(self, data_dir: Path | None, work: Path, seed_expr: Path, workers: int) -> None:
        self.data_dir = data_dir
        self.work = work
        self.seed_expr = seed_expr
        self.workers = workers
        self._graders: dict[str, Any] = {}

    def grader(self, dataset: str) -> Any:
        if dataset not in self._graders:
            from vx.families.code.data import tasks as task_data
            from vx.families.code.data.groundtruth import Grader

            d = str(self.data_dir) if self.data_dir else None
            self._graders[dataset] = Grader(
                task_data.load(dataset, d), version=task_data.dataset_version(dataset, d), workers=self.workers
            )
        return self._graders[dataset]

    def build(self, spec: FamilySpec, seed: int) -> tuple[Path, dict[str, Any]]:
        from vx.families.code.data.build import BUILDER_VERSION, SamplesBuild, build_humaneval_samples, build_mbpp

        if spec.kind == "spider":
            return self.build_spider(spec, seed)
        if spec.kind == "tools":
            return self.build_tools(spec, seed)
        if spec.kind == "tools-multi":
            return self.build_tools_multi(spec, seed)
        if spec.kind == "prebuilt":
            from vx.families.family import Family

            d = spec.prebuilt_dir(seed)
            fam = Family(d)
            counts = {
                "train_items": len(fam.split("train")),
                "dev_items": len(fam.split("dev")),
                "locked_items": len(fam.audit()),
            }
            strata = fam.provenance.get("counts", {}).get("dev_strata") if isinstance(fam.provenance, dict) else None
            return d, {**counts, **({"dev_strata": strata} if strata else {})}
        key = {
            "format": BUILD_FORMAT,
            "builder": BUILDER_VERSION,
            "seed": seed,
            "kind": spec.kind,
            "samples_sha256": [sha256(p) for p in spec.samples],
            "tests_sha256": sha256(spec.tests) if spec.tests else None,
            "per_task": spec.per_task,
            "seed_expr_sha256": sha256(self.seed_expr),
            "subset": spec.subset,
            "n_locked": spec.n_locked,
            "dev_draw": spec.dev_draw,
        }
        d = str(self.data_dir) if self.data_dir else None

        def make(out: Path) -> Any:
            if spec.kind == "mbpp":
                return build_mbpp(
                    list(spec.samples),
                    out,
                    SamplesBuild(
                        seed=seed,
                        data_dir=d,
                        subset=spec.subset,
                        n_locked=spec.n_locked,
                        workers=self.workers,
                        seed_expr=self.seed_expr,
                        grader=self.grader("mbpp+"),
                        per_task=spec.per_task,
                        dev_draw=spec.dev_draw,
                    ),
                )
            return build_humaneval_samples(
                list(spec.samples),
                out,
                SamplesBuild(
                    seed=seed,
                    data_dir=d,
                    tests_path=spec.tests,
                    per_task=spec.per_task,
                    subset=spec.subset,
                    n_locked=spec.n_locked,
                    workers=self.workers,
                    seed_expr=self.seed_expr,
                    grader=self.grader("humaneval+"),
                    dev_draw=spec.dev_draw,
                ),
            )

        return self.cached(spec, seed, key, make)

    def cached(self, spec: FamilySpec, seed: int, key: dict[str, Any], make: Any) -> tuple[Path, dict[str, Any]]:
        """The family of (spec, seed): reused when its build stamp has `key`, else ``make(out)`` builds it. A
        build that knows every item's hidden-test label leaves them *beside* the family (TRUTH_FILE): evolution
        never reads it; the train split's labels measure design choices without looking at the locked split."""
        out = self.work / spec.key / f"seed-{seed}" / "family"
        stamp_path = out.parent / "build.json"
        if stamp_path.is_file() and (out / "family.toml").is_file():
            stamp = json.loads(stamp_path.read_text(encoding="utf-8"))
            if stamp.get("key") == key:
                return out, stamp["counts"]
        log(f"building the {spec.title} family, seed {seed}")
        t0 = time.perf_counter()
        report = make(out)
        truth = getattr(report, "truth", None)
        if truth:
            (out.parent / TRUTH_FILE).write_text(json.dumps(truth, sort_keys=True), encoding="utf-8")
        counts = json.loads(json.dumps(report.counts, default=str))
        stamp_path.write_text(
            json.dumps({"key": key, "counts": counts, "seconds": time.perf_counter() - t0}, indent=2), encoding="utf-8"
        )
        return out, counts

    def build_spider(self, spec: FamilySpec, seed: int) -> tuple[Path, dict[str, Any]]:
        """The Spider family of one seed (its own gold-free seed expression, not --seed-expr's code seed)."""
        from vx.families.sql.data.spider import BUILDER_VERSION, SEED_EXPRESSION, SpiderBuild, build_spider

        key = {
            "format": BUILD_FORMAT,
            "builder": f"spider-{BUILDER_VERSION}",
            "seed": seed,
            "samples_sha256": [sha256(p) for p in spec.samples],
            "per_task": spec.per_task,
            "seed_expr_sha256": hashlib.sha256(SEED_EXPRESSION.encode()).hexdigest(),
            "n_locked": spec.n_locked,
            "dev_draw": spec.dev_draw,
        }
        return self.cached(
            spec,
            seed,
            key,
            lambda out: build_spider(
                spec.directory,
                out,
                SpiderBuild(
                    samples=list(spec.samples),
                    per_task=spec.per_task,
                    seed=seed,
                    n_locked=spec.n_locked,
                    dev_draw=spec.dev_draw,
                ),
            ),
        )

    def build_tools(self, spec: FamilySpec, seed: int) -> tuple[Path, dict[str, Any]]:
        """The single-turn tools family of one seed (its own seed expression, not --seed-expr's code seed)."""
        from vx.families.tools.data.single import BUILDER_VERSION, SEED_EXPRESSION, build_single

        key = {
            "format": BUILD_FORMAT,
            "builder": f"tools-{BUILDER_VERSION}",
            "seed": seed,
            "samples_sha256": [sha256(p) for p in spec.samples],
            "per_task": spec.per_task,
            "seed_expr_sha256": hashlib.sha256(SEED_EXPRESSION.encode()).hexdigest(),
            "n_locked": spec.n_locked,
            "dev_draw": spec.dev_draw,
        }
        return self.cached(
            spec,
            seed,
            key,
            lambda out: build_single(
                spec.directory, out, seed=seed, n_locked=spec.n_locked, per_task=spec.per_task, dev_draw=spec.dev_draw
            ),
        )

    def build_tools_multi(self, spec: FamilySpec, seed: int) -> tuple[Path, dict[str, Any]]:
        """BFCL's multi-turn family of one seed (its own seed expression; the files' BFCL labels)."""
        from vx.families.tools.data.multi import BUILDER_VERSION, SEED_EXPRESSION, build_multi

        key = {
            "format": BUILD_FORMAT,
            "builder": f"tools-multi-{BUILDER_VERSION}",
            "seed": seed,
            "files_sha256": [sha256(p) for p in spec.samples],
            "seed_expr_sha256": hashlib.sha256(SEED_EXPRESSION.encode()).hexdigest(),
            "n_locked": spec.n_locked,
        }
        return self.cached(
            spec,
            seed,
            key,
            lambda out: build_multi(spec.directory, out, seed=seed, n_locked=spec.n_locked, relabel=False),
        )


# ---------------------------------------------------------------------------------------------- one seed


def final_codes(node: Any, matrix: Any, root: str | None) -> np.ndarray:
    from vx.dsl.compile import BatchEvaluator
    from vx.dsl.semantics import final_codes

    e = BatchEvaluator(matrix, memo_bytes=0).evaluate_int8(node)
    return final_codes(matrix.column(root) if root else None, e)


def evolve_one(
    family: Any,
    runs_dir: Path,
    ablation: str | None,
    seed: int,
    rounds: int,
    jobs: int,
    cache: Any,
    consensus: str | None = None,
) -> tuple[Path, float, Path]:
    """Run (or reuse a finished) evolution; returns the evolved .vx file, the seconds it took and the run file."""
    from vx.evolve import EvolveConfig, evolve_family
    from vx.evolve.store import RunStore

    tag = (ablation or "anchored") + (f"-{consensus}" if consensus else "")
    run = runs_dir / f"run-{tag}-r{rounds}-s{seed}.vxrun.sqlite"
    vx = runs_dir / f"evolved-{tag}-r{rounds}-s{seed}.vx"
    if vx.is_file() and run.is_file():
        store = RunStore(run)
        try:
            meta = store.meta()
        finally:
            store.close()
        if (
            meta.get("status") == "finished"
            and meta.get("family_dir") == str(family.dir)
            and (REUSE_RUNS or meta.get("bench_code") == code_stamp())
        ):
            return vx, float(meta.get("bench_seconds", 0.0)), run
    for stale in (run, vx, vx.with_suffix(".specs.json")):
        stale.unlink(missing_ok=True)
    runs_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    config = EvolveConfig(
        rounds=rounds, seed=seed, ablation=ablation, jobs=jobs, **({"consensus": consensus} if consensus else {})
    )
    evolve_family(family, config=config, out=run, cache=cache, audit=False, vx_out=vx)
    seconds = time.perf_counter() - t0
    store = RunStore(run)
    try:
        store.set_meta({"bench_seconds": seconds, "bench_code": code_stamp()})
    finally:
        store.close()
    return vx, seconds, run


def code_stamp() -> str:
    """A hash of vx's evolution and family code: a finished run is reused only by the same code."""
    digest = hashlib.sha256()
    for sub in ("evolve", "families", "ops", "dsl"):
        for path in sorted((ROOT / "src" / "vx" / sub).rglob("*.py")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_trace(run: Path) -> dict[str, Any]:
    """What the benchmark prints of an evolution per seed: the dev strata, the objective and incumbent
    round by round, every lifecycle event that changed the incumbent, and how the result was chosen."""
    from vx.evolve.store import RunStore

    store = RunStore(run)
    try:
        rounds = store.rounds()
        events = store.events()
        summary = store.summary()
    finally:
        store.close()
    held: set[str] = set()
    for r in rounds:
        held.update(r["incumbent"].replace("(", " ").replace(")", " ").split())
    changed = [
        {"round": e["round"], "op": e["op"], "kind": e["kind"], "reason": e["reason"]}
        for e in events
        if e["kind"] in ("retired", "promoted") or (e["kind"] == "born" and e["op"] in held)
    ]
    return {
        "rounds": [
            {
                "round": r["round"],
                "objective": r["objective"],
                "a_dev": r["a_dev"],
                "a_train": r["a_train"],
                "incumbent": r["incumbent"],
                "replaced": bool(r["replaced"]),
            }
            for r in rounds
        ],
        "events": changed,
        "selected": summary.get("selected"),
    }


def peers_for(seed: int, alpha: float, tau: float) -> list[Any]:
    from vx.baselines import BestSingleOp, LogisticRegression, MajorityVote, SnorkelLabelModel, SnorkelMajority, Spade

    return [
        BestSingleOp(),
        MajorityVote(),
        SnorkelLabelModel(seed=seed),
        SnorkelMajority(),
        Spade(alpha=alpha, tau=tau),
        LogisticRegression(),
    ]


def evaluate_family(
    family_dir: Path,
    *,
    seed: int,
    rounds: int,
    runs_dir: Path,
    jobs: int = 2,
    cache: Any = None,
    alpha: float = 0.9,
    tau: float = 0.25,
    ablations: Sequence[tuple[str, str | None]] = ABLATIONS,
    label: str = "",
    consensus: Sequence[str] = (),
    truth: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Every method on one family: one verdict matrix over train+dev+locked, the same splits for all.

    Per method: locked accuracy / balanced accuracy / coverage / confusion, the share of train items
    it passes, per-locked-item correctness (for the paired test) and what it chose."""
    from vx.baselines import MissingDependency, run_peer
    from vx.dsl.ast import OpRef as OpRefNode
    from vx.dsl.parse import parse_file
    from vx.dsl.printer import to_text
    from vx.dsl.semantics import to_finals
    from vx.evolve.run import load_pool_for_vx
    from vx.families.family import Family
    from vx.metrics import agreement
    from vx.ops.apply import apply_ops

    family = Family(family_dir)
    pool = family.pool()
    root = pool.root_name
    train, dev = family.split("train"), family.split("dev")
    locked = family.audit().labeled_split()  # the benchmark is the auditor: outside every method
    items = list(train.items) + list(dev.items) + list(locked.items)
    n_tr, n_dev, n = len(train), len(dev), len(items)
    is_train = np.zeros(n, bool)
    is_train[:n_tr] = True
    is_dev = np.zeros(n, bool)
    is_dev[n_tr : n_tr + n_dev] = True
    is_locked = ~(is_train | is_dev)
    dev_labels = np.array([it.label for it in dev.items], dtype=float)
    locked_labels = [it.label for it in locked.items]
    locked_fail = np.array([lab < 0.5 for lab in locked_labels], dtype=bool)

    log(f"{label} seed {seed}: verdict matrix of {len(pool)} ops × {n} items")
    peers = family.peers
    t0 = time.perf_counter()
    app = apply_ops(
        pool, items, family.tasks, jobs=jobs, cache=cache, progress=False, description="verdict matrix", peers=peers
    )
    matrix_seconds = time.perf_counter() - t0
    matrix = app.matrix
    active = [o.name for o in pool if o.status == "active" and o.name != root]
    votes = matrix.select_ops(active).to_array()
    root_col = matrix.column(root) if root else None
    # failures that pass their visible example: the root does not fail them and fails_visible_example is clean
    fve = matrix.column("fails_visible_example")[is_locked] if "fails_visible_example" in matrix.op_names else None
    root_locked = root_col[is_locked] if root_col is not None else np.zeros(int(is_locked.sum()), np.int8)
    hard = locked_fail & (fve == 0) & (root_locked != 1) if fve is not None else np.zeros_like(locked_fail)
    n_fail, n_pass = int(locked_fail.sum()), int((~locked_fail).sum())
    weights = np.where(locked_fail, 0.5 / max(n_fail, 1), 0.5 / max(n_pass, 1)) * len(locked_fail)
    # the design split: train items with their hidden-test labels (read by no method; design choices are
    # measured here, never on the locked items)
    truth = truth or {}
    design = np.array([is_train[i] and items[i].id in truth for i in range(n)])
    design_fail = np.array([truth.get(it.id) == "fail" for it in items])
    fve_all = matrix.column("fails_visible_example") if "fails_visible_example" in matrix.op_names else None
    design_hard = (
        design & design_fail & (fve_all == 0) & (root_col != 1)
        if fve_all is not None and root_col is not None
        else np.zeros(n, bool)
    )

    results: dict[str, dict[str, Any]] = {}
    method_codes: dict[str, np.ndarray] = {}  # every method's final codes, for best of n (selection.py)
    vx_nodes: dict[str, Any] = {}  # the vx verifiers' expressions (they rank by their own evidence)
    # families whose tasks carry a category (tools: BFCL's simple, multiple, parallel, ...): locked figures per category
    locked_cats = np.array([str(family.tasks.get(it.task, {}).get("category", "")) for it in locked.items])

    def by_category(says_fail: np.ndarray) -> dict[str, float]:
        out = {}
        for cat in sorted(set(locked_cats) - {""}):
            m = locked_cats == cat
            f, p = locked_fail & m, ~locked_fail & m
            fr = float(says_fail[f].mean()) if f.any() else float("nan")
            pr = float((~says_fail[p]).mean()) if p.any() else float("nan")
            out[cat] = (fr + pr) / 2 if f.any() and p.any() else (pr if p.any() else fr)
        return out

    def record(name: str, codes: np.ndarray, detail: str, seconds: float = 0.0) -> None:
        method_codes[name] = codes
        finals = to_finals(codes)
        a = agreement([finals[i] for i in np.flatnonzero(is_locked)], locked_labels)
        says_fail = codes[is_locked] == 1
        correct = says_fail == locked_fail
        d = agreement([finals[i] for i in np.flatnonzero(is_dev)], list(dev_labels))
        results[name] = {
            "dev_recall_weighted": d.recall_weighted,
            "accuracy": a.accuracy,
            "balanced_accuracy": a.balanced_accuracy,
            "coverage": a.coverage,
            "fail_recall": float(says_fail[locked_fail].mean()) if n_fail else float("nan"),
            "pass_recall": float((~says_fail[~locked_fail]).mean()) if n_pass else float("nan"),
            "hard_recall": float(says_fail[hard].mean()) if hard.any() else float("nan"),
            "n_hard": int(hard.sum()),
            "confusion": {"tp": a.tp, "fp": a.fp, "tn": a.tn, "fn": a.fn},
            "train_pass_share": float((codes[is_train] != 1).mean()) if n_tr else float("nan"),
            "correct": correct.astype(int).tolist(),
            "weighted_correct": (correct * weights).tolist(),
            "detail": detail,
            "seconds": seconds,
            "design": design_figures(codes),
            "by_category": by_category(says_fail),
        }

    def design_figures(codes: np.ndarray) -> dict[str, float]:
        if not design.any():
            return {}
        says = codes[design] == 1
        fail = design_fail[design]
        fr = float(says[fail].mean()) if fail.any() else float("nan")
        pr = float((~says[~fail]).mean()) if (~fail).any() else float("nan")
        hard = design_hard[design]
        return {
            "items": int(design.sum()),
            "accuracy": float((says == fail).mean()),
            "balanced_accuracy": (fr + pr) / 2,
            "fail_recall": fr,
            "pass_recall": pr,
            "hard_recall": float(says[hard].mean()) if hard.any() else float("nan"),
        }

    # 1. the hand-written seed
    seed_node = family.seed(pool.names)
    record("hand-written seed", final_codes(seed_node, matrix, root), to_text(seed_node, width=10_000))
    vx_nodes["hand-written seed"] = seed_node

    # 2–6. peers on the same matrix
    for peer in peers_for(seed, alpha, tau):
        t0 = time.perf_counter()
        try:
            res = run_peer(peer, votes, active, train=is_train, dev=is_dev, dev_labels=dev_labels, root=root_col)
        except MissingDependency as exc:
            results[peer.name] = {"missing": str(exc)}
            log(f"skipping {peer.name}: {exc}")
            continue
        record(peer.name, res.codes, res.detail, time.perf_counter() - t0)

    # 7. what a user with many attempts per task picks instead: the code family's peer baselines, and the
    #    fixed rule "the seed or the peer op" (chosen by no method: the rule evolution must at least match)
    for peer in attempt_baselines(matrix.op_names):
        res = run_peer(
            peer,
            matrix.select_ops(list(peer.ops)).to_array(),
            list(peer.ops),
            train=is_train,
            dev=is_dev,
            dev_labels=dev_labels,
            root=root_col,
        )
        record(peer.name, res.codes, res.detail)
    peer_ops = [o.name for o in pool if o.is_peer and not o.baseline and o.status == "active"]
    if peer_ops:
        from vx.dsl.ast import Any as AnyNode
        from vx.dsl.ast import OpRef

        rule = AnyNode(
            list(seed_node.children if isinstance(seed_node, AnyNode) else (seed_node,)) + [OpRef(o) for o in peer_ops]
        )
        record("fixed rule: seed ∨ peer ops", final_codes(rule, matrix, root), to_text(rule, width=10_000))
        vx_nodes["fixed rule: seed ∨ peer ops"] = rule  # an expression too: it ranks as a vx verifier would

    # 8. vx evolution and its ablations (they see family.evolution_view() only)
    variants = [(name, ablation, None) for name, ablation in ablations]
    variants += [(f"vx evolved, consensus {c}", None, c) for c in consensus]
    traces: dict[str, Any] = {}
    for name, ablation, cons in variants:
        log(f"{label} seed {seed}: evolving ({ablation or 'anchored'}{', ' + cons if cons else ''}, {rounds} rounds)")
        vx_path, seconds, run = evolve_one(family, runs_dir, ablation, seed, rounds, jobs, cache, consensus=cons)
        ext = load_pool_for_vx(vx_path, family)
        node = parse_file(vx_path, known_ops=ext.names)
        missing = [o for o in node.op_names() if o not in matrix.op_names]
        if missing:  # synthesized ops: their verdicts on every item, from their stored specs
            extra = apply_ops(
                ext, items, family.tasks, ops=missing, jobs=jobs, cache=cache, progress=False, peers=peers
            )
            matrix = matrix.with_ops(extra.matrix.select_ops(missing))
        record(name, final_codes(node, matrix, root), to_text(node, width=10_000), seconds)
        vx_nodes[name] = node
        traces[name] = run_trace(run)

    singles = {}  # every active op alone, on locked and on the design split (what each detector is worth)
    for o in active:
        codes = final_codes(OpRefNode(o), matrix, root)
        finals = codes[is_locked]
        says = finals == 1
        singles[o] = {
            "fail_recall": float(says[locked_fail].mean()) if n_fail else float("nan"),
            "pass_recall": float((~says[~locked_fail]).mean()) if n_pass else float("nan"),
            "hard_recall": float(says[hard].mean()) if hard.any() else float("nan"),
            "design": design_figures(codes),
        }
    false_alarms = false_alarm_design(
        matrix,
        family.pack(),
        active,
        is_train=is_train,
        dev=is_dev,
        dev_labels=dev_labels,
        root=root,
        items=items,
        truth=truth,
    )
    # the train consensus as evolution's objective reads it (label-free: the active ops' per-class vote,
    # corroborated), for a label-free measure of each vx verifier's choices on the design split
    from vx.evolve.objective import consensus_labels

    _, consensus_pass = consensus_labels(
        matrix, active, {}, {o.name: o.detects or o.name for o in pool if o.name in active}, "corroborated"
    )
    if root_col is not None:
        consensus_pass = consensus_pass & (root_col != 1)
    best_of_n = selection.evaluate_selection(
        matrix=matrix,
        items=items,
        tasks=family.tasks,
        is_train=is_train,
        is_dev=is_dev,
        is_locked=is_locked,
        truth=truth,
        codes=method_codes,
        nodes=vx_nodes,
        root=root,
        observations=app.observations,
        similarity=pool.similarity,
        dev_labels=dev_labels,
        consensus_pass=consensus_pass,
    )
    return {
        "seed": seed,
        "methods": results,
        "selection": best_of_n,
        "traces": traces,
        "singles": singles,
        "false_alarms": false_alarms,
        "dev_strata": dict(family.provenance.get("counts", {}).get("dev_strata") or {}),
        "locked_tasks": [it.task for it in locked.items],
        "locked_ids": [it.id for it in locked.items],
        "hard_ids": [it.id for it, h in zip(locked.items, hard) if h],
        "active_ops": active,
        "true_locked_pass_share": float((~locked_fail).mean()) if len(locked_fail) else None,
        "matrix": {
            "items": n,
            "seconds": matrix_seconds,
            "calls": app.calls,
            "cache_hits": app.cache_hits,
            "items_per_second": n / matrix_seconds if matrix_seconds else None,
        },
    }


def false_alarm_design(
    matrix: Any,
    pack: Any,
    ops: Sequence[str],
    *,
    is_train: np.ndarray,
    dev: np.ndarray,
    dev_labels: np.ndarray,
    root: str | None,
    items: Sequence[Any],
    truth: dict[str, str] | None,
) -> dict[str, Any]:
    """Every op's label-free false-alarm estimate (each estimator of `vx.evolve.estimates`) beside its true
    false-alarm rate on the train split's hidden labels (the design split; no method reads it)."""
    from vx.evolve.estimates import ESTIMATORS, op_estimates, pass_evidence

    n = matrix.n_items
    root_open = matrix.column(root) != 1 if root else np.ones(n, bool)
    scope = is_train & root_open
    dev_p = np.full(n, np.nan)
    dev_p[np.flatnonzero(dev)] = dev_labels
    est = {}
    for e in ESTIMATORS:
        ev = pass_evidence(
            matrix, scope, reference=ops, gate=pack.gate, agreement=pack.agreement, estimator=e, dev_p=dev_p, root=root
        )
        est[e] = (ev, op_estimates(matrix, ev, ops))
    truth = truth or {}
    correct = np.array([scope[i] and truth.get(it.id) == "pass" for i, it in enumerate(items)])
    pp = est["pseudo-positives"][0]
    in_pp = pp.weight > 0
    out: dict[str, Any] = {
        "evidence": {e: ev.describe() for e, (ev, _) in est.items()},
        "pseudo_positive_precision": float(correct[in_pp].mean()) if in_pp.any() and truth else None,
        "n_pseudo_positives": int(in_pp.sum()),
        "ops": {},
    }
    for o in ops:
        col = matrix.column(o)
        opined = correct & (col != -1)
        row = {"true": float((col[opined] == 1).mean()) if opined.any() else float("nan"), "n_true": int(opined.sum())}
        for e, (_ev, table) in est.items():
            row[e] = table[o].rate if o in table else float("nan")
            row[f"n_{e}"] = table[o].n if o in table else 0.0
        out["ops"][o] = row
    return out


#: The gate a user ORs a plurality vote with: the visible example (code), "executes" (SQL), the answer
#: format and the docs (single-turn tools), "acts where asked" (multi-turn tools).
GATES = ("fails_visible_example", "execution_error", "breaks_contract", "silent_turn")


def attempt_baselines(op_names: Sequence[str]) -> list[Any]:
    """Plurality vote (MBR-exec; for SQL, self-consistency over execution results) and CodeT dual
    agreement, alone and with the family's gate, when the family's pool has them (shadow peer ops)."""
    from vx.baselines import FixedOps

    gate = next((g for g in GATES if g in op_names), None)
    out = []
    for op, title in (
        ("outside_plurality", "plurality vote (MBR-exec)"),
        ("outside_dual_agreement", "CodeT dual agreement"),
        ("outside_exact_plurality", "exact plurality"),
        ("outside_normal_plurality", "plurality over normalised answers"),
        ("outside_state_plurality", "plurality over end states"),
    ):
        if op in op_names:
            out.append(FixedOps((op,), name=title))
            if gate is not None:
                out.append(FixedOps((gate, op), name=f"{title} ∨ {gate}"))
    return out


def run_seed(spec: FamilySpec, seed: int, args: argparse.Namespace, builder: Builder, cache: Any) -> dict[str, Any]:
    family_dir, counts = builder.build(spec, seed)
    runs_dir = family_dir.parent if spec.kind != "prebuilt" else args.work / spec.key / f"runs-seed-{seed}"
    truth_path = family_dir.parent / TRUTH_FILE
    truth = json.loads(truth_path.read_text(encoding="utf-8")) if truth_path.is_file() else None
    ablations = [(REF, None)] + [(name, a) for name, a in ABLATIONS if a in args.ablations]
    out = evaluate_family(
        family_dir,
        seed=seed,
        rounds=args.rounds,
        runs_dir=runs_dir,
        jobs=args.jobs,
        cache=cache,
        alpha=args.alpha,
        tau=args.tau,
        label=spec.title,
        ablations=ablations,
        consensus=tuple(args.consensus),
        truth=truth,
    )
    truth_train = counts.get("train_truth", {})
    n_truth = sum(truth_train.values()) if truth_train else 0
    return {**out, "counts": counts, "true_train_pass_share": truth_train.get("pass", 0) / n_truth if n_truth else None}


# ---------------------------------------------------------------------------------------------- report


def mean_std(values: Sequence[float]) -> str:
    v = np.asarray([x for x in values if x is not None and not np.isnan(x)], dtype=float)
    if len(v) == 0:
        return "—"
    std = v.std(ddof=1) if len(v) > 1 else 0.0
    return f"{v.mean():.3f} ± {std:.3f}"


def summarize_file(name: str, runs: list[dict[str, Any]], n_permutations: int) -> tuple[str, dict[str, Any]]:
    from vx.metrics import paired_permutation_test

    methods = list(runs[0]["methods"])
    ref = REF
    clusters = [t for r in runs for t in r["locked_tasks"]]
    lines = []
    c = runs[0]["counts"]
    lines.append(f"### {name}\n")
    n_hard = [r["methods"].get(ref, {}).get("n_hard", 0) for r in runs]
    speed = runs[0].get("matrix", {})
    lines.append(
        f"{len(runs)} seeds ({', '.join(str(r['seed']) for r in runs)}); per seed ≈ "
        f"{c.get('train_items')} train, {c.get('dev_items')} dev, {c.get('locked_items')} locked items; "
        f"true pass share: train {mean_std([r['true_train_pass_share'] for r in runs])}, "
        f"locked {mean_std([r['true_locked_pass_share'] for r in runs])}; locked failures that pass "
        f"their visible example: {sum(n_hard)} over the seeds. Verdict matrix of the first seed: "
        f"{speed.get('items')} items in {speed.get('seconds', 0):.0f} s "
        f"({speed.get('items_per_second') or 0:.2f} items/s, {speed.get('cache_hits', 0)} cache hits).\n"
    )
    lines.append(
        "| method | dev agreement (rw) | locked accuracy | locked balanced acc. | fail recall | pass recall | "
        "recall, failures passing the visible example | train pass share | Δ acc. | p | Δ bal. | p (bal.) |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    summary: dict[str, Any] = {}
    for m in methods:
        rows = [r["methods"].get(m, {}) for r in runs]
        if any("missing" in row or not row for row in rows):
            why = next((row.get("missing", "") for row in rows if "missing" in row), "not run")
            lines.append(f"| {m} | not run | | | | | | | | | | {why.split(';')[0]} |")
            continue
        col = {
            k: [row.get(k, float("nan")) for row in rows]
            for k in (
                "dev_recall_weighted",
                "accuracy",
                "balanced_accuracy",
                "fail_recall",
                "pass_recall",
                "hard_recall",
                "train_pass_share",
            )
        }
        if m == ref:
            cells = ["", "", "", ""]
        else:
            cells = []
            for field in ("correct", "weighted_correct"):
                a = [x for r in runs for x in r["methods"][ref][field]]
                b = [x for row in rows for x in row[field]]
                t = paired_permutation_test(a, b, clusters, n_permutations=n_permutations, seed=0)
                cells += [f"{t.diff:+.3f}", f"{t.p_value:.4f}"]
                summary.setdefault("tests" if field == "correct" else "tests_balanced", {})[m] = {
                    "diff": t.diff,
                    "p": t.p_value,
                    "clusters": t.n_clusters,
                    "items": t.n_items,
                }
        lines.append(
            f"| {m} | "
            + " | ".join(
                mean_std(col[k])
                for k in (
                    "dev_recall_weighted",
                    "accuracy",
                    "balanced_accuracy",
                    "fail_recall",
                    "pass_recall",
                    "hard_recall",
                    "train_pass_share",
                )
            )
            + " | "
            + " | ".join(cells)
            + " |"
        )
        summary.setdefault("methods", {})[m] = col
    lines.append("")
    cats = sorted({c for r in runs for row in r["methods"].values() for c in (row.get("by_category") or {})})
    if cats:
        lines.append("Locked balanced accuracy per category (mean ± std over seeds):\n")
        lines.append("| method | " + " | ".join(cats) + " |")
        lines.append("|---|" + "---|" * len(cats))
        for m in methods:
            rows = [r["methods"].get(m, {}) for r in runs]
            if any("missing" in row or not row.get("by_category") for row in rows):
                continue
            lines.append(
                f"| {m} | "
                + " | ".join(mean_std([row["by_category"].get(c, float("nan")) for row in rows]) for c in cats)
                + " |"
            )
        lines.append("")
    design = [m for m in methods if all(r["methods"].get(m, {}).get("design") for r in runs)]
    if design:
        n_items = runs[0]["methods"][design[0]]["design"]["items"]
        lines.append(
            f"Design figures (the **train** split's hidden-test labels, ≈ {n_items} items per seed; read by "
            "no method, used to choose vx's defaults -- never the locked split):\n"
        )
        lines.append(
            "| method | train balanced acc. | train fail recall | train pass recall | train recall, failures "
            "passing the visible example |"
        )
        lines.append("|---|---|---|---|---|")
        for m in design:
            d = [r["methods"][m]["design"] for r in runs]
            lines.append(
                f"| {m} | "
                + " | ".join(
                    mean_std([x[k] for x in d])
                    for k in ("balanced_accuracy", "fail_recall", "pass_recall", "hard_recall")
                )
                + " |"
            )
        lines.append("")
    singles = runs[0].get("singles") or {}
    if singles:
        lines.append("<details><summary>every active op alone (locked; design split)</summary>\n")
        lines.append(
            "| op | locked fail recall | locked pass recall | locked recall, failures passing the visible "
            "example | train balanced acc. | train pass recall |"
        )
        lines.append("|---|---|---|---|---|---|")
        for o in sorted(singles):
            vals = [r["singles"].get(o) for r in runs if r.get("singles", {}).get(o)]
            lines.append(
                f"| {o} | "
                + " | ".join(mean_std([v[k] for v in vals]) for k in ("fail_recall", "pass_recall", "hard_recall"))
                + " | "
                + " | ".join(
                    mean_std([v["design"].get(k, float("nan")) for v in vals])
                    for k in ("balanced_accuracy", "pass_recall")
                )
                + " |"
            )
        lines.append("\n</details>\n")
    fa_runs = [r["false_alarms"] for r in runs if r.get("false_alarms", {}).get("ops")]
    if fa_runs:
        from vx.evolve.estimates import ESTIMATORS

        prec = [r.get("pseudo_positive_precision") for r in fa_runs]
        lines.append(
            "False alarms without labels (design split: the **train** items' hidden labels): each op's "
            "estimated false-alarm rate on correct outputs, per estimator of `vx.evolve.estimates`, "
            "beside its true rate; pseudo-positives per seed "
            f"{mean_std([r['n_pseudo_positives'] for r in fa_runs])}, of which truly correct "
            f"{mean_std(prec)}.\n"
        )
        lines.append("| op | " + " | ".join(f"est. ({e})" for e in ESTIMATORS) + " | true | n correct |")
        lines.append("|---|" + "---|" * len(ESTIMATORS) + "---|---|")
        errs: dict[str, list[float]] = {e: [] for e in ESTIMATORS}
        for o in sorted(fa_runs[0]["ops"]):
            vals = [r["ops"][o] for r in fa_runs if o in r["ops"]]
            for v in vals:
                for e in ESTIMATORS:
                    if not (np.isnan(v[e]) or np.isnan(v["true"])):
                        errs[e].append(abs(v[e] - v["true"]))
            lines.append(
                f"| {o} | "
                + " | ".join(mean_std([v[e] for v in vals]) for e in ESTIMATORS)
                + f" | {mean_std([v['true'] for v in vals])} | {mean_std([v['n_true'] for v in vals])} |"
            )
        lines.append(
            "| mean abs. error | "
            + " | ".join(f"{np.mean(errs[e]):.4f}" if errs[e] else "—" for e in ESTIMATORS)
            + " | | |"
        )
        lines.append("")
        summary["false_alarm_error"] = {e: float(np.mean(errs[e])) if errs[e] else None for e in ESTIMATORS}
    for scope in ("locked", "design"):
        sel_lines, sel_summary = selection.summarize(runs, n_permutations, paired_permutation_test, scope)
        lines += sel_lines
        if sel_summary:
            summary.setdefault("selection", {})[scope] = sel_summary
        cat_lines, cat_summary = selection.summarize_categories(runs, scope)
        lines += cat_lines
        if cat_summary:
            summary.setdefault("selection_by_category", {})[scope] = cat_summary
    lines.append(
        "<details><summary>evolution per seed: dev strata, objective by round, what changed the "
        "incumbent, what was written</summary>\n"
    )
    for r in runs:
        for m, tr in r.get("traces", {}).items():
            strata = ", ".join(f"{k} {v}" for k, v in sorted((r.get("dev_strata") or {}).items())) or "not recorded"
            objective = " → ".join(f"{x['objective']:.4f}" for x in tr["rounds"])
            lines.append(
                f"- seed {r['seed']}, {m}: dev failures by evidence: {strata}; objective by round: "
                f"{objective}; written: `{r['methods'][m]['detail']}` "
                f"({(tr.get('selected') or {}).get('why', '?')})"
            )
            for x in tr["rounds"]:
                if x["replaced"]:
                    lines.append(f"  - round {x['round']}: incumbent `{x['incumbent']}`")
            for e in tr["events"]:
                lines.append(f"  - round {e['round']}: {e['kind']} `{e['op']}` ({e['reason']})")
    lines.append("\n</details>\n")
    lines.append("<details><summary>what each method chose, per seed</summary>\n")
    lines.append("| seed | method | choice |")
    lines.append("|---|---|---|")
    for r in runs:
        for m in methods:
            row = r["methods"].get(m, {})
            if row.get("detail") and m not in ("majority vote", "Snorkel MajorityLabelVoter"):
                lines.append(
                    f"| {r['seed']} | {m} | `{row['detail']}` |"
                    if m.startswith(("vx", "hand", "best", "SPADE"))
                    else f"| {r['seed']} | {m} | {row['detail']} |"
                )
    lines.append("\n</details>\n")
    return "\n".join(lines), summary


def git_revision() -> str:
    import subprocess

    try:
        rev = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown revision"
    return f"commit {rev}" + (" with local changes in src/" if dirty else "")


FAMILIES = (
    "mbpp-per-file",
    "mbpp-both",
    "humaneval-both",
    "codet",
    "spider",
    "spider-frontier",
    "tools",
    "tools-multi",
)
DEFAULT_FAMILIES = ("mbpp-both", "humaneval-both", "codet", "spider", "spider-frontier")


def family_specs(args: argparse.Namespace) -> list[FamilySpec]:
    """The families to benchmark, from the command line (those whose data is absent are skipped, said so).
    With ``--family-dir`` and no ``--families``, only the prebuilt families run."""
    specs: list[FamilySpec] = []
    families = args.families if args.families is not None else ([] if args.family_dir else list(DEFAULT_FAMILIES))
    draws = ["gross", "stratified"] if args.dev_draw == "both" else [args.dev_draw]
    for draw in draws:
        tag = "" if draw == "gross" else "-stratified"
        title = "" if draw == "gross" else ", stratified dev draw"
        files = sorted(args.samples_dir.glob("*.jsonl")) if args.samples_dir.is_dir() else []
        if "mbpp-per-file" in families:
            specs += [
                FamilySpec(f.stem + tag, f.stem + title, "mbpp", (f,), subset="all", n_locked=40, dev_draw=draw)
                for f in files
            ]
        if "mbpp-both" in families and len(files) > 1:
            specs.append(
                FamilySpec(
                    "mbpp-both" + tag,
                    f"MBPP+, {len(files)} samples files ({', '.join(f.stem for f in files)}){title}",
                    "mbpp",
                    tuple(files),
                    subset=args.subset,
                    n_locked=80,
                    dev_draw=draw,
                )
            )
        he = sorted(args.humaneval_dir.glob("*.jsonl")) if args.humaneval_dir.is_dir() else []
        if "humaneval-both" in families and len(he) > 1:
            specs.append(
                FamilySpec(
                    "humaneval-both" + tag,
                    f"HumanEval+, {len(he)} samples files ({', '.join(f.stem for f in he)}){title}",
                    "humaneval",
                    tuple(he),
                    subset=args.subset,
                    n_locked=60,
                    dev_draw=draw,
                )
            )
        codet = args.codet_dir / "codegen16B_code_solution.jsonl"
        if "codet" in families and codet.is_file():
            tests = args.codet_dir / "codegen16B_test_case.jsonl"
            specs.append(
                FamilySpec(
                    f"codet-k{args.per_task}{tag}",
                    f"CodeT HumanEval (CodeGen-16B), k = {args.per_task}{title}",
                    "humaneval",
                    (codet,),
                    tests if tests.is_file() else None,
                    args.per_task,
                    subset=args.subset,
                    n_locked=args.codet_locked,
                    dev_draw=draw,
                )
            )
    if "spider" in families and (args.spider_dir / "questions.jsonl").is_file():
        runs = tuple(sorted((args.spider_dir / "samples").glob("*.jsonl")))
        for k in args.spider_per_task:
            specs.append(
                FamilySpec(
                    f"spider-k{k}",
                    f"Spider dev (DIN-SQL, {len(runs)} runs), k = {k}",
                    "spider",
                    runs,
                    per_task=k,
                    n_locked=None,
                    directory=args.spider_dir,
                    dev_draw=spider_dev_draw(),
                )
            )
    if (
        "spider-frontier" in families
        and (args.spider_dir / "questions.jsonl").is_file()
        and any((args.spider_dir / "samples-frontier").glob("*.jsonl"))
    ):
        specs.append(spider_frontier_spec(args.spider_dir))
    tools_single = Path(getattr(args, "tools_dir", DEFAULT_DATA / "tools")) / "single"
    tools = sorted(tools_single.glob("*.jsonl.gz")) if "tools" in families and tools_single.is_dir() else []
    if tools:
        specs.append(
            FamilySpec(
                "tools-single",
                f"BFCL single-turn function calling ({len(tools)} categories, every model's answer)",
                "tools",
                tuple(tools),
                n_locked=None,
                directory=args.tools_dir,
                dev_draw=tools_dev_draw(),
            )
        )
    multi = Path(getattr(args, "tools_dir", DEFAULT_DATA / "tools")) / "multi"
    if "tools-multi" in families and (multi / "func_docs").is_dir():
        files = tuple(sorted(multi.glob("multi_turn_*.jsonl.gz")))
        specs.append(
            FamilySpec(
                "tools-multi",
                "BFCL multi-turn (gpt-oss-120b/20b, 7 trajectories per task)",
                "tools-multi",
                files,
                n_locked=None,
                directory=args.tools_dir,
            )
        )
    for d in args.family_dir:
        name = Path(d.replace("{seed}", "S")).name if "{seed}" in d else Path(d).name
        specs.append(FamilySpec(f"prebuilt-{name}", f"{d} (prebuilt)", "prebuilt", directory=d))
    return specs


def spider_dev_draw() -> str:
    """The Spider builder's default dev draw (chosen on the benchmark's train labels: docs/sql.md)."""
    from vx.families.sql.data.spider import DEFAULT_DEV_DRAW

    return DEFAULT_DEV_DRAW


def tools_dev_draw() -> str:
    """The tools builder's default dev draw (stratified by BFCL's error class)."""
    from vx.families.tools.data.single import DEFAULT_DEV_DRAW

    return DEFAULT_DEV_DRAW


def spider_frontier_spec(spider_dir: Path) -> FamilySpec:
    """The Spider frontier family: the four published systems' predictions (``samples-frontier/``: C3SQL,
    DAIL-SQL with and without self-consistency, Graphix-T5), all four attempts per question (k = 4)."""
    files = tuple(sorted((Path(spider_dir) / "samples-frontier").glob("*.jsonl")))
    return FamilySpec(
        "spider-frontier",
        f"Spider dev (frontier systems: {', '.join(f.stem for f in files)}), k = {len(files)}",
        "spider",
        files,
        per_task=None,
        n_locked=None,
        directory=spider_dir,
        dev_draw=spider_dev_draw(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--families",
        nargs="+",
        choices=FAMILIES,
        default=None,
        help=f"which families to build and benchmark (default: {' '.join(DEFAULT_FAMILIES)}; none when "
        "--family-dir is given)",
    )
    ap.add_argument(
        "--humaneval-dir",
        type=Path,
        default=DEFAULT_DATA / "samples" / "humaneval",
        help="folder of HumanEval samples files (*.jsonl, one output per task) (default: %(default)s)",
    )
    ap.add_argument(
        "--dev-draw",
        choices=("stratified", "gross", "both"),
        default="stratified",
        help="the built families' dev draw (vx data build --dev-draw; both: every family twice)",
    )
    ap.add_argument(
        "--ablations",
        nargs="*",
        choices=("naive", "no-lifecycle"),
        default=["naive", "no-lifecycle"],
        help="the ablations run beside anchored evolution (default: both; none: --ablations)",
    )
    ap.add_argument(
        "--consensus",
        nargs="*",
        default=[],
        help="also run vx evolved with each of these train consensus modes (design comparison)",
    )
    ap.add_argument(
        "--samples-dir",
        type=Path,
        default=DEFAULT_DATA / "samples" / "mbpp",
        help="folder of MBPP samples files (*.jsonl) (default: %(default)s)",
    )
    ap.add_argument(
        "--codet-dir",
        type=Path,
        default=DEFAULT_DATA / "samples" / "humaneval-codet",
        help="folder of CodeT's HumanEval files (default: %(default)s)",
    )
    ap.add_argument(
        "--spider-dir",
        type=Path,
        default=DEFAULT_DATA / "sql" / "spider",
        help="the Spider folder: questions.jsonl, databases/, samples/ (default: %(default)s)",
    )
    ap.add_argument(
        "--tools-dir",
        type=Path,
        default=DEFAULT_DATA / "tools",
        help="BFCL's data: single/<category>.jsonl.gz, multi/ (the multi-turn files and func_docs/) "
        "(default: %(default)s)",
    )
    ap.add_argument(
        "--spider-per-task",
        type=int,
        nargs="+",
        default=[5, 20],
        help="attempts per question in the Spider families, one family per value (default: 5 20)",
    )
    ap.add_argument(
        "--family-dir",
        action="append",
        default=[],
        help="a prebuilt family directory to benchmark as built, for every seed (repeatable); "
        "'{seed}' in it is replaced by each seed (one prebuilt family per seed)",
    )
    ap.add_argument("--per-task", type=int, default=10, help="attempts per task in the CodeT family (default: 10)")
    ap.add_argument(
        "--codet-locked",
        type=int,
        default=540,
        help="minimum locked items of the CodeT family (default: 540, about a third of the tasks)",
    )
    ap.add_argument(
        "--subset",
        choices=("hard", "all"),
        default="all",
        help="task subset of the multi-attempt builds (mbpp-both, codet; default: all)",
    )
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DATA / "evalplus",
        help="folder holding MbppPlus-/HumanEvalPlus-<version>.jsonl.gz (default: %(default)s; evalplus "
        "downloads them when absent)",
    )
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--rounds", type=int, default=3, help="evolution rounds per run (default: %(default)s)")
    ap.add_argument("--alpha", type=float, default=0.9, help="SPADE dev failure coverage bound")
    ap.add_argument("--tau", type=float, default=0.25, help="SPADE dev false-failure bound")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes / sandboxes at once")
    ap.add_argument(
        "--seed-expr",
        type=Path,
        default=ROOT / "examples" / "humaneval" / "seed.vx",
        help="the hand-written seed composition copied into each family (default: %(default)s)",
    )
    ap.add_argument(
        "--work",
        type=Path,
        default=Path.home() / ".cache" / "vx" / "bench-quality",
        help="work dir: built families, runs, verdict cache (default: %(default)s)",
    )
    ap.add_argument(
        "--out",
        type=Path,
        default=None,
        help="markdown file to write (default: <work>/quality.md; a .json beside it has every number)",
    )
    ap.add_argument("--permutations", type=int, default=10000)
    ap.add_argument(
        "--reuse-runs",
        action="store_true",
        help="reuse finished evolution runs even when vx's code changed since they ran (re-measure what the "
        "change cannot touch, e.g. how the written verifiers rank attempts)",
    )
    args = ap.parse_args(argv)
    global REUSE_RUNS
    REUSE_RUNS = args.reuse_runs

    specs = family_specs(args)
    if not specs:
        print(
            f"no data in {args.samples_dir}, {args.codet_dir} or {args.spider_dir} and no --family-dir: nothing to "
            "benchmark (skipped)"
        )
        return 0
    if not args.seed_expr.is_file():
        print(f"error: seed expression {args.seed_expr} not found (pass --seed-expr FILE)", file=sys.stderr)
        return 2
    data_dir = args.data_dir if args.data_dir.is_dir() else None
    args.work.mkdir(parents=True, exist_ok=True)
    from vx.ops.cache import VerdictCache

    cache = VerdictCache(args.work / "verdicts.sqlite")
    builder = Builder(data_dir, args.work, args.seed_expr, args.jobs)
    t_start = time.perf_counter()
    revision = git_revision()
    sections, everything = [], {}
    for spec in specs:
        runs = [run_seed(spec, s, args, builder, cache) for s in args.seeds]
        text, summary = summarize_file(spec.title, runs, args.permutations)
        sections.append(text)
        everything[spec.key] = {"title": spec.title, "summary": summary, "runs": runs}
        out = args.out or args.work / "quality.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".partial.json").write_text(json.dumps(everything, indent=1, default=str), encoding="utf-8")
    minutes = (time.perf_counter() - t_start) / 60
    try:
        import sklearn

        lr_backend = "scikit-learn " + sklearn.__version__
    except ImportError:
        lr_backend = "numpy (Newton)"
    head = [
        "## Verifier quality against peers (real model outputs)\n",
        f"`python benchmarks/bench_quality.py --families {' '.join(args.families or DEFAULT_FAMILIES)} --seeds "
        f"{' '.join(map(str, args.seeds))} --rounds {args.rounds}` — "
        f"{minutes:.1f} min on {os.cpu_count()} cores (Python {platform.python_version()}, vx at {revision}), "
        f"evolution `EvolveConfig(rounds={args.rounds}, seed=<seed>, jobs={args.jobs})` defaults otherwise, no LLM; "
        f"SPADE α={args.alpha:g}, τ={args.tau:g}; logistic regression backend: {lr_backend}; "
        f"{args.permutations} sign-flip permutations, one cluster per task, pooled over seeds. "
        "Dev agreement: recall-weighted agreement (FAIL weight 2, vx's A_dev) on the 10 dev items every method "
        "was chosen or fitted on. Locked accuracy: share of locked items whose final verdict (FAIL vs PASS, "
        "abstain = PASS) matches the hidden-test label; balanced: mean of the two class recalls; Δ bal. and its p: "
        "the same paired test on class-weighted correctness (its weighted mean is the balanced accuracy).\n",
    ]
    text = "\n".join(head + sections)
    out = args.out or args.work / "quality.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n", encoding="utf-8")
    out.with_suffix(".json").write_text(json.dumps(everything, indent=1, default=str), encoding="utf-8")
    print(text)
    log(f"written {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
