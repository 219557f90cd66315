"""The Inspect AI scorer in a real Inspect eval on its built-in mock model (``mockllm``): the mock
answers two samples of HumanEval/0, one right and one wrong; the scores, their answers and the failure
capsules in their explanations come from the verifier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "humaneval" / "seed.vx"


def _reply(text: str):
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # the mock would count with tiktoken
    return out


def test_a_real_inspect_eval_scored_by_a_vx_verifier(tmp_path):
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.solver import generate

    from vx.integrations.inspect import vx_scorer

    task = json.loads((ROOT / "examples" / "humaneval" / "tasks.jsonl").read_text().splitlines()[0])
    right = "Here it is:\n```python\n" + task["reference"] + "\n```\n"
    wrong = task["reference"].replace("distance < threshold", "distance > threshold")
    model = get_model("mockllm/model", custom_outputs=[_reply(right), _reply(wrong)])
    samples = [Sample(input=task["prompt"], id=name, metadata={"task": "HumanEval/0"}) for name in ("right", "wrong")]
    logs = eval(Task(dataset=samples, solver=generate(), scorer=vx_scorer(SEED)), model=model,
                log_dir=str(tmp_path / "logs"), display="none", max_samples=1)
    log = logs[0]
    assert log.status == "success", log.error
    scores = {s.id: next(iter(s.scores.values())) for s in log.samples}
    assert scores["right"].value == "C" and scores["right"].answer == "pass"
    assert scores["wrong"].value == "I" and scores["wrong"].answer == "fail"
    capsule = scores["wrong"].explanation
    assert capsule.startswith("vx verdict: FAIL") and "- fails_visible_example: has_close_elements(" in capsule
    assert "(any …) DRAWBACK" in capsule  # the explained expression, node by node
    assert scores["wrong"].metadata["drawbacks"][0]["op"] == "fails_visible_example"
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.5)


def test_a_sample_without_a_task_is_a_clear_error():
    from vx.integrations.common import IntegrationError, resolve_task
    from vx.verifier import Verifier

    v = Verifier.load(SEED)
    assert resolve_task(v, "HumanEval/0", where="x")["entry_point"] == "has_close_elements"
    assert resolve_task(v, {"id": "mine", "entry_point": "f"}, where="x")["id"] == "mine"
    with pytest.raises(IntegrationError, match="sample 's1': 'HumanEval/999' is not a task"):
        resolve_task(v, "HumanEval/999", where="sample 's1'")
