"""What the frozen solver is told about a task, how its reply becomes an output, and the family's format
contract (what its pipeline requires of an output; the task-aware final judge is told it).

All of it comes from the family's pack (`vx.families.pack.RatchetHooks`, the pack's ``ratchet``); family.toml's
``[ratchet] solver_system`` and ``format_contract`` override the pack's. A family whose packs supply no hooks
gets the generic adapter: the task's ``prompt`` field, else its visible fields as JSON; the reply's text is the
output.

The generic rendering never shows a task's golden reference, hidden tests or gold query (`HIDDEN_FIELDS`: the
same rule as the judge ops); a pack's own rendering follows the same rule (the Pack contract says so).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

HIDDEN_FIELDS = frozenset(
    {
        "reference",
        "canonical_solution",
        "tests",
        "test",
        "hidden_tests",
        "base_input",
        "plus_input",
        "atol",
        "label",
        "gold",
        "golden",
        "meta",
    }
)
GENERIC = "generic"
GENERIC_SYSTEM = "You solve one task. Reply with the answer only."
GENERIC_CONTRACT = "The answer the task asks for, and nothing else."


def visible(task: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in task.items() if k not in HIDDEN_FIELDS and not str(k).startswith("_")}


def render_generic(task: Mapping[str, Any]) -> str:
    prompt = task.get("prompt")
    if isinstance(prompt, str) and prompt.strip():
        return prompt
    return json.dumps(visible(task), indent=2, ensure_ascii=False, default=str)


def extract_generic(reply: str) -> str:
    return (reply or "").strip()


@attrs.frozen
class Adapter:
    """The solver's side of a family: ``source`` names the pack whose hooks it uses (or "generic")."""

    source: str
    system: str
    contract: str
    render: Callable[[Mapping[str, Any]], str] = attrs.field(default=render_generic, eq=False, repr=False)
    extract: Callable[[str], str] = attrs.field(default=extract_generic, eq=False, repr=False)


def hooks_of(family: Any) -> Any:
    """The family's `RatchetHooks` (from its packs), or None."""
    pack = family.pack() if hasattr(family, "pack") else None
    return getattr(pack, "ratchet", None)


def adapter_for(family: Any) -> Adapter:
    cfg = (getattr(family, "config", None) or {}).get("ratchet") or {}
    hooks = hooks_of(family)
    if hooks is None:
        base = Adapter(GENERIC, GENERIC_SYSTEM, GENERIC_CONTRACT)
    else:
        base = Adapter(hooks.name, hooks.solver_system, hooks.format_contract, hooks.render_task, hooks.extract_output)
    return attrs.evolve(
        base, system=str(cfg.get("solver_system", base.system)), contract=str(cfg.get("format_contract", base.contract))
    )
