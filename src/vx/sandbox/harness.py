"""The child side of the sandbox: runs one candidate's code and reports plain data.

This file is *not* imported by the child: the parent sends it over stdin (precompiled when
the child's Python has the same version, else as source) to a tiny ``python -S -s -B -P -c``
bootstrap (``runner.BOOTSTRAP``). It must therefore stay self-contained: standard library
only, no imports from ``vx``, and only cheap modules (every import is paid once per
candidate). It can still be imported as a module (tests do, to reach :func:`encode_value`).

Protocol: after the harness, the parent writes the request (8-byte length + ``marshal``; see
``Sandbox._request`` for the fields) and keeps stdin open: its end of file means vx died.
The harness answers on the inherited result fd with frames: 4-byte big-endian length +
ASCII JSON (value encoding: ``serialize.py``), in this order::

    {"t": "load", "status": ...}           once, after loading setup + candidate code
    {"t": "call", "i": 0, ...} ...         one per call, in order (only if the load was ok)
    {"t": "done"}                          last; then the process leaves with os._exit(0)

A call frame's ``args_after`` is the arguments' encoding after the call (mutation), ``null`` when not
asked for (``req["args_after"]``: all calls or a flag per call) or not encodable, and ``true`` when the
encoding equals ``req["args_before"][i]``, the parent's encoding of what it sent: "unchanged", so an
honest run's arguments never travel back.

Process model (``req["supervise"]``; ``req["mode"] == "server"`` is the fork server, see the
section "fork-server mode"): "none" (bwrap: this process is the worker), "init"
(unshare: this process is pid 1 of a new pid namespace and forks the worker), "subreaper"
(rlimits: this process is a child subreaper and forks the worker, then freezes, kills and
reaps whatever the worker left behind). Supervisors also kill the worker when stdin closes.

Robustness against the candidate (which shares this interpreter): every builtin and module
function used after candidate code has run is bound to a private alias below, *before* any
candidate code runs, so a candidate that replaces ``builtins.print``, ``len``, ``isinstance``,
``json`` or ``sys.stdout`` cannot disturb the harness by accident. A candidate that attacks
the harness on purpose can forge anything it reports; that is why the parent never sends
expected values and compares them itself (see the package docstring).
"""

import _signal
import builtins as _builtins
import marshal as _marshal
import opcode as _opcode
import os as _os
import sys as _sys
import time as _time

try:
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - _json ships with every CPython build we target

    def _quote(text):
        out = ['"']
        for ch in text:
            code = ord(ch)
            if ch == '"' or ch == "\\":
                out.append("\\" + ch)
            elif 0x20 <= code < 0x7F:
                out.append(ch)
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                code -= 0x10000
                out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
        out.append('"')
        return "".join(out)


# Private references, taken before any candidate code runs. ------------------------------------
_BaseException = BaseException
_SyntaxError = SyntaxError
_ValueError = ValueError
_RecursionError = RecursionError
_MemoryError = MemoryError
_type = type
_len = len
_int = int
_float = float
_bool = bool
_str = str
_bytes = bytes
_complex = complex
_list = list
_tuple = tuple
_dict = dict
_set = set
_frozenset = frozenset
_slice = slice
_memoryview = memoryview
_enumerate = enumerate
_TypeError = TypeError
_SystemExit = SystemExit
_id = id
_hex = hex
_callable = callable
_issubclass = issubclass
_compile = compile
_exec = exec
_int_repr = int.__repr__
_float_repr = float.__repr__
_int_copy = int.__int__
_float_copy = float.__float__
_str_copy = str.__str__
_list_copy = list.copy
_tuple_getitem = tuple.__getitem__
_dict_items = dict.items
_set_copy = set.copy
_frozenset_copy = frozenset.copy
_bytes_hex = bytes.hex
_complex_parts = complex.__getnewargs__
_type_name_of = type.__dict__["__name__"].__get__
_join = "".join
_comma_join = ",".join
_os_write = _os.write
_marshal_loads = _marshal.loads
_os_read = _os.read
_os_exit = _os._exit
_os_close = _os.close
_getpid = _os.getpid
#: The instruction of a ``raise`` statement: a call's exception raised by one in the candidate's code
#: (not by an operation such as ``l[3]``, nor re-raised by a bare ``raise``) is one it raised on purpose.
_RAISE_VARARGS = _opcode.opmap["RAISE_VARARGS"]
_perf = _time.perf_counter
_cpu = _time.process_time  # CPU seconds of this process (every thread), what ITIMER_PROF counts
_setitimer = _signal.setitimer
_set_handler = _signal.signal
_ITIMER_REAL = _signal.ITIMER_REAL
_ITIMER_PROF = _signal.ITIMER_PROF
_SIGALRM = _signal.SIGALRM
_SIGPROF = _signal.SIGPROF
_max = max
_min = min
_setrecursionlimit = _sys.setrecursionlimit
_settrace = _sys.settrace
_setprofile = _sys.setprofile
_MAX_DEPTH = 200
_PLAIN_INT = 2**63
_INF = float("inf")


class _Unserializable(Exception):
    """Raised by the encoder; args: (type name, human reason)."""


class _CallTimeout(BaseException):
    """Raised by the SIGPROF (CPU budget) or SIGALRM (wall-clock backstop) handler while a call
    runs (BaseException: not an Exception)."""


# --------------------------------------------------------------------------------------------
# value encoding (format: vx.sandbox.serialize)
# --------------------------------------------------------------------------------------------


def encode_value(value, budget=1 << 24):
    """Return the JSON text for ``value``; raise _Unserializable(type name, reason).

    ``budget`` bounds the number of nodes visited (so shared sub-structures cannot blow up the
    output exponentially); exceeding it is reported as "unserializable".
    """
    state = [budget]
    return _enc(value, 0, {}, state)


def _float_text(x):
    if x != x:
        return '{"float":"nan"}'
    if x == _float("inf"):
        return '{"float":"inf"}'
    if x == _float("-inf"):
        return '{"float":"-inf"}'
    return _float_repr(x)


def _int_text(x):
    if -_PLAIN_INT < x < _PLAIN_INT:
        return _int_repr(x)
    return '{"int":"' + _hex(x) + '"}'


