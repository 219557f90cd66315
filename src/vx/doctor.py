"""Which LLM roles are configured, and whether their models are reachable — without spending tokens.

Reachability is probed with the Models API (``GET /v1/models/{id}``), which is free: one request per
distinct model of the role table. With no key, nothing is sent and every role reports "off".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vx.llm.config import KEY_ENV_VARS, OFF_MESSAGE, LLMConfig, has_credentials


@attrs.frozen
class RoleStatus:
    role: str
    model: str
    max_tokens: int
    temperature: float
    source: str  # where the model id was set ("default" when built in)
    state: str  # "off" | "reachable" | "unreachable" | "not probed"
    detail: str = ""

    @property
    def ok(self) -> bool | None:
        """True reachable, False a problem, None off / not probed."""
        return {"reachable": True, "unreachable": False}.get(self.state)

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def probe_model(sdk: Any, model: str) -> tuple[bool, str]:
    """Ask the Models API about `model` (free). Returns (reachable, detail)."""
    import anthropic

    try:
        info = sdk.models.retrieve(model)
    except anthropic.NotFoundError:
        return False, f"unknown model id {model!r} (change it in the LLM configuration)"
    except anthropic.AuthenticationError:
        return False, "the API rejected the key (check ANTHROPIC_API_KEY)"
    except anthropic.PermissionDeniedError:
        return False, f"the key may not use {model!r}"
    except anthropic.APIStatusError as exc:
        return False, f"HTTP {exc.status_code} from the API"
    except anthropic.APIConnectionError as exc:
        return False, f"cannot reach the API ({type(exc).__name__})"
    name = getattr(info, "display_name", "") or ""
    return True, name


def role_status(config: LLMConfig, *, probe: bool = True, sdk: Any = None,
                env: Mapping[str, str] | None = None) -> list[RoleStatus]:
    """One status per role. `probe=False` only reports the configuration (no request at all)."""
    keyed = has_credentials(env) or sdk is not None
    results: dict[str, tuple[bool, str]] = {}
    if keyed and probe:
        if sdk is None:
            try:
                from vx.llm.client import make_sdk_client

                sdk = make_sdk_client(config)
            except Exception as exc:  # anthropic missing, or no key after all
                results = {m: (False, str(exc)) for m in {rc.model for rc in config.roles.values()}}
        if sdk is not None:
            for model in sorted({rc.model for rc in config.roles.values()}):
                results[model] = probe_model(sdk, model)
    out = []
    for role, rc in config.roles.items():
        source = config.sources.get(f"{role}.model", "default")
        if not keyed:
            state, detail = "off", f"no key ({' / '.join(KEY_ENV_VARS)} unset)"
        elif not probe:
            state, detail = "not probed", ""
        else:
            ok, detail = results[rc.model]
            state = "reachable" if ok else "unreachable"
        out.append(RoleStatus(role, rc.model, rc.max_tokens, rc.temperature, source, state, detail))
    return out


def summary_line(statuses: list[RoleStatus]) -> tuple[bool | None, str]:
    """One line for `vx doctor`: (ok, text). ok is None when roles are simply off."""
    if all(s.state == "off" for s in statuses):
        return None, OFF_MESSAGE
    bad = [s for s in statuses if s.ok is False]
    if bad:
        return False, "; ".join(f"{s.role} ({s.model}): {s.detail}" for s in bad)
    models = sorted({s.model for s in statuses})
    verb = "reachable" if all(s.ok for s in statuses) else "configured"
    return True, f"{len(statuses)} roles {verb} on {len(models)} model(s): {', '.join(models)}"
