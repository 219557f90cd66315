"""The Inspect AI scorer in real Inspect evals on its built-in mock model (``mockllm``): the mock
answers two samples of HumanEval/0, one right and one wrong; the scores, their answers and the failure
capsules in their explanations come from the verifier. A multi-epoch eval with the vx group reducer
grades one sample's epochs together: a peer op that abstains in the per-epoch scores gives its
opinion there. (Most of each test's time is importing Inspect, paid once per session.)"""

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
    logs = eval(
        Task(dataset=samples, solver=generate(), scorer=vx_scorer(SEED)),
        model=model,
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=1,
    )
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


def _attempts() -> list[str]:
    """Four attempts at HumanEval/0: three right (written differently), one that passes the visible
    examples and is wrong elsewhere -- only the other attempts can tell."""
    task = json.loads((ROOT / "examples" / "humaneval" / "tasks.jsonl").read_text().splitlines()[0])
    good = task["reference"]
    return [
        good,
        good.replace("for idx, elem", "for idx,  elem"),
        good.replace("distance = ", "distance  = "),
        task["prompt"] + "    return len(numbers) > 4\n",
    ]


def test_a_multi_epoch_eval_grades_the_epochs_together_so_peer_ops_vote(tmp_path):
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import CORRECT
    from inspect_ai.solver import generate

    from vx.integrations.inspect import vx_epochs, vx_scorer
    from vx.verifier import Verifier

    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example)\n")
    v = Verifier.load(expr, ROOT / "examples" / "humaneval")
    attempts = _attempts()
    model = get_model("mockllm/model", custom_outputs=[_reply("```python\n" + a + "```") for a in attempts])
    task = Task(
        dataset=[Sample(input="solve", id="he0", metadata={"task": "HumanEval/0"})],
        solver=generate(),
        scorer=vx_scorer(v),
        epochs=vx_epochs(v, len(attempts)),
    )
    log = eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none", max_samples=1)[0]
    assert log.status == "success", log.error
    # each epoch alone: the peer op abstains, and the wrong attempt passes the visible examples
    per_epoch = [next(iter(s.scores.values())) for s in log.samples]
    assert [s.value for s in per_epoch] == [CORRECT] * 4
    peer_nodes = [n for s in per_epoch for n in s.metadata["trace"]["children"] if n["text"] == "disagrees_with_peers"]
    assert [n["verdict"] for n in peer_nodes] == ["abstain"] * 4
    assert all(s.metadata["vx_graded"]["task"] == "HumanEval/0" for s in per_epoch)
    # the epochs together: the peer op fails the odd one out, and Inspect logs the reduced score
    reduced = log.reductions[0].samples[0]
    assert log.reductions[0].reducer == "vx_group"
    wrong = [i for i, s in enumerate(log.samples) if "len(numbers) > 4" in s.output.completion]
    verdicts = reduced.answer.split(",")
    assert sorted(verdicts) == ["fail", "pass", "pass", "pass"] and verdicts.index("fail") == wrong[0]
    assert reduced.value == pytest.approx(0.75) and reduced.metadata["peers_opined"] is True
    assert reduced.metadata["epochs"][wrong[0]]["drawbacks"][0]["op"] == "disagrees_with_peers"
    assert log.results.scores[0].metrics["accuracy"].value == pytest.approx(0.75)
    ranks = [r["rank"] for r in reduced.metadata["ranking"]]
    assert sorted(ranks) == [1, 2, 3, 4] and ranks[wrong[0]] == 4  # the odd one out ranks last


def test_keep_best_scores_the_epoch_the_verifier_ranks_first(tmp_path):
    """Best of n over the epochs: the reduced score is the value of the epoch ranked first, and the
    metadata names it; a bad `keep` is an error when the reducer is built."""
    from inspect_ai.scorer import CORRECT, Score

    from vx.integrations.common import OptionError
    from vx.integrations.inspect import GRADED_KEY, vx_group_reducer
    from vx.verifier import Verifier

    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example)\n")
    v = Verifier.load(expr, ROOT / "examples" / "humaneval")
    attempts = _attempts()
    wrong = attempts[3]
    order = [wrong, *attempts[:3]]  # the wrong attempt first: position must not decide
    scores = [Score(value=CORRECT, metadata={GRADED_KEY: {"task": "HumanEval/0", "output": a}}) for a in order]
    best = vx_group_reducer(v, keep="best")(scores)
    assert best.value == 1.0 and best.answer == "pass" and best.metadata["best_epoch"] in (2, 3, 4)
    assert best.metadata["best_output"] != wrong and best.explanation.startswith("kept epoch ")
    assert vx_group_reducer(v)(scores).value == pytest.approx(0.75)
    with pytest.raises(OptionError, match="keep must be 'all', 'best'"):
        vx_group_reducer(v, keep="first")


def test_abstention_is_not_paid_as_a_pass(tmp_path):
    """A verifier of a peer op alone abstains on a single output: NOANSWER by default, which Inspect's
    metrics count as 0; CORRECT only when asked for."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import CORRECT, NOANSWER
    from inspect_ai.solver import generate

    from vx.integrations.inspect import vx_scorer
    from vx.verifier import Verifier

    expr = tmp_path / "peers.vx"
    expr.write_text("disagrees_with_peers\n")
    v = Verifier.load(expr, ROOT / "examples" / "humaneval")
    good = _attempts()[0]
    values = {}
    for name, scorer in (("default", vx_scorer(v)), ("as pass", vx_scorer(v, abstain=CORRECT))):
        model = get_model("mockllm/model", custom_outputs=[_reply(good)])
        log = eval(
            Task(
                dataset=[Sample(input="solve", id="s", metadata={"task": "HumanEval/0"})],
                solver=generate(),
                scorer=scorer,
            ),
            model=model,
            log_dir=str(tmp_path / "logs"),
            display="none",
        )[0]
        score = next(iter(log.samples[0].scores.values()))
        assert score.answer == "abstain"
        values[name] = (score.value, log.results.scores[0].metrics["accuracy"].value)
    assert values == {"default": (NOANSWER, 0.0), "as pass": (CORRECT, 1.0)}


def test_a_sample_without_a_task_is_a_clear_error():
    from vx.integrations.common import IntegrationError, resolve_task
    from vx.verifier import Verifier

    v = Verifier.load(SEED)
    assert resolve_task(v, "HumanEval/0", where="x")["entry_point"] == "has_close_elements"
    assert resolve_task(v, {"id": "mine", "entry_point": "f"}, where="x")["id"] == "mine"
    with pytest.raises(IntegrationError, match="sample 's1': 'HumanEval/999' is not a task"):
        resolve_task(v, "HumanEval/999", where="sample 's1'")
