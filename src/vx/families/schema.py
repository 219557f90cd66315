"""JSON Schemas of a family's files, and validation with messages for people.

One schema per record kind: ``family.toml`` (:data:`FAMILY_SCHEMA`), a split's item line
(:data:`ITEM_SCHEMA`), and a task line, which each family's pack declares (``Pack.task_schema``;
the code, SQL and report families do). The same documents are published under ``docs/schemas/``
(``python -m vx.families.schema docs/schemas`` writes them; a test checks they are current), so an
editor or another tool can validate a family without vx.

Validation uses the reference implementation of JSON Schema (the ``jsonschema`` package). Its
errors are rewritten for people: the file and line, the field by its path, and for an unknown key
the nearest valid name (``unknown key 'sed' (did you mean 'seed'?)``).
"""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vx.errors import MissingDependency

__all__ = ["FAMILY_SCHEMA", "ITEM_SCHEMA", "check", "published"]

_DRAFT = "https://json-schema.org/draft/2020-12/schema"

FAMILY_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT,
    "title": "vx family.toml",
    "description": "A task family: its op packs, root op, seed expression, files and objective constants.",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "description": "The family's name (default: the directory's)."},
        "description": {"type": "string"},
        "packs": {
            "description": "a list of op pack names (vx's own families: code, sql, report...; entry-point names; "
            "importable modules; .py files relative to the family directory)",
            "oneOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string", "minLength": 1}},
            ],
        },
        "root": {"type": "string", "minLength": 1, "description": "The fixed root op (default: the pack's)."},
        "seed": {"type": "string", "minLength": 1, "description": "The seed expression's .vx file."},
        "tasks": {"type": "string", "minLength": 1, "description": "The tasks file (default tasks.jsonl)."},
        "specs": {"type": "string", "minLength": 1, "description": "A JSON file of typed op specs."},
        "splits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {name: {"type": "string", "minLength": 1} for name in ("train", "dev", "locked", "peers")},
        },
        "objective": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "w": {"type": "number", "minimum": 0, "description": "Exponent of A_train."},
                "fail_weight": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Weight of the FAIL class's recall in A_dev.",
                },
                "op_cost": {"type": "number", "minimum": 0, "description": "Cost per op beyond op_floor."},
                "op_floor": {"type": "integer", "minimum": 0, "description": "Ops that cost nothing."},
                "llm_cost": {"type": "number", "minimum": 0, "description": "Extra cost per LLM-calling op."},
            },
        },
        "provenance": {"type": "object", "description": "How the family was built (free form)."},
        "llm": {"type": "object", "description": "The family's LLM role table (see docs: LLM roles)."},
        "ratchet": {
            "type": "object",
            "description": "Settings of the skill loop (vx ratchet), overriding the family's pack hooks: the "
            "ground truth, the solver's instructions, the format contract.",
            "additionalProperties": False,
            "properties": {
                "ground_truth": {
                    "type": "string",
                    "minLength": 1,
                    "description": "file.py:function or module:function, called as function(task, output)",
                },
                "solver_system": {"type": "string", "description": "The solver's instructions (system prompt)."},
                "format_contract": {
                    "type": "string",
                    "description": "What the pipeline requires of an output (the task-aware final judge is told it).",
                },
            },
        },
    },
}

_LABEL = {
    "description": '"pass", "fail" or a probability of pass in [0, 1]',
    "oneOf": [
        {"type": "string", "enum": ["pass", "fail", "PASS", "FAIL", "Pass", "Fail"]},
        {"type": "number", "minimum": 0, "maximum": 1},
    ],
}

ITEM_SCHEMA: dict[str, Any] = {
    "$schema": _DRAFT,
    "title": "vx split item",
    "description": "One output to grade: a line of train.jsonl, dev.jsonl or locked.jsonl (train items carry "
    "no label).",
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "task", "output"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "task": {"type": "string", "minLength": 1, "description": "The id of a task in the tasks file."},
        "output": {"description": "The output to grade (the family says what it is: code, SQL, markdown)."},
        "label": {**_LABEL, "oneOf": [*_LABEL["oneOf"], {"type": "null"}]},
        "reference": {"description": "A golden reference (dev items), for people and LLM teachers."},
        "meta": {"type": "object", "description": "Builder provenance (never shown to evolution for train)."},
    },
}

