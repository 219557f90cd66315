"""BFCL's function-doc dialect: what a tool-using task offers, read once, for every tools op.

A task offers functions as BFCL writes them, a JSON-Schema-like dialect of its own::

    {"name": "math.factorial", "description": "...",
     "parameters": {"type": "dict", "required": ["number"],
                    "properties": {"number": {"type": "integer", "description": "..."}}}}

What the dialect means (as BFCL's AST checker reads it, ``bfcl_eval/eval_checker/ast_eval``):

* types ``string``, ``integer``, ``float`` (an integer is accepted too), ``boolean``, ``array`` (a list;
  ``items`` types its elements), ``tuple`` (a list or a tuple), ``dict`` (an object; ``properties`` name its
  keys), ``any`` (anything); ``number`` and ``object`` are read as ``float`` and ``dict``. A boolean is never
  an integer (BFCL compares types exactly);
* ``enum`` -- the allowed values; ``format: "date"`` -- an ISO date;
* ``required`` -- the parameters a call must give (the others are optional); a parameter's ``default``, or a
  default its description documents ("Default is 'NASDAQ'", "defaults to 5"), is what an omitted optional
  parameter means.

:func:`functions` reads a task's docs into :class:`Function` records; :func:`resolve` finds the offered
function a written name means (function-calling APIs forbid ``.`` in names: ``math.factorial`` travels
as ``math_factorial``); :func:`value_problem` says why a value does not fit a parameter (wrong type, outside
its enum, not in its format), or None. Nothing here reads an answer or a label.
"""

from __future__ import annotations

import ast
import datetime as _dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

__all__ = [
    "NO_DEFAULT",
    "Function",
    "Param",
    "TYPES",
    "documented_default",
    "functions",
    "parse_function",
    "resolve",
    "short",
    "standard_string",
    "type_name",
    "value_problem",
]

#: The types of the dialect (``number`` and ``object`` are read as their BFCL names).
TYPES = ("string", "integer", "float", "boolean", "array", "tuple", "dict", "any")
_ALIASES = {"number": "float", "object": "dict", "str": "string", "int": "integer", "bool": "boolean", "list": "array"}
#: How deep parameter schemas are read (deeper ones are taken as ``any``).
MAX_SCHEMA_DEPTH = 8


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


#: A parameter without a documented default.
NO_DEFAULT: Any = _NoDefault()


@attrs.frozen
class Param:
    """One parameter (or an array's items, or a dict's key) as the docs describe it."""

    name: str
    type: str  # one of TYPES
    description: str = ""
    required: bool = False
    enum: tuple[Any, ...] | None = None
    format: str | None = None
    default: Any = NO_DEFAULT
    items: Param | None = None
    properties: Mapping[str, Param] = attrs.field(factory=dict)

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@attrs.frozen
class Function:
    """An offered function: its name, description, parameters (in the docs' order) and required ones."""

    name: str
    description: str
    params: Mapping[str, Param]
    required: tuple[str, ...]

    @property
    def optional(self) -> tuple[str, ...]:
        return tuple(p for p in self.params if p not in self.required)


def _type(raw: Any) -> str:
    t = str(raw or "any").strip().lower()
    t = _ALIASES.get(t, t)
    return t if t in TYPES else "any"


_DEFAULT = re.compile(
    r"\bdefault(?:s|ed)?(?:\s+value)?(?:\s+(?:is|to|of|=))?\s*[:=]?\s*"
    r"(?:'(?P<sq>[^']{0,80})'|\"(?P<dq>[^\"]{0,80})\"|(?P<num>[-+]?\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<word>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*){0,2}))",
    re.IGNORECASE,
)
#: A default written after its value: "with air as default", "'metric' by default", "0 as default".
_DEFAULT_AFTER = re.compile(
    r"(?:'(?P<sq>[^']{1,80})'|\"(?P<dq>[^\"]{1,80})\"|(?P<num>[-+]?\d[\d_]*(?:\.\d+)?)|\b(?P<word>[A-Za-z][\w-]*))"
    r"\s+(?P<link>as|by)\s+(?:the\s+)?default\b",
    re.IGNORECASE,
)
_NOT_A_VALUE = re.compile(
    r"^(?:is|to|the|a|an|all|any|none|not|no|current|that|if|this|when|value|used|will|it|be|set|none of)\b", re.I
)


