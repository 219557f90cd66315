"""Co-evolution's verifier phases: the metric loop, run between the skill phases of a co arm.

Verifier phase i continues one evolution run (``<run>.<arm>.verifier.vxrun.sqlite``, a normal `vx evolve`
run file that `vx report` draws) up to the cumulative number of verifier rounds of the schedule. The engine
receives what `vx evolve` gives it — the family's evolution view (unlabeled train, labeled dev) — with the
skill loop's **training** attempts so far added to its unlabeled train split (real solver outputs, which is
where candidate verifiers disagree). It never receives a held-out attempt, the ground truth, or a locked
label: the locked split reaches it only as the `LockedAuditor`'s numbers, written to its run file as an
audit and read by nothing. The best verifier then grades the next skill phase's training attempts.

The phase's verifier (expression and the typed specs of its synthesized ops) and its validity — agreement
with the locked split, measured by the auditor — are recorded in the ratchet run file, so a resumed run
rebuilds the grader without rerunning the phase.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import attrs

from vx.ratchet.config import RatchetError
from vx.ratchet.graders import VerifierGrader


def verifier_run_path(ratchet_path: str | Path, arm: str) -> Path:
    p = Path(ratchet_path)
    stem = p.name.removesuffix(".vxratchet.sqlite").removesuffix(".sqlite")
    return p.with_name(f"{stem}.{arm}.verifier.vxrun.sqlite")


def build_verifier(family: Any, expression: str, specs: list[dict[str, Any]]) -> Any:
    """A Verifier from an expression and the typed specs of the synthesized ops it uses."""
    from vx.ops.specs import op_from_spec
    from vx.verifier import Verifier

    pool = family.pool()
    for spec in specs:
        o = op_from_spec(spec, provenance={"origin": "synthesized"})
        if o.name not in pool:
            pool.add(o)
    return Verifier(expression, pool, family.tasks, family=family)


def verifier_phase(ctx: Any, arm: str, phase: int) -> VerifierGrader:
    """Run (or reload) verifier phase `phase` of `arm`; returns the grader of the following skill phase."""
    cfg = ctx.config
    done = {p["phase"]: p for p in ctx.store.phases(arm)}
    if phase in done:
        row = done[phase]
        v = build_verifier(ctx.family, row["verifier"], row["specs"])
        return VerifierGrader(v, cache=ctx.verdict_cache, jobs=cfg.jobs, timeout=cfg.timeout)

    from vx.evolve.audit import LockedAuditor
    from vx.evolve.config import EvolveConfig
    from vx.evolve.loop import Evolution
    from vx.evolve.store import FORMAT, RunStore

    fam = ctx.family
    total = sum(cfg.verifier_rounds[: phase + 1])
    first = cfg.first_round_of_phase(phase)
    view = _evolution_view(ctx, arm, first)
    path = verifier_run_path(ctx.store.path, arm)
    econf = EvolveConfig(
        rounds=total, seed=cfg.seed, ablation="naive" if arm == "naive" else None, jobs=cfg.jobs, timeout=cfg.timeout
    )
    if fam.seed_text is None:
        raise RatchetError(f"{fam.seed_path}: co-evolution starts from the family's seed verifier; write one there")
    fresh = not path.exists()
    store = RunStore(path, create=fresh)
    try:
        store.set_meta(
            {
                "format": FORMAT,
                "family": fam.name,
                "family_dir": str(fam.dir),
                "config": econf.as_dict(),
                "seed_text": fam.seed_text,
                "objective_constants": dict(fam.objective),
                "ratchet_run": str(ctx.store.path),
                "ratchet_arm": arm,
            }
        )
        pool = view.pool()
        seed = fam.seed(pool.names)
        auditor = LockedAuditor(
            fam.audit(),
            fam.tasks,
            cache=ctx.verdict_cache,
            jobs=cfg.jobs,
            timeout=cfg.timeout,
            fail_weight=float(fam.objective.get("fail_weight", 2.0)),
        )
        roles = dict(ctx.verifier_roles(econf)) if ctx.verifier_roles is not None else {}
        ctx.say(
            f"{arm}: verifier phase {phase + 1} (to round {total}) on {len(view.train)} train + "
            f"{len(view.dev)} dev items"
        )
        t0 = time.perf_counter()
        engine = Evolution(
            view,
            seed,
            store=store,
            config=econf,
            auditor=auditor,
            cache=ctx.verdict_cache,
            composers=roles.get("composers"),
            synthesizers=roles.get("synthesizers"),
        )
        result = engine.run()
        used = [n for n in result.best.op_names() if n in engine.specs]
        specs = [{**engine.specs[n], "name": n} for n in used]
        validity = dict(auditor(result.best, engine.pool))
        validity.update(
            {
                "objective": result.best_score.objective,
                "a_dev": result.best_score.a_dev,
                "a_train": result.best_score.a_train,
            }
        )
        ctx.say(f"{arm}: verifier phase {phase + 1} done in {time.perf_counter() - t0:.1f}s: {result.best_text}")
        _write_vx(path, result, fam.name, engine)
        text = result.best_text
    finally:
        store.close()
    ctx.store.write_phase(
        {
            "arm": arm,
            "phase": phase,
            "rounds": cfg.verifier_rounds[phase],
            "total_rounds": total,
            "first_skill_round": first,
            "verifier": text,
            "specs": specs,
            "validity": validity,
            "run_file": path.name,
        }
    )
    v = build_verifier(fam, text, specs)
    return VerifierGrader(v, cache=ctx.verdict_cache, jobs=cfg.jobs, timeout=cfg.timeout)


def _evolution_view(ctx: Any, arm: str, first: int) -> Any:
    """The family's evolution view; with ``verifier_sees_attempts`` its train split also holds the arm's
    train attempts of the skill rounds before `first` (unlabeled, as every train item)."""
    from vx.families.family import Split
    from vx.ops.item import Item

    view = ctx.family.evolution_view()
    if ctx.config.verifier_sees_attempts:
        extra = tuple(
            Item(f"{arm}:r{a['round']}:{a['task']}", a["task"], a["output"])
            for a in ctx.store.attempts(arm, kind="train")
            if a["round"] < first
        )
        view = attrs.evolve(view, train=Split("train", tuple(view.train.items) + extra, view.train.path))
    return view


def _write_vx(path: Path, result: Any, family: str, engine: Any) -> None:
    """The phase's evolved verifier as a .vx file beside its run file; a convenience (the run file has
    everything), so a failure to write it is passed over."""
    try:
        from vx.evolve.run import write_vx

        write_vx(
            path.with_name(path.name.removesuffix(".vxrun.sqlite") + ".vx"),
            result,
            family=family,
            pool=engine.pool,
            specs=engine.specs,
        )
    except Exception:  # the .vx file is a convenience; the run file has everything
        pass
