"""The tools family through the trainers' request shapes: the bundled `examples/tools` answers (text ones: a
trainer's completion is text) grouped by question, posted to a real `vx serve` (127.0.0.1, a free port) as
vx's own /grade, OpenRLHF's queries and verl's batch; every reward equals `vx grade`'s verdict for the same
answer, 0 differing -- a fenced answer included, which the tools family grades whole (fence and all)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .test_serve import Server

pytest.importorskip("prometheus_client")
httpx = pytest.importorskip("httpx")

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "examples" / "tools"
#: the docs checks and a peer op (a question's answers are each other's peers inside a group)
EXPR = "(any misformatted unknown_function missing_required unknown_parameter wrong_type disagrees_with_peers)\n"


def _groups() -> list[tuple[str, list[str]]]:
    """The text answers of the train and dev splits, grouped by question, in file order."""
    by_task: dict[str, list[str]] = {}
    for split in ("train", "dev"):
        for line in (TOOLS / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if isinstance(row["output"], str):
                by_task.setdefault(row["task"], []).append(row["output"])
    return list(by_task.items())


def _prompt(task: dict) -> str:
    """The question as a chat template renders it (the prompt OpenRLHF sends before the response)."""
    turns = (
        task["question"] if isinstance(task["question"], list) else [[{"role": "user", "content": task["question"]}]]
    )
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for turn in turns for m in turn)
    return text + "<|im_start|>assistant\n"


def _graded_by_vx_grade(
    tmp_path: Path,
) -> tuple[Path, Any, list[tuple[str, list[str]]], list[tuple[str, str]], list[str]]:
    """The verifier's file and the verifier, the groups and their answers in order, and `vx grade`'s final
    verdict of each answer (the answers written as a samples file and graded as `vx grade` grades it)."""
    from vx.grading import grade_samples, open_tasks
    from vx.verifier import Verifier

    expr = tmp_path / "tools.vx"
    expr.write_text(EXPR, encoding="utf-8")
    verifier = Verifier.load(expr, TOOLS)
    groups = _groups()
    flat = [(t, o) for t, os_ in groups for o in os_]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "solution": o}) + "\n" for t, o in flat), encoding="utf-8")
    graded = grade_samples(verifier, open_tasks(str(TOOLS / "tasks.jsonl")), [samples], jobs=1, cache=None)
    return expr, verifier, groups, flat, [f.value for f in graded.evaluation.grading.finals]


def test_tools_rewards_through_every_request_shape_equal_vx_grade_s_verdicts(tmp_path):
    from vx.reward.grader import DEFAULT_REWARDS

    expr, verifier, groups, flat, verdicts = _graded_by_vx_grade(tmp_path)
    expected = [DEFAULT_REWARDS[v] for v in verdicts]

    got: dict[str, list[float]] = {}
    got_verdicts: dict[str, list[str]] = {}
    server = Server(str(expr), "--family", str(TOOLS), "-j", "1")
    try:
        with httpx.Client(base_url=server.url, timeout=300) as client:
            answers = [client.post("/grade", json={"task_id": t, "solutions": os_}).json() for t, os_ in groups]
            got_verdicts["grade"] = [r["verdict"] for a in answers for r in a["results"]]
            got["grade"] = [DEFAULT_REWARDS[v] for v in got_verdicts["grade"]]
            rewards, logged = [], []
            for t, os_ in groups:
                prompt = _prompt(verifier.tasks[t])
                body = {"query": [prompt + o + "<|im_end|>" for o in os_], "prompts": [prompt] * len(os_)}
                answer = client.post("/openrlhf", json={**body, "labels": [t] * len(os_)}).json()
                rewards += answer["rewards"]
                logs = answer["extra_logs"]
                logged += [next(v for v in ("pass", "fail", "abstain") if logs[f"vx_{v}"][i]) for i in range(len(os_))]
            got["openrlhf"], got_verdicts["openrlhf"] = rewards, logged
            scores = []
            for t, os_ in groups:  # one batch per question, as verl's batch manager sends a prompt's group
                body = {
                    "data_sources": ["bfcl"] * len(os_),
                    "solution_strs": os_,
                    "ground_truths": [t] * len(os_),
                    "extra_infos": [{"index": k} for k in range(len(os_))],
                }
                scores += client.post("/verl", json=body).json()["scores"]
            got["verl"] = [s["score"] for s in scores]
            got_verdicts["verl"] = [next(v for v in ("pass", "fail", "abstain") if s[f"vx_{v}"]) for s in scores]
    finally:
        code, err = server.stop()
    assert code == 0 and "Traceback" not in err, err
    differing = {shape: sum(a != b for a, b in zip(values, expected)) for shape, values in got.items()}
    assert differing == dict.fromkeys(got, 0), differing
    assert all(vs == verdicts for vs in got_verdicts.values())
    assert all(len(values) == len(expected) for values in got.values())
    assert 0 < sum(expected) < len(expected)  # both verdicts occur: the check can fail
    fenced = [i for i, (_, o) in enumerate(flat) if o.lstrip().startswith("```")]
    assert fenced and any(verdicts[i] == "fail" for i in fenced)  # a fenced answer is graded whole


def test_tools_rewards_through_the_in_process_adapters_equal_vx_grade_s_verdicts(tmp_path):
    """OpenRLHF's reward function, verl's compute_score (batch form) and a `verifiers` group reward, each
    grading in this process: the tools family's reader (the whole reply), so a fenced answer fails as under
    `vx grade`. The `verifiers` reward runs each call in a fresh thread (asyncio.run): the grader's workers
    must outlive it, or a later group's completions abstain (their worker died)."""
    import asyncio

    from vx.integrations.openrlhf import VxRewardFunc
    from vx.integrations.verifiers import vx_group_reward
    from vx.integrations.verl import VxComputeScore
    from vx.reward.grader import DEFAULT_REWARDS

    _, verifier, groups, flat, verdicts = _graded_by_vx_grade(tmp_path)
    expected = [DEFAULT_REWARDS[v] for v in verdicts]

    got: dict[str, list[float]] = {}
    reward_func = VxRewardFunc(verifier, jobs=1)
    got["openrlhf"] = [
        x
        for t, os_ in groups
        for x in reward_func(queries=os_, prompts=[""] * len(os_), labels=[t] * len(os_))["rewards"]
    ]
    reward_func.close()
    compute_score = VxComputeScore(verifier, jobs=1)
    got["verl"] = [
        s["score"]
        for t, os_ in groups
        for s in compute_score(data_sources=["bfcl"] * len(os_), solution_strs=os_, ground_truths=[t] * len(os_))
    ]
    compute_score.close()
    group_reward = vx_group_reward(verifier, jobs=1)
    got["verifiers"] = [
        x
        for t, os_ in groups
        for x in asyncio.run(group_reward(prompts=[""] * len(os_), completions=os_, answers=[t] * len(os_)))
    ]
    group_reward.close()
    differing = {shape: sum(a != b for a, b in zip(values, expected)) for shape, values in got.items()}
    assert differing == dict.fromkeys(got, 0), differing
    assert all(len(values) == len(expected) for values in got.values())
    fenced = [i for i, (_, o) in enumerate(flat) if o.lstrip().startswith("```")]
    assert fenced and any(expected[i] == 0.0 for i in fenced)