def documented_default(description: str, type_: str) -> Any:
    """The default a parameter's description documents ("Default is 'NASDAQ'", "defaults to 5", "Default:
    true"; or after the value, "with air as default", "'metric' by default"), as a value of the parameter's
    type; `NO_DEFAULT` when it documents none it can read. Phrases such as "Default is all venues" or
    "defaults to the current season" are not values: `NO_DEFAULT`."""
    for pattern, after in ((_DEFAULT, False), (_DEFAULT_AFTER, True)):
        for m in pattern.finditer(description or ""):
            value = _default_of(m, type_, after=after)
            if value is not _SKIP:
                return value
    return NO_DEFAULT


_SKIP = object()


def _default_of(m: re.Match[str], type_: str, *, after: bool) -> Any:
    """The value one default phrase gives; `_SKIP` when its words are not a value (look further)."""
    if m.group("sq") is not None or m.group("dq") is not None:
        text = m.group("sq") if m.group("sq") is not None else m.group("dq")
        return _as_type(text, type_, quoted=True)
    if m.group("num") is not None:
        return _as_type(m.group("num"), type_, quoted=False)
    word = m.group("word") or ""
    low = word.lower()
    if low in ("true", "false"):
        return _as_type(low, type_, quoted=False)
    if low in ("none", "null") and not after:
        return None
    # a bare word before "by default" is mostly a verb or a noun of the sentence ("returned by default", "'all'
    # types by default"); before "as default" it is the value ("with air as default")
    bare_by = after and m.group("link").lower() == "by"
    if _NOT_A_VALUE.match(word) or (after and low in _NOT_BEFORE_DEFAULT) or bare_by:
        return _SKIP
    if type_ in ("string", "any"):
        return word.split(" if ")[0].strip()
    return _SKIP


#: Words that stand before "as default" / "by default" without being the value ("set by default",
#: "enabled by default", "returned as default").
_NOT_BEFORE_DEFAULT = frozenset(
    "set used enabled disabled included excluded returned shown applied selected chosen assumed considered "
    "taken given treated provided specified searched sorted ordered and or".split()
)


def _as_type(text: str, type_: str, *, quoted: bool) -> Any:
    if type_ in ("integer", "float"):
        try:
            v = float(text.replace("_", ""))
        except ValueError:
            return NO_DEFAULT
        if type_ == "integer":
            return int(v) if v.is_integer() and abs(v) < 2**63 else NO_DEFAULT
        return v
    if type_ == "boolean":
        return {"true": True, "false": False}.get(text.strip().lower(), NO_DEFAULT)
    if type_ in ("string", "any"):
        return text
    if type_ in ("array", "tuple", "dict") and quoted:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return NO_DEFAULT
        return value if isinstance(value, (list, tuple, dict)) else NO_DEFAULT
    return NO_DEFAULT


def _param(name: str, raw: Any, required: bool, depth: int = 0) -> Param:
    if not isinstance(raw, Mapping):
        return Param(name, "any", required=required)
    t = _type(raw.get("type")) if depth < MAX_SCHEMA_DEPTH else "any"
    desc = str(raw.get("description") or "")
    enum = raw.get("enum")
    items = None
    if t in ("array", "tuple") and isinstance(raw.get("items"), Mapping):
        items = _param(f"{name}[]", raw["items"], False, depth + 1)
    props: dict[str, Param] = {}
    sub = raw.get("properties")
    if t == "dict" and isinstance(sub, Mapping):
        req_raw = raw.get("required")
        req: list[Any] = req_raw if isinstance(req_raw, list) else []
        props = {str(k): _param(str(k), v, str(k) in req, depth + 1) for k, v in sub.items()}  # a dict's keys
    if "default" in raw:
        default = raw["default"]
    else:
        default = documented_default(desc, t)
    return Param(
        name=name,
        type=t,
        description=desc,
        required=required,
        enum=tuple(enum) if isinstance(enum, list) and enum else None,
        format=str(raw["format"]) if isinstance(raw.get("format"), str) else None,
        default=default,
        items=items,
        properties=props,
    )


