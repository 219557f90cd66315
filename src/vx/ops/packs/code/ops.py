"""The code family's op pack: the root ``parses`` and eleven seed drawback detectors.

An output is the model's code as a string; a task record has ``prompt``, ``entry_point``,
``examples`` (the visible example calls) and possibly ``aliases`` (other accepted names). Ops
never read the task's ``reference``: a verifier of an unseen output knows only the prompt and
the visible examples, and an op that compared with the golden solution would leak the dev
reference into every split.

Root
    ``parses`` -- the output is a complete Python program (``compile`` accepts it) that defines
    the entry point (or an accepted alias) at module level. It stores an :class:`Artifact` in
    ``ctx["artifact"]`` for every other op. An output whose first line is indented is a function
    *body* meant to follow the prompt (some MBPP samples are): it is graded as given, so it does
    not parse and the root says so, naming the convention.

Static ops (AST): ``wrong_entry_point``, ``reads_stdin``, ``hardcodes_example``, ``undefined_name``
(pyflakes' undefined-name analysis, limited to code reachable from the entry point).

Exec ops (sandbox): ``crash``, ``fails_visible_example``, ``returns_not_print_only``,
``timeout``, ``returns_wrong_type``, ``mutates_argument``, ``nondeterministic``. They share
one sandbox run per item: the first exec op that needs it runs every probe call of the
candidate in one sandboxed process (:func:`execution`) and leaves the result in
``ctx["exec"]``. Probes are the visible example calls and type-preserving mutations of them
(:mod:`vx.ops.packs.code.probe`). Expected values stay in the parent; every comparison happens
here. Exec ops abstain when the root failed or the task has no visible example.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import math
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from vx.ops.core import Context, Op, abstain, clean, drawback, op
from vx.ops.packs.code.probe import Probe, VisibleExample, probes_for, visible_examples

ROOT = "parses"

# --------------------------------------------------------------------------- the parsed artifact

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@attrs.frozen(eq=False)
class Artifact:
    """What the root learned about an output; ``ctx["artifact"]``.

    ``tree`` is None when the output does not parse; ``function`` / ``name`` are the function
    the ops examine and call: the one the visible example calls when the output defines it, else
    the entry point (None when the output defines no accepted name); ``problem`` says why the
    root fired ("" when it did not).
    """

    source: str
    tree: ast.Module | None
    function: FunctionNode | None
    name: str | None  # the name the candidate defines for the entry point
    defined: tuple[str, ...]  # module-level function names, in order
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


def accepted_names(task: Mapping[str, Any]) -> list[str]:
    """The entry point and its aliases (MBPP+ renamed a few functions), in preference order."""
    names = [str(task.get("entry_point") or "")]
    names += [str(a) for a in task.get("aliases") or ()]
    return [n for n in dict.fromkeys(names) if n]


def _module_functions(tree: ast.Module) -> dict[str, FunctionNode]:
    """Module-level functions by name (the last binding wins, as at run time), including
    ``name = other_function`` and ``name = lambda ...`` bindings (a lambda reads as a one-line def)."""
    found: dict[str, FunctionNode] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if isinstance(stmt.value, ast.Name) and stmt.value.id in found:
                found[name] = found[stmt.value.id]
            elif isinstance(stmt.value, ast.Lambda):
                # `f = lambda x: ...` is read as `def f(x): return ...` by the static ops
                lam = stmt.value
                fn = ast.FunctionDef(name=name, args=lam.args, body=[ast.Return(value=lam.body)],
                                     decorator_list=[], returns=None, type_comment=None)
                found[name] = ast.copy_location(fn, stmt)
                ast.fix_missing_locations(fn)
            elif name in found and isinstance(stmt.value, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set,
                                                           ast.BinOp, ast.JoinedStr)):
                del found[name]  # rebound to a plain value: no longer that function
            # `name = wrapper(name)` (memoisation, decoration) keeps the def it wraps
    return found


def _module_callables(tree: ast.Module) -> set[str]:
    """Names bound at module level to something that may be callable (defs, classes, assignments)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name) and isinstance(stmt.value, (ast.Lambda, ast.Name, ast.Attribute,
                                                                             ast.Call)):
                    names.add(target.id)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                names.add((alias.asname or alias.name).split(".")[0])
    return names


