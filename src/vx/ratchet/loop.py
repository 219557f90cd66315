"""The skill loop of one arm, round by round (the skill side of the Double Ratchet).

Round 0 measures the frozen solver (empty bank) on the held-out tasks. Each later round:

1. **Attempt** — ``batch_size`` training tasks (an epoch-wise shuffle of the family's train tasks, the same
   for every arm of a seed), each with the skills routed to it; each routed skill is left out with
   probability ``holdout`` (the randomized control that measures contributions).
2. **Grade** — the arm's grader (ground truth, a verifier, or the always-pass control) grades every
   attempt; a failed attempt becomes a **failure capsule**: task, output and the grader's named failed
   checks with their messages.
3. **Synthesize** — the skill synthesizer sees up to ``max_capsules`` capsules (distinct failed checks
   first), a few passed attempts, the bank and the skills removed so far, and writes at most
   ``new_skills`` short named lessons.
4. **Curate** — contributions are refitted on every training attempt of the arm; harmful skills retire,
   and the bank is evicted down to ``capacity`` (`vx.ratchet.skills.curate`).
5. **Measure** — the solver attempts every held-out task (the family's locked tasks) with the bank's
   routed skills; the family's ground truth grades them. The held-out tasks are in two parts (`Parts`):
   the mean over the *rollback* part is what rollback reads; the mean over the *report* part is recorded
   for the curves, lift and retention and read by nothing here.
6. **Rollback** — if the rollback part's score is lower than that of the bank in force before the round by
   more than ``rollback_tolerance``, the round's bank changes are undone (off in the naive arm). Held-out
   scores are read here only, and only the rollback part's; nothing of the held-out tasks reaches a grader
   or a verifier loop. (Under the papers' protocol the two parts are the same tasks.)

The record of a round keeps the rollback part's score of the bank in force (after a rollback: the restored
bank's, measured in the round it was built, ``bank_round``), the rollback part's and the report part's scores
measured for the round's own bank, and ``bank_round``. The loop's state holds no report-part number: the
report curve (the bank in force's report-part score) is read off the record (`RatchetStore.rounds`).

Determinism: the batch of round r and the holdout draws come from ``numpy.random.default_rng`` seeded by
(seed, epoch) and (seed, r, task); with the LLM cache the same inputs give the same record, and a run
resumed after its last committed round continues exactly as the uninterrupted run would have.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.ratchet.config import CO_ARMS, RatchetConfig, RatchetError
from vx.ratchet.graders import AlwaysPass, Grader, Judgement
from vx.ratchet.roles import SkillSynthesizer, Solver, send_many
from vx.ratchet.routing import Router
from vx.ratchet.skills import Bank, Skill, contributions, curate
from vx.ratchet.store import RatchetStore


class ArmStopped(Exception):
    """The arm cannot go on now (the LLM budget is spent, a call failed); its committed rounds stand and the
    round in progress is not recorded (its replies are in the LLM cache: resuming pays nothing twice)."""

    def __init__(self, message: str, *, budget: bool = False) -> None:
        super().__init__(message)
        self.budget = budget


def stopped_by(exc: Exception) -> ArmStopped:
    from vx.llm.client import BudgetExceeded

    return ArmStopped(str(exc), budget=isinstance(exc, BudgetExceeded))


@attrs.frozen
class Parts:
    """The held-out tasks in two parts: ``rollback`` (what rollback reads) and ``report`` (what the curves,
    lift and retention are computed from; no loop reads it). Disjoint under the two-part protocol, the same
    tasks under the papers'."""

    protocol: str
    rollback: tuple[str, ...]
    report: tuple[str, ...]

    @property
    def tasks(self) -> list[str]:
        """Every held-out task, each once (the solver attempts them all every round)."""
        return sorted(set(self.rollback) | set(self.report))

    def as_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "rollback_tasks": list(self.rollback), "report_tasks": list(self.report)}


