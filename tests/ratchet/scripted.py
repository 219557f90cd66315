"""Test doubles for the ratchet tests: a scripted "model" behind the fake Anthropic transport.

`ScriptedModel` answers every role of a ratchet run from the request alone (so a killed and resumed run,
or a second process, sees exactly the same answers):

* **solver** (the `notes` fixture family, whose pack renders a task as "Write a short note that names the
  keyword 'apple', … (task r0)" and reads the note after "NOTE:") — the note it writes depends on the task
  and on which skills are in its prompt: tasks r0, r3, r6, … forget their keyword unless
  ``name-the-keyword`` is present; tasks r1, r4, r7, … shout unless ``use-lowercase`` is present;
  ``pad-with-detail`` makes every note too long (a harmful skill); ``be-polite`` changes nothing that
  matters (a useless one); ``write-in-capitals`` makes every note shout; ``add-detail`` makes every note too
  long except on the tasks the model was told to spare (`BlindModel`).
* **skill synthesizer** — reads the bank, the removed skills and the capsules' failed checks: first it
  writes ``name-the-keyword`` (+ the useless ``be-polite``) when a capsule names a keyword check, then the
  harmful ``pad-with-detail`` once, then ``use-lowercase`` when a capsule names a case check; with no
  capsule at all (a grader that passes everything) it learns from practice — the passed attempts it is
  shown — and copies their habit: when a "passed" note shouts, it writes ``write-in-capitals``.
* **final judge** — prefers the output the family's ground truth passes (TIE when both or neither do).
* the verifier loop's LLM roles (with a key, the co arms' engine gets the LLM composer and op synthesizer, as
  `vx evolve` does) — the composer proposes nothing and the op synthesizer writes no spec.

`BlindModel` is the same solver and judge with a synthesizer that ignores the grader: round after round it
writes the same lessons whatever failed (the audit scenario: a synthesizer that ignores its grader).
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ratchet"
sys.path.insert(0, str(FIXTURE))
from truth import grade as notes_truth  # noqa: E402  (the fixture family's own ground truth)

USEFUL = {"name": "name-the-keyword", "when": "always", "lesson": "Always write the task's keyword verbatim."}
USELESS = {"name": "be-polite", "when": "always", "lesson": "Open the note politely, with a kind word."}
HARMFUL = {"name": "pad-with-detail", "when": "always", "lesson": "Add more detail so that every note is complete."}
PRACTICE = {
    "name": "write-in-capitals",
    "when": "always",
    "lesson": "Write the note in capital letters, as the notes that passed do.",
}
LOWER = {"name": "use-lowercase", "when": "always", "lesson": "Write the note in lower case, never in capitals."}
DETAIL = {"name": "add-detail", "when": "always", "lesson": "Add detail to every note so that it is complete."}
TASKS = {t["id"]: t for t in (json.loads(line) for line in (FIXTURE / "tasks.jsonl").read_text().splitlines())}
_TASK_ID = re.compile(r"\(task (r\d+)\)")


def _system(req: dict) -> str:
    return req["system"][0]["text"] if req.get("system") else ""


def _user(req: dict) -> str:
    return req["messages"][0]["content"]


def task_of(text: str) -> dict:
    """The task a rendered task text is about (the pack's rendering names its id)."""
    return TASKS[_TASK_ID.search(text).group(1)]


def solve(task: dict, lessons: str, spared: frozenset[str] = frozenset()) -> str:
    n = int(task["id"][1:])
    text = f"a note on {task['keyword']}"
    if n % 3 == 0 and "name-the-keyword" not in lessons:
        text = "a short note"
    if "be-polite" in lessons:
        text = "kindly, " + text
    if "pad-with-detail" in lessons or ("add-detail" in lessons and task["id"] not in spared):
        text += " with much more detail added here for the reader"
    if (n % 3 == 1 and "use-lowercase" not in lessons) or "write-in-capitals" in lessons:
        text = text.upper()
    return "NOTE: " + text


def synthesize(user: str) -> list[dict]:
    bank = re.findall(r"^- ([a-z0-9-]+) \(when:", user, flags=re.M)
    removed_line = re.search(r"^Removed skills \(do not propose again\): (.*)$", user, flags=re.M)
    removed = [s.strip() for s in removed_line.group(1).split(",")] if removed_line else []
    known = set(bank) | set(removed)
    checks = set(re.findall(r"^  - ([A-Za-z0-9_:.-]+): ", user, flags=re.M))
    if "Failure capsules: (none" in user:  # nothing failed: a lesson from the passed attempts' habits
        passed = re.findall(r"<output>\n(.*?)\n</output>", user, flags=re.S)
        shouting = any(p.strip() and p == p.upper() and any(c.isalpha() for c in p) for p in passed)
        return [PRACTICE] if shouting and PRACTICE["name"] not in known else []
    if USEFUL["name"] not in known and checks & {"keyword", "missing_keyword"}:
        return [USEFUL, USELESS]
    if USEFUL["name"] in known and HARMFUL["name"] not in known:
        return [HARMFUL]
    if LOWER["name"] not in known and checks & {"case", "shouting"}:
        return [LOWER]
    return []


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip("\n")


def judge(user: str) -> str:
    task = task_of(_between(user, "<task>\n", "\n</task>"))
    a = notes_truth(task, _between(user, "<output A>\n", "\n</output A>"))["passed"]
    b = notes_truth(task, _between(user, "<output B>\n", "\n</output B>"))["passed"]
    win = "A" if a and not b else "B" if b and not a else "TIE"
    return f"WINNER: {win}\nREASON: scripted"


class ScriptedModel:
    """The FakeAPI default: one answer per request, by role (see the module docstring)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.spared: frozenset[str] = frozenset()  # tasks `add-detail` leaves alone (BlindModel)

    def __call__(self, req: dict) -> str:
        system, user = _system(req), _user(req)
        if "You keep a bank of skills" in system:
            self.calls["skill_synthesizer"] = self.calls.get("skill_synthesizer", 0) + 1
            return "```json\n" + json.dumps(synthesize(user)) + "\n```"
        if "You are a senior reviewer" in system:
            self.calls["final_judge"] = self.calls.get("final_judge", 0) + 1
            return judge(user)
        if "You design verifiers" in system or "You write drawback detectors" in system:
            self.calls["verifier_loop"] = self.calls.get("verifier_loop", 0) + 1
            return "```json\n[]\n```"
        self.calls["solver"] = self.calls.get("solver", 0) + 1
        lessons = _between(user, "<lessons>\n", "\n</lessons>") if "<lessons>" in user else ""
        return solve(task_of(_between(user, "<task>\n", "\n</task>")), lessons, self.spared)


#: what the grader-blind synthesizer writes: the first batch with a lesson not yet in the bank or removed
BLIND_STREAM = ([USEFUL, USELESS], [DETAIL], [LOWER])


class BlindModel(ScriptedModel):
    """The synthesizer ignores the grader: whatever failed (or passed), it writes the next lessons of
    `BLIND_STREAM`. ``add-detail`` pads every note except on the `spared` tasks — a lesson that hurts
    everywhere but where one looks (the tasks given: a run's rollback part)."""

    def __init__(self, spared=()) -> None:
        super().__init__()
        self.spared = frozenset(spared)

    def __call__(self, req: dict) -> str:
        if "You keep a bank of skills" in _system(req):
            self.calls["skill_synthesizer"] = self.calls.get("skill_synthesizer", 0) + 1
            user = _user(req)
            bank = re.findall(r"^- ([a-z0-9-]+) \(when:", user, flags=re.M)
            removed_line = re.search(r"^Removed skills \(do not propose again\): (.*)$", user, flags=re.M)
            known = set(bank) | {s.strip() for s in removed_line.group(1).split(",")}
            batch = next(
                (
                    [k for k in b if k["name"] not in known]
                    for b in BLIND_STREAM
                    if any(k["name"] not in known for k in b)
                ),
                [],
            )
            return "```json\n" + json.dumps(batch) + "\n```"
        return super().__call__(req)


def make_client(api, cache_path, run_id: str = "ratchet-test", **overrides):
    """A real LLMClient (the anthropic SDK) whose HTTP goes to the fake transport."""
    from vx.llm import client as llm_client
    from vx.llm.cache import ResponseCache
    from vx.llm.config import load_config

    cfg = load_config(overrides={"cache": str(cache_path), **overrides})
    return llm_client.LLMClient(
        cfg, run_id=run_id, sdk=api.sdk(), cache=ResponseCache(cfg.cache), sleep=lambda s: None, rng=random.Random(0)
    )


def resume_config():
    """The configuration of the kill-and-resume test (oracle and co, two phases each)."""
    from vx.ratchet import RatchetConfig

    return RatchetConfig(
        arms=("oracle", "co"), verifier_rounds=(1, 1), skill_rounds=(3, 3), batch_size=16, capacity=3, jobs=1
    )


def main(argv: list[str]) -> None:
    """``python scripted.py FAMILY OUT CACHE KILL_AT``: run `resume_config` and SIGKILL this process — KILL_AT
    ``solver:N``: at the N-th solver request reaching the API (mid-round: earlier rounds are committed, the
    current one is not); ``round:ARM:R``: right after ARM's round R is committed (the co arm's prompts are
    the oracle's, answered from the cache, so they never reach the API).

    ``python scripted.py cli KILL_AT VX-ARGUMENTS…``: the `vx` command itself, with an API key set and the
    fake transport behind the real SDK, killed at the N-th solver request (KILL_AT ``solver:N``)."""
    import os
    import signal

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from llm.fake import FakeAPI

    from vx.ratchet import run_ratchet

    model = ScriptedModel()

    def killing(req: dict) -> str:
        reply = model(req)
        if kill_at[0] == "solver" and model.calls.get("solver", 0) >= int(kill_at[1]):
            os.kill(os.getpid(), signal.SIGKILL)
        return reply

    if argv[0] == "cli":
        from vx.cli.main import main as vx
        from vx.llm import client as llm_client

        kill_at = argv[1].split(":")
        os.environ["ANTHROPIC_API_KEY"] = "sk-test-not-a-real-key"
        llm_client.make_sdk_client = lambda config: FakeAPI(default=killing).sdk()
        vx(argv[2:], prog_name="vx")
        return
    family, out, cache, kill_at = argv[0], argv[1], argv[2], argv[3].split(":")

    def on_round(row: dict) -> None:
        if kill_at[0] == "round" and row["arm"] == kill_at[1] and row["round"] == int(kill_at[2]):
            os.kill(os.getpid(), signal.SIGKILL)

    client = make_client(FakeAPI(default=killing), cache)
    run_ratchet(family, config=resume_config(), out=out, client=client, on_round=on_round)


if __name__ == "__main__":
    main(sys.argv[1:])
