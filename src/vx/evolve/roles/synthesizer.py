"""The LLM synthesizer: a model authors typed op specs for a failure cluster (docs/design.md §6, Grow).

It implements `vx.evolve.synthesize.Synthesizer` (``name`` and ``propose(request)``). The model
sees the cluster's failing outputs (with their tasks), known-good outputs it must stay clean on,
the family's closed failure taxonomy and the check-template catalog (each template's parameters and
types), and answers with a JSON array of specs in a ```json block. Each spec is validated against
its template (`vx.ops.specs.validate_spec`), instantiated once (`op_from_spec`, which runs the
template's own parameter checks), and must name a failure class of the taxonomy; invalid ones are
counted and dropped with the reason kept in `LLMSynthesizer.history`. The valid ones go to the
engine, which applies them and puts them through the same birth gate as offline specs.

Judge-kind templates are not offered unless ``allow_judge=True``: a synthesized op then stays free to
run and replayable without a key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.ops.specs import (
    SpecError,
    op_from_spec,
    spec_name,
    templates_for,
    validate_spec,
)

SYSTEM = """You write drawback detectors ("ops") for verifiers of AI-agent outputs in the {family} family.

An op is a typed spec instantiated from one of these check templates (params: name → type):
{templates}

Failure classes (closed taxonomy; "detects" must be one of these): {taxonomy}

Reply with a JSON array of at most {n} specs inside one ```json block, nothing else in the block:
```json
[{{"kind": "<the template's kind>", "check": "<template>", "params": {{...}}, "detects": "<failure class>",
  "description": "<one line: the defect it detects>"}}]
