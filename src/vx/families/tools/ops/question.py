"""Ops that compare an answer's calls with what the question says (never with a possible answer).

* ``no_function_fits`` -- the answer calls a function whose name, description and parameters share no
  word with the question, and takes none of the question's words as an argument: the request is about
  something the function does not do (the right answer then calls nothing). Words are compared by stem
  (:mod:`vx.families.tools.ops.text`).
* ``ungrounded_value`` (a peer op) -- an argument grounded nowhere: a string none of whose words appears
  in the question or in the function's docs (its description, the parameter's description or enum), a
  number the question states nowhere (directly, or by a unit's factor), not the parameter's documented
  default -- and that fewer than two other answers give: a value the answer made up. (What other answers
  give too is grounded by them: world knowledge such as a currency's code, a city's state.)
* ``missed_enumerated`` -- the question enumerates items ("Paris, London and Rome", "for 5 and 10
  years") and the calls give one of them but leave out another: too few calls (or a list cut short).

Each abstains where its check does not apply (no call, no offered function called, no enumeration the
calls touch), and the first two on calls in a form the answer format does not take: such a call counts as
no call at all (``misformatted`` judges it).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vx.families.tools.decode import Call
from vx.families.tools.dialect import Function, Param, short, standard_string
from vx.families.tools.ops import artifact, text
from vx.families.tools.ops.artifact import Answer, answer_of
from vx.families.tools.ops.static import format_problem
from vx.families.tools.ops.text import numbers, stems
from vx.ops import abstain, clean, drawback, op
from vx.ops.core import observer, peer_op
from vx.text import printable

DEPENDS = (
    __name__,
    text,
    artifact,
    "vx.families.tools.decode",
    "vx.families.tools.dialect",
    "vx.families.tools.ops.static",
)


def _calls(answer: Answer) -> Iterator[tuple[int, Call, Function]]:
    for k, call in enumerate(answer.decoded.calls, 1):
        fn = answer.offered.get(call.name) if call.offered else None
        if fn is not None:
            yield k, call, fn


def _label(k: int, n: int, call: Call) -> str:
    return (f"call {k} of {n} " if n > 1 else "the call ") + f"({printable(call.name)[:60]})"


# --------------------------------------------------------------------------- no_function_fits


def function_stems(fn: Function) -> set[str]:
    """The stems of a function's name, description and parameters (names and descriptions)."""
    parts = [fn.name.replace(".", " ").replace("_", " "), fn.description]
    for p in fn.params.values():
        parts += [p.name.replace("_", " "), p.description]
    return stems(parts)


def _takes_words(call: Call, question: str) -> bool:
    """Whether a string argument of the call (three characters or more, in standard form) is written in the
    question ("inches" for ``from_unit`` where the question asks about inches, "USD" where it says "US
    dollars"): the call applies the function to what the question is about."""
    q = standard_string(question)
    for v in call.args.values():
        for s in _strings(v):
            std = standard_string(s)
            if len(std) >= 3 and std in q:
                return True
    return False


@op(tier="static", detects="irrelevant_call", depends=DEPENDS)
def no_function_fits(task, output, ctx):
    """The answer calls a function whose name, description and parameters share no word with the question,
    and none of whose string arguments is words of the question (a request the function does not serve: the
    right answer calls nothing). Abstains on calls in a form the answer format does not take: such a call
    counts as none (``misformatted`` judges it)."""
    answer = answer_of(task, output, ctx)
    called = list(_calls(answer))
    if not called:
        return abstain("no call to an offered function")
    if format_problem(answer.decoded):
        return abstain("the calls are in a form the answer format does not take (misformatted judges them)")
    q = stems(answer.question)
    if not q:
        return abstain("the question has no content word to compare")
    n = len(answer.decoded.calls)
    for k, call, fn in called:
        if not (q & function_stems(fn)) and not _takes_words(call, answer.question):
            return drawback(
                f"{_label(k, n, call)}: its name, description and parameters share no word with the question, "
                f"which asks about {', '.join(sorted(text.words(answer.question))[:6])}"
            )
    return clean(f"every called function shares words with the question ({len(called)} call(s))")


# --------------------------------------------------------------------------- ungrounded_value


