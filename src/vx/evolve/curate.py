"""Curate (docs/design.md §6, step 4): retire the active ops that hurt, promote the shadows that help.

An op retires only on evidence of harm for longer than the grace (`vx.evolve.lifecycle.update_streaks`):
it fires on a dev item labelled pass, or removing it from the incumbent raises S *before its size cost*
(a leaf's cost is not harm: every zero-effect op would otherwise "raise S" by 0.001 when removed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine that holds the run's state (the phases are its steps)
    from vx.evolve.loop import Evolution

import attrs
import numpy as np

from vx.dsl.printer import to_text
from vx.evolve.compose import prune_ops
from vx.evolve.lifecycle import Event, marginals, promotable, update_streaks
from vx.evolve.objective import Objective

__all__ = ["curate", "evidence_of_harm"]


def evidence_of_harm(ev: Evolution, obj: Objective) -> dict[str, str]:
    """Evidence that an active op hurts, by op (the only grounds for retiring it; a zero marginal on
    the ten dev items is not): it fires on a dev item labelled pass that the root leaves open, or it
    is in the incumbent and removing it raises S."""
    out: dict[str, str] = {}
    dev_pass = obj.data.dev & (ev.dev_p >= 0.5) & obj.decide
    for name in ev._selectable():
        hits = np.flatnonzero((ev.matrix.column(name) == 1) & dev_pass).tolist()
        if hits:
            ids = ", ".join(ev.items[i].id for i in hits[:3]) + (" …" if len(hits) > 3 else "")
            out[name] = f"fires on {len(hits)} dev item(s) labelled pass ({ids})"
    names = [n for n in ev.incumbent.op_names() if n != ev.root]
    if len(names) > 1:
        pruned = [(n, p) for n in names if (p := prune_ops(ev.incumbent, [n])) is not None]
        scores = obj.score([ev.incumbent] + [p for _, p in pruned])
        merit = np.round(scores.objective + scores.cost, 12)  # leaf cost is not harm: S before its size cost
        base = float(merit[0])
        for k, (n, _p) in enumerate(pruned, 1):
            after = float(merit[k])
            if scores.selectable[k] and after > base:
                out.setdefault(
                    n, f"removing it from the incumbent raises S (before the size cost) from {base:.4f} to {after:.4f}"
                )
    return out


def curate(ev: Evolution, r: int, obj: Objective, events: list[Event]) -> None:
    margins = marginals(obj, ev.incumbent)
    harm = evidence_of_harm(ev, obj)
    distinct = ev.incumbent.op_names()
    protected = frozenset({ev.root} if ev.root else set()) | (
        frozenset(distinct) if len(distinct) == 1 else frozenset()
    )
    due = update_streaks(ev.records, margins, harm, policy=ev.policy, protected=protected)
    # Retire one op at a time -- the one whose retirement leaves the best incumbent (then by name) --
    # and measure the others' harm again on what is left: "removing it raises S" is a property of
    # the incumbent, and no longer holds of a second op once the first is gone.
    retired: list[str] = []
    while due:
        options = []
        for name in due:
            node = ev.incumbent
            if name in node.op_names():
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
        name, ev.incumbent = options[k]
        retired.append(name)
        rec = ev.records[name]
        rec.status = "retired"
        ev.pool.set_status(name, "retired")
        events.append(
            Event(
                r,
                name,
                "retired",
                "retired",
                f"{harm[name]}, for {rec.streak} rounds (grace {ev.policy.grace})",
                {"marginal": rec.marginal, "harm": harm[name], "streak": rec.streak},
            )
        )
        harm_now = evidence_of_harm(ev, obj)
        for other in due:
            if other != name and other not in harm_now:  # no longer harmful once this one went
                ev.records[other].streak = 0
        due = [n for n in due if n != name and n in harm_now]
    if retired:
        elites = []
        for e in ev.elites:
            node = prune_ops(e.node, retired)
            if node is not None and all(e2.node != node for e2 in elites):
                elites.append(attrs.evolve(e, node=node))
        ev.elites = elites
    # promotion of shadows whose verdicts raise dev agreement (never a baseline: it is compared with, not used)
    shadows = sorted(n for n, rec in ev.records.items() if rec.status == "shadow" and not ev.pool[n].baseline)
    for s, before, after, trial in promotable(obj, ev.incumbent, shadows):
        ev.records[s].status = "active"
        ev.pool.set_status(s, "active")
        events.append(
            Event(
                r,
                s,
                "promoted",
                "active",
                "adding it to the incumbent raises dev agreement",
                {"a_dev_before": before, "a_dev_after": after, "trial": to_text(trial)},
            )
        )
    ev._reorder()
