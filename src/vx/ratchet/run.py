"""The public entry point: run (or resume) a ratchet run on a family, then the final judge.

    >>> from vx.ratchet import run_ratchet, RatchetConfig
    >>> result = run_ratchet("examples/humaneval", config=RatchetConfig(arms=("oracle", "co")))
    >>> result.figures["retention"]["co"]

LLM roles, as `vx.evolve.evolve_family` takes them: ``llm=None`` (the default) or ``True`` starts a session
from the family's configuration (an `LLMUnavailable`-style `RatchetError` without a key: the solver, skill
synthesizer and final judge are not optional here); an `LLMSession` already started is used as is (and not
closed). The co arms' verifier loops get the session's LLM composer and synthesizer as `vx evolve` does.
``client=`` takes a bare `vx.llm.client.LLMClient` instead (tests; the verifier loops then stay offline).
``demo=True`` answers every role with the family's scripted demo (`vx.ratchet.demo`): offline, free, and
labelled as scripted in the run file, the report and every printed line. `plan` gives the number of calls of
every role and the worst-case USD before anything is sent.

This module splits the family: the arms' skill loops get task texts and a grader; the family's ground truth
grades held-out attempts (and, in the oracle arm only, training attempts); the held-out tasks are split into
a rollback part and a report part (`heldout_parts`); the verifier loop of a co arm gets the family's
evolution view plus training attempts (`vx.ratchet.coevolve`).

**When the LLM budget runs out** (or a call fails for good) the run stops at the last whole round: the round
in progress is not recorded (a round is all or nothing), every committed round, the figures so far and the
status ``stopped`` are; the replies already paid for are in the LLM cache, so ``--resume`` (with a larger
budget) replays them for nothing and continues exactly where the run stopped. `RatchetResult.stopped` says
why and `RatchetResult.budget_spent` whether it was the budget.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vx.ratchet.config import CO_ARMS, RatchetConfig, RatchetError
from vx.ratchet.figures import figures as compute_figures
from vx.ratchet.graders import Grader, ground_truth_for
from vx.ratchet.loop import Arm, ArmStopped, Context, Parts, stopped_by
from vx.ratchet.roles import RUBRICS, FinalJudge, SkillSynthesizer, Solver, send_many
from vx.ratchet.routing import Router
from vx.ratchet.skills import MAX_LESSON
from vx.ratchet.store import RatchetStore
from vx.ratchet.tasks import adapter_for

__all__ = ["RatchetResult", "default_run_path", "heldout_parts", "plan", "run_ratchet", "split_tasks"]


@attrs.frozen
class RatchetResult:
    run_path: str
    figures: Mapping[str, Any]
    stopped: str | None = None  # why the run stopped early (budget, a failed call), if it did
    budget_spent: bool = False  # it stopped because the LLM budget ran out (resume with a larger one)
    demo: bool = False  # every role was the family's scripted demo, not a model
    usage: Mapping[str, Any] | None = None  # the run's LLM usage (calls, cache hits, tokens, cost)


def default_run_path(family: Any, runs_dir: str | Path = "runs", *, demo: bool = False) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    kind = "ratchet-demo" if demo else "ratchet"
    base = Path(runs_dir) / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', family.name)}-{kind}-{stamp}"
    path = Path(f"{base}.vxratchet.sqlite")
    n = 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}.vxratchet.sqlite")
    return path


def _family(family: Any) -> Any:
    from vx.families.family import Family

    return family if isinstance(family, Family) else Family.load(family)


def split_tasks(fam: Any) -> tuple[list[str], list[str]]:
    """(training tasks of the skill loop, held-out tasks): the train split's and the locked split's tasks."""
    train = sorted({it.task for it in fam.split("train").items})
    held = sorted({it.task for it in fam.audit().split.items})
    dev = {it.task for it in fam.split("dev").items}
    overlap = set(train) & set(held)
    if overlap:
        raise RatchetError(
            f"family {fam.name}: tasks {', '.join(sorted(overlap)[:5])} are in both the train and the "
            "locked split; the skill loop needs them disjoint by task (rebuild the family)"
        )
    train = [t for t in train if t not in dev]
    if not train or not held:
        raise RatchetError(f"family {fam.name} needs training tasks (train split) and held-out tasks (locked split)")
    return train, held


def heldout_parts(held: Sequence[str], config: RatchetConfig) -> Parts:
    """The held-out tasks' rollback part and report part: under the two-part protocol a seeded (``seed``),
    disjoint split with ``rollback_share`` of the tasks (at least one in each part) in the rollback part;
    under the papers' protocol both parts are every held-out task."""
    held = sorted(held)
    if config.protocol == "papers":
        return Parts("papers", tuple(held), tuple(held))
    if len(held) < 2:
        raise RatchetError(
            f"the two-part protocol needs at least two held-out tasks (the family has {len(held)}); "
            "use the papers' protocol (--papers-protocol) on a family this small"
        )
    order = np.random.default_rng([config.seed, 4099]).permutation(len(held)).tolist()
    k = min(len(held) - 1, max(1, int(round(config.rollback_share * len(held)))))
    return Parts("two-part", tuple(sorted(held[i] for i in order[:k])), tuple(sorted(held[i] for i in order[k:])))


