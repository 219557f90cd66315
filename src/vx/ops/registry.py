"""Op pools and op packs.

A *pack* is a Python module (importable name, or a .py file) whose module-level `Op` objects
(made with `@op`) are its ops, in definition order; it may name its root with ``ROOT = "name"``.
Third-party packs register under the entry-point group ``vx.ops`` (name → module), and a
family can then list them by entry-point name.

A pack may also define ``describe_environment() -> str``: one line naming where its exec ops run
(the code pack: the sandbox layer; the SQL pack: the warehouse), which `vx eval` prints.

An `OpPool` is the ordered set of ops a family (or an evolution run) works with, each with a
lifecycle status: active (selectable), shadow (runs and records verdicts, not selectable) or
retired (kept for the record, never run).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable, Iterator, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from vx.ops.core import Op, OpError
from vx.ops.specs import op_from_spec

ENTRY_POINT_GROUP = "vx.ops"


class PackError(OpError):
    """A pack that cannot be found or loaded."""


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


def import_pack(ref: str, base_dir: Path | None = None) -> ModuleType:
    """Import a pack by module name, entry-point name, or .py file path (relative to base_dir)."""
    if ref.endswith(".py") or "/" in ref:
        path = Path(ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.exists():
            raise PackError(f"op pack file {path} does not exist")
        return _import_file(path)
    eps = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if ref in eps:
        return eps[ref].load()
    try:
        return importlib.import_module(ref)
    except ModuleNotFoundError as exc:
        if exc.name and ref.startswith(exc.name):
            near = difflib.get_close_matches(ref, list(eps), n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise PackError(f"op pack {ref!r} is neither an importable module nor a registered "
                            f"'{ENTRY_POINT_GROUP}' entry point{hint}") from exc
        raise PackError(f"op pack {ref!r} needs a module that is not installed: {exc.name} "
                        f"(install the matching extra, e.g. pip install 'vx-verifiers[code]')") from exc


def pack_ops(module: ModuleType) -> tuple[list[Op], str | None]:
    """The ops a pack module defines (in definition order) and its declared root, if any."""
    ops = getattr(module, "OPS", None)
    if ops is None:
        ops = [v for v in vars(module).values() if isinstance(v, Op)]
    root = getattr(module, "ROOT", None)
    if root is None:
        roots = [o.name for o in ops if o.provenance.get("root")]
        root = roots[0] if roots else None
    return list(ops), root


class OpPool:
    """An ordered, named collection of ops with lifecycle status and one root."""

    def __init__(self, ops: Iterable[Op] = (), root: str | None = None) -> None:
        self._ops: dict[str, Op] = {}
        for o in ops:
            self.add(o)
        self.root_name = root
        self.environment: list = []  # the packs' describe_environment callables
        if root is not None and root not in self._ops:
            raise PackError(f"root op {root!r} is not in the pool ({', '.join(self._ops)})")

    # --- mapping protocol -------------------------------------------------------------------
    def __getitem__(self, name: str) -> Op:
        try:
            return self._ops[name]
        except KeyError:
            raise KeyError(self.unknown_message(name)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._ops

    def __iter__(self) -> Iterator[Op]:
        return iter(self._ops.values())

    def __len__(self) -> int:
        return len(self._ops)

    def unknown_message(self, name: str) -> str:
        near = difflib.get_close_matches(name, list(self._ops), n=3)
        hint = f" — did you mean {', '.join(near)}?" if near else ""
        return f"unknown op {name!r}{hint}"

    @property
    def names(self) -> list[str]:
        return list(self._ops)

    @property
    def root(self) -> Op | None:
        return self._ops.get(self.root_name) if self.root_name else None

    def add(self, o: Op, *, replace: bool = False) -> None:
        if o.name in self._ops and not replace:
            existing = self._ops[o.name]
            if existing.version == o.version:
                return
            raise PackError(f"two different ops are named {o.name!r} "
                            f"({existing.provenance.get('module', '?')} and {o.provenance.get('module', '?')})")
        self._ops[o.name] = o

    def set_status(self, name: str, status: str) -> None:
        self._ops[name] = self[name].with_status(status)

    def by_status(self, *statuses: str) -> list[Op]:
        return [o for o in self._ops.values() if o.status in statuses]

    def runnable(self) -> list[Op]:
        """Ops that are applied to items: active and shadow, plus the root (whatever its status)."""
        return [o for o in self._ops.values() if o.status in ("active", "shadow") or o.name == self.root_name]

    def selectable(self) -> list[str]:
        """Names an evolved expression may use: active ops other than the root."""
        return [o.name for o in self._ops.values() if o.status == "active" and o.name != self.root_name]

    def copy(self) -> OpPool:
        pool = OpPool(self._ops.values(), self.root_name)
        pool.environment = list(self.environment)
        return pool

    def describe_environment(self) -> list[str]:
        """What each pack says about where its ops run (errors are reported, not raised)."""
        out = []
        for fn in self.environment:
            try:
                out.append(str(fn()))
            except Exception as exc:  # an environment that cannot be set up: say why
                out.append(f"{getattr(fn, '__module__', '?')}: unavailable: {type(exc).__name__}: {exc}")
        return out

    def catalog(self) -> list[dict[str, Any]]:
        return [
            {"name": o.name, "tier": o.tier, "status": o.status, "detects": o.detects,
             "description": o.description, "version": o.version,
             "root": o.name == self.root_name, "origin": o.provenance.get("origin", "?")}
            for o in self._ops.values()
        ]

    @classmethod
    def from_packs(cls, refs: Iterable[str], *, base_dir: Path | None = None, root: str | None = None,
                   specs: Iterable[Mapping[str, Any]] = ()) -> OpPool:
        pool = cls()
        declared_root = None
        for ref in refs:
            module = import_pack(ref, base_dir)
            ops, pack_root = pack_ops(module)
            env = getattr(module, "describe_environment", None)
            if callable(env):
                pool.environment.append(env)
            if not ops:
                raise PackError(f"op pack {ref!r} defines no ops (decorate functions with @vx.ops.op)")
            for o in ops:
                pool.add(o)
            declared_root = declared_root or pack_root
        for s in specs:
            pool.add(op_from_spec(s, status=s.get("status", "active") if isinstance(s, Mapping) else "active"))
        pool.root_name = root or declared_root
        if pool.root_name is not None and pool.root_name not in pool:
            raise PackError(pool.unknown_message(pool.root_name) + " (the family's root)")
        return pool
