"""Fuzzing the parent's reading of a child's result stream: random and mutated frames only ever
give a RunReport (a malformed stream is "crashed") or a ProtocolError from the decoder, never
another exception. The default run feeds 12 000 mutated streams and 1 000 random
JSON values; ``-m slow`` runs 200 000 more."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.sandbox import harness
from vx.sandbox.report import RUN_STATUSES, assemble, call_outcome
from vx.sandbox.runner import RawRun
from vx.sandbox.serialize import ProtocolError, decode_value, parse_frame

LOAD = {
    "t": "load",
    "status": "ok",
    "stdout": "",
    "stdout_truncated": False,
    "exc_type": None,
    "exc_message": None,
    "line": None,
}
VALUES = [
    0,
    -1,
    2**70,
    1.5,
    float("inf"),
    "é\x00",
    b"\xff",
    (1, (2,)),
    {1: [2]},
    {3, 4},
    frozenset({5}),
    complex(1, -2),
    [[[]]],
    {"a": {"b": None}},
    None,
    True,
]


def honest_stream(rng: random.Random) -> list[bytes]:
    n = rng.randrange(0, 4)
    frames = [json.dumps(LOAD).encode()]
    for i in range(n):
        value = rng.choice(VALUES)
        after = '{"tuple":[{"tuple":[1]},{"dict":[]}]}' if rng.random() < 0.5 else "null"
        fields = (
            f'"t":"call","i":{i},"status":"ok","value":{harness.encode_value(value)},"type":"x","exc_type":null,'
            '"exc_message":null,"stdout":"out","stdout_truncated":false,"duration":0.5,"cpu":0.0,"budget":1.0,'
            f'"args_after":{after}'
        )
        frames.append(("{" + fields + "}").encode())
    frames.append(b'{"t":"done"}')
    return frames


TOKENS = [
    b"[",
    b"]",
    b"{",
    b"}",
    b",",
    b":",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"0x",
    b"-",
    b"1e999",
    b"1" * 400,
    b"null",
    b"true",
    b'{"int":"0x',
    b'{"set":[',
    b'{"dict":[[',
    b'{"float":"nan"}',
    b"\xff",
    b"\x00",
]


def mutate(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(5)
        at = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip a byte
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op == 1:  # insert a token
            data[at:at] = rng.choice(TOKENS)
        elif op == 2 and data:  # delete a span
            del data[at : at + rng.randrange(1, 8)]
        elif op == 3:  # duplicate a span
            data[at:at] = data[at : at + rng.randrange(1, 40)]
        else:  # replace a number
            data[at : at + 1] = str(rng.choice([-1, 2**64, 10**400, 0.1, -0.0])).encode()
    return bytes(data)


def check_stream(frames: list[bytes], n_calls: int) -> None:
    rep = assemble(RawRun(frames=frames, returncode=0), n_calls, "fuzz", [1.0] * n_calls)
    assert rep.status in RUN_STATUSES
    assert len(rep.calls) == n_calls
    if rep.status == "crashed":
        assert rep.detail
    for text in (rep.load_stdout, rep.load_error or "", rep.detail or ""):
        text.encode("utf-8")
    for index, frame in enumerate(frames[1:]):
        outcome = call_outcome(frame, index)
        if outcome is not None:
            (outcome.exc_message or "").encode("utf-8")


def run_mutations(seed: int, count: int) -> None:
    rng = random.Random(seed)
    for _ in range(count):
        frames = honest_stream(rng)
        n_calls = len(frames) - 2
        k = rng.randrange(len(frames))
        frames[k] = mutate(rng, frames[k])
        if rng.random() < 0.1:
            frames.insert(rng.randrange(len(frames) + 1), mutate(rng, rng.choice(frames)))
        check_stream(frames, n_calls)


def test_mutated_streams_are_reports_never_exceptions() -> None:
    run_mutations(seed=15, count=12_000)


@pytest.mark.slow
def test_many_more_mutated_streams() -> None:
    run_mutations(seed=1515, count=200_000)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["0x", "-0x1f", "inf", "nan", "tuple", "set", "dict", "int", "bytes"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["tuple", "set", "frozenset", "dict", "bytes", "complex", "float", "int", "x"]),
            inner,
            max_size=2,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=1000, deadline=None)
@given(json_values)
def test_random_json_decodes_or_is_a_protocol_error(value) -> None:
    try:
        decode_value(value)
    except ProtocolError:
        pass
    payload = json.dumps({"t": "call", "value": value}).encode()
    try:
        parse_frame(payload, max_cost=1 << 20)
    except ProtocolError:
        pass


@given(st.binary(max_size=600) | st.lists(st.sampled_from(TOKENS), max_size=300).map(b"".join))
def test_a_small_frame_is_never_over_the_budget_its_length_bounds(payload) -> None:
    """``parse_frame`` does not measure a frame of at most SMALL_FRAME bytes when its length times
    ``_MAX_COST_PER_BYTE`` is within the budget: that bound must hold for every payload, hostile ones too."""
    from vx.sandbox import serialize

    assert serialize.decode_cost(payload) <= len(payload) * serialize._MAX_COST_PER_BYTE


def test_a_small_frame_with_a_flood_of_members_is_still_refused() -> None:
    """Unmeasured small frames still have their keys checked: extra members in the frame or in a value's
    tag are a protocol error, as the member count refused them before."""
    keys = ",".join(f'"k{i}":0' for i in range(60))
    frame = (
        '{"t":"call","i":0,"status":"ok","value":{"tuple":[1],' + keys + '},"type":"x","exc_type":null,'
        '"exc_message":null,"stdout":"","stdout_truncated":false,"duration":0.5,"cpu":0.0,"budget":1.0,'
        '"args_after":null}'
    ).encode()
    assert len(frame) < 4096
    assert call_outcome(frame, 0) is None  # refused (not a valid report of call 0)
    with pytest.raises(ProtocolError):
        decode_value(parse_frame(frame, max_cost=256 << 20)["value"])
    flood = ('{"t":"done",' + keys + "}").encode()
    run = RawRun(frames=[json.dumps(LOAD).encode(), flood])
    assert assemble(run, 0, "forkserver", [], None).status == "crashed"
