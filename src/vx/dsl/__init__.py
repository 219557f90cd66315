"""The vx expression language (no dependency on ops).

    verdict    Verdict (DRAWBACK / CLEAN / ABSTAIN) and Final (PASS / FAIL / ABSTAIN)
    ast        the immutable expression tree
    parse      text → tree, with VxSyntaxError as the only error
    printer    tree → canonical text; whole-file formatting
    semantics  the per-item reference interpreter (the executable specification)
    matrix     VerdictMatrix: items × ops as packed bitsets
    compile    BatchEvaluator: whole-dataset evaluation with a memo of shared subtrees
    check      static problems: unknown ops, duplicates, subtrees that never fire / are never clean

Import from the modules (``from vx.dsl.parse import parse``); this package module stays
empty so that importing one of them does not load the others.
"""
