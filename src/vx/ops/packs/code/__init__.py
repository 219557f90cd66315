"""The code family: Python function synthesis graded by hidden unit tests.

Data side (no op definitions here): ``tasks`` (HumanEval / HumanEval+ / MBPP+ loaders),
``examples`` (visible example calls), ``mutate`` (AST mutation engine), ``compare`` (evalplus's
output comparison), ``groundtruth`` (hidden tests run in the sandbox), ``teacher`` (dev labels),
``build`` (family builders behind ``vx data build``).
"""