def _seq(items, depth, active, state):
    """Encode the elements of a container; plain scalars take an inline fast path."""
    parts = []
    add = parts.append
    n = 0
    for item in items:
        n += 1
        t = _type(item)
        if t is _int and -_PLAIN_INT < item < _PLAIN_INT:
            add(_int_repr(item))
        elif t is _str:
            add(_quote(item))
        elif t is _float and -_INF < item < _INF:
            add(_float_repr(item))
        elif item is None:
            add("null")
        elif t is _bool:
            add("true" if item else "false")
        else:
            n -= 1  # _enc counts it
            add(_enc(item, depth + 1, active, state))
    state[0] -= n
    if state[0] < 0:
        raise _Unserializable("list", "value too large to report")
    return _comma_join(parts)


def _enc(x, depth, active, state):
    state[0] -= 1
    if state[0] < 0:
        raise _Unserializable(_type_name_of(_type(x)), "value too large to report")
    if depth > _MAX_DEPTH:
        raise _Unserializable(_type_name_of(_type(x)), f"nested deeper than {_MAX_DEPTH:d} levels")
    t = _type(x)
    if t is _list or t is _tuple:  # the common containers first (exact types iterate safely)
        key = _id(x)
        if key in active:
            raise _Unserializable(_type_name_of(t), "contains itself (recursive structure)")
        active[key] = True
        try:
            body = _seq(x, depth, active, state)
        finally:
            del active[key]
        return "[" + body + "]" if t is _list else '{"tuple":[' + body + "]}"
    if x is None:
        return "null"
    if t is _bool:
        return "true" if x else "false"
    if t is _int:
        return _int_text(x)
    if t is _float:
        return _float_text(x)
    if t is _str:
        return _quote(x)
    # Subclasses of the plain types are reduced to their base value through the base type's
    # own C methods, so an overridden __eq__/__iter__/__str__ is never consulted.
    if _issubclass(t, _int):
        return _int_text(_int_copy(x))
    if _issubclass(t, _float):
        return _float_text(_float_copy(x))
    if _issubclass(t, _str):
        return _quote(_str_copy(x))
    if _issubclass(t, _bytes):
        return '{"bytes":"' + _bytes_hex(x) + '"}'
    if _issubclass(t, _complex):
        re, im = _complex_parts(x)
        return '{"complex":[' + _float_text(re) + "," + _float_text(im) + "]}"
    key = _id(x)
    if key in active:
        raise _Unserializable(_type_name_of(t), "contains itself (recursive structure)")
    active[key] = True
    try:
        if _issubclass(t, _list):
            return "[" + _seq(_list_copy(x), depth, active, state) + "]"
        if _issubclass(t, _tuple):
            return '{"tuple":[' + _seq(_tuple_getitem(x, _slice(None)), depth, active, state) + "]}"
        if _issubclass(t, _dict):
            pairs = [
                "[" + _enc(k, depth + 1, active, state) + "," + _enc(v, depth + 1, active, state) + "]"
                for k, v in _list(_dict_items(x))
            ]
            return '{"dict":[' + _comma_join(pairs) + "]}"
        if _issubclass(t, _frozenset):
            return '{"frozenset":[' + _seq(_frozenset_copy(x), depth, active, state) + "]}"
        if _issubclass(t, _set):
            return '{"set":[' + _seq(_set_copy(x), depth, active, state) + "]}"
    finally:
        del active[key]
    raise _Unserializable(_type_name_of(t), "not plain data")


def _decode_cost(text, limit):
    """The parent's estimate of the memory that decoding ``text`` takes (``serialize.decode_cost``,
    same constants): first an over-estimate that counts brackets inside strings too (no copy);
    only when that is over ``limit`` the exact figure, with strings cut out."""
    count = text.count
    base = 2 * _len(text) + 25 * count('"')
    rough = base + 100 * count("[") + 300 * count("{") + 16 * count(",")
    if rough <= limit or base > limit:
        return rough
    import re

    skeleton = re.sub('"[^"]*"', "", text.replace("\\\\", "").replace('\\"', ""))
    return base + 100 * skeleton.count("[") + 300 * skeleton.count("{") + 16 * skeleton.count(",")


# --------------------------------------------------------------------------------------------
# frames
# --------------------------------------------------------------------------------------------


class _Raw:
    """An already-encoded JSON fragment."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


_TRUE = _Raw("true")


def _json_field(v):
    if v is None:
        return "null"
    t = _type(v)
    if t is _Raw:
        return v.text
    if t is _bool:
        return "true" if v else "false"
    if t is _int:
        return _int_repr(v)
    if t is _float:
        return _float_text(v)
    return _quote(_str_copy(v))


def _frame(fd, fields):
    _write_frame(fd, "{" + _comma_join([_quote(k) + ":" + _json_field(v) for k, v in fields]) + "}")


#: A call's frame: the fields `_frame` would write for it, in the same order (the parent's schema,
#: ``report._CALL_KEYS_RAISED``), formatted in one step -- it is written once a call, and field-by-field
#: rendering was a third of the harness's time per call. A test checks it against `_frame`.
_CALL_FRAME = (
    '{"t":"call","i":%s,"status":%s,"value":%s,"type":%s,"exc_type":%s,"exc_message":%s,"stdout":%s,'
    '"stdout_truncated":%s,"duration":%s,"cpu":%s,"budget":%s,"args_after":%s,"raised":%s}'
)


def _text_or_null(v):
    return "null" if v is None else _quote(_str_copy(v))


def _call_frame(
    fd, i, status, value, type_name, exc_type, exc_message, stdout, truncated, duration, cpu, budget, args_after, raised
):
    """Write one call's frame (``value`` and ``args_after``: a `_Raw` fragment or None)."""
    _write_frame(
        fd,
        _CALL_FRAME
        % (
            _int_repr(i),
            _quote(status),
            "null" if value is None else value.text,
            _text_or_null(type_name),
            _text_or_null(exc_type),
            _text_or_null(exc_message),
            _quote(_str_copy(stdout)),
            "true" if truncated else "false",
            _float_text(duration),
            _float_text(cpu),
            _float_text(budget),
            "null" if args_after is None else args_after.text,
            "true" if raised else "false",
        ),
    )


def _write_frame(fd, text):
    data = text.encode("ascii")
    n = _len(data)
    _state["written"] += n + 4
    data = n.to_bytes(4, "big") + data
    view = _memoryview(data)
    try:
        while view:
            written = _os_write(fd, view)
            view = view[written:]
    except _BaseException:
        _os_exit(3)  # the parent is gone or the candidate closed our fd: nothing to report to


