"""The bundled multi-turn example (``examples/tools-multi``): BFCL's own multi-turn tasks with trajectories
made by mutating their ground-truth calls -- no model's output.

Source: the ``bfcl-eval`` package's data files (Apache-2.0; ``bfcl_eval/data/BFCL_v4_multi_turn_*.json``, their
``possible_answer/`` and ``multi_turn_func_doc/``), the tasks in :data:`TASKS` (from the half of BFCL's
tasks the project's shared data holds). Per task, seven trajectories:

* ``reference`` -- the ground-truth calls, one per step (a turn the ground truth leaves empty: a text reply);
* ``one_step`` -- the same calls, each turn's in one step (passes: BFCL compares states and results);
* ``extra_read`` -- a read-only call of the ground truth repeated at its turn's start (passes likewise);
* ``silent`` -- the last turn that acts makes no call;
* ``wrong_value`` -- a string argument of a call that changes the state is altered;
* ``skipped_read`` -- a read-only call is left out (its result is never shown);
* ``garbled_name`` -- a call's name carries a chat template's residue (``cat<|channel|>commentary``), never
  retried.

Every trajectory is labelled by BFCL's multi-turn rule on vx's replay
(:func:`vx.families.tools.data.multi.label_trajectory`): a mutant that happens to still pass is labelled
pass. Build: ``python -m vx.families.tools.data.example_multi examples/tools-multi`` (needs bfcl-eval).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import BuildError
from vx.families.split import LabelledItem, split_by_task
from vx.families.tools import backends
from vx.families.tools.data import multi
from vx.families.tools.replay import replay
from vx.families.tools.trajectory import read_trajectory
from vx.inputs import read_json_lines

#: The example's tasks: ten of each category, from the shared half of BFCL's multi-turn tasks.
TASKS = (
    *(f"multi_turn_base_{n}" for n in (1, 2, 3, 4, 6, 7, 11, 12, 14, 16)),
    *(f"multi_turn_miss_func_{n}" for n in (1, 2, 7, 8, 9, 11, 13, 15, 20, 22)),
    *(f"multi_turn_miss_param_{n}" for n in (3, 4, 5, 7, 9, 12, 13, 15, 17, 21)),
)
KINDS = ("reference", "one_step", "extra_read", "silent", "wrong_value", "skipped_read", "garbled_name")
BUILDER_VERSION = 1
GARBLE = "<|channel|>commentary"


def _data_dir() -> Path:
    src = backends.require()  # .../bfcl_eval/eval_checker/multi_turn_eval/func_source_code
    data = src.parents[2] / "data"
    if not (data / "BFCL_v4_multi_turn_base.json").is_file():
        raise BuildError(f"bfcl-eval's data files are not under {data}: reinstall bfcl-eval")
    return data


def _json_lines(path: Path) -> dict[str, dict[str, Any]]:
    return {r.value["id"]: r.value for r in read_json_lines(path, "BFCL data file", objects=True, error=BuildError)}


def load_tasks(ids: Sequence[str] = TASKS) -> list[tuple[dict[str, Any], list[list[str]]]]:
    """BFCL's records of ``ids`` as (task, ground-truth call strings per turn)."""
    data = _data_dir()
    docs = {
        cls: [
            r.value
            for r in read_json_lines(
                data / "multi_turn_func_doc" / f"{mod}.json", "BFCL function docs", objects=True, error=BuildError
            )
        ]
        for cls, mod in backends.CLASSES.items()
    }
    out = []
    for cat in multi.CATEGORIES:
        questions = _json_lines(data / f"BFCL_v4_{cat}.json")
        answers = _json_lines(data / "possible_answer" / f"BFCL_v4_{cat}.json")
        for tid in ids:
            if tid.rsplit("_", 1)[0] != cat:
                continue
            rec = {**questions[tid], "task_id": tid, "category": cat}
            out.append((multi.task_record(rec, docs), answers[tid]["ground_truth"]))
    return out


def _step(call: Any) -> list[dict[str, str]]:
    return [{call.name: json.dumps(call.args, ensure_ascii=False)}]


