"""Everything the child sends is untrusted: the parent bounds the memory, time, nesting and text
of every frame, and a malformed frame is a ProtocolError (the run is "crashed"), never another
exception in the parent.

Each test is written as the attack: a forged frame, or a candidate that forges one.
"""

from __future__ import annotations

import json
import textwrap
import time
import tracemalloc

import pytest

from vx.sandbox import Sandbox, SandboxConfig, report, serialize
from vx.sandbox.report import assemble, call_outcome
from vx.sandbox.runner import RawRun
from vx.sandbox.serialize import ProtocolError, decode_value, parse_frame

from .conftest import GENEROUS

P61 = 2**61 - 1  # CPython's int hash modulus: k * P61 all hash to 0

LOAD = b'{"t":"load","status":"ok","stdout":"","stdout_truncated":false,"exc_type":null,"exc_message":null,"line":null}'
DONE = b'{"t":"done"}'


def call_frame(value: str = "1", **fields: str) -> bytes:
    base = {
        "t": '"call"',
        "i": "0",
        "status": '"ok"',
        "value": value,
        "type": '"int"',
        "exc_type": "null",
        "exc_message": "null",
        "stdout": '""',
        "stdout_truncated": "false",
        "duration": "0.001",
        "cpu": "0.0",
        "budget": "1.0",
        "args_after": "null",
    }
    base.update(fields)
    return ("{" + ",".join(f'"{k}":{v}' for k, v in base.items()) + "}").encode()


def raw_run(*frames: bytes) -> RawRun:
    return RawRun(frames=list(frames), returncode=0)


# --------------------------------------------------------------------------------------------
# memory: a frame is costed before it is decoded


