"""An AST mutation engine over reference solutions: plausible wrong (and some right) programs.

Each operator mirrors a failure class seen in real model outputs. A mutant is made by parsing the
reference, applying exactly one operator at one site inside the entry-point function (helpers
the prompt defines are left alone), and printing the tree back with ``ast.unparse``. Mutants are
*not* assumed wrong: the hidden tests label them, and a mutant that still passes (an equivalent
mutant) is labelled pass. A mutant that equals the original after ``ast.unparse`` or does not
compile is discarded.

Operators (name: what it does -- the failure class it mirrors):

==================== =========================================================================
off_by_one           range bound ±1, index ±1, ``<`` ↔ ``<=`` / ``>`` ↔ ``>=``, compared integer ±1
flip_comparison      ``==`` ↔ ``!=``, ``<`` ↔ ``>``, ``in`` ↔ ``not in``, negated if/while test
wrong_operator       ``+`` ↔ ``-``, ``*`` → ``+``, ``/`` ↔ ``//``, ``%`` → ``//``, ``and`` ↔ ``or``
wrong_builtin        ``min`` ↔ ``max``, ``any`` ↔ ``all``, ``.upper()`` ↔ ``.lower()``, ``startswith`` ↔ ``endswith``
print_not_return     every ``return x`` of the function becomes ``print(x); return``
drop_edge_case       removes an ``if`` (no ``else``) whose body returns or raises early
wrong_name           the function is defined (and called) under another name
swap_arguments       the first two parameters trade places
crash_on_empty       reads ``param[0]`` first (raises on an empty sequence)
hardcode_example     the body returns the visible example's expected output
mutate_argument      sorts a list argument in place first
reads_stdin          calls ``input()`` first
infinite_loop        ``while True: pass`` first (a timeout)
rename_locals        renames a local variable consistently (a benign refactor, usually correct)
==================== =========================================================================

Everything is deterministic given (source, seed): operators and sites are drawn from
``random.Random`` seeded with a string, and candidate sites are listed in ``ast.walk`` order.
"""

from __future__ import annotations

import ast
import random
import re
from collections.abc import Callable, Sequence

import attrs

from vx.errors import MutationError
from vx.families.code.examples import Example


@attrs.frozen
class Mutant:
    source: str
    operator: str
    detail: str


@attrs.frozen
class Context:
    entry_point: str
    examples: tuple[Example, ...] = ()


# A site is (index among the operator's candidate nodes, variant number).
Site = tuple[int, int]


@attrs.frozen
class Operator:
    name: str
    failure_class: str
    description: str
    # candidates(fn, ctx) -> list of (node, n_variants); apply(tree, fn, node, variant, ctx) -> detail
    candidates: Callable[[ast.FunctionDef, Context], list[tuple[ast.AST, int]]]
    apply: Callable[[ast.Module, ast.FunctionDef, ast.AST, int, Context], str]
    weight: float = 1.0
    benign: bool = False


# --------------------------------------------------------------------------- helpers


def _own_nodes(fn: ast.FunctionDef) -> list[ast.AST]:
    """Nodes of `fn`'s body in ast.walk order, skipping the docstring."""
    body = fn.body[1:] if _has_docstring(fn) else fn.body
    nodes: list[ast.AST] = []
    for stmt in body:
        nodes.extend(ast.walk(stmt))
    return nodes


def _has_docstring(fn: ast.FunctionDef) -> bool:
    return (
        bool(fn.body)
        and isinstance(fn.body[0], ast.Expr)
        and isinstance(fn.body[0].value, ast.Constant)
        and isinstance(fn.body[0].value.value, str)
    )


def _body_start(fn: ast.FunctionDef) -> int:
    return 1 if _has_docstring(fn) else 0


def _returns_of(fn: ast.FunctionDef) -> list[ast.Return]:
    """Return statements belonging to `fn` itself (not to nested functions or lambdas)."""
    found: list[ast.Return] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.Return):
                found.append(child)
            visit(child)

    visit(fn)
    return found


def _params(fn: ast.FunctionDef) -> list[str]:
    return [a.arg for a in fn.args.posonlyargs + fn.args.args]


