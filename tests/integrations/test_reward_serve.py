"""The trainers' request shapes against a real `vx serve` (127.0.0.1, a free port): OpenRLHF's client posting one
completion per request (aiohttp, as ``SingleTurnAgentExecutor._fetch_rewards_via_http`` does) gathered into a
group; verl's compute_score through the server; and, on real samples (CodeT's CodeGen-16B completions of
HumanEval), every shape's rewards equal to `vx grade`'s verdicts for the same samples, 0 differing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from .test_serve import HUMANEVAL, Server, _group, _task

aiohttp = pytest.importorskip("aiohttp")
pytest.importorskip("prometheus_client")

ROOT = Path(__file__).resolve().parents[2]
CODET = ROOT.parent / "shared" / "data" / "samples" / "humaneval-codet"


def _peers_vx(tmp_path: Path) -> Path:
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example timeout crash)\n")
    return expr


async def _openrlhf_post(url: str, payload: dict) -> dict:
    # openrlhf/utils/agent.py: aiohttp.ClientSession(timeout=ClientTimeout(total=180)); session.post(url, json=data)
    timeout = aiohttp.ClientTimeout(total=180)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(url, json=payload) as response:
            response.raise_for_status()
            return await response.json()


def test_openrlhf_one_completion_per_request_gathered_into_a_group(tmp_path):
    server = Server(str(_peers_vx(tmp_path)), "--family", str(HUMANEVAL), "--gather", "4", "--gather-wait", "60")
    try:
        prompt = "<|im_start|>user\n" + _task()["prompt"] + "<|im_end|>\n<|im_start|>assistant\n"

        async def step() -> list[dict]:
            return await asyncio.gather(
                *(
                    _openrlhf_post(
                        f"{server.url}/openrlhf",
                        {"query": [prompt + f"```python\n{g}```<|im_end|>"], "prompts": [prompt], "labels": [label]},
                    )
                    for g, label in zip(_group(), ["HumanEval/0", "", "HumanEval/0", ""])
                )
            )

        answers = asyncio.run(step())
    finally:
        code, err = server.stop()
    # each request reads its own reward ("rewards": one per query); the odd one out is caught by its peers
    assert [a["rewards"] for a in answers] == [[1.0], [1.0], [1.0], [0.0]]
    assert answers[3]["extra_logs"]["vx_fail"] == [1.0] and answers[3]["scores"] == [0.0]
    assert code == 0 and "Traceback" not in err


def test_verl_compute_score_through_the_server(tmp_path):
    from vx.integrations.verl import VxComputeScore

    server = Server(str(_peers_vx(tmp_path)), "--family", str(HUMANEVAL))
    try:
        compute_score = VxComputeScore(server.url)
        scores = compute_score(
            data_sources=["HumanEval"] * 4,
            solution_strs=_group(),
            ground_truths=["HumanEval/0"] * 4,
            extra_infos=[{"index": 0}] * 4,
        )
        with pytest.raises(Exception, match="needs the task id"):
            compute_score(data_source="HumanEval", solution_str="x", ground_truth=None, extra_info={})
    finally:
        server.stop()
    assert [s["score"] for s in scores] == [1.0, 1.0, 1.0, 0.0]


@pytest.mark.data
@pytest.mark.slow
def test_every_shape_s_rewards_equal_vx_grade_s_verdicts_on_real_samples(tmp_path):
    """CodeT's samples, 12 tasks x 4 completions: `vx grade` (the samples of a task graded together) against
    vx serve's /grade, /openrlhf and /verl, verl's and verifiers' adapters in this process, and TRL's reward."""
    if not CODET.is_dir():
        pytest.skip(f"{CODET}: the shared CodeT samples are absent")
    import httpx

    from vx.families.code.data import codet
    from vx.grading import grade_samples, open_tasks
    from vx.integrations.trl import VxReward
    from vx.integrations.verifiers import vx_group_reward
    from vx.integrations.verl import VxComputeScore
    from vx.verifier import Verifier

    expr = _peers_vx(tmp_path)
    verifier = Verifier.load(expr, HUMANEVAL)
    prompts, _ = codet.read_task_prompts(CODET / "HumanEval_for_code_generation.jsonl")
    rows = codet.read_solutions(CODET / "codegen16B_code_solution.jsonl", prompts)
    groups = [(r.task_id, list(r.programs[:4])) for r in rows if r.task_id in verifier.tasks][:12]
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"task_id": t, "solution": o}) + "\n" for t, os_ in groups for o in os_))
    graded = grade_samples(verifier, open_tasks(str(HUMANEVAL / "tasks.jsonl")), [samples], jobs=2, cache=None)
    expected = [1.0 if f.value == "pass" else 0.0 for f in graded.evaluation.grading.finals]
    flat = [(t, o) for t, os_ in groups for o in os_]

    got: dict[str, list[float]] = {}
    server = Server(str(expr), "--family", str(HUMANEVAL), "-j", "2")
    try:
        with httpx.Client(base_url=server.url, timeout=600) as client:
            got["grade"] = [
                1.0 if r["verdict"] == "pass" else 0.0
                for t, os_ in groups
                for r in client.post("/grade", json={"task_id": t, "solutions": os_}).json()["results"]
            ]
            got["openrlhf"] = [
                x
                for t, os_ in groups
                for x in client.post(
                    "/openrlhf", json={"query": os_, "prompts": [""] * len(os_), "labels": [t] * len(os_)}
                ).json()["rewards"]
            ]
            body = {"solution_strs": [o for _, o in flat], "ground_truths": [t for t, _ in flat]}
            got["verl_http"] = [s["score"] for s in client.post("/verl", json=body).json()["scores"]]
    finally:
        server.stop()
    compute_score = VxComputeScore(verifier)
    got["verl"] = [
        s["score"] for s in compute_score(solution_strs=[o for _, o in flat], ground_truths=[t for t, _ in flat])
    ]
    compute_score.close()
    reward = vx_group_reward(verifier)
    got["verifiers"] = [
        x
        for t, os_ in groups
        for x in asyncio.run(reward(prompts=[""] * len(os_), completions=os_, answers=[t] * len(os_)))
    ]
    reward.close()
    got["trl"] = VxReward(verifier)(
        prompts=[""] * len(flat), completions=[o for _, o in flat], task_id=[t for t, _ in flat]
    )
    differing = {shape: sum(a != b for a, b in zip(values, expected)) for shape, values in got.items()}
    assert differing == dict.fromkeys(got, 0), differing
    assert all(len(values) == len(expected) for values in got.values())
    assert 0 < sum(expected) < len(expected)  # both verdicts occur: the check can fail