def mutants(task: dict[str, Any], truth: list[list[str]]) -> dict[str, list[list[list[dict[str, str]]]]]:
    """The seven trajectories of a task (module docstring), as outputs."""
    classes = task["involved_classes"]
    ref = [[multi.reference_call(c, classes) for c in turn] for turn in truth]
    rep = replay(task, read_trajectory([[_step(c) for c in turn] for turn in ref]))
    changes = {(o.turn, o.step): o.changed for o in rep.calls}
    reads = [(t, s) for (t, s), changed in changes.items() if not changed]
    writes = [
        (t, s)
        for (t, s), changed in changes.items()
        if changed and any(isinstance(v, str) for v in (ref[t][s].args or {}).values())
    ]
    acting = [t for t, turn in enumerate(ref) if turn]

    def shaped(turns: list[list[Any]]) -> list[list[list[dict[str, str]]]]:
        return [[_step(c) for c in turn] or [[]] for turn in turns]

    out = {"reference": shaped(ref)}
    out["one_step"] = [[[x for c in turn for x in _step(c)]] if turn else [[]] for turn in ref]
    if reads:
        t, s = reads[0]
        extra = [list(turn) for turn in ref]
        extra[t].insert(0, ref[t][s])
        out["extra_read"] = shaped(extra)
    silent = [list(turn) for turn in ref]
    silent[acting[-1]] = []
    out["silent"] = shaped(silent)
    if writes:
        t, s = writes[-1]
        c = ref[t][s]
        args = c.args or {}  # `writes` holds calls with a string argument only
        key = next(k for k, v in args.items() if isinstance(v, str))
        wrong = [list(turn) for turn in ref]
        wrong[t][s] = attrs.evolve(c, args={**args, key: args[key] + "_old"})
        out["wrong_value"] = shaped(wrong)
    if reads:
        t, s = reads[-1]
        skipped = [list(turn) for turn in ref]
        del skipped[t][s]
        out["skipped_read"] = shaped(skipped)
    t = acting[0]
    garbled = shaped(ref)
    first = garbled[t][0][0]
    name = next(iter(first))
    garbled[t][0] = [{name + GARBLE: first[name]}]
    out["garbled_name"] = garbled
    return out


def build_example(out_dir: str | os.PathLike[str], *, seed: int = 0, ids: Sequence[str] = TASKS) -> multi.BuildReport:
    """Write the example family into ``out_dir`` (module docstring)."""
    tasks: dict[str, dict[str, Any]] = {}
    references: dict[str, Any] = {}
    items: list[LabelledItem] = []
    for task, truth in load_tasks(ids):
        tid = task["id"]
        tasks[tid] = task
        references[tid] = multi.reference_output(truth, task["involved_classes"])
        for kind, output in mutants(task, truth).items():
            t = multi.label_trajectory(task, output, truth)
            it = LabelledItem(id=f"{tid}#{kind}", task=tid, output=output, meta={"mutation": kind})
            it.truth = t.label
            if t.error_type:
                it.meta["error_type"] = t.error_type
            evidence = t.error_type if t.error_type in multi.DRAW_STRATA else ""
            it.teacher = multi.TeacherLabel(t.label if t.label == "pass" or evidence else "unsure", 0.0, evidence)
            items.append(it)
    splits = split_by_task(
        items,
        seed=seed,
        teacher=lambda it: it.teacher,
        n_locked=max(1, len(items) // 4),
        dev_draw="stratified",
        strata=multi.DRAW_STRATA,
    )
    used = [
        t for t in tasks if t in set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    ]
    provenance = {
        "builder": f"vx.families.tools.data.example_multi.build_example v{BUILDER_VERSION}",
        "source": "bfcl-eval's data files (Apache-2.0, ShishirPatil/gorilla berkeley-function-call-leaderboard): "
        "questions, initial states, function docs and ground-truth calls; trajectories are mutations of the "
        "ground truth, labelled by BFCL's multi-turn rule on vx's replay",
        "bfcl_eval_backends": backends.version(),
        "seed": seed,
        "mutations": list(KINDS),
        "split": "disjoint by task",
        "counts": splits.counts(),
    }
    notes = multi.write_family(
        Path(out_dir),
        tasks=[tasks[t] for t in used],
        splits=splits,
        references=references,
        provenance=provenance,
        name="tools-multi-example",
    )
    return multi.BuildReport(Path(out_dir), splits.counts(with_hidden_labels=True), provenance, notes, splits.truth())


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m vx.families.tools.data.example_multi OUT_DIR", file=sys.stderr)
        return 2
    report = build_example(args[0])
    print(json.dumps(report.counts, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
