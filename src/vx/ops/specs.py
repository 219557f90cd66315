"""Typed op specs: JSON descriptions of ops, instantiated from parametric check templates.

A spec is plain JSON, e.g.::

    {"kind": "static", "check": "forbids_call", "params": {"name": "print"},
     "detects": "print_instead_of_return", "name": "calls_print"}

`kind` is the op tier, `check` names a registered template, `params` fill it in, `detects` is the
failure class. Synthesis (offline or by an LLM) produces specs; they are stored with a run so the
run can be replayed. A spec round-trips through JSON to an identical op (same name and version).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vx.ops.core import TIERS, Dependency, Op, OpError, Recipe, source_version

_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list, tuple),
    "any": (object,),
}


class SpecError(OpError):
    """A typed op spec that does not match its template (unknown check, bad params...)."""


@attrs.frozen
class Template:
    """A parametric check: ``factory(**params)`` returns the op function ``fn(task, output, ctx)``."""

    check: str
    kind: str
    factory: Callable[..., Callable] = attrs.field(eq=False, repr=False)
    params: Mapping[str, str] = attrs.field(factory=dict)  # param name -> type name in _TYPES
    description: str = ""
    family: str = ""
    # induce(cluster, good) -> list of params dicts worth trying, where cluster and good are lists
    # of (task, output) pairs: bad outputs to catch, and known-good outputs to stay clean on.
    induce: Callable[[list, list], list[dict[str, Any]]] | None = attrs.field(default=None, eq=False, repr=False)
    # the factory's version: its source and that of the helpers it `depends` on (core.source_version)
    version: str = attrs.field(default="", eq=False)
    # a peer-op template: its factory returns ``fn(task, mine, peers, ctx)`` over this observer's data
    observer: Any = attrs.field(default=None, eq=False, repr=False)
    # a syntax-presence check (a construct is present): the birth gate asks it for evidence of association
    presence: bool = False

    def schema(self) -> dict[str, Any]:
        """A JSON-schema-like description (shown to synthesizers)."""
        return {
            "check": self.check,
            "kind": self.kind,
            "family": self.family,
            "params": dict(self.params),
            "description": self.description,
            **({"peers": True} if self.observer is not None else {}),
        }


TEMPLATES: dict[str, Template] = {}


def template(
    check: str,
    *,
    kind: str,
    params: Mapping[str, str] | None = None,
    description: str = "",
    family: str = "",
    induce: Callable[[list, list], list[dict[str, Any]]] | None = None,
    depends: tuple[Dependency, ...] = (),
    observer: Any = None,
    presence: bool = False,
) -> Callable:
    """Register a check template: ``@template("forbids_call", kind="static", params={"name": "str"})``.

    ``depends`` names the modules or helpers the check's verdict depends on besides the factory
    (as for ``@op``): their source goes into the version of every op made from the template.
    ``observer`` (a :class:`vx.ops.core.Observer`) makes it a peer-op template: the factory then
    returns ``fn(task, mine, peers, ctx)`` (see :func:`vx.ops.core.peer_op`). ``presence`` marks a
    syntax-presence check (the birth gate asks more evidence of it: :mod:`vx.evolve.lifecycle`)."""
    if kind not in TIERS:
        raise SpecError(f"template {check!r}: kind must be one of {TIERS}")
    for p, t in (params or {}).items():
        if t not in _TYPES:
            raise SpecError(f"template {check!r}: parameter {p!r} has unknown type {t!r}")

    def wrap(factory: Callable) -> Callable:
        TEMPLATES[check] = Template(
            check,
            kind,
            factory,
            dict(params or {}),
            description or (factory.__doc__ or "").strip().split("\n")[0],
            family,
            induce,
            source_version(factory, depends),
            observer,
            presence,
        )
        return factory

    return wrap


def inducer(check: str) -> Callable:
    """Attach an inducer to a registered template: ``@inducer("forbids_call") def f(cluster, good): ...``.

    An inducer proposes parameter sets for its template from a cluster of bad outputs and a set of
    known-good outputs (both lists of (task, output) pairs); the offline synthesizer tries each.
    """

    def wrap(fn: Callable) -> Callable:
        if check not in TEMPLATES:
            raise SpecError(f"inducer for unknown template {check!r}")
        TEMPLATES[check] = attrs.evolve(TEMPLATES[check], induce=fn)
        return fn

    return wrap


def templates_for(family: str | None = None) -> list[Template]:
    """Registered templates of a family (templates with no family apply to all)."""
    return [t for t in TEMPLATES.values() if family is None or t.family in ("", family)]


def canonical_json(spec: Mapping[str, Any]) -> str:
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_name(spec: Mapping[str, Any]) -> str:
    """The default op name of a spec: ``<check>__<short hash of its params>``."""
    digest = hashlib.sha256(canonical_json(spec.get("params", {})).encode()).hexdigest()[:6]
    return re.sub(r"[^A-Za-z0-9_]", "_", f"{spec['check']}__{digest}")


def validate_spec(spec: Any) -> dict[str, Any]:
    """Check a spec against its template; returns the normalised spec or raises SpecError."""
    if not isinstance(spec, Mapping):
        raise SpecError(f"an op spec must be a JSON object, got {type(spec).__name__}")
    missing = [k for k in ("kind", "check", "params", "detects") if k not in spec]
    if missing:
        raise SpecError(f"op spec {dict(spec)!r} lacks {', '.join(missing)}")
    check = spec["check"]
    if check not in TEMPLATES:
        import difflib

        near = difflib.get_close_matches(str(check), TEMPLATES, n=3)
        hint = f" — did you mean {', '.join(near)}?" if near else ""
        raise SpecError(f"unknown check template {check!r}{hint} (known: {', '.join(sorted(TEMPLATES))})")
    tpl = TEMPLATES[check]
    if spec["kind"] != tpl.kind:
        raise SpecError(f"check {check!r} is of kind {tpl.kind!r}, not {spec['kind']!r}")
    params = spec["params"]
    if not isinstance(params, Mapping):
        raise SpecError(f"params of {check!r} must be an object")
    unknown = set(params) - set(tpl.params)
    if unknown:
        raise SpecError(
            f"check {check!r} has no parameter(s) {', '.join(sorted(unknown))}; "
            f"it takes {', '.join(tpl.params) or 'none'}"
        )
    lacking = set(tpl.params) - set(params)
    if lacking:
        raise SpecError(f"check {check!r} needs parameter(s) {', '.join(sorted(lacking))}")
    for p, t in tpl.params.items():
        v = params[p]
        if not isinstance(v, _TYPES[t]) or (t in ("int", "float") and isinstance(v, bool)):
            raise SpecError(f"parameter {p!r} of {check!r} must be {t}, got {v!r}")
    if not isinstance(spec["detects"], str) or not spec["detects"]:
        raise SpecError("an op spec's 'detects' must name a failure class")
    out = {k: spec[k] for k in ("kind", "check", "params", "detects")}
    out["params"] = json.loads(canonical_json(params))
    for k in ("name", "description"):
        if k in spec:
            out[k] = spec[k]
    return out


def describe_params(params: Mapping[str, Any]) -> str:
    """A spec's parameters for people: ``klass = large, min_calls = 3`` (values as JSON, short)."""
    parts = []
    for key, value in sorted(params.items()):
        text = value if isinstance(value, str) else canonical_json(value)
        parts.append(f"{key} = {text if len(text) <= 60 else text[:57] + '...'}")
    return ", ".join(parts) or "no parameters"