def parse_function(doc: Mapping[str, Any]) -> Function:
    """One function doc as a :class:`Function` (a malformed doc reads as far as it goes)."""
    raw_params = doc.get("parameters")
    params_raw: Mapping[str, Any] = raw_params if isinstance(raw_params, Mapping) else {}
    raw_props = params_raw.get("properties")
    props: Mapping[str, Any] = raw_props if isinstance(raw_props, Mapping) else {}
    raw_req = params_raw.get("required")
    req: list[Any] = raw_req if isinstance(raw_req, list) else []
    required = tuple(str(r) for r in req if str(r) in props)
    params = {str(k): _param(str(k), v, str(k) in required) for k, v in props.items()}
    return Function(str(doc.get("name") or ""), str(doc.get("description") or ""), params, required)


def functions(docs: Iterable[Mapping[str, Any]] | None) -> dict[str, Function]:
    """A task's offered functions by name (docs without a name are left out; a repeated name keeps its
    first doc)."""
    out: dict[str, Function] = {}
    for doc in docs or ():
        if isinstance(doc, Mapping):
            fn = parse_function(doc)
            if fn.name and fn.name not in out:
                out[fn.name] = fn
    return out


def resolve(written: str, offered: Mapping[str, Function] | Sequence[str]) -> str | None:
    """The offered function a written name means: the same name, or the name with its dots sent as
    underscores (``math_factorial`` for ``math.factorial``) when exactly one offered name reads so; None
    when no offered function has that name."""
    names = list(offered)
    if written in names:
        return written
    under = [n for n in names if n.replace(".", "_") == written]
    if len(under) == 1:
        return under[0]
    return None


def type_name(value: Any) -> str:
    """The dialect's name of a value's type (what a message shows)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "dict"
    if value is None:
        return "null"
    return type(value).__name__


def _fits(value: Any, type_: str) -> bool:
    if type_ == "any":
        return True
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_ == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ in ("array", "tuple"):
        return isinstance(value, (list, tuple))
    if type_ == "dict":
        return isinstance(value, Mapping)
    return True


def short(value: Any, limit: int = 60) -> str:
    """A value as a message shows it: its repr, cut to `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_date(text: str) -> bool:
    try:
        _dt.date.fromisoformat(text.strip())
    except ValueError:
        return False
    return True


def value_problem(value: Any, param: Param, *, nested: bool = True) -> str | None:
    """Why `value` does not fit `param` in BFCL's dialect -- a wrong type, an element of a wrong type
    (one level deep, as BFCL checks), a value outside the enum, a string not in the documented format --
    or None when it fits. ``None`` values are left alone (an explicit null is a separate question)."""
    if value is None:
        return None
    if not _fits(value, param.type):
        return f"{param.name} should be {_article(param.type)}, got {type_name(value)} {short(value)}"
    if param.enum is not None and not isinstance(value, (list, tuple, Mapping)) and not _in_enum(value, param.enum):
        return f"{param.name} = {short(value)} is not one of its allowed values {short(list(param.enum), 120)}"
    if param.format == "date" and isinstance(value, str) and not _is_date(value):
        return f"{param.name} = {short(value)} is not a date in the documented format (YYYY-MM-DD)"
    if nested and param.items is not None and isinstance(value, (list, tuple)):
        for k, elem in enumerate(value):
            why = value_problem(elem, attrs.evolve(param.items, name=f"{param.name}[{k}]"), nested=False)
            if why:
                return why
    return None


_PUNCT = re.compile(r"[ ,./\-_*^]")


def standard_string(text: str) -> str:
    """A string as BFCL's checker compares strings: lower case, without spaces and ``,./-_*^``, single
    quotes as double ("April 1, 2024" equals "april 1 2024")."""
    return _PUNCT.sub("", text).lower().replace("'", '"')


def _in_enum(value: Any, enum: Sequence[Any]) -> bool:
    if value in enum:
        return True
    if isinstance(value, str):
        std = standard_string(value)
        return any(isinstance(e, str) and standard_string(e) == std for e in enum)
    return False


def _article(type_: str) -> str:
    return f"an {type_}" if type_[0] in "aeiou" else f"a {type_}"
