"""The role-to-model table: which model each LLM role uses, and the run's limits.

Roles: ``solver`` (the frozen agent of the skill loop), ``teacher`` (dev soft labels against a golden
reference), ``composer`` (proposes expressions), ``synthesizer`` (authors typed op specs), ``judge``
(judge-tier ops), ``final_judge`` (the independent pairwise judge) and ``skill_synthesizer`` (writes the
skill loop's short named lessons from failure capsules; `vx.ratchet`). Each role has a model id, a
``max_tokens`` and a ``temperature``. Changing a model is configuration, never code.

Sources, each overriding the previous one:

1. built-in defaults (`DEFAULT_ROLES`);
2. the user's file ``$VX_LLM_CONFIG`` or ``~/.config/vx/llm.toml`` (``$XDG_CONFIG_HOME`` respected);
3. the family's ``family.toml`` ``[llm]`` table;
4. environment variables ``VX_LLM_<ROLE>_MODEL`` / ``_MAX_TOKENS`` / ``_TEMPERATURE`` and
   ``VX_LLM_BUDGET_USD``, ``VX_LLM_BUDGET_TOKENS``, ``VX_LLM_CONCURRENCY``, ``VX_LLM_CACHE``;
5. command-line overrides (``--llm-model ROLE=MODEL``, ``--llm-budget USD``).

Both files use the same keys (in the user file at top level, in family.toml under ``[llm]``)::

    budget_usd = 2.0            # stop the run's LLM calls once this much is spent
    budget_tokens = 2000000     # ... or this many tokens (input + output, cache reads included)
    concurrency = 4             # calls in flight at once, per process
    max_retries = 6             # on 429 / 529 / 5xx / timeouts, with exponential backoff and jitter
    timeout = 60.0              # seconds per HTTP request
    cache = "~/.cache/vx/llm.sqlite"
    [judge]                     # one table per role; any subset of the three keys
    model = "claude-haiku-4-5"
    max_tokens = 64
    temperature = 0.0
    [prices."my-model"]         # USD per million tokens, for models not in DEFAULT_PRICES
    input = 3.0
    output = 15.0

Credentials are never read from these files: the key comes from ``ANTHROPIC_API_KEY`` (or
``ANTHROPIC_AUTH_TOKEN``) in the environment only.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from vx.errors import VxError

ROLES = ("solver", "teacher", "composer", "synthesizer", "judge", "final_judge", "skill_synthesizer")
KEY_ENV_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class LLMConfigError(VxError):
    """A configuration value that cannot be used; the message names where it came from."""


@attrs.frozen
class RoleConfig:
    model: str
    max_tokens: int
    temperature: float

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "temperature": self.temperature}


@attrs.frozen
class Price:
    """USD per million tokens. Cache writes cost 1.25× input, cache reads 0.1× input."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int, cache_write: int = 0, cache_read: int = 0) -> float:
        return (
            input_tokens * self.input
            + output_tokens * self.output
            + cache_write * self.input * 1.25
            + cache_read * self.input * 0.1
        ) / 1e6


DEFAULT_ROLES: dict[str, RoleConfig] = {
    "solver": RoleConfig("claude-haiku-4-5", 2048, 0.0),
    "teacher": RoleConfig("claude-sonnet-4-6", 512, 0.0),
    "composer": RoleConfig("claude-sonnet-4-6", 2048, 0.7),
    "synthesizer": RoleConfig("claude-sonnet-4-6", 1024, 0.2),
    "judge": RoleConfig("claude-haiku-4-5", 200, 0.0),
    "final_judge": RoleConfig("claude-opus-4-6", 512, 0.0),
    "skill_synthesizer": RoleConfig("claude-sonnet-4-6", 1024, 0.2),
}

# Public list prices, USD per million tokens (input, output). Override or extend with [prices."model"].
DEFAULT_PRICES: dict[str, Price] = {
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-3-5-haiku-latest": Price(0.8, 4.0),
}
# A model with no known price is charged at this (deliberately high) rate, so a budget still binds.
UNKNOWN_PRICE = Price(15.0, 75.0)

_SCALARS: dict[str, type | tuple[type, ...]] = {
    "budget_usd": (int, float),
    "budget_tokens": int,
    "concurrency": int,
    "max_retries": int,
    "timeout": (int, float),
    "cache": str,
}
_ROLE_KEYS: dict[str, type | tuple[type, ...]] = {"model": str, "max_tokens": int, "temperature": (int, float)}


