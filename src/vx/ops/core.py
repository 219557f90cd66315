"""Ops: drawback detectors, the `@op` decorator, op results and the per-item context.

An op checks exactly one failure class on one (task, output) pair and returns a verdict:
DRAWBACK (a known defect was found), CLEAN (none found) or ABSTAIN (no opinion). Ops are pure
functions of (task, output, ctx); `ctx` is a per-item scratch space shared by the ops of one item,
where the family's root op stores the parsed artifact (``ctx["artifact"]``) for the others.

**Peer ops** (``@peer_op``) also read the *peers* of an output: the other attempts at the same task
in the batch being graded. A peer op names an :class:`Observer` -- a pure function
``observe(task, output, ctx) -> plain data`` run once per attempt, in the attempt's own context
(so it can share the item's sandbox run) -- and judges ``fn(task, mine, peers, ctx)`` from this
attempt's observation and the list of its peers' observations. Application runs observers with
the other ops of each item, then judges every peer op per task in the parent
(:func:`vx.ops.apply.apply_ops`); its cached verdicts are keyed by the task's attempt set too.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from vx.dsl.verdict import Verdict
from vx.errors import VxError

TIERS = ("static", "exec", "judge")
#: ``ctx`` key under which a standalone call of a peer op finds its peers' observations.
PEERS_KEY = "peers"
STATUSES = ("active", "shadow", "retired")


class OpError(VxError):
    """A problem with an op definition (bad tier, bad return value, duplicate name...)."""


@attrs.frozen
class Result:
    """What an op returns: a verdict plus, optionally, a short message naming what it saw."""

    verdict: Verdict = attrs.field(converter=lambda v: Verdict(v))
    message: str = ""
    evidence: Any = None

    @classmethod
    def drawback(cls, message: str = "", evidence: Any = None) -> Result:
        return cls(Verdict.DRAWBACK, message, evidence)

    @classmethod
    def clean(cls, message: str = "", evidence: Any = None) -> Result:
        return cls(Verdict.CLEAN, message, evidence)

    @classmethod
    def abstain(cls, message: str = "", evidence: Any = None) -> Result:
        return cls(Verdict.ABSTAIN, message, evidence)


# Short aliases for op authors: `return drawback("prints 3 instead of returning it")`.
drawback = Result.drawback
clean = Result.clean
abstain = Result.abstain


def to_result(value: Any, op_name: str = "?") -> Result:
    """Normalise whatever an op function returned into a `Result`.

    True → drawback, False → clean, None → abstain; Verdict ints; `Result`; or a
    `(verdict, message)` tuple.
    """
    if isinstance(value, Result):
        return value
    if value is None:
        return Result(Verdict.ABSTAIN)
    if isinstance(value, bool):
        return Result(Verdict.DRAWBACK if value else Verdict.CLEAN)
    if isinstance(value, (int, Verdict)) and value in (-1, 0, 1):
        return Result(Verdict(value))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
        return attrs.evolve(to_result(value[0], op_name), message=value[1])
    raise OpError(
        f"op {op_name!r} returned {value!r}; an op must return a Verdict, True/False/None, "
        "or vx.ops.Result (e.g. `return drawback('what was seen')`)"
    )


class Context(dict):
    """Per-item shared scratch space. The root op stores the parsed artifact under "artifact"."""

    #: The key under which :meth:`mark_volatile` keeps its reason.
    VOLATILE = "volatile"

    @property
    def artifact(self) -> Any:
        return self.get("artifact")

    def mark_volatile(self, reason: str) -> None:
        """Say that this item's verdicts depend on more than its task and its output -- the clock, a random
        number, anything that differs from one grading to the next -- so that none of them is ever cached:
        the verdict cache (keyed by task and output) would freeze whichever came first."""
        self.setdefault(self.VOLATILE, reason or "volatile")

    @property
    def volatile(self) -> str:
        """Why this item's verdicts are not cached ("" when they may be: :meth:`mark_volatile`)."""
        return str(self.get(self.VOLATILE) or "")


