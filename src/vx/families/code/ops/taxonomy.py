"""The code family's closed failure taxonomy and the evidence-based failure classifier."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vx.families.code.ops import exec as X
from vx.families.code.ops import static as S
from vx.families.code.ops.artifact import artifact_of
from vx.ops.apply import output_too_large
from vx.ops.core import Context

#: The code family's closed list of failure classes (every op's ``detects`` is one of them, and
#: so is every mutation operator's failure class in :mod:`vx.families.code.data.mutate`).
TAXONOMY: tuple[str, ...] = (
    "does_not_parse",
    "wrong_entry_point",
    "wrong_signature",
    "reads_stdin",
    "hardcodes_example",
    "crash",
    "timeout",
    "returns_not_print_only",
    "returns_wrong_type",
    "fails_visible_example",
    "mutates_argument",
    "nondeterministic",
    "off_by_one",
    "wrong_logic",
    "missing_edge_case",
    "sabotaged_harness",  # the candidate kept vx from judging it (entry point removed, forged report...)
    "output_too_large",  # more than vx.ops.apply.MAX_OUTPUT_CHARS: judged without running an op
)

#: Seed ops in the order classify_failure consults them (most specific evidence first).
_CLASSIFY_ORDER = (
    "reads_stdin",
    "hardcodes_example",
    "undefined_name",
    "timeout",
    "crash",
    "returns_not_print_only",
    "returns_wrong_type",
    "mutates_argument",
    "nondeterministic",
    "fails_visible_example",
)


def classify_by_evidence(task: Mapping[str, Any], output: Any) -> str | None:
    """The failure class the seed ops see in a failing output (None: unknown): the root's problem,
    then the first seed op (in ``_CLASSIFY_ORDER``) that finds a drawback. Runs the sandbox at
    most once per call. Builder provenance (``meta``) is the pack's business: see
    :func:`vx.families.code.pack.classify_failure`."""
    if output_too_large(output) is not None:
        return "output_too_large"
    ctx = Context()
    art = artifact_of(task, output, ctx)
    if art.problem:
        return "wrong_entry_point" if art.tree is not None else "does_not_parse"
    seeds = {
        o.name: o
        for o in (
            S.reads_stdin,
            S.hardcodes_example,
            S.undefined_name,
            X.timeout,
            X.crash,
            X.returns_not_print_only,
            X.returns_wrong_type,
            X.mutates_argument,
            X.nondeterministic,
            X.fails_visible_example,
        )
    }
    for name in _CLASSIFY_ORDER:
        o = seeds[name]
        try:
            res = o(task, output, ctx)
        except Exception:  # the sandbox failed: no exec evidence for this item
            continue
        if int(res.verdict) == 1:
            run = ctx.get("exec")
            if getattr(run, "load", None) == "sabotaged":  # every exec op fires: name the real cause
                return "sabotaged_harness"
            return o.detects
    return None
