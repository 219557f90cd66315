"""Ops (drawback detectors), typed specs, pools, families and their application.

Writing an op::

    from vx.ops import op, drawback, clean

    @op(tier="static", detects="print_instead_of_return")
    def prints_only(task, output, ctx):
        "The function prints its result instead of returning it."
        tree = ctx.artifact
        if tree is None:
            return None  # abstain: nothing to inspect
        ...
        return drawback("prints `x` but never returns") if bad else clean()
"""

from vx.dsl.verdict import Final, Verdict
from vx.ops.core import Context, Observer, Op, OpError, Result, abstain, clean, drawback, observer, op, peer_op
from vx.ops.specs import SpecError, op_from_spec, template

__all__ = [
    "Context",
    "Final",
    "Observer",
    "Op",
    "OpError",
    "Result",
    "SpecError",
    "Verdict",
    "abstain",
    "clean",
    "drawback",
    "observer",
    "op",
    "op_from_spec",
    "peer_op",
    "template",
]
