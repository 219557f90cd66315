"""Which attempts at one task behave alike: a family's behaviour clusters, read from a peer op's observations.

Several attempts at a task that behave identically (the same answers on the same inputs, the same query
results on the same databases) support each other: an attempt many others agree with is more often right
than one alone (the idea of MBR-exec's plurality pick and of CodeT's consensus sets). Only the family
knows what "behaves alike" means, so a pack says it with a :class:`Similarity`: the name of the
:class:`~vx.ops.core.Observer` whose observations it reads, and ``clusters(task, observations)``, which
groups the indices of a task's observations. A pack passes it as ``Pack(similarity=...)``; its pools
carry it (``OpPool.similarity``), and ranking (:mod:`vx.selection`) reads it to give every attempt its
*support*: the size of its behaviour cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

Clusters = Callable[[Mapping[str, Any], Sequence[Any]], Sequence[Sequence[int]]]
Support = Callable[[Mapping[str, Any], Sequence[Any]], Sequence[float]]


@attrs.frozen
class Similarity:
    """A family's behaviour clusters: ``clusters(task, observations)`` groups the indices of the
    observations (made by the observer named ``observer``) of the attempts at one task; every index is
    in exactly one cluster."""

    observer: str
    clusters: Clusters = attrs.field(eq=False, repr=False)
    #: one line naming what "behaves alike" means, for explanations ("identical answers on ...")
    description: str = ""
    #: optional, ``(task, observations) -> support``: per observation, 1 (itself) plus, for every other
    #: attempt, the share of the inputs on which it behaves alike (1 for an identical one): a softer support
    #: than the cluster size, where attempts that differ on one input out of fifty still support each other
    agreement: Support | None = attrs.field(default=None, eq=False, repr=False)

    def sizes(self, task: Mapping[str, Any], observations: Sequence[Any]) -> list[int]:
        """Per observation, the size of its cluster (itself included). A grouping that leaves an index
        out, or puts one in two clusters, is a ValueError naming the observer."""
        groups = [list(c) for c in self.clusters(task, list(observations))]
        out = [0] * len(observations)
        for group in groups:
            for i in group:
                if not 0 <= i < len(out) or out[i]:
                    raise ValueError(
                        f"the {self.observer!r} clusters put index {i} in no valid place (out of range or twice)"
                    )
                out[i] = len(group)
        if any(s == 0 for s in out):
            raise ValueError(f"the {self.observer!r} clusters leave attempt(s) out: every attempt is in one cluster")
        return out

    def support(self, task: Mapping[str, Any], observations: Sequence[Any]) -> list[float]:
        """Per observation, its support among the others: the soft ``agreement`` where the family gives one,
        else the size of its cluster (:meth:`sizes`). Every value is at least 1 (the attempt itself)."""
        if self.agreement is None:
            return [float(x) for x in self.sizes(task, observations)]
        out = [float(x) for x in self.agreement(task, list(observations))]
        if len(out) != len(observations) or any(not (x >= 1.0) for x in out):
            raise ValueError(f"the {self.observer!r} agreement must give every attempt a support of at least 1")
        return out


__all__ = ["Clusters", "Similarity", "Support"]
