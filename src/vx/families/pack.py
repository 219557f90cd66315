"""The Pack contract: what a task family plugs into vx, and how packs are found and loaded.

A **pack** is one object, :class:`Pack`, that carries everything vx needs to know about a family's
detectors:

- ``ops`` -- its drawback detectors (``vx.ops.Op``, made with ``@op``), root first by convention;
- ``root`` -- the name of the fixed, non-evolving root op (code parses, report has a title);
- ``taxonomy`` -- the closed list of failure classes its ops and synthesized ops may detect;
- ``classify_failure(task, output, meta) -> class | None`` -- how a failing item is put in a class
  (misses and gaps are clustered by it before synthesis);
- ``templates`` -- the tags its check templates are registered under (``@template(family=...)``),
  the parametric checks the synthesizer may instantiate;
- ``describe_environment() -> str`` -- one line naming where its exec ops run (shown by ``vx eval``);
- ``task_schema`` -- a JSON Schema of its task records (``tasks.jsonl`` lines), checked when a family
  loads (built with :func:`vx.families.schema.task_schema`; None: only ``id`` is checked);
- ``version`` -- a hash of its ops' versions (each op's version covers its source and everything it
  declares with ``@op(depends=...)``: see :func:`vx.ops.core.source_version`);
- ``ratchet`` -- a :class:`RatchetHooks`: what the skill loop (``vx ratchet``) needs to put a frozen
  solver to work on the family's tasks -- the solver's instructions and view of a task, how an output
  is read from its reply, the format contract the final judge is told, the family's ground truth, and
  optionally a scripted demo (None: the ratchet's generic defaults and ``[ratchet] ground_truth``).

Packs are referred to by name in a family's ``family.toml`` (``packs = ["code"]``) and found, in
order, as: a ``.py`` file relative to the family directory; a name registered in the entry-point
group ``vx.ops`` (an ``module:attribute`` naming a :class:`Pack`, or a module); one of vx's own
families (:data:`BUILTIN`, so a source checkout works without installed metadata); or an importable
module name. A module given instead of a :class:`Pack` exposes ``PACK``, or -- the older, still
supported shape -- its module-level ``Op`` objects (``OPS`` if it lists them) with optional
``ROOT``, ``TAXONOMY``, ``classify_failure``, ``TEMPLATE_FAMILY``, ``describe_environment`` and
``RATCHET``.
See ``docs/families.md`` for writing a third-party family.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import re
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import attrs

from vx.errors import VxError
from vx.ops.core import Op, OpError
from vx.ops.pool import OpPool
from vx.ops.similarity import Similarity
from vx.ops.specs import op_from_spec

ENTRY_POINT_GROUP = "vx.ops"

#: vx's own packs, by name (also registered as entry points; this table serves source checkouts).
BUILTIN: dict[str, str] = {
    "code": "vx.families.code.pack:PACK",
    "code-judge": "vx.families.code.pack:JUDGE",
    "sql": "vx.families.sql.pack:PACK",
    "sql-judge": "vx.families.sql.pack:JUDGE",
    "report": "vx.families.report.pack:PACK",
    "report-judge": "vx.families.report.pack:JUDGE",
    "tools": "vx.families.tools.pack:PACK",
    "tools-multi": "vx.families.tools.pack:MULTI",
}

#: Module names of the packs before families got their own home (family.toml files still name them).
LEGACY_NAMES: dict[str, str] = {
    "vx.ops.packs.code": "code",
    "vx.ops.packs.code.judge": "code-judge",
    "vx.ops.packs.sql.ops": "sql",
    "vx.ops.packs.sql": "sql",
    "vx.ops.packs.sql.judge": "sql-judge",
    "vx.ops.packs.report.ops": "report",
    "vx.ops.packs.report": "report",
    "vx.ops.packs.report.judge": "report-judge",
}

Classifier = Callable[[Mapping[str, Any], Any, "Mapping[str, Any] | None"], "str | None"]


class PackError(OpError):
    """A pack that cannot be found or loaded."""


# --------------------------------------------------------------------------- the skill loop's hooks


class GroundTruthUnavailable(VxError):
    """A family's ground truth that cannot be built here (a dataset file missing or of another version);
    the message says what to do."""


class FamilyTruth(Protocol):
    """A family's strongest reference, as `RatchetHooks.ground_truth` builds it at ratchet time.

    ``grade_many`` grades (task id, output) pairs; each result is a bool, a score in [0, 1] (a pass at
    0.5 or more) or a mapping ``{"passed": bool, "score": float, "checks": [[name, message], ...]}``, the
    checks naming what failed (what a failure capsule shows the skill synthesizer). ``describe`` says
    where it comes from (``{"kind": "hidden-tests", "dataset_version": ...}``) for the run file."""

    def grade_many(self, pairs: Sequence[tuple[str, Any]]) -> Sequence[Any]: ...

    def describe(self) -> dict[str, Any]: ...


def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


def _ops(items: Iterable[Op]) -> tuple[Op, ...]:
    return tuple(items)


def _lessons(items: Iterable[DemoLesson]) -> tuple[DemoLesson, ...]:
    return tuple(items)


@attrs.frozen
class DemoLesson:
    """A lesson the scripted demo's skill synthesizer writes: after a failure capsule whose checks (as
    ``name: message`` lines) match ``after_failure``, or -- with no capsule at all -- after a passed
    attempt whose output matches ``after_practice`` (regular expressions; None: never)."""

    name: str
    lesson: str
    when: str = "always"
    after_failure: str | None = None
    after_practice: str | None = None


@attrs.frozen
class DemoScript:
    """An offline stand-in for the solver (``vx ratchet --demo``): ``solve(task, lessons)`` is the reply
    to a task given the names of the lessons in the prompt; ``lessons`` is the scripted synthesizer's
    repertoire. Labelled as scripted wherever a demo run is shown."""

    solve: Callable[[Mapping[str, Any], Sequence[str]], str] = attrs.field(eq=False)
    lessons: tuple[DemoLesson, ...] = attrs.field(converter=_lessons)
    description: str = ""


@attrs.frozen
class RatchetHooks:
    """What the skill loop (`vx ratchet`) needs from a family (see the module docstring).

    - ``solver_system`` -- the frozen solver's instructions (its system prompt);
    - ``format_contract`` -- what the family's pipeline requires of an output, told to the task-aware
      final judge so that required syntax is not mistaken for a defect;
    - ``render_task(task) -> str`` -- the solver's view of a task: only what a verifier may see, never a
      reference, hidden test or gold query;
    - ``extract_output(reply) -> output`` -- the output graded, read from the solver's reply;
    - ``ground_truth(family, data_dirs) -> FamilyTruth`` -- the family's strongest reference, rebuilt at
      ratchet time from what the family's provenance names (``data_dirs``: ``--data-dir``, then
      ``$VX_DATA_DIR``); raises `GroundTruthUnavailable` when it cannot be; None: the family names one
      in ``[ratchet] ground_truth``;
    - ``demo`` -- a `DemoScript` for ``vx ratchet --demo`` (None: the family has no demo).

    family.toml's ``[ratchet] solver_system`` / ``format_contract`` / ``ground_truth`` override these."""

    name: str
    solver_system: str
    format_contract: str
    render_task: Callable[[Mapping[str, Any]], str] = attrs.field(eq=False)
    extract_output: Callable[[str], str] = attrs.field(eq=False)
    ground_truth: Callable[[Any, Sequence[Path]], FamilyTruth] | None = attrs.field(default=None, eq=False)
    demo: DemoScript | None = attrs.field(default=None, eq=False)


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def first_block(text: str, languages: tuple[str, ...] = ()) -> str:
    """The body of a reply's first fenced block (preferring one tagged with a language of `languages`),
    else the whole reply, stripped: how most families read an output from a solver's reply."""
    blocks = _FENCE.findall(text or "")
    for lang, body in blocks:
        if lang.lower() in languages:
            return body.strip("\n")
    if blocks:
        return blocks[0][1].strip("\n")
    return (text or "").strip()


