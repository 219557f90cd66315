"""Grow (docs/design.md §6, step 2): clusters → typed specs from the synthesizers → ops through the birth gate.

Every proposal is built, applied to every train and dev item, and admitted or rejected by
`vx.evolve.lifecycle.admission_reason` (the birth gate, its known-good pseudo-positives, redundancy);
each outcome is an `Event` with its evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.evolve.lifecycle import Event, OpRecord, admission_reason, birth_gate
from vx.evolve.objective import Objective
from vx.evolve.sense import Sensed
from vx.evolve.state import Apply, RunSetup, RunState, canonical_columns, copy_records
from vx.evolve.synthesize import Cluster, SynthesisRequest, Synthesizer, family_templates
from vx.ops.core import Op
from vx.ops.specs import TEMPLATES, SpecError, op_from_spec

__all__ = ["Growth", "admit", "grow", "known_good", "propose"]


@attrs.frozen
class Growth:
    """The Grow step's outcome: ops born and rejected, with their events."""

    born: int = 0
    rejected: int = 0
    events: tuple[Event, ...] = ()


Proposal = tuple[dict[str, Any], Cluster, str]  # (spec, the cluster it is for, the synthesizer's name)


def known_good(setup: RunSetup, obj: Objective) -> tuple[tuple[Any, Any], ...]:
    """What inducers may treat as good: dev outputs labelled pass and the dev golden references
    (when a reference is an output of the same kind). Unlabeled train items only enter the gate."""
    good = []
    for i in np.flatnonzero(obj.data.dev).tolist():
        it = setup.items[i]
        task = setup.tasks[it.task]
        if setup.dev_p[i] >= 0.5:
            good.append((task, it.output))
        if it.reference is not None and type(it.reference) is type(it.output):
            good.append((task, it.reference))
    return tuple(good)


def grow(
    state: RunState,
    setup: RunSetup,
    r: int,
    obj: Objective,
    clusters: Sequence[Cluster],
    sensed: Sensed,
    *,
    synthesizers: Sequence[Synthesizer],
    apply: Apply,
    say: Callable[[str], None] = lambda msg: None,
) -> tuple[Growth, RunState]:
    """Cluster → propose → admit: every synthesizer's specs for every cluster, built, applied and gated.
    Returns what grew and the state with the ops born (their records, specs and matrix columns)."""
    if not clusters:
        return Growth(), state
    proposals, events = propose(state, setup, r, obj, clusters, synthesizers)
    if not proposals:
        return Growth(events=tuple(events)), state
    born, rejected, admitted_events, state = admit(state, setup, r, obj, proposals, sensed, apply=apply, say=say)
    return Growth(born, rejected, tuple(events + admitted_events)), state


def propose(
    state: RunState,
    setup: RunSetup,
    r: int,
    obj: Objective,
    clusters: Sequence[Cluster],
    synthesizers: Sequence[Synthesizer],
) -> tuple[list[Proposal], list[Event]]:
    """Every synthesizer's typed specs for every cluster, new names only (failures are events)."""
    req_args = (
        known_good(setup, obj),
        tuple(t.schema() for t in family_templates(setup.template_families)),
        tuple(state.pool.catalog()),
        setup.taxonomy,
        setup.template_families,
    )
    events: list[Event] = []
    proposals: list[Proposal] = []
    seen: set[str] = set()
    for cl in clusters:
        good, templates, catalog, taxonomy, tags = req_args
        req = SynthesisRequest(setup.name, cl, good, templates, catalog, taxonomy, tags)
        for synth in synthesizers:
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
                if not name or name in seen or name in state.tried or name in state.pool:
                    continue
                seen.add(name)
                proposals.append((spec, cl, synth.name))
    return proposals, events


def admit(
    state: RunState,
    setup: RunSetup,
    r: int,
    obj: Objective,
    proposals: Sequence[Proposal],
    sensed: Sensed,
    *,
    apply: Apply,
    say: Callable[[str], None] = lambda msg: None,
) -> tuple[int, int, list[Event], RunState]:
    """Build each proposal, apply it to every train+dev item, and admit it through the birth gate
    and the redundancy rule (`vx.evolve.lifecycle.admission_reason`). Returns (born, rejected,
    events, the state with the ops born); every proposal's name is tried, admitted or not."""
    events: list[Event] = []
    tried = state.tried | {spec["name"] for spec, _, _ in proposals}
    trial = state.pool.copy()
    built: list[tuple[Op, dict[str, Any], Cluster, str]] = []
    rejected = 0
    for spec, cl, sname in proposals:
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
        built.append((o, dict(o.spec or {}), cl, sname))
    if not built:
        return 0, rejected, events, attrs.evolve(state, tried=tried)

    say(f"round {r}: applying {len(built)} synthesized op(s)")
    new = apply([o.name for o, *_ in built], trial)
    messages = {**state.messages, **new.messages}
    labelled_good = obj.data.dev & (setup.dev_p >= 0.5)
    unlabeled_good = setup.train_mask & obj.cons_pass & (sensed.inc_codes == 0) & ~sensed.gaps
    pseudo_positive = obj.evidence.known_good() if obj.evidence is not None else None
    index = {it.id: i for i, it in enumerate(setup.items)}
    item_tasks = np.array([it.task for it in setup.items], dtype=object)
    existing_names = [n for n in state.matrix.op_names if state.records[n].status != "retired"]
    existing_cols = [state.matrix.column(n) for n in existing_names]
    pool, records, specs = state.pool.copy(), copy_records(state.records), dict(state.specs)
    policy = setup.policy
    admitted: list[str] = []
    for o, spec, cl, sname in built:
        column = new.matrix.column(o.name)
        cmask = np.zeros(len(setup.items), dtype=bool)
        cmask[[index[i] for i in cl.items]] = True
        tpl = TEMPLATES.get(str(spec.get("check"))) if isinstance(spec, Mapping) else None
        gate = birth_gate(
            column,
            cmask,
            labelled_good,
            unlabeled_good,
            tolerance=policy.good_tolerance,
            min_support=policy.min_support,
            presence=bool(tpl is not None and tpl.presence),
            cluster_tasks=item_tasks,
            presence_tolerance=policy.presence_tolerance,
            presence_lift=policy.presence_lift,
            pseudo_positive=pseudo_positive,
            pseudo_positive_tolerance=policy.pseudo_positive_tolerance,
        )
        evidence = {"spec": spec, "cluster": cl.summary(), "synthesizer": sname, **gate.evidence()}
        same = (np.stack(existing_cols) == column).mean(axis=1) if existing_cols else np.zeros(0)
        reason = admission_reason(gate, same, existing_names, policy)
        if reason:
            rejected += 1
            events.append(Event(r, o.name, "rejected", "", reason, evidence))
            continue
        status = "active" if (cl.anchored or not policy.shadow_tier) else "shadow"
        pool.add(o.with_status(status))
        records[o.name] = OpRecord(o.name, status, "synthesized", r)
        specs[o.name] = dict(spec)
        existing_names.append(o.name)
        existing_cols.append(column)
        admitted.append(o.name)
        events.append(Event(r, o.name, "born", status, "anchored miss" if cl.anchored else "unlabeled gap", evidence))
    matrix = state.matrix
    if admitted:
        matrix = matrix.with_ops(new.matrix.select_ops(admitted)).select_ops(canonical_columns(pool, setup.root))
    state = attrs.evolve(state, pool=pool, records=records, specs=specs, tried=tried, messages=messages, matrix=matrix)
    return len(admitted), rejected, events, state