@attrs.frozen
class LLMConfig:
    """The resolved configuration: a role table, limits, the cache path and where each value came from."""

    roles: Mapping[str, RoleConfig] = attrs.field(factory=lambda: dict(DEFAULT_ROLES))
    budget_usd: float = 5.0
    budget_tokens: int = 5_000_000
    concurrency: int = 4
    max_retries: int = 6
    timeout: float = 60.0
    cache: Path = attrs.field(factory=lambda: default_cache_path())
    prices: Mapping[str, Price] = attrs.field(factory=lambda: dict(DEFAULT_PRICES))
    sources: Mapping[str, str] = attrs.field(factory=dict, eq=False)  # "judge.model" -> where it was set

    def role(self, name: str) -> RoleConfig:
        if name not in self.roles:
            raise LLMConfigError(f"unknown LLM role {name!r}; roles are {', '.join(ROLES)}")
        return self.roles[name]

    def price(self, model: str) -> Price:
        return self.prices.get(model, UNKNOWN_PRICE)

    def as_dict(self) -> dict[str, Any]:
        return {
            "roles": {r: c.as_dict() for r, c in self.roles.items()},
            "budget_usd": self.budget_usd,
            "budget_tokens": self.budget_tokens,
            "concurrency": self.concurrency,
            "max_retries": self.max_retries,
            "timeout": self.timeout,
            "cache": str(self.cache),
        }


def default_cache_path() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "vx" / "llm.sqlite"


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("VX_LLM_CONFIG"):
        return Path(env["VX_LLM_CONFIG"]).expanduser()
    base = Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "vx" / "llm.toml"


def has_credentials(env: Mapping[str, str] | None = None) -> bool:
    """True when an Anthropic key or token is set in the environment (its value is never read here)."""
    env = os.environ if env is None else env
    return any(env.get(k, "").strip() for k in KEY_ENV_VARS)


OFF_MESSAGE = (
    "LLM roles are off: set ANTHROPIC_API_KEY to enable the judge ops, teacher, composer and "
    "synthesizer (see docs: LLM roles)"
)


# ------------------------------------------------------------------------------------------------
# merging


class _Builder:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.roles: dict[str, dict[str, Any]] = {r: c.as_dict() for r, c in DEFAULT_ROLES.items()}
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES)
        self.sources: dict[str, str] = {}

    def apply_table(self, table: Mapping[str, Any], where: str, base: Path | None = None) -> None:
        """Merge one file's table; a relative ``cache`` path is taken relative to `base` (the file's folder)."""
        if not isinstance(table, Mapping):
            raise LLMConfigError(f"{where}: the LLM configuration must be a table")
        for key, value in table.items():
            if key in ("api_key", "key", "auth_token"):
                raise LLMConfigError(
                    f"{where}: '{key}' — keys are never read from configuration files; "
                    "set ANTHROPIC_API_KEY in the environment instead"
                )
            if key in ROLES:
                if not isinstance(value, Mapping):
                    raise LLMConfigError(f"{where}: [{key}] must be a table with model / max_tokens / temperature")
                for rk, rv in value.items():
                    self.set_role(key, rk, rv, where)
            elif key == "prices":
                if not isinstance(value, Mapping):
                    raise LLMConfigError(f"{where}: [prices] must map model ids to {{input, output}} tables")
                for model, p in value.items():
                    try:
                        self.prices[model] = Price(float(p["input"]), float(p["output"]))
                    except (TypeError, KeyError, ValueError):
                        raise LLMConfigError(
                            f"{where}: [prices.\"{model}\"] needs numeric 'input' and 'output' (USD per million tokens)"
                        ) from None
            elif key in _SCALARS:
                self.set_scalar(key, value, where)
                if key == "cache" and base is not None and not Path(value).expanduser().is_absolute():
                    self.values["cache"] = str(base / value)
            else:
                import difflib

                known = list(ROLES) + list(_SCALARS) + ["prices"]
                near = difflib.get_close_matches(key, known, n=1)
                hint = f" — did you mean {near[0]!r}?" if near else ""
                raise LLMConfigError(f"{where}: unknown LLM setting {key!r}{hint} (known: {', '.join(known)})")

    def set_role(self, role: str, key: str, value: Any, where: str) -> None:
        if role not in ROLES:
            raise LLMConfigError(f"{where}: unknown LLM role {role!r}; roles are {', '.join(ROLES)}")
        if key not in _ROLE_KEYS:
            raise LLMConfigError(f"{where}: [{role}] has no setting {key!r} (it takes {', '.join(_ROLE_KEYS)})")
        value = _check_type(f"{role}.{key}", value, _ROLE_KEYS[key], where)
        if key == "model" and not value.strip():
            raise LLMConfigError(f"{where}: {role}.model must be a non-empty model id")
        if key == "max_tokens" and value < 1:
            raise LLMConfigError(f"{where}: {role}.max_tokens must be at least 1")
        if key == "temperature" and not 0.0 <= float(value) <= 1.0:
            raise LLMConfigError(f"{where}: {role}.temperature must be between 0 and 1")
        self.roles[role][key] = float(value) if key == "temperature" else value
        self.sources[f"{role}.{key}"] = where

    def set_scalar(self, key: str, value: Any, where: str) -> None:
        value = _check_type(key, value, _SCALARS[key], where)
        if key in ("budget_usd", "timeout") and not (math.isfinite(value) and value > 0):
            raise LLMConfigError(f"{where}: {key} must be a positive number")
        if key in ("budget_tokens", "concurrency") and value < 1:
            raise LLMConfigError(f"{where}: {key} must be at least 1")
        if key == "max_retries" and value < 0:
            raise LLMConfigError(f"{where}: max_retries cannot be negative")
        self.values[key] = value
        self.sources[key] = where

    def build(self) -> LLMConfig:
        v = self.values
        return LLMConfig(
            roles={
                r: RoleConfig(d["model"], int(d["max_tokens"]), float(d["temperature"])) for r, d in self.roles.items()
            },
            budget_usd=float(v.get("budget_usd", 5.0)),
            budget_tokens=int(v.get("budget_tokens", 5_000_000)),
            concurrency=int(v.get("concurrency", 4)),
            max_retries=int(v.get("max_retries", 6)),
            timeout=float(v.get("timeout", 60.0)),
            cache=Path(v["cache"]).expanduser() if "cache" in v else default_cache_path(),
            prices=self.prices,
            sources=self.sources,
        )


