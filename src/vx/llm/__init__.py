"""LLM roles (docs/design.md §8): solver, teacher, composer, synthesizer, judge ops, final judge.

Every role is bound per call from the role-to-model table (`vx.llm.config`); every call goes
through one client (`vx.llm.client`: the official `anthropic` SDK, disk cache, retries with
backoff and jitter, bounded concurrency, a per-run token and USD budget, usage accounting).
Nothing offline depends on this package: the SDK is imported only when a call is made, and
with no ``ANTHROPIC_API_KEY`` every role is skipped (judge ops abstain) after one message.

Modules: ``config`` (role table) · ``cache`` (responses + usage ledger) · ``client`` ·
``judge`` (the ``judge`` op kind) · ``teacher`` · ``composer`` · ``synthesizer`` ·
``session`` (turning roles on for a run) · ``doctor`` (reachability, no tokens spent).
"""
