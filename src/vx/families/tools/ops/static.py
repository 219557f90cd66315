"""The tools family's root ``decodes`` and its checks of calls against the offered functions' docs.

Every op here reads the task's question and function docs and the decoded answer
(:mod:`vx.families.tools.ops.artifact`); none reads a possible answer, a ground-truth call or the task's
category. An op abstains when its check does not apply: an answer that calls nothing, or (for the checks
of arguments) calls only to functions that are not offered -- ``unknown_function`` speaks for those.
Messages name the call (``call 2 of 3``), the function, the parameter and the value at fault.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

import attrs

from vx.families.tools import decode as decode_module
from vx.families.tools import dialect
from vx.families.tools.decode import Call, Decoded
from vx.families.tools.dialect import Function, value_problem
from vx.families.tools.ops import artifact
from vx.families.tools.ops.artifact import Answer, answer_of
from vx.ops import abstain, clean, drawback, op
from vx.text import printable

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (__name__, decode_module, dialect, artifact)


def _name(text: str) -> str:
    return printable(text)[:80]


def _where(k: int, n: int, call: Call) -> str:
    return (f"call {k} of {n} " if n > 1 else "the call ") + f"({_name(call.name)})"


def _offered_calls(answer: Answer) -> Iterator[tuple[int, Call, Function]]:
    """(position, call, its function) for every call to an offered function."""
    for k, call in enumerate(answer.decoded.calls, 1):
        fn = answer.offered.get(call.name) if call.offered else None
        if fn is not None:
            yield k, call, fn


@op(tier="static", detects="unreadable", root=True, depends=DEPENDS)
def decodes(task, output, ctx):
    """The output is an answer the decoder reads: text or structured calls within the reading bounds.

    Calls written in a form that does not parse are read as calling nothing, as BFCL's own decoders read
    them: wrong where a function fits, right where none does -- ``misformatted`` judges them with the
    other answers, so the root does not fail them."""
    answer = answer_of(task, output, ctx)
    d = answer.decoded
    if d.beyond:
        return drawback(printable(d.error))
    if d.error:
        return clean(f"its calls cannot be read ({printable(d.error)[:200]}): a format problem, not a call")
    if not d.calls:
        return clean("a reply in words: no call" if d.form == "text" else "no call")
    return clean(f"{len(d.calls)} call(s), read as {d.form}" + (" (in a fenced block)" if d.fenced else ""))


@op(tier="static", detects="unknown_function", depends=DEPENDS)
def unknown_function(task, output, ctx):
    """A call names a function the task does not offer."""
    answer = answer_of(task, output, ctx)
    calls = answer.decoded.calls
    if not calls:
        return abstain("no call")
    if not answer.offered:
        return abstain("the task offers no function docs")
    for k, call in enumerate(calls, 1):
        if not call.offered:
            near = difflib.get_close_matches(call.written, list(answer.offered), n=1, cutoff=0.6)
            hint = f" (the nearest offered one is {_name(near[0])})" if near else ""
            return drawback(
                f"{_where(k, len(calls), call)} is not one of the {len(answer.offered)} offered function(s){hint}"
            )
    return clean(f"every call names an offered function ({len(calls)} call(s))")


@op(tier="static", detects="missing_argument", depends=DEPENDS)
def missing_required(task, output, ctx):
    """A call leaves out a parameter its function's docs require."""
    answer = answer_of(task, output, ctx)
    checked = 0
    n = len(answer.decoded.calls)
    for k, call, fn in _offered_calls(answer):
        checked += 1
        missing = [p for p in fn.required if p not in call.args]
        if missing:
            return drawback(
                f"{_where(k, n, call)} leaves out the required parameter(s) {', '.join(map(_name, missing))}"
            )
    if not checked:
        return abstain("no call to an offered function")
    return clean(f"every call gives its required parameters ({checked} call(s))")


@op(tier="static", detects="unknown_argument", depends=DEPENDS)
def unknown_parameter(task, output, ctx):
    """A call gives a parameter its function's docs do not have."""
    answer = answer_of(task, output, ctx)
    checked = 0
    n = len(answer.decoded.calls)
    for k, call, fn in _offered_calls(answer):
        checked += 1
        extra = [a for a in call.args if a not in fn.params]
        if extra:
            near = difflib.get_close_matches(extra[0], list(fn.params), n=1, cutoff=0.6)
            hint = f" (did it mean {_name(near[0])}?)" if near else ""
            return drawback(f"{_where(k, n, call)} gives {_name(extra[0])}, which {_name(fn.name)} does not have{hint}")
    if not checked:
        return abstain("no call to an offered function")
    return clean(f"every argument is a documented parameter ({checked} call(s))")