@attrs.define
class Context:
    """What every arm of a run shares."""

    family: Any
    config: RatchetConfig
    store: RatchetStore
    client: Any
    solver: Solver
    synthesizer: SkillSynthesizer
    truth: Grader  # the family's ground truth: held-out measurement (and the oracle arm's grader)
    router: Router
    train_tasks: list[str]
    parts: Parts
    task_text: dict[str, str]
    verdict_cache: Any = None
    say: Callable[[str], None] = lambda m: None
    on_round: Callable[[dict[str, Any]], None] = lambda row: None
    verifier_roles: Callable[[Any], Mapping[str, Any]] | None = None
    fixed_verifier: Any = None  # the "verifier" arm's Verifier


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def batch_tasks(tasks: Sequence[str], round_: int, batch_size: int, seed: int) -> list[str]:
    """The training tasks of skill round `round_` (1-based): consecutive slices of per-epoch shuffles."""
    n = len(tasks)
    out: list[str] = []
    orders: dict[int, list[int]] = {}
    for pos in range((round_ - 1) * batch_size, round_ * batch_size):
        epoch, idx = divmod(pos, n)
        if epoch not in orders:
            orders[epoch] = np.random.default_rng([seed, 7919, epoch]).permutation(n).tolist()
        t = tasks[orders[epoch][idx]]
        if t not in out:
            out.append(t)
    return out


@attrs.define
class _SkillRound:
    """One skill round's working values, which its steps (attempt, synthesize, curate, roll back) read and
    change: the bank (and the bank before the round), the skills removed so far, and what the round records."""

    r: int
    bank: Bank
    before: Bank
    removed: list[str]
    attempts: list[dict[str, Any]] = attrs.field(factory=list)
    capsules: list[dict[str, Any]] = attrs.field(factory=list)
    practice: list[dict[str, Any]] = attrs.field(factory=list)
    synth: dict[str, Any] = attrs.field(factory=dict)
    grader_desc: dict[str, Any] = attrs.field(factory=dict)
    new: list[Skill] = attrs.field(factory=list)
    removals: list[Any] = attrs.field(factory=list)
    events: list[dict[str, Any]] = attrs.field(factory=list)
    touched: dict[str, dict[str, Any]] = attrs.field(factory=dict)


