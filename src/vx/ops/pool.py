"""Op pools: the ordered set of ops a family (or an evolution run) works with.

Packs -- how a family's ops are found and loaded -- are in :mod:`vx.families.pack`.

An `OpPool` is the ordered set of ops a family (or an evolution run) works with, each with a
lifecycle status: active (selectable), shadow (runs and records verdicts, not selectable) or
retired (kept for the record, never run).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from typing import Any

from vx.ops.core import Op, OpError


class OpPool:
    """An ordered, named collection of ops with lifecycle status and one root."""

    def __init__(self, ops: Iterable[Op] = (), root: str | None = None) -> None:
        self._ops: dict[str, Op] = {}
        for o in ops:
            self.add(o)
        self.root_name = root
        self.environment: list = []  # the packs' describe_environment callables
        #: which attempts at a task behave alike (the pack's `vx.ops.similarity.Similarity`; None: unknown)
        self.similarity: Any = None
        if root is not None and root not in self._ops:
            raise OpError(f"root op {root!r} is not in the pool ({', '.join(self._ops)})")

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
            raise OpError(
                f"two different ops are named {o.name!r} "
                f"({existing.provenance.get('module', '?')} and {o.provenance.get('module', '?')})"
            )
        self._ops[o.name] = o

    def set_status(self, name: str, status: str) -> None:
        self._ops[name] = self[name].with_status(status)

    def by_status(self, *statuses: str) -> list[Op]:
        return [o for o in self._ops.values() if o.status in statuses]

    def runnable(self) -> list[Op]:
        """Ops that are applied to items: active and shadow, plus the root (whatever its status)."""
        return [o for o in self._ops.values() if o.status in ("active", "shadow") or o.name == self.root_name]

    def selectable(self) -> list[str]:
        """Names an evolved expression may use: active ops other than the root (a baseline is never
        active)."""
        return [o.name for o in self._ops.values() if o.status == "active" and o.name != self.root_name]

    def copy(self) -> OpPool:
        pool = OpPool(self._ops.values(), self.root_name)
        pool.environment = list(self.environment)
        pool.similarity = self.similarity
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
            {
                "name": o.name,
                "tier": o.tier,
                "status": o.status,
                "detects": o.detects,
                "description": o.description,
                "version": o.version,
                "root": o.name == self.root_name,
                "origin": o.provenance.get("origin", "?"),
                "baseline": o.baseline,
            }
            for o in self._ops.values()
        ]