def _sequence_params(fn: ast.FunctionDef, ctx: Context, kinds: tuple[type, ...]) -> list[int]:
    """Indices of parameters that the visible example (or the annotation) shows to be of `kinds`."""
    params = fn.args.posonlyargs + fn.args.args
    indices: list[int] = []
    if ctx.examples:
        try:
            args = ctx.examples[0].python_args()
        except (ValueError, SyntaxError):
            args = []
        for i, value in enumerate(args[: len(params)]):
            if isinstance(value, kinds):
                indices.append(i)
        return indices
    names: dict[type, tuple[str, ...]] = {list: ("list", "List"), str: ("str",), tuple: ("tuple", "Tuple")}
    for i, param in enumerate(params):
        text = ast.unparse(param.annotation) if param.annotation is not None else ""
        if any(word in text for kind in kinds for word in names.get(kind, ())):
            indices.append(i)
    return indices


def _insert_first(fn: ast.FunctionDef, stmts: list[ast.stmt]) -> None:
    start = _body_start(fn)
    fn.body[start:start] = stmts


def _stmt(text: str) -> list[ast.stmt]:
    return ast.parse(text).body


def _parent_map(root: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(root) for child in ast.iter_child_nodes(parent)}


def _replace_node(root: ast.AST, old: ast.AST, new: ast.AST) -> None:
    parent = _parent_map(root)[old]
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise MutationError("node not found under its parent")  # pragma: no cover


def _plus(node: ast.expr, delta: int) -> ast.expr:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return ast.Constant(node.value + delta)
    op = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(left=node, op=op, right=ast.Constant(abs(delta)))


# --------------------------------------------------------------------------- off_by_one

_BOUNDARY = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}


def _obo_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    out: list[tuple[ast.AST, int]] = []
    for node in _own_nodes(fn):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "range"
            and 1 <= len(node.args) <= 3
            and not node.keywords
        ):
            out.append((node, 2))  # stop +1 / stop -1
        elif (
            isinstance(node, ast.Subscript)
            and not isinstance(node.slice, ast.Slice)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, (ast.Name, ast.BinOp))
        ):
            out.append((node, 2))
        elif isinstance(node, ast.Compare) and len(node.ops) == 1:
            if type(node.ops[0]) in _BOUNDARY:
                out.append((node, 1))
            elif isinstance(node.comparators[0], ast.Constant) and type(node.comparators[0].value) is int:
                out.append((node, 2))
    return out


def _obo_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    delta = 1 if variant == 0 else -1
    if isinstance(node, ast.Call):
        index = 0 if len(node.args) == 1 else 1
        node.args[index] = _plus(node.args[index], delta)
        return f"range bound {delta:+d} (line {node.lineno})"
    if isinstance(node, ast.Subscript):
        node.slice = _plus(node.slice, delta)
        return f"index {delta:+d} (line {node.lineno})"
    assert isinstance(node, ast.Compare)
    op = type(node.ops[0])
    if op in _BOUNDARY:
        node.ops[0] = _BOUNDARY[op]()
        return f"boundary {op.__name__} -> {_BOUNDARY[op].__name__} (line {node.lineno})"
    node.comparators[0] = _plus(node.comparators[0], delta)
    return f"compared constant {delta:+d} (line {node.lineno})"


# --------------------------------------------------------------------------- flip_comparison

_FLIP = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.Gt,
    ast.Gt: ast.Lt,
    ast.LtE: ast.GtE,
    ast.GtE: ast.LtE,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


def _flip_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    out: list[tuple[ast.AST, int]] = []
    for node in _own_nodes(fn):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _FLIP:
            out.append((node, 1))
        elif (
            isinstance(node, (ast.If, ast.While))
            and not isinstance(node.test, ast.Compare)
            and not (isinstance(node.test, ast.Constant))
        ):
            out.append((node, 1))
    return out


def _flip_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    if isinstance(node, ast.Compare):
        old = type(node.ops[0])
        node.ops[0] = _FLIP[old]()
        return f"{old.__name__} -> {_FLIP[old].__name__} (line {node.lineno})"
    assert isinstance(node, (ast.If, ast.While))
    if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
        node.test = node.test.operand
    else:
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)
    return f"negated condition (line {node.lineno})"


# --------------------------------------------------------------------------- wrong_operator

