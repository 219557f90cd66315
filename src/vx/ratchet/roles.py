"""The skill loop's LLM roles: the frozen ``solver``, the ``skill_synthesizer`` and the ``final_judge``.

All three call the one client layer (`vx.llm.client`: disk cache, retries, budget, usage ledger). A frozen
solver is a function of its prompt: the same prompt is answered from the cache, so a rerun or a resumed
run costs nothing and gives the same answers, and the held-out score moves only when the skills routed into
the prompts change. With ``batch=True`` the requests of a round are first sent through the Message Batches
API (half price) straight into the cache.

Prompt shapes (the system prompt is the cached shared prefix; the lessons vary per task, so they go into
the user message)::

    solver      system: the family's solver instructions
                user:   <lessons> - name: lesson … </lessons> (when any are routed) <task> … </task>
    synthesizer system: what a skill is, the reply format (one ```json array of {name, when, lesson})
                user:   the bank, the removed skills, the failure capsules, a few passed attempts
    final judge system: the rubric (generic, or task-aware with the family's format contract)
                user:   <task> … </task> <output A> … </output A> <output B> … </output B>
                reply:  WINNER: A | B | TIE, then REASON: one sentence
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import attrs

from vx.ratchet.skills import Skill, SkillError, validate_skill
from vx.ratchet.tasks import Adapter

MAX_SHOWN = 2500  # characters of an output shown to the synthesizer or the judge


def _clip(text: Any, n: int = MAX_SHOWN) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[: n - 1] + f"… [{len(text) - n + 1} more characters]"


def send_many(
    client: Any,
    role: str,
    requests: Sequence[Mapping[str, Any]],
    *,
    batch: bool = False,
    poll_seconds: float = 30.0,
    max_wait: float = 24 * 3600.0,
    say: Callable[[str], None] | None = None,
) -> list[Any]:
    """Send requests built with ``client.build_request(role, …)``, in order; raises the first LLM error
    (a round is all or nothing). With `batch`, a Message Batches prefetch fills the cache first."""
    from vx.llm.cache import request_key
    from vx.llm.client import BudgetExceeded, LLMError

    if not requests:
        return []
    if batch:
        from vx.llm.batch import prefetch

        prefetch(client, role, list(requests), poll_seconds=poll_seconds, max_wait=max_wait, say=say)

    def one(req: Mapping[str, Any]) -> Any:
        try:
            return client.send(role, req)
        except LLMError as exc:
            return exc

    # the first request the cache cannot answer goes alone: a key without a network (or a bad model id)
    # fails on it, before the other requests are sent and each retried
    cache = getattr(client, "cache", None)
    todo = [i for i, r in enumerate(requests) if cache is None or cache.get(request_key(r, None)) is None]
    if say is not None and todo:
        say(
            f"{role}: {len(todo)} request(s) to the API"
            + (f", {len(requests) - len(todo)} answered from the cache" if len(todo) < len(requests) else "")
        )
    results: list[Any] = [None] * len(requests)
    if len(todo) > 1:
        first = results[todo[0]] = one(requests[todo[0]])
        if isinstance(first, LLMError):
            raise first
    rest = [i for i in range(len(requests)) if results[i] is None]
    if len(rest) == 1:
        results[rest[0]] = one(requests[rest[0]])
    elif rest:
        with ThreadPoolExecutor(max_workers=client.config.concurrency) as ex:
            for i, r in zip(rest, ex.map(one, [requests[i] for i in rest])):
                results[i] = r
    errors = [r for r in results if isinstance(r, LLMError)]
    if errors:
        raise next((e for e in errors if isinstance(e, BudgetExceeded)), errors[0])
    return results


# ------------------------------------------------------------------------------------------------
# solver


def solver_user_message(task_text: str, skills: Sequence[Skill]) -> str:
    parts = []
    if skills:
        lines = "\n".join(f"- {s.name}: {s.lesson}" for s in skills)
        parts.append(
            f"<lessons>\nLessons learned on earlier tasks; apply those that fit this task:\n{lines}\n</lessons>\n"
        )
    parts.append(f"<task>\n{task_text.rstrip()}\n</task>")
    return "\n".join(parts)


@attrs.define
class Solver:
    client: Any
    adapter: Adapter
    batch: bool = False
    poll_seconds: float = 30.0
    max_wait: float = 24 * 3600.0
    say: Callable[[str], None] | None = None

    def request(self, task: Mapping[str, Any], skills: Sequence[Skill]) -> dict[str, Any]:
        return self.client.build_request(
            "solver", solver_user_message(self.adapter.render(task), skills), system=self.adapter.system
        )

    def solve(self, jobs: Sequence[tuple[Mapping[str, Any], Sequence[Skill]]]) -> list[tuple[str, str]]:
        """(output, cache key of the reply) per (task, routed skills)."""
        reqs = [self.request(t, s) for t, s in jobs]
        done = send_many(
            self.client,
            "solver",
            reqs,
            batch=self.batch,
            poll_seconds=self.poll_seconds,
            max_wait=self.max_wait,
            say=self.say,
        )
        return [(self.adapter.extract(c.text), c.key) for c in done]


# ------------------------------------------------------------------------------------------------
# skill synthesizer

SYNTH_SYSTEM = """You keep a bank of skills for a frozen AI solver working on tasks of the {family} family. A \
skill is a short, named lesson that is put into the solver's prompt on the tasks it applies to, so that the \
solver stops repeating a failure. The solver's own instructions are: {system}