def test_a_frame_of_empty_lists_is_refused_before_it_is_decoded() -> None:
    # 2 M empty lists: ~6 MB of JSON, ~200 MB of Python objects if decoded.
    payload = call_frame("[" + ",".join(["[]"] * 2_000_000) + "]")
    assert serialize.decode_cost(payload) > 64 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match="decoding it would take"):
            parse_frame(payload, max_cost=64 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(payload), f"peak {peak >> 20} MiB while refusing a {len(payload) >> 20} MiB frame"


def test_the_cost_estimate_ignores_brackets_inside_strings() -> None:
    text = json.dumps({"t": "call", "stdout": "[{," * 100_000}).encode()
    assert serialize.decode_cost(text) < 4 * len(text)  # strings cost their size, not 300 bytes per "{"
    escaped = json.dumps({"s": 'a\\"[[[' + "\\" * 3}).encode()  # escapes inside: still one string
    assert serialize.decode_cost(escaped) == serialize.decode_cost(escaped.replace(b"[", b"a"))


def test_an_honest_large_value_fits_the_default_budget() -> None:
    from vx.sandbox import harness

    value = [[i, str(i), (i, -i)] for i in range(100_000)]
    payload = call_frame(harness.encode_value(value))
    assert decode_value(parse_frame(payload, max_cost=report.FrameLimits().decode_bytes)["value"]) == value


def test_a_candidate_forging_a_huge_frame_crashes_its_run_and_the_parent_stays_small() -> None:
    sb = Sandbox(SandboxConfig(max_decode_mb=32, **GENEROUS))
    code = textwrap.dedent(
        """
        import os
        BODY = b'{"t":"load","status":"ok","stdout":"","stdout_truncated":false,"exc_type":null,' \\
               b'"exc_message":null,"line":null}'
        CALL = b'{"t":"call","i":0,"status":"ok","value":[' + b','.join([b'[]'] * 3_000_000) + \\
               b'],"type":"list","exc_type":null,"exc_message":null,"stdout":"","stdout_truncated":false,' \\
               b'"duration":0.0,"cpu":0.0,"budget":1.0,"args_after":null}'
        out = b''.join(len(f).to_bytes(4, 'big') + f for f in (BODY, CALL, b'{"t":"done"}'))
        for fd in range(3, 4096):
            try:
                os.write(fd, out)
                break
            except OSError:
                pass
        os._exit(0)
        def f():
            return 1
        """
    )
    rep = sb.run_calls(code, "f", [([], {})])
    assert rep.status == "crashed"
    assert "decoding it would take" in rep.detail
    assert rep.calls[0].status == "not_run"


# --------------------------------------------------------------------------------------------
# time: no quadratic work on hash collisions


@pytest.mark.parametrize("tag", ["set", "frozenset", "dict"])
def test_hash_colliding_members_are_refused_quickly(tag: str) -> None:
    n = 30_000  # decoding these took ~12 s before the bound (quadratic set/dict construction)
    members = ['{"int":"' + hex(k * P61) + '"}' for k in range(1, n + 1)]
    if tag == "dict":
        body = '{"dict":[' + ",".join(f"[{m},0]" for m in members) + "]}"
    else:
        body = '{"' + tag + '":[' + ",".join(members) + "]}"
    start = time.process_time()  # CPU time: decoding happens in this process
    with pytest.raises(ProtocolError, match="share one hash"):
        decode_value(json.loads(body))
    assert time.process_time() - start < 2.0


def test_a_few_equal_hashes_are_still_decoded() -> None:
    # -1 and -2 hash alike in CPython; small honest collisions must decode.
    assert decode_value(json.loads('{"set":[-1,-2,1,2]}')) == {-1, -2, 1, 2}


def test_decoding_has_a_deadline() -> None:
    items = ",".join(["[1,2,3]"] * 50_000)
    with pytest.raises(ProtocolError, match="took longer than"):
        decode_value(json.loads("[" + items + "]"), deadline=time.monotonic() - 1.0)


# --------------------------------------------------------------------------------------------
# malformed fields: ProtocolError, never OverflowError & co.


@pytest.mark.parametrize(
    "field, value",
    [
        ("duration", "1" + "0" * 400),  # an int too large for a float: OverflowError before
        ("duration", "-0.5"),
        ("duration", "1e308"),
        ("i", "0.0"),
        ("stdout", "[[[[1]]]]"),
        ("type", "17"),
        ("value", '{"int":"0x"}'),
        ("value", '{"complex":[1e308, {"float":"wat"}]}'),
        ("value", "[" * 5000 + "]" * 5000),
        ("args_after", '{"tuple":[{"tuple":[]}, {"dict":[[[1],2]]}]}'),
        ("args_after", "[1, 2]"),
    ],
)
def test_malformed_call_fields_are_protocol_errors(field: str, value: str) -> None:
    payload = call_frame(**{field: value})
    assert call_outcome(payload, 0) is None  # as a stop callback sees it: no exception
    rep = assemble(raw_run(LOAD, payload, DONE), 1, "test", [1.0])
    assert rep.status == "crashed" and "malformed result stream" in rep.detail
    assert rep.calls[0].status == "not_run"


def test_text_fields_are_clipped_and_cleaned() -> None:
    limits = report.FrameLimits(stdout_chars=100, message_chars=50, name_chars=20)
    payload = call_frame(
        status='"exception"',
        value="null",
        type='"' + "T" * 10_000 + '"',
        exc_type='"E\\ud800"',
        exc_message='"' + "m" * 10_000 + '\\udfff"',
        stdout='"' + "s" * 10_000 + '"',
    )
    rep = assemble(raw_run(LOAD, payload, DONE), 1, "test", [1.0], limits=limits)
    assert rep.status == "ok", rep.detail
    call = rep.calls[0]
    assert len(call.type_name) <= 24 and len(call.exc_message) <= 54 and len(call.stdout) <= 120
    assert call.stdout_truncated
    for text in (call.type_name, call.exc_type, call.exc_message, call.stdout):
        text.encode("utf-8")  # no lone surrogate survives the boundary
    assert "\ufffd" in call.exc_type


def test_lone_surrogates_in_an_exception_message_reach_vx_as_valid_text(any_sb: Sandbox) -> None:
    code = "def f():\n    raise ValueError('bad \\ud800 text')\n"
    rep = any_sb.run_calls(code, "f", [([], {})])
    call = rep.calls[0]
    assert call.status == "exception"
    call.exc_message.encode("utf-8")
    assert call.exc_message == "bad \ufffd text"


def test_the_load_frame_is_checked_too() -> None:
    bad_line = LOAD.replace(b'"line":null', b'"line":' + b"9" * 5000)
    rep = assemble(raw_run(bad_line, DONE), 0, "test", [])
    assert rep.status == "crashed"


def test_an_honest_child_reports_a_value_over_the_budget_as_unserializable() -> None:
    # The harness applies the parent's estimate before sending, so an honest report is never
    # refused as a broken protocol: the run goes on with the next call.
    sb = Sandbox(SandboxConfig(max_decode_mb=8, **GENEROUS))
    code = "def f(n):\n    return [[] for _ in range(n)]\n"
    rep = sb.run_calls(code, "f", [([300_000], {}), ([3], {})])
    assert rep.status == "ok", rep.detail
    assert rep.calls[0].status == "unserializable" and "decoding it would take" in rep.calls[0].exc_message
    assert rep.calls[1].status == "ok" and rep.calls[1].value == [[], [], []]
    text = "def f(s):\n    return ['[{,' * 1000 for _ in range(200)]\n"  # brackets in strings only
    rep = sb.run_calls(text, "f", [([0], {})])
    assert rep.calls[0].status == "ok", rep.calls[0].exc_message


# --------------------------------------------------------------------------------------------
# memory of a whole run: the values of all its calls together are bounded too


def test_many_calls_returning_large_values_cannot_make_the_parent_hold_more_than_the_run_budget() -> None:
    # The attack: every call returns a list of 100,000 numbers (about 4 MB each in the parent); 20 calls
    # would keep ~80 MB, each under the per-frame budget. With a run budget of 8 MiB the calls past it come
    # back "unserializable", saying why, and what is kept stays under it.
    sb = Sandbox(SandboxConfig(max_run_decode_mb=8, **GENEROUS))
    code = "def f(i):\n    return list(range(100_000 + i))\n"
    rep = sb.run_calls(code, "f", [([i], {}) for i in range(20)], stop=lambda i, outcome: False)
    assert rep.status == "ok", rep.detail
    kept = [c for c in rep.calls if c.status == "ok"]
    refused = [c for c in rep.calls if c.status == "unserializable"]
    assert kept and refused and len(kept) + len(refused) == 20
    assert all("the run's results would take over 8 MiB" in c.exc_message for c in refused)
    assert refused[0].type_name == "list"
    decoded = sum(serialize.decode_cost(harness_encoded(c.value)) for c in kept)
    assert decoded <= 8 << 20


def harness_encoded(value: object) -> bytes:
    from vx.sandbox import harness

    return call_frame(harness.encode_value(value))


def test_the_run_budget_is_counted_the_same_whether_frames_are_read_as_they_arrive_or_at_the_end() -> None:
    frames = [LOAD] + [call_frame("[" + ",".join(["1234567"] * 50_000) + "]", i=str(i)) for i in range(6)] + [DONE]
    limits = report.FrameLimits(run_decode_bytes=8 << 20)
    at_end = assemble(raw_run(*frames), 6, "test", [1.0] * 6, limits)
    memo: dict = {}
    for position, payload in enumerate(frames[1:-1], 1):
        call_outcome(payload, position - 1, limits, memo, position)
    as_they_come = assemble(raw_run(*frames), 6, "test", [1.0] * 6, limits, memo)
    assert [c.status for c in at_end.calls] == [c.status for c in as_they_come.calls]
    assert "ok" in [c.status for c in at_end.calls] and "unserializable" in [c.status for c in at_end.calls]


def test_a_frame_read_as_it_arrives_is_not_held_until_the_run_ends() -> None:
    # The attack: calls returning 100,000 numbers each. The parent read each frame as it arrived and kept its
    # parsed JSON (~4 MB each) until the run was assembled: 60 calls of 200,000 held ~500 MB at once. Now only
    # the outcomes are kept, and their values within the run's budget.
    frames = [LOAD] + [call_frame("[" + ",".join(["123456"] * 100_000) + "]", i=str(i)) for i in range(20)] + [DONE]
    limits = report.FrameLimits(run_decode_bytes=8 << 20)
    memo: dict = {}
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for position, payload in enumerate(frames[1:-1], 1):
            call_outcome(payload, position - 1, limits, memo, position)
        rep = assemble(raw_run(*frames), 20, "test", [1.0] * 20, limits, memo)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert rep.status == "ok"
    assert peak < 40 << 20, f"{peak >> 20} MiB"
