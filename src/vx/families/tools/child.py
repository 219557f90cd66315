"""The sandboxed side of a replay: BFCL's backend classes, driven one call at a time.

This file is *not* imported by vx: :mod:`vx.families.tools.replay` sends its text to a sandboxed
child (``vx.sandbox``) as the candidate's code, with ``vx_replay`` as the entry point. It must
therefore stay self-contained: the standard library and BFCL's backend modules only (the child's
import path is a staged copy of those modules and their one dependency, mpmath:
:func:`vx.families.tools.backends.staged_dir`).

No call string is ever evaluated. Each call names one public method of the involved backend
classes and gives its keyword arguments as parsed JSON; this module looks the name up in the
methods of the fresh instances it made and calls it with those arguments. The parent has already
refused any other name and bounded the arguments (size, depth, count); the lookup here is the
second, independent refusal. The sandbox bounds each call's CPU time and the process's memory.

Requests (``vx_replay(op, ...)``):

* ``("load", classes, config)`` -- fresh instances of ``classes`` (BFCL's class names, in the
  task's order), each stateful one loaded with its part of ``config`` as BFCL loads it
  (``_load_scenario(deepcopy(part), long_context=False)``). Returns the public method names of
  each class.
* ``("call", name, kwargs)`` -- calls the method; returns ``[status, result, digest]``: status
  ``"ok"`` or ``"error"`` (it raised), the result as BFCL's executor renders it (a string: ``str``
  as is, a ``dict`` as JSON, anything else ``str()``; an exception as ``"Error during execution:
  <message>"``), and a digest of the backends' state afterwards (whether the call changed it; equal
  states by ``==`` share it: :func:`canonical`).
* ``("state",)`` -- ``[digest, state]``: the backends' state as plain data: each instance's public attributes (what
  BFCL's state checker compares), with the file system's ``File``/``Directory`` objects as
  ``{"name", "content"}``/``{"name", "contents"}`` (their ``__eq__`` compares exactly these).
"""

import copy
import hashlib
import importlib
import inspect
import json

#: BFCL's backend classes and their modules (bfcl_eval.constants.executable_backend_config).
PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code."
MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
#: Classes BFCL never loads a scenario into.
STATELESS = ("MathAPI",)
#: Nesting of the state beyond which it is cut (the backends' states are a few levels deep).
MAX_STATE_DEPTH = 40

_instances: dict = {}
_methods: dict = {}


def _load(classes, config):
    _instances.clear()
    _methods.clear()
    names = {}
    for cls_name in classes:
        if cls_name not in MODULES:
            raise ValueError("unknown backend class " + repr(cls_name))
        module = importlib.import_module(PREFIX + MODULES[cls_name])
        instance = getattr(module, cls_name)()
        if cls_name not in STATELESS:
            part = config.get(cls_name, {}) if isinstance(config, dict) else {}
            instance._load_scenario(copy.deepcopy(part), long_context=False)
        _instances[cls_name] = instance
        public = []
        for method_name, _method in inspect.getmembers(instance, predicate=inspect.ismethod):
            if method_name.startswith("_"):
                continue
            _methods[method_name] = cls_name  # a later class wins a shared name, as in BFCL's executor
            public.append(method_name)
        names[cls_name] = public
    return names


def _render(result):
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:
            return str(result)
    return str(result)


def plain(value, depth=0):
    """A backend value as plain data (public attributes of objects, the file system's nodes by name
    and contents; cycles cannot occur: a directory's parent link is not followed)."""
    if depth > MAX_STATE_DEPTH:
        return "<too deep>"
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is list:
        return [plain(v, depth + 1) for v in value]
    if t is tuple:
        return tuple(plain(v, depth + 1) for v in value)
    if t is dict:
        return {
            (k if type(k) in (str, int, float, bool) or k is None else str(k)): plain(v, depth + 1)
            for k, v in value.items()
        }
    if t in (set, frozenset):
        return sorted((plain(v, depth + 1) for v in value), key=repr)
    name = t.__name__
    if name == "File":
        return {"name": value.name, "content": plain(value.content, depth + 1)}
    if name == "Directory":
        return {"name": value.name, "contents": plain(value.contents, depth + 1)}
    if hasattr(value, "__dict__"):
        return {k: plain(v, depth + 1) for k, v in vars(value).items() if not k.startswith("_")}
    return repr(value)


def state():
    return {
        cls_name: {k: plain(v) for k, v in vars(instance).items() if not k.startswith("_")}
        for cls_name, instance in _instances.items()
    }


def canonical(value):
    """A plain value in the form equal values share: dicts by sorted keys, an integral float as an int (BFCL's
    state checker compares with ``==``, for which key order does not count and 2940 == 2940.0)."""
    t = type(value)
    if t is dict:
        return sorted(((repr(k), canonical(v)) for k, v in value.items()), key=lambda kv: kv[0])
    if t is list:
        return [canonical(v) for v in value]
    if t is tuple:
        return tuple(canonical(v) for v in value)
    if t is float and value == value and value not in (float("inf"), float("-inf")) and value.is_integer():
        return int(value)
    return value


def digest(snapshot=None):
    snapshot = state() if snapshot is None else snapshot
    return hashlib.sha256(repr(canonical(snapshot)).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _call(name, kwargs):
    cls_name = _methods.get(name)
    if cls_name is None or name.startswith("_") or type(kwargs) is not dict:
        return ["refused", "not a public method of the involved classes: " + repr(name)[:80], digest()]
    method = getattr(_instances[cls_name], name)
    try:
        result = method(**kwargs)
    except Exception as exc:
        return ["error", "Error during execution: " + str(exc), digest()]
    return ["ok", _render(result), digest()]


def vx_replay(op, *args):
    if op == "load":
        return _load(args[0], args[1])
    if op == "call":
        return _call(args[0], args[1])
    if op == "state":
        snapshot = state()
        return [digest(snapshot), snapshot]
    raise ValueError("unknown request " + repr(op))
