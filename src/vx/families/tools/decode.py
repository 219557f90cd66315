"""One model-independent decoder of tool calls: what an agent's output asks to call, read as data.

API (stable; both the single-turn and the multi-turn halves of the family use it)::

    decode(output, functions=()) -> Decoded(calls=(Call(name, args), ...), error="", form="...")

``output`` is an answer as a model returned it: text, or structured calls (a list of ``{name: args}``
with ``args`` a JSON object or its text, as function-calling APIs return them; the multi-turn steps have
this shape too). ``functions`` are the task's function docs (BFCL's dialect, :mod:`.dialect`) or their
names: a written name is resolved to the offered function it means (``math_factorial`` is
``math.factorial`` when the docs name ``math.factorial``; :func:`.dialect.resolve`).

What it reads, whole outputs only:

* structured calls -- a list (or one) of ``{name: args}``, ``{"name": .., "arguments": ..}`` or
  ``{"function": {"name", "arguments"}}``; a string element of such a list is text (no call);
* JSON text -- one call object or a list of them (``name``/``function``/``func``/``tool`` beside
  ``arguments``/``parameters``/``args``/``params``), ``{"tool_calls": [...]}``, ``{name: {args}}``;
* Python call text -- ``f(a=1)``, ``[f(a=1), g(b=2)]``, calls separated by ``;`` or new lines;
* either of those inside one fenced block (`````json`` / `````python``) or inside ``<tool_call>``
  / ``<function_call>`` tags (several tags: several calls); markdown-escaped underscores (``\\_``) are
  read as ``_``.

An output that is none of these is **text**: a reply in words, which calls nothing (``calls == ()``,
``form == "text"``; the right answer when no offered function fits); so is ``[None]`` written as the call
list, and a call to ``no_function()``. An output that is one of these forms but cannot be
read -- broken JSON inside a tool-call tag, a call list that does not parse, an argument that is not a
value -- has ``error`` set to the reason; an output beyond what the decoder reads at all -- neither text
nor structured data, or over a bound -- has ``beyond`` set too (the family's root fires on those only;
calls that do not parse are a format problem, :func:`vx.families.tools.ops.static.format_problem`).

Untrusted output stays data: Python text is parsed with :mod:`ast` and its argument nodes are walked
as literals -- constants, lists, tuples, dicts, sets, signed numbers and bounded arithmetic on numbers
(``2*3.5``, ``10**3``); a bare name is kept as its text (a variable, as BFCL reads it), a nested
keyword call as ``{name: {args}}``. Nothing is ever evaluated. Bounds: :data:`MAX_CHARS` characters,
:data:`MAX_CALLS` calls, :data:`MAX_DEPTH` levels of nesting, :data:`MAX_NODES` syntax nodes, integers of
at most :data:`MAX_INT_BITS` bits; over any of them the output is unreadable, with the bound named.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from vx.families.tools.dialect import resolve

__all__ = [
    "MAX_CALLS",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_NODES",
    "Call",
    "Decoded",
    "decode",
    "NO_CALL_NAMES",
    "offered_names",
]

MAX_CHARS = 100_000  # characters of one output
MAX_CALLS = 64  # calls in one output
MAX_DEPTH = 32  # nesting of argument values
MAX_NODES = 50_000  # syntax nodes of Python call text
MAX_INT_BITS = 4096  # an integer argument's size (and an arithmetic result's)
MAX_STR = 50_000  # characters of a string built by arithmetic ("a" + "b")


class Unreadable(ValueError):
    """An output (or part of one) in a call form that cannot be read; the message says why."""


class Beyond(Unreadable):
    """An output beyond what the decoder reads at all: neither text nor structured data, or over one of
    the bounds (characters, calls, nesting, syntax nodes, integer size)."""


@attrs.frozen
class Call:
    """One call: the function's name (the offered name it resolves to, else as written), its arguments
    as plain values (str, int, float, bool, None, lists and dicts of them), the name as written, and
    whether that name is one of the offered functions (:func:`decode` sets it; True when it was given no
    docs)."""

    name: str
    args: Mapping[str, Any] = attrs.field(factory=dict)
    written: str = ""
    #: parameters whose value was written as an expression, not a literal (a bare name, a call, an
    #: attribute): kept as their text
    expressions: tuple[str, ...] = ()
    offered: bool = True

    def to_data(self) -> dict[str, Any]:
        """Plain data (what an observer of a peer op returns)."""
        return {
            "name": self.name,
            "args": dict(self.args),
            "written": self.written,
            "expressions": list(self.expressions),
            "offered": self.offered,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Call:
        return cls(
            str(data.get("name", "")),
            dict(data.get("args") or {}),
            str(data.get("written", "")),
            tuple(data.get("expressions") or ()),
            bool(data.get("offered", True)),
        )


@attrs.frozen
class Decoded:
    """What an output asks to call. ``error`` is "" when it was read; ``form`` says how it was read:
    ``structured``, ``json``, ``python``, ``tagged`` (inside tool-call tags), ``text`` (a reply in words:
    no call) or ``empty``; ``fenced`` when the calls were inside a fenced block."""

    calls: tuple[Call, ...] = ()
    error: str = ""
    form: str = ""
    fenced: bool = False
    #: text follows the calls (a fenced block or a call list, then words), or text parts stand among
    #: structured calls
    prose: bool = False
    #: how the calls are laid out: ``list`` (Python calls in brackets), ``bare`` (Python calls without them),
    #: ``strings`` (a list of call strings), ``objects`` (call objects written as JSON or Python literals in
    #: text), ``wrapped`` (a ``{"tool_calls": [...]}`` object), ``tagged``, ``structured``; "" with no call
    layout: str = ""
    #: the output is beyond what the decoder reads at all (neither text nor structured data, or over a
    #: bound), not merely calls that do not parse
    beyond: bool = False

    @property
    def ok(self) -> bool:
        return not self.error

    @property
    def no_call(self) -> bool:
        """Read, and it calls nothing (a reply in words, an empty list, an empty output)."""
        return self.ok and not self.calls

    def to_data(self) -> dict[str, Any]:
        return {
            "calls": [c.to_data() for c in self.calls],
            "error": self.error,
            "form": self.form,
            "fenced": self.fenced,
            "prose": self.prose,
            "layout": self.layout,
            "beyond": self.beyond,
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Decoded:
        return cls(
            tuple(Call.from_data(c) for c in data.get("calls") or ()),
            str(data.get("error", "")),
            str(data.get("form", "")),
            bool(data.get("fenced", False)),
            bool(data.get("prose", False)),
            str(data.get("layout", "")),
            bool(data.get("beyond", False)),
        )


def offered_names(functions: Iterable[Any] | None) -> list[str]:
    """The offered names: from function docs (their ``name``) or names given as strings."""
    out = []
    for f in functions or ():
        if isinstance(f, str):
            out.append(f)
        elif isinstance(f, Mapping) and isinstance(f.get("name"), str):
            out.append(f["name"])
    return out


# --------------------------------------------------------------------------- the entry point


def decode(output: Any, functions: Iterable[Any] | None = ()) -> Decoded:
    """What `output` asks to call (see the module docstring); never raises on any output."""
    names = offered_names(functions)
    try:
        calls, form, fenced, prose, layout = _decode(output)
    except Unreadable as exc:
        return Decoded((), str(exc), "unreadable", beyond=isinstance(exc, Beyond))
    except (RecursionError, MemoryError):
        return Decoded((), "the output nests too deeply to read", "unreadable", beyond=True)
    if len(calls) > MAX_CALLS:
        why = f"the output makes {len(calls)} calls (at most {MAX_CALLS} are read)"
        return Decoded((), why, "unreadable", beyond=True)
    calls = [c for c in calls if not _says_no_call(c)]
    return Decoded(tuple(_resolved(c, names) for c in calls), "", form, fenced, prose, layout)


#: Names some function-calling models call to say that no function fits (``no_function()``).
NO_CALL_NAMES = frozenset({"no_function", "no_tool", "no_function_call", "none"})


def _says_no_call(call: Call) -> bool:
    return call.written.lower() in NO_CALL_NAMES and not call.args


def _resolved(call: Call, names: Sequence[str]) -> Call:
    if not names:
        return call
    found = resolve(call.written, names)
    if found is None:
        return attrs.evolve(call, name=call.written, offered=False)
    return attrs.evolve(call, name=found, offered=True)


def _decode(output: Any) -> tuple[list[Call], str, bool, bool, str]:
    if output is None:
        return [], "empty", False, False, ""
    if isinstance(output, (list, tuple)):
        calls = _structured(list(output))
        text_parts = bool(calls) and any(isinstance(e, str) for e in output)
        return calls, "structured", False, text_parts, "structured"
    if isinstance(output, Mapping):
        return _structured([output]), "structured", False, False, "structured"
    if not isinstance(output, str):
        raise Beyond(f"the output is a {type(output).__name__}, neither text nor structured calls")
    if len(output) > MAX_CHARS:
        raise Beyond(f"the output has {len(output):,} characters (at most {MAX_CHARS:,} are read)")
    return _text(output)


# --------------------------------------------------------------------------- structured calls

_NAME_KEYS = ("name", "function", "func", "tool", "tool_name", "function_name", "api", "action")
_ARG_KEYS = ("arguments", "parameters", "args", "params", "kwargs", "input", "action_input")
_LIST_KEYS = ("tool_calls", "calls", "function_calls", "functions", "tools", "actions")


def _structured(elements: list[Any]) -> list[Call]:
    calls: list[Call] = []
    for k, elem in enumerate(elements, 1):
        if isinstance(elem, str):
            continue  # a text part of a structured reply (no call)
        if not isinstance(elem, Mapping):
            raise Unreadable(f"element {k} of the structured output is a {type(elem).__name__}, not a call")
        calls.extend(_call_object(elem, where=f"element {k}"))
    return calls


def _call_object(obj: Mapping[str, Any], where: str) -> list[Call]:
    """The calls one JSON object stands for (see the module docstring's shapes)."""
    for key in _LIST_KEYS:
        if key in obj and isinstance(obj[key], list) and len(obj) <= 2:
            out: list[Call] = []
            for k, sub in enumerate(obj[key], 1):
                if not isinstance(sub, Mapping):
                    raise Unreadable(f"{where}: {key} entry {k} is a {type(sub).__name__}, not a call")
                out.extend(_call_object(sub, f"{where}, {key} entry {k}"))
            return out
    if obj.get("type") == "function" and isinstance(obj.get("function"), Mapping):
        return _call_object(obj["function"], where)
    name_key = next((k for k in _NAME_KEYS if isinstance(obj.get(k), str)), None)
    if name_key is not None and (len(obj) == 1 or any(k in obj for k in _ARG_KEYS) or set(obj) <= {name_key, "id"}):
        arg_key = next((k for k in _ARG_KEYS if k in obj), None)
        args = _arguments(obj[arg_key] if arg_key else {}, f"{where} ({obj[name_key]})")
        return [_make_call(obj[name_key], args, where)]
    if isinstance(obj.get("function"), Mapping) and isinstance(obj["function"].get("name"), str):
        return _call_object(obj["function"], where)
    if len(obj) == 1:
        ((name, args),) = obj.items()
        if isinstance(name, str) and (isinstance(args, (Mapping, str)) or args is None):
            return [_make_call(name, _arguments(args if args is not None else {}, f"{where} ({name})"), where)]
    raise Unreadable(f"{where} is a JSON object that is not a call (keys: {', '.join(map(str, list(obj)[:6]))})")


def _arguments(raw: Any, where: str) -> dict[str, Any]:
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        if len(text) > MAX_CHARS:
            raise Beyond(f"the arguments of {where} have {len(text):,} characters (at most {MAX_CHARS:,})")
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise Unreadable(f"the arguments of {where} are not JSON: {_reason(exc)}") from None
    if not isinstance(raw, Mapping):
        raise Unreadable(f"the arguments of {where} are a {type(raw).__name__}, not an object of named arguments")
    out = {}
    for key, value in raw.items():
        _check_depth(value, f"argument {key!s} of {where}")
        out[str(key)] = _plain(value)
    return out


def _make_call(name: Any, args: Mapping[str, Any], where: str, expressions: tuple[str, ...] = ()) -> Call:
    if not isinstance(name, str) or not name.strip():
        raise Unreadable(f"{where} names no function")
    name = name.strip()
    if len(name) > 200:
        raise Beyond(f"{where}: a function name of {len(name)} characters")
    return Call(name, dict(args), name, expressions)


def _plain(value: Any) -> Any:
    """JSON-like plain data: tuples as lists, dict keys as strings."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise Beyond(f"an integer of {value.bit_length()} bits (at most {MAX_INT_BITS})")
    return value


def _check_depth(value: Any, where: str) -> None:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > MAX_DEPTH:
            raise Beyond(f"{where} nests deeper than {MAX_DEPTH} levels")
        if isinstance(v, Mapping):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, (list, tuple)):
            stack.extend((x, d + 1) for x in v)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "it nests too deeply"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


# --------------------------------------------------------------------------- text

_TAG = re.compile(
    r"<(tool_call|function_call|functioncall|function-call|tool_use|toolcall)>\s*(.*?)\s*(?:</\1>|(?=<\1>)|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_FENCE = re.compile(r"\A```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.DOTALL)
_LEAD_FENCE = re.compile(r"\A```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_CALL_START = re.compile(r"\A\[?\s*[A-Za-z_][\w.]*\s*\(")


def _text(output: str) -> tuple[list[Call], str, bool, bool, str]:
    text = output.strip()
    if not text:
        return [], "empty", False, False, ""
    if "\\_" not in text:
        return _read_text(text)
    try:
        first = _read_text(text)
    except Unreadable:
        first = None
    if first is not None and first[1] != "text":
        return first
    try:  # markdown-escaped underscores (math\_toolkit.sum\_of\_multiples), when the text reads no other way
        return _read_text(text.replace("\\_", "_"))
    except Unreadable:
        if first is not None:
            return first
        raise


#: An explicit "no call" written as a call list: ``[None]``
_NONE = re.compile(r"\A\[\s*None\s*\]\Z")


def _read_text(text: str) -> tuple[list[Call], str, bool, bool, str]:
    tags = list(_TAG.finditer(text))
    if tags:
        calls: list[Call] = []
        for k, tag in enumerate(tags, 1):
            body = tag.group(2).strip()
            if not body:
                continue
            read = _body(body, where=f"<{tag.group(1)}> {k}")
            if read is None:
                raise Unreadable(f"<{tag.group(1)}> {k} holds neither a JSON call nor a Python call: {_clip(body)}")
            calls.extend(read[0])
        return calls, "tagged", False, False, "tagged"
    fenced = prose = False
    m = _FENCE.match(text)
    if m is None:
        lead = _LEAD_FENCE.match(text)
        if lead is not None and _body(lead.group(2).strip(), where="the fenced block") is not None:
            m, prose = lead, True
    if m is not None:
        text, fenced = m.group(2).strip(), True
        if not text:
            return [], "empty", True, prose, ""
    if _NONE.match(text):
        return [], "python", fenced, prose, ""
    found = _body(text, where="the output")
    if found is None and text[:1] == "[":
        end = _closing(text)
        if end is not None and text[end + 1 :].strip():
            found = _body(text[: end + 1], where="the output")
            prose = prose or found is not None
            if found is not None:
                text = text[: end + 1]
    if found is not None:
        calls, layout = found
        return calls, ("json" if text[:1] in "[{" and _is_json_like(text) else "python"), fenced, prose, layout
    if text[:1] in "[{" or _CALL_START.match(text):
        raise Unreadable(f"the output looks like a call but cannot be read: {_why_not(text)}")
    return [], "text", fenced, False, ""


def _closing(text: str) -> int | None:
    """The index of the bracket that closes ``text[0]`` (quotes and escapes skipped), or None."""
    pairs = {"[": "]", "(": ")", "{": "}"}
    stack: list[str] = []
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in ("'", '"'):
            quote = ch
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in ")]}":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i
    return None


def _is_json_like(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _clip(text: str, n: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= n else text[: n - 1] + "…")


def _body(text: str, where: str) -> tuple[list[Call], str] | None:
    """The calls a piece of text holds as JSON or as Python call text, with its layout (see `Decoded`);
    None when it is neither."""
    if text[:1] in "[{":
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = _NOT_JSON
        if data is _NOT_JSON:
            data = _python_literal(text, where)  # JSON written as Python ({'name': 'f', ...}, True)
        if data is not _NOT_JSON:
            wrapped = isinstance(data, Mapping) and any(isinstance(data.get(k), list) for k in _LIST_KEYS)
            return _json_calls(data, where), ("wrapped" if wrapped else "objects")
    found = _python_calls(text, where)
    if found is None:
        return None
    return found, _python_layout(text)


def _python_layout(text: str) -> str:
    """``list`` for calls in brackets (``[f(a=1)]``), ``strings`` for a list of call strings, ``bare``
    for calls without brackets."""
    stripped = text.lstrip()
    if stripped[:1] not in "[(":
        return "bare"
    inner = stripped[1:].lstrip()
    return "strings" if inner[:1] in "'\"" else "list"


def _python_literal(text: str, where: str) -> Any:
    """A dict or a list of dicts written as a Python literal, walked as literals (never evaluated);
    `_NOT_JSON` when the text is not one."""
    try:
        tree = _parse(text, "eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _NOT_JSON
    node = tree.body
    if isinstance(node, ast.Dict) or (
        isinstance(node, (ast.List, ast.Tuple)) and node.elts and all(isinstance(e, ast.Dict) for e in node.elts)
    ):
        value, _ = _literal(node, 0, where)
        return value
    return _NOT_JSON


_NOT_JSON = object()


def _json_calls(data: Any, where: str) -> list[Call]:
    if isinstance(data, list):
        out: list[Call] = []
        for k, elem in enumerate(data, 1):
            if isinstance(elem, Mapping):
                out.extend(_call_object(elem, f"{where}, element {k}"))
            elif isinstance(elem, str):
                sub = _python_calls(elem, f"{where}, element {k}")
                if sub is None:
                    raise Unreadable(f"{where}: element {k} is a string that is not a call: {_clip(elem)}")
                out.extend(sub)
            else:
                raise Unreadable(f"{where}: element {k} is a {type(elem).__name__}, not a call")
        return out
    if isinstance(data, Mapping):
        return _call_object(data, where)
    raise Unreadable(f"{where} is a JSON {type(data).__name__}, not a call")


# --------------------------------------------------------------------------- Python call text


def _parse(text: str, mode: str) -> Any:
    """``ast.parse`` without its warnings (an invalid escape such as ``\\_`` in model text is data)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(text, mode=mode)


def _python_calls(text: str, where: str) -> list[Call] | None:
    """Calls written as Python: one call, a list or tuple of calls (or of call strings), or call
    statements separated by ``;`` or new lines. None when the text is not Python of that shape."""
    try:
        tree = _parse(text, "eval")
        exprs: list[ast.expr] = [tree.body]
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        try:
            module = _parse(text, "exec")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        if not module.body or not all(isinstance(s, ast.Expr) for s in module.body):
            return None
        exprs = [s.value for s in module.body if isinstance(s, ast.Expr)]
    n = 0
    for e in exprs:
        for _ in ast.walk(e):
            n += 1
            if n > MAX_NODES:
                raise Beyond(f"{where} has more than {MAX_NODES:,} syntax nodes")
    items: list[ast.expr] = []
    for e in exprs:
        if isinstance(e, (ast.List, ast.Tuple)):
            items.extend(e.elts)
        else:
            items.append(e)
    if not items:
        return [] if all(isinstance(e, (ast.List, ast.Tuple)) for e in exprs) else None
    out: list[Call] = []
    for k, node in enumerate(items, 1):
        if isinstance(node, ast.Call):
            out.append(_ast_call(node, f"{where}, call {k}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            sub = _python_calls(node.value.strip(), f"{where}, call {k}")
            if sub is None:
                return None
            out.extend(sub)
        else:
            return None
    return out


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _ast_call(node: ast.Call, where: str) -> Call:
    name = _dotted(node.func)
    if name is None:
        raise Unreadable(f"{where}: the called thing is not a name ({_clip(ast.unparse(node.func))})")
    if node.args:
        raise Unreadable(
            f"{where}: {name} is given {len(node.args)} positional argument(s); a call names its arguments (name=value)"
        )
    args: dict[str, Any] = {}
    expressions = []
    for kw in node.keywords:
        if kw.arg is None:
            raise Unreadable(f"{where}: {name} unpacks **{_clip(ast.unparse(kw.value), 40)}; arguments must be named")
        if kw.arg in args:
            raise Unreadable(f"{where}: {name} names the argument {kw.arg} twice")
        value, literal = _literal(kw.value, 1, where)
        args[kw.arg] = value
        if not literal:
            expressions.append(kw.arg)
    return Call(name, args, name, tuple(expressions))


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _arith(op: ast.operator, a: Any, b: Any, where: str) -> Any:
    """Bounded arithmetic on numbers (and ``str + str``): what BFCL's decoder evaluates, without eval."""
    fn = _BINOPS.get(type(op))
    if fn is None:
        raise Unreadable(f"{where}: the operator {type(op).__name__} is not read in an argument")
    if isinstance(a, str) and isinstance(b, str) and isinstance(op, ast.Add):
        if len(a) + len(b) > MAX_STR:
            raise Beyond(f"{where}: a string of more than {MAX_STR:,} characters")
        return a + b
    if not (_number(a) and _number(b)):
        raise Unreadable(f"{where}: arithmetic on {type(a).__name__} and {type(b).__name__} is not read")
    if isinstance(op, ast.Pow):
        if isinstance(a, int) and isinstance(b, int) and b > 0:
            if abs(a) > 1 and b * max(abs(a), 2).bit_length() > MAX_INT_BITS:
                raise Beyond(f"{where}: {a} ** {b} is larger than {MAX_INT_BITS} bits")
        elif abs(b) > 1024 and abs(a) > 1:
            raise Beyond(f"{where}: the exponent {b} is out of range")
    if isinstance(op, (ast.Mult,)) and isinstance(a, int) and isinstance(b, int):
        if a.bit_length() + b.bit_length() > MAX_INT_BITS:
            raise Beyond(f"{where}: a product larger than {MAX_INT_BITS} bits")
    try:
        out = fn(a, b)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        raise Unreadable(f"{where}: {type(exc).__name__} in arithmetic") from None
    if isinstance(out, complex):
        raise Unreadable(f"{where}: a complex number is not a value")
    if isinstance(out, float) and not math.isfinite(out):
        raise Unreadable(f"{where}: the arithmetic overflows")
    if isinstance(out, int) and out.bit_length() > MAX_INT_BITS:
        raise Beyond(f"{where}: an integer larger than {MAX_INT_BITS} bits")
    return out


def _literal(node: ast.expr, depth: int, where: str) -> tuple[Any, bool]:
    """A value from an argument node, walking literals only; (value, whether it was a literal)."""
    if depth > MAX_DEPTH:
        raise Beyond(f"{where}: an argument nests deeper than {MAX_DEPTH} levels")
    if isinstance(node, ast.Constant):
        v = node.value
        if v is Ellipsis:
            return "...", True
        if isinstance(v, complex):
            raise Unreadable(f"{where}: a complex number is not a value")
        if isinstance(v, bytes):
            raise Unreadable(f"{where}: a bytes literal is not a value")
        if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
            raise Beyond(f"{where}: an integer of {v.bit_length()} bits (at most {MAX_INT_BITS})")
        return v, True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v, lit = _literal(node.operand, depth + 1, where)
        if not _number(v):
            raise Unreadable(f"{where}: a sign before a {type(v).__name__}")
        return (-v if isinstance(node.op, ast.USub) else v), lit
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        v, lit = _literal(node.operand, depth + 1, where)
        if not isinstance(v, bool):
            raise Unreadable(f"{where}: `not` before a {type(v).__name__}")
        return (not v), lit
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        vals = [_literal(e, depth + 1, where) for e in node.elts]
        return [v for v, _ in vals], all(lit for _, lit in vals)
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        lit_all = True
        for knode, vnode in zip(node.keys, node.values):
            if knode is None:
                raise Unreadable(f"{where}: a dict unpacks **{_clip(ast.unparse(vnode), 40)}")
            key, klit = _literal(knode, depth + 1, where)
            if isinstance(key, (list, dict)):
                raise Unreadable(f"{where}: a dict key that is a {type(key).__name__}")
            val, vlit = _literal(vnode, depth + 1, where)
            out[str(key) if not isinstance(key, str) else key] = val
            lit_all = lit_all and klit and vlit
        return out, lit_all
    if isinstance(node, ast.BinOp):
        a, la = _literal(node.left, depth + 1, where)
        b, lb = _literal(node.right, depth + 1, where)
        return _arith(node.op, a, b, where), la and lb
    if isinstance(node, ast.Name):
        return node.id, False  # a variable: kept as its name (BFCL reads it so)
    if isinstance(node, ast.Attribute):
        name = _dotted(node)
        if name is None:
            raise Unreadable(f"{where}: an attribute of an expression ({_clip(ast.unparse(node), 40)})")
        return name, False
    if isinstance(node, ast.Call):
        if node.keywords and not node.args and _dotted(node.func) is not None:
            inner = _ast_call(node, where)  # a nested keyword call, as BFCL reads it: {name: {args}}
            return {inner.written: dict(inner.args)}, False
        text = ast.unparse(node)
        if len(text) > 500:
            raise Unreadable(f"{where}: a call as an argument, {len(text)} characters long")
        return text, False
    raise Unreadable(f"{where}: {type(node).__name__} is not a value ({_clip(ast.unparse(node), 40)})")


def _why_not(text: str) -> str:
    """Why text that looks like a call does not read (the parser's first complaint)."""
    if text[:1] in "[{":
        try:
            json.loads(text)
        except (ValueError, RecursionError) as exc:
            json_reason = _reason(exc)
        else:
            json_reason = ""
    else:
        json_reason = ""
    try:
        _parse(text, "eval")
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})" + (f"; as JSON: {json_reason}" if json_reason else "")
    except (ValueError, MemoryError, RecursionError) as exc:
        return _reason(exc)
    return "it is neither a call nor a list of calls" + (f"; as JSON: {json_reason}" if json_reason else "")
