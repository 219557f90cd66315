"""Plain-data encoding between the parent and the sandboxed child.

Two directions, two formats, both chosen so that nothing the child sends can run code in the
parent:

* parent → child (the request: code, entry point, call arguments, limits) is a ``marshal`` blob (format 2: no shared
  references, so every call gets its own copy of its arguments). The parent is trusted and the child reads it with the
  interpreter's built-in ``marshal`` module, which costs no import time. :func:`encode_request` refuses anything that is
  not plain data (code objects included).
* child → parent (the results) is a stream of frames: a 4-byte big-endian length followed by
  that many bytes of UTF-8 JSON. :func:`decode_value` turns the *value* encoding below back
  into Python objects and rejects anything else; it never unpickles, never evaluates and never
  imports anything named by the child.

Value encoding (what the child's harness writes, what :func:`decode_value` accepts)::

    null | true | false                 None, True, False
    <JSON integer>                       int  (the child uses this form for |n| < 2**63)
    <JSON number with . or e>            finite float (repr round-trips exactly)
    <JSON string>                        str  (lone surrogates survive as \\udXXX escapes)
    [v, ...]                             list
    {"tuple": [v, ...]}                  tuple
    {"set": [v, ...]}                    set
    {"frozenset": [v, ...]}              frozenset
    {"dict": [[k, v], ...]}              dict (keys may be any hashable value; order kept)
    {"bytes": "<hex>"}                   bytes
    {"complex": [re, im]}                complex (re, im are float encodings)
    {"float": "inf" | "-inf" | "nan"}    non-finite float
    {"int": "<hex>"}                     int of any size, e.g. "-0x1f"

Every JSON object is a one-key type tag; a plain JSON object is never a dict. Anything that
does not match exactly raises :class:`ProtocolError`.

The child may be the candidate's, so decoding is bounded, not only strict: a frame is *costed*
before it is parsed (:func:`decode_cost`, an upper estimate of the memory its Python objects
take; :func:`parse_frame` refuses frames over budget without allocating them), nesting is
limited to :data:`MAX_DEPTH`, set and dict members that share one hash value (which would make
building the set quadratic) are refused, and decoding has a deadline. Every refusal is a
:class:`ProtocolError`; nothing else escapes.
"""

from __future__ import annotations

import json
import marshal
import math
import re
import time
from collections import Counter
from typing import Any

#: Nesting deeper than this is refused in both directions (the child reports "unserializable").
MAX_DEPTH = 200

_PLAIN_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class ProtocolError(ValueError):
    """The child's result stream is malformed (the run is then reported as crashed)."""


#: Set/frozenset members or dict keys allowed to share one hash value. Honest data has at most
#: a handful (CPython hashes -1 and -2 alike); thousands are a hash-flooding attack, which makes
#: building the set quadratic in its size.
MAX_SAME_HASH = 32

#: Seconds one frame's value may take to decode (everything is linear once the cost and the
#: collisions are bounded; this is the backstop).
DECODE_SECONDS = 10.0

#: Estimated bytes of parent memory per token of a frame's JSON, for CPython 3.11: a list
#: (``[``) about 72 bytes plus slack, a JSON object (``{``, a type tag) about 230 bytes while it
#: is alive plus the container built from it, an element (``,``) an 8-byte pointer and a small
#: object, a string (two ``"``) a 50-byte header; every byte of text about two bytes.
COST_LIST, COST_OBJECT, COST_ITEM, COST_QUOTE, COST_BYTE = 100, 300, 16, 25, 2

#: A JSON string once its escapes are gone (see :func:`decode_cost`): linear to match.
_PLAIN_STRING = re.compile(rb'"[^"]*"')


def decode_cost(payload: bytes, limit: int | None = None) -> int:
    """An upper estimate of the memory (bytes) that parsing and decoding ``payload`` takes.

    Brackets inside strings are text, not containers, so strings are cut out first: escape
    pairs are removed left to right (``\\\\`` then ``\\"``: JSON's own pairing), after which
    every ``"`` delimits a string. Everything here is linear, and with ``limit`` the figure is
    checked against it before any copy is made (a frame far over it costs nothing to refuse).
    The child's harness computes the same figure before it sends a value (``_decode_cost``),
    so an honest report is never over the parent's budget.
    """
    return _measure(payload, limit)[0]


def _measure(payload: bytes, limit: int | None) -> tuple[int, int]:
    """(decode cost, JSON object members beyond one per object)."""
    cost = COST_BYTE * len(payload) + COST_QUOTE * payload.count(b'"')
    if limit is not None and cost > limit:
        return cost, 0
    unescaped = payload.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = _PLAIN_STRING.sub(b"", unescaped)
    objects = skeleton.count(b"{")
    cost += COST_LIST * skeleton.count(b"[") + COST_OBJECT * objects + COST_ITEM * skeleton.count(b",")
    return cost, skeleton.count(b":") - objects