class _Capture:
    """A text sink for sys.stdout that keeps at most ``cap`` characters."""

    def __init__(self, cap):
        self._parts = []
        self._room = cap
        self.truncated = False

    def write(self, text):
        if _type(text) is not _str:
            if not _issubclass(_type(text), _str):
                raise _TypeError("write() argument must be str, not " + _type_name_of(_type(text)))
            text = _str_copy(text)
        n = _len(text)
        if self._room > 0:
            self._parts.append(text[: self._room])
            if n > self._room:
                self.truncated = True
            self._room -= n
        elif n:
            self.truncated = True
        return n

    def flush(self):
        return None

    def writable(self):
        return True

    def isatty(self):
        return False

    def value(self):
        return _join(self._parts)


def _message(exc, cap):
    try:
        text = _str(exc)
        if _type(text) is not _str:
            text = _str_copy(text)
    except _BaseException:
        text = "<exception message could not be rendered>"
    return text if _len(text) <= cap else text[:cap] + "..."


# --------------------------------------------------------------------------------------------
# the candidate run
# --------------------------------------------------------------------------------------------


def _on_alarm(signum, frame):
    _state["fired"] = "cpu" if signum == _SIGPROF else "wall"
    raise _CallTimeout()


def _on_cpu_limit(signum, frame):
    """RLIMIT_CPU's soft limit: leave with the status a SIGXCPU death has (128 + 24), which the parent
    reports as a timeout; the hard limit's SIGKILL follows one CPU second later otherwise."""
    _os_exit(128 + _signal.SIGXCPU)


def _arm(cpu, wall):
    """Interrupt the code about to run after ``cpu`` seconds of this process's CPU time (ITIMER_PROF:
    load on the machine does not shorten it) or, for code that sleeps or blocks, ``wall`` seconds of
    wall-clock time, whichever comes first. One shot each."""
    _state["fired"] = False
    _set_handler(_SIGALRM, _on_alarm)
    _set_handler(_SIGPROF, _on_alarm)
    _setitimer(_ITIMER_PROF, cpu, 0.0)
    _setitimer(_ITIMER_REAL, wall, 0.0)


def _disarm():
    _setitimer(_ITIMER_PROF, 0.0, 0.0)
    _setitimer(_ITIMER_REAL, 0.0, 0.0)


def _wall_for(req, cpu):
    """The wall-clock backstop of a CPU budget (``SandboxConfig.wall_for``: same formula)."""
    return cpu * req["wall_factor"] + req["wall_slack"]


_state = {"fired": False, "pid": None, "written": 0, "reference_cpu": 0.0}


def _load(req, fd):
    """Exec setup + candidate code; report the load frame; return the entry function or None."""
    cap = req["stdout_cap"]
    mcap = req["message_cap"]
    capture = _Capture(cap)
    namespace = {"__name__": "__vx_candidate__", "__builtins__": _builtins}
    status, exc_type, exc_message, line = "ok", None, None, None
    saved_stdout = _sys.stdout
    _sys.stdout = capture
    try:
        units = []
        try:
            if req["setup"]:
                units.append(_compile(req["setup"], "<setup>", "exec", dont_inherit=True))
            units.append(_compile(req["code"], "<candidate>", "exec", dont_inherit=True))
        except (_SyntaxError, _ValueError) as exc:
            status, exc_type, exc_message = "syntax_error", _type_name_of(_type(exc)), _message(exc, mcap)
            if _issubclass(_type(exc), _SyntaxError):
                line = exc.lineno if _type(exc.lineno) is _int else None
                if _type(exc.msg) is _str:
                    exc_message = exc.msg
        except _BaseException as exc:
            status, exc_type, exc_message = "load_error", _type_name_of(_type(exc)), _message(exc, mcap)
        if status == "ok":
            caught = None
            budget = req["load_timeout"]
            try:
                _arm(budget, _min(req["load_wall"], _wall_for(req, budget)))
                for unit in units:
                    _exec(unit, namespace)
            except _BaseException as exc:
                caught = exc
            _disarm()
            if _state["fired"] or _type(caught) is _CallTimeout:
                status = "timeout"
                exc_message = (
                    f"loading used more than {budget:.3g} s of CPU time"
                    if _state["fired"] != "wall"
                    else "loading did not finish within its wall-clock limit of "
                    f"{_min(req['load_wall'], _wall_for(req, budget)):.3g} s"
                )
                line = _traceback_line(caught) if caught is not None else None
            elif caught is not None:
                status, exc_type, exc_message = "load_error", _type_name_of(_type(caught)), _message(caught, mcap)
                line = _traceback_line(caught)
            caught = None
    finally:
        if _getpid() != _state["pid"]:
            _os_exit(0)  # a fork() child of the candidate's module code
        n = 0
        while n < 8:
            try:
                _reset_interpreter(req)
                break
            except _BaseException:
                n += 1
        _sys.stdout = saved_stdout
    fn = None
    if status == "ok":
        fn = _dict.get(namespace, req["entry_point"])
        if fn is None or not _callable(fn):
            status = "no_entry_point"
            exc_message = f"no callable named {req['entry_point']} is defined"
            fn = None
    _frame(
        fd,
        [
            ("t", "load"),
            ("status", status),
            ("stdout", capture.value()),
            ("stdout_truncated", capture.truncated),
            ("exc_type", exc_type),
            ("exc_message", exc_message),
            ("line", line),
        ],
    )
    return fn


def _traceback_line(exc):
    """The innermost line number inside the candidate's code, if any."""
    line = None
    try:
        tb = _BaseException.__dict__["__traceback__"].__get__(exc)  # not an override
        while tb is not None:
            if tb.tb_frame.f_code.co_filename in ("<candidate>", "<setup>"):
                line = tb.tb_lineno
            tb = tb.tb_next
    except _BaseException:
        return None
    return line if _type(line) is _int else None


def _raised_on_purpose(exc):
    """Whether the innermost frame of the exception's traceback is the candidate's own code stopped at
    a ``raise`` statement: it raised the exception deliberately, rather than an operation of its code
    (``l[3]``, ``int(s)``) or library code raising it. (A candidate can forge this as it can forge any
    report: no stronger than raising the exception itself.)"""
    try:
        tb = _BaseException.__dict__["__traceback__"].__get__(exc)  # not an override
        last = None
        while tb is not None:
            last = tb
            tb = tb.tb_next
        if last is None:
            return False
        code = last.tb_frame.f_code
        if code.co_filename != "<candidate>":
            return False
        at = last.tb_lasti
        raw = code.co_code
        return _type(at) is _int and 0 <= at < _len(raw) and raw[at] == _RAISE_VARARGS
    except _BaseException:
        return False


