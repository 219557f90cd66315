"""The multi-turn half of the tools family's data: BFCL's multi-turn tasks and real agents' trajectories,
read from the shared files, labelled by replaying them, split, and written as a family.

Input: a folder like ``../shared/data/tools/multi`` -- ``multi_turn_{base,miss_func,miss_param}.jsonl.gz``
(one trajectory per line, with its task, BFCL's ground-truth calls and BFCL's label) and ``func_docs/``
(the function docs of each backend class, one JSON object per line).

**Tasks** (``tasks.jsonl``; what a verifier may see): ``turns`` (per user turn its messages; an empty
turn is where a held-out function is offered again), ``category``, ``involved_classes``,
``initial_config`` (the backends' initial state), ``functions`` (the docs of every function offered)
and ``held_out`` (``{turn: [names]}``: functions not offered before that turn, BFCL's miss_func).
The ground-truth calls are never a task field: they are the dev items' ``reference`` (in the output's
shape, one call per step) and otherwise only label.

**Labels** (:func:`label_trajectory`): BFCL's multi-turn checker, reimplemented on vx's own replay
(:mod:`vx.families.tools.replay`) of the trajectory and of the ground truth, turn by turn: a turn the
ground truth acts in must see a call; after it the backends' state must equal the ground truth's, and
every result the ground truth's calls returned in it must be among the results the trajectory's calls
returned so far. BFCL's own checker evaluates call strings built from model output, so vx never runs
it on user data; a test (tests/families/tools) runs it on the shared files only and holds the two equal.

**Splits**: by task (:func:`vx.families.split.split_by_task`), the stratified dev draw over BFCL's
failure classes (:data:`DRAW_STRATA`: 5 failures dealt over them + 5 passes), the dev tasks' other
attempts kept unlabeled as peers (``peers.jsonl``), locked = the next tasks until a third of the items.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import BuildError, DataError
from vx.families.build_report import BuildReport
from vx.families.family_files import write_jsonl, write_seed, write_splits
from vx.families.family_toml import OBJECTIVE, write_family_toml
from vx.families.split import LabelledItem, Splits, split_by_task
from vx.families.tools import backends
from vx.families.tools.replay import Replay, replay
from vx.families.tools.trajectory import Call, Trajectory, TrajectoryError, read_call, read_trajectory
from vx.inputs import read_json_lines

BUILDER_VERSION = 1
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param")
#: BFCL's failure classes, in the order the stratified dev draw deals its five failure places.
DRAW_STRATA = ("instance_state_mismatch", "execution_response_mismatch", "empty_turn_model_response")
#: Failure classes the root alone decides (never drawn for dev).
ROOT_CLASSES = ("inference_error", "force_terminated")
#: Leaves an expression holds at no cost (the objective's ``op_floor``): the seed's seven detectors, each of its
#: own failure class. On the train split's labels their union's balanced accuracy is 0.81, above every subset
#: evolution chose (0.78-0.79): a size cost would trade recall for fewer leaves.
OP_FLOOR = 7
#: The user message BFCL sends at a turn where held-out functions are offered again.
HELD_OUT_PROMPT = "I have updated some more functions you can choose from. What about now?"

Progress = Callable[[str, "int | None", int], None]


def _no_progress(stage: str, total: int | None, advance: int) -> None:
    return None


# --------------------------------------------------------------------------- reading


def read_docs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The function docs per backend class, from ``func_docs/<module>.json`` (one doc per line)."""
    docs: dict[str, list[dict[str, Any]]] = {}
    for cls_name, module in backends.CLASSES.items():
        path = folder / f"{module}.json"
        if not path.is_file():
            raise DataError(f"{path}: missing (the function docs of {cls_name}; expected BFCL's func_docs folder)")
        docs[cls_name] = [r.value for r in read_json_lines(path, "function docs", objects=True, error=DataError)]
    return docs