#: The part of every task record vx itself reads; a pack's task schema extends it.
TASK_BASE: dict[str, Any] = {
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "string", "minLength": 1}},
}


def task_schema(
    title: str, properties: Mapping[str, Any], required: tuple[str, ...] = (), closed: bool = True
) -> dict[str, Any]:
    """A family's task schema: ``id`` plus ``properties`` (``closed``: no other keys)."""
    return {
        "$schema": _DRAFT,
        "title": title,
        "type": "object",
        "additionalProperties": not closed,
        "required": ["id", *required],
        "properties": {**TASK_BASE["properties"], **properties},
    }


_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}


def _validator(schema: Mapping[str, Any]) -> Any:
    """A validator for ``schema`` (made once per schema object: families check thousands of lines)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    try:
        import jsonschema
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependency("validating family files needs jsonschema: pip install jsonschema") from exc
    validator = jsonschema.validators.validator_for(schema)(schema)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


_TYPE_WORDS = {
    "string": "a string",
    "object": "an object (a table)",
    "array": "an array (a list)",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}


def _field(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(the record)"


def _nearest(word: str, choices: Any) -> str:
    near = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f" (did you mean {near[0]!r}?)" if near else f" (known: {', '.join(sorted(choices))})"


def _message(error: Any) -> list[tuple[tuple[Any, ...], str]]:
    """(path, text) for one jsonschema error, unknown keys one by one."""
    path = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, Mapping):
        known = error.schema.get("properties", {})
        extra = [k for k in error.instance if k not in known]
        return [((*path, k), f"unknown key {k!r}{_nearest(str(k), known)}") for k in extra]
    if error.validator == "type":
        wanted = error.validator_value
        words = " or ".join(_TYPE_WORDS.get(str(w), str(w)) for w in (wanted if isinstance(wanted, list) else [wanted]))
        return [(path, f"{_field(path)} must be {words}, not {_brief(error.instance)}")]
    if error.validator == "required":
        return [
            (
                path,
                error.message.replace("is a required property", f"is missing from {_field(path)}")
                if path
                else error.message.replace("is a required property", "is required"),
            )
        ]
    if error.validator in ("oneOf", "anyOf"):
        if "description" in error.schema:
            return [(path, f"{_field(path)} must be {error.schema['description']}, not {_brief(error.instance)}")]
        return [(path, f"{_field(path)}: {_brief(error.instance)} is not valid here")]
    if error.validator in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "minLength", "enum"):
        return [(path, f"{_field(path)}: {error.message}")]
    return [(path, f"{_field(path)}: {error.message}")]


def _brief(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check(obj: Any, schema: Mapping[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """Every violation of ``schema`` by ``obj``, as (path, message), in document order."""
    validator = _validator(schema)
    if validator.is_valid(obj):  # the common case, fast
        return []
    found: list[tuple[tuple[Any, ...], str]] = []
    for error in sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path]):
        found.extend(_message(error))
    return found


def published() -> dict[str, dict[str, Any]]:
    """The schemas published in docs/schemas: file name → schema (the families' task schemas too)."""
    from vx.families.pack import BUILTIN, load_pack

    out = {"family.schema.json": FAMILY_SCHEMA, "item.schema.json": ITEM_SCHEMA}
    for name in BUILTIN:
        try:
            pack = load_pack(name)
        except Exception:  # an optional family whose extra is not installed
            continue
        if pack.task_schema is not None and not name.endswith("-judge"):
            out[f"task-{name}.schema.json"] = dict(pack.task_schema)
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m vx.families.schema DIR``: write the published schemas to DIR."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0] if args else "docs/schemas")
    target.mkdir(parents=True, exist_ok=True)
    for name, schema in published().items():
        (target / name).write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(target / name)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
