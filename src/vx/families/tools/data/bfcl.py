"""BFCL's own single-turn checker, imported without what it does not need, to re-derive labels.

``bfcl_eval.eval_checker.ast_eval.ast_checker`` is pure comparison code, but it imports
``bfcl_eval.constants.model_config`` for one table (whether a model's function-calling API sends
``math.factorial`` as ``math_factorial``), and that module imports every provider's SDK.
:func:`load_checker` imports the checker with a stand-in for that one module -- a table with two
entries, "names sent with dots" and "names sent with underscores", keyed by names without underscores
(the checker reads ``MODEL_CONFIG_MAPPING[model.replace("_", "/")]``) -- and removes the stand-in at
once, so nothing else ever sees it. With ``bfcl-eval`` not installed it says so (:class:`Unavailable`).

What the checker is fed is only what BFCL itself fed it: each model's own 2024 decoder output
(``output_decoded`` in the shared data), already plain data; no string of model output is ever
evaluated (the BFCL decoders that ``eval`` parts of an output are never imported). :func:`bfcl_label`
applies BFCL's rules around the checker: a decoder error fails an answer; a decoded answer that is not
a list of ``{function: {arguments}}`` fails; on a relevance question an answer passes when it decodes to
no call.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = ["Checker", "Unavailable", "bfcl_label", "is_call_list", "load_checker"]

_STAND_IN = "bfcl_eval.constants.model_config"
#: The checker's model names for "names sent with underscores" and "sent as written" (no underscores:
#: the checker turns "_" into "/" before it looks a model up).
DOTS_REPLACED, DOTS_KEPT = "vx-dots-replaced", "vx-dots-kept"


class Unavailable(Exception):
    """BFCL's checker cannot be imported here (the message says why and what to install)."""


@attrs.frozen
class _ModelConfig:
    underscore_to_dot: bool


@attrs.frozen
class Checker:
    """BFCL's AST checker and the package version it came from."""

    check: Callable[..., Mapping[str, Any]] = attrs.field(eq=False)
    python: Any  # bfcl_eval.constants.enums.Language.PYTHON
    version: str


def load_checker() -> Checker:
    """Import BFCL's AST checker without its provider SDKs (see the module docstring)."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("bfcl_eval")
        except PackageNotFoundError:
            found = version("bfcl-eval")
    except Exception as exc:
        raise Unavailable(
            "bfcl-eval is not installed (pip install --no-deps bfcl-eval mpmath): labels are the data's own"
        ) from exc
    name = "bfcl_eval.eval_checker.ast_eval.ast_checker"
    module = sys.modules.get(name)
    if module is None:
        had = sys.modules.get(_STAND_IN)
        stand_in = types.ModuleType(_STAND_IN)
        stand_in.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
        if had is None:
            sys.modules[_STAND_IN] = stand_in
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # a changed package: say so, never guess
            raise Unavailable(
                f"bfcl-eval {found}: its AST checker does not import ({type(exc).__name__}: {exc})"
            ) from exc
        finally:
            if had is None:
                sys.modules.pop(_STAND_IN, None)
    table = {DOTS_REPLACED.replace("_", "/"): _ModelConfig(True), DOTS_KEPT.replace("_", "/"): _ModelConfig(False)}
    module.MODEL_CONFIG_MAPPING = table  # type: ignore[attr-defined]  # the one table the checker reads
    from bfcl_eval.constants.enums import Language

    return Checker(module.ast_checker, Language.PYTHON, found)


def is_call_list(decoded: Any) -> bool:
    """BFCL's "function-calling format": a list of ``{function: {arguments}}`` (one key each)."""
    if not isinstance(decoded, list):
        return False
    return all(isinstance(x, dict) and len(x) == 1 and isinstance(next(iter(x.values())), dict) for x in decoded)


def _no_call(decoded: Any) -> bool:
    """BFCL's "empty output" on a relevance question: not a call list, [] or [{}]."""
    return not is_call_list(decoded) or len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


#: BFCL's checker category of each single-turn category (the shared files' names).
CHECKER_CATEGORY = {
    "simple": "simple",
    "multiple_function": "multiple",
    "parallel_function": "parallel",
    "parallel_multiple_function": "parallel_multiple",
}


def bfcl_label(
    checker: Checker,
    *,
    category: str,
    functions: list[Mapping[str, Any]],
    decoded: Any,
    decode_failed: bool,
    possible_answer: Any,
    dots_replaced: bool,
) -> tuple[bool, str]:
    """BFCL's verdict on one answer from its own decoder's output: (passes, error type or "")."""
    if category == "relevance":
        called = not decode_failed and not _no_call(decoded)
        return (not called, "relevance_error:decoder_success" if called else "")
    if decode_failed:
        return False, "ast_decoder:decoder_failed"
    if not is_call_list(decoded):
        return False, "ast_decoder:decoder_wrong_output_format"
    result = checker.check(
        functions,
        decoded,
        possible_answer,
        checker.python,
        CHECKER_CATEGORY.get(category, category),
        DOTS_REPLACED if dots_replaced else DOTS_KEPT,
    )
    return bool(result.get("valid")), "" if result.get("valid") else str(result.get("error_type", ""))