#: JSON object members allowed beyond one per object: only the frame itself has several keys
#: (every value tag has exactly one), so many more are a flood of keys (possibly colliding).
_EXTRA_MEMBERS = 32


# --------------------------------------------------------------------------------------------
# parent → child
# --------------------------------------------------------------------------------------------


def check_plain(value: Any, *, where: str = "value", _depth: int = 0) -> None:
    """Raise ``TypeError`` unless ``value`` is plain data of exact built-in types.

    Subclasses (namedtuples, Counters, enums) are refused too: call arguments must mean the
    same thing on both sides, and marshal would either reject or silently flatten them.
    """
    if _depth > MAX_DEPTH:
        raise TypeError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return
    if kind in (list, tuple, set, frozenset):
        for index, item in enumerate(value):
            if type(item) not in _PLAIN_SCALARS:  # fast path: scalars need no call
                check_plain(item, where=f"{where}[{index}]", _depth=_depth + 1)
        return
    if kind is dict:
        for key, item in value.items():
            check_plain(key, where=f"{where} key {key!r}", _depth=_depth + 1)
            check_plain(item, where=f"{where}[{key!r}]", _depth=_depth + 1)
        return
    raise TypeError(
        f"{where}: {kind.__module__}.{kind.__qualname__} is not plain data; sandbox call "
        "arguments must be None/bool/int/float/complex/str/bytes or list/tuple/dict/set/"
        "frozenset of those (exact types, no subclasses)"
    )


#: marshal format 2 has no object references: an object that appears twice in the request
#: (e.g. one list passed to two calls) arrives as two independent copies, so a call that
#: mutates its arguments cannot change another call's inputs.
MARSHAL_VERSION = 2


def encode_request(request: dict[str, Any]) -> bytes:
    """Serialise a request for the child harness (plain data only, checked first)."""
    check_plain(request, where="request")
    return marshal.dumps(request, MARSHAL_VERSION)


# --------------------------------------------------------------------------------------------
# child → parent
# --------------------------------------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"bare JSON constant {name} (non-finite floats must be tagged)")


#: Frames up to this many bytes are not measured before parsing (most call frames: a few hundred bytes):
#: at most ``_MAX_COST_PER_BYTE`` bytes of memory per byte of text, they cannot be over a decode budget
#: above that product, and too few members fit in them to cost anything (the frame's keys and every
#: value's one-key tags are still checked after parsing).
SMALL_FRAME = 4096
_MAX_COST_PER_BYTE = COST_OBJECT + COST_QUOTE + COST_BYTE

#: One decoder for every frame (``json.loads`` with an option builds a new one per call).
_FRAME_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_frame(payload: bytes, *, max_cost: int | None = None) -> dict[str, Any]:
    """Parse one frame's JSON payload; the top level must be an object.

    ``max_cost`` bounds :func:`decode_cost` (bytes of parent memory): a frame over it is refused
    before anything is allocated for it.
    """
    if max_cost is not None and (len(payload) > SMALL_FRAME or len(payload) * _MAX_COST_PER_BYTE > max_cost):
        cost, extra = _measure(payload, max_cost)
        if cost > max_cost:
            raise ProtocolError(
                f"a {len(payload)}-byte frame: decoding it would take about {cost >> 20} MiB, over the "
                f"{max_cost >> 20} MiB budget"
            )
        if extra > _EXTRA_MEMBERS:
            raise ProtocolError(f"frame has {extra} more JSON object members than a frame can have")
    try:
        text = payload.decode("utf-8")
        obj = _FRAME_DECODER.decode(text)
    except ProtocolError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"frame is not valid JSON: {type(exc).__name__}: {str(exc)[:200]}") from None
    if type(obj) is not dict:
        raise ProtocolError(f"frame is a JSON {type(obj).__name__}, expected an object")
    return obj


