"""The code family's root ``parses`` and its static seed ops (AST only, nothing runs).

Root
    ``parses`` -- the output is a complete Python program (``compile`` accepts it) that defines
    the entry point (or an accepted alias) at module level. It stores an :class:`Artifact` in
    ``ctx["artifact"]`` for every other op. An output whose first line is indented is a function
    *body* meant to follow the prompt (some MBPP samples are): it is graded as given, so it does
    not parse and the root says so, naming the convention.

Static ops: ``wrong_entry_point``, ``reads_stdin``, ``hardcodes_example``, ``undefined_name``
(pyflakes' undefined-name analysis, limited to code reachable from the entry point).

Ops never read the task's ``reference``: a verifier of an unseen output knows only the prompt and
the visible examples, and an op that compared with the golden solution would leak the dev
reference into every split.
"""

from __future__ import annotations

import ast
from typing import Any

from vx.families.code.ops import artifact, values
from vx.families.code.ops.artifact import (
    Artifact,
    FunctionNode,
    _is_main_guard,
    _literal_value,
    _module_callables,
    accepted_names,
    artifact_of,
    call_name,
    dotted,
    live_nodes,
    own_nodes,
    value_returns,
)
from vx.families.code.ops.values import (
    _clip,
    _loose_equal,
    same_value,
    short,
    trivial_value,
)
from vx.families.code.probes import probe
from vx.families.code.probes.probe import VisibleExample, visible_examples
from vx.ops.core import abstain, clean, drawback, op

#: What these ops' verdicts depend on besides their own function (it goes into their versions).
DEPENDS = (__name__, artifact, values, probe)


@op(root=True, detects="does_not_parse", depends=DEPENDS)
def parses(task, output, ctx):
    """The output is a complete Python program that defines the entry point."""
    art = artifact_of(task, output, ctx)
    if art.problem:
        return drawback(art.problem)
    return clean(f"defines {art.name} (line {art.fn.lineno})")


# --------------------------------------------------------------------------- static ops


@op(detects="wrong_entry_point", depends=DEPENDS)
def wrong_entry_point(task, output, ctx):
    """The visible example calls a name the output does not define, while it defines another function."""
    art = artifact_of(task, output, ctx)
    if art.tree is None:
        return abstain("the output does not parse")
    callables = _module_callables(art.tree)
    wanted = accepted_names(task)
    for ex in visible_examples(task):
        if ex.function not in wanted:
            wanted.append(ex.function)
    if any(name in callables for name in wanted):
        return clean(f"defines {next(n for n in wanted if n in callables)}")
    if not art.defined:
        return abstain("the output defines no function at all")
    examples = visible_examples(task)
    shown = f"the example calls {_clip(examples[0].call, 80)}" if examples else f"the task's entry point is {wanted[0]}"
    return drawback(f"{shown}, but the output defines {', '.join(art.defined)} instead of {wanted[0]}")


_STDIN_CALLS = {"input", "raw_input"}
_STDIN_ATTRS = {"sys.stdin", "stdin"}


@op(detects="reads_stdin", depends=DEPENDS)
def reads_stdin(task, output, ctx):
    """The code reads standard input (input(), sys.stdin, open(0), fileinput) instead of taking arguments."""
    art = artifact_of(task, output, ctx)
    if art.tree is None:
        return abstain("the output does not parse")
    stdin_imported = any(
        isinstance(n, ast.ImportFrom) and n.module == "sys" and any(a.name == "stdin" for a in n.names)
        for n in ast.walk(art.tree)
    )
    for node in live_nodes(art.tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Call):
            name = call_name(node)
            if isinstance(node.func, ast.Name) and name in _STDIN_CALLS:
                return drawback(f"line {line} calls {name}()")
            if (
                name == "open"
                and isinstance(node.func, ast.Name)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in (0, "/dev/stdin")
            ):
                return drawback(f"line {line} opens standard input: {_clip(ast.unparse(node), 60)}")
            if dotted(node.func) in ("fileinput.input", "sys.stdin.read", "sys.stdin.readline", "sys.stdin.readlines"):
                return drawback(f"line {line} calls {dotted(node.func)}()")
        if isinstance(node, ast.Attribute) and dotted(node) == "sys.stdin":
            return drawback(f"line {line} uses sys.stdin")
        if stdin_imported and isinstance(node, ast.Name) and node.id == "stdin" and isinstance(node.ctx, ast.Load):
            return drawback(f"line {line} uses stdin (imported from sys)")
    return clean("no input(), sys.stdin or open(0)")


