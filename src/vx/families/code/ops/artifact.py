"""The code family's parsed artifact (what the root ``parses`` stores in ``ctx["artifact"]``)
and the AST helpers the static and exec ops read it with.

An output is the model's code as a string; a task record has ``prompt``, ``entry_point``,
``examples`` (the visible example calls) and possibly ``aliases`` (other accepted names).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

import attrs

from vx.families.code.probes.probe import visible_examples
from vx.ops.core import Context

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

    @property
    def fn(self) -> FunctionNode:
        """The examined function of an output the root accepted (``ok``: it parses and defines one)."""
        if self.function is None:
            raise ValueError(f"no function to examine: {self.problem or 'the output defines none'}")
        return self.function

    @property
    def module(self) -> ast.Module:
        """The syntax tree of an output that parses."""
        if self.tree is None:
            raise ValueError(f"no syntax tree: {self.problem or 'the output does not parse'}")
        return self.tree


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
                fn = ast.FunctionDef(
                    name=name,
                    args=lam.args,
                    body=[ast.Return(value=lam.body)],
                    decorator_list=[],
                    returns=None,
                    type_comment=None,
                )
                found[name] = ast.copy_location(fn, stmt)
                ast.fix_missing_locations(fn)
            elif name in found and isinstance(
                stmt.value, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.BinOp, ast.JoinedStr)
            ):
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
                if isinstance(target, ast.Name) and isinstance(
                    stmt.value, (ast.Lambda, ast.Name, ast.Attribute, ast.Call)
                ):
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
            return Artifact(
                output,
                None,
                None,
                None,
                (),
                f"line {n} is indented: the output looks like a function body meant to follow the "
                "prompt, not a complete program (outputs are graded as given)",
            )
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


# --------------------------------------------------------------------------- AST helpers


def _is_main_guard(stmt: ast.stmt) -> TypeGuard[ast.If]:
    """``if __name__ == "__main__":`` -- code that never runs when the candidate is imported."""
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare):
        return False
    parts = [stmt.test.left, *stmt.test.comparators]
    return any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts) and any(
        isinstance(p, ast.Constant) and p.value == "__main__" for p in parts
    )


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
    return [
        n
        for n in own_nodes(fn)
        if isinstance(n, ast.Return)
        and n.value is not None
        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
    ]


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
