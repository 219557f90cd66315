"""vx's own error types: every error vx raises on purpose derives from :class:`VxError`.

A ``VxError`` carries a message written for a person (which file, which line, what to do); the
command line prints it without a traceback and exits non-zero. Anything else that escapes is a bug
in vx. The layers add their own subclasses where they are raised (``vx.dsl.parse.VxSyntaxError``,
``vx.ops.core.OpError``, ``vx.families.family.FamilyError``, ``vx.llm.client.LLMError``, ...);
the kinds shared by several families are defined here once.

The sandbox (:mod:`vx.sandbox`) imports nothing from vx, so its own errors (``SandboxUnavailable``,
``ProtocolError``) do not derive from ``VxError``: the callers that use the sandbox turn them into
verdicts or into vx errors at that boundary.
"""

from __future__ import annotations


class VxError(Exception):
    """Base of every error vx raises on purpose (the message is for people)."""


class DataError(VxError):
    """A data file is missing, malformed or unusable; the message says which file and what to do."""


class BuildError(VxError):
    """A family cannot be built as asked (too few items for a split, no usable sources...)."""


class NotKeptError(VxError):
    """What was computed could not be written (a full disk, a quota, a file that became read-only): the
    message says where, and what was kept; the command line exits 4 after showing what it computed."""


class MutationError(VxError, ValueError):
    """An output cannot be mutated (it does not parse, or lacks what the mutation needs)."""


class ArgumentError(VxError, ValueError):
    """A Python API call got an argument it cannot use (a NaN timeout, ``jobs="2"``, a string where a
    list of outputs belongs, an unknown task id); the message names the argument and what it takes."""


class MissingDependency(VxError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


__all__ = ["ArgumentError", "BuildError", "DataError", "MissingDependency", "MutationError", "VxError"]