_ARITH = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.Div: ast.FloorDiv,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}


def _op_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    out: list[tuple[ast.AST, int]] = []
    for node in _own_nodes(fn):
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _ARITH:
            # String concatenation "a" + "b" -> "a" - "b" is a type error, still a real failure.
            out.append((node, 1))
        elif isinstance(node, ast.BoolOp):
            out.append((node, 1))
    return out


def _op_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    if isinstance(node, ast.BoolOp):
        old = type(node.op)
        node.op = ast.Or() if old is ast.And else ast.And()
        return f"{old.__name__} -> {type(node.op).__name__} (line {node.lineno})"
    old = type(node.op)  # type: ignore[attr-defined]
    node.op = _ARITH[old]()  # type: ignore[attr-defined]
    return f"{old.__name__} -> {_ARITH[old].__name__} (line {node.lineno})"  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- wrong_builtin

_BUILTIN_SWAP = {"min": "max", "max": "min", "any": "all", "all": "any"}
_METHOD_SWAP = {
    "upper": "lower",
    "lower": "upper",
    "startswith": "endswith",
    "endswith": "startswith",
    "isupper": "islower",
    "islower": "isupper",
    "index": "rindex",
    "find": "rfind",
    "rfind": "find",
    "lstrip": "rstrip",
    "rstrip": "lstrip",
}


def _builtin_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    out: list[tuple[ast.AST, int]] = []
    for node in _own_nodes(fn):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in _BUILTIN_SWAP:
                out.append((node, 1))
            elif isinstance(node.func, ast.Attribute) and node.func.attr in _METHOD_SWAP:
                out.append((node, 1))
    return out


def _builtin_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    assert isinstance(node, ast.Call)
    if isinstance(node.func, ast.Name):
        old = node.func.id
        node.func.id = _BUILTIN_SWAP[old]
        return f"{old} -> {node.func.id} (line {node.lineno})"
    assert isinstance(node.func, ast.Attribute)
    old = node.func.attr
    node.func.attr = _METHOD_SWAP[old]
    return f".{old}() -> .{node.func.attr}() (line {node.lineno})"


# --------------------------------------------------------------------------- print_not_return


def _print_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    returns = [r for r in _returns_of(fn) if r.value is not None]
    return [(fn, 1)] if returns else []


def _print_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    returns = [(r, r.value) for r in _returns_of(fn) if r.value is not None]
    parents = _parent_map(fn)
    for ret, returned in returns:
        parent = parents[ret]
        for _, value in ast.iter_fields(parent):
            if isinstance(value, list) and any(item is ret for item in value):
                i = next(k for k, item in enumerate(value) if item is ret)
                call = ast.Expr(ast.Call(func=ast.Name("print", ast.Load()), args=[returned], keywords=[]))
                value[i : i + 1] = [call, ast.Return(value=None)]
                break
    return f"{len(returns)} return(s) print instead"


# --------------------------------------------------------------------------- drop_edge_case


def _edge_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    out: list[tuple[ast.AST, int]] = []
    for node in _own_nodes(fn):
        if (
            isinstance(node, ast.If)
            and not node.orelse
            and len(node.body) <= 3
            and isinstance(node.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
        ):
            out.append((node, 1))
    return out


def _edge_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    parents = _parent_map(fn)
    parent = parents[node]
    for _, value in ast.iter_fields(parent):
        if isinstance(value, list) and any(item is node for item in value):
            value[:] = [item for item in value if item is not node] or [ast.Pass()]
            break
    assert isinstance(node, ast.If)
    return f"dropped `if {ast.unparse(node.test)[:60]}` (line {node.lineno})"


# --------------------------------------------------------------------------- wrong_name


def _other_name(name: str) -> str:
    if "_" in name.strip("_"):
        head, *rest = [p for p in name.split("_") if p]
        return head + "".join(p[:1].upper() + p[1:] for p in rest)
    if re.search(r"[a-z][A-Z]", name):
        return re.sub(r"(?<=[a-z])([A-Z])", lambda m: "_" + m.group(1).lower(), name)
    return name + "_func"


def _name_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    return [(fn, 1)]


def _name_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    old, new = fn.name, _other_name(fn.name)
    fn.name = new
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Name) and sub.id == old:
            sub.id = new
    return f"defines {new} instead of {old}"