def _reachable_ranges(art: Artifact) -> list[tuple[int, int]]:
    """Line ranges of the code that can run when the entry point is called: module-level
    statements (outside a main guard, defs excluded) and the module functions reachable from the
    entry point through calls by name."""
    tree, fn = art.module, art.function
    functions = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    ranges: list[tuple[int, int]] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or _is_main_guard(stmt):
            continue
        ranges.append((stmt.lineno, stmt.end_lineno or stmt.lineno))
    todo = [fn] if fn is not None else []
    seen: set[int] = set()
    while todo:
        f = todo.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        ranges.append((min([f.lineno] + [d.lineno for d in f.decorator_list]), f.end_lineno or f.lineno))
        for node in ast.walk(f):
            if isinstance(node, ast.Name) and node.id in functions:
                todo.append(functions[node.id])
    return ranges


@op(detects="crash", depends=DEPENDS)
def undefined_name(task, output, ctx):
    """Reachable code uses a name never defined or imported (a NameError waiting to happen).

    E.g. ``math`` used without ``import math``. Reachable: module-level code, the entry point and
    the module functions it calls by name."""
    art = artifact_of(task, output, ctx)
    if art.tree is None:
        return abstain("the output does not parse")
    try:
        from pyflakes.checker import Checker
        from pyflakes.messages import UndefinedName
    except ImportError as exc:  # pragma: no cover - the [code] extra brings pyflakes
        raise ImportError("undefined_name needs pyflakes: pip install 'vx-verifiers[code]'") from exc
    ranges = _reachable_ranges(art)
    found: dict[str, int] = {}
    for message in Checker(art.tree, filename="<candidate>").messages:
        if isinstance(message, UndefinedName) and any(a <= message.lineno <= b for a, b in ranges):
            found.setdefault(str(message.message_args[0]), message.lineno)
    if found:
        shown = ", ".join(f"{name} (line {line})" for name, line in list(found.items())[:3])
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        return drawback(f"uses {shown}{more}, never defined or imported: a NameError when it runs")
    return clean("every name used is defined, imported or built in")


def _param_names(fn: FunctionNode) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


@op(detects="hardcodes_example", depends=DEPENDS)
def hardcodes_example(task, output, ctx):
    """The code returns a visible example's expected value as a hard-coded literal.

    Either every value ``return`` gives that one literal, or an ``if`` compares a parameter with
    the example's (non-trivial) argument and returns the expected literal."""
    art = artifact_of(task, output, ctx)
    if art.function is None:
        return abstain("no entry-point function to inspect")
    examples = visible_examples(task)
    if not examples:
        return abstain("the task shows no example")
    fn = art.function
    returns = value_returns(fn)
    literal_returns = []
    for ret in returns:
        ok, value = _literal_value(ret.value) if ret.value is not None else (False, None)
        literal_returns.append((ret, ok, value))
    # 1. Every value return gives the same literal, and it is an example's expected value.
    if literal_returns and all(ok for _, ok, _ in literal_returns):
        first = literal_returns[0][2]
        if all(same_value(v, first) for _, _, v in literal_returns):
            for ex in examples:
                if _loose_equal(first, ex.expected, ex.exact_types):
                    return drawback(
                        f"always returns {short(first)} (line {literal_returns[0][0].lineno}), "
                        f"the expected value of the example {_clip(ex.call, 80)}"
                    )
    # 2. `if <param> == <example argument>: return <example's expected>` (non-trivial values).
    params = _param_names(fn)
    for node in own_nodes(fn):
        if not isinstance(node, ast.If):
            continue
        matched = _tests_example_argument(node.test, params, examples)
        if matched is None:
            continue
        ex, param, arg = matched
        for sub in node.body:
            for ret in (n for n in ast.walk(sub) if isinstance(n, ast.Return)):
                if ret.value is None:
                    continue
                ok, value = _literal_value(ret.value)
                if ok and _loose_equal(value, ex.expected, ex.exact_types):
                    return drawback(
                        f"line {node.lineno} tests {param} == {short(arg, 50)} (the example's argument) "
                        f"and returns {short(value, 50)}, the example's expected value"
                    )
    return clean("no literal answer to a visible example is returned")


def _tests_example_argument(
    test: ast.expr, params: list[str], examples: list[VisibleExample]
) -> tuple[VisibleExample, str, Any] | None:
    """(example, parameter, value) when `test` compares a parameter with one of an example's
    non-trivial argument values (also inside `and` chains)."""
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for t in tests:
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Eq, ast.Is))):
            continue
        left, right = t.left, t.comparators[0]
        for name_node, lit_node in ((left, right), (right, left)):
            if not (isinstance(name_node, ast.Name) and name_node.id in params):
                continue
            ok, value = _literal_value(lit_node)
            if not ok or trivial_value(value):
                continue
            index = params.index(name_node.id)
            for ex in examples:
                if index < len(ex.args) and _loose_equal(value, ex.args[index], ex.exact_types):
                    return ex, name_node.id, value
    return None
