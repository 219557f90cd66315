"""The public entry point a person (or the CLI) calls: evolve a family's verifier end to end.

    >>> from vx.evolve import evolve_family, EvolveConfig
    >>> result = evolve_family("examples/humaneval", config=EvolveConfig(rounds=5, seed=1))
    >>> result.best_text, result.run_path

This module is where the family is split in two: the engine gets `family.evolution_view()` and
the seed expression; the locked split goes into a `LockedAuditor` that only returns numbers.
It also writes the evolved expression as a canonical `.vx` file; when that expression uses
synthesized ops, their typed specs go to a sidecar ``<name>.specs.json`` named in the header
(``; specs: <file>``), so the file stays reproducible.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.evolve.audit import LockedAuditor
from vx.evolve.compose import Composer
from vx.evolve.config import EvolutionError, EvolveConfig
from vx.evolve.estimates import header_estimates
from vx.evolve.loop import Evolution
from vx.evolve.record import EvolutionResult
from vx.evolve.store import FORMAT, RunStore
from vx.evolve.synthesize import Synthesizer
from vx.families.family import Family
from vx.ops.cache import VerdictCache
from vx.ops.pool import OpPool
from vx.ops.progress import Reporter

__all__ = ["evolve_family", "default_run_path", "write_vx", "load_pool_for_vx"]


def default_run_path(family: Family, runs_dir: str | Path = "runs") -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = Path(runs_dir) / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', family.name)}-{stamp}"
    path = base.with_suffix(".vxrun.sqlite")
    n = 1
    while path.exists():
        n += 1
        path = Path(f"{base}-{n}.vxrun.sqlite")
    return path


def evolve_family(
    family: str | Path | Family | None,
    *,
    config: EvolveConfig | None = None,
    out: str | Path | None = None,
    resume: str | Path | None = None,
    rounds: int | None = None,
    cache: VerdictCache | None = None,
    composers: Sequence[Composer] | None = None,
    synthesizers: Sequence[Synthesizer] | None = None,
    on_round: Callable[[dict[str, Any]], None] | None = None,
    on_status: Callable[[str], None] | None = None,
    progress: bool | Reporter = False,
    audit: bool = True,
    vx_out: str | Path | None = None,
    llm: bool | None | Any = None,
    llm_overrides: Mapping[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
    llm_factory: Callable | None = None,
    teach: bool = True,
    seed_from: str | Path | None = None,
) -> EvolutionResult:
    """Run (or resume) an evolution end to end -- everything `vx evolve` does; returns the result
    (with the whole round history and, with LLM roles on, their usage) and writes the run file and
    the `.vx`.

    LLM roles: ``llm=None`` turns them on when an API key is set (otherwise one notice goes to
    ``say``), ``True`` requires them (`LLMUnavailable` without a key), ``False`` keeps them off
    (judge ops abstain even with a key); an `LLMSession` already started is used as is (and not
    closed). With roles on, the LLM composer and synthesizer join the engine's own (unless
    ``composers`` / ``synthesizers`` are given), the teacher labels the dev items after the run
    (``teach``), and the LLM setup, usage and role reports go into the run file. A resumed run keeps
    its LLM run id, hence its budget and usage ledger. ``llm_factory`` builds clients (tests).

    ``seed_from``: a hand-written ``.vx`` file to start from instead of the family's seed (its ops must be
    ops of the family's pool; an unknown one is an error naming the nearest).
    """
    from vx.evolve.roles.session import LLMSession, engine_roles, record_llm, start_session

    config = config if config is not None else EvolveConfig()
    store: RunStore | None = None
    if resume is not None:
        store, config, fam, seed_text, llm_run_id = _resumed(resume, family, rounds)
    else:
        fam, path, seed_text = _new_run(family, out, seed_from)
        llm_run_id = None
    view = fam.evolution_view()
    seed = _seed(fam, view.pool(), seed_text, resume=resume, seed_from=seed_from)
    owns_session = not isinstance(llm, LLMSession)
    session: LLMSession | None = (
        start_session(fam, mode=llm, overrides=llm_overrides, say=say, run_id=llm_run_id, factory=llm_factory)
        if owns_session
        else cast(LLMSession, llm)
    )
    try:
        if store is None:
            store = _create_store(path, fam, config, seed_text)
        roles = engine_roles(session, config)
        if composers is not None:
            roles["composers"] = list(composers)
        if synthesizers is not None:
            roles["synthesizers"] = list(synthesizers)
        auditor = None
        if audit:
            auditor = LockedAuditor(
                fam.audit(),
                fam.tasks,
                cache=cache,
                jobs=config.jobs,
                timeout=config.timeout,
                fail_weight=float(fam.objective.get("fail_weight", 2.0)),
                progress=progress,
            )
        engine = Evolution(
            view,
            seed,
            store=store,
            config=config,
            auditor=auditor,
            composers=roles["composers"],
            synthesizers=roles["synthesizers"],
            cache=cache,
            on_round=on_round,
            on_status=on_status,
            progress=progress,
        )
        result = engine.run()
        target = Path(vx_out) if vx_out is not None else Path(str(store.path).removesuffix(".vxrun.sqlite") + ".vx")
        write_vx(target, result, family=fam.name, pool=engine.pool, specs=engine.specs)
        store.set_meta({"vx_file": str(target)})
        usage = record_llm(session, roles, store, fam, teach=teach) if session is not None else None
        history = tuple({**r, "pool_size": r["n_active"] + r["n_shadow"]} for r in store.rounds())
        return attrs.evolve(result, history=history, llm_usage=usage, vx_path=str(target))
    finally:
        if store is not None:
            store.close()
        if session is not None and owns_session:
            session.close()


def _resumed(
    resume: str | Path, family: str | Path | Family | None, rounds: int | None
) -> tuple[RunStore, EvolveConfig, Family, str, str | None]:
    """A run file to resume, checked (a damaged one is refused before anything is written to it): the
    store, the run's own config (``rounds`` may raise its rounds), its family, its seed text and its LLM
    run id."""
    with RunStore(resume) as checked:
        checked.check(finished=False, family_dir=family is None)
    store = RunStore(resume, upgrade=True, lock=True)  # one writer at a time
    meta = store.meta()
    if meta.get("format") != FORMAT:
        store.close()
        raise EvolutionError(f"{resume}: not a vx run file")
    config = EvolveConfig.from_dict(meta["config"])
    if rounds is not None:
        config = EvolveConfig.from_dict({**config.as_dict(), "rounds": rounds})
        store.set_meta({"config": config.as_dict()})
    fam = family if isinstance(family, Family) else Family.load(family or meta["family_dir"])
    if fam.name != meta.get("family"):
        store.close()
        raise EvolutionError(f"{resume} is a run of family {meta.get('family')!r}, not {fam.name!r}")
    try:
        llm_run_id = json.loads(meta.get("llm", "{}")).get("run")
    except (TypeError, ValueError, AttributeError):
        llm_run_id = None
    return store, config, fam, meta["seed_text"], llm_run_id


def _new_run(
    family: str | Path | Family | None, out: str | Path | None, seed_from: str | Path | None
) -> tuple[Family, Path, str]:
    """A new run's family, the run file to write (refused when it exists) and the seed text (the family's
    seed, or the hand-written ``seed_from``)."""
    if family is None:
        raise EvolutionError("name the family to evolve (or --resume a run file)")
    fam = family if isinstance(family, Family) else Family.load(family)
    path = Path(out) if out is not None else default_run_path(fam)
    if path.exists():
        raise EvolutionError(f"{path} already exists; choose another output file or resume it ({path})")
    if seed_from is not None:
        from vx.dsl.vxfile import read_text

        return fam, path, read_text(seed_from)
    if fam.seed_text is None:
        raise EvolutionError(
            f"{fam.seed_path}: the family has no seed expression; write one there (a .vx "
            "expression over the family's ops — `vx ops` lists them), e.g. "
            "(any crash fails_visible_example) for a code family"
        )
    return fam, path, fam.seed_text


def _create_store(path: Path, fam: Family, config: EvolveConfig, seed_text: str) -> RunStore:
    """A new run file, with what a resumed run reads back: the family, the config, the seed's text -- made
    whole and linked into place only if its name is free, and locked for the run (one writer at a time)."""
    return RunStore(
        path,
        create=True,
        lock=True,
        meta={
            "format": FORMAT,
            "family": fam.name,
            "family_dir": str(fam.dir),
            "config": config.as_dict(),
            "seed_text": seed_text,
            "objective_constants": dict(fam.objective),
            "vx_version": _version(),
        },
    )


def _seed(
    fam: Family, pool: OpPool, seed_text: str, *, resume: str | Path | None, seed_from: str | Path | None
) -> Node:
    """The seed expression over the pool; a syntax error or an unknown op (named with the nearest ops of the
    pool) is reported before any file is written."""
    from vx.dsl.parse import parse

    if resume is not None:
        return parse(seed_text, filename=f"{resume} (seed)", known_ops=pool.names)
    if seed_from is not None:
        return parse(seed_text, filename=str(seed_from), known_ops=pool.names)
    return fam.seed(pool.names)


def write_vx(
    path: str | Path, result: EvolutionResult, *, family: str, pool: OpPool, specs: Mapping[str, Mapping[str, Any]]
) -> Path:
    """The evolved expression as a canonical .vx file with header comments (and specs sidecar)."""
    from vx.dsl.vxfile import write_vx as write_file

    path = Path(path)
    s = result.best_score
    run_ref = os.path.relpath(Path(result.run_path).resolve(), path.parent.resolve())  # relative to the .vx
    header = {
        "family": family,
        "run": run_ref,
        "objective": f"{s.objective:.6f} (A_dev {s.a_dev:.4f}, A_train {s.a_train:.4f}, cost {s.cost:.4f})",
    }
    from vx.evolve.compose import normalize

    best = normalize(result.best)  # the simplest equivalent form: (wvote 1 a@1 b@3) is written (any a b)
    fa = result.summary.get("false_alarms") if isinstance(result.summary, dict) else None
    if fa:
        if not np.isnan(s.pass_recall):
            floor = fa.get("floor")
            header["pass_recall"] = f"{s.pass_recall:.4f} estimated on the train split's pass evidence" + (
                f" (floor {floor:.4f})" if floor is not None else ""
            )
        header["false_alarms"] = header_estimates([r for r in fa.get("ops", ()) if r["op"] in best.op_names()])
    used = [n for n in best.op_names() if n in specs]
    return write_file(path, best, header=header, specs=[{**specs[n], "name": n} for n in used])


def load_pool_for_vx(vx_path: str | Path, family: Family) -> OpPool:
    """The family's pool plus the synthesized ops a .vx file's ``; specs:`` header names."""
    from vx.verifier import pool_for_vx

    return pool_for_vx(vx_path, family)


def _version() -> str:
    try:
        from vx import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "?"
