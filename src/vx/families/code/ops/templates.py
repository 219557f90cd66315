"""Parametric check templates of the code family, with their inducers (registered at import).

A template is a typed check the synthesizer can instantiate from a JSON spec, e.g.::

    {"kind": "static", "check": "ast_call_present", "params": {"name": "print"},
     "detects": "returns_not_print_only"}

Each inducer looks at a cluster of bad outputs and at known-good outputs (lists of
``(task, output)`` pairs) and proposes parameter sets whose check fires on at least half of the
cluster (:data:`MIN_CLUSTER_SHARE`, the birth gate's own bar) and on no good output, best first
(most cluster outputs caught). Whether a proposal becomes an op is the birth gate's decision.

Checks (kind: fires when)

* ``ast_call_present`` (static): the code calls ``name`` (a function or a method name)
* ``ast_node_present`` (static): the code contains an AST node type (``Global``, ``While``...)
  or a derived pattern (:data:`PATTERNS`)
* ``imports_module`` (static): the code imports module ``name``
* ``raises_on_probe_class`` (exec): a probe call of class ``klass`` raises (``probe.CLASSES``)
* ``returns_none_on_probe_class`` (exec): a probe call of class ``klass`` returns None where the
  example expects a value (a path that falls through without ``return``)
* ``raises_exception`` (exec): loading or a probe call raises exception type ``name``
* ``prints_value`` (exec): a printed-instead-of-returned pattern (``mode``, :data:`PRINT_MODES`)
* ``returns_constant`` (exec): ``min_calls`` probe calls with different arguments all return the
  same value

Code under ``if __name__ == "__main__":`` is ignored by the static checks (it never runs when
the candidate is imported). Exec checks share the item's sandbox run with the seed exec ops.
"""

from __future__ import annotations

import ast
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from vx.families.code.ops import artifact, values
from vx.families.code.ops import run as run_mod
from vx.families.code.ops.artifact import (
    Artifact,
    _is_main_guard,
    artifact_of,
    call_name,
    live_nodes,
    own_nodes,
)
from vx.families.code.ops.run import execution
from vx.families.code.ops.values import same_value, short
from vx.families.code.probes import probe as probe_mod
from vx.ops.core import Context, abstain, clean, drawback
from vx.ops.specs import SpecError, inducer, template

FAMILY = "code"
#: What every template's verdict depends on besides its factory (goes into the versions of its ops).
DEPENDS = (
    __name__,
    artifact,
    values,
    run_mod,
    probe_mod,
    "vx.families.code.probes.budgets",
    "vx.families.code.probes.domain",
    "vx.families.code.probes.generate",
    "vx.families.code.probes.draw",
)
MAX_PROPOSALS = 5

Pair = tuple[Mapping[str, Any], Any]


# --------------------------------------------------------------------------- induction helpers

#: A proposal must catch at least this share of the cluster: the birth gate asks an op to fire on
#: half its cluster, so a check catching less could never be born and is not worth applying.
MIN_CLUSTER_SHARE = 0.5


def _needed(n_cluster: int) -> int:
    return max(1, math.ceil(MIN_CLUSTER_SHARE * n_cluster))


def _rank(cluster_hits: Counter, good_hits: Counter, n_cluster: int) -> list[Any]:
    """Keys caught in enough of the cluster and never in the good outputs, most caught first."""
    keys = [k for k, n in cluster_hits.items() if n >= _needed(n_cluster) and good_hits.get(k, 0) == 0]
    keys.sort(key=lambda k: (-cluster_hits[k], str(k)))
    return keys[:MAX_PROPOSALS]


def _feature_counts(pairs: Iterable[Pair], features: Callable[[Mapping[str, Any], Any], set]) -> Counter:
    counts: Counter = Counter()
    for task, output in pairs:
        counts.update(features(task, output))
    return counts


def _discriminating(
    cluster: list[Pair], good: list[Pair], features: Callable[[Mapping[str, Any], Any], set]
) -> list[Any]:
    return _rank(_feature_counts(cluster, features), _feature_counts(good, features), len(cluster))


def _tree(task: Mapping[str, Any], output: Any) -> ast.Module | None:
    return artifact_of(task, output, Context()).tree


def _presence_check(lines: Callable[[Artifact], Mapping[str, int]], key: str, found: str, absent: str) -> Callable:
    """A static check: a drawback at the first line where the output has `key` (`lines`: what the output has,
    each with its first line; the message is ``line N`` + `found`), else clean (`absent`)."""

    def check(task: Mapping[str, Any], output: Any, ctx: Context) -> Any:
        art = artifact_of(task, output, ctx)
        if art.tree is None:
            return abstain("the output does not parse")
        line = lines(art).get(key)
        if line is not None:
            return drawback(f"line {line}{found}")
        return clean(absent)

    return check


