"""The plain-data value encoding: the child's encoder and the parent's strict decoder."""

from __future__ import annotations

import collections
import enum
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.sandbox import harness
from vx.sandbox.serialize import (
    ProtocolError,
    check_plain,
    decode_value,
    encode_request,
    parse_frame,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**300), max_value=2**300)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.binary()
    | st.complex_numbers(allow_nan=False)
)
hashables = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text() | st.binary(),
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3),
    max_leaves=6,
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(hashables, inner, max_size=4)
        | st.sets(hashables, max_size=4)
        | st.frozensets(hashables, max_size=4)
    ),
    max_leaves=20,
)


def roundtrip(value):
    text = harness.encode_value(value)
    return decode_value(json.loads(text, parse_constant=lambda name: pytest.fail(name)))


def same(a, b) -> bool:
    """Equality that treats nan as equal to nan and checks exact types."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=150, deadline=None)
@given(values)
def test_roundtrip_preserves_value_and_type(value) -> None:
    assert same(roundtrip(value), value)


@settings(max_examples=50, deadline=None)
@given(values)
def test_encoding_is_ascii_json(value) -> None:
    text = harness.encode_value(value)
    text.encode("ascii")
    json.loads(text, parse_constant=lambda name: pytest.fail(name))


def test_nonfinite_and_big_numbers() -> None:
    assert math.isnan(roundtrip(math.nan))
    assert roundtrip([math.inf, -math.inf]) == [math.inf, -math.inf]
    assert roundtrip(10**5000) == 10**5000  # beyond the str-conversion digit limit
    assert roundtrip(-(2**63)) == -(2**63)
    assert roundtrip("\ud800") == "\ud800"


def test_subclasses_are_reduced_without_calling_their_methods() -> None:
    class Color(enum.IntEnum):
        RED = 3

    Point = collections.namedtuple("Point", "x y")
    assert roundtrip(collections.Counter("aab")) == {"a": 2, "b": 1}
    assert type(roundtrip(collections.OrderedDict(a=1))) is dict
    assert roundtrip(Point(1, 2)) == (1, 2) and type(roundtrip(Point(1, 2))) is tuple
    assert roundtrip(Color.RED) == 3 and type(roundtrip(Color.RED)) is int
    assert roundtrip(True) is True


@pytest.mark.parametrize(
    "value, type_name",
    [
        (object(), "object"),
        (bytearray(b"x"), "bytearray"),
        ([1, range(3)], "range"),
        ({"k": len}, "builtin_function_or_method"),
    ],
)
def test_unserializable_values_name_their_type(value, type_name) -> None:
    with pytest.raises(harness._Unserializable) as info:
        harness.encode_value(value)
    assert info.value.args[0] == type_name


def test_cycles_and_blowups_are_refused() -> None:
    loop: list = []
    loop.append(loop)
    with pytest.raises(harness._Unserializable, match="itself"):
        harness.encode_value(loop)
    shared: list = []
    for _ in range(60):
        shared = [shared, shared]  # 2**60 leaves if expanded
    with pytest.raises(harness._Unserializable, match="too large"):
        harness.encode_value(shared, 10_000)
    deep: list = []
    for _ in range(300):
        deep = [deep]
    with pytest.raises(harness._Unserializable, match="deeper"):
        harness.encode_value(deep)


@pytest.mark.parametrize(
    "encoded",
    [
        {"dict": [[1]]},
        {"dict": [[[1], 2]]},  # unhashable key
        {"set": [[1]]},
        {"tuple": 3},
        {"bytes": "zz"},
        {"float": "1.5"},
        {"int": "12"},
        {"complex": [1, 2]},
        {"pickle": "gASV"},
        {"tuple": [], "list": []},
        {},
        1e999,
    ],
)
def test_decoder_rejects_malformed_values(encoded) -> None:
    with pytest.raises(ProtocolError):
        decode_value(encoded)


def test_frames_must_be_json_objects_without_bare_nan() -> None:
    assert parse_frame(b'{"t": "done"}') == {"t": "done"}
    for bad in (b"[1]", b"not json", b'{"x": NaN}', b"\xff\xfe", b"[" * 100_000):
        with pytest.raises(ProtocolError):
            parse_frame(bad)


def test_request_accepts_only_plain_data() -> None:
    encode_request({"calls": [[(1, "a"), {"k": {1, 2}}]]})
    with pytest.raises(TypeError, match="namedtuple|Point|not plain data"):
        encode_request({"calls": [collections.namedtuple("Point", "x")(1)]})
    with pytest.raises(TypeError, match="not plain data"):
        check_plain({"f": compile("1", "x", "eval")})


_texts = st.none() | st.text(max_size=30)
_raws = st.none() | st.sampled_from(["true", "[1,2]", '{"tuple":[[1],{"dict":[]}]}', '"x"'])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from(["ok", "exception", "timeout", "unserializable"]),
    _raws,
    _texts,
    _texts,
    _texts,
    st.text(max_size=40),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=0),
    st.floats(min_value=0),
    _raws,
    st.booleans(),
)
def test_a_call_frame_is_the_frame_written_field_by_field(
    i, status, value, type_name, exc_type, exc_message, stdout, truncated, duration, cpu, budget, after, raised
):
    """The harness formats a call's frame in one step (`_call_frame`); it is byte for byte what the generic
    `_frame` writes for the same fields in the parent's schema order, so the parent reads it the same way."""
    import os

    raw = [None if v is None else harness._Raw(v) for v in (value, after)]
    fields = [
        ("t", "call"),
        ("i", i),
        ("status", status),
        ("value", raw[0]),
        ("type", type_name),
        ("exc_type", exc_type),
        ("exc_message", exc_message),
        ("stdout", stdout),
        ("stdout_truncated", truncated),
        ("duration", duration),
        ("cpu", cpu),
        ("budget", budget),
        ("args_after", raw[1]),
        ("raised", raised),
    ]
    written = []
    for write in (
        lambda fd: harness._frame(fd, fields),
        lambda fd: harness._call_frame(
            fd,
            i,
            status,
            raw[0],
            type_name,
            exc_type,
            exc_message,
            stdout,
            truncated,
            duration,
            cpu,
            budget,
            raw[1],
            raised,
        ),
    ):
        r, w = os.pipe()
        try:
            write(w)
            os.close(w)
            w = -1
            chunks = []
            while chunk := os.read(r, 1 << 16):
                chunks.append(chunk)
            written.append(b"".join(chunks))
        finally:
            os.close(r)
            if w != -1:
                os.close(w)
    assert written[0] == written[1]
    assert [k for k, _ in fields] == list(json.loads(written[1][4:]))
