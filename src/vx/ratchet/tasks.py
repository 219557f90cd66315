"""What the frozen solver is told about a task, how its reply becomes an output, and the family's format
contract (what its pipeline requires of an output; the task-aware final judge is told it).

One adapter per family kind — ``code``, ``sql``, ``report`` — and a ``generic`` one for any other family
(the task's ``prompt`` field, else its visible fields as JSON; the reply's text is the output). The kind
comes from family.toml's ``[ratchet] kind``, else from the names of the family's op packs. A family states
its format contract in ``[ratchet] format_contract``; the adapters carry a default for their kind.

The solver never sees a task's golden reference, hidden tests or gold query: the rendering uses only the
fields a verifier may see (the same rule as the judge ops).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

HIDDEN_FIELDS = frozenset({"reference", "canonical_solution", "tests", "test", "hidden_tests", "base_input",
                           "plus_input", "atol", "label", "gold", "golden", "meta"})
KINDS = ("code", "sql", "report", "generic")

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def first_block(text: str, languages: tuple[str, ...] = ()) -> str:
    """The body of the first fenced block (preferring one tagged with a language of `languages`), else the
    whole reply, stripped."""
    blocks = _FENCE.findall(text or "")
    for lang, body in blocks:
        if lang.lower() in languages:
            return body.strip("\n")
    if blocks:
        return blocks[0][1].strip("\n")
    return (text or "").strip()


def visible(task: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in task.items() if k not in HIDDEN_FIELDS and not str(k).startswith("_")}


@attrs.frozen
class Adapter:
    kind: str
    system: str
    contract: str

    def render(self, task: Mapping[str, Any]) -> str:
        if self.kind == "code":
            return str(task.get("prompt", "")).rstrip() + "\n"
        if self.kind == "sql":
            return str(task.get("prompt") or task.get("question", "")).strip()
        if self.kind == "report":
            return render_report_task(task)
        prompt = task.get("prompt")
        if isinstance(prompt, str) and prompt.strip():
            return prompt
        return json.dumps(visible(task), indent=2, ensure_ascii=False, default=str)

    def extract(self, reply: str) -> str:
        if self.kind == "code":
            return first_block(reply, ("python", "py")) + "\n"
        if self.kind == "sql":
            return first_block(reply, ("sql",)).strip().rstrip(";").strip()
        if self.kind == "report":
            return first_block(reply, ("markdown", "md")).strip() + "\n" if "```" in (reply or "") else \
                (reply or "").strip() + "\n"
        return (reply or "").strip()


CODE_SYSTEM = ("You write Python functions. Reply with one complete Python program in a single ```python block: "
               "the function the task asks for with its exact name and signature, any imports or helpers it needs, "
               "and nothing else (no tests, no example calls, no printing).")
CODE_CONTRACT = ("A complete Python program defining the task's entry point under its exact name. The function "
                 "returns its result (it must not print it or read input); helpers and imports are allowed; only "
                 "behaviour is graded, not style.")
SQL_SYSTEM = "You write SQL queries. Reply with exactly one read-only query in a single ```sql block, nothing else."
SQL_CONTRACT = ("One read-only SQL query in the task's dialect that answers the question over the given tables. "
                "Only the query's result is graded: column names, column order and formatting do not matter.")
REPORT_SYSTEM = ("You write one markdown section of an analyst report from audited evidence. Reply with the section "
                 "only, in markdown.")
REPORT_CONTRACT = ("A markdown section with a '#' title and a TL;DR line near the top. Every claim cites the evidence "
                   "card it rests on as [E0103]; each registered key figure is written as its value followed by its "
                   "ledger tag, e.g. '$4.2B {M03}'. Citations and tags are required output (the pipeline renders "
                   "them), not clutter; a tag with no value beside it is a defect; figures found in neither the cards "
                   "nor the ledger are fabricated; weak or disputed evidence must be hedged and conflicts shown from "
                   "both sides; amounts follow the caliber (units, date, pools never summed).")
GENERIC_SYSTEM = "You solve one task. Reply with the answer only."
GENERIC_CONTRACT = "The answer the task asks for, and nothing else."

_DEFAULTS = {"code": (CODE_SYSTEM, CODE_CONTRACT), "sql": (SQL_SYSTEM, SQL_CONTRACT),
             "report": (REPORT_SYSTEM, REPORT_CONTRACT), "generic": (GENERIC_SYSTEM, GENERIC_CONTRACT)}


def family_kind(family: Any) -> str:
    cfg = (getattr(family, "config", None) or {}).get("ratchet") or {}
    kind = cfg.get("kind")
    if kind is not None:
        if kind not in KINDS:
            from vx.ratchet.config import RatchetError

            raise RatchetError(f"{family.dir / 'family.toml'}: [ratchet] kind must be one of {', '.join(KINDS)}, "
                               f"not {kind!r}")
        return str(kind)
    for pack in getattr(family, "packs", []) or []:
        parts = re.split(r"[./:]", str(pack).lower())
        for k in ("code", "sql", "report"):
            if k in parts:
                return k
    return "generic"


def adapter_for(family: Any) -> Adapter:
    kind = family_kind(family)
    cfg = (getattr(family, "config", None) or {}).get("ratchet") or {}
    system, contract = _DEFAULTS[kind]
    return Adapter(kind, str(cfg.get("solver_system", system)), str(cfg.get("format_contract", contract)))


def render_report_task(task: Mapping[str, Any]) -> str:
    cal = task.get("caliber") or {}
    lines = [f"Section title: {task.get('title', '')}", f"Purpose: {task.get('purpose', '')}", "",
             f"Caliber: {cal.get('text', '') if isinstance(cal, Mapping) else cal}", "", "Evidence cards:"]
    for c in task.get("cards") or []:
        lines.append(f"- [{c.get('id')}] {c.get('claim')} — quote: \"{c.get('quote')}\" — {c.get('source')}, "
                     f"{c.get('date')}; stance {c.get('stance')}; credibility {c.get('credibility')}")
    lines += ["", "Metric vocabulary (ledger):"]
    for m in task.get("vocabulary") or []:
        pool = f"; pool {m['pool']}" if m.get("pool") else ""
        lines.append(f"- {{{m.get('id')}}} {m.get('name')}: {m.get('value')} {m.get('unit', '')}{pool}")
    return "\n".join(lines)
