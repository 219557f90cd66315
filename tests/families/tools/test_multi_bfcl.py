"""vx's replay and labels held to BFCL's own executor and checker, on the shared files only.

BFCL's executor builds call strings from model output and evaluates them; here it runs only on the
shared trajectories' ``output_decoded`` and the ground truth, each run under a model name of its own
(BFCL caches backend instances in module globals keyed by it: a reused name resumes an old state).

One known difference, which the comparison undoes: BFCL's executor finds function names in the whole
call string with a regular expression and rewrites them in place, inside string arguments too -- so it
drops the spaces between any word and a following "(" ("records (booking" becomes "records(booking").
vx passes arguments as they were given; the test applies BFCL's rewrite to the string arguments before
comparing, and counts the trajectories it changes.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from conftest import shared_data

from vx.families.tools import backends
from vx.families.tools.data import multi
from vx.families.tools.replay import replay
from vx.families.tools.trajectory import Call, Trajectory, read_trajectory

pytestmark = [
    pytest.mark.data,
    pytest.mark.slow,
    pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed"),
]

_WORD_BEFORE_PAREN = re.compile(r"\b([a-zA-Z_]\w*)\s+(?=\()")


def bfcl_rewrite(value: Any) -> Any:
    """BFCL's in-place rewrite of a call string, as it lands in string arguments (spaces before '(' dropped)."""
    if isinstance(value, str):
        return _WORD_BEFORE_PAREN.sub(r"\1", value)
    if isinstance(value, list):
        return [bfcl_rewrite(v) for v in value]
    if isinstance(value, dict):
        return {k: bfcl_rewrite(v) for k, v in value.items()}
    return value


def as_bfcl_sees_it(traj: Trajectory) -> Trajectory:
    return Trajectory(
        tuple(
            tuple(tuple(Call(c.name, bfcl_rewrite(c.args), c.problem, c.drops_step) for c in step) for step in turn)
            for turn in traj.turns
        )
    )


_names = itertools.count()


def bfcl_replay(task: dict[str, Any], turns: list[list[list[str]]]) -> tuple[list[Any], list[list[str]]]:
    """BFCL's executor on call strings, per turn: the states (vx's plain form) and the results."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils as U

    from vx.families.tools import child

    name = f"vxcheck{next(_names)}"
    states, results = [], []
    try:
        for turn in turns:
            res: list[str] = []
            for step in turn or [[]]:
                out, instances = U.execute_multi_turn_func_call(
                    step, task["initial_config"], task["involved_classes"], name, task["task_id"], is_evaL_run=True
                )
                res.extend(out)
            states.append(
                {
                    c: {k: child.plain(v) for k, v in vars(i).items() if not k.startswith("_")}
                    for c, i in instances.items()
                }
            )
            results.append(res)
    finally:
        for key in [k for k in vars(U) if k.startswith(name)]:
            del vars(U)[key]
    return states, results


def test_vx_replay_reaches_bfcls_states_and_results_and_its_labels():
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    root = shared_data("tools", "multi")
    records = multi.read_records(root)
    seen: set[str] = set()
    compared = rewritten = 0
    mismatches: list[str] = []
    bfcl_labels = vx_labels = 0
    for rec in records:
        classes = rec["involved_classes"]
        runs = []
        if rec["task_id"] not in seen:
            seen.add(rec["task_id"])
            gt = [[multi.reference_call(c, classes) for c in turn] for turn in rec["ground_truth"]]
            runs.append(
                (
                    [[[c] for c in turn] for turn in rec["ground_truth"]],
                    Trajectory(tuple(tuple((c,) for c in t) for t in gt)),
                )
            )
        if not isinstance(rec["output"], str):
            runs.append((rec["output_decoded"], read_trajectory(rec["output"])))
        for decoded, traj in runs:
            compared += 1
            b_states, b_results = bfcl_replay(rec, decoded)
            seen_as = as_bfcl_sees_it(traj)
            rewritten += seen_as != traj
            mine = replay(rec, seen_as)
            m_results = [
                [(c.outcome, c.result) for c in mine.turn(t) if c.outcome in ("ok", "error", "refused")]
                for t in range(len(traj.turns))
            ]
            # a call vx refuses (a name no backend has, arguments that cannot be passed) is one BFCL's executor
            # fails with an exception of its own wording: the results agree when BFCL's is such an error
            same_results = all(
                len(b) == len(m)
                and all(
                    x == y if outcome != "refused" else x.startswith("Error during execution")
                    for x, (outcome, y) in zip(b, m, strict=True)
                )
                for b, m in zip(b_results, m_results, strict=True)
            )
            if list(mine.states) != b_states or not same_results:
                mismatches.append(rec["id"])
        # labels: BFCL's own checker (fresh names) beside vx's
        expected = "pass" if rec["label"] else "fail"
        if isinstance(rec["output"], list) and len(rec["output"]) == len(rec["ground_truth"]):
            entry = {**rec, "id": rec["task_id"]}
            verdict = multi_turn_checker(
                [[s for s in turn if s] for turn in rec["output_decoded"]],
                rec["ground_truth"],
                entry,
                rec["category"],
                f"vxlabel{next(_names)}",
            )
            bfcl_labels += ("pass" if verdict["valid"] else "fail") == expected
        else:
            bfcl_labels += expected == "fail"
        task = multi.task_record(rec, {c: [] for c in backends.CLASSES})
        task["task_id"] = rec["task_id"]
        vx_labels += multi.label_trajectory(task, rec["output"], rec["ground_truth"]).label == expected
    print(
        json.dumps(
            {"compared": compared, "rewritten_by_bfcl": rewritten, "bfcl_labels": bfcl_labels, "labels": vx_labels}
        )
    )
    assert mismatches == [], f"{len(mismatches)} of {compared} replays differ from BFCL's: {mismatches[:5]}"
    assert compared == 2100 - sum(isinstance(r["output"], str) for r in records) + len(seen)
    assert 0 < rewritten <= compared // 20  # BFCL's rewrite touches the free text of a few trajectories only
    assert bfcl_labels == len(records) == 2100
    assert vx_labels == len(records)