def read_records(folder: Path, categories: Sequence[str] = CATEGORIES) -> list[dict[str, Any]]:
    """Every trajectory record of the shared files, in file order."""
    out: list[dict[str, Any]] = []
    for cat in categories:
        path = folder / f"{cat}.jsonl.gz"
        if not path.is_file():
            raise DataError(f"{path}: missing (expected the shared multi-turn files, ../shared/data/tools/multi)")
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except ValueError as exc:
                    raise DataError(f"{path}:{n}: not JSON ({exc})") from exc
                missing = [k for k in ("id", "task_id", "question", "involved_classes", "output") if k not in rec]
                if missing:
                    raise DataError(f"{path}:{n}: a trajectory record without {', '.join(missing)}")
                out.append(rec)
    return out


def offered(task: Mapping[str, Any], turn: int) -> set[str]:
    """The names of the functions offered at ``turn`` (held-out ones from their turn on)."""
    names = {str(d.get("name")) for d in task.get("functions") or () if isinstance(d, Mapping)}
    for at, held in (task.get("held_out") or {}).items():
        if turn < int(at):
            names -= set(held)
    return names


def task_record(rec: Mapping[str, Any], docs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """A task as the family stores it (module docstring), from a trajectory record."""
    classes = list(rec["involved_classes"])
    functions = [dict(d) for c in classes for d in docs.get(c, ())]
    held = {str(k): list(v) for k, v in (rec.get("missed_function") or {}).items()}
    return {
        "id": rec["task_id"],
        "category": rec.get("category") or rec["task_id"].rsplit("_", 1)[0],
        "turns": rec["question"],
        "involved_classes": classes,
        "initial_config": rec.get("initial_config") or {},
        "functions": functions,
        "held_out": held,
    }


# --------------------------------------------------------------------------- the ground truth


def reference_call(text: str, classes: Sequence[str]) -> Call:
    """One ground-truth call string (``cd(folder='x')``, ``mean([1, 2])``) as a :class:`Call`, read with
    :mod:`ast` (never evaluated): literal arguments only, positional ones named from the backend
    method's signature."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise DataError(f"ground-truth call {text!r} does not parse: {exc}") from exc
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise DataError(f"ground-truth call {text!r} is not a plain function call")
    name = node.func.id
    table = backends.dispatch_table(classes)
    try:
        params = backends.signatures(table[name])[name] if name in table else ()
        args: dict[str, Any] = {}
        for i, a in enumerate(node.args):
            if i >= len(params):
                raise DataError(f"ground-truth call {text!r} passes more arguments than {name} takes")
            args[params[i]] = ast.literal_eval(a)
        for kw in node.keywords:
            if kw.arg is None:
                raise DataError(f"ground-truth call {text!r} uses **")
            args[kw.arg] = ast.literal_eval(kw.value)
    except ValueError as exc:
        raise DataError(f"ground-truth call {text!r} has a non-literal argument: {exc}") from exc
    return read_call(name, args)


def reference_output(calls: Sequence[Sequence[str]], classes: Sequence[str]) -> list[list[list[dict[str, str]]]]:
    """Ground-truth call strings per turn in the output's shape (one call per step, JSON arguments)."""
    out = []
    for turn in calls:
        steps = []
        for text in turn:
            c = reference_call(text, classes)
            steps.append([{c.name: json.dumps(c.args, ensure_ascii=False)}])
        out.append(steps)
    return out


# --------------------------------------------------------------------------- labels


@attrs.frozen
class Truth:
    """A trajectory's label by BFCL's multi-turn rule, replayed by vx."""

    label: str  # "pass" | "fail"
    error_type: str = ""  # BFCL's failure class ("" for a pass)
    turn: int = -1  # the turn that failed
    detail: str = ""

    def meta(self) -> dict[str, Any]:
        return {
            "truth": "bfcl-multi-turn (vx replay)",
            **({"error_type": self.error_type, "failed_turn": self.turn} if self.error_type else {}),
        }


def _counts_within(need: Sequence[str], have: Sequence[str]) -> list[str]:
    """The entries of ``need`` (a multiset) missing from ``have``."""
    pool = Counter(have)
    missing = []
    for x in need:
        if pool[x]:
            pool[x] -= 1
        else:
            missing.append(x)
    return missing


def label_trajectory(task: Mapping[str, Any], output: Any, reference: Sequence[Sequence[Any]]) -> Truth:
    """BFCL's multi-turn verdict on ``output`` (module docstring), from vx's replays of it and of the
    ground truth ``reference`` (per turn, ground-truth call strings or :class:`Call` objects)."""
    try:
        traj = read_trajectory(output)
    except TrajectoryError as exc:
        return Truth("fail", "inference_error", -1, str(exc))
    if len(traj.turns) != len(reference):
        return Truth(
            "fail", "force_terminated", -1, f"{len(traj.turns)} turns of output for {len(reference)} user turns"
        )
    classes = list(task.get("involved_classes") or ())
    ref_calls = [[c if isinstance(c, Call) else reference_call(str(c), classes) for c in turn] for turn in reference]
    mine = replay(task, traj)
    gt = replay(task, Trajectory(tuple(tuple((c,) for c in turn) for turn in ref_calls)))
    return compare_replays(traj, mine, gt, [len(t) > 0 for t in ref_calls])


def compare_replays(traj: Trajectory, mine: Replay, gt: Replay, acts: Sequence[bool]) -> Truth:
    """BFCL's turn-by-turn comparison of a trajectory's replay with the ground truth's (``acts``: whether
    the ground truth calls anything in each turn)."""
    for t, act in enumerate(acts):
        if not act:
            continue
        steps = [s for s in traj.turns[t] if s and not any(c.drops_step for c in s)]
        if not steps:
            return Truth("fail", "empty_turn_model_response", t, f"no call in turn {t + 1}")
        if mine.states[t] != gt.states[t]:
            diff = sorted(k for k in (gt.states[t] or {}) if (mine.states[t] or {}).get(k) != (gt.states[t] or {})[k])
            return Truth("fail", "instance_state_mismatch", t, f"turn {t + 1}: the state of {', '.join(diff)} differs")
        have = [c.result for c in mine.calls if c.turn <= t and c.outcome in ("ok", "error", "refused")]
        need = [c.result for c in gt.turn(t) if c.outcome in ("ok", "error")]
        missing = _counts_within(need, have)
        if missing:
            return Truth("fail", "execution_response_mismatch", t, f"turn {t + 1}: never returned {missing[0][:120]!r}")
    return Truth("pass")


# --------------------------------------------------------------------------- the build


@attrs.frozen
class TeacherLabel:
    """The dev draw's label (the interface :func:`split_by_task` reads): BFCL's label, by failure class."""

    label: str
    agreement: float = 0.0
    evidence: str = ""

    def meta(self) -> dict[str, Any]:
        return {"teacher": "bfcl-label", **({"teacher_evidence": self.evidence} if self.evidence else {})}


SEED_EXPRESSION = """; family: bfcl-multi
; The hand-written seed: a trajectory that goes silent where the user asked for something, leaves a call
; that could not run unanswered, calls a function it was not offered, acts on a value it guessed, reaches
; states the other attempts' plurality does not, is never shown what nearly all of them were, or fails
; the task's evaluator-first state checks. Every detector the pack has, chosen on the train split's labels.
(any
  silent_turn
  unhandled_error
  unoffered_call
  guessed_value
  state_disagrees_with_peers
  missing_shown_result
  fails_state_checks)
"""


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _task_order(tid: str) -> tuple[str, int]:
    head, _, num = tid.rpartition("_")
    return (head, int(num)) if num.isdigit() else (tid, 0)


def build_multi(
    data_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    n_locked: int | None = None,
    n_dev_fail: int = 5,
    n_dev_pass: int = 5,
    seed_expr: str | os.PathLike[str] | None = None,
    progress: Progress = _no_progress,
    relabel: bool | None = None,
) -> BuildReport:
    """Build the multi-turn family into ``out_dir`` from the shared files in ``data_dir`` (module docstring).

    Labels are BFCL's (the file's ``label``); with the backends installed (``relabel`` None: when they
    are; True: required) every trajectory is also relabelled by :func:`label_trajectory` and the agreement
    is reported (``counts["relabel"]``). ``n_locked`` defaults to a third of the trajectories."""
    root = Path(data_dir)
    if (root / "multi").is_dir() and not (root / "func_docs").is_dir():
        root = root / "multi"
    docs = read_docs(root / "func_docs")
    records = read_records(root)
    why = backends.missing()
    if relabel and why:
        raise BuildError(f"relabelling needs BFCL's backends: {why}")
    relabel = why is None if relabel is None else relabel
    tasks, references, items, agree, disagreements = _labelled_items(records, docs, relabel, progress)
    for it in items:  # failures the root decides are not drawn for dev
        if it.truth == "fail" and it.teacher.evidence == "":
            it.teacher = TeacherLabel("unsure", 1.0, "")
    n_locked = n_locked if n_locked is not None else max(1, len(items) // 3)
    splits = split_by_task(
        items,
        seed=seed,
        teacher=lambda it: it.teacher,
        n_dev_fail=n_dev_fail,
        n_dev_pass=n_dev_pass,
        n_locked=n_locked,
        dev_draw="stratified",
        strata=DRAW_STRATA,
    )
    used = sorted(set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"]), key=_task_order)
    provenance: dict[str, Any] = {
        "builder": f"vx.families.tools.data.multi.build_multi v{BUILDER_VERSION}",
        "data_dir": os.fspath(root.resolve()),
        "files": {
            f"{c}.jsonl.gz": _sha256(root / f"{c}.jsonl.gz") for c in CATEGORIES if (root / f"{c}.jsonl.gz").is_file()
        },
        "seed": seed,
        "dev_draw": "stratified",
        "labels": {
            "locked": "BFCL's multi-turn checker (the file's label)",
            "dev": "the same label; the dev failures dealt over BFCL's failure classes",
        },
        "split": "disjoint by task; the other attempts of the dev tasks are unlabeled peers (peers.jsonl)",
        "backends": backends.version() if why is None else "absent",
        "counts": splits.counts(),
    }
    if relabel:
        provenance["relabel"] = {"agree": agree["agree"], "items": len(items)}
    notes = write_family(
        Path(out_dir),
        tasks=[tasks[t] for t in used],
        splits=splits,
        references=references,
        provenance=provenance,
        seed_expr=seed_expr,
    )
    if not relabel:
        reason = why or "not asked for"
        notes.append(f"labels not re-derived ({reason}); the file's BFCL labels are used as they are")
    else:
        notes.append(
            f"labels re-derived by replaying every trajectory and its ground truth on BFCL's backends (BFCL's "
            f"rule): {agree['agree']} of {len(items)} agree with the files' BFCL labels"
        )
    counts = splits.counts(with_hidden_labels=True)
    if relabel:
        counts["relabel"] = {"agree": agree["agree"], "items": len(items), "disagreements": disagreements[:20]}
    return BuildReport(Path(out_dir), counts, provenance, notes, truth=splits.truth())


def _labelled_items(
    records: Sequence[Mapping[str, Any]], docs: Mapping[str, Any], relabel: bool, progress: Progress
) -> tuple[
    dict[str, dict[str, Any]],
    dict[str, list[list[list[dict[str, str]]]]],
    list[LabelledItem],
    Counter[str],
    list[dict[str, Any]],
]:
    """Every trajectory as an item labelled by BFCL (its failure class the dev draw's stratum), with its task
    and the task's reference; with `relabel` each is also labelled by replay, and the agreement counted
    (the disagreements listed)."""
    tasks: dict[str, dict[str, Any]] = {}
    references: dict[str, list[list[list[dict[str, str]]]]] = {}
    items: list[LabelledItem] = []
    agree: Counter[str] = Counter()
    disagreements: list[dict[str, Any]] = []
    progress("multi-turn trajectories", len(records), 0)
    gt_replays: dict[str, tuple[Trajectory, Replay, list[bool]]] = {}
    for rec in records:
        tid = rec["task_id"]
        if tid not in tasks:
            tasks[tid] = task_record(rec, docs)
            references[tid] = reference_output(rec.get("ground_truth") or [], rec["involved_classes"])
        label = "pass" if rec.get("label") else "fail"
        error_type = str(rec.get("error_type") or "").removeprefix("multi_turn:")
        meta: dict[str, Any] = {"run": rec.get("run"), "model": rec.get("model"), "category": tasks[tid]["category"]}
        if label == "fail":
            meta["error_type"] = error_type
        detail: dict[str, Any] = {"label_source": rec.get("label_source", "")}
        if relabel:
            mine = _relabel(tasks[tid], rec["output"], references[tid], gt_replays)
            same = mine.label == label
            agree["agree" if same else "differ"] += 1
            if not same:
                disagreements.append({"id": rec["id"], "bfcl": label, "vx": mine.label, "detail": mine.detail})
        it = LabelledItem(id=rec["id"], task=tid, output=rec["output"], meta=meta)
        it.truth, it.truth_detail = label, detail
        it.teacher = TeacherLabel(label, 0.0, error_type if error_type in DRAW_STRATA else "")
        items.append(it)
        progress("multi-turn trajectories", None, 1)
    return tasks, references, items, agree, disagreements


def _relabel(
    task: Mapping[str, Any],
    output: Any,
    reference: Sequence[Sequence[Sequence[Mapping[str, str]]]],
    cache: dict[str, tuple[Trajectory, Replay, list[bool]]],
) -> Truth:
    """:func:`label_trajectory` with the ground truth's replay made once per task."""
    try:
        traj = read_trajectory(output)
    except TrajectoryError as exc:
        return Truth("fail", "inference_error", -1, str(exc))
    if len(traj.turns) != len(reference):
        return Truth("fail", "force_terminated", -1, f"{len(traj.turns)} turns for {len(reference)}")
    tid = str(task["id"])
    if tid not in cache:
        gt_traj = read_trajectory([[list(step) for step in turn] for turn in reference])
        cache[tid] = (gt_traj, replay(task, gt_traj), [len(t) > 0 for t in reference])
    _, gt, acts = cache[tid]
    return compare_replays(traj, replay(task, traj), gt, acts)


def write_family(
    out: Path,
    *,
    tasks: Sequence[Mapping[str, Any]],
    splits: Splits,
    references: Mapping[str, Any],
    provenance: Mapping[str, Any],
    seed_expr: str | os.PathLike[str] | None = None,
    name: str = "bfcl-multi",
) -> list[str]:
    """The family files (format: docs/ARCHITECTURE.md); returns notes for the user."""
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    write_jsonl(out / "tasks.jsonl", list(tasks))
    write_splits(out, splits, references=references, dev_truth=True, locked_detail=False)
    write_seed(out, seed_expr, SEED_EXPRESSION.replace("; family: bfcl-multi", f"; family: {name}"))
    counts = provenance.get("counts")
    write_family_toml(
        out / "family.toml",
        name=name,
        description="BFCL multi-turn tasks on stateful backends with real agents' trajectories (seven attempts per "
        "task); labels by BFCL's multi-turn checker",
        packs=["tools-multi"],
        root="reads_trajectory",
        peers=bool(splits.dev_peers),
        objective={**OBJECTIVE, "op_floor": OP_FLOOR},
        provenance={
            **provenance,
            **(
                {"counts": {k: v for k, v in counts.items() if not k.endswith("_truth")}}
                if isinstance(counts, Mapping)
                else {}
            ),
        },
    )
    return notes


__all__ = [
    "BuildReport",
    "CATEGORIES",
    "DRAW_STRATA",
    "Truth",
    "build_multi",
    "compare_replays",
    "label_trajectory",
    "offered",
    "read_docs",
    "read_records",
    "reference_call",
    "reference_output",
    "task_record",
]
