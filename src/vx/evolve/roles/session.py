"""Turning LLM roles on for a run: configuration, activation, the role objects, the usage record.

`vx.evolve.run.evolve_family(..., llm=...)` calls `start_session(family, mode=...)` once (so the
Python API does everything `vx evolve` does):

* ``mode=False`` (``--no-llm``): roles stay off (judge ops abstain even with a key), nothing is said;
* ``mode=None`` (the default): roles are on when a key is in the environment; otherwise the run goes
  on exactly as without LLM support and "LLM roles are off: …" is said once;
* ``mode=True`` (``--llm``): roles must be on; with no key this is an `LLMUnavailable` error.

The session hands out the LLM composer and synthesizer (to add to the engine's lists), and
`usage()` — the run's calls, cache hits, tokens and cost — for the run file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vx.llm import client as llm_client
from vx.llm.config import OFF_MESSAGE, LLMConfig, has_credentials, load_config

#: How a run that requires LLM roles but has no key is refused (the CLI names its flag instead).
REQUIRED_NO_KEY = "LLM roles are required but no API key is set"


@attrs.define
class LLMSession:
    config: LLMConfig
    run_id: str
    say: Callable[[str], None] | None = None

    def client(self) -> llm_client.LLMClient | None:
        return llm_client.active_client()

    def composer(self, **kw: Any) -> Any:
        from vx.evolve.roles.composer import LLMComposer

        return LLMComposer(llm_client.active_client, say=self.say, **kw)

    def synthesizer(self, **kw: Any) -> Any:
        from vx.evolve.roles.synthesizer import LLMSynthesizer

        return LLMSynthesizer(llm_client.active_client, say=self.say, **kw)

    def usage(self) -> dict[str, Any]:
        """The run's usage (every process): API calls, cache hits, errors, tokens, cost, by role and model."""
        c = llm_client.active_client()
        return c.usage() if c is not None else {"run": self.run_id, "api_calls": 0, "cache_hits": 0}

    def describe(self) -> dict[str, Any]:
        """What the run file stores about the LLM setup (models and limits; never a key)."""
        return {"run": self.run_id, **self.config.as_dict()}

    def close(self) -> None:
        llm_client.deactivate()


def start_session(
    family: Any = None,
    *,
    mode: bool | None = None,
    overrides: Mapping[str, Any] | None = None,
    say: Callable[[str], None] | None = None,
    run_id: str | None = None,
    factory: Callable[[LLMConfig, str], Any] | None = None,
) -> LLMSession | None:
    """Resolve the configuration (family.toml [llm], user file, env, `overrides`) and turn roles on.

    Returns None when roles are off. `factory(config, run_id)` builds clients (tests use a fake API)."""
    if mode is False:
        llm_client.disable()
        return None
    family_llm = getattr(family, "llm_config", None) or {}
    family_path = (family.dir / "family.toml") if getattr(family, "dir", None) is not None else None
    config = load_config(family_llm, family_path=family_path, overrides=overrides)
    if factory is None and not has_credentials():
        llm_client.disable()
        if mode is True:
            raise llm_client.LLMUnavailable(OFF_MESSAGE.replace("LLM roles are off", REQUIRED_NO_KEY))
        if say is not None:
            llm_client.notice_off_once(say)
        return None
    if factory is None:
        import importlib.util

        if importlib.util.find_spec("anthropic") is None:
            raise llm_client.LLMUnavailable("LLM roles need the anthropic package: pip install 'vx-verifiers[llm]'")
    rid = llm_client.activate(config, run_id=run_id, factory=factory)
    return LLMSession(config, rid, say)


def engine_roles(session: LLMSession | None, cfg: Any) -> dict[str, Any]:
    """The engine's composers and synthesizers: its offline defaults plus the LLM ones (with roles
    off: ``None``, meaning the engine's own defaults)."""
    from vx.evolve.compose import EnumerativeComposer, EvolutionaryComposer
    from vx.evolve.synthesize import TemplateSynthesizer

    if session is None:
        return {"composers": None, "synthesizers": None}
    composers = [
        EnumerativeComposer(cfg.enum_max_size, cfg.enum_budget),
        EvolutionaryComposer(cfg.mutations_per_elite, cfg.crossovers, cfg.max_leaves),
    ]
    synthesizers = [TemplateSynthesizer(per_cluster=cfg.synth_per_cluster)]
    return {"composers": composers + [session.composer()], "synthesizers": synthesizers + [session.synthesizer()]}


def run_teacher(session: LLMSession, family: Any) -> dict[str, Any]:
    """The teacher's part in a run: soft labels for the dev items (against their golden references),
    stored with the family as teacher_labels.jsonl, and where they disagree with the dev labels.
    Evolution never reads these (its labels are the family's); they tell a person how far the anchor
    can be trusted."""
    from vx.evolve.roles.teacher import teach_family

    try:
        path, records, agree = teach_family(session.client(), family, "dev")
    except llm_client.LLMError as exc:
        return {"error": str(exc)}
    labels = {it.id: it.label for it in family.split("dev").items}
    disagree = [
        r["id"]
        for r in records
        if r.get("label") is not None
        and labels.get(r["id"]) is not None
        and (r["label"] >= 0.5) != (labels[r["id"]] >= 0.5)
    ]
    return {
        "path": str(path),
        "labelled": sum(1 for r in records if r.get("label") is not None),
        "items": len(records),
        "agreement": agree,
        "disagreements": disagree,
    }


def record_llm(
    session: LLMSession, roles: Mapping[str, Any], store: Any, family: Any | None = None, *, teach: bool = True
) -> dict[str, Any]:
    """After a run: the teacher's dev labels (unless `teach` is False or no family is given), then the
    LLM setup, usage and the composer/synthesizer/teacher reports into the (open) run store.
    Returns the usage."""
    report: dict[str, Any] = {}
    if teach and family is not None:
        report["llm_teacher"] = teacher = run_teacher(session, family)
        if session.say is not None and "agreement" in teacher:
            a = teacher["agreement"]
            session.say(
                f"teacher: {teacher['labelled']}/{teacher['items']} dev items labelled against their "
                f"references ({teacher['path']}); agrees with {a['agree']}/{a['compared']} dev labels"
                + (f"; disagrees on {', '.join(teacher['disagreements'])}" if teacher["disagreements"] else "")
            )
    usage = session.usage()
    report.update({"llm": session.describe(), "llm_usage": usage})
    for kind in ("composers", "synthesizers"):
        for role in roles.get(kind) or []:
            if hasattr(role, "history") and getattr(role, "name", "") == "llm":
                report[f"llm_{kind[:-1]}"] = {"history": role.history, "stopped": role.stopped}
    store.set_meta(report)
    return usage