def _version() -> str:
    try:
        from vx import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "?"


NO_KEY = (
    "vx ratchet needs the LLM roles solver, skill_synthesizer and final_judge, and ANTHROPIC_API_KEY is not "
    "set: set it (export ANTHROPIC_API_KEY=…) and run again; --dry-run shows the calls and the worst-case "
    "cost without a key, and --demo runs a scripted solver offline"
)


ROLE_SETTINGS = ("model", "max_tokens", "temperature")


def resumed_roles(recorded: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """A resumed run keeps its roles' models, max_tokens and temperatures (the frozen solver must stay the
    same solver, and cached replies must keep answering): the recorded ones, over the configuration; an
    override that changes one is refused. Budgets and limits may change (a larger --llm-budget)."""
    out = dict(overrides or {})
    for role, settings in (recorded.get("roles") or {}).items():
        for key in ROLE_SETTINGS:
            if key not in (settings or {}):
                continue
            name = f"{role}.{key}"
            if name in out and out[name] != settings[key]:
                raise RatchetError(
                    f"this run's {role} is {key} {settings[key]!r}; a resumed run keeps its roles "
                    f"(not {out[name]!r}): start a new run to change them"
                )
            out[name] = settings[key]
    return out


def _session(
    fam: Any,
    llm: Any,
    overrides: Mapping[str, Any] | None,
    factory: Callable | None,
    run_id: str | None,
    say: Callable[[str], None],
) -> tuple[Any, bool]:
    """(the LLM session, whether this run owns it)."""
    from vx.evolve.roles.session import LLMSession, start_session
    from vx.llm.client import LLMUnavailable

    if isinstance(llm, LLMSession):
        return llm, False
    if llm is False:
        raise RatchetError(
            "vx ratchet cannot run with LLM roles off (llm=False): its solver, skill synthesizer and "
            "final judge are LLM roles; demo=True runs a scripted solver offline"
        )
    try:
        session = start_session(fam, mode=True, overrides=overrides, say=say, run_id=run_id, factory=factory)
    except LLMUnavailable as exc:
        raise RatchetError(NO_KEY if "API key" in str(exc) else str(exc)) from None
    return session, True


def run_ratchet(
    family: Any = None,
    *,
    config: RatchetConfig | None = None,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    llm: Any = None,
    llm_overrides: Mapping[str, Any] | None = None,
    llm_factory: Callable | None = None,
    client: Any = None,
    demo: bool = False,
    truth: Grader | None = None,
    data_dir: str | Path | None = None,
    verifier_roles: Callable[[Any], Mapping[str, Any]] | None = None,
    verdict_cache: Any = None,
    say: Callable[[str], None] | None = None,
    on_round: Callable[[dict[str, Any]], None] | None = None,
) -> RatchetResult:
    """Run (or resume) every arm of `config` on `family`, then the final pairwise judge (see the module
    docstring for `llm`, `client` and `demo`)."""
    say = say or (lambda m: None)
    store: RatchetStore | None = None
    llm_run_id = None
    if resume is not None:
        store = RatchetStore(resume)
        config, fam, demo, llm_run_id, llm_overrides = _resumed(store, resume, family, llm_overrides)
        path = store.path
    else:
        config = config or RatchetConfig()
        fam = _family(family)
        path = Path(out) if out is not None else default_run_path(fam, demo=demo)
        if path.exists():
            raise RatchetError(f"{path} already exists; choose another --out or continue it with --resume {path}")
    session, owns = None, False
    try:
        train, held = split_tasks(fam)
        parts = heldout_parts(held, config)
        if store is not None and store.parts() != parts.as_dict():
            raise RatchetError(
                f"{path}: the family's held-out tasks are not those the run was started with "
                "(its locked split changed); start a new run"
            )
        adapter = adapter_for(fam)
        if truth is None:
            truth = ground_truth_for(fam, data_dir=data_dir)
        if demo:
            from vx.ratchet.demo import demo_client

            client, demo_solver = demo_client(fam, adapter, truth, path)
            verifier_roles = None
        elif client is None:
            session, owns = _session(fam, llm, llm_overrides, llm_factory, llm_run_id, say)
            client = session.client()
            if hasattr(client, "on_retry"):
                client.on_retry = say  # a retry is said, not waited through in silence
            if verifier_roles is None:
                from vx.evolve.roles.session import engine_roles

                verifier_roles = lambda econf: engine_roles(session, econf)  # noqa: E731
        fixed = None
        if "verifier" in config.arms and config.verifier:  # the config refuses the arm without its file
            from vx.verifier import Verifier

            fixed = Verifier.load(config.verifier, fam)
        if store is None:
            store = RatchetStore(path, create=True)
            store.set_meta(_new_run_meta(fam, config, truth, parts, adapter, client, demo_solver if demo else None))
        ctx = _context(
            fam,
            config,
            store,
            client,
            adapter,
            truth,
            train,
            parts,
            verdict_cache=verdict_cache,
            say=say,
            on_round=on_round,
            verifier_roles=verifier_roles,
            fixed_verifier=fixed,
        )
        stop, where = _run_arms(ctx)
        stopped = f"{where}: {stop}" if stop is not None else None
        fig = compute_figures(store, config.final_rounds)
        store.write_summary(fig)
        store.set_meta({"status": "stopped" if stopped else "finished", "stopped": stopped or ""})
        usage = client.usage() if hasattr(client, "usage") else None
        if usage is not None:
            store.set_meta({"llm_usage": usage})
        return RatchetResult(str(store.path), fig, stopped, bool(stop is not None and stop.budget), demo, usage)
    finally:
        if store is not None:
            store.close()
        if session is not None and owns:
            session.close()


def _resumed(
    store: RatchetStore, resume: str | Path, family: Any, llm_overrides: Mapping[str, Any] | None
) -> tuple[RatchetConfig, Any, bool, str | None, Mapping[str, Any] | None]:
    """What a resumed run continues with, from its file: the configuration, the family (`family`, or the
    directory the run names, which must be the same family), whether it is the scripted demo, the LLM run id
    and the roles' models. On any error the run file is closed."""
    try:
        meta = store.meta()
        config = RatchetConfig.from_dict(meta["config"])
        fam = _family(family or meta["family_dir"])
        if fam.name != meta.get("family"):
            raise RatchetError(f"{resume} is a run of family {meta.get('family')!r}, not {fam.name!r}")
        llm_run_id = (meta.get("llm") or {}).get("run") or None
        return config, fam, bool(meta.get("demo")), llm_run_id, resumed_roles(meta.get("llm") or {}, llm_overrides)
    except BaseException:
        store.close()
        raise


def _context(
    fam: Any,
    config: RatchetConfig,
    store: RatchetStore,
    client: Any,
    adapter: Any,
    truth: Grader,
    train: list[str],
    parts: Any,
    *,
    verdict_cache: Any,
    say: Callable[[str], None],
    on_round: Callable[[dict[str, Any]], None] | None,
    verifier_roles: Callable[[Any], Mapping[str, Any]] | None,
    fixed_verifier: Any,
) -> Context:
    """What every arm works with: the family, the run file, the solver over `client`, the skill synthesizer,
    the ground truth, and the router that finds each held-out task's nearest train tasks."""
    task_text = {t: adapter.render(fam.tasks[t]) for t in train + parts.tasks}
    router = Router(
        [task_text[t] for t in train],
        k=config.route_k,
        min_similarity=config.route_min_similarity,
        general_score=config.general_score,
    )
    solver = Solver(
        client, adapter, batch=config.batch, poll_seconds=config.poll_seconds, max_wait=config.max_wait, say=say
    )
    return Context(
        family=fam,
        config=config,
        store=store,
        client=client,
        solver=solver,
        synthesizer=SkillSynthesizer(client, adapter, fam.name, n=config.new_skills),
        truth=truth,
        router=router,
        train_tasks=train,
        parts=parts,
        task_text=task_text,
        verdict_cache=verdict_cache,
        say=say,
        on_round=on_round or (lambda row: None),
        verifier_roles=verifier_roles,
        fixed_verifier=fixed_verifier,
    )


def _new_run_meta(
    fam: Any, config: RatchetConfig, truth: Grader, parts: Any, adapter: Any, client: Any, demo_solver: str | None
) -> dict[str, Any]:
    """What a new run file records first: the family, the configuration, the ground truth, the held-out
    parts, the solver's side of the family and the LLM setup (or the scripted demo's: `demo_solver` describes
    its solver)."""
    return {
        "family": fam.name,
        "family_dir": str(fam.dir),
        "config": config.as_dict(),
        "vx_version": _version(),
        "status": "running",
        "ground_truth": truth.describe(),
        "heldout": parts.as_dict(),
        "adapter": adapter.source,
        "contract": adapter.contract,
        "demo": ({"scripted": True, "solver": demo_solver} if demo_solver is not None else False),
        "llm": {
            "run": getattr(client, "run_id", ""),
            **({k: v for k, v in client.config.as_dict().items() if k != "cache"} if hasattr(client, "config") else {}),
        },
    }


def _run_arms(ctx: Context) -> tuple[ArmStopped | None, str]:
    """Every arm in turn, then the final judge; the stop that ended the run early (a spent budget, a failed
    call) and where it happened, or (None, "")."""
    for arm in ctx.config.arms:
        try:
            Arm(ctx, arm).run()
        except ArmStopped as exc:
            last = ctx.store.last_round(arm)
            return exc, f"{arm} round {(last['round'] + 1) if last else 0}"
    if ctx.config.judge:
        try:
            final_judge(ctx)
        except ArmStopped as exc:
            return exc, "the final judge"
    return None, ""


# ------------------------------------------------------------------------------------------------
# the final pairwise judge


def _compared_rounds(store: RatchetStore, arm: str, against: str) -> int | None:
    rounds = store.rounds(arm)
    if len(rounds) < 2:
        return None
    if against == "final":
        return int(rounds[-1]["bank_round"])
    best = max(rounds[1:], key=lambda r: (r["report_score"], -r["round"]))
    return int(best["bank_round"])


def final_judge(ctx: Context) -> None:
    """Judge each arm's final (and/or peak, by the report curve) outputs on the report part against its
    round-0 outputs, both orders, both rubrics; identical outputs are a tie without a call. Pairs already
    judged are kept (resume)."""
    from vx.llm.client import LLMError

    store, cfg = ctx.store, ctx.config
    judge = FinalJudge(ctx.client, ctx.solver.adapter)
    done = {(j["arm"], j["against"], j["rubric"], j["task"]) for j in store.judge()}
    for arm in cfg.arms:
        if arm == "frozen":
            continue
        old = {a["task"]: a for a in store.attempts(arm, kind="heldout", round_=0)}
        for against in cfg.judge_against:
            new_round = _compared_rounds(store, arm, against)
            if new_round is None:
                continue
            new = {a["task"]: a for a in store.attempts(arm, kind="heldout", round_=new_round)}
            todo, requests, rows = [], [], []
            for rubric in RUBRICS:
                for task in ctx.parts.report:
                    if (arm, against, rubric, task) in done or task not in old or task not in new:
                        continue
                    base = {
                        "arm": arm,
                        "against": against,
                        "rubric": rubric,
                        "task": task,
                        "old_round": 0,
                        "new_round": new_round,
                    }
                    if old[task]["output"] == new[task]["output"] or new_round == 0:
                        rows.append(
                            {
                                **base,
                                "first": "tie",
                                "second": "tie",
                                "outcome": "tie",
                                "raw_first": "(identical outputs: not sent)",
                                "raw_second": "",
                            }
                        )
                        continue
                    todo.append(base)
                    requests += judge.pair_requests(
                        rubric, ctx.family.tasks[task], old[task]["output"], new[task]["output"]
                    )
            try:
                replies = send_many(
                    ctx.client,
                    "final_judge",
                    requests,
                    batch=cfg.batch,
                    poll_seconds=cfg.poll_seconds,
                    max_wait=cfg.max_wait,
                    say=ctx.say,
                )
            except LLMError as exc:
                store.write_judge(rows)
                raise stopped_by(exc) from None
            for k, base in enumerate(todo):
                r1, r2 = replies[2 * k].text, replies[2 * k + 1].text
                p1, p2, outcome = FinalJudge.outcome(r1, r2)
                rows.append({**base, "first": p1, "second": p2, "outcome": outcome, "raw_first": r1, "raw_second": r2})
            store.write_judge(rows)


# ------------------------------------------------------------------------------------------------
# the cost before anything is sent


def plan(family: Any, config: RatchetConfig, llm_config: Any, *, verifier_llm: bool = False) -> dict[str, Any]:
    """Calls of every LLM role per arm and the worst-case USD (every call a cache miss, every reply as long as
    the role's max_tokens, prompts at their longest), from the family's real task texts.

    `verifier_llm`: the co arms' verifier loops use the LLM composer and op synthesizer (a key is set)."""
    from vx.llm.batch import BATCH_DISCOUNT

    fam = _family(family)
    train, held = split_tasks(fam)
    parts = heldout_parts(held, config)
    adapter = adapter_for(fam)
    texts = [adapter.render(fam.tasks[t]) for t in train + held]
    longest = max(len(t) for t in texts)
    lesson = MAX_LESSON + 80
    roles = llm_config.roles
    out_chars = 4 * roles["solver"].max_tokens
    est = {
        "solver": len(adapter.system) + longest + config.route_k * lesson + 120,
        "skill_synthesizer": 2600
        + config.capacity * lesson
        + 40 * config.capacity
        + config.max_capsules * (1500 + min(out_chars, 2500) + 6 * 420)
        + config.practice * 2000,
        "final_judge": 1200 + len(adapter.contract) + min(longest, 6000) + 2 * min(out_chars, 12000),
        "composer": 20000,
        "synthesizer": 12000,
        "judge": 600 + longest + out_chars,
    }
    judge_ops = [o for o in fam.pool() if o.uses_llm and o.status != "retired"]
    n_items = len(fam.split("train")) + len(fam.split("dev")) + len(fam.audit())
    rows: list[dict[str, Any]] = []
    total = 0.0
    for arm in config.arms:
        rounds = config.total_skill_rounds
        calls: dict[str, int] = {"solver": len(held) * (rounds + 1)}
        if arm != "frozen":
            calls["solver"] += config.batch_size * rounds
            calls["skill_synthesizer"] = rounds
            if config.judge:
                calls["final_judge"] = len(parts.report) * 2 * len(RUBRICS) * len(config.judge_against)
        if arm in CO_ARMS:
            vr = sum(config.verifier_rounds)
            if verifier_llm:
                calls["composer"] = vr
                calls["synthesizer"] = vr * 4
            if judge_ops:
                calls["judge"] = len(judge_ops) * (n_items + config.batch_size * rounds)
        if arm == "verifier" and judge_ops:
            calls["judge"] = len(judge_ops) * config.batch_size * rounds
        usd = 0.0
        per_role = {}
        for role, n in calls.items():
            rc = roles[role]
            one = llm_config.price(rc.model).cost(est[role] // 3 + 16, rc.max_tokens)
            if config.batch and role in ("solver", "final_judge"):
                one *= BATCH_DISCOUNT
            per_role[role] = {"calls": n, "model": rc.model, "worst_usd": round(n * one, 4)}
            usd += n * one
        rows.append({"arm": arm, "roles": per_role, "worst_usd": round(usd, 4)})
        total += usd
    return {
        "family": fam.name,
        "train_tasks": len(train),
        "heldout_tasks": len(held),
        "protocol": parts.protocol,
        "rollback_tasks": len(parts.rollback),
        "report_tasks": len(parts.report),
        "skill_rounds": config.total_skill_rounds,
        "arms": rows,
        "worst_usd": round(total, 4),
        "budget_usd": llm_config.budget_usd,
        "note": "worst case: every call a cache miss and every reply max_tokens long; cached prompts are free",
    }