def _param_stems(fn: Function, param: Param) -> set[str]:
    parts = [fn.description, param.description, param.name.replace("_", " ")]
    if param.enum:
        parts += [str(e) for e in param.enum]
    if param.items is not None:
        parts.append(param.items.description)
        if param.items.enum:
            parts += [str(e) for e in param.items.enum]
    return stems(parts)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _ungrounded_string(value: str, question: str, q_stems: set[str], doc_stems: set[str], param: Param) -> bool:
    """A string no word of which the question or the docs hold (a value with no word is left alone)."""
    if (
        param.has_default
        and isinstance(param.default, str)
        and standard_string(param.default) == standard_string(value)
    ):
        return False
    v_stems = stems(value)
    if not v_stems:
        return False
    if standard_string(value) and standard_string(value) in standard_string(question):
        return False
    if v_stems & (q_stems | doc_stems):
        return False
    digits = re.findall(r"\d+", value)
    return not (digits and any(d in question for d in digits))


#: Factors by which a number of the question may reach an argument (units: percent, thousands, minutes,
#: hours, days, weeks, months, years).
FACTORS = (1, 10, 100, 1000, 0.1, 0.01, 0.001, 60, 1 / 60, 3600, 24, 7, 12, 1 / 12, 365)
#: ``ungrounded_value``: how many other answers must give a value for it to count as grounded by them.
GROUNDING_SUPPORT = 2


def _numbers(value: Any) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def _grounded_number(x: float, stated: set[float], param: Param) -> bool:
    if x in (0.0, 1.0):
        return True
    d = param.default if param.has_default else None
    if isinstance(d, (int, float)) and not isinstance(d, bool) and float(d) == x:
        return True
    return any(q and abs(x - q * f) <= 1e-9 * max(1.0, abs(x)) for q in stated for f in FACTORS)


def _value_key(fn: str, param: str, value: Any) -> str:
    return json.dumps([fn, param, standard_string(value) if isinstance(value, str) else value], ensure_ascii=False)


@observer(depends=DEPENDS)
def grounding(task, output, ctx):
    """Every argument value of the answer's calls to offered functions (keys of function, parameter and
    value in standard form), and those of them grounded nowhere: a string none of whose words the question
    or the docs hold, a number the question states nowhere (directly or by a unit's factor) that is not the
    parameter's default; and whether the calls are in a form the answer format does not take."""
    answer = answer_of(task, output, ctx)
    q_stems = stems(answer.question)
    stated = numbers(answer.question)
    values: set[str] = set()
    loose: list[list[str]] = []
    for _, call, fn in _calls(answer):
        for name, value in call.args.items():
            param = fn.params.get(name)
            if param is None or name in call.expressions:
                continue
            doc = _param_stems(fn, param)
            for s in _strings(value):
                key = _value_key(fn.name, name, s)
                values.add(key)
                if _ungrounded_string(s, answer.question, q_stems, doc, param):
                    loose.append([key, f"{name} = {short(s)}"])
            for x in _numbers(value):
                key = _value_key(fn.name, name, x)
                values.add(key)
                if not _grounded_number(x, stated, param):
                    loose.append([key, f"{name} = {short(value)}"])
    return {"values": sorted(values), "ungrounded": loose, "misformat": bool(format_problem(answer.decoded))}


@peer_op(observe=grounding, tier="static", detects="ungrounded_value", depends=DEPENDS)
def ungrounded_value(task, mine, peers, ctx):
    """An argument's value is grounded nowhere: not in the question (a string's words, a number directly or
    by a unit's factor), not in the function's docs, not the parameter's default -- and fewer than two other
    answers give it (what many answers give, world knowledge such as a currency's code, grounds it).
    Abstains on calls in a form the answer format does not take: such a call counts as none."""
    data = mine if isinstance(mine, Mapping) else {}
    loose = [x for x in data.get("ungrounded") or () if isinstance(x, list) and len(x) == 2]
    if data.get("misformat"):
        return abstain("the calls are in a form the answer format does not take (misformatted judges them)")
    if not data.get("values"):
        return abstain("no argument value to check")
    if not loose:
        return clean(f"every argument value is grounded in the question or the docs ({len(data['values'])})")
    given: Counter[str] = Counter()
    for p in peers:
        if isinstance(p, Mapping):
            given.update(set(p.get("values") or ()))
    for key, shown in loose:
        if given[key] < GROUNDING_SUPPORT:
            others = f"only {given[key]} other answer gives it" if given[key] else "no other answer gives it"
            return drawback(f"{printable(shown)[:120]} appears nowhere in the question or the docs, and {others}")
    return clean(f"{len(loose)} value(s) not in the question are given by other answers too")