@functools.lru_cache(maxsize=512)
def _normalized(text: str) -> str:
    """Python source as its syntax tree: what the code does, not how it is laid out. Formatting,
    comments and docstrings leave a version unchanged; any change to what runs changes it. Text that
    does not parse on its own (a lambda cut from its line) is kept as it is."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def _source_text(fn: Callable) -> str:
    try:
        return _normalized(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):  # built in a REPL or from a C function: fall back to bytecode
        code = getattr(fn, "__code__", None)
        return repr((code.co_code, code.co_consts)) if code is not None else repr(fn)


#: What an op's version may depend on besides its own function: a module (its whole source file),
#: a module name (resolved when the op is defined), or a function or class (its source).
Dependency = ModuleType | str | Callable


def _dependency_text(dep: Dependency) -> str:
    if isinstance(dep, str):
        module = sys.modules.get(dep)
        if module is None:
            module = importlib.import_module(dep)
        dep = module
    if isinstance(dep, ModuleType):
        path = getattr(dep, "__file__", None)
        try:
            return _normalized(Path(path).read_text(encoding="utf-8")) if path else dep.__name__
        except OSError:  # not installed as files (zipapp...): the name is all there is
            return dep.__name__
    return _source_text(dep)


def source_version(fn: Callable, depends: Iterable[Dependency] = ()) -> str:
    """An op's version: a hash of its function's syntax tree and of everything it `depends` on
    (formatting, comments and docstrings do not count).

    The one versioning mechanism of vx: ``@op(depends=...)``, typed-spec templates
    (``@template(depends=...)``) and family packs all use it, so that a cached verdict is never
    reused after the code that computed it changed -- helpers included."""
    digest = hashlib.sha256(_source_text(fn).encode())
    for dep in depends:
        digest.update(b"\0" + _dependency_text(dep).encode())
    return digest.hexdigest()[:12]


def _source_hash(fn: Callable) -> str:
    return source_version(fn)


@attrs.frozen
class Observer:
    """What a peer op compares across the attempts at one task: ``fn(task, output, ctx)`` returns
    plain data (None/bool/int/float/str and lists, tuples, dicts of those) describing one attempt.

    Observers are pure and cached like verdicts: by (name, version, item content). Several peer ops
    may share one observer; it runs once per attempt."""

    name: str
    fn: Callable[[Mapping[str, Any], Any, Context], Any] = attrs.field(eq=False, repr=False)
    version: str = ""

    def __call__(self, task: Mapping[str, Any], output: Any, ctx: Context | None = None) -> Any:
        return self.fn(task, output, ctx if ctx is not None else Context())


def observer(fn: Callable | None = None, *, name: str | None = None, depends: Iterable[Dependency] = ()) -> Any:
    """Decorate ``fn(task, output, ctx) -> plain data`` as an :class:`Observer` for peer ops."""
    depends = tuple(depends)

    def wrap(f: Callable) -> Observer:
        return Observer(name or f.__name__, f, source_version(f, depends))

    return wrap(fn) if fn is not None else wrap


@attrs.frozen
class Recipe:
    """How another process rebuilds an op that is not a function of an importable module (an op made
    from a typed spec): ``build(data, status=..., provenance=...) -> Op``, a module-level function (sent
    by reference), and the plain data it reads. The op that carries it needs nothing else to travel."""

    build: Callable[..., Op]
    data: Mapping[str, Any]


@attrs.frozen
class Op:
    """A registered drawback detector.

    `version` changes whenever the op's code (or typed spec) changes, so cached verdicts of an
    older version are never reused. A *peer op* has an ``observer``; its ``fn`` is
    ``fn(task, mine, peers, ctx)`` over observations (see the module docstring).
    """

    name: str
    #: ``fn(task, output, ctx)``; a peer op's ``fn(task, mine, peers, ctx)``
    fn: Callable[..., Any] = attrs.field(eq=False, repr=False)
    tier: str = attrs.field(default="static")
    detects: str = ""
    description: str = ""
    version: str = ""
    provenance: Mapping[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    status: str = attrs.field(default="active")
    spec: Mapping[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    uses_llm: bool = False
    timeout: float | None = None
    observer: Observer | None = attrs.field(default=None, eq=False, repr=False)
    #: A *baseline*: what a person could use instead of a vx verifier (a plurality vote, CodeT's dual
    #: agreement), kept in the pool so that its verdicts are recorded and compared with. A baseline is
    #: always a shadow: never selectable, never promoted, never part of the train consensus, and it never
    #: enters an evolved expression (docs/design.md §6, Curate).
    baseline: bool = False
    #: How another process rebuilds this op, when it is not a function of an importable module.
    recipe: Recipe | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def is_peer(self) -> bool:
        return self.observer is not None

    def __attrs_post_init__(self) -> None:
        if self.baseline and self.status != "shadow":
            raise OpError(
                f"op {self.name!r} is a baseline, so its status must be shadow (baselines are compared "
                f"with, never selected), not {self.status!r}"
            )

    def as_baseline(self) -> Op:
        """This op as a baseline (status shadow, never selected or promoted)."""
        return attrs.evolve(self, status="shadow", baseline=True)

    @tier.validator
    def _check_tier(self, _a, value):
        if value not in TIERS:
            raise OpError(f"op {self.name!r}: tier must be one of {', '.join(TIERS)}, not {value!r}")

    @status.validator
    def _check_status(self, _a, value):
        if value not in STATUSES:
            raise OpError(f"op {self.name!r}: status must be one of {', '.join(STATUSES)}, not {value!r}")

    def __call__(self, task: Mapping[str, Any], output: Any, ctx: Context | None = None) -> Result:
        ctx = ctx if ctx is not None else Context()
        if self.observer is None:
            return to_result(self.fn(task, output, ctx), self.name)
        # a peer op called on one output: its peers' observations come from ctx["peers"], if any
        mine = self.observer(task, output, ctx)
        return self.judge(task, mine, ctx.get(PEERS_KEY), ctx)

    def judge(self, task: Mapping[str, Any], mine: Any, peers: Any, ctx: Context | None = None) -> Result:
        """A peer op's verdict from this attempt's observation and its peers' (None: no batch)."""
        if self.observer is None:
            raise OpError(f"op {self.name!r} is not a peer op")
        if peers is None:
            return Result.abstain(
                "graded alone: a peer op compares an attempt with the other attempts at the "
                "same task, so grade them together (Verifier.grade_many(task, outputs))"
            )
        return to_result(self.fn(task, mine, list(peers), ctx if ctx is not None else Context()), self.name)

    def with_status(self, status: str) -> Op:
        return attrs.evolve(self, status=status)

    # -- shipping to other processes (distributed executors) ----------------------------------
    # An op's function is not sent: an op with a recipe (a typed-spec op) travels as its recipe, a
    # pack op as the name of its module (and file, for packs loaded from a .py file). The receiving
    # process rebuilds it and checks that the version matches, so verdicts computed there are those
    # of this op.

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_op, (self.shipping_ref(),))

    def __copy__(self) -> Op:
        return self

    def __deepcopy__(self, memo: Any) -> Op:
        return self

    def shipping_ref(self) -> dict[str, Any]:
        """Plain data from which another process rebuilds this op (see ``_rebuild_op``)."""
        ref: dict[str, Any] = {
            "name": self.name,
            "version": self.version,
            "status": self.status,
            **({"baseline": True} if self.baseline else {}),
        }
        peer = self.provenance.get("observer_of")
        if isinstance(peer, Op):  # a peer op's observer (phase 1 of application): rebuilt from the peer op
            return {**ref, "kind": "observer", "peer": peer.shipping_ref(), "timeout": self.timeout}
        if self.recipe is not None:
            return {
                **ref,
                "kind": "recipe",
                "build": self.recipe.build,
                "data": dict(self.recipe.data),
                "provenance": dict(self.provenance),
            }
        module = getattr(self.fn, "__module__", None) or self.provenance.get("module")
        if not module or module == "__main__":
            raise OpError(
                f"op {self.name!r} cannot be sent to another process: it is defined in "
                f"{module or 'an unknown module'}; define it in an importable module (an op pack) "
                "or as a typed spec"
            )
        mod = sys.modules.get(module)
        path = getattr(mod, "__file__", None) if module.startswith("vx_pack_") else None
        return {**ref, "kind": "pack", "module": module, "file": path}


