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


@attrs.frozen
class Similarity:
    """A family's behaviour clusters: ``clusters(task, observations)`` groups the indices of the
    observations (made by the observer named ``observer``) of the attempts at one task; every index is
    in exactly one cluster."""

    observer: str
    clusters: Clusters = attrs.field(eq=False, repr=False)
    #: one line naming what "behaves alike" means, for explanations ("identical answers on ...")
    description: str = ""

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


__all__ = ["Clusters", "Similarity"]
