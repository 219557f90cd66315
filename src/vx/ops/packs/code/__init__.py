"""The code family: Python function synthesis graded by hidden unit tests.

Data side (no op definitions here): ``tasks`` (HumanEval / HumanEval+ / MBPP+ loaders),
``examples`` (visible example calls), ``mutate`` (AST mutation engine), ``compare`` (evalplus's
output comparison), ``groundtruth`` (hidden tests run in the sandbox), ``teacher`` (dev labels),
``build`` (family builders behind ``vx data build``).

Op pack (what ``packs = ["vx.ops.packs.code"]`` in a family.toml loads): ``ops`` (the root
``parses`` and the seed ops, ``TAXONOMY``, ``classify_failure``), ``templates`` (check templates
and inducers for synthesis, registered on import under the template family ``"code"``),
``probe`` (probe inputs for the exec ops).
"""

from vx.ops.packs.code import templates as _templates  # noqa: F401  (registers the check templates)
from vx.ops.packs.code.ops import OPS, ROOT, TAXONOMY, classify_failure


def describe_environment() -> str:
    """Where this pack's exec ops run model code: the sandbox layer in use."""
    from vx.ops.packs.code.ops import sandbox

    return sandbox().describe().strip().splitlines()[0]


#: The tag this pack's check templates are registered under (``vx.ops.specs.templates_for``).
TEMPLATE_FAMILY = _templates.FAMILY

__all__ = ["OPS", "ROOT", "TAXONOMY", "TEMPLATE_FAMILY", "classify_failure", "describe_environment"]