def _induce_from_tree(
    cluster: list[Pair], good: list[Pair], param: str, lines: Callable[[ast.Module], Mapping[str, int]]
) -> list[dict[str, Any]]:
    """Specs ``{param: name}`` for the names (`lines` of a parsed output) that tell the cluster from the good."""

    def features(task: Mapping[str, Any], output: Any) -> set:
        tree = _tree(task, output)
        return set(lines(tree)) if tree is not None else set()

    return [{param: n} for n in _discriminating(cluster, good, features)]


# --------------------------------------------------------------------------- ast_call_present


def _calls(tree: ast.Module) -> dict[str, int]:
    """Called names (``f`` of f(...), ``m`` of x.m(...)) -> first line."""
    found: dict[str, int] = {}
    for node in live_nodes(tree):
        if isinstance(node, ast.Call):
            name = call_name(node)
            if name and name not in found:
                found[name] = node.lineno
    return found


@template("ast_call_present", kind="static", params={"name": "str"}, family=FAMILY, depends=DEPENDS, presence=True)
def ast_call_present(name: str):
    """The code calls a given function or method name."""
    if not name.isidentifier():
        raise SpecError(f"ast_call_present: {name!r} is not a Python identifier")
    return _presence_check(lambda art: _calls(art.module), name, f" calls {name}()", f"no call of {name}()")


@inducer("ast_call_present")
def _induce_calls(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    return _induce_from_tree(cluster, good, "name", _calls)


# --------------------------------------------------------------------------- ast_node_present


def _while_true_without_exit(node: ast.AST) -> bool:
    if not (isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value):
        return False
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Break, ast.Return, ast.Raise)):
            return False
    return True


def _bare_except(node: ast.AST) -> bool:
    return isinstance(node, ast.ExceptHandler) and (
        node.type is None or (isinstance(node.type, ast.Name) and node.type.id in ("Exception", "BaseException"))
    )


def _module_level_code(tree: ast.Module) -> list[ast.stmt]:
    """Statements that run at import time besides definitions, imports and docstrings."""
    out = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # docstring or stray literal
        if (
            isinstance(stmt, ast.Assign)
            and all(isinstance(t, ast.Name) for t in stmt.targets)
            and _is_constant_expr(stmt.value)
        ):
            continue  # a module constant
        if isinstance(stmt, ast.If) and _is_main_guard(stmt):
            continue
        out.append(stmt)
    return out


def _is_constant_expr(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _recursive(art: Artifact) -> bool:
    fn = art.function
    if fn is None:
        return False
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name for n in own_nodes(fn))


#: Derived patterns accepted by ast_node_present besides ``ast`` node class names.
PATTERNS: dict[str, str] = {
    "WhileTrueNoExit": "a `while True:` loop with no break, return or raise inside",
    "BareExcept": "an `except:` / `except Exception:` handler that catches everything",
    "ModuleLevelCode": "statements other than definitions and imports run at import time",
    "RecursiveCall": "the entry-point function calls itself",
    "NestedFunction": "a function defined inside the entry-point function",
}

# Node types every function has: never discriminating, not worth proposing.
_UBIQUITOUS = {
    "Module",
    "FunctionDef",
    "arguments",
    "arg",
    "Name",
    "Load",
    "Store",
    "Return",
    "Expr",
    "Constant",
    "Call",
    "Attribute",
}