@attrs.frozen
class Pack:
    """A family's detectors and what synthesis needs to know about them (see the module docstring)."""

    name: str
    ops: tuple[Op, ...] = attrs.field(converter=_ops)
    root: str | None = None
    taxonomy: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    classify_failure: Classifier | None = attrs.field(default=None, eq=False, repr=False)
    templates: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    describe_environment: Callable[[], str] | None = attrs.field(default=None, eq=False, repr=False)
    description: str = ""
    task_schema: Mapping[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    #: ``(task) -> dict`` of what the pack's ops derive from a task (e.g. the code family's probe inputs),
    #: shown by ``vx explain``; None: nothing to show
    describe_task: Callable[[Mapping[str, Any]], dict[str, Any]] | None = attrs.field(
        default=None, eq=False, repr=False
    )
    #: ``(task) -> None``: build and keep what the pack's ops derive from a task before any output of it is
    #: graded (the code family's generated probes: in this process and in the probe store), so that a
    #: long-running grader (`vx serve --warm`) pays it once at start; None: nothing to prepare
    prepare_task: Callable[[Mapping[str, Any]], None] | None = attrs.field(default=None, eq=False, repr=False)
    #: ``(spec, data_dir) -> TaskSource | None``: the tasks a dataset name (or a dataset's own file) names,
    #: for grading samples files without a family (`vx grade --tasks`; :mod:`vx.families.sources`)
    sources: Callable[[str, Any], Any] | None = attrs.field(default=None, eq=False, repr=False)
    #: the dataset names ``sources`` knows (shown in help and errors)
    datasets: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    #: the language of the outputs (a Pygments lexer name: "python", "sql", "markdown"), for showing
    #: them highlighted (`vx explain`); None: plain text
    output_language: str | None = None
    #: what the skill loop (``vx ratchet``) needs from the family; None: the ratchet's generic defaults
    ratchet: RatchetHooks | None = attrs.field(default=None, eq=False, repr=False)
    #: the op whose CLEAN verdict says the output does what its task visibly asks (the code family's
    #: visible examples, SQL's "it executes"): half of the evidence that an output is correct, for the
    #: label-free false-alarm estimates (`vx.evolve.estimates`); None: the family has none
    gate: str | None = None
    #: a baseline peer op whose CLEAN verdict says every other attempt at the task behaves as this one
    #: does (the other half of that evidence, where a task has three or more attempts); None: none
    agreement: str | None = None
    #: which attempts at a task behave alike, from a peer op's observations (`vx.ops.similarity`): the
    #: support of an attempt when a verifier ranks a task's attempts (`vx.selection`); None: unknown
    similarity: Similarity | None = attrs.field(default=None, eq=False, repr=False)
    #: ``(reply) -> output``: the output graded when a trainer sends a model's whole reply as text (`vx serve`'s
    #: /openrlhf and /verl); None: the reply's first fenced block, else the whole reply (most families)
    read_reply: Callable[[str], Any] | None = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        names = [o.name for o in self.ops]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise PackError(f"pack {self.name!r} defines op(s) {', '.join(dup)} twice")
        if self.root is not None and self.root not in names:
            raise PackError(f"pack {self.name!r}: its root {self.root!r} is not one of its ops ({', '.join(names)})")

    @property
    def version(self) -> str:
        """A hash of the pack's op versions (changes when any op's code or dependencies change)."""
        digest = hashlib.sha256()
        for o in self.ops:
            digest.update(f"{o.name}={o.version};".encode())
        return digest.hexdigest()[:12]

    @classmethod
    def from_module(cls, module: ModuleType, name: str | None = None) -> Pack:
        """A pack from a module: its ``PACK``, or its module-level ops (the older pack shape)."""
        pack = getattr(module, "PACK", None)
        if isinstance(pack, Pack):
            return pack
        ops = getattr(module, "OPS", None)
        if ops is None:
            ops = [v for v in vars(module).values() if isinstance(v, Op)]
        ops = list(ops)
        root = getattr(module, "ROOT", None)
        if root is None:
            roots = [o.name for o in ops if o.provenance.get("root")]
            root = roots[0] if roots else None
        tag = getattr(module, "TEMPLATE_FAMILY", None)
        classify = getattr(module, "classify_failure", None)
        env = getattr(module, "describe_environment", None)
        schema = getattr(module, "TASK_SCHEMA", None)
        hooks = getattr(module, "RATCHET", None)
        return cls(
            name or module.__name__,
            ops,
            root,
            tuple(getattr(module, "TAXONOMY", ()) or ()),
            classify if callable(classify) else None,
            (tag,) if isinstance(tag, str) else (),
            env if callable(env) else None,
            (module.__doc__ or "").strip().split("\n")[0],
            schema if isinstance(schema, Mapping) else None,
            ratchet=hooks if isinstance(hooks, RatchetHooks) else None,
        )

    @classmethod
    def combine(cls, packs: Iterable[Pack], name: str = "") -> Pack:
        """One pack made of several (a family's ``packs`` list): ops in order, the first declared
        root, the union of taxonomies and template tags, the first classifier, task schema, ratchet
        hooks and reply reader, every environment."""
        packs = list(packs)
        ops: list[Op] = []
        seen: dict[str, Op] = {}
        for p in packs:
            for o in p.ops:
                if o.name in seen:
                    if seen[o.name].version == o.version:
                        continue
                    raise PackError(
                        f"two different ops are named {o.name!r} "
                        f"({seen[o.name].provenance.get('module', '?')} and {o.provenance.get('module', '?')})"
                    )
                seen[o.name] = o
                ops.append(o)
        envs = [p.describe_environment for p in packs if p.describe_environment is not None]
        classify = next((p.classify_failure for p in packs if p.classify_failure is not None), None)
        describe_task = next((p.describe_task for p in packs if p.describe_task is not None), None)
        preparers = [p.prepare_task for p in packs if p.prepare_task is not None]

        def prepare_task(task: Mapping[str, Any]) -> None:
            for fn in preparers:
                fn(task)

        openers = [p.sources for p in packs if p.sources is not None]

        def environment() -> str:
            return "; ".join(str(fn()) for fn in envs)

        def sources(spec: str, data_dir: Any = None) -> Any:
            return next((found for fn in openers if (found := fn(spec, data_dir)) is not None), None)

        return cls(
            name or "+".join(p.name for p in packs),
            ops,
            next((p.root for p in packs if p.root), None),
            tuple(dict.fromkeys(t for p in packs for t in p.taxonomy)),
            classify,
            tuple(dict.fromkeys(t for p in packs for t in p.templates)),
            environment if len(envs) > 1 else (envs[0] if envs else None),
            "",
            next((p.task_schema for p in packs if p.task_schema is not None), None),
            describe_task=describe_task,
            prepare_task=(prepare_task if len(preparers) > 1 else preparers[0]) if preparers else None,
            sources=sources if openers else None,
            output_language=next((p.output_language for p in packs if p.output_language), None),
            datasets=tuple(dict.fromkeys(d for p in packs for d in p.datasets)),
            ratchet=next((p.ratchet for p in packs if p.ratchet is not None), None),
            gate=next((p.gate for p in packs if p.gate), None),
            agreement=next((p.agreement for p in packs if p.agreement), None),
            similarity=next((p.similarity for p in packs if p.similarity is not None), None),
            read_reply=next((p.read_reply for p in packs if p.read_reply is not None), None),
        )

    def pool(self, *, root: str | None = None, specs: Iterable[Mapping[str, Any]] = ()) -> OpPool:
        """An op pool of this pack's ops plus typed specs, with ``root`` (default: the pack's)."""
        pool = OpPool(self.ops)
        if self.describe_environment is not None:
            pool.environment.append(self.describe_environment)
        for s in specs:
            pool.add(op_from_spec(s, status=s.get("status", "active") if isinstance(s, Mapping) else "active"))
        pool.root_name = root or self.root
        pool.similarity = self.similarity
        if pool.root_name is not None and pool.root_name not in pool:
            raise PackError(pool.unknown_message(pool.root_name) + " (the family's root)")
        return pool


# --------------------------------------------------------------------------- finding packs


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    mod_name = f"vx_pack_{path.stem}_{digest}"
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise PackError(f"{path}: cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # needed for pickling ops into worker processes
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # report the pack's own error, with where it happened
        del sys.modules[mod_name]
        raise PackError(f"{path}: importing the op pack failed: {type(exc).__name__}: {exc}") from exc
    return module


def _resolve(target: str, ref: str) -> Any:
    """``module:attribute`` or ``module`` → the object."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise PackError(missing_module_message(ref, exc.name)) from exc
    return getattr(module, attr) if attr else module


def missing_module_message(ref: str, module: str | None) -> str:
    """What to install when pack `ref` needs a module that is missing: the extra of vx's own family
    (``sql`` and ``sql-judge`` need ``[sql]``), else the package that provides the module."""
    family = ref.split("-", 1)[0]
    if ref in BUILTIN and family in ("code", "sql", "report", "tools"):
        how = f"pip install 'vx-verifiers[{family}]'"
    else:
        how = f"install the package that provides {module}"
    return f"op pack {ref!r} needs a module that is not installed: {module} ({how})"


def _as_pack(obj: Any, ref: str) -> Pack:
    if isinstance(obj, Pack):
        return obj
    if isinstance(obj, ModuleType):
        return Pack.from_module(obj, ref)
    raise PackError(f"op pack {ref!r} is a {type(obj).__name__}, not a vx Pack or a module")


def load_pack(ref: str, base_dir: Path | None = None) -> Pack:
    """Find and load one pack by name, entry point, ``.py`` file (relative to base_dir) or module."""
    if ref.endswith(".py") or "/" in ref:
        path = Path(ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise PackError(f"op pack file {path} does not exist")
        return Pack.from_module(_import_file(path), path.stem)
    if ref in LEGACY_NAMES:
        warnings.warn(
            f"op pack {ref!r} is now called {LEGACY_NAMES[ref]!r}; update the family's packs list",
            DeprecationWarning,
            stacklevel=2,
        )
        ref = LEGACY_NAMES[ref]
    eps = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if ref in eps:
        try:
            obj = eps[ref].load()
        except ModuleNotFoundError as exc:
            raise PackError(missing_module_message(ref, exc.name)) from exc
        return _as_pack(obj, ref)
    if ref in BUILTIN:
        return _as_pack(_resolve(BUILTIN[ref], ref), ref)
    try:
        module = importlib.import_module(ref)
    except ModuleNotFoundError as exc:
        if exc.name and ref.startswith(exc.name):
            near = difflib.get_close_matches(ref, sorted(set(eps) | set(BUILTIN)), n=3)
            hint = (
                f"; did you mean {', '.join(near)}?"
                if near
                else f"; known packs: {', '.join(sorted(set(eps) | set(BUILTIN)))}"
            )
            raise PackError(
                f"op pack {ref!r} is neither an importable module nor a registered "
                f"'{ENTRY_POINT_GROUP}' entry point{hint}"
            ) from exc
        raise PackError(missing_module_message(ref, exc.name)) from exc
    return _as_pack(module, ref)


def load_packs(refs: Iterable[str], *, base_dir: Path | None = None, name: str = "") -> Pack:
    """A family's packs, loaded and combined into one (errors name the pack)."""
    packs = []
    for ref in refs:
        pack = load_pack(ref, base_dir)
        if not pack.ops:
            raise PackError(f"op pack {ref!r} defines no ops (decorate functions with @vx.ops.op)")
        packs.append(pack)
    return Pack.combine(packs, name)


def pool_from_packs(
    refs: Iterable[str],
    *,
    base_dir: Path | None = None,
    root: str | None = None,
    specs: Iterable[Mapping[str, Any]] = (),
) -> OpPool:
    """An op pool from pack references (what a family's ``packs``, ``root`` and ``specs`` make)."""
    return load_packs(refs, base_dir=base_dir).pool(root=root, specs=specs)


def known_packs() -> list[str]:
    """Pack names that :func:`load_pack` finds without a path: entry points and vx's own."""
    return sorted({ep.name for ep in entry_points(group=ENTRY_POINT_GROUP)} | set(BUILTIN))