def _first_code_line(source: str) -> tuple[int, str]:
    for n, line in enumerate(source.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            return n, line
    return 0, ""


def build_artifact(task: Mapping[str, Any], output: Any) -> Artifact:
    """Parse an output and find its entry-point function (pure; the root caches it in ctx)."""
    if not isinstance(output, str):
        return Artifact("", None, None, None, (), f"the output is a {type(output).__name__}, not Python source text")
    if not output.strip():
        return Artifact(output, None, None, None, (), "the output is empty")
    try:
        tree = ast.parse(output, "<candidate>")
        compile(tree, "<candidate>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        n, first = _first_code_line(output)
        if first[:1] in (" ", "\t"):
            return Artifact(output, None, None, None, (),
                            f"line {n} is indented: the output looks like a function body meant to follow the "
                            "prompt, not a complete program (outputs are graded as given)")
        where = f"line {exc.lineno}" if exc.lineno else "somewhere"
        text = (exc.text or "").strip()
        shown = f": {text[:80]}" if text else ""
        return Artifact(output, None, None, None, (), f"SyntaxError at {where}: {exc.msg}{shown}")
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes, absurd nesting
        return Artifact(output, None, None, None, (), f"the output cannot be compiled: {type(exc).__name__}: {exc}")
    functions = _module_functions(tree)
    defined = tuple(functions)
    for name in accepted_names(task):
        if name in functions:
            # The function the exec and static ops look at is the one the visible example calls,
            # when the output defines it: some tasks' entry point names a helper the prompt
            # started with (MBPP samples: entry point `merge`, example `merge_sort(...)`).
            for ex in visible_examples(task):
                if ex.function in functions:
                    return Artifact(output, tree, functions[ex.function], ex.function, defined)
            return Artifact(output, tree, functions[name], name, defined)
    wanted = " or ".join(accepted_names(task)) or "(the task names no entry point)"
    if defined:
        problem = f"defines no function named {wanted}; it defines {', '.join(defined)}"
    else:
        problem = f"defines no function named {wanted} (no module-level function at all)"
    return Artifact(output, tree, None, None, defined, problem)


def artifact_of(task: Mapping[str, Any], output: Any, ctx: Context) -> Artifact:
    """The item's artifact: the root's, or computed now if the root has not run (standalone use)."""
    art = ctx.get("artifact")
    if not isinstance(art, Artifact):
        art = build_artifact(task, output)
        ctx["artifact"] = art
    return art


@op(root=True, detects="does_not_parse")
def parses(task, output, ctx):
    """The output is a complete Python program that defines the entry point."""
    art = artifact_of(task, output, ctx)
    if art.problem:
        return drawback(art.problem)
    return clean(f"defines {art.name} (line {art.function.lineno})")


# --------------------------------------------------------------------------- AST helpers

def _is_main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` -- code that never runs when the candidate is imported."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left, *stmt.test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)


def live_nodes(tree: ast.Module) -> Iterable[ast.AST]:
    """Every node of the module except those under an ``if __name__ == "__main__":`` guard."""
    for stmt in tree.body:
        if _is_main_guard(stmt):
            yield from ast.walk(stmt.test)
            yield from (n for s in stmt.orelse for n in ast.walk(s))
            continue
        yield from ast.walk(stmt)


def own_nodes(fn: FunctionNode) -> list[ast.AST]:
    """Nodes of a function's body that belong to it (not to nested defs, lambdas or classes)."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            found.append(child)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            visit(child)

    for stmt in fn.body:
        found.append(stmt)
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            visit(stmt)
    return found


def value_returns(fn: FunctionNode) -> list[ast.Return]:
    """``return <value>`` statements of the function itself (``return None`` excluded)."""
    return [n for n in own_nodes(fn) if isinstance(n, ast.Return) and n.value is not None
            and not (isinstance(n.value, ast.Constant) and n.value.value is None)]


def call_name(node: ast.Call) -> str:
    """``print`` for print(...), ``sort`` for x.sort(...), ``sys.stdin.read`` style dotted text otherwise."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def dotted(node: ast.AST) -> str:
    """``sys.stdin.readline`` for an attribute chain over a name, else ""."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def raised_names(tree: ast.Module) -> set[str]:
    """Exception class names the candidate raises on purpose (``raise ValueError(...)``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name):
                names.add(target.id)
            elif isinstance(target, ast.Attribute):
                names.add(target.attr)
    return names


def _literal_value(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _clip(text: str, n: int = 120) -> str:
    text = str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


def short(value: Any, n: int = 80) -> str:
    return _clip(repr(value), n)


# --------------------------------------------------------------------------- static ops

@op(detects="wrong_entry_point")
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


@op(detects="reads_stdin")
def reads_stdin(task, output, ctx):
    """The code reads standard input (input(), sys.stdin, open(0), fileinput) instead of taking arguments."""
    art = artifact_of(task, output, ctx)
    if art.tree is None:
        return abstain("the output does not parse")
    stdin_imported = any(
        isinstance(n, ast.ImportFrom) and n.module == "sys" and any(a.name == "stdin" for a in n.names)
        for n in ast.walk(art.tree))
    for node in live_nodes(art.tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Call):
            name = call_name(node)
            if isinstance(node.func, ast.Name) and name in _STDIN_CALLS:
                return drawback(f"line {line} calls {name}()")
            if name == "open" and isinstance(node.func, ast.Name) and node.args and \
                    isinstance(node.args[0], ast.Constant) and node.args[0].value in (0, "/dev/stdin"):
                return drawback(f"line {line} opens standard input: {_clip(ast.unparse(node), 60)}")
            if dotted(node.func) in ("fileinput.input", "sys.stdin.read", "sys.stdin.readline",
                                     "sys.stdin.readlines"):
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
    tree, fn = art.tree, art.function
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


@op(detects="crash")
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


def trivial_value(value: Any) -> bool:
    """Values a correct solution plausibly writes as literals (base cases): None, booleans, small
    integers, empty containers, one-character strings."""
    if value is None or isinstance(value, bool):
        return True
    if type(value) in (int, float):
        return -1 <= value <= 2
    if isinstance(value, (str, bytes)):
        return len(value) <= 1
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return len(value) == 0
    return False


def same_value(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down (1 != 1.0 != True here; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _loose_equal(a: Any, b: Any, exact: bool) -> bool:
    if exact:
        return same_value(a, b)
    from vx.ops.packs.code.examples import jsonable  # JSON-recovered values: compare JSON forms

    try:
        return jsonable(a) == jsonable(b) and type(jsonable(a)) is type(jsonable(b))
    except Exception:
        return False


def _param_names(fn: FunctionNode) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


@op(detects="hardcodes_example")
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
        ok, value = _literal_value(ret.value)
        literal_returns.append((ret, ok, value))
    # 1. Every value return gives the same literal, and it is an example's expected value.
    if literal_returns and all(ok for _, ok, _ in literal_returns):
        first = literal_returns[0][2]
        if all(same_value(v, first) for _, _, v in literal_returns):
            for ex in examples:
                if _loose_equal(first, ex.expected, ex.exact_types):
                    return drawback(f"always returns {short(first)} (line {literal_returns[0][0].lineno}), "
                                    f"the expected value of the example {_clip(ex.call, 80)}")
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
            for ret in (n for n in ast.walk(sub) if isinstance(n, ast.Return) and n.value is not None):
                ok, value = _literal_value(ret.value)
                if ok and _loose_equal(value, ex.expected, ex.exact_types):
                    return drawback(f"line {node.lineno} tests {param} == {short(arg, 50)} (the example's argument) "
                                    f"and returns {short(value, 50)}, the example's expected value")
    return clean("no literal answer to a visible example is returned")


def _tests_example_argument(test: ast.expr, params: list[str],
                            examples: list[VisibleExample]) -> tuple[VisibleExample, str, Any] | None:
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


# --------------------------------------------------------------------------- shared execution

EXAMPLE_CALL_TIMEOUT = 2.0  # seconds per in-domain probe call (the examples are small)
EDGE_CALL_TIMEOUT = 1.0  # seconds per edge-class probe call
RUN_TIMEOUT = 4.0  # the whole sandboxed run of one candidate (start-up, load, every probe)
EXEC_OP_TIMEOUT = 60.0  # the op-level limit for exec ops (the first one pays for the run)

_sandbox_lock = threading.Lock()
_sandbox_instance: Any = None


def sandbox() -> Any:
    """The process-wide sandbox (layer detection runs once per process)."""
    global _sandbox_instance
    with _sandbox_lock:
        if _sandbox_instance is None:
            from vx.sandbox import Sandbox, SandboxConfig

            _sandbox_instance = Sandbox(SandboxConfig(per_call_timeout=EXAMPLE_CALL_TIMEOUT,
                                                      total_timeout=RUN_TIMEOUT))
        return _sandbox_instance


@attrs.frozen(eq=False)
class Execution:
    """One sandboxed run of a candidate over its probes: ``ctx["exec"]``.

    ``calls[i]`` is the sandbox's CallOutcome for ``probes[i]``. ``load`` is "ok", "error"
    (module-level code raised), "timeout" (loading never finished), "died" (the process died
    while loading) or "refused" (the sandbox's own compile or lookup failed).
    """

    probes: tuple[Probe, ...]
    calls: tuple[Any, ...]
    report: Any
    load: str
    load_message: str = ""

    @property
    def loaded(self) -> bool:
        return self.load == "ok"

    def pairs(self, *classes: str) -> list[tuple[Probe, Any]]:
        """(probe, outcome) of the calls that ran, optionally only of some probe classes."""
        return [(p, c) for p, c in zip(self.probes, self.calls)
                if c.status != "not_run" and (not classes or p.klass in classes)]

    def in_domain(self) -> list[tuple[Probe, Any]]:
        return [(p, c) for p, c in self.pairs() if p.in_domain]


def _load_state(report: Any) -> tuple[str, str]:
    status = report.status
    ran = any(c.status != "not_run" for c in report.calls)
    line = f" (line {report.load_error_line})" if report.load_error_line else ""
    if status == "load_error":
        return "error", f"loading the code raised {report.load_error}{line}"
    if status in ("syntax_error", "no_entry_point"):
        return "refused", f"the sandbox could not load the code: {report.load_error or status}"
    if status == "timeout" and not ran:
        return "timeout", f"loading the code did not finish: {report.detail or 'deadline passed'}"
    if status == "crashed" and not ran:
        return "died", f"the process died while loading the code: {report.detail or 'no report'}"
    return "ok", ""


def run_probes(task: Mapping[str, Any], art: Artifact, probes: list[Probe]) -> Execution:
    """Run every probe of one candidate in one sandboxed process."""
    timeouts = [EXAMPLE_CALL_TIMEOUT if p.in_domain else EDGE_CALL_TIMEOUT for p in probes]
    # Fresh argument objects per call: objects shared between calls in the parent would stay
    # shared in the child (marshal keeps references), so one call's mutation would leak into another.
    calls = [(copy.deepcopy(list(p.args)), {}) for p in probes]
    report = sandbox().run_calls(art.source, art.name, calls,
                                 timeouts=timeouts, total_timeout=RUN_TIMEOUT, args_after=True)
    load, message = _load_state(report)
    return Execution(tuple(probes), tuple(report.calls), report, load, message)


def execution(task: Mapping[str, Any], output: Any, ctx: Context) -> tuple[Execution | None, str]:
    """The item's shared execution (computed once, by the first exec op that asks), or
    (None, why not) when there is nothing to run."""
    cached = ctx.get("exec")
    if isinstance(cached, Execution):
        return cached, ""
    if isinstance(cached, tuple):  # (None, reason) or a recorded sandbox failure
        if isinstance(cached[0], BaseException):
            raise cached[0]
        return None, cached[1]
    art = artifact_of(task, output, ctx)
    if art.function is None:
        result: tuple[Execution | None, str] = (None, "the root failed: " + (art.problem or "no entry point"))
    else:
        probes = probes_for(task)
        if not probes:
            result = (None, "the task shows no usable example call")
        else:
            try:
                result = (run_probes(task, art, probes), "")
            except Exception as exc:  # the sandbox itself failed: every exec op reports it once
                ctx["exec"] = (exc, "")
                raise
    ctx["exec"] = result[0] if result[0] is not None else result
    return result


def _what(p: Probe) -> str:
    return "the visible example" if p.klass in ("example", "repeat") else p.detail


def _failure_text(call: Any) -> str:
    if call.status == "exception":
        return f"raised {call.exc_type}: {_clip(call.exc_message or '', 100)}".rstrip(": ")
    if call.status == "timeout":
        return f"did not return ({call.exc_message or 'timed out'})"
    if call.status == "crashed":
        return "killed its process (os._exit, a signal or the memory limit)"
    if call.status == "unserializable":
        return f"returned {_a(str(call.type_name))} object, which is not plain data ({call.exc_message})"
    return call.status


# --------------------------------------------------------------------------- exec ops

@op(tier="exec", detects="crash", timeout=EXEC_OP_TIMEOUT)
def crash(task, output, ctx):
    """The code raises on the visible example, on a re-ordering of it, or while loading.

    Killing its own process counts too; on a re-ordering, an exception type the code raises on
    purpose (``raise ValueError``) does not."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if run.load in ("error", "died"):
        return drawback(run.load_message)
    if run.load != "ok":
        return abstain(run.load_message)
    art = artifact_of(task, output, ctx)
    deliberate = raised_names(art.tree) if art.tree is not None else set()
    for p, c in run.in_domain():
        if c.status == "crashed":
            return drawback(f"{p.call} {_failure_text(c)} ({_what(p)})")
        if c.status != "exception":
            continue
        if p.klass == "permuted" and c.exc_type in deliberate:
            continue  # the code rejects this input on purpose
        return drawback(f"{p.call} {_failure_text(c)} ({_what(p)})")
    if any(c.status in ("ok", "unserializable", "exception") for _, c in run.in_domain()):
        return clean(f"{len(run.in_domain())} call(s) on the example and its re-orderings raised nothing")
    return abstain("no example call finished")


def _comparator(task: Mapping[str, Any], entry: str) -> Any:
    from vx.ops.packs.code.compare import Comparator

    dataset = str(task.get("dataset") or "")
    if not dataset:
        tid = str(task.get("id", ""))
        dataset = "mbpp+" if tid.startswith("Mbpp/") else ("humaneval+" if tid.startswith("HumanEval") else "")
    return Comparator(dataset, entry, float(task.get("atol") or 0.0))


@op(tier="exec", detects="fails_visible_example", timeout=EXEC_OP_TIMEOUT)
def fails_visible_example(task, output, ctx):
    """A visible example call does not return its expected value.

    Compared in the parent with evalplus's semantics (exact types, float tolerance)."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if run.load in ("error", "died", "timeout"):
        return drawback(f"the example cannot run: {run.load_message}")
    if run.load != "ok":
        return abstain(run.load_message)
    meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
    # evalplus's special oracles are keyed by its own function names (MBPP+ renamed a few)
    compare = _comparator(task, str(meta.get("evalplus_entry_point") or task.get("entry_point") or ""))
    checked = 0
    for p, c in run.pairs("example"):
        checked += 1
        if c.status != "ok":
            return drawback(f"{p.call} {_failure_text(c)}; expected {short(p.expected)}")
        outcome = compare.check(p.args, c.value, p.expected)
        if not outcome.ok and not p.exact_types and _loose_equal(c.value, p.expected, False):
            continue  # the example's types were lost in JSON: do not fail on list vs tuple
        if not outcome.ok:
            return drawback(f"{p.call} returned {short(c.value)}, expected {short(p.expected)}")
    if not checked:
        return abstain("no example call ran")
    return clean(f"{checked} visible example(s) return the expected value")


def _static_print_verdict(art: Artifact):
    fn = art.function
    if fn is None:
        return abstain("no entry-point function to inspect")
    if value_returns(fn):
        return clean(f"{fn.name} returns a value (line {value_returns(fn)[0].lineno})")
    prints = [n for n in own_nodes(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
              and n.func.id == "print"]
    if prints:
        return drawback(f"{fn.name} never returns a value but calls print (line {prints[0].lineno}): "
                        f"{_clip(ast.unparse(prints[0]), 60)}")
    return clean(f"{fn.name} does not print")


@op(tier="exec", detects="returns_not_print_only", timeout=EXEC_OP_TIMEOUT)
def returns_not_print_only(task, output, ctx):
    """The function prints its answer instead of returning it.

    It returns None on an example that expects a value, and prints; without a runnable example,
    it never returns a value but calls print."""
    art = artifact_of(task, output, ctx)
    if art.function is None:
        return abstain("the root failed: " + (art.problem or "no entry point"))
    run, _ = execution(task, output, ctx)
    finished = [(p, c) for p, c in run.pairs("example") if c.status == "ok"] if run is not None and run.loaded else []
    if not finished:
        return _static_print_verdict(art)
    for p, c in finished:
        if c.value is None and p.expected is not None and c.stdout.strip():
            printed = _clip(c.stdout.strip(), 80)
            hit = str(p.expected) in c.stdout or repr(p.expected) in c.stdout
            note = " (the expected value)" if hit else ""
            return drawback(f"{p.call} returned None and printed {printed!r}{note}; expected {short(p.expected)}")
    return clean("the example calls return their result")


@op(tier="exec", detects="timeout", timeout=EXEC_OP_TIMEOUT)
def timeout(task, output, ctx):
    """A call on the visible example (or a re-ordering of it) does not finish within the time limit."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if run.load == "timeout":
        return drawback(run.load_message)
    if run.load != "ok":
        return abstain(run.load_message)
    done = run.in_domain()
    for p, c in done:
        if c.status == "timeout":
            return drawback(f"{p.call} did not return within {EXAMPLE_CALL_TIMEOUT:g} s ({_what(p)})")
    if done:
        slowest = max((c.duration or 0.0) for _, c in done) * 1000
        took = f"{slowest:.0f} ms" if slowest >= 1 else "under 1 ms"
        return clean(f"{len(done)} call(s) finished; the slowest took {took}")
    return abstain("no example call ran")


_NUMERIC = (bool, int, float, complex)


def _type_name(value: Any) -> str:
    return type(value).__name__


def _a(name: str) -> str:
    """'a list', 'an int'."""
    return ("an " if name[:1].lower() in "aeiou" else "a ") + name


def type_mismatch(value: Any, expected: Any, exact: bool = True, _depth: int = 0) -> str | None:
    """Why ``value`` can never equal ``expected`` by type (None if the types are compatible).

    Numbers (bool/int/float) are compatible with each other and set with frozenset, as Python's
    ``==`` (and so evalplus) treats them; list and tuple are not (``[1] != (1,)``), unless the
    expected value's exact types are unknown (``exact=False``)."""
    if _depth > 20:
        return None
    if isinstance(value, _NUMERIC) and isinstance(expected, _NUMERIC):
        return None
    if isinstance(value, (set, frozenset)) and isinstance(expected, (set, frozenset)):
        return None
    seq = (list, tuple)
    if not exact and isinstance(value, seq) and isinstance(expected, seq):
        pass
    elif type(value) is not type(expected):
        return f"{_a(_type_name(value))} where the example expects {_a(_type_name(expected))}"
    if isinstance(expected, seq):
        for i, (v, e) in enumerate(zip(value, expected)):
            inner = type_mismatch(v, e, exact, _depth + 1)
            if inner:
                return f"{inner} (at index {i})" if _depth == 0 else inner
            if i >= 50:
                break
    elif isinstance(expected, dict):
        for k in list(expected)[:50]:
            if k in value:
                inner = type_mismatch(value[k], expected[k], exact, _depth + 1)
                if inner:
                    return f"{inner} (at key {k!r})" if _depth == 0 else inner
    return None


@op(tier="exec", detects="returns_wrong_type", timeout=EXEC_OP_TIMEOUT)
def returns_wrong_type(task, output, ctx):
    """An example call returns a value of another type than the expected value.

    Numbers are interchangeable, a list is not a tuple (checked inside containers); an object that
    is not plain data (a map, a generator) is a wrong type too."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if not run.loaded:
        return abstain(run.load_message)
    seen = 0
    for p, c in run.pairs("example"):
        if c.status == "unserializable":
            return drawback(f"{p.call} returned {_a(str(c.type_name))} object; the example expects "
                            f"{_a(_type_name(p.expected))} ({short(p.expected, 50)})")
        if c.status != "ok":
            continue
        seen += 1
        why_not = type_mismatch(c.value, p.expected, p.exact_types)
        if why_not:
            return drawback(f"{p.call} returned {why_not}: got {short(c.value, 50)}, expected {short(p.expected, 50)}")
    if not seen:
        return abstain("no example call returned")
    return clean(f"{seen} example call(s) return the expected type")


_MUTABLE = (list, dict, set, bytearray)


@op(tier="exec", detects="mutates_argument", timeout=EXEC_OP_TIMEOUT)
def mutates_argument(task, output, ctx):
    """A call changes a list, dict or set it was given (the caller's data is modified)."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if not run.loaded:
        return abstain(run.load_message)
    compared = 0
    for p, c in run.in_domain():
        if c.args_after is None or not any(isinstance(a, _MUTABLE) for a in p.args):
            continue
        compared += 1
        after = c.args_after[0]
        for i, (before, now) in enumerate(zip(p.args, after)):
            if isinstance(before, _MUTABLE) and not same_value(before, now):
                return drawback(f"{p.call} changed its argument {i + 1} from {short(before, 50)} to {short(now, 50)}")
    if not compared:
        return abstain("no call received a list, dict or set")
    return clean(f"{compared} call(s) left their list/dict/set arguments unchanged")



@op(tier="exec", detects="nondeterministic", timeout=EXEC_OP_TIMEOUT)
def nondeterministic(task, output, ctx):
    """The same example call, made twice in one process, gives different results.

    Causes: unseeded randomness, the clock, or state kept between calls."""
    run, why = execution(task, output, ctx)
    if run is None:
        return abstain(why)
    if not run.loaded:
        return abstain(run.load_message)
    first: dict[int, tuple[Probe, Any]] = {p.example: (p, c) for p, c in run.pairs("example")}
    compared = 0
    for p2, c2 in run.pairs("repeat"):
        if p2.example not in first:
            continue
        p1, c1 = first[p2.example]
        if "timeout" in (c1.status, c2.status) or "crashed" in (c1.status, c2.status):
            continue
        compared += 1
        a = short(c1.value, 50) if c1.status == "ok" else _failure_text(c1)
        b = short(c2.value, 50) if c2.status == "ok" else _failure_text(c2)
        differs = c1.status != c2.status or (c1.status == "ok" and not same_value(c1.value, c2.value)) or (
            c1.status == "exception" and c1.exc_type != c2.exc_type)
        if differs:
            art = artifact_of(task, output, ctx)
            used = sorted({dotted(n).split(".")[0] for n in live_nodes(art.tree) if isinstance(n, ast.Attribute)}
                          & {"random", "time", "datetime", "uuid", "secrets"}) if art.tree is not None else []
            hint = f"; the code uses {', '.join(used)}" if used else ""
            return drawback(f"{p1.call} gave {a} the first time and {b} the second time{hint}")
    if not compared:
        return abstain("no example call finished twice")
    return clean(f"{compared} example call(s) repeat identically")


# --------------------------------------------------------------------------- taxonomy

#: The code family's closed list of failure classes (every op's ``detects`` is one of them, and
#: so is every mutation operator's failure class in :mod:`vx.ops.packs.code.mutate`).
TAXONOMY: tuple[str, ...] = (
    "does_not_parse",
    "wrong_entry_point",
    "wrong_signature",
    "reads_stdin",
    "hardcodes_example",
    "crash",
    "timeout",
    "returns_not_print_only",
    "returns_wrong_type",
    "fails_visible_example",
    "mutates_argument",
    "nondeterministic",
    "off_by_one",
    "wrong_logic",
    "missing_edge_case",
)

#: Seed ops in the order classify_failure consults them (most specific evidence first).
_CLASSIFY_ORDER = ("reads_stdin", "hardcodes_example", "undefined_name", "timeout", "crash",
                   "returns_not_print_only", "returns_wrong_type", "mutates_argument", "nondeterministic",
                   "fails_visible_example")


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """The failure class of a failing item, for clustering misses and gaps (None: unknown).

    Provenance first: a ``meta["failure_class"]`` in the taxonomy, or the class of the mutation
    ``meta["operator"]`` that made the output. Otherwise the evidence of the seed ops: the root's
    problem, then the first seed op (in ``_CLASSIFY_ORDER``) that finds a drawback. Runs the
    sandbox at most once per call.
    """
    meta = meta or {}
    cls = meta.get("failure_class")
    if isinstance(cls, str) and cls in TAXONOMY:
        return cls
    operator = meta.get("operator")
    if isinstance(operator, str):
        from vx.ops.packs.code.mutate import OPERATORS

        if operator in OPERATORS and OPERATORS[operator].failure_class in TAXONOMY:
            return OPERATORS[operator].failure_class
    ctx = Context()
    art = artifact_of(task, output, ctx)
    if art.problem:
        return "wrong_entry_point" if art.tree is not None else "does_not_parse"
    seeds = {o.name: o for o in (reads_stdin, hardcodes_example, undefined_name, timeout, crash,
                                 returns_not_print_only, returns_wrong_type, mutates_argument, nondeterministic,
                                 fails_visible_example)}
    for name in _CLASSIFY_ORDER:
        try:
            res = seeds[name](task, output, ctx)
        except Exception:  # the sandbox failed: no exec evidence for this item
            continue
        if int(res.verdict) == 1:
            return seeds[name].detects
    return None


def _machinery_hash() -> str:
    """A hash of the code every op here depends on besides its own function (this module, the
    probes, the comparison): an op's version changes when any of it does, so cached verdicts of
    an older version are never reused."""
    from pathlib import Path

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("ops.py", "probe.py", "compare.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # not installed as files (zipapp...): fall back to the op's own source
            digest.update(name.encode())
    return digest.hexdigest()


def _versioned(o: Op, machinery: str) -> Op:
    return attrs.evolve(o, version=hashlib.sha256(f"{o.version}:{machinery}".encode()).hexdigest()[:12])


_MACHINERY = _machinery_hash()
(parses, wrong_entry_point, reads_stdin, hardcodes_example, undefined_name, crash, fails_visible_example,
 returns_not_print_only, timeout, returns_wrong_type, mutates_argument, nondeterministic) = (
    _versioned(o, _MACHINERY) for o in (parses, wrong_entry_point, reads_stdin, hardcodes_example, undefined_name,
                                        crash, fails_visible_example, returns_not_print_only, timeout,
                                        returns_wrong_type, mutates_argument, nondeterministic))

#: The pack's ops, root first (what ``packs = ["vx.ops.packs.code"]`` loads).
OPS = [parses, wrong_entry_point, reads_stdin, hardcodes_example, undefined_name, crash, fails_visible_example,
       returns_not_print_only, timeout, returns_wrong_type, mutates_argument, nondeterministic]