def _rebuild_op(ref: Mapping[str, Any]) -> Op:
    """Rebuild an op shipped by ``Op.__reduce__`` (in a worker process)."""
    name = ref["name"]
    if ref["kind"] == "observer":
        peer = _rebuild_op(ref["peer"])
        if peer.observer is None:
            raise OpError(f"op {name!r}: its peer op {peer.name!r} rebuilt without an observer")
        o = observer_op(peer.observer, ref.get("timeout"), peer)
        if o.version != ref["version"]:
            raise OpError(
                f"op {name!r} has version {o.version} here but {ref['version']} where it was sent "
                "from: run the same vx and op packs on every worker"
            )
        return o
    if ref["kind"] == "recipe":
        o = ref["build"](ref["data"], status=ref["status"], provenance=ref.get("provenance"))
    else:
        module = sys.modules.get(ref["module"])
        if module is None and ref.get("file"):
            import importlib.util

            spec = importlib.util.spec_from_file_location(ref["module"], ref["file"])
            if spec is None or spec.loader is None:
                raise OpError(f"op {name!r}: cannot load its pack file {ref['file']} here")
            module = importlib.util.module_from_spec(spec)
            sys.modules[ref["module"]] = module
            spec.loader.exec_module(module)
        elif module is None:
            try:
                module = importlib.import_module(ref["module"])
            except ImportError as exc:
                raise OpError(
                    f"op {name!r}: its module {ref['module']} cannot be imported here ({exc}); "
                    "install the same packs on every worker"
                ) from None
        found = [v for v in vars(module).values() if isinstance(v, Op) and v.name == name]
        if not found:
            raise OpError(f"op {name!r} is not defined in {ref['module']} here")
        o = found[0]
        if ref.get("baseline"):
            o = o.as_baseline()
        elif o.status != ref["status"]:
            o = o.with_status(ref["status"])
    if o.version != ref["version"]:
        raise OpError(
            f"op {name!r} has version {o.version} here but {ref['version']} where it was sent "
            "from: run the same vx and op packs on every worker"
        )
    return o