def _reset_interpreter(req):
    """Undo interpreter-wide settings the candidate may have changed that the harness needs.

    Called with *no* harness code in between the candidate's last instruction and this point
    except assignments: a profile/trace function the candidate installed fires on calls, and
    raising from it unsets it (CPython semantics), so a few tries always get through. The
    alarm is cancelled here too, in case the candidate's hook aborted the first cancel.
    """
    tries = 0
    while tries < 8:
        try:
            _setitimer(_ITIMER_PROF, 0.0, 0.0)
            _setitimer(_ITIMER_REAL, 0.0, 0.0)
            _setprofile(None)
            _settrace(None)
            _setrecursionlimit(req["recursion_limit"])
            return
        except _BaseException:
            tries += 1


def _call_budget(req, i):
    """Call ``i``'s CPU budget: ``timeouts[i]``, or where ``scales[i]`` is set, at least that many times the
    most CPU an earlier reference call of this run used, at most ``caps[i]`` (``vx.sandbox.CallBudget``)."""
    budget = req["timeouts"][i]
    scale = req["scales"][i] if req.get("scales") else 0.0
    if scale:
        budget = _min(req["caps"][i], _max(budget, scale * _state["reference_cpu"]))
    return budget


def _call(fn, i, args, kwargs, timeout, req, fd):
    mcap = req["message_cap"]
    capture = _Capture(req["stdout_cap"])
    status, type_name, exc_type, exc_message = "ok", None, None, None
    on_purpose = False
    _setrecursionlimit(req["recursion_limit"])
    wall = _wall_for(req, timeout)
    saved_stdout = _sys.stdout
    _sys.stdout = capture
    result = None
    caught = None
    cpu0 = _cpu()
    start = _perf()
    try:
        _arm(timeout, wall)  # one shot each: never fires inside the harness twice
        result = fn(*args, **kwargs)
    except _BaseException as exc:
        caught = exc
    if _getpid() != _state["pid"]:
        _os_exit(0)  # a fork() child of the candidate returned into the harness: not ours to report
    n = 0
    while n < 8:  # the call into _reset_interpreter itself can trip a hook: retry (see there)
        try:
            _reset_interpreter(req)
            break
        except _BaseException:
            n += 1
    duration = _perf() - start
    cpu = _max(0.0, _cpu() - cpu0)
    _sys.stdout = saved_stdout
    if caught is not None:
        if _type(caught) is _CallTimeout:
            status = "timeout"
        else:
            status, exc_type, exc_message = "exception", _type_name_of(_type(caught)), _message(caught, mcap)
            on_purpose = _raised_on_purpose(caught)
        caught = None
    if _state["fired"]:  # the candidate swallowed the timeout and returned anyway
        status, exc_type, exc_message = "timeout", None, None
    if status == "timeout":
        if _state["fired"] == "wall":
            exc_message = (
                f"call did not return within its wall-clock limit of {wall:.3g} s (it used {cpu:.3g} s of CPU; "
                f"its CPU budget is {timeout:.3g} s)"
            )
        else:
            exc_message = f"call used more than its CPU budget of {timeout:.3g} s"
    elif req.get("refs") and req["refs"][i]:
        _state["reference_cpu"] = _max(_state["reference_cpu"], cpu)
    encoded = None
    if status == "ok":
        type_name = _type_name_of(_type(result))
        try:
            encoded = _Raw(encode_value(result, req["max_value_nodes"]))
        except _Unserializable as exc:
            status, type_name, exc_message = "unserializable", exc.args[0], exc.args[1]
        except _RecursionError:
            status, exc_message = "unserializable", "nested too deeply to report"
        except _MemoryError:
            status, exc_message = "unserializable", "out of memory while encoding the value"
        except _BaseException as exc:  # e.g. a thread the candidate left running mutated it
            status = "unserializable"
            exc_message = f"the value changed while it was being encoded ({_type_name_of(_type(exc))})"
    args_after = None
    unchanged = False
    want = req["args_after"]
    if want is True or (want and want[i]):
        try:
            args_after = _Raw(
                '{"tuple":['
                + encode_value(_tuple(args), req["max_value_nodes"])
                + ","
                + encode_value(kwargs, req["max_value_nodes"])
                + "]}"
            )
        except _BaseException:
            args_after = None
        before = req.get("args_before")
        if args_after is not None and before and before[i] is not None and args_after.text == before[i]:
            args_after, unchanged = None, True  # the parent has them: it sent them (the frame says `true`)
    # Stay inside the parent's budget for the whole result stream (it treats an oversized
    # stream as a broken protocol): a value that does not fit is reported as too large.
    room = req["max_stream_bytes"] - _state["written"] - 65536 - _len(capture.value()) * 6
    size = (_len(encoded.text) if encoded is not None else 0) + (_len(args_after.text) if args_after is not None else 0)
    if size > room or (encoded is not None and _len(encoded.text) > req["max_value_bytes"]):
        if encoded is not None:
            status, encoded = "unserializable", None
            exc_message = f"value too large to report ({size:d} bytes encoded)"
        args_after = None
    # ... and inside the parent's memory budget for decoding one frame (it refuses more).
    budget = req.get("max_decode_bytes")
    if budget is not None:
        budget -= 262144 + 12 * _len(capture.value())  # the frame's other fields, generously
        if args_after is not None and _decode_cost(args_after.text, budget) > budget // 2:
            args_after = None
        if encoded is not None and _decode_cost(encoded.text, budget) > budget - (budget // 2 if args_after else 0):
            status, encoded, args_after = "unserializable", None, None
            exc_message = f"value too large to report (decoding it would take over {budget >> 20:d} MiB)"
    _call_frame(
        fd,
        i,
        status,
        encoded,
        type_name,
        exc_type,
        exc_message,
        capture.value(),
        capture.truncated,
        duration,
        cpu,
        _float(timeout),
        _TRUE if unchanged else args_after,
        on_purpose and status == "exception",
    )
    return cpu


def _run_calls(req):
    fd = req["result_fd"]
    calls = req["calls"]
    if _type(calls) is _bytes:  # the parent's calls, encoded once for every candidate (``PreparedCalls``)
        calls = _marshal_loads(calls)  # before the candidate's code runs
    pools = req.get("pools")
    caps = req.get("pool_caps")
    used = [0.0] * _len(caps) if pools else None
    fn = _load(req, fd)
    if fn is not None:
        for i, (args, kwargs) in _enumerate(calls):
            k = pools[i] if pools else -1
            if k >= 0 and used[k] >= caps[k]:  # its pool is spent: skipped (the parent checks the sum)
                _call_frame(fd, i, "skipped", None, None, None, None, "", False, 0.0, 0.0, 0.0, None, False)
                continue
            cpu = _call(fn, i, args, kwargs, _call_budget(req, i), req, fd)
            if k >= 0:
                used[k] += cpu
    _frame(fd, [("t", "done")])
    _os_exit(0)


def _run_script(req):
    namespace = {"__name__": "__main__", "__builtins__": _builtins}
    code = 0
    try:
        _exec(_compile(req["code"], "<script>", "exec", dont_inherit=True), namespace)
    except _SystemExit as exc:
        arg = exc.code
        if arg is None:
            code = 0
        elif _type(arg) is _int:
            code = arg & 0xFF
        else:
            try:
                _sys.stderr.write(_str(arg) + "\n")
            except _BaseException:
                pass
            code = 1
    except _BaseException:
        import traceback

        try:
            traceback.print_exc()
        except _BaseException:
            pass
        code = 1
    for stream in (_sys.stdout, _sys.stderr):
        try:
            stream.flush()
        except _BaseException:
            pass
    _os_exit(code)


# --------------------------------------------------------------------------------------------
# process setup: limits, privileges, supervision
# --------------------------------------------------------------------------------------------


def _read_exact(n):
    data = b""
    while _len(data) < n:
        chunk = _os_read(0, n - _len(data))
        if not chunk:
            _os_exit(70)  # the parent went away before sending the request
        data += chunk
    return data


def _read_request():
    """The request: 8-byte length + marshal. Stdin stays open afterwards: it is the lifeline
    whose end of file tells a supervisor that the parent died."""
    size = _int.from_bytes(_read_exact(8), "big")
    return _marshal.loads(_read_exact(size))


def _prctl():
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    return fn


def _confine(req):
    """Drop privileges and apply limits to this process (the worker), before candidate code."""
    drop = req["drop"]
    if drop is not None:
        uid, gid = drop
        _os.setgroups([])
        _os.setresgid(gid, gid, gid)
        _os.setresuid(uid, uid, uid)
    import resource

    for name, value in req["limits"].items():
        which = getattr(resource, name)
        soft = value
        hard = value if name != "RLIMIT_CPU" else value + 1
        resource.setrlimit(which, (soft, hard))
    fd = _os.open("/dev/null", _os.O_RDONLY)
    if fd != 0:
        _os.dup2(fd, 0)
        _os.close(fd)
    if req["no_new_privs"]:
        if _prctl()(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if req["landlock"] is not None:
        _install_landlock(req["landlock"], req.get("import_paths") or [])
    if req["seccomp"] is not None:
        _install_seccomp(req["seccomp"])
    _set_handler(_signal.SIGXFSZ, _signal.SIG_IGN)  # oversized writes fail with EFBIG instead
    _set_handler(_signal.SIGXCPU, _on_cpu_limit)  # an init (forkserver) would ignore it otherwise


_LL_READ_DIR = (1 << 0) | (1 << 2) | (1 << 3)  # Landlock EXECUTE, READ_FILE, READ_DIR


def _ll_file_rw(abi):
    return (1 << 1) | (1 << 2) | ((1 << 14) if abi >= 3 else 0)  # WRITE_FILE, READ_FILE, TRUNCATE


def _landlock_abi(ctypes, libc):
    """This kernel's Landlock ABI: ``(abi, every fs right it knows, the ruleset attr, its size,
    the path-beneath struct)``. Raises OSError without Landlock."""
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        raise OSError(ctypes.get_errno(), "Landlock is not available in this kernel")
    fs_all = (1 << 13) - 1
    if abi >= 2:
        fs_all |= 1 << 13  # REFER
    if abi >= 3:
        fs_all |= 1 << 14  # TRUNCATE
    if abi >= 5:
        fs_all |= 1 << 15  # IOCTL_DEV

    class _Ruleset(ctypes.Structure):
        _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]

    class _PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]

    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    attr = _Ruleset(fs_all, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    return abi, fs_all, attr, size, _PathBeneath


def _install_landlock(spec, import_paths):
    """Restrict this process with Landlock (Linux >= 5.13, unprivileged; needs no_new_privs).

    Reads only below ``spec["read"]`` (system dirs, the interpreter) and the import paths;
    reads and writes only in the working directory (and /dev/null). With ABI >= 4 every TCP
    bind/connect is refused; with ABI >= 6 signals and abstract unix sockets cannot reach
    processes outside the sandbox. Raises OSError when the kernel lacks Landlock.
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    abi, fs_all, attr, size, _PathBeneath = _landlock_abi(ctypes, libc)
    ruleset = syscall(444, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    read_dir, file_rw = _LL_READ_DIR, _ll_file_rw(abi)
    rules = [(path, read_dir) for path in _list(spec["read"]) + _list(import_paths)]
    rules += [(_os.getcwd(), fs_all), ("/dev/null", file_rw), ("/dev/urandom", 1 << 2), ("/dev/zero", 1 << 2)]
    try:
        for path, allowed in rules:
            try:
                parent = _os.open(path, _os.O_PATH | _os.O_CLOEXEC)
            except OSError:
                continue  # absent on this system
            try:
                if not _os.path.isdir(path):
                    allowed &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # file rights only
                rule = _PathBeneath(allowed, parent)
                if syscall(445, ruleset, 1, ctypes.byref(rule), 0) < 0:  # landlock_add_rule
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule({path}) failed")
            finally:
                _os.close(parent)
        if syscall(446, ruleset, 0) < 0:  # landlock_restrict_self
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        _os.close(ruleset)


def _add_seccomp_rules(ctypes, lib, ctx, _ArgCmp, rules):
    """Add ``(syscall name, errno, [(arg, op, datum_a, datum_b), ...])`` deny rules to a libseccomp
    context (names this architecture lacks are skipped)."""
    for name, errno, conds in rules:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            continue  # no such syscall on this architecture
        array = (_ArgCmp * max(1, len(conds)))(*[_ArgCmp(*c) for c in conds])
        rc = lib.seccomp_rule_add_array(ctx, 0x00050000 | errno, nr, len(conds), array)
        if rc != 0:
            raise OSError(f"seccomp_rule_add({name}) failed: {rc:d}")


def _install_seccomp(spec):
    """Load a deny-list filter through the system libseccomp (ctypes).

    ``spec["rules"]`` is a list of ``(syscall name, errno, [(arg, op, datum_a, datum_b), ...])``:
    the syscall fails with that errno when all comparisons hold (always, with no comparisons).
    Everything else is allowed. libseccomp also sets PR_SET_NO_NEW_PRIVS.
    """
    import ctypes

    class _ArgCmp(ctypes.Structure):
        _fields_ = [
            ("arg", ctypes.c_uint),
            ("op", ctypes.c_int),
            ("datum_a", ctypes.c_uint64),
            ("datum_b", ctypes.c_uint64),
        ]

    lib = ctypes.CDLL(spec["library"], use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(0x7FFF0000)  # SCMP_ACT_ALLOW
    if not ctx:
        raise OSError("seccomp_init failed")
    rules = _list(spec["rules"])
    # Processes the candidate must not signal even when it runs as the same account: vx
    # itself and our supervisor (so it can neither stop the deadline nor the cleanup).
    for pid in _list(spec.get("protect", ())) + [_os.getppid()]:
        for name in ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"):
            rules.append((name, 1, [(0, 4, pid, 0)]))  # arg0 == pid -> EPERM
    try:
        _add_seccomp_rules(ctypes, lib, ctx, _ArgCmp, rules)
        rc = lib.seccomp_load(ctx)
        if rc != 0:
            raise OSError(f"seccomp_load failed: {rc:d}")
    finally:
        lib.seccomp_release(ctx)


def _descendants_of(root):
    """Pids of every live descendant of ``root`` (one /proc scan)."""
    children = {}
    for name in _os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for kid in children.get(todo.pop(), ()):
            found.append(kid)
            todo.append(kid)
    return found


def _reap_descendants():
    """Stop, then kill and reap, every remaining descendant (we are their subreaper).

    Descendants are frozen with SIGSTOP first (a stopped process cannot fork), rescanning
    until a scan finds nothing new, so a fork bomb cannot outrun the cleanup; then all get
    SIGKILL and are reaped as they are re-parented to us.
    """
    me = _os.getpid()
    try:
        while _os.waitpid(-1, _os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        return  # fast path: nothing left
    frozen = set()
    rounds = 0
    while rounds < 1000:
        rounds += 1
        fresh = [pid for pid in _descendants_of(me) if pid not in frozen]
        if not fresh:
            break
        for pid in fresh:
            try:
                _os.kill(pid, 19)  # SIGSTOP
            except OSError:
                pass
            frozen.add(pid)
    for pid in frozen:
        try:
            _os.kill(pid, 9)
        except OSError:
            pass
    while True:
        try:
            _os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _wait_worker_or_parent(pid):
    """Wait for the worker; return its wait status, or None if the parent died first (our
    stdin, the lifeline, reached end of file: nobody will collect results any more)."""
    try:
        pidfd = _os.pidfd_open(pid)
    except (AttributeError, OSError):
        return _os.waitpid(pid, 0)[1]  # no pidfd (kernel < 5.3): no lifeline either
    import select

    watching = [pidfd, 0]
    while True:
        ready = select.select(watching, [], [])[0]
        if pidfd in ready:
            _os_close(pidfd)
            return _os.waitpid(pid, 0)[1]
        if 0 in ready:
            try:
                data = _os_read(0, 4096)
            except OSError:
                data = b""
            if not data:
                _os_close(pidfd)
                return None


def _supervise(req, worker):
    """Fork the worker and outlive it; ``subreaper`` mode also kills escaped descendants."""
    mode = req["supervise"]
    if mode == "subreaper" and _prctl()(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError("prctl(PR_SET_CHILD_SUBREAPER) failed")

    def on_term(signum, frame):  # the parent's deadline: stop the worker, then clean up
        _set_handler(_signal.SIGTERM, _signal.SIG_IGN)
        raise _CallTimeout()

    _set_handler(_signal.SIGTERM, on_term)
    pid = _os.fork()
    if pid == 0:
        _set_handler(_signal.SIGTERM, _signal.SIG_DFL)
        try:
            worker(req)  # leaves with os._exit on its own
        except _BaseException:  # the worker's setup failed (limits, privileges): say why
            import traceback

            traceback.print_exc()
        _os_exit(70)
    status = None
    try:
        try:
            status = _wait_worker_or_parent(pid)
        finally:
            _set_handler(_signal.SIGTERM, _signal.SIG_IGN)
    except _CallTimeout:
        status = None
    if status is None:
        try:
            _os.kill(pid, 9)
        except OSError:
            pass
        try:
            _, status = _os.waitpid(pid, 0)
        except ChildProcessError:
            status = 9
    if mode == "subreaper":
        _reap_descendants()
    code = _os.waitstatus_to_exitcode(status)
    _os_exit(code if code >= 0 else 128 - code)


def _worker(req):
    _state["pid"] = _getpid()
    # The result channel's number is whatever the parent's pipe got: move it to the lowest free
    # descriptor, so that the candidate's view does not depend on how many files the parent holds
    # (and stays below the candidate's descriptor limit).
    fd = req.get("result_fd")
    if isinstance(fd, int) and fd > 3:
        low = _os.dup(fd)
        if low < fd:
            _os.close(fd)
            req["result_fd"] = low
        else:
            _os.close(low)
    _confine(req)
    if req.get("import_paths"):
        _sys.path[0:0] = req["import_paths"]
    if req["mode"] == "script":
        _run_script(req)
    else:
        _run_calls(req)


# --------------------------------------------------------------------------------------------
# fork-server mode (the "forkserver" layer; the parent side is forkserver.py)
# --------------------------------------------------------------------------------------------
#
# The server is started once per worker, already inside bubblewrap (with CAP_SYS_ADMIN in the
# sandbox's own user namespace only), loads this harness once and then forks one fresh child
# per candidate. The server never holds candidate data: it receives only file descriptors
# (SCM_RIGHTS on a SOCK_SEQPACKET control socket); the child reads its request itself. So a
# later candidate cannot find an earlier one's code or inputs in memory it inherited.
#
# Control protocol (server side), one candidate at a time:
#     vx -> server   b"R" + fds [request pipe (read end), result pipe, stdout pipe, stderr pipe]
#     server -> vx   b"P" + pid (4 bytes) + fds [pidfd of the child]     (b"E" + text: fork failed)
#     server -> vx   b"S" + wait status (4 bytes, signed), once the child is reaped
# End of file on the control socket (vx closed it or died) makes the server kill its child and
# leave. The first message after start-up is b"H" (ready) or b"F" + text (cannot serve).
#
# Each child, before any candidate code: its own session; a fresh pid namespace of its own (it
# is that namespace's init: when it ends, every process it started ends); its own mount and IPC
# namespaces with fresh size-limited tmpfs mounts on /sandbox (the workdir), /tmp and /dev/shm
# and a /proc that shows only its own namespace; all capabilities dropped; no_new_privs,
# Landlock and the seccomp filter (compiled once by the server); every descriptor it does not
# need closed; then the rlimits, and the candidate. Being an init, it ignores signals it sends
# to itself without a handler, and orphans it leaves are reaped when it ends.

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 0x4000, 0x40000
_server = {}


def _check(rc, what):
    if rc != 0:
        errno = _server["ctypes"].get_errno()
        raise OSError(errno, f"{what} failed: {_os.strerror(errno)}")


def _seccomp_program(spec):
    """Compile the deny-list once (libseccomp) and return the raw BPF program (bytes)."""
    import ctypes

    class _ArgCmp(ctypes.Structure):
        _fields_ = [
            ("arg", ctypes.c_uint),
            ("op", ctypes.c_int),
            ("datum_a", ctypes.c_uint64),
            ("datum_b", ctypes.c_uint64),
        ]

    lib = ctypes.CDLL(spec["library"], use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(0x7FFF0000)  # SCMP_ACT_ALLOW
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        _add_seccomp_rules(ctypes, lib, ctx, _ArgCmp, _list(spec["rules"]))
        r, w = _os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, w)
            _os.close(w)
            w = -1
            if rc != 0:
                raise OSError(f"seccomp_export_bpf failed: {rc:d}")
            program = b""
            while True:
                chunk = _os_read(r, 65536)
                if not chunk:
                    break
                program += chunk
        finally:
            _os.close(r)
            if w >= 0:
                _os.close(w)
    finally:
        lib.seccomp_release(ctx)
    if not program or _len(program) % 8:
        raise OSError(f"seccomp_export_bpf produced {_len(program):d} bytes")
    return program


def _prepare(req):
    """Everything the children need, built once in the server, so that a child only makes
    system calls: bound libc functions, structures, the seccomp program, Landlock rules."""
    import ctypes
    import fcntl
    import resource

    libc = ctypes.CDLL(None, use_errno=True)
    libc.unshare.argtypes = [ctypes.c_int]
    libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    libc.syscall.restype = ctypes.c_long
    ptr = ctypes.CDLL(None, use_errno=True)  # a second handle: prctl with a pointer argument
    ptr.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]

    class _CapHeader(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class _CapData(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    state = {
        "ctypes": ctypes,
        "fcntl": fcntl,
        "resource": resource,
        "libc": libc,
        "ptr_prctl": ptr.prctl,
        "cap_header": _CapHeader(0x20080522, 0),  # _LINUX_CAPABILITY_VERSION_3
        "cap_data": (_CapData * 2)(),
        "tmpfs": f"size={req['disk_bytes']:d},mode=0700".encode(),
        "seccomp": None,
        "landlock": None,
    }
    if req["seccomp"] is not None:
        program = _seccomp_program(req["seccomp"])

        class _Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        buf = ctypes.create_string_buffer(program, _len(program))
        state["seccomp"] = (buf, _Prog(_len(program) // 8, ctypes.cast(buf, ctypes.c_void_p)))
    state["rebind"] = [(path.encode(), stash.encode()) for path, stash in req["rebind"]]
    if req["landlock"] is not None:
        seen = _dict(req["rebind"])
        paths = [seen.get(path, path) for path in req["import_paths"]]  # as this process sees them
        state["landlock"] = _prepare_landlock(ctypes, libc, req["landlock"], paths)
    return state


def _prepare_landlock(ctypes, libc, spec, import_paths):
    """The Landlock rules of ``_install_landlock``, with the system paths opened once here (the
    workdir rule is added per child: its tmpfs is new each time). Raises OSError without Landlock."""
    abi, fs_all, attr, size, _PathBeneath = _landlock_abi(ctypes, libc)
    read_dir, file_rw = _LL_READ_DIR, _ll_file_rw(abi)
    wanted = [(path, read_dir) for path in _list(spec["read"]) + _list(import_paths)]
    wanted += [("/dev/null", file_rw), ("/dev/urandom", 1 << 2), ("/dev/zero", 1 << 2)]
    import fcntl

    rules = []
    for path, allowed in wanted:
        try:
            low = _os.open(path, _os.O_PATH | _os.O_CLOEXEC)
        except OSError:
            continue  # absent on this system (or hidden by bubblewrap)
        fd = fcntl.fcntl(low, fcntl.F_DUPFD_CLOEXEC, 64)  # above the 0-3 a child fills in
        _os.close(low)
        if not _os.path.isdir(path):
            allowed &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # file rights only
        rules.append(_PathBeneath(allowed, fd))
    # Per child: its fresh (private, size-limited) workdir, /tmp and /dev/shm are fully usable.
    private = [(path, _PathBeneath(fs_all, -1)) for path in ("/sandbox", "/tmp", "/dev/shm")]
    return {"attr": attr, "size": ctypes.c_size_t(size), "rules": rules, "private": private}


def _send(sock, data, fds=()):
    import array

    if fds:
        sock.sendmsg([data], [(1, 1, array.array("i", fds))])  # SOL_SOCKET, SCM_RIGHTS
    else:
        sock.sendmsg([data])


def _serve(req):
    """The fork server (see the section comment). Never returns."""
    import socket

    control = socket.socket(fileno=req["control_fd"])
    try:
        _server.update(_prepare(req))
        libc = _server["libc"]
        # A pid namespace owned by our own user namespace, so that we may setns() back into
        # it after giving each child a fresh one: this process forks the real server into it.
        _check(libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")
        pid = _os.fork()
        if pid:
            status = _os.waitpid(pid, 0)[1]
            code = _os.waitstatus_to_exitcode(status)
            _os_exit(code if code >= 0 else 128 - code)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGKILL when the waiting parent dies
        base = _os.open("/proc/self/ns/pid", _os.O_RDONLY | _os.O_CLOEXEC)
        for name in req["preload"]:
            try:
                __import__(name)
            except _BaseException:
                pass
        fd = _os.open("/dev/null", _os.O_RDONLY)
        _os.dup2(fd, 0)
        _os.close(fd)
        import gc

        gc.collect()
        gc.freeze()  # children then share the server's objects without copying their pages
    except _BaseException as exc:
        try:
            _send(control, b"F" + f"{_type_name_of(_type(exc))}: {exc}".encode("utf-8", "replace")[:2000])
        except _BaseException:
            pass
        _os_exit(71)
    import select

    _send(control, b"H")
    cmsg_space = socket.CMSG_SPACE(16 * 4)
    while True:
        try:
            data, ancdata, _flags, _addr = control.recvmsg(64, cmsg_space)
        except InterruptedError:
            continue
        fds = []
        for level, kind, blob in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += _list(_memoryview(blob[: _len(blob) - _len(blob) % 4]).cast("i"))
        if not data:
            _os_exit(0)  # vx closed its end (or died): nobody will ask again
        if data != b"R" or _len(fds) != 4:
            _os_exit(72)  # not our protocol: stop rather than guess
        try:
            _check(libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")
            pid = _os.fork()
        except OSError as exc:
            libc.setns(base, _CLONE_NEWPID)
            for fd in fds:
                _os.close(fd)
            _send(control, b"E" + _str(exc).encode("utf-8", "replace")[:2000])
            continue
        if pid == 0:
            try:
                _child(fds)
            finally:
                _os_exit(70)
        _check(libc.setns(base, _CLONE_NEWPID), "setns(back to the server's pid namespace)")
        for fd in fds:
            _os.close(fd)
        pidfd = _os.pidfd_open(pid)
        _send(control, b"P" + pid.to_bytes(4, "big"), [pidfd])
        while True:
            ready = select.select([control, pidfd], [], [])[0]
            if pidfd in ready:
                break
            if control.recv(64, socket.MSG_PEEK) == b"":
                _os.kill(pid, 9)
                _os.waitpid(pid, 0)
                _os_exit(0)
            control.recv(64)  # nothing is expected while a child runs: drop it
        status = _os.waitpid(pid, 0)[1]
        _os.close(pidfd)
        _send(control, b"S" + status.to_bytes(4, "big", signed=True))


def _child(fds):
    """In a fresh child of the server: pid 1 of a new pid namespace. Isolate, then run."""
    srv = _server
    libc = srv["libc"]
    try:
        _os.setsid()  # leave the server's session and process group: kill(0, ...) stays inside
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG: SIGKILL if the server dies
        F_DUPFD = srv["fcntl"].F_DUPFD
        high = [srv["fcntl"].fcntl(fd, F_DUPFD, 16) for fd in fds]  # request, result, stdout, stderr
        for target, fd in ((0, high[0]), (3, high[1]), (1, high[2]), (2, high[3])):
            _os.dup2(fd, target)
        _os.close(high[0])  # the others are closed with the server's descriptors below
        _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC), "unshare(CLONE_NEWNS|CLONE_NEWIPC)")
        _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "making mounts private")
        flags = _MS_NOSUID | _MS_NODEV
        for where in (b"/sandbox", b"/tmp", b"/dev/shm"):
            if where == b"/dev/shm" and not _os.path.isdir("/dev/shm"):
                continue
            _check(libc.mount(b"tmpfs", where, b"tmpfs", flags, srv["tmpfs"]), f"mounting a tmpfs on {where.decode()}")
        _check(libc.mount(b"proc", b"/proc", b"proc", flags | _MS_NOEXEC, None), "mounting /proc")
        for path, stash in srv["rebind"]:  # import paths below the fresh mounts
            _os.makedirs(path, exist_ok=True)
            _check(libc.mount(stash, path, None, 4096 | _MS_REC, None), "binding an import path")  # MS_BIND
            if not _os.statvfs(path).f_flag & 1:  # ST_RDONLY (a bind of a read-only mount normally is)
                _check(libc.mount(None, path, None, 32 | 4096 | 1 | flags, None), "making an import path read-only")
        _os.chdir("/sandbox")
        # Every capability goes (the server keeps CAP_SYS_ADMIN for the namespaces above): the
        # ambient set (bubblewrap grants it that way), then effective, permitted, inheritable.
        _check(libc.prctl(47, 4, 0, 0, 0), "prctl(PR_CAP_AMBIENT_CLEAR_ALL)")
        _check(libc.capset(srv["ctypes"].byref(srv["cap_header"]), srv["cap_data"]), "capset (dropping capabilities)")
        req = _read_request()
        _check(libc.prctl(38, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        lock = srv["landlock"]
        if lock is not None:
            ctypes = srv["ctypes"]
            ruleset = libc.syscall(444, ctypes.byref(lock["attr"]), lock["size"], 0)
            if ruleset < 0:
                _check(-1, "landlock_create_ruleset")
            fresh = []
            for path, rule in lock["private"]:
                try:
                    rule.parent_fd = _os.open(path, _os.O_PATH | _os.O_CLOEXEC)
                except OSError:
                    continue  # no /dev/shm here
                fresh.append(rule)
            for rule in lock["rules"] + fresh:
                if libc.syscall(445, ruleset, 1, ctypes.byref(rule), 0) < 0:  # landlock_add_rule
                    _check(-1, "landlock_add_rule")
            if libc.syscall(446, ruleset, 0) < 0:  # landlock_restrict_self
                _check(-1, "landlock_restrict_self")
        _os.closerange(4, 1 << 20)  # the control socket and everything else of the server's
        if srv["seccomp"] is not None:
            if srv["ptr_prctl"](22, 2, srv["ctypes"].addressof(srv["seccomp"][1]), 0, 0) != 0:  # PR_SET_SECCOMP
                _check(-1, "loading the seccomp filter")
    except _BaseException:
        import traceback

        traceback.print_exc()
        _os_exit(70)
    _forked_worker(req)


def _forked_worker(req):
    """The candidate's process itself (pid 1 of its namespace): limits, then the candidate."""
    srv = _server
    _state["pid"] = _getpid()
    resource = srv["resource"]
    for name, value in _dict_items(req["limits"]):
        resource.setrlimit(getattr(resource, name), (value, value if name != "RLIMIT_CPU" else value + 1))
    fd = _os.open("/dev/null", _os.O_RDONLY)
    _os.dup2(fd, 0)
    _os.close(fd)
    _set_handler(_signal.SIGXFSZ, _signal.SIG_IGN)  # oversized writes fail with EFBIG instead
    _set_handler(_signal.SIGXCPU, _on_cpu_limit)  # an init (forkserver) would ignore it otherwise
    if req.get("import_paths"):
        _sys.path[0:0] = req["import_paths"]
    if req["mode"] == "script":
        _run_script(req)
    else:
        _run_calls(req)


def main():
    req = _read_request()
    if req["mode"] == "server":
        _serve(req)
    if req["supervise"] == "none":
        _worker(req)
    else:
        _supervise(req, _worker)


if __name__ == "__main__":
    main()