# --------------------------------------------------------------------------- missed_enumerated

_ITEM = r"(?:'[^'\n]{1,40}'|\"[^\"\n]{1,40}\"|[A-Z][\w'&-]*(?:[ ][A-Z0-9][\w'&-]*){0,2})"
_LIST = re.compile(rf"(?<![\w'\"])({_ITEM}(?:\s*,\s*{_ITEM}){{0,8}}\s*,?\s+(?:and|or|&)\s+{_ITEM})(?![\w])")
_SEP = re.compile(r"\s*,\s*(?:(?:and|or|&)\s+)?|\s+(?:and|or|&)\s+")


def enumerations(question: str) -> list[list[str]]:
    """The enumerations of a question: two to ten items -- quoted, or capitalised names of at most three
    words -- separated by commas and a final "and" / "or" ("Paris, London and Rome", "'Age', 'Income' and
    'Education'"). Lower-case phrases are left out: "the price and stock availability" lists clauses, not
    arguments."""
    out: list[list[str]] = []
    for m in _LIST.finditer(question or ""):
        items = [i.strip().strip("'\"") for i in _SEP.split(m.group(1)) if i.strip()]
        if 2 <= len(items) <= 10 and not any(i.split()[0].lower() in _NOT_ITEMS for i in items):
            out.append(items)
    return out


def _narrowed(items: Sequence[str], found: Sequence[Sequence[str]]) -> bool:
    """Whether the question narrows the enumeration down to a smaller one of its items ("variables
    including 'Age', 'Income', 'Education' and 'Gender' ... using 'Age' and 'Income'"): the larger one
    describes what there is, the smaller one what is asked for."""
    mine = {i.lower() for i in items}
    return any(len(other) < len(items) and {i.lower() for i in other} <= mine for other in found)


#: Capitalised words that start a clause, not an item ("..., and I would like", "... and Then").
_NOT_ITEMS = frozenset(
    "i i'm i'd i'll i've we you he she it they then also please can could would will the a an my our this that "
    "what which how when where who first second third finally lastly additionally next".split()
)


def _mentions(item: str, value: str) -> bool:
    """Whether `item` (words of the question) names `value` (an argument, in standard form): the same, or
    the item ending or starting with it."""
    s = standard_string(item)
    return bool(value) and (s == value or s.endswith(value) or s.startswith(value))


@op(tier="static", detects="wrong_count", depends=DEPENDS)
def missed_enumerated(task, output, ctx):
    """The question enumerates names ("Paris, London and Rome") and the calls give one of them as an
    argument but leave out another (too few calls, or a list cut short). An enumeration the question
    narrows down to a smaller one of its items is left alone."""
    answer = answer_of(task, output, ctx)
    values: set[str] = set()
    for _, call, _fn in _calls(answer):
        for v in call.args.values():
            values.update(standard_string(s) for s in _strings(v) if len(standard_string(s)) >= 3)
    if not values:
        return abstain("no string argument to match with the question")
    touched = 0
    found = enumerations(answer.question)
    for items in found:
        if _narrowed(items, found):
            continue
        named = [any(_mentions(i, v) for v in values) for i in items]
        if not any(named):
            continue
        touched += 1
        missed = [i for i, hit in zip(items, named) if not hit and not numbers(i)]
        if missed:
            hit = next(i for i, h in zip(items, named) if h)
            return drawback(
                f"the question lists {printable(', '.join(items))[:160]}; the calls give "
                f"{printable(hit)[:60]} but not {printable(missed[0])[:60]}"
            )
    if not touched:
        return abstain("no enumeration of the question is in the calls")
    return clean(f"the calls cover every item of the {touched} enumeration(s) they touch")


__all__ = ["DEPENDS", "enumerations", "function_stems", "missed_enumerated", "no_function_fits", "ungrounded_value"]