# --------------------------------------------------------------------------- swap_arguments


def _swap_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    return [(fn, 1)] if len(fn.args.args) >= 2 and not fn.args.posonlyargs else []


def _swap_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    args = fn.args.args
    # Keep each parameter's default where it was, so the signature stays valid.
    a, b = args[0], args[1]
    args[0], args[1] = b, a
    return f"parameters {a.arg}, {b.arg} swapped"


# --------------------------------------------------------------------------- crash_on_empty


def _empty_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    return (
        [(fn, len(_sequence_params(fn, ctx, (list, str, tuple))))]
        if _sequence_params(fn, ctx, (list, str, tuple))
        else []
    )


def _empty_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    index = _sequence_params(fn, ctx, (list, str, tuple))[variant]
    name = _params(fn)[index]
    _insert_first(fn, _stmt(f"first = {name}[0]"))
    return f"reads {name}[0] before any check"


# --------------------------------------------------------------------------- hardcode_example


def _hardcode_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    return [(fn, 1)] if ctx.examples else []


def _hardcode_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    expected = ctx.examples[0].expected_src
    fn.body[_body_start(fn) :] = _stmt(f"return {expected}")
    return f"returns the example's output {expected[:60]}"


# --------------------------------------------------------------------------- mutate_argument


def _mutarg_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    indices = _sequence_params(fn, ctx, (list,))
    return [(fn, len(indices))] if indices else []


def _mutarg_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    name = _params(fn)[_sequence_params(fn, ctx, (list,))[variant]]
    _insert_first(fn, _stmt(f"{name}.sort()"))
    return f"sorts argument {name} in place"


# --------------------------------------------------------------------------- reads_stdin / infinite_loop


def _always(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    return [(fn, 1)]


def _stdin_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    _insert_first(fn, _stmt("line = input()"))
    return "calls input() first"


def _loop_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    _insert_first(fn, _stmt("while True:\n    pass"))
    return "loops forever first"


# --------------------------------------------------------------------------- rename_locals (benign)


def _assigned_locals(fn: ast.FunctionDef) -> list[str]:
    names: list[str] = []
    params = set(_params(fn))
    for node in _own_nodes(fn):
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Store)
            and node.id not in params
            and node.id not in names
        ):
            names.append(node.id)
    return names


def _rename_candidates(fn: ast.FunctionDef, ctx: Context) -> list[tuple[ast.AST, int]]:
    # Nested functions or global/nonlocal declarations make renaming unsafe: skip them.
    if any(
        isinstance(n, (ast.FunctionDef, ast.Lambda, ast.Global, ast.Nonlocal, ast.ClassDef)) for n in _own_nodes(fn)
    ):
        return []
    return [(fn, len(_assigned_locals(fn)))] if _assigned_locals(fn) else []


