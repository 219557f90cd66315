"""vx inside other tools: an Inspect AI scorer (:mod:`vx.integrations.inspect`) and a TRL reward
function (:mod:`vx.integrations.trl`). Each needs its own extra (``vx-verifiers[inspect]``,
``vx-verifiers[trl]``); nothing here is imported by the rest of vx. What they share -- loading the
verifier, finding an output's task, the failure capsule as text -- is :mod:`vx.integrations.common`.
"""
