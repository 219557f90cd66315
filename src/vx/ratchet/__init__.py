"""The skill loop and co-evolution with the verifier: the Double Ratchet (docs/design.md §7).

A frozen ``solver`` works on a family's training tasks with a bounded bank of skills routed into its
prompts; a grader (the family's ground truth, any .vx verifier, the co-evolving verifier, or a collapsed
always-pass control) grades every attempt; failed attempts become failure capsules from which the
``skill_synthesizer`` writes short named lessons; contributions are measured with a randomized holdout and
drive eviction. The family's locked tasks, graded by its ground truth, are split (seeded, disjoint) into a
rollback part — the bank rolls back when its score drops — and a report part that no loop reads, from which
the curves, lift and retention come (``protocol="papers"`` rolls back on the reported tasks instead). Co arms
alternate verifier phases (the metric loop) with skill phases on the papers' front-loaded schedule. An
independent ``final_judge`` compares final outputs with round-0 outputs pairwise. Everything family-specific
comes from the family's pack (`vx.families.pack.RatchetHooks`); this package names no family.

Modules: config (arms, schedule, protocol, options) · skills (bank, contributions, eviction) · routing · tasks
(the solver's side of a family, from its pack's hooks) · graders (verifier, always-pass, ground truth) ·
roles (solver, skill synthesizer, final judge) · loop (one arm's rounds, the held-out parts) · coevolve
(verifier phases) · store (the run file) · figures (lift, retention, judge win rates) · report (HTML) · demo
(scripted roles for ``--demo``) · run (`run_ratchet`, `heldout_parts`, `plan`).
"""

from vx.ratchet.config import ARMS, RatchetConfig, RatchetError, parse_schedule
from vx.ratchet.run import RatchetResult, heldout_parts, plan, run_ratchet

__all__ = [
    "ARMS",
    "RatchetConfig",
    "RatchetError",
    "RatchetResult",
    "heldout_parts",
    "parse_schedule",
    "plan",
    "run_ratchet",
]
