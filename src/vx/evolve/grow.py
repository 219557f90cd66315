"""Grow (docs/design.md §6, step 2): clusters → typed specs from the synthesizers → ops through the birth gate.

Every proposal is built, applied to every train and dev item, and admitted or rejected by
`vx.evolve.lifecycle.admission_reason` (the birth gate, its known-good pseudo-positives, redundancy);
each outcome is an `Event` with its evidence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine that holds the run's state (the phases are its steps)
    from vx.evolve.loop import Evolution

import attrs
import numpy as np

from vx.evolve.lifecycle import Event, OpRecord, admission_reason, birth_gate
from vx.evolve.objective import Objective
from vx.evolve.sense import Sensed
from vx.evolve.synthesize import Cluster, SynthesisRequest, family_templates
from vx.ops.core import Op
from vx.ops.specs import TEMPLATES, SpecError, op_from_spec

__all__ = ["Growth", "admit", "grow", "known_good", "propose"]


@attrs.frozen
class Growth:
    """The Grow step's outcome: ops born and rejected, with their events."""

    born: int = 0
    rejected: int = 0
    events: tuple[Event, ...] = ()


def known_good(ev: Evolution, obj: Objective) -> tuple[tuple[Any, Any], ...]:
    """What inducers may treat as good: dev outputs labelled pass and the dev golden references
    (when a reference is an output of the same kind). Unlabeled train items only enter the gate."""
    good = []
    for i in np.flatnonzero(obj.data.dev).tolist():
        it = ev.items[i]
        task = ev.view.tasks[it.task]
        if ev.dev_p[i] >= 0.5:
            good.append((task, it.output))
        if it.reference is not None and type(it.reference) is type(it.output):
            good.append((task, it.reference))
    return tuple(good)


def grow(ev: Evolution, r: int, obj: Objective, clusters: list[Cluster], sensed: Sensed) -> Growth:
    """Cluster → propose → admit: every synthesizer's specs for every cluster, built, applied and gated."""
    if not clusters:
        return Growth()
    proposals, events = propose(ev, r, obj, clusters)
    if not proposals:
        return Growth(events=tuple(events))
    born, rejected, admitted_events = admit(ev, r, obj, proposals, sensed.gaps, sensed.inc_codes)
    return Growth(born, rejected, tuple(events + admitted_events))


def propose(
    ev: Evolution, r: int, obj: Objective, clusters: list[Cluster]
) -> tuple[list[tuple[dict[str, Any], Cluster, str]], list[Event]]:
    """Every synthesizer's typed specs for every cluster, new names only (failures are events)."""
    req_args = (
        known_good(ev, obj),
        tuple(t.schema() for t in family_templates(ev.template_families)),
        tuple(ev.pool.catalog()),
        ev.taxonomy,
        ev.template_families,
    )
    events: list[Event] = []
    proposals: list[tuple[dict[str, Any], Cluster, str]] = []
    seen: set[str] = set()
    for cl in clusters:
        good, templates, catalog, taxonomy, tags = req_args
        req = SynthesisRequest(ev.view.name, cl, good, templates, catalog, taxonomy, tags)
        for synth in ev.synthesizers:
            try:
                specs = synth.propose(req)
            except Exception as exc:  # a synthesizer failure costs this cluster, not the run
                events.append(
                    Event(
                        r,
                        f"<{synth.name}>",
                        "rejected",
                        "",
                        f"synthesizer failed: {exc}",
                        {"cluster": cl.failure_class},
                    )
                )
                continue
            for check, err in getattr(synth, "last_errors", ()) or ():
                events.append(
                    Event(
                        r,
                        f"<{synth.name}:{check}>",
                        "rejected",
                        "",
                        f"inducer failed: {err}",
                        {"cluster": cl.failure_class},
                    )
                )
            for spec in specs:
                name = str(spec.get("name") or "")
                if not name or name in seen or name in ev.tried or name in ev.pool:
                    continue
                seen.add(name)
                proposals.append((spec, cl, synth.name))
    return proposals, events