def _rename_apply(tree: ast.Module, fn: ast.FunctionDef, node: ast.AST, variant: int, ctx: Context) -> str:
    old = _assigned_locals(fn)[variant]
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)
    }
    new = f"{old}_value"
    while new in taken:
        new += "_"
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Name) and sub.id == old:
            sub.id = new
    return f"local {old} renamed {new}"


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator(
            "off_by_one",
            "off_by_one",
            "range bound, index or boundary comparison off by one",
            _obo_candidates,
            _obo_apply,
            weight=2.0,
        ),
        Operator(
            "flip_comparison",
            "wrong_logic",
            "comparison or condition inverted",
            _flip_candidates,
            _flip_apply,
            weight=1.5,
        ),
        Operator(
            "wrong_operator",
            "wrong_logic",
            "arithmetic or boolean operator replaced",
            _op_candidates,
            _op_apply,
            weight=1.5,
        ),
        Operator(
            "wrong_builtin",
            "wrong_logic",
            "min/max, any/all or a string method swapped",
            _builtin_candidates,
            _builtin_apply,
        ),
        Operator(
            "print_not_return",
            "returns_not_print_only",
            "prints the result instead of returning it",
            _print_candidates,
            _print_apply,
        ),
        Operator(
            "drop_edge_case",
            "missing_edge_case",
            "an early-exit edge-case branch removed",
            _edge_candidates,
            _edge_apply,
            weight=1.5,
        ),
        Operator(
            "wrong_name",
            "wrong_entry_point",
            "function defined under another name",
            _name_candidates,
            _name_apply,
            weight=0.5,
        ),
        Operator(
            "swap_arguments",
            "wrong_signature",
            "first two parameters swapped",
            _swap_candidates,
            _swap_apply,
            weight=0.75,
        ),
        Operator(
            "crash_on_empty",
            "crash",
            "indexes a sequence argument before checking it is non-empty",
            _empty_candidates,
            _empty_apply,
            weight=0.75,
        ),
        Operator(
            "hardcode_example",
            "hardcodes_example",
            "returns the visible example's output for any input",
            _hardcode_candidates,
            _hardcode_apply,
            weight=0.5,
        ),
        Operator(
            "mutate_argument",
            "mutates_argument",
            "sorts a list argument in place",
            _mutarg_candidates,
            _mutarg_apply,
            weight=0.5,
        ),
        Operator("reads_stdin", "reads_stdin", "reads standard input", _always, _stdin_apply, weight=0.3),
        Operator("infinite_loop", "timeout", "never terminates", _always, _loop_apply, weight=0.2),
        Operator(
            "rename_locals",
            "none",
            "a local variable renamed (benign refactor)",
            _rename_candidates,
            _rename_apply,
            weight=1.0,
            benign=True,
        ),
    )
}


# --------------------------------------------------------------------------- engine


def entry_function(tree: ast.Module, entry_point: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return node
    raise MutationError(f"no top-level function named {entry_point!r}")


def normalize(source: str) -> str:
    """The source as ``ast.unparse`` prints it (no comments, canonical layout)."""
    try:
        return ast.unparse(ast.parse(source))
    except SyntaxError as exc:
        raise MutationError(f"source does not parse: line {exc.lineno}: {exc.msg}") from exc


def sites(source: str, ctx: Context, operators: Sequence[str] | None = None) -> list[tuple[str, Site]]:
    """Every (operator name, site) applicable to `source`, in a deterministic order."""
    tree = ast.parse(source)
    fn = entry_function(tree, ctx.entry_point)
    out: list[tuple[str, Site]] = []
    for name in operators or OPERATORS:
        for index, (_, n_variants) in enumerate(OPERATORS[name].candidates(fn, ctx)):
            out.extend((name, (index, v)) for v in range(n_variants))
    return out


def apply(source: str, ctx: Context, operator: str, site: Site) -> Mutant | None:
    """Apply one operator at one site; None when the result is unchanged or does not compile."""
    tree = ast.parse(source)
    fn = entry_function(tree, ctx.entry_point)
    op = OPERATORS[operator]
    index, variant = site
    node = op.candidates(fn, ctx)[index][0]
    detail = op.apply(tree, fn, node, variant, ctx)
    ast.fix_missing_locations(tree)
    try:
        text = ast.unparse(tree)
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return None
    if text == normalize(source):
        return None
    return Mutant(source=text, operator=operator, detail=detail)


def mutate(
    source: str, ctx: Context, *, n: int, seed: int | str, operators: Sequence[str] | None = None
) -> list[Mutant]:
    """Up to `n` distinct mutants of `source`, drawn deterministically from (`seed`, source).

    Operators are drawn by weight (one site per draw, uniformly among that operator's sites),
    without repeating an (operator, site) pair; fewer than `n` come back when sites run out.
    """
    original = normalize(source)
    rng = random.Random(f"vx-mutate:{seed}:{original}")
    by_op: dict[str, list[Site]] = {}
    for name, site in sites(source, ctx, operators):
        by_op.setdefault(name, []).append(site)
    for site_list in by_op.values():
        rng.shuffle(site_list)
    mutants: list[Mutant] = []
    seen = {original}
    while len(mutants) < n and by_op:
        names = sorted(by_op)
        name = rng.choices(names, weights=[OPERATORS[k].weight for k in names])[0]
        site = by_op[name].pop()
        if not by_op[name]:
            del by_op[name]
        mutant = apply(source, ctx, name, site)
        if mutant is None or mutant.source in seen:
            continue
        seen.add(mutant.source)
        mutants.append(mutant)
    return mutants
