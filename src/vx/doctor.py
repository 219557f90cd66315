"""`vx doctor`: what this machine can do -- the sandbox layer in force (and why not a stronger one),
the Python in use, and which LLM roles are configured and reachable.

``doctor_report()`` returns plain :class:`Check` records (the CLI only renders them), built by the
section functions in ``SECTIONS``. To add a section, write a function ``() -> list[Check]`` and
append it to ``SECTIONS``. LLM reachability is probed with the Models API
(``GET /v1/models/{id}``), which is free: one request per distinct model of the role table; with no
key nothing is sent and every role reports "off".
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vx.llm.config import KEY_ENV_VARS, OFF_MESSAGE, LLMConfig, has_credentials

STATUSES = ("ok", "warn", "fail", "info")


@attrs.frozen
class Check:
    """One line of the report: ``status`` is "ok", "warn" (works, weaker than it could be),
    "fail" (does not work) or "info"."""

    name: str
    status: str = attrs.field(validator=attrs.validators.in_(STATUSES))
    detail: str


def python_section() -> list[Check]:
    return [Check("python", "ok", f"{sys.version.split()[0]} ({sys.executable})")]


def sandbox_section(measure: bool = True) -> list[Check]:
    """The sandbox: every layer tried, the one in force, account, interpreter, overhead."""
    from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

    try:
        sb = Sandbox(SandboxConfig(), probe_all=True)
    except SandboxUnavailable as exc:
        return [Check("sandbox", "fail", f"{exc}. Untrusted code cannot be run on this machine.")]
    except ValueError as exc:  # e.g. a bad $VX_SANDBOX_LAYER
        return [Check("sandbox", "fail", str(exc))]
    d = sb.detection
    strong = d.layer in ("forkserver", "bwrap")
    checks = [
        Check(
            "sandbox layer",
            "ok" if strong else "warn",
            sb.describe().splitlines()[0].removeprefix("sandbox layer: ")
            + ("" if strong else " (weaker than bwrap: see the lines below)"),
        )
    ]
    for status in d.statuses:
        if status.available:
            state, text = "ok", status.reason
            if status.overhead_ms is not None:
                text += f"; {status.overhead_ms:.0f} ms per trivial candidate"
        elif status.available is None:
            state, text = "info", status.reason
        else:  # unavailable: worth a warning only when it is why a weaker layer runs the candidates
            state, text = ("info" if strong else "warn"), status.reason
        checks.append(Check(f"  {status.layer}", state, text))
    ident = d.identity
    if ident.dropped:
        dedicated = ident.name == "vx-sandbox"
        checks.append(
            Check(
                "sandbox account",
                "ok" if dedicated else "warn",
                f"running as root; candidates run as {ident.name} (uid {ident.uid}, gid {ident.gid})"
                + ("" if dedicated else "; create the dedicated account: sudo bash .ci/install-system.sh"),
            )
        )
    else:
        weak = not strong and d.plan.landlock is None
        checks.append(
            Check(
                "sandbox account",
                "warn" if weak else "ok",
                f"candidates run as you ({ident.name}, uid {ident.uid})"
                + ("; without bwrap or Landlock they can read and write your files" if weak else ""),
            )
        )
    checks.append(Check("sandbox python", "info", d.python_note))
    checks.append(Check("seccomp", "info", d.seccomp))
    from vx.sandbox.layers import LIMIT_TEXT

    for hole in sb.known_limits():  # tested holes of this layer on this machine (tests/sandbox/test_reach.py)
        checks.append(
            Check(
                "known limit",
                "warn",
                LIMIT_TEXT[hole].removeprefix(f"known limit ({hole}): ")
                + f" [{hole}]"
                + (f" ({d.uid_note})" if hole == "shared-nproc" and d.uid_note else ""),
            )
        )
    if measure:
        try:
            ms = sb.measure_overhead(runs=5)
            text = f"{ms:.1f} ms per candidate (median of 5, {d.layer})"
            if d.layer == "forkserver":  # the point of the layer: say what it saves, measured now
                try:
                    slow = Sandbox(SandboxConfig(layer="bwrap")).measure_overhead(runs=5)
                    ms = sb.measure_overhead(runs=5)
                    text = (
                        f"{ms:.1f} ms per candidate (median of 5, forkserver) against {slow:.1f} ms "
                        f"under bwrap alone: {slow / ms:.1f}x less"
                    )
                except SandboxUnavailable:
                    pass
            checks.append(Check("sandbox overhead", "info", text))
        except SandboxUnavailable as exc:
            checks.append(Check("sandbox overhead", "fail", str(exc)))
    return checks


def llm_section(probe: bool = True) -> list[Check]:
    """LLM roles: one line per role (model, state) plus a summary line; reachability is probed with
    the free Models API (no tokens spent). The configuration is the family's around the current
    directory, if any, then the user file and the environment."""
    from vx.llm.config import LLMConfigError, load_config

    try:
        family = _family_here()
        cfg = load_config(
            getattr(family, "llm_config", None),
            family_path=(family.dir / "family.toml") if family is not None else None,
        )
    except LLMConfigError as exc:
        return [Check("LLM roles", "fail", str(exc))]
    except Exception as exc:  # a broken family around here must not break the doctor
        return [Check("LLM roles", "warn", f"family configuration not read: {exc}")]
    statuses = role_status(cfg, probe=probe)
    ok, line = summary_line(statuses)
    checks = [Check("LLM roles", {None: "info", True: "ok", False: "fail"}[ok], line)]
    if ok is None:  # off: the one line says how to turn them on
        return checks
    for s in statuses:
        status = {"reachable": "ok", "unreachable": "fail"}.get(s.state, "info")
        detail = f"{s.model} (max_tokens {s.max_tokens}; set by {s.source})" + (f": {s.detail}" if s.detail else "")
        checks.append(Check(f"  {s.role}", status, detail))
    return checks


def _family_here() -> Any:
    from vx.families.family import Family, find_family_dir

    try:
        directory = find_family_dir(".")
    except Exception:
        return None
    return Family(directory)


SECTIONS: list[Callable[[], list[Check]]] = [python_section, sandbox_section, llm_section]


def doctor_report() -> list[Check]:
    """All checks, section by section."""
    checks: list[Check] = []
    for section in SECTIONS:
        checks.extend(section())
    return checks


# --------------------------------------------------------------------------- LLM roles


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


def role_status(
    config: LLMConfig, *, probe: bool = True, sdk: Any = None, env: Mapping[str, str] | None = None
) -> list[RoleStatus]:
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
