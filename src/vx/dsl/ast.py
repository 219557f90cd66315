"""The vx expression tree: immutable, hashable, structurally compared nodes.

    OpRef(name)                            a named drawback detector (a leaf)
    Any(children)  All(children)           disjunction / conjunction over opining children
    Not(child)                             swaps DRAWBACK and CLEAN, keeps ABSTAIN
    Vote(k, children)                      at least k opining children fire
    WVote(threshold, children, weights)    weighted sum over opining children reaches threshold

Every node is valid by construction: combinators have at least one child, ``1 <= k <=
len(children)``, a weighted vote has one weight per child, op names are identifiers that are
not keywords, and every number is a ``Fraction`` with a finite decimal expansion (its
denominator is 2^a·5^b), so the canonical printer can always write it exactly. Building an
invalid node raises ``ValueError`` (or ``TypeError`` for a value of the wrong type).

Trees are addressed by *paths*: a tuple of child indices from the root, ``()`` being the root
itself. ``walk()`` lists ``(path, node)`` pairs in pre-order, ``at(path)`` fetches a subtree,
``replace_at(path, new)`` returns a new tree with that subtree replaced (the original is
untouched; unchanged subtrees are shared, so evaluator memos keep hitting).
"""

from __future__ import annotations

import re
import typing
from collections.abc import Iterable, Iterator
from decimal import Decimal
from fractions import Fraction
from typing import ClassVar

import attrs

__all__ = [
    "KEYWORDS",
    "IDENTIFIER",
    "Node",
    "OpRef",
    "Any",
    "All",
    "Not",
    "Vote",
    "WVote",
    "Path",
    "to_fraction",
    "is_finite_decimal",
]

#: Combinator keywords. They are reserved: no op may be named like one of them.
KEYWORDS: frozenset[str] = frozenset({"any", "all", "not", "vote", "wvote"})

#: What an op name looks like (docs/design.md §2).
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*\Z")

Path = tuple[int, ...]


def is_finite_decimal(value: Fraction) -> bool:
    """True when ``value`` has a finite decimal expansion (denominator 2^a·5^b)."""
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def to_fraction(value: object) -> Fraction:
    """Convert an int, Fraction, Decimal, decimal string or float to an exact ``Fraction``.

    Floats are read through their shortest repr (``0.1`` becomes 1/10, not the binary
    double), which is what a person writing the number meant.
    """
    if isinstance(value, bool):
        raise TypeError(f"a weight or threshold must be a number, not {value!r}")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"a weight or threshold must be finite, not {value!r}")
        result = Fraction(repr(value))
    elif isinstance(value, (int, Fraction, Decimal, str)):
        try:
            result = Fraction(value)
        except (ValueError, ZeroDivisionError, OverflowError) as exc:
            raise ValueError(f"not a number: {value!r}") from exc
    else:
        raise TypeError(f"a weight or threshold must be a number, not {type(value).__name__}")
    if not is_finite_decimal(result):
        raise ValueError(f"{result} has no finite decimal expansion; vx numbers must be exact decimals")
    return result


def _to_fractions(values: Iterable[object]) -> tuple[Fraction, ...]:
    return tuple(to_fraction(v) for v in values)


def _check_name(instance: object, attribute: object, value: typing.Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"an op name must be a string, not {type(value).__name__}")
    if not IDENTIFIER.match(value):
        raise ValueError(
            f"{value!r} is not a valid op name (letters, digits and _ . : -, not starting with a digit or punctuation)"
        )
    if value in KEYWORDS:
        raise ValueError(f"{value!r} is a reserved combinator keyword and cannot name an op")


def _nodes(children: Iterable[Node]) -> tuple[Node, ...]:
    return tuple(children)


def _check_children(instance: Node, attribute: object, value: tuple[Node, ...]) -> None:
    if not value:
        raise ValueError(f"({instance.HEAD}) needs at least one child")
    for child in value:
        if not isinstance(child, Node):
            raise TypeError(f"a child must be a vx Node, not {type(child).__name__}")