@op(tier="static", detects="wrong_type", depends=DEPENDS)
def wrong_type(task, output, ctx):
    """An argument's value is not of the type its parameter's docs give (BFCL's dialect: an integer is
    a float too, a boolean is not an integer; an array's elements are checked one level deep)."""
    answer = answer_of(task, output, ctx)
    checked = 0
    n = len(answer.decoded.calls)
    for k, call, fn in _offered_calls(answer):
        for name, value in call.args.items():
            param = fn.params.get(name)
            if param is None:
                continue
            checked += 1
            typed = _types_only(param)
            why = value_problem(value, typed)
            if why:
                return drawback(f"{_where(k, n, call)}: {printable(why)}")
    if not checked:
        return abstain("no documented argument to check")
    return clean(f"every argument has its documented type ({checked} argument(s))")


@op(tier="static", detects="wrong_value", depends=DEPENDS)
def outside_enum(task, output, ctx):
    """An argument's value is not one its parameter's docs allow (outside the enum, or a date not in
    the documented format)."""
    answer = answer_of(task, output, ctx)
    checked = 0
    n = len(answer.decoded.calls)
    for k, call, fn in _offered_calls(answer):
        for name, value in call.args.items():
            param = fn.params.get(name)
            if param is None or (param.enum is None and param.format is None and not _items_enum(param)):
                continue
            checked += 1
            if value_problem(value, _types_only(param)) is not None:
                continue  # a wrong type is wrong_type's to say
            why = value_problem(value, param)
            if why:
                return drawback(f"{_where(k, n, call)}: {printable(why)}")
    if not checked:
        return abstain("no argument with an enum or a format")
    return clean(f"every value is allowed ({checked} argument(s) with an enum or a format)")


def _items_enum(param: dialect.Param) -> bool:
    return param.items is not None and (param.items.enum is not None or param.items.format is not None)


def _types_only(param: dialect.Param) -> dialect.Param:
    """The parameter without its enum and format (so that only the type is checked)."""
    items = _types_only(param.items) if param.items is not None else None
    return attrs.evolve(param, enum=None, format=None, items=items)


def format_problem(decoded: Decoded) -> str:
    """Why an answer's calls are in a form the answer format does not take ("" when they are not): the
    format asks for the calls themselves (``[f(a=1)]``) or the model's native tool-call form; calls that
    do not parse, call objects (``{"name": .., "params": ..}``) written as text, the whole answer one
    markdown code fence, a fenced block followed by words whose calls are not a call list, or text parts
    among structured calls, are not."""
    if decoded.error and not decoded.beyond:
        return f"it writes calls that cannot be read: {decoded.error}"
    if not decoded.calls:
        return ""
    n = len(decoded.calls)
    if decoded.form == "structured" and decoded.prose:
        return f"the {n} structured call(s) stand among text parts"
    if decoded.layout == "objects" and decoded.form != "structured":
        return f"the {n} call(s) are written as call objects in text, not as calls"
    if decoded.fenced and not decoded.prose:
        return f"the {n} call(s) are wrapped in a markdown code fence"
    if decoded.fenced and decoded.layout != "list":
        return f"the fenced block before the explanation holds {decoded.layout} calls, not a call list"
    return ""


@op(tier="static", detects="wrong_call", depends=DEPENDS)
def breaks_contract(task, output, ctx):
    """The answer breaks what the task visibly asks of every answer: its calls are in a form the answer
    format does not take, or a call breaks the offered functions' docs (a function not offered, a required
    parameter left out, a parameter the docs do not have, a value of the wrong type). Clean for an answer
    that calls nothing. The family's gate for the label-free false-alarm estimates (kept in shadow)."""
    answer = answer_of(task, output, ctx)
    if answer.decoded.beyond:
        return abstain("the answer is beyond what the decoder reads (the root fails it)")
    why = format_problem(answer.decoded)
    if why:
        return drawback(printable(why))
    for o in (unknown_function, missing_required, unknown_parameter, wrong_type):
        res = o(task, output, ctx)
        if int(res.verdict) == 1:
            return drawback(res.message)
    return clean("no call breaks the format or the docs" if answer.decoded.calls else "no call: nothing to break")


__all__ = [
    "DEPENDS",
    "decodes",
    "format_problem",
    "missing_required",
    "outside_enum",
    "unknown_function",
    "unknown_parameter",
    "breaks_contract",
    "wrong_type",
]
