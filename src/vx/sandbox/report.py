"""Reports returned by the sandbox, and their strict assembly from a child's raw output.

The child may have been taken over by the candidate, so every frame is validated against an
exact schema (keys, types, order, call indices) and bounded (:class:`FrameLimits`: decode
memory, text lengths, numeric ranges). The first violation ends interpretation: the run is
``"crashed"`` and every call is ``"not_run"`` (reports received before the violation are
discarded too: the candidate was writing into the result channel). Nothing but
:class:`ProtocolError` is raised while a frame is read.

Text from the child (printed output, exception types and messages, type names) is clipped to
the configured lengths and made valid Unicode here, once: unpaired surrogates (which a
candidate gets into JSON as ``\\udXXX`` escapes, and which no UTF-8 file, database or terminal
accepts) become U+FFFD.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from vx.sandbox.runner import RawRun
from vx.sandbox.serialize import ProtocolError, decode_cost, decode_value, parse_frame

RUN_STATUSES = ("ok", "syntax_error", "load_error", "no_entry_point", "timeout", "crashed")
CALL_STATUSES = ("ok", "exception", "timeout", "unserializable", "crashed", "not_run")
SCRIPT_STATUSES = ("ok", "error", "timeout", "crashed")

_LOAD_KEYS = frozenset({"t", "status", "stdout", "stdout_truncated", "exc_type", "exc_message", "line"})
_CALL_KEYS = frozenset(
    {
        "t",
        "i",
        "status",
        "value",
        "type",
        "exc_type",
        "exc_message",
        "stdout",
        "stdout_truncated",
        "duration",
        "cpu",
        "budget",
        "args_after",
    }
)
#: ... and the key a harness of this version adds (whether an exception came from a ``raise`` statement
#: of the candidate's code); a frame without it reports False.
_CALL_KEYS_RAISED = _CALL_KEYS | {"raised"}
_LOAD_STATUSES = ("ok", "syntax_error", "load_error", "no_entry_point", "timeout")
_CHILD_CALL_STATUSES = ("ok", "exception", "timeout", "unserializable")

#: A call's reported duration above this (seconds) is not a measurement.
_MAX_DURATION = 1e6
#: A load error's line number above this is not a line.
_MAX_LINE = 10**9


@attrs.frozen
class FrameLimits:
    """How much of what the child reports the parent accepts (``Sandbox`` builds it from its
    config). Texts beyond their length are clipped (and marked truncated where the frame has a
    flag); a frame whose decoding would cost more than ``decode_bytes`` of memory is refused."""

    stdout_chars: int = 64 * 1024
    message_chars: int = 2000
    #: Exception type names and returned type names (a class name can be megabytes long).
    name_chars: int = 200
    decode_bytes: int = 256 << 20
    #: Parent memory the values of all of a run's call frames together may take (None: no bound beyond
    #: ``decode_bytes`` per frame). Once the values kept reach it, a later call's value is not decoded: the
    #: call comes back "unserializable", saying so -- a run cannot make the parent hold more than this,
    #: however many calls return large values.
    run_decode_bytes: int | None = None


_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str, cap: int | None = None) -> str:
    """``text`` as valid Unicode (unpaired surrogates → U+FFFD), clipped to ``cap`` characters
    (+ "...")."""
    if cap is not None and len(text) > cap:
        text = text[:cap] + "..."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = _SURROGATE.sub("\ufffd", text)
    return text


@attrs.frozen
class CallOutcome:
    """What one call did.

    ``status``: ``"ok"`` (``value`` holds the decoded return value), ``"exception"``
    (``exc_type``/``exc_message``), ``"timeout"`` (the call overran its timeout),
    ``"unserializable"`` (the return value is not plain data; ``type_name`` names the
    offending type, ``exc_message`` says why), ``"crashed"`` (the process died or broke the
    protocol during this call), ``"not_run"`` (never reached, or skipped: its CPU pool was spent).
    """

    status: str
    value: Any = None
    #: Type name of the returned object (e.g. "Counter" for a dict subclass, reported as a
    #: plain dict in ``value``), or of the offending object when "unserializable".
    type_name: str | None = None
    exc_type: str | None = None
    exc_message: str | None = None
    stdout: str = ""
    stdout_truncated: bool = False
    #: Wall-clock seconds the call took.
    duration: float | None = None
    #: CPU seconds of the candidate's process during the call (every thread): what the budget counts.
    cpu: float | None = None
    #: The CPU budget the call ran under (seconds; for a relative ``CallBudget``, as the child computed it).
    budget: float | None = None
    #: ``(args, kwargs)`` as plain data after the call (detects argument mutation); None when
    #: not requested, not reached, or not plain data.
    args_after: tuple[tuple[Any, ...], dict[Any, Any]] | None = None
    #: For an "exception": it was raised by a ``raise`` statement of the candidate's own code (the
    #: innermost frame of its traceback), not by an operation (``l[3]``) or by library code.
    raised: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@attrs.frozen
class RunReport:
    """The outcome of :meth:`Sandbox.run_calls` for one candidate."""

    status: str
    calls: tuple[CallOutcome, ...]
    layer: str
    wall_time: float
    load_stdout: str = ""
    #: "ExcType: message" when loading failed (syntax error, exception at import time, ...).
    load_error: str | None = None
    load_error_type: str | None = None
    #: Line in the candidate's code (or setup) where loading failed, when known.
    load_error_line: int | None = None
    #: Human explanation for "timeout" and "crashed" (what the parent saw).
    detail: str | None = None
    #: Raw process output outside the per-call capture (os.write(1, ...), stderr), capped.
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    #: True when the caller's ``stop`` callback ended the run early (later calls "not_run").
    stopped: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> str:
        """One line for people, e.g. ``ok: 5 calls (4 ok, 1 exception) in 12 ms [bwrap]``."""
        counts: dict[str, int] = {}
        for call in self.calls:
            counts[call.status] = counts.get(call.status, 0) + 1
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        text = f"{self.status}: {len(self.calls)} call{'s' if len(self.calls) != 1 else ''}"
        text += f" ({parts})" if parts else ""
        text += f" in {self.wall_time * 1000:.0f} ms [{self.layer}]"
        why = self.load_error if self.status in ("syntax_error", "load_error", "no_entry_point") else self.detail
        return text + (f" - {why}" if why else "")


@attrs.frozen
class ScriptReport:
    """The outcome of :meth:`Sandbox.run_script`: ``status`` is "ok" (exit code 0),
    "error" (non-zero exit code), "timeout" (killed at the deadline) or "crashed" (killed
    by a signal, or the sandbox could not start)."""

    status: str
    stdout: str
    stderr: str
    exit_code: int | None
    wall_time: float
    layer: str = ""
    detail: str | None = None


def _text(data: bytes, truncated: bool) -> str:
    text = data.decode("utf-8", errors="replace")  # never surrogates: errors="replace" gives U+FFFD
    return text + "\n[... truncated]" if truncated else text


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _exit_text(code: int | None) -> str:
    if code is None:
        return "an unknown status"
    if code < 0:
        return _signal_name(-code)
    if code > 128:  # wrappers (bwrap, the supervisors) report a signal death as 128 + n
        return f"exit code {code}, i.e. {_signal_name(code - 128)}"
    return f"exit code {code}"


def _cpu_limit_death(code: int | None) -> bool:
    """The process was ended by its CPU time limit: SIGXCPU at the soft RLIMIT_CPU (wrappers report
    128 + n). (The hard limit's SIGKILL cannot be told from other kills.)"""
    n = int(signal.SIGXCPU)
    return code is not None and (code == -n or code == 128 + n)


def _check(frame: dict[str, Any], keys: frozenset[str], what: str) -> None:
    if set(frame) != keys:
        missing, extra = sorted(keys - set(frame)), sorted(set(frame) - keys)
        raise ProtocolError(f"{what} frame has missing keys {missing} / unexpected keys {extra}")


def _opt(frame: dict[str, Any], key: str, kind: type, what: str) -> Any:
    value = frame[key]
    if value is not None and type(value) is not kind:
        raise ProtocolError(f"{what}: {key!r} must be {kind.__name__} or null")
    return value


def _req(frame: dict[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    value = frame[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if type(value) not in kinds:
        raise ProtocolError(f"{what}: {key!r} must be {' or '.join(k.__name__ for k in kinds)}")
    return value


def _brief(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else repr(clean_text(value, 40))
    return text if len(text) <= 60 else text[:57] + "..."


def _load(frame: dict[str, Any], limits: FrameLimits) -> dict[str, Any]:
    if frame.get("t") != "load":
        raise ProtocolError(f"first frame must be the load report, got t={_brief(frame.get('t'))}")
    _check(frame, _LOAD_KEYS, "load")
    status = _req(frame, "status", str, "load")
    if status not in _LOAD_STATUSES:
        raise ProtocolError(f"load: unknown status {_brief(status)}")
    stdout = _req(frame, "stdout", str, "load")
    truncated = _req(frame, "stdout_truncated", bool, "load") or len(stdout) > limits.stdout_chars
    exc_type = _opt(frame, "exc_type", str, "load")
    message = _opt(frame, "exc_message", str, "load")
    line = _opt(frame, "line", int, "load")
    if line is not None and not 0 <= line <= _MAX_LINE:
        raise ProtocolError(f"load: line {_brief(line)} is out of range")
    return {
        "status": status,
        "stdout": clean_text(stdout[: limits.stdout_chars]),
        "stdout_truncated": truncated,
        "exc_type": None if exc_type is None else clean_text(exc_type, limits.name_chars),
        "exc_message": None if message is None else clean_text(message, limits.message_chars),
        "line": line,
    }


def _call(
    frame: dict[str, Any],
    index: int,
    limits: FrameLimits,
    sent: Sequence[Any] | None = None,
    skippable: bool = False,
    over: int = 0,
) -> CallOutcome:
    """One call frame read strictly. ``over``: by how many bytes keeping this frame's values would pass the
    run's budget (``FrameLimits.run_decode_bytes``); when positive, its value and arguments are not decoded
    and a call that returned comes back "unserializable"."""
    what = f"call {index}"
    if frame.get("t") != "call":
        raise ProtocolError(f"expected the report of call {index}, got t={_brief(frame.get('t'))}")
    _check(frame, _CALL_KEYS_RAISED if "raised" in frame else _CALL_KEYS, "call")
    if type(frame["i"]) is not int or frame["i"] != index:
        raise ProtocolError(f"expected the report of call {index}, got i={_brief(frame['i'])}")
    status = _req(frame, "status", str, what)
    if status == "skipped":  # its CPU pool was spent (CallBudget.pool); ``assemble`` checks the sum
        if not skippable:
            raise ProtocolError(f"{what}: skipped, but it draws from no CPU pool")
        if frame["value"] is not None or frame["args_after"] is not None or frame.get("raised", False) is not False:
            raise ProtocolError(f"{what}: a skipped call cannot carry a value")
        return CallOutcome(status="not_run", cpu=0.0, duration=0.0)
    if status not in _CHILD_CALL_STATUSES:
        raise ProtocolError(f"{what}: unknown status {_brief(status)}")
    duration, cpu, budget = (_req(frame, key, (float, int), what) for key in ("duration", "cpu", "budget"))
    for key, seconds in (("duration", duration), ("cpu", cpu), ("budget", budget)):
        if not 0 <= seconds <= _MAX_DURATION:  # also refuses ints too large for a float
            raise ProtocolError(f"{what}: {key} {_brief(seconds)} is not a time in seconds")
    if status != "ok" and frame["value"] is not None:
        raise ProtocolError(f"{what}: a {status} call cannot carry a value")
    dropped = over > 0 and (status == "ok" or frame["args_after"] not in (None, True))
    value = decode_value(frame["value"]) if status == "ok" and not dropped else None
    args_after = None
    if dropped:
        pass  # neither the value nor the arguments after the call are kept (see below)
    elif frame["args_after"] is True:  # "unchanged": they equal the encoding the parent sent (``args_before``)
        if sent is None or index >= len(sent):
            raise ProtocolError(f"{what}: args_after says the arguments are unchanged, but none were sent to compare")
        args_after = (tuple(sent[index][0]), dict(sent[index][1]))
    elif frame["args_after"] is not None:
        decoded = decode_value(frame["args_after"])
        if not (
            type(decoded) is tuple and len(decoded) == 2 and type(decoded[0]) is tuple and type(decoded[1]) is dict
        ):
            raise ProtocolError(f"{what}: args_after must encode (args tuple, kwargs dict)")
        args_after = decoded
    type_name, exc_type, message = (_opt(frame, key, str, what) for key in ("type", "exc_type", "exc_message"))
    stdout = _req(frame, "stdout", str, what)
    raised = frame.get("raised", False)
    if type(raised) is not bool or (raised and status != "exception"):
        raise ProtocolError(f"{what}: raised must be true only for an exception, got {_brief(raised)}")
    if dropped and status == "ok":
        budget_mb = (limits.run_decode_bytes or 0) / (1 << 20)
        status, message = (
            "unserializable",
            (f"value not kept: the run's results would take over {budget_mb:g} MiB of the grader's memory"),
        )
    return CallOutcome(
        status=status,
        value=value,
        type_name=None if type_name is None else clean_text(type_name, limits.name_chars),
        exc_type=None if exc_type is None else clean_text(exc_type, limits.name_chars),
        exc_message=None if message is None else clean_text(message, limits.message_chars),
        stdout=clean_text(stdout[: limits.stdout_chars]),
        stdout_truncated=_req(frame, "stdout_truncated", bool, what) or len(stdout) > limits.stdout_chars,
        duration=float(duration),
        cpu=float(cpu),
        budget=float(budget),
        args_after=args_after,
        raised=raised,
    )


def _guarded(read: Callable[..., Any], *args: Any) -> Any:
    """Run one frame reader on `args`; any failure on the child's data is a ProtocolError (a bug in a
    check must not turn a hostile frame into a traceback in the parent)."""
    try:
        return read(*args)
    except ProtocolError:
        raise
    except Exception as exc:  # OverflowError, MemoryError, RecursionError, ...
        raise ProtocolError(f"unreadable frame: {type(exc).__name__}: {clean_text(str(exc), 200)}") from None


def call_outcome(
    payload: bytes,
    index: int,
    limits: FrameLimits | None = None,
    parsed: dict[Any, Any] | None = None,
    position: int = -1,
    sent: Sequence[Any] | None = None,
    skippable: bool = False,
) -> CallOutcome | None:
    """The outcome in one call frame as it arrives (None if it is not a valid report of
    call ``index``; ``assemble`` later rules on the whole stream). ``parsed`` keeps the parsed
    frame (or its ProtocolError) under ``position`` in the stream, so ``assemble`` does not parse
    a large frame twice. ``sent``: the calls' ``(args, kwargs)`` as sent, for a frame whose
    ``args_after`` is ``true`` (unchanged). ``skippable``: the call draws from a CPU pool, so the child
    may report it skipped ("not_run")."""
    limits = limits or FrameLimits()
    try:
        frame = _parsed(payload, position, limits, parsed)
        over = _over(payload, position, limits, parsed)
        outcome = _guarded(_call, frame, index, limits, sent, skippable, over)
    except ProtocolError:
        return None
    if parsed is not None:
        parsed[("call", position, index)] = outcome  # assemble takes it as it is (decoded once)
        # ... and needs no more of the parsed frame than its type: the JSON of a large value is not held
        # until the run ends (a run of 60 frames of 200,000 numbers each held ~500 MB that way)
        parsed[position] = _CALL_FRAME
    return outcome


#: What :func:`call_outcome` leaves of a call frame it has read (assemble takes its outcome as it is).
_CALL_FRAME: dict[str, Any] = {"t": "call"}


def _parsed(payload: bytes, position: int, limits: FrameLimits, memo: dict[Any, Any] | None) -> dict[str, Any]:
    found = memo.get(position) if memo is not None else None
    if found is None:
        try:
            found = parse_frame(payload, max_cost=limits.decode_bytes)
        except ProtocolError as exc:
            found = exc
        if memo is not None:
            memo[position] = found
    if isinstance(found, ProtocolError):
        raise found
    return found


def _over(payload: bytes, position: int, limits: FrameLimits, memo: dict[Any, Any] | None) -> int:
    """By how many bytes keeping the values of the frame at ``position`` would pass the run's budget
    (``limits.run_decode_bytes``; 0: they fit, and are counted as kept). Decided once per frame: ``memo``
    carries the bytes kept so far."""
    if limits.run_decode_bytes is None or memo is None:
        return 0
    found = memo.get(("over", position))
    if found is None:
        kept, cost = memo.get("kept", 0), decode_cost(payload)
        found = max(0, kept + cost - limits.run_decode_bytes)
        if not found:
            memo["kept"] = kept + cost
        memo[("over", position)] = found
    return found


def assemble(
    raw: RawRun,
    n_calls: int,
    layer: str,
    call_timeouts: Sequence[float],
    limits: FrameLimits | None = None,
    parsed: dict[Any, Any] | None = None,
    sent: Sequence[Any] | None = None,
    pools: tuple[Sequence[int], Sequence[float]] | None = None,
) -> RunReport:
    """Turn a child's raw output into a RunReport (strictly; see the module docstring). ``sent``: the
    calls as sent (see :func:`call_outcome`). ``pools``: each call's CPU pool (-1: none) and the pools'
    seconds; a call the child skipped must be one whose pool the earlier calls' reported CPU used up."""
    limits = limits or FrameLimits()
    parsed = {} if parsed is None else parsed
    pool_of, caps = pools if pools is not None else ((), ())
    used = [0.0] * len(caps)
    load: dict[str, Any] | None = None
    outcomes: list[CallOutcome] = []
    done = False
    problem = raw.protocol_error
    if raw.spawn_error is None:
        try:
            for position, payload in enumerate(raw.frames):
                if done:
                    raise ProtocolError("data after the final frame")
                frame = _parsed(payload, position, limits, parsed)
                if load is None:
                    load = _guarded(_load, frame, limits)
                    continue
                if frame.get("t") == "done":
                    if set(frame) != {"t"}:
                        raise ProtocolError("done frame has extra keys")
                    expected = n_calls if load["status"] == "ok" else 0
                    if len(outcomes) != expected:
                        raise ProtocolError(f"done after {len(outcomes)} of {expected} calls")
                    done = True
                    continue
                if load["status"] != "ok":
                    raise ProtocolError("call report after a failed load")
                if len(outcomes) >= n_calls:
                    raise ProtocolError(f"more call reports than the {n_calls} calls requested")
                i = len(outcomes)
                k = pool_of[i] if i < len(pool_of) else -1
                known = parsed.get(("call", position, i)) if parsed is not None else None
                if known is None:
                    over = _over(payload, position, limits, parsed)
                    outcome = _guarded(_call, frame, i, limits, sent, k >= 0, over)
                else:
                    outcome = known
                if k >= 0:
                    if outcome.status == "not_run" and used[k] < caps[k]:
                        raise ProtocolError(
                            f"call {i}: skipped after {used[k]:.3g} s of its CPU pool's {caps[k]:.3g} s"
                        )
                    used[k] += outcome.cpu or 0.0
                outcomes.append(outcome)
        except ProtocolError as exc:
            problem = str(exc)

    common: dict[str, Any] = {
        "layer": layer,
        "wall_time": raw.wall_time,
        "stdout": _text(raw.stdout, raw.stdout_truncated),
        "stderr": _text(raw.stderr, raw.stderr_truncated),
        "exit_code": raw.returncode,
        "stopped": raw.stopped and problem is None,
    }
    load_fields: dict[str, Any] = {}
    if load is not None:
        exc_type, message = load["exc_type"], load["exc_message"]
        load_fields = {
            "load_stdout": load["stdout"] + ("\n[... truncated]" if load["stdout_truncated"] else ""),
            "load_error": (f"{exc_type}: {message}" if exc_type else message) if load["status"] != "ok" else None,
            "load_error_type": exc_type if load["status"] != "ok" else None,
            "load_error_line": load["line"] if load["status"] != "ok" else None,
        }

    def finish(status: str, detail: str | None, current: CallOutcome | None) -> RunReport:
        calls = list(outcomes)
        if load is not None and load["status"] == "ok" and len(calls) < n_calls and current:
            calls.append(current)
        calls += [CallOutcome(status="not_run")] * (n_calls - len(calls))
        return RunReport(status=status, calls=tuple(calls), detail=detail, **common, **load_fields)

    if raw.spawn_error is not None:
        return finish("crashed", raw.spawn_error, None)
    if problem is not None:
        # A malformed stream means the candidate wrote into the result channel: nothing in it
        # can be trusted any more, including reports that looked well-formed.
        outcomes.clear()
        return finish("crashed", f"malformed result stream ({problem}); all results discarded", None)
    if done:  # every result is in; a kill after that (slow teardown) changes nothing
        assert load is not None
        detail = load["exc_message"] if load["status"] == "timeout" else None
        return finish(load["status"], detail, None)
    if raw.stopped and load is not None:  # the caller stopped the run after a call report
        detail = f"stopped by the caller after {len(outcomes)} of {n_calls} calls" if load["status"] == "ok" else None
        return finish(load["status"], detail, None)
    if raw.deadline is not None:
        if load is None:
            detail = f"killed at the {raw.wall_time:.1f} s deadline while starting or loading the code"
            return finish("timeout", detail, None)
        index = len(outcomes)
        if raw.deadline == "call" and index < n_calls:
            limit = call_timeouts[index]
            detail = (
                f"call {index} ran past its time limit ({limit:g} s of CPU, with its wall-clock backstop) and "
                "did not stop; the process was killed (later calls were not run)"
            )
        elif raw.deadline == "call":
            detail = "the process did not finish after its last call and was killed"
        else:
            detail = f"killed at the {raw.wall_time:.1f} s total deadline"
        return finish("timeout", detail, CallOutcome(status="timeout", exc_message=detail))
    if _cpu_limit_death(raw.returncode):
        if load is None or load["status"] != "ok":
            return finish("timeout", "the process used up its CPU time limit (RLIMIT_CPU) while loading the code", None)
        detail = f"the process used up its CPU time limit (RLIMIT_CPU) after {len(outcomes)} of {n_calls} calls"
        return finish("timeout", detail, CallOutcome(status="timeout", exc_message=detail))
    if not done:
        how = _exit_text(raw.returncode)
        tail = raw.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        detail = f"the sandboxed process ended ({how}) before reporting all results"
        if tail:
            detail += ": " + " | ".join(tail)
        return finish("crashed", detail, CallOutcome(status="crashed", exc_message=detail))
    assert load is not None
    return finish(load["status"], None, None)


def assemble_script(raw: RawRun, layer: str, timeout: float) -> ScriptReport:
    common: dict[str, Any] = {
        "stdout": _text(raw.stdout, raw.stdout_truncated),
        "stderr": _text(raw.stderr, raw.stderr_truncated),
        "wall_time": raw.wall_time,
        "layer": layer,
    }
    if raw.spawn_error is not None:
        return ScriptReport(status="crashed", exit_code=None, detail=raw.spawn_error, **common)
    if raw.deadline is not None:
        return ScriptReport(
            status="timeout",
            exit_code=None,
            detail=f"killed at the {timeout:g} s deadline",
            **common,
        )
    code = raw.returncode
    if code is None or code < 0:
        return ScriptReport(status="crashed", exit_code=code, detail=f"ended by {_exit_text(code)}", **common)
    return ScriptReport(status="ok" if code == 0 else "error", exit_code=code, **common)