class Node:
    """Base of all expression nodes. Subclasses are frozen attrs classes."""

    __slots__ = ()
    HEAD: ClassVar[str] = ""

    # --- structure -------------------------------------------------------------------
    @property
    def children(self) -> tuple[Node, ...]:
        """The child nodes, left to right (empty for an op)."""
        return ()

    def with_children(self, children: Iterable[Node]) -> Node:
        """The same kind of node (same k / threshold / weights) over other children."""
        raise NotImplementedError  # pragma: no cover - every subclass overrides it

    # --- measures --------------------------------------------------------------------
    def walk(self) -> Iterator[tuple[Path, Node]]:
        """Every ``(path, node)`` in pre-order, the root first with path ``()``."""
        stack: list[tuple[Path, Node]] = [((), self)]
        while stack:
            path, node = stack.pop()
            yield path, node
            kids = node.children
            for i in range(len(kids) - 1, -1, -1):
                stack.append(((*path, i), kids[i]))

    def leaves(self) -> tuple[str, ...]:
        """OpRef names at the leaves, left to right, with repeats."""
        return tuple(node.name for _, node in self.walk() if isinstance(node, OpRef))

    def size(self) -> int:
        """Number of leaves (op occurrences, counting repeats)."""
        return sum(1 for _, node in self.walk() if isinstance(node, OpRef))

    def op_names(self) -> tuple[str, ...]:
        """Distinct op names used, sorted."""
        return tuple(sorted(set(self.leaves())))

    def depth(self) -> int:
        """Number of nodes on the longest root-to-leaf path: an op has depth 1."""
        return 1 + max((len(path) for path, _ in self.walk()), default=0)

    def node_count(self) -> int:
        """Number of nodes (leaves and combinators)."""
        return sum(1 for _ in self.walk())

    # --- addressing ------------------------------------------------------------------
    def at(self, path: Path) -> Node:
        """The subtree at ``path``. Raises ``IndexError`` for a path that does not exist."""
        node: Node = self
        for depth, index in enumerate(path):
            kids = node.children
            if not 0 <= index < len(kids):
                raise IndexError(f"path {tuple(path)!r} leaves the tree at step {depth}")
            node = kids[index]
        return node

    def replace_at(self, path: Path, new: Node) -> Node:
        """A new tree equal to this one except that the subtree at ``path`` is ``new``.

        Raises ``IndexError`` for a missing path; ``ValueError`` cannot occur because the
        number of children never changes.
        """
        if not isinstance(new, Node):
            raise TypeError(f"replacement must be a vx Node, not {type(new).__name__}")
        if not path:
            return new
        index, rest = path[0], path[1:]
        kids = self.children
        if not 0 <= index < len(kids):
            raise IndexError(f"path {tuple(path)!r} does not exist in this tree")
        replaced = kids[index].replace_at(rest, new)
        return self.with_children(kids[:index] + (replaced,) + kids[index + 1 :])

    def __str__(self) -> str:
        from vx.dsl.printer import to_text  # the printer depends on the tree, not vice versa

        return to_text(self)


@attrs.frozen(cache_hash=True)
class OpRef(Node):
    """A leaf: the verdict of the named op."""

    name: str = attrs.field(validator=_check_name)

    def with_children(self, children: Iterable[Node]) -> Node:
        if tuple(children):
            raise ValueError("an op has no children")
        return self


@attrs.frozen(cache_hash=True)
class Any(Node):
    """DRAWBACK if any opining child is a drawback, else CLEAN."""

    HEAD: ClassVar[str] = "any"
    children: tuple[Node, ...] = attrs.field(converter=_nodes, validator=_check_children)

    def with_children(self, children: Iterable[Node]) -> Node:
        return Any(children)


@attrs.frozen(cache_hash=True)
class All(Node):
    """DRAWBACK if every opining child is a drawback, else CLEAN."""

    HEAD: ClassVar[str] = "all"
    children: tuple[Node, ...] = attrs.field(converter=_nodes, validator=_check_children)

    def with_children(self, children: Iterable[Node]) -> Node:
        return All(children)


def _check_child(instance: object, attribute: object, value: typing.Any) -> None:
    if not isinstance(value, Node):
        raise TypeError(f"a child must be a vx Node, not {type(value).__name__}")


@attrs.frozen(cache_hash=True)
class Not(Node):
    """ABSTAIN stays ABSTAIN; otherwise DRAWBACK and CLEAN swap."""

    HEAD: ClassVar[str] = "not"
    child: Node = attrs.field(validator=_check_child)

    @property
    def children(self) -> tuple[Node, ...]:
        return (self.child,)

    def with_children(self, children: Iterable[Node]) -> Node:
        kids = tuple(children)
        if len(kids) != 1:
            raise ValueError(f"(not) takes exactly one child, got {len(kids)}")
        return Not(kids[0])


def _check_k(instance: Vote, attribute: object, value: typing.Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"vote K must be an int, not {type(value).__name__}")


@attrs.frozen(cache_hash=True)
class Vote(Node):
    """DRAWBACK if at least ``k`` opining children are drawbacks, else CLEAN."""

    HEAD: ClassVar[str] = "vote"
    k: int = attrs.field(validator=_check_k)
    children: tuple[Node, ...] = attrs.field(converter=_nodes, validator=_check_children)

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.k <= len(self.children):
            raise ValueError(
                f"vote K={self.k} is out of range: it must be between 1 and the number of "
                f"children ({len(self.children)})"
            )

    def with_children(self, children: Iterable[Node]) -> Node:
        return Vote(self.k, children)


@attrs.frozen(cache_hash=True)
class WVote(Node):
    """DRAWBACK if the sum of ``weight * verdict`` over opining children reaches ``threshold``."""

    HEAD: ClassVar[str] = "wvote"
    threshold: Fraction = attrs.field(converter=to_fraction)
    children: tuple[Node, ...] = attrs.field(converter=_nodes, validator=_check_children)
    weights: tuple[Fraction, ...] = attrs.field(converter=_to_fractions)

    def __attrs_post_init__(self) -> None:
        if len(self.weights) != len(self.children):
            raise ValueError(
                f"wvote has {len(self.children)} children but {len(self.weights)} weights; "
                "every child needs exactly one weight"
            )

    def with_children(self, children: Iterable[Node]) -> Node:
        return WVote(self.threshold, children, self.weights)
