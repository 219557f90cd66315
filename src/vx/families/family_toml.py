"""The one writer of a family's ``family.toml``: every builder writes it through :func:`write_family_toml`, and
`vx.families.family.Family` reads it.

The file names the family, its packs and root op, its seed expression and its files, the objective's
constants and the builder's provenance (plain data: strings, numbers, booleans, lists and tables; ``None``
is left out, as TOML has no null). A provenance table whose values are all plain scalars or lists is written
as its own ``[provenance.<key>]`` table, any other as an inline table.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vx.text import clean

__all__ = ["OBJECTIVE", "family_toml", "toml_key", "toml_string", "toml_value", "write_family_toml"]

#: The objective's constants a built family starts with (docs/design.md: the objective).
OBJECTIVE: Mapping[str, float | int] = {
    "w": 1.0,
    "fail_weight": 2.0,
    "op_cost": 0.001,
    "op_floor": 3,
    "llm_cost": 0.002,
}


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters (DEL included) escaped; an unpaired
    surrogate, which TOML cannot hold, becomes U+FFFD (`vx.text.clean`)."""
    out = []
    for ch in clean(text):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A key as TOML writes it: bare when it is ASCII letters, digits, ``_`` and ``-`` only, else quoted."""
    return key if key and key.replace("_", "").replace("-", "").isalnum() and key.isascii() else toml_string(key)


def toml_value(value: Any) -> str:
    """Plain data as a TOML value (a mapping as an inline table; its ``None`` values are left out)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return (
            "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items() if v is not None) + " }"
        )
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def _table(name: str, table: Mapping[str, Any]) -> str:
    lines = [f"[{name}]"]
    nested = []
    for key, value in table.items():
        if value is None:  # TOML has no null: an unset option is left out
            continue
        if isinstance(value, Mapping) and value and all(not isinstance(v, Mapping) for v in value.values()):
            nested.append((key, value))
        else:
            lines.append(f"{toml_key(str(key))} = {toml_value(value)}")
    text = "\n".join(lines) + "\n"
    for key, value in nested:
        text += "\n" + _table(f"{name}.{toml_key(str(key))}", value)
    return text


def family_toml(
    *,
    name: str,
    description: str,
    packs: Iterable[str],
    root: str,
    provenance: Mapping[str, Any],
    seed: str | None = "seed.vx",
    tasks: str = "tasks.jsonl",
    peers: bool = False,
    objective: Mapping[str, float | int] = OBJECTIVE,
    comments: Iterable[str] = (),
) -> str:
    """The text of a family.toml. ``seed``: the seed expression's file (None: the family names none);
    ``peers``: the splits name ``peers.jsonl`` (unlabeled attempts of the dev tasks); ``comments``: lines
    written at the top, each after ``# ``."""
    head = [f"# {line}" for line in comments]
    head += [
        f"name = {toml_value(name)}",
        f"description = {toml_value(description)}",
        f"packs = {toml_value(list(packs))}",
        f"root = {toml_value(root)}",
    ]
    if seed is not None:
        head.append(f"seed = {toml_value(seed)}")
    head.append(f"tasks = {toml_value(tasks)}")
    splits = {"train": "train.jsonl", "dev": "dev.jsonl", "locked": "locked.jsonl"}
    if peers:
        splits["peers"] = "peers.jsonl"
    return (
        "\n".join(head)
        + "\n\n"
        + _table("splits", splits)
        + "\n"
        + _table("objective", dict(objective))
        + "\n"
        + _table("provenance", dict(provenance))
    )


def write_family_toml(path: str | os.PathLike[str], **fields: Any) -> Path:
    """Write :func:`family_toml` (its keyword arguments) to `path`; returns the path."""
    out = Path(path)
    out.write_text(family_toml(**fields), encoding="utf-8")
    return out