def decode_value(encoded: Any, _depth: int = 0, *, deadline: float | None = None) -> Any:
    """Decode one value (see the module docstring); raise ProtocolError if malformed.

    ``deadline`` (a ``time.monotonic()`` instant; default: :data:`DECODE_SECONDS` from now)
    bounds the time spent; past it the value is refused.
    """
    budget = _Clock(time.monotonic() + DECODE_SECONDS if deadline is None else deadline)
    try:
        return _decode(encoded, _depth, budget)
    except ProtocolError:
        raise
    except (RecursionError, MemoryError, OverflowError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed value: {type(exc).__name__}: {str(exc)[:200]}") from None


class _Clock:
    """The decode deadline, checked every few thousand nodes (cheap)."""

    __slots__ = ("deadline", "countdown")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.countdown = 0

    def tick(self, n: int = 1) -> None:
        self.countdown -= n
        if self.countdown < 0:
            self.countdown = 4096
            if time.monotonic() > self.deadline:
                raise ProtocolError(f"decoding the value took longer than {DECODE_SECONDS:g} s")


def _check_hashes(members: list[Any], tag: str) -> None:
    """Refuse hash flooding: many members with one hash make set/dict construction quadratic."""
    if len(members) <= MAX_SAME_HASH:
        return
    ((_, count),) = Counter(map(hash, members)).most_common(1)
    if count > MAX_SAME_HASH:
        raise ProtocolError(f"{tag}: {count} members share one hash value (a hash-collision attack)")


def _decode(encoded: Any, _depth: int, clock: _Clock) -> Any:
    if _depth > MAX_DEPTH:
        raise ProtocolError(f"value nested deeper than {MAX_DEPTH} levels")
    clock.tick()
    kind = type(encoded)
    if encoded is None or kind in (bool, int, str):
        return encoded
    if kind is float:
        if not math.isfinite(encoded):  # e.g. 1e999 written as a plain number
            raise ProtocolError("non-finite float written as a plain JSON number")
        return encoded
    if kind is list:
        return _decode_items(encoded, _depth, clock)
    if kind is not dict or len(encoded) != 1:
        raise ProtocolError(f"malformed value: expected a one-key type tag, got {_brief(encoded)}")
    ((tag, body),) = encoded.items()
    try:
        if tag == "tuple":
            return tuple(_decode_items(_expect_list(body, tag), _depth, clock))
        if tag in ("set", "frozenset"):
            items = _decode_items(_expect_list(body, tag), _depth, clock)
            _check_hashes(items, tag)
            return set(items) if tag == "set" else frozenset(items)
        if tag == "dict":
            pairs = []
            for pair in _expect_list(body, tag):
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError(f"dict entry must be a [key, value] pair, got {_brief(pair)}")
                pairs.append((_decode(pair[0], _depth + 1, clock), _decode(pair[1], _depth + 1, clock)))
            _check_hashes([key for key, _ in pairs], tag)
            return dict(pairs)
        if tag == "bytes":
            return bytes.fromhex(_expect_str(body, tag))
        if tag == "float":
            text = _expect_str(body, tag)
            if text not in _NONFINITE:
                raise ProtocolError(f"float tag must be inf, -inf or nan, got {text[:40]!r}")
            return _NONFINITE[text]
        if tag == "int":
            text = _expect_str(body, tag)
            digits = text[1:] if text.startswith("-") else text
            if not digits.startswith("0x") or len(digits) < 3:
                raise ProtocolError(f"int tag must be hexadecimal, got {text[:40]!r}")
            return int(text, 16)
        if tag == "complex":
            parts = _expect_list(body, tag)
            if len(parts) != 2:
                raise ProtocolError("complex tag needs [real, imag]")
            real, imag = (_decode(part, _depth + 1, clock) for part in parts)
            if type(real) is not float or type(imag) is not float:
                raise ProtocolError("complex parts must be floats")
            return complex(real, imag)
    except TypeError as exc:  # unhashable key or set element
        raise ProtocolError(f"malformed {tag}: {exc}") from None
    except ValueError as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"malformed {tag}: {exc}") from None
    raise ProtocolError(f"unknown type tag {_brief(tag)}")


_JSON_SCALARS = frozenset({int, str, bool, type(None)})


def _decode_items(items: list[Any], depth: int, clock: _Clock) -> list[Any]:
    """Decode a JSON array's elements (plain scalars take an inline fast path; an array of ints, strings,
    booleans and nulls only is copied whole: one pass in C tells)."""
    clock.tick(len(items))
    if set(map(type, items)) <= _JSON_SCALARS:
        return list(items)
    out: list[Any] = []
    add = out.append
    for item in items:
        kind = type(item)
        if kind is int or kind is str or kind is bool or item is None:
            add(item)
        elif kind is float and -math.inf < item < math.inf:
            add(item)
        else:
            add(_decode(item, depth + 1, clock))
    return out


def _expect_list(body: Any, tag: str) -> list[Any]:
    if type(body) is not list:
        raise ProtocolError(f"{tag} tag needs a JSON array, got {_brief(body)}")
    return body


def _expect_str(body: Any, tag: str) -> str:
    if type(body) is not str:
        raise ProtocolError(f"{tag} tag needs a JSON string, got {_brief(body)}")
    return body


def _brief(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."