def _node_features(art: Artifact) -> dict[str, int]:
    """Node type / pattern -> first line where it occurs."""
    found: dict[str, int] = {}
    tree = art.tree
    if tree is None:
        return found
    for node in live_nodes(tree):
        name = type(node).__name__
        line = getattr(node, "lineno", 0)
        found.setdefault(name, line)
        if _while_true_without_exit(node):
            found.setdefault("WhileTrueNoExit", line)
        if _bare_except(node):
            found.setdefault("BareExcept", line)
    code = _module_level_code(tree)
    if code:
        found["ModuleLevelCode"] = code[0].lineno
    if _recursive(art):
        found["RecursiveCall"] = art.fn.lineno
    if art.function is not None:
        nested = [n for n in own_nodes(art.function) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if nested:
            found["NestedFunction"] = nested[0].lineno
    return found


def _known_node(name: str) -> bool:
    cls = getattr(ast, name, None)
    return name in PATTERNS or (isinstance(cls, type) and issubclass(cls, ast.AST) and name[:1].isupper())


@template("ast_node_present", kind="static", params={"node": "str"}, family=FAMILY, depends=DEPENDS, presence=True)
def ast_node_present(node: str):
    """The code contains an AST node type (e.g. Global, While, Try) or a derived pattern."""
    if not _known_node(node):
        raise SpecError(
            f"ast_node_present: {node!r} is neither an ast node class (Global, While, "
            f"Try, ...) nor one of the patterns {', '.join(PATTERNS)}"
        )
    what = PATTERNS.get(node, f"a {node} node")
    return _presence_check(_node_features, node, f": {what}", f"no {node}")


@inducer("ast_node_present")
def _induce_nodes(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    def features(task, output):
        art = artifact_of(task, output, Context())
        return {k for k in _node_features(art) if k not in _UBIQUITOUS}

    return [{"node": n} for n in _discriminating(cluster, good, features)]


# --------------------------------------------------------------------------- imports_module


def _imports(tree: ast.Module) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in live_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name.split(".")[0], node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.setdefault(node.module.split(".")[0], node.lineno)
    return found


@template("imports_module", kind="static", params={"name": "str"}, family=FAMILY, depends=DEPENDS, presence=True)
def imports_module(name: str):
    """The code imports a given module (top-level package name)."""
    top = name.split(".")[0]
    if not top.isidentifier():
        raise SpecError(f"imports_module: {name!r} is not a module name")
    return _presence_check(lambda art: _imports(art.module), top, f" imports {top}", f"does not import {top}")


@inducer("imports_module")
def _induce_imports(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    return _induce_from_tree(cluster, good, "name", _imports)


# --------------------------------------------------------------------------- exec helpers


def _run(task: Mapping[str, Any], output: Any, ctx: Context):
    """(execution, None) or (None, abstain result)."""
    run, why = execution(task, output, ctx)
    if run is None:
        return None, abstain(why)
    return run, None


_CONTEXTS: dict[tuple[str, str], Context] = {}
_MAX_CONTEXTS = 512


def _context_for(task: Mapping[str, Any], output: Any) -> Context:
    """A per-(task, output) context shared by the inducers, so that one synthesis round runs each
    output in the sandbox once however many exec templates look at it."""
    key = (repr(sorted((str(k), repr(v)) for k, v in task.items() if k != "reference")), repr(output))
    ctx = _CONTEXTS.get(key)
    if ctx is None:
        if len(_CONTEXTS) >= _MAX_CONTEXTS:
            _CONTEXTS.pop(next(iter(_CONTEXTS)))
        ctx = _CONTEXTS[key] = Context()
    return ctx


def _exec_features(pairs: list[Pair], fn: Callable[[Any, Any, Context], Any]) -> list[Any]:
    """`fn(task, output, ctx)` for every pair (None where the sandbox failed)."""
    out = []
    for task, output in pairs:
        ctx = _context_for(task, output)
        try:
            out.append(fn(task, output, ctx))
        except Exception:  # the sandbox failed on this pair: it cannot support any proposal
            out.append(None)
    return out


# --------------------------------------------------------------------------- raises_on_probe_class


def _raising_call(run, klass: str):
    for p, c in run.pairs(klass):
        if c.status in ("exception", "crashed"):
            return p, c
    return None


@template("raises_on_probe_class", kind="exec", params={"klass": "str"}, family=FAMILY, depends=DEPENDS)
def raises_on_probe_class(klass: str):
    """A probe input of a given class (empty, single, zero, negative, large...) makes the code raise."""
    if klass not in probe_mod.BASE_CLASSES:
        raise SpecError(
            f"raises_on_probe_class: unknown probe class {klass!r}; choose one of {', '.join(probe_mod.BASE_CLASSES)}"
        )

    def check(task, output, ctx):
        run, res = _run(task, output, ctx)
        if run is None:
            return res
        if not run.loaded:
            return abstain(run.load_message)
        hit = _raising_call(run, klass)
        if hit is not None:
            p, c = hit
            what = f"raised {c.exc_type}: {c.exc_message}" if c.status == "exception" else "killed its process"
            return drawback(f"{p.call} {what[:140]} ({p.detail})")
        if run.pairs(klass):
            return clean(f"{len(run.pairs(klass))} {klass} probe call(s) raised nothing")
        return abstain(f"no {klass} probe for this task")

    return check


def _probe_class_features(task, output, ctx) -> set[str] | None:
    run, _ = execution(task, output, ctx)
    if run is None or not run.loaded:
        return None
    return {k for k in probe_mod.BASE_CLASSES if _raising_call(run, k) is not None}


@inducer("raises_on_probe_class")
def _induce_probe_class(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    bad = Counter(k for f in _exec_features(cluster, _probe_class_features) if f for k in f)
    ok = Counter(k for f in _exec_features(good, _probe_class_features) if f for k in f)
    return [{"klass": k} for k in _rank(bad, ok, len(cluster))]


# --------------------------------------------------------------------------- returns_none_on_probe_class


def _none_call(run, klass: str):
    """The first call of `klass` that returned None, when the example expects a value."""
    if not any(p.expected is not None for p, _ in run.pairs("example")):
        return None
    for p, c in run.pairs(klass):
        if c.status == "ok" and c.value is None:
            return p
    return None


@template("returns_none_on_probe_class", kind="exec", params={"klass": "str"}, family=FAMILY, depends=DEPENDS)
def returns_none_on_probe_class(klass: str):
    """A probe input of a given class makes the function return None where a value is expected.

    The example expects a value, so a None means a path that falls through without ``return``."""
    if klass not in probe_mod.BASE_CLASSES:
        raise SpecError(
            f"returns_none_on_probe_class: unknown probe class {klass!r}; "
            f"choose one of {', '.join(probe_mod.BASE_CLASSES)}"
        )

    def check(task, output, ctx):
        run, res = _run(task, output, ctx)
        if run is None:
            return res
        if not run.loaded:
            return abstain(run.load_message)
        if not any(p.expected is not None for p, _ in run.pairs("example")):
            return abstain("the example expects None (or no example ran)")
        hit = _none_call(run, klass)
        if hit is not None:
            return drawback(f"{hit.call} returned None ({hit.detail}); the example expects a value")
        returned = [c for _, c in run.pairs(klass) if c.status == "ok"]
        if returned:
            return clean(f"{len(returned)} {klass} probe call(s) returned a value")
        return abstain(f"no {klass} probe call returned")

    return check


@inducer("returns_none_on_probe_class")
def _induce_none(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    def features(task, output, ctx):
        run, _ = execution(task, output, ctx)
        if run is None or not run.loaded:
            return None
        return {k for k in probe_mod.BASE_CLASSES if _none_call(run, k) is not None}

    bad = Counter(k for f in _exec_features(cluster, features) if f for k in f)
    ok = Counter(k for f in _exec_features(good, features) if f for k in f)
    return [{"klass": k} for k in _rank(bad, ok, len(cluster))]


# --------------------------------------------------------------------------- raises_exception


def _raised_types(run) -> dict[str, str]:
    """Exception type -> description of where it was raised (loading or the first call)."""
    found: dict[str, str] = {}
    if run.load == "error" and run.report.load_error_type:
        found[run.report.load_error_type] = run.load_message
    for p, c in run.pairs(*probe_mod.BASE_CLASSES):
        if c.status == "exception" and c.exc_type and c.exc_type not in found:
            found[c.exc_type] = f"{p.call} raised {c.exc_type}: {(c.exc_message or '')[:100]}"
    return found


@template("raises_exception", kind="exec", params={"name": "str"}, family=FAMILY, depends=DEPENDS)
def raises_exception(name: str):
    """Loading the code or a probe call raises a given exception type (e.g. NameError)."""
    if not name.isidentifier():
        raise SpecError(f"raises_exception: {name!r} is not an exception class name")

    def check(task, output, ctx):
        run, res = _run(task, output, ctx)
        if run is None:
            return res
        found = _raised_types(run)
        if name in found:
            return drawback(found[name])
        if run.load in ("ok", "error"):
            return clean(f"no {name} raised")
        return abstain(run.load_message)

    return check


@inducer("raises_exception")
def _induce_exception(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    def features(task, output, ctx):
        run, _ = execution(task, output, ctx)
        return set(_raised_types(run)) if run is not None else None

    bad = Counter(k for f in _exec_features(cluster, features) if f for k in f)
    ok = Counter(k for f in _exec_features(good, features) if f for k in f)
    return [{"name": k} for k in _rank(bad, ok, len(cluster))]


# --------------------------------------------------------------------------- prints_value

#: Modes of prints_value.
PRINT_MODES: dict[str, str] = {
    "prints_expected": "an example call prints its expected value",
    "returns_none_and_prints": "an example call returns None where a value is expected, and prints",
    "prints_anything": "loading the code or any probe call prints something",
}


def _print_hit(run, mode: str) -> str | None:
    if mode == "prints_anything":
        if run.report.load_stdout.strip():
            return f"loading the code printed {run.report.load_stdout.strip()[:60]!r}"
        for p, c in run.pairs(*probe_mod.BASE_CLASSES):
            if c.stdout.strip():
                return f"{p.call} printed {c.stdout.strip()[:60]!r}"
        return None
    for p, c in run.pairs("example"):
        text = c.stdout
        if not text.strip():
            continue
        if mode == "prints_expected" and (str(p.expected) in text or repr(p.expected) in text):
            return f"{p.call} printed {text.strip()[:60]!r}, which contains the expected {short(p.expected, 40)}"
        if mode == "returns_none_and_prints" and c.status == "ok" and c.value is None and p.expected is not None:
            return f"{p.call} returned None and printed {text.strip()[:60]!r}"
    return None


@template("prints_value", kind="exec", params={"mode": "str"}, family=FAMILY, depends=DEPENDS)
def prints_value(mode: str):
    """A printed-instead-of-returned pattern (mode: prints_expected, returns_none_and_prints, prints_anything)."""
    if mode not in PRINT_MODES:
        raise SpecError(f"prints_value: unknown mode {mode!r}; choose one of {', '.join(PRINT_MODES)}")

    def check(task, output, ctx):
        run, res = _run(task, output, ctx)
        if run is None:
            return res
        if not run.loaded:
            return abstain(run.load_message)
        hit = _print_hit(run, mode)
        if hit:
            return drawback(hit)
        if mode != "prints_anything" and not run.pairs("example"):
            return abstain("no example call ran")
        return clean(f"not seen: {PRINT_MODES[mode]}")

    return check


@inducer("prints_value")
def _induce_prints(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    def features(task, output, ctx):
        run, _ = execution(task, output, ctx)
        if run is None or not run.loaded:
            return None
        return {m for m in PRINT_MODES if _print_hit(run, m)}

    bad = Counter(k for f in _exec_features(cluster, features) if f for k in f)
    ok = Counter(k for f in _exec_features(good, features) if f for k in f)
    return [{"mode": k} for k in _rank(bad, ok, len(cluster))]


# --------------------------------------------------------------------------- returns_constant


def _distinct_results(run) -> tuple[int, list[Any]]:
    """(number of distinct-argument calls that returned, their distinct values)."""
    seen_args: list[tuple] = []
    values: list[Any] = []
    n = 0
    for p, c in run.pairs(*probe_mod.BASE_CLASSES):
        if c.status != "ok" or p.klass == "repeat" or any(same_value(p.args, a) for a in seen_args):
            continue
        seen_args.append(p.args)
        n += 1
        if not any(same_value(c.value, v) for v in values):
            values.append(c.value)
    return n, values


@template("returns_constant", kind="exec", params={"min_calls": "int"}, family=FAMILY, depends=DEPENDS)
def returns_constant(min_calls: int):
    """At least `min_calls` probe calls with different arguments all return the same value."""
    if min_calls < 2:
        raise SpecError(f"returns_constant: min_calls must be at least 2, got {min_calls}")

    def check(task, output, ctx):
        run, res = _run(task, output, ctx)
        if run is None:
            return res
        if not run.loaded:
            return abstain(run.load_message)
        n, values = _distinct_results(run)
        if n < min_calls:
            return abstain(f"only {n} call(s) with different arguments returned")
        if len(values) == 1:
            return drawback(f"{n} calls with different arguments all returned {short(values[0], 60)}")
        return clean(f"{n} calls returned {len(values)} different values")

    return check


_MIN_CALLS = (2, 3, 4, 6, 8)


@inducer("returns_constant")
def _induce_constant(cluster: list[Pair], good: list[Pair]) -> list[dict[str, Any]]:
    def features(task, output, ctx):
        run, _ = execution(task, output, ctx)
        if run is None or not run.loaded:
            return None
        n, values = _distinct_results(run)
        return {m for m in _MIN_CALLS if n >= m and len(values) == 1}

    bad = Counter(k for f in _exec_features(cluster, features) if f for k in f)
    ok = Counter(k for f in _exec_features(good, features) if f for k in f)
    # Lower thresholds catch more; among equal catches prefer the stricter (larger) threshold.
    keys = [k for k in bad if bad[k] >= _needed(len(cluster)) and ok.get(k, 0) == 0]
    keys.sort(key=lambda k: (-bad[k], -k))
    return [{"min_calls": k} for k in keys[:MAX_PROPOSALS]]
