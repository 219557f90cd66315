"""Plain-data encoding between the parent and the sandboxed child.

Two directions, two formats, both chosen so that nothing the child sends can run code in the
parent:

* parent → child (the request: code, entry point, call arguments, limits) is a ``marshal``
  blob (format 2: no shared references, so every call gets its own copy of its arguments). The parent is trusted and the child reads it with the interpreter's built-in
  ``marshal`` module, which costs no import time. :func:`encode_request` refuses anything
  that is not plain data (code objects included).
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
"""

from __future__ import annotations

import json
import marshal
import math
from typing import Any

#: Nesting deeper than this is refused in both directions (the child reports "unserializable").
MAX_DEPTH = 200

_PLAIN_SCALARS = frozenset({type(None), bool, int, float, complex, str, bytes})
_PLAIN_CONTAINERS = (list, tuple, dict, set, frozenset)
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


class ProtocolError(ValueError):
    """The child's result stream is malformed (the run is then reported as crashed)."""


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


def parse_frame(payload: bytes) -> dict[str, Any]:
    """Parse one frame's JSON payload; the top level must be an object."""
    try:
        text = payload.decode("utf-8")
        obj = json.loads(text, parse_constant=_reject_constant)
    except ProtocolError:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProtocolError(f"frame is not valid JSON: {exc}") from None
    if type(obj) is not dict:
        raise ProtocolError(f"frame is a JSON {type(obj).__name__}, expected an object")
    return obj


def decode_value(encoded: Any, _depth: int = 0) -> Any:
    """Decode one value (see the module docstring); raise ProtocolError if malformed."""
    if _depth > MAX_DEPTH:
        raise ProtocolError(f"value nested deeper than {MAX_DEPTH} levels")
    kind = type(encoded)
    if encoded is None or kind in (bool, int, str):
        return encoded
    if kind is float:
        if not math.isfinite(encoded):  # e.g. 1e999 written as a plain number
            raise ProtocolError("non-finite float written as a plain JSON number")
        return encoded
    if kind is list:
        return _decode_items(encoded, _depth)
    if kind is not dict or len(encoded) != 1:
        raise ProtocolError(f"malformed value: expected a one-key type tag, got {_brief(encoded)}")
    ((tag, body),) = encoded.items()
    try:
        if tag in ("tuple", "set", "frozenset"):
            items = _decode_items(_expect_list(body, tag), _depth)
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict":
            out = {}
            for pair in _expect_list(body, tag):
                if type(pair) is not list or len(pair) != 2:
                    raise ProtocolError(f"dict entry must be a [key, value] pair, got {_brief(pair)}")
                out[decode_value(pair[0], _depth + 1)] = decode_value(pair[1], _depth + 1)
            return out
        if tag == "bytes":
            return bytes.fromhex(_expect_str(body, tag))
        if tag == "float":
            text = _expect_str(body, tag)
            if text not in _NONFINITE:
                raise ProtocolError(f"float tag must be inf, -inf or nan, got {text!r}")
            return _NONFINITE[text]
        if tag == "int":
            text = _expect_str(body, tag)
            if not text.lstrip("-").startswith("0x"):
                raise ProtocolError(f"int tag must be hexadecimal, got {text[:40]!r}")
            return int(text, 16)
        if tag == "complex":
            parts = _expect_list(body, tag)
            if len(parts) != 2:
                raise ProtocolError("complex tag needs [real, imag]")
            real, imag = (decode_value(part, _depth + 1) for part in parts)
            if type(real) is not float or type(imag) is not float:
                raise ProtocolError("complex parts must be floats")
            return complex(real, imag)
    except TypeError as exc:  # unhashable key or set element
        raise ProtocolError(f"malformed {tag}: {exc}") from None
    except ValueError as exc:
        if isinstance(exc, ProtocolError):
            raise
        raise ProtocolError(f"malformed {tag}: {exc}") from None
    raise ProtocolError(f"unknown type tag {tag!r}")


def _decode_items(items: list[Any], depth: int) -> list[Any]:
    """Decode a JSON array's elements (plain scalars take an inline fast path)."""
    out = []
    add = out.append
    for item in items:
        kind = type(item)
        if kind is int or kind is str or kind is bool or item is None:
            add(item)
        elif kind is float and -math.inf < item < math.inf:
            add(item)
        else:
            add(decode_value(item, depth + 1))
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
