"""The tools family: tool-using agents graded by the calls they make.

A task offers functions (BFCL's function-doc dialect, :mod:`.dialect`) and asks a question; an output is
the agent's answer -- text as a model wrote it, or structured calls -- read by one model-independent
decoder (:mod:`.decode`). ``pack.PACK`` (``"tools"``) grades single-turn answers against the docs and
against the other attempts at the same question; ``data/`` builds families from BFCL's data.
"""