def _check_type(name: str, value: Any, types: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, types):
        want = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise LLMConfigError(f"{where}: {name} must be {want}, got {value!r}")
    return value


def _env_value(raw: str, types: type | tuple[type, ...], name: str) -> Any:
    want = types if isinstance(types, tuple) else (types,)
    try:
        if str in want:
            return raw
        if int in want and float not in want:
            return int(raw)
        return float(raw)
    except ValueError:
        raise LLMConfigError(f"environment: {name}={raw!r} is not a number") from None


def load_config(
    family_llm: Mapping[str, Any] | None = None,
    *,
    family_path: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    user_path: str | Path | None = None,
) -> LLMConfig:
    """Resolve the LLM configuration from all sources (see the module docstring).

    family_llm: the family's ``[llm]`` table (``Family.llm_config``); family_path: its family.toml, for
    messages. overrides: command-line values, keys as in the files plus ``"<role>.model"`` etc.
    """
    env = os.environ if env is None else env
    b = _Builder()
    upath = Path(user_path).expanduser() if user_path is not None else user_config_path(env)
    if upath.is_file():
        try:
            table = tomllib.loads(upath.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise LLMConfigError(f"{upath}: invalid TOML: {exc}") from None
        b.apply_table(table, str(upath), upath.parent)
    if family_llm:
        b.apply_table(
            family_llm,
            f"{family_path or 'family.toml'} [llm]",
            Path(family_path).parent if family_path is not None else None,
        )
    for role in ROLES:
        for key, types in _ROLE_KEYS.items():
            var = f"VX_LLM_{role.upper()}_{key.upper()}"
            if env.get(var, "").strip():
                b.set_role(role, key, _env_value(env[var].strip(), types, var), f"${var}")
    for key, types in _SCALARS.items():
        var = f"VX_LLM_{key.upper()}"
        if env.get(var, "").strip():
            b.set_scalar(key, _env_value(env[var].strip(), types, var), f"${var}")
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if "." in key:
            role, rk = key.split(".", 1)
            b.set_role(role, rk, value, "command line")
        else:
            b.set_scalar(key, value, "command line")
    return b.build()


def parse_model_overrides(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("judge=claude-haiku-4-5", ...)`` → ``{"judge.model": "claude-haiku-4-5"}`` (for --llm-model)."""
    out: dict[str, str] = {}
    for pair in pairs:
        role, sep, model = pair.partition("=")
        role = role.strip()
        if not sep or not model.strip():
            raise LLMConfigError(f"--llm-model {pair!r}: write ROLE=MODEL, e.g. judge=claude-haiku-4-5")
        if role not in ROLES:
            raise LLMConfigError(f"--llm-model {pair!r}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        out[f"{role}.model"] = model.strip()
    return out
