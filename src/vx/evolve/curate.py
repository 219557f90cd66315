"""Curate (docs/design.md §6, step 4): retire the active ops that hurt, promote the shadows that help.

An op retires only on evidence of harm for longer than the grace (`vx.evolve.lifecycle.update_streaks`):
it fires on a dev item labelled pass, or removing it from the incumbent raises S *before its size cost*
(a leaf's cost is not harm: every zero-effect op would otherwise "raise S" by 0.001 when removed).
"""

from __future__ import annotations

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.printer import to_text
from vx.evolve.compose import Elite, prune_ops
from vx.evolve.lifecycle import Event, marginals, promotable, update_streaks
from vx.evolve.objective import Objective
from vx.evolve.state import RunSetup, RunState, canonical_columns, copy_records

__all__ = ["curate", "evidence_of_harm"]


def evidence_of_harm(state: RunState, setup: RunSetup, obj: Objective) -> dict[str, str]:
    """Evidence that an active op hurts, by op (the only grounds for retiring it; a zero marginal on
    the ten dev items is not): it fires on a dev item labelled pass that the root leaves open, or it
    is in the incumbent and removing it raises S."""
    out: dict[str, str] = {}
    dev_pass = obj.data.dev & (setup.dev_p >= 0.5) & obj.decide
    for name in state.selectable(setup.root):
        hits = np.flatnonzero((state.matrix.column(name) == 1) & dev_pass).tolist()
        if hits:
            ids = ", ".join(setup.items[i].id for i in hits[:3]) + (" …" if len(hits) > 3 else "")
            out[name] = f"fires on {len(hits)} dev item(s) labelled pass ({ids})"
    names = [n for n in state.incumbent.op_names() if n != setup.root]
    if len(names) > 1:
        pruned = [(n, p) for n in names if (p := prune_ops(state.incumbent, [n])) is not None]
        scores = obj.score([state.incumbent] + [p for _, p in pruned])
        merit = np.round(scores.objective + scores.cost, 12)  # leaf cost is not harm: S before its size cost
        base = float(merit[0])
        for k, (n, _p) in enumerate(pruned, 1):
            after = float(merit[k])
            if scores.selectable[k] and after > base:
                out.setdefault(
                    n, f"removing it from the incumbent raises S (before the size cost) from {base:.4f} to {after:.4f}"
                )
    return out


def curate(state: RunState, setup: RunSetup, r: int, obj: Objective) -> tuple[list[Event], RunState]:
    """Retire the active ops with evidence of harm past the grace, one at a time, then promote the shadows
    that raise dev agreement. Returns the events and the curated state (records, pool, incumbent, elites)."""
    policy = setup.policy
    records, pool = copy_records(state.records), state.pool.copy()
    state = attrs.evolve(state, records=records, pool=pool)
    events: list[Event] = []
    margins = marginals(obj, state.incumbent)
    harm = evidence_of_harm(state, setup, obj)
    distinct = state.incumbent.op_names()
    protected = frozenset({setup.root} if setup.root else set()) | (
        frozenset(distinct) if len(distinct) == 1 else frozenset()
    )
    due = update_streaks(records, margins, harm, policy=policy, protected=protected)
    # Retire one op at a time -- the one whose retirement leaves the best incumbent (then by name) --
    # and measure the others' harm again on what is left: "removing it raises S" is a property of
    # the incumbent, and no longer holds of a second op once the first is gone.
    retired: list[str] = []
    while due:
        options = []
        for name in due:
            node: Node | None = state.incumbent
            if node is not None and name in node.op_names():
                node = prune_ops(node, [name]) if len(node.op_names()) > 1 else None
            if node is None:
                continue
            options.append((name, node))
        if not options:
            break
        after = obj.score([node for _, node in options])
        prec = np.nan_to_num(after.precision, nan=-1.0) if after.precision is not None else np.zeros(len(options))
        # the retirement that leaves the best incumbent; ties: the higher estimated precision, then the name
        k = min(
            range(len(options)),
            key=lambda i: (-round(float(after.objective[i]), 12), -round(float(prec[i]), 12), options[i][0]),
        )
        name, incumbent = options[k]
        state = attrs.evolve(state, incumbent=incumbent)
        retired.append(name)
        rec = records[name]
        rec.status = "retired"
        pool.set_status(name, "retired")
        events.append(
            Event(
                r,
                name,
                "retired",
                "retired",
                f"{harm[name]}, for {rec.streak} rounds (grace {policy.grace})",
                {"marginal": rec.marginal, "harm": harm[name], "streak": rec.streak},
            )
        )
        harm_now = evidence_of_harm(state, setup, obj)
        for other in due:
            if other != name and other not in harm_now:  # no longer harmful once this one went
                records[other].streak = 0
        due = [n for n in due if n != name and n in harm_now]
    if retired:
        elites: list[Elite] = []
        for e in state.elites:
            pruned = prune_ops(e.node, retired)
            if pruned is not None and all(e2.node != pruned for e2 in elites):
                elites.append(attrs.evolve(e, node=pruned))
        state = attrs.evolve(state, elites=tuple(elites))
    # promotion of shadows whose verdicts raise dev agreement (never a baseline: it is compared with, not used)
    shadows = sorted(n for n, rec in records.items() if rec.status == "shadow" and not pool[n].baseline)
    for s, before, after_dev, trial in promotable(obj, state.incumbent, shadows):
        records[s].status = "active"
        pool.set_status(s, "active")
        events.append(
            Event(
                r,
                s,
                "promoted",
                "active",
                "adding it to the incumbent raises dev agreement",
                {"a_dev_before": before, "a_dev_after": after_dev, "trial": to_text(trial)},
            )
        )
    return events, attrs.evolve(state, matrix=state.matrix.select_ops(canonical_columns(pool, setup.root)))
