"""The code family: Python function synthesis graded by hidden unit tests.

``pack`` (its :class:`~vx.families.pack.Pack`: ``packs = ["code"]`` in a family.toml) · ``ops/``
(detectors: artifact, static, run, exec, peers, invariants, taxonomy, templates, judge) · ``probes/``
(the inputs the exec ops run: probe classes, the inferred domain, generation, drawing, budgets, the store)
· ``data/`` (``tasks`` HumanEval / HumanEval+ / MBPP+ loaders, ``mutate`` the AST mutation engine, ``groundtruth``
hidden tests run in the sandbox, ``teacher`` dev labels, ``samples`` model samples, ``split``, ``validate``,
``build`` the family builders behind ``vx data build``) · ``examples`` (visible example calls) and
``compare`` (evalplus's output comparison), shared by ops and data.
"""