def admit(
    ev: Evolution,
    r: int,
    obj: Objective,
    proposals: list[tuple[dict[str, Any], Cluster, str]],
    gaps: np.ndarray,
    inc_codes: np.ndarray,
) -> tuple[int, int, list[Event]]:
    """Build each proposal, apply it to every train+dev item, and admit it through the birth gate
    and the redundancy rule (`vx.evolve.lifecycle.admission_reason`). Returns (born, rejected,
    events)."""
    events: list[Event] = []
    trial = ev.pool.copy()
    built: list[tuple[Op, dict[str, Any], Cluster, str]] = []
    rejected = 0
    for spec, cl, sname in proposals:
        ev.tried.add(spec["name"])
        try:
            o = op_from_spec(
                spec,
                status="active",
                provenance={"origin": "synthesized", "round": r, "cluster": cl.failure_class, "synthesizer": sname},
            )
        except (SpecError, TypeError, ValueError) as exc:
            rejected += 1
            events.append(
                Event(
                    r, spec["name"], "rejected", "", f"invalid spec: {exc}", {"spec": spec, "cluster": cl.failure_class}
                )
            )
            continue
        trial.add(o)
        built.append((o, o.spec, cl, sname))
    if not built:
        return 0, rejected, events

    ev.on_status(f"round {r}: applying {len(built)} synthesized op(s)")
    new = ev._apply([o.name for o, *_ in built], pool=trial)
    labelled_good = obj.data.dev & (ev.dev_p >= 0.5)
    unlabeled_good = ev.train_mask & obj.cons_pass & (inc_codes == 0) & ~gaps
    pseudo_positive = obj.evidence.known_good() if obj.evidence is not None else None
    index = {it.id: i for i, it in enumerate(ev.items)}
    item_tasks = np.array([it.task for it in ev.items], dtype=object)
    existing_names = [n for n in ev.matrix.op_names if ev.records[n].status != "retired"]
    existing_cols = [ev.matrix.column(n) for n in existing_names]
    admitted: list[str] = []
    for o, spec, cl, sname in built:
        column = new.column(o.name)
        cmask = np.zeros(len(ev.items), dtype=bool)
        cmask[[index[i] for i in cl.items]] = True
        tpl = TEMPLATES.get(str(spec.get("check"))) if isinstance(spec, Mapping) else None
        gate = birth_gate(
            column,
            cmask,
            labelled_good,
            unlabeled_good,
            tolerance=ev.policy.good_tolerance,
            min_support=ev.policy.min_support,
            presence=bool(tpl is not None and tpl.presence),
            cluster_tasks=item_tasks,
            presence_tolerance=ev.policy.presence_tolerance,
            presence_lift=ev.policy.presence_lift,
            pseudo_positive=pseudo_positive,
            pseudo_positive_tolerance=ev.policy.pseudo_positive_tolerance,
        )
        evidence = {"spec": spec, "cluster": cl.summary(), "synthesizer": sname, **gate.evidence()}
        same = (np.stack(existing_cols) == column).mean(axis=1) if existing_cols else np.zeros(0)
        reason = admission_reason(gate, same, existing_names, ev.policy)
        if reason:
            rejected += 1
            events.append(Event(r, o.name, "rejected", "", reason, evidence))
            continue
        status = "active" if (cl.anchored or not ev.policy.shadow_tier) else "shadow"
        ev.pool.add(o.with_status(status))
        ev.records[o.name] = OpRecord(o.name, status, "synthesized", r)
        ev.specs[o.name] = dict(spec)
        existing_names.append(o.name)
        existing_cols.append(column)
        admitted.append(o.name)
        events.append(Event(r, o.name, "born", status, "anchored miss" if cl.anchored else "unlabeled gap", evidence))
    if admitted:
        ev.matrix = ev.matrix.with_ops(new.select_ops(admitted))
        ev._reorder()
    return len(admitted), rejected, events