def op_from_spec(spec: Mapping[str, Any], *, status: str = "active", provenance: Mapping[str, Any] | None = None) -> Op:
    """Instantiate a typed spec as an Op. Same spec → same name and version."""
    s = validate_spec(spec)
    s["name"] = s.get("name") or spec_name(s)
    tpl = TEMPLATES[s["check"]]
    fn = tpl.factory(**s["params"])
    body = {k: s[k] for k in ("kind", "check", "params", "detects")}
    base = canonical_json(body) + (tpl.version or source_version(tpl.factory))
    if tpl.observer is not None:
        base += f":{tpl.observer.name}:{tpl.observer.version}"
    version = hashlib.sha256(base.encode()).hexdigest()[:12]
    recipe = Recipe(rebuild_spec_op, {"spec": s, "template_module": getattr(tpl.factory, "__module__", None)})
    return Op(
        name=s["name"],
        fn=fn,
        tier=s["kind"],
        detects=s["detects"],
        description=s.get("description") or f"{tpl.description} ({describe_params(s['params'])})",
        version=version,
        provenance=dict(provenance or {"origin": "spec"}),
        status=status,
        spec=s,
        uses_llm=s["kind"] == "judge",
        observer=tpl.observer,
        recipe=recipe,
    )


def rebuild_spec_op(data: Mapping[str, Any], *, status: str, provenance: Mapping[str, Any] | None) -> Op:
    """An op made from a spec, rebuilt in another process (its `Recipe`): the module that registers its
    check template is imported first, then the spec is instantiated as where it was sent from."""
    if data.get("template_module"):
        importlib.import_module(data["template_module"])
    return op_from_spec(data["spec"], status=status, provenance=provenance)


def spec_to_json(op: Op) -> str:
    if op.spec is None:
        raise SpecError(f"op {op.name!r} is a Python op, not a typed spec")
    return canonical_json(op.spec)
