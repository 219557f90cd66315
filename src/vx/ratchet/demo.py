"""The offline demo (``vx ratchet FAMILY --demo``): every LLM role answered by a script — no model, no key, no cost.

The family's pack supplies the script (`vx.families.pack.DemoScript`): the scripted solver's reply to a task
given the lessons in its prompt, and the lessons its scripted synthesizer may write. This module turns the
ratchet's requests into replies:

* **solver** — the task is found from its rendering, the lessons from the prompt's ``<lessons>`` block; the
  reply is the script's;
* **skill synthesizer** — the script's lessons, not yet in the bank nor removed, whose ``after_failure``
  pattern matches a failure capsule's checks, or — when no attempt failed — whose ``after_practice`` pattern
  matches a passed attempt's output (a grader that passes everything teaches the habits of what it passed);
* **final judge** — prefers the output the family's ground truth passes (a tie when both or neither do).

The replies go through a real `vx.llm.client.LLMClient` (its cache, usage ledger and resume all work) whose
models are all named ``scripted-demo`` and whose cache is its own file beside the run file — never the user's
LLM cache, so no scripted reply can ever be served to a real run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vx.ratchet.config import RatchetError
from vx.ratchet.roles import SYNTH_SYSTEM
from vx.ratchet.tasks import hooks_of

if TYPE_CHECKING:
    from vx.llm.client import LLMClient

MODEL = "scripted-demo"
ROLES = ("solver", "skill_synthesizer", "final_judge")
_SYNTH_HEAD = SYNTH_SYSTEM.split("{", 1)[0]
_LESSON_LINE = re.compile(r"^- ([a-z0-9][a-z0-9-]*[a-z0-9]): ", re.M)
_BANK_LINE = re.compile(r"^- ([a-z0-9][a-z0-9-]*[a-z0-9]) \(when: ", re.M)
_CHECK_LINE = re.compile(r"^  - (.+)$", re.M)
_PASSED = re.compile(r"<passed \d+>\n<task>\n.*?\n</task>\n<output>\n(.*?)\n</output>\n</passed \d+>", re.S)
_AT_MOST = re.compile(r"Write at most (\d+) new skills\.")


def demo_cache_path(run_path: str | Path) -> Path:
    p = Path(run_path)
    return p.with_name(p.name.removesuffix(".vxratchet.sqlite").removesuffix(".sqlite") + ".demo-llm.sqlite")


def _between(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    rest = text[i + len(start) :]
    j = rest.find(end)
    return rest if j < 0 else rest[:j]


class ScriptedModel:
    """Request → reply text, from the request alone (a resumed run, or a second process, sees the same)."""

    def __init__(self, family: Any, adapter: Any, truth: Any) -> None:
        hooks = hooks_of(family)
        script = getattr(hooks, "demo", None)
        if script is None:
            raise RatchetError(
                f"family {family.name}: its packs give vx ratchet no scripted demo (a DemoScript in "
                "the pack's ratchet hooks); --demo runs only on families that have one"
            )
        self.script, self.adapter, self.truth = script, adapter, truth
        self.description = script.description or "a scripted solver"
        self._by_text = {adapter.render(t).rstrip(): t for t in family.tasks.values()}

    def _task(self, user: str, start: str = "<task>\n", end: str = "\n</task>") -> Mapping[str, Any]:
        text = _between(user, start, end).rstrip()
        task = self._by_text.get(text)
        if task is None:
            raise RatchetError("the scripted demo was asked about a task it cannot find")
        return task

    def __call__(self, request: Mapping[str, Any]) -> str:
        system = request["system"][0]["text"] if request.get("system") else ""
        user = str(request["messages"][0]["content"])
        if system == self.adapter.system:
            lessons = _LESSON_LINE.findall(_between(user, "<lessons>\n", "</lessons>")) if "<lessons>" in user else []
            return self.script.solve(self._task(user), lessons)
        if system.startswith(_SYNTH_HEAD):
            return "```json\n" + json.dumps(self._synthesize(user)) + "\n```"
        return self._judge(user)

    def _synthesize(self, user: str) -> list[dict[str, str]]:
        bank_part = user.split("Removed skills", 1)[0]
        removed = _between(user, "Removed skills (do not propose again): ", "\n")
        known = set(_BANK_LINE.findall(bank_part)) | {s.strip() for s in removed.split(",")}
        m = _AT_MOST.search(user)
        n = int(m.group(1)) if m else 3
        if "Failure capsules: (none" in user:
            seen, attr = _PASSED.findall(user), "after_practice"
        else:
            seen, attr = (
                _CHECK_LINE.findall(_between(user, "Failure capsules:\n", "\nAttempts that passed:")),
                "after_failure",
            )
        out = []
        for lesson in self.script.lessons:
            pattern = getattr(lesson, attr)
            if lesson.name in known or not pattern or not any(re.search(pattern, x) for x in seen):
                continue
            out.append({"name": lesson.name, "when": lesson.when, "lesson": lesson.lesson})
        return out[:n]

    def _judge(self, user: str) -> str:
        task = self._task(user)
        a = _between(user, "<output A>\n", "\n</output A>")
        b = _between(user, "<output B>\n", "\n</output B>")
        ja, jb = self.truth.grade_many([(task["id"], a), (task["id"], b)])
        win = "A" if ja.passed and not jb.passed else "B" if jb.passed and not ja.passed else "TIE"
        return f"WINNER: {win}\nREASON: scripted judge: the output the ground truth passes wins"


class _Reply:
    def __init__(self, body: dict[str, Any]) -> None:
        self._body = body

    def model_dump(self, **_kw: Any) -> dict[str, Any]:
        return self._body


class ScriptedSDK:
    """Stands in for ``anthropic.Anthropic``: ``messages.create(**request)`` answers from a `ScriptedModel`."""

    def __init__(self, answer: Callable[[Mapping[str, Any]], str]) -> None:
        self.answer = answer
        self.messages = self

    def create(self, **request: Any) -> _Reply:
        return _Reply(
            {
                "id": "scripted",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [{"type": "text", "text": self.answer(request)}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        )


def demo_client(family: Any, adapter: Any, truth: Any, run_path: str | Path) -> tuple[LLMClient, str]:
    """A real `LLMClient` answering every role from the family's script (see the module docstring), and the
    scripted solver's description (the run records it)."""
    from vx.llm.cache import ResponseCache
    from vx.llm.client import LLMClient
    from vx.llm.config import load_config

    model = ScriptedModel(family, adapter, truth)
    cache = demo_cache_path(run_path)
    config = load_config(overrides={"cache": str(cache), **{f"{r}.model": MODEL for r in ROLES}})
    client = LLMClient(config, run_id=f"demo-{Path(run_path).name}", sdk=ScriptedSDK(model), cache=ResponseCache(cache))
    return client, model.description