You are shown failed attempts ("failure capsules": the task, the output and the checks its grader named, \
with their messages) and perhaps a few attempts that passed. Write at most {n} new skills that would have \
prevented recurring failures on tasks like these. A good skill names one concrete, checkable habit; it is \
general enough to help other tasks of the same kind and never mentions a particular task's answer.

Reply with one JSON array inside a single ```json block, and nothing else in the block:
```json
[{{"name": "kebab-case-name", "when": "always", "lesson": "One to three imperative sentences."}}]
```
"when" is "always" for a lesson that fits every task, otherwise a few words that tasks it fits contain. \
An empty array is a fine answer when no lesson would help. Do not repeat an existing skill or one that was \
removed."""

_JSON_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


def render_capsule(i: int, c: Mapping[str, Any], task_text: str) -> str:
    checks = "\n".join(f"  - {name}: {msg}" for name, msg in c["checks"]) or "  (the grader named no check)"
    return (
        f"<capsule {i}>\n<task>\n{_clip(task_text, 1500)}\n</task>\n<output>\n{_clip(c['output'])}\n</output>\n"
        f"verdict: FAIL\nfailed checks:\n{checks}\n</capsule {i}>"
    )


@attrs.define
class SkillSynthesizer:
    client: Any
    adapter: Adapter
    family: str
    n: int = 3

    def request(
        self,
        *,
        capsules: Sequence[Mapping[str, Any]],
        practice: Sequence[Mapping[str, Any]],
        bank: Sequence[Skill],
        removed: Sequence[str],
        task_text: Callable[[str], str],
    ) -> dict[str, Any]:
        system = SYNTH_SYSTEM.format(family=self.family, system=self.adapter.system, n=self.n)
        existing = "\n".join(f"- {s.name} (when: {s.when}): {s.lesson}" for s in bank) or "(none yet)"
        parts = [
            f"Skills in the bank:\n{existing}",
            "Removed skills (do not propose again): " + (", ".join(removed) if removed else "(none)"),
        ]
        if capsules:
            parts.append(
                "Failure capsules:\n"
                + "\n".join(render_capsule(i, c, task_text(c["task"])) for i, c in enumerate(capsules, 1))
            )
        else:
            parts.append("Failure capsules: (none: the grader passed every attempt of this round)")
        if practice:
            parts.append(
                "Attempts that passed:\n"
                + "\n".join(
                    f"<passed {i}>\n<task>\n{_clip(task_text(p['task']), 800)}\n</task>\n<output>\n"
                    f"{_clip(p['output'], 1200)}\n</output>\n</passed {i}>"
                    for i, p in enumerate(practice, 1)
                )
            )
        parts.append(f"Write at most {self.n} new skills.")
        return self.client.build_request("skill_synthesizer", "\n\n".join(parts), system=system)

    def parse(
        self, text: str, *, born: int, origin: Mapping[str, Any], bank: Sequence[Skill], removed: Sequence[str]
    ) -> tuple[list[Skill], list[dict[str, Any]]]:
        """Valid new skills and the dropped proposals (with why)."""
        blocks = _JSON_FENCE.findall(text or "")
        body = blocks[0] if blocks else (text or "").strip()
        try:
            data = json.loads(body)
        except json.JSONDecodeError as exc:
            return [], [{"proposal": _clip(text, 300), "problem": f"the reply is not JSON ({exc.msg})"}]
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            return [], [{"proposal": _clip(text, 300), "problem": "expected a JSON array of skills"}]
        taken = {s.name for s in bank}
        gone = set(removed)
        out: list[Skill] = []
        dropped: list[dict[str, Any]] = []
        for raw in data[: max(4 * self.n, 12)]:
            try:
                s = validate_skill(raw, born=born, origin=origin)
            except SkillError as exc:
                dropped.append({"proposal": _clip(raw, 300), "problem": str(exc)})
                continue
            if s.name in taken:
                dropped.append({"proposal": s.name, "problem": "already in the bank"})
            elif s.name in gone:
                dropped.append({"proposal": s.name, "problem": "was removed earlier"})
            elif len(out) >= self.n:
                dropped.append({"proposal": s.name, "problem": f"more than {self.n} skills in one round"})
            else:
                taken.add(s.name)
                out.append(s)
        return out, dropped


# ------------------------------------------------------------------------------------------------
# final pairwise judge

GENERIC_RUBRIC = """You are a senior reviewer. You are shown one task and two outputs written for it, A and B. \
Decide which output better serves the person who asked: is it correct, complete and fit for use as delivered? \
Judge only the outputs; their order means nothing.

Reply in exactly this format:
WINNER: A
(or B, or TIE when neither is better)
REASON: <one short sentence>"""

TASK_AWARE_RUBRIC = """You are a senior reviewer. You are shown one task and two outputs written for it, A and B. \
Decide which output better serves the person who asked: is it correct, complete and fit for use as delivered? \
Judge only the outputs; their order means nothing.

The task's pipeline has a format contract. Output that follows it is required, not clutter, and must not be \
counted against an output; a violation of the contract is a defect:
{contract}

Reply in exactly this format:
WINNER: A
(or B, or TIE when neither is better)
REASON: <one short sentence>"""

RUBRICS = ("generic", "task-aware")
_WINNER = re.compile(r"WINNER:[ \t]*(A|B|TIE)[ \t]*\.?", re.IGNORECASE)


def parse_winner(text: str) -> str | None:
    """ "A", "B", "TIE", or None when the reply does not follow the format (counted as a tie)."""
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    if not lines or len(lines) > 2:
        return None
    m = _WINNER.fullmatch(lines[0])
    if m is None or (len(lines) == 2 and not lines[1].upper().startswith("REASON:")):
        return None
    return m.group(1).upper()


@attrs.define
class FinalJudge:
    client: Any
    adapter: Adapter

    def system(self, rubric: str) -> str:
        return GENERIC_RUBRIC if rubric == "generic" else TASK_AWARE_RUBRIC.format(contract=self.adapter.contract)

    def request(self, rubric: str, task: Mapping[str, Any], a: str, b: str) -> dict[str, Any]:
        user = (
            f"<task>\n{_clip(self.adapter.render(task), 6000)}\n</task>\n\n<output A>\n{_clip(a, 12000)}\n"
            f"</output A>\n\n<output B>\n{_clip(b, 12000)}\n</output B>"
        )
        return self.client.build_request("final_judge", user, system=self.system(rubric))

    def pair_requests(self, rubric: str, task: Mapping[str, Any], old: str, new: str) -> list[dict[str, Any]]:
        """Both position orders: (old as A, new as B), then (new as A, old as B)."""
        return [self.request(rubric, task, old, new), self.request(rubric, task, new, old)]

    @staticmethod
    def outcome(first: str, second: str) -> tuple[str, str, str]:
        """Replies of the two orders → (preferred in order 1, in order 2, outcome): "new" / "old" / "tie"
        each, and the outcome "win" / "loss" only when both orders agree, else "tie"."""
        p1 = {"A": "old", "B": "new"}.get(parse_winner(first) or "", "tie")
        p2 = {"A": "new", "B": "old"}.get(parse_winner(second) or "", "tie")
        outcome = "win" if p1 == p2 == "new" else "loss" if p1 == p2 == "old" else "tie"
        return p1, p2, outcome