```
A good op fires (reports a drawback) on most of the failing outputs shown and stays clean on every \
known-good output. Use only the templates listed, with exactly their parameters and types."""


def _clip(text: Any, n: int) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


def _task_text(task: Mapping[str, Any]) -> str:
    from vx.ops.judge import render_task

    return render_task(task)


def render_examples(pairs: Sequence[tuple[Mapping[str, Any], Any]], limit: int, chars: int = 1500) -> str:
    parts = []
    for i, (task, output) in enumerate(list(pairs)[:limit], 1):
        parts.append(
            f"<example {i}>\n<task>\n{_clip(_task_text(task), chars)}\n</task>\n"
            f"<output>\n{_clip(output, chars)}\n</output>\n</example {i}>"
        )
    return "\n".join(parts)


def render_templates(templates: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for t in sorted(templates, key=lambda t: str(t.get("check"))):
        params = ", ".join(f"{k}: {v}" for k, v in (t.get("params") or {}).items()) or "none"
        lines.append(f"- {t['check']} (kind {t['kind']}; params {params}) — {t.get('description', '')}")
    return "\n".join(lines)


_JSON_FENCE = re.compile(r"```[ \t]*(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_specs(text: str) -> list[Any]:
    """The JSON array (or single object) of the reply's ```json block; raises ValueError when there is none."""
    blocks = _JSON_FENCE.findall(text)
    body = blocks[0] if blocks else text.strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ValueError(f"expected a JSON array of specs, got {type(data).__name__}")
    return data


def _safe_class(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", str(name)).strip("_") or "unknown"


def check_spec(raw: Any, allowed_checks: set[str], taxonomy: Sequence[str], cluster_class: str) -> dict[str, Any]:
    """Validate one proposed spec; returns the normalised spec (with a fresh ``llm_`` name) or raises SpecError."""
    spec = validate_spec(raw)
    if spec["check"] not in allowed_checks:
        raise SpecError(f"check {spec['check']!r} is not one of this family's templates")
    allowed_classes = set(taxonomy) | {_safe_class(cluster_class)}
    if taxonomy and spec["detects"] not in allowed_classes:
        raise SpecError(
            f"detects {spec['detects']!r} is not in the family's taxonomy ({', '.join(sorted(allowed_classes))})"
        )
    spec["detects"] = _safe_class(spec["detects"])
    spec["name"] = "llm_" + spec_name(spec)
    if "description" in spec:
        spec["description"] = _clip(str(spec["description"]), 200)
    op_from_spec(spec)  # the template's own parameter checks (bad regex, bad choice, …)
    return spec


@attrs.define
class LLMSynthesizer:
    """Synthesizer backed by the ``synthesizer`` role. `client_factory()` returns an `LLMClient` or None."""

    client_factory: Callable[[], Any]
    n: int = 4
    bad_examples: int = 6
    good_examples: int = 4
    name: str = "llm"
    say: Callable[[str], None] | None = None
    allow_judge: bool = False  # may it author judge-kind specs (LLM calls on every item)?
    history: list[dict[str, Any]] = attrs.field(factory=list)
    stopped: str | None = None

    @property
    def invalid(self) -> int:
        return sum(h["invalid"] for h in self.history)

    def propose(self, request: Any) -> list[dict[str, Any]]:
        from vx.llm.client import BudgetExceeded, LLMError

        cluster = request.cluster
        record: dict[str, Any] = {
            "cluster": cluster.failure_class,
            "proposed": 0,
            "valid": 0,
            "invalid": 0,
            "dropped": [],
        }
        self.history.append(record)
        client = self.client_factory()
        templates = list(request.templates)
        if not templates:  # the engine normally passes them; otherwise draw from the family's template tags
            tags = tuple(getattr(request, "template_families", ()) or ()) or (request.family,)
            seen: dict[str, Any] = {}
            for tag in tags:
                for t in templates_for(tag):
                    seen.setdefault(t.check, t.schema())
            templates = list(seen.values())
        if not self.allow_judge:  # synthesized ops stay offline-replayable and free unless asked otherwise
            templates = [t for t in templates if t.get("kind") != "judge"]
        if client is None or self.stopped or not templates:
            record["skipped"] = self.stopped or ("LLM roles are off" if client is None else "no templates")
            return []
        taxonomy = list(request.taxonomy)
        system = SYSTEM.format(
            family=request.family,
            templates=render_templates(templates),
            taxonomy=", ".join(taxonomy) if taxonomy else "(none declared: name the class)",
            n=self.n,
        )
        known = ", ".join(f"{c.get('name')} ({c.get('detects')})" for c in request.catalog) or "none"
        user = (
            f"Failure cluster {cluster.failure_class!r}: {len(cluster.items)} items "
            f"({cluster.n_misses} labelled misses, {cluster.n_gaps} unlabeled gaps).\n\n"
            f"Failing outputs to catch:\n{render_examples(cluster.pairs, self.bad_examples)}\n\n"
            f"Known-good outputs to stay clean on:\n{render_examples(request.good, self.good_examples)}\n\n"
            f"Existing ops (do not duplicate): {known}\n\n"
            f"Write specs that detect the {cluster.failure_class!r} failures."
        )
        try:
            completion = client.complete("synthesizer", user, system=system)
        except BudgetExceeded as exc:
            self.stopped = str(exc)
            record["error"] = str(exc)
            if self.say:
                self.say(f"{exc} — the LLM synthesizer stops; evolution goes on with the offline synthesizer")
            return []
        except LLMError as exc:
            record["error"] = str(exc)
            if self.say:
                self.say(f"LLM synthesizer: {exc} (cluster {cluster.failure_class!r} skipped)")
            return []
        record["cached"] = completion.cached
        try:
            raw_specs = extract_specs(completion.text)
        except ValueError as exc:
            record["invalid"] = record["proposed"] = 1
            record["dropped"].append({"spec": _clip(completion.text, 300), "problem": str(exc)})
            return []
        allowed = {str(t["check"]) for t in templates}
        out: list[dict[str, Any]] = []
        names: set[str] = set()
        for raw in raw_specs[: 2 * self.n]:
            record["proposed"] += 1
            try:
                spec = check_spec(raw, allowed, taxonomy, cluster.failure_class)
            except SpecError as exc:
                record["invalid"] += 1
                record["dropped"].append({"spec": _clip(raw, 300), "problem": str(exc)})
                continue
            except Exception as exc:  # a template factory rejecting its params in its own way
                record["invalid"] += 1
                record["dropped"].append({"spec": _clip(raw, 300), "problem": f"{type(exc).__name__}: {exc}"})
                continue
            if spec["name"] in names:
                continue
            names.add(spec["name"])
            out.append(spec)
        record["valid"] = len(out)
        return out
