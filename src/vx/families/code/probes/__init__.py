"""The code family's probes: the inputs a candidate is run on, derived from its task's visible examples.

``probe`` (the probe classes, visible examples, the probe list of a task) · ``domain`` (the input domain
inferred from the visible examples: predicates every example satisfies) · ``generate`` (type-aware
mutations of the examples within that domain) · ``draw`` (inputs drawn by hypothesis strategies built
from it) · ``store`` (generated probes kept on disk between processes).
Nothing here runs candidate code: the exec ops (:mod:`vx.families.code.ops`) run the probes in the sandbox.
"""
