"""Grow-step synthesis: clustering misses and gaps, the `Synthesizer` interface, the offline
template synthesizer.

**Clustering.** Each miss (a dev item the incumbent passes though its label is fail) and each gap
(a train item on which the active pool abstains entirely or splits) is put in a failure class:
the op pack's ``classify_failure(task, output, meta)`` when the pack defines one and it returns a
class, otherwise the item's *signature* — the sorted names of the selectable ops that fire on it
(``sig:none`` when none does). A cluster is *anchored* when it holds at least one miss. Clusters
smaller than ``min_cluster`` are not recurring and are skipped.

**Synthesizer.** ``propose(request) -> list of typed op specs`` (docs/design.md §3): JSON objects
``{"kind", "check", "params", "detects", "name"?}``. The engine builds, applies and gates them.
`TemplateSynthesizer` is the offline one: for every check template of the family that has an
inducer it asks ``induce(cluster, good)`` for parameter sets and turns each into a spec named
``syn_<check>__<hash>`` detecting the cluster's failure class.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from vx.ops.specs import SpecError, spec_name, templates_for

__all__ = ["Cluster", "SynthesisRequest", "Synthesizer", "TemplateSynthesizer", "cluster_items", "family_templates"]


@attrs.frozen
class Cluster:
    """Items sharing one failure class. ``items`` are item ids; ``pairs`` the (task, output) of each."""

    failure_class: str
    items: tuple[str, ...]
    pairs: tuple[tuple[Mapping[str, Any], Any], ...] = attrs.field(eq=False, repr=False)
    anchored: bool = False  # holds at least one dev miss
    n_misses: int = 0
    n_gaps: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "failure_class": self.failure_class,
            "size": len(self.items),
            "anchored": self.anchored,
            "misses": self.n_misses,
            "gaps": self.n_gaps,
            "items": list(self.items[:10]),
        }


@attrs.frozen
class SynthesisRequest:
    """What a synthesizer sees for one cluster: its bad outputs, known-good outputs to stay clean
    on, the family's check templates and the current op catalog."""

    family: str
    cluster: Cluster
    good: tuple[tuple[Mapping[str, Any], Any], ...] = attrs.field(repr=False)
    templates: tuple[dict[str, Any], ...] = ()
    catalog: tuple[dict[str, Any], ...] = ()
    taxonomy: tuple[str, ...] = ()
    template_families: tuple[str, ...] = ()  # template tags to draw from (default: the family name)


@runtime_checkable
class Synthesizer(Protocol):
    """Authors typed op specs for one cluster."""

    name: str

    def propose(self, request: SynthesisRequest) -> list[dict[str, Any]]: ...


def _safe_class(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "unknown"


@attrs.define
class TemplateSynthesizer:
    """Offline synthesis from the family's parametric check templates and their inducers."""

    per_template: int = 4
    per_cluster: int = 12
    name: str = "templates"
    last_errors: list[tuple[str, str]] = attrs.field(factory=list)  # (check, error) of the last call

    def propose(self, request: SynthesisRequest) -> list[dict[str, Any]]:
        cluster = list(request.cluster.pairs)
        good = list(request.good)
        specs: list[dict[str, Any]] = []
        self.last_errors: list[tuple[str, str]] = []
        for tpl in family_templates(request.template_families or (request.family,)):
            if tpl.induce is None:
                continue
            try:
                proposals = tpl.induce(cluster, good) or []
            except Exception as exc:  # an inducer bug must not stop evolution: skip it, report it
                self.last_errors.append((tpl.check, f"{type(exc).__name__}: {exc}"))
                continue
            for params in list(proposals)[: self.per_template]:
                spec = {
                    "kind": tpl.kind,
                    "check": tpl.check,
                    "params": dict(params),
                    "detects": _safe_class(request.cluster.failure_class),
                }
                try:
                    spec["name"] = "syn_" + spec_name(spec)
                except (KeyError, TypeError, SpecError):
                    continue
                specs.append(spec)
                if len(specs) >= self.per_cluster:
                    return specs
        return specs


def family_templates(tags: Iterable[str]) -> list:
    """Check templates registered under any of ``tags`` (or under no family), by check name."""
    found = {}
    for tag in tags:
        for t in templates_for(tag):
            found[t.check] = t
    return [found[k] for k in sorted(found)]


def cluster_items(
    entries: Sequence[tuple[str, Mapping[str, Any], Any, Mapping[str, Any], bool, str]],
    classify: Callable | None,
    *,
    min_cluster: int = 2,
    max_items: int = 24,
) -> list[Cluster]:
    """Group ``(item id, task, output, meta, is_miss, signature)`` entries by failure class.

    Returns recurring clusters (at least ``min_cluster`` items), largest first, ties by class
    name; each keeps at most ``max_items`` items (misses first, then by item id)."""
    groups: dict[str, list[tuple[str, Mapping[str, Any], Any, bool]]] = {}
    for item_id, task, output, meta, is_miss, signature in entries:
        cls = None
        if classify is not None:
            try:
                cls = classify(task, output, meta)
            except Exception:
                cls = None
        key = str(cls) if cls else signature
        groups.setdefault(key, []).append((item_id, task, output, is_miss))
    clusters = []
    for key, members in groups.items():
        if len(members) < min_cluster:
            continue
        members.sort(key=lambda m: (not m[3], m[0]))
        n_miss = sum(1 for m in members if m[3])
        kept = members[:max_items]
        clusters.append(
            Cluster(
                key,
                tuple(m[0] for m in kept),
                tuple((m[1], m[2]) for m in kept),
                n_miss > 0,
                n_miss,
                len(members) - n_miss,
            )
        )
    clusters.sort(key=lambda c: (-c.n_misses, -len(c.items), c.failure_class))
    return clusters