def peer_op(
    fn: Callable | None = None,
    *,
    observe: Observer,
    name: str | None = None,
    tier: str = "exec",
    detects: str = "",
    description: str | None = None,
    timeout: float | None = None,
    depends: Iterable[Dependency] = (),
) -> Any:
    """Decorate ``fn(task, mine, peers, ctx)`` as a peer op over the observations of `observe`.

    `mine` is this attempt's observation, `peers` the list of the other attempts' (possibly
    empty: the batch holds this attempt only). The version covers the observer's too."""
    depends = tuple(depends)

    def wrap(f: Callable) -> Op:
        base = op(f, name=name, tier=tier, detects=detects, description=description, timeout=timeout, depends=depends)
        version = hashlib.sha256(f"{base.version}:{observe.name}:{observe.version}".encode()).hexdigest()[:12]
        return attrs.evolve(
            base,
            observer=observe,
            version=version,
            provenance={**base.provenance, "peer": True, "observer": observe.name},
        )

    return wrap(fn) if fn is not None else wrap


def op(
    fn: Callable | None = None,
    *,
    name: str | None = None,
    tier: str = "static",
    detects: str = "",
    description: str | None = None,
    root: bool = False,
    uses_llm: bool | None = None,
    timeout: float | None = None,
    depends: Iterable[Dependency] = (),
) -> Any:
    """Decorate a pure function ``fn(task, output, ctx)`` as a vx op.

    ``@op(tier="exec", detects="crash")``; the description defaults to the docstring's first
    line and the name to the function name. ``root=True`` marks a family's root op.
    ``depends`` lists what else the verdict depends on (modules, module names, helper functions):
    their source goes into the op's version, so cached verdicts go stale when they change.
    """
    depends = tuple(depends)

    def wrap(f: Callable) -> Op:
        doc = (inspect.getdoc(f) or "").strip().splitlines()
        o = Op(
            name=name or f.__name__,
            fn=f,
            tier=tier,
            detects=detects or (name or f.__name__),
            description=description if description is not None else (doc[0] if doc else ""),
            version=source_version(f, depends),
            provenance={"origin": "seed", "module": getattr(f, "__module__", "?")},
            uses_llm=(tier == "judge") if uses_llm is None else uses_llm,
            timeout=timeout,
        )
        if root:
            o = attrs.evolve(o, provenance={**o.provenance, "root": True})
        return o

    return wrap(fn) if fn is not None else wrap


def observer_op(obs: Observer, timeout: float | None, peer: Op | None = None) -> Op:
    """An observer wrapped as an op of phase 1: it abstains and carries the observation as evidence.
    ``peer`` is a peer op it observes for: another process rebuilds the observer from it."""

    def fn(task, output, ctx):
        return abstain(evidence=obs(task, output, ctx))

    return Op(
        name=f"observe:{obs.name}",
        fn=fn,
        tier="exec",
        version=obs.version,
        timeout=timeout,
        provenance={"observes": obs.name, **({"observer_of": peer} if peer is not None else {})},
    )