class Arm:
    def __init__(self, ctx: Context, name: str) -> None:
        self.ctx = ctx
        self.name = name
        self.cfg = ctx.config
        self.grader: Grader | None = None
        self.grader_phase: int | None = None
        self.history: list[dict[str, Any]] = []  # this arm's training attempts

    # ------------------------------------------------------------------------------------------
    def run(self) -> None:
        store = self.ctx.store
        last = store.last_round(self.name)
        if last is None:
            self._round0()
        else:
            store.truncate_after(self.name, last["round"])
            self.ctx.say(f"{self.name}: resuming after round {last['round']}")
        self.history = [a for a in store.attempts(self.name, kind="train")]
        for r in range(self._last_round()["round"] + 1, self.cfg.total_skill_rounds + 1):
            self._skill_round(r, self._last_round()["state"])

    def _last_round(self) -> dict[str, Any]:
        """The arm's last recorded round (round 0 is recorded before any other)."""
        last = self.ctx.store.last_round(self.name)
        if last is None:
            raise RatchetError(f"{self.ctx.store.path}: arm {self.name} has no recorded round")
        return last

    # ------------------------------------------------------------------------------------------
    def _grader_for(self, round_: int) -> Grader:
        phase = self.cfg.skill_phase_of(round_)
        if self.grader is not None and (self.name not in CO_ARMS or self.grader_phase == phase):
            return self.grader
        if self.name == "oracle":
            self.grader = self.ctx.truth
        elif self.name == "always-pass":
            self.grader = AlwaysPass()
        elif self.name == "verifier":
            from vx.ratchet.graders import VerifierGrader

            self.grader = VerifierGrader(
                self.ctx.fixed_verifier, cache=self.ctx.verdict_cache, jobs=self.cfg.jobs, timeout=self.cfg.timeout
            )
        elif self.name in CO_ARMS:
            from vx.ratchet.coevolve import verifier_phase

            self.grader = verifier_phase(self.ctx, self.name, phase)
        else:
            raise RatchetError(f"the {self.name} arm has no grader")
        self.grader_phase = phase
        return self.grader

    def _heldout(self, bank: Bank) -> tuple[list[dict[str, Any]], float, float]:
        """The held-out attempts with `bank`, and the mean score of the rollback part and of the report part."""
        ctx = self.ctx
        tasks = ctx.parts.tasks
        jobs, routes = [], []
        for t in tasks:
            routed = ctx.router.route(ctx.task_text[t], list(bank))
            routes.append(routed)
            jobs.append((ctx.family.tasks[t], [bank.get(s) for s in routed]))
        outs = self._solve(jobs)
        judged = ctx.truth.grade_many([(t, o) for t, (o, _k) in zip(tasks, outs)])
        rows = [
            self._attempt("heldout", t, routed, routed, o, key, j)
            for t, routed, (o, key), j in zip(tasks, routes, outs, judged)
        ]
        score = {t: j.score for t, j in zip(tasks, judged)}

        def mean(part: Sequence[str]) -> float:
            return round(float(np.mean([score[t] for t in part])), 10) if part else float("nan")

        return rows, mean(ctx.parts.rollback), mean(ctx.parts.report)

    def _solve(self, jobs: list[tuple[Mapping[str, Any], list[Skill]]]) -> list[tuple[str, str]]:
        from vx.llm.client import LLMError

        try:
            return self.ctx.solver.solve(jobs)
        except LLMError as exc:
            raise stopped_by(exc) from None

    def _attempt(
        self,
        kind: str,
        task: str,
        routed: list[str],
        included: list[str],
        output: str,
        key: str,
        j: Judgement,
        round_: int | None = None,
    ) -> dict[str, Any]:
        return {
            "arm": self.name,
            "round": round_,
            "kind": kind,
            "task": task,
            "routed": list(routed),
            "included": list(included),
            "output": output,
            "passed": j.passed,
            "score": j.score,
            "checks": [list(c) for c in j.checks],
            "reply_key": key,
        }

    def _round0(self) -> None:
        t0 = time.perf_counter()
        rows, rollback, report = self._heldout(Bank())
        for a in rows:
            a["round"] = 0
        state = {"bank": [], "removed": [], "rollback_ref": rollback, "bank_round": 0}
        row = {
            "arm": self.name,
            "round": 0,
            "phase": 0,
            "rollback_score": rollback,
            "rollback_measured": rollback,
            "report_measured": report,
            "bank_round": 0,
            "train_pass": None,
            "train_score": None,
            "train_n": 0,
            "bank_size": 0,
            "born": 0,
            "removed": 0,
            "rolled_back": False,
            "synth": {},
            "grader": {},
            "state": state,
            "seconds": time.perf_counter() - t0,
        }
        self.ctx.store.write_round(row, attempts=rows, capsules=[], skills=[], events=[])
        self.ctx.on_round(row)

    # ------------------------------------------------------------------------------------------
    def _skill_round(self, r: int, state: Mapping[str, Any]) -> None:
        """One round: attempt a batch of train tasks with the routed skills, grade them, synthesize skills
        from the failures, curate the bank, measure it on the held-out part (rolling the round back when
        the score falls), and record the round."""
        t0 = time.perf_counter()
        bank = Bank.from_list(state["bank"])
        rd = _SkillRound(r, bank, bank.copy(), list(state["removed"]))
        if self.name != "frozen":
            grader = self._grader_for(r)
            rd.grader_desc = grader.describe()
            self._attempt_batch(rd, grader)
            contrib = contributions(self.history + rd.attempts, rd.bank.names, ridge=self.cfg.ridge)
            self._synthesize(rd)
            self._curate(rd, contrib)
        held, measured, report_measured = self._heldout(rd.bank)  # the report part's score: recorded, never read
        for a in held:
            a["round"] = r
        rolled_back = self._roll_back_if_worse(rd, state, measured)
        rollback_score, bank_round = (state["rollback_ref"], state["bank_round"]) if rolled_back else (measured, r)
        rd.removed += [rm.name for rm in rd.removals]
        self._touch_bank(rd)
        train = [a["passed"] for a in rd.attempts], [a["score"] for a in rd.attempts]
        row = {
            "arm": self.name,
            "round": r,
            "phase": self.cfg.skill_phase_of(r),
            "rollback_score": rollback_score,
            "rollback_measured": measured,
            "report_measured": report_measured,
            "bank_round": bank_round,
            "train_pass": float(np.mean(train[0])) if rd.attempts else None,
            "train_score": float(np.mean(train[1])) if rd.attempts else None,
            "train_n": len(rd.attempts),
            "bank_size": len(rd.bank),
            "born": len(rd.new),
            "removed": len(rd.removals),
            "rolled_back": rolled_back,
            "synth": rd.synth,
            "grader": rd.grader_desc,
            "state": {
                "bank": rd.bank.as_list(),
                "removed": rd.removed,
                "rollback_ref": rollback_score,
                "bank_round": bank_round,
            },
            "seconds": time.perf_counter() - t0,
        }
        skill_rows = [{"arm": self.name, **d} for _, d in sorted(rd.touched.items())]
        self.ctx.store.write_round(
            row, attempts=rd.attempts + held, capsules=rd.capsules, skills=skill_rows, events=rd.events
        )
        self.history += rd.attempts
        self.ctx.on_round(row)

    def _attempt_batch(self, rd: _SkillRound, grader: Grader) -> None:
        """The round's batch of train tasks, each solved with the skills routed to it (some held out at
        random), and graded."""
        ctx, cfg, bank = self.ctx, self.cfg, rd.bank
        tasks = batch_tasks(ctx.train_tasks, rd.r, cfg.batch_size, cfg.seed)
        jobs, plan = [], []
        for t in tasks:
            routed = ctx.router.route(ctx.task_text[t], list(bank))
            rng = np.random.default_rng([cfg.seed, rd.r, _crc(t)])
            draws = rng.random(len(routed))
            included = [s for s, d in zip(routed, draws) if d >= cfg.holdout]
            plan.append((t, routed, included))
            jobs.append((ctx.family.tasks[t], [bank.get(s) for s in included]))
        outs = self._solve(jobs)
        judged = grader.grade_many([(t, o) for (t, _r, _i), (o, _k) in zip(plan, outs)])
        for (t, routed, included), (o, key), j in zip(plan, outs, judged):
            rd.attempts.append(self._attempt("train", t, routed, included, o, key, j, rd.r))

    def _synthesize(self, rd: _SkillRound) -> None:
        """New skills from the failed attempts' capsules (distinct failed checks first) and some passed
        attempts as practice; with neither, no call."""
        ctx, cfg, r = self.ctx, self.cfg, rd.r
        failed = [a for a in rd.attempts if not a["passed"]]
        chosen: list[dict[str, Any]] = []
        seen_checks: set[str] = set()
        for a in failed:  # distinct failed checks first, then the rest in batch order
            first = a["checks"][0][0] if a["checks"] else ""
            if first not in seen_checks:
                seen_checks.add(first)
                chosen.append(a)
        chosen += [a for a in failed if a not in chosen]
        rd.capsules = [
            {"arm": self.name, "round": r, "task": a["task"], "output": a["output"], "checks": a["checks"]}
            for a in chosen[: cfg.max_capsules]
        ]
        rd.practice = [a for a in rd.attempts if a["passed"]][: cfg.practice]
        if not (rd.capsules or rd.practice):
            rd.synth = {"called": False, "reason": "no attempt to learn from"}
            return
        req = ctx.synthesizer.request(
            capsules=rd.capsules,
            practice=rd.practice,
            bank=list(rd.bank),
            removed=rd.removed,
            task_text=lambda tid: ctx.task_text[tid],
        )
        from vx.llm.client import LLMError

        try:
            completion = send_many(ctx.client, "skill_synthesizer", [req])[0]
        except LLMError as exc:
            raise stopped_by(exc) from None
        origin = {
            "round": r,
            "capsules": [c["task"] for c in rd.capsules],
            "checks": sorted({c[0] for cap in rd.capsules for c in cap["checks"]}),
        }
        rd.new, dropped = ctx.synthesizer.parse(
            completion.text, born=r, origin=origin, bank=list(rd.bank), removed=rd.removed
        )
        rd.synth = {
            "called": True,
            "reply_key": completion.key,
            "capsules": len(rd.capsules),
            "practice": len(rd.practice),
            "new": [s.name for s in rd.new],
            "dropped": dropped,
        }

    def _curate(self, rd: _SkillRound, contrib: Mapping[str, Any]) -> None:
        """The new skills join the bank; skills that do not contribute (past their grace) or overflow its
        capacity leave it."""
        cfg, r = self.cfg, rd.r
        for s in rd.new:
            rd.bank.add(s)
            rd.events.append(
                {
                    "arm": self.name,
                    "round": r,
                    "skill": s.name,
                    "kind": "born",
                    "reason": (
                        f"from {len(rd.capsules)} capsule(s)"
                        if rd.capsules
                        else f"from {len(rd.practice)} passed attempt(s): no attempt failed"
                    ),
                    "evidence": {"when": s.when, "lesson": s.lesson, **s.origin},
                }
            )
            rd.touched[s.name] = {**s.as_dict(), "status": "active", "removed_round": None, "contribution": None}
        rd.removals = curate(
            rd.bank,
            contrib,
            round_=r,
            capacity=cfg.capacity,
            grace=cfg.grace,
            min_evidence=cfg.min_evidence,
            retire_below=cfg.retire_below,
        )
        for rm in rd.removals:
            rd.events.append(
                {
                    "arm": self.name,
                    "round": r,
                    "skill": rm.name,
                    "kind": rm.kind,
                    "reason": rm.reason,
                    "evidence": rm.contribution.as_dict(),
                }
            )

    def _roll_back_if_worse(self, rd: _SkillRound, state: Mapping[str, Any], measured: float) -> bool:
        """When the bank changed and its held-out score fell below the reference by more than the
        tolerance, the bank before this round comes back (with the scores measured when it was built)."""
        cfg, ref, r = self.cfg, state["rollback_ref"], rd.r
        changed = rd.bank.names != rd.before.names
        if not (
            cfg.rollback_for(self.name)
            and changed
            and ref is not None
            and measured < ref - cfg.rollback_tolerance - 1e-12
        ):
            return False
        for s in rd.new:
            rd.events.append(
                {
                    "arm": self.name,
                    "round": r,
                    "skill": s.name,
                    "kind": "rolled_back",
                    "reason": f"the rollback part's score fell from {ref:.3f} to {measured:.3f}",
                    "evidence": {},
                }
            )
        for rm in rd.removals:
            if rm.name in rd.before:
                rd.events.append(
                    {
                        "arm": self.name,
                        "round": r,
                        "skill": rm.name,
                        "kind": "restored",
                        "reason": "the round's bank changes were rolled back",
                        "evidence": {},
                    }
                )
        for s in rd.new:
            rd.removed.append(s.name)
            rd.touched[s.name] = {**s.as_dict(), "status": "rolled_back", "removed_round": r, "contribution": None}
        rd.bank = rd.before
        rd.removals = []
        return True

    def _touch_bank(self, rd: _SkillRound) -> None:
        """The skill rows the round writes: every skill of the bank with its contribution now, and the ones
        removed this round."""
        contrib_now = (
            contributions(self.history + rd.attempts, rd.bank.names, ridge=self.cfg.ridge) if rd.attempts else {}
        )
        for s in rd.bank:
            c = contrib_now.get(s.name)
            rd.touched[s.name] = {
                **s.as_dict(),
                "status": "active",
                "removed_round": None,
                "contribution": c.as_dict() if c else None,
            }
        lookup = {k.name: k for k in list(rd.before) + rd.new}
        for rm in rd.removals:
            s = lookup[rm.name]
            rd.touched[rm.name] = {
                **s.as_dict(),
                "status": rm.kind,
                "removed_round": rd.r,
                "contribution": rm.contribution.as_dict(),
            }
