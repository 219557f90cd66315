"""The skill loop and co-evolution with the verifier: the Double Ratchet (DESIGN §7).

A frozen ``solver`` works on a family's training tasks with a bounded bank of skills routed into its
prompts; a grader (the family's ground truth, any .vx verifier, the co-evolving verifier, or a collapsed
always-pass control) grades every attempt; failed attempts become failure capsules from which the
``skill_synthesizer`` writes short named lessons; contributions are measured with a randomized holdout and
drive eviction; the bank rolls back when the held-out score — the family's locked tasks, graded by its
ground truth — drops. Co arms alternate verifier phases (the metric loop) with skill phases on the papers'
front-loaded schedule. An independent ``final_judge`` compares final outputs with round-0 outputs pairwise.

Modules: config (arms, schedule, options) · skills (bank, contributions, eviction) · routing · tasks
(solver prompts, output extraction, format contracts) · graders (verifier, always-pass, ground truth) ·
roles (solver, skill synthesizer, final judge) · loop (one arm's rounds) · coevolve (verifier phases) ·
store (the run file) · figures (lift, retention, judge win rates) · report (HTML) · run (`run_ratchet`,
`plan`).
"""

from vx.ratchet.config import ARMS, RatchetConfig, RatchetError, parse_schedule
from vx.ratchet.run import RatchetResult, plan, run_ratchet

__all__ = ["ARMS", "RatchetConfig", "RatchetError", "RatchetResult", "parse_schedule", "plan", "run_ratchet"]
