"""Turning LLM roles on for a run: configuration, activation, the role objects, the usage record.

The evolution command calls `start_session(family, mode=...)` once:

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


def start_session(family: Any = None, *, mode: bool | None = None, overrides: Mapping[str, Any] | None = None,
                  say: Callable[[str], None] | None = None, run_id: str | None = None,
                  factory: Callable[[LLMConfig, str], Any] | None = None) -> LLMSession | None:
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
            raise llm_client.LLMUnavailable(OFF_MESSAGE.replace("LLM roles are off", "--llm needs an API key"))
        if say is not None:
            llm_client.notice_off_once(say)
        return None
    if factory is None:
        import importlib.util

        if importlib.util.find_spec("anthropic") is None:
            raise llm_client.LLMUnavailable("LLM roles need the anthropic package: pip install 'vx-verifiers[llm]'")
    rid = llm_client.activate(config, run_id=run_id, factory=factory)
    return LLMSession(config, rid, say)
