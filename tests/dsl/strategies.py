"""Hypothesis strategies for vx expression trees and verdict matrices."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vx.dsl.ast import KEYWORDS, All, Any, Node, Not, OpRef, Vote, WVote
from vx.dsl.matrix import VerdictMatrix

#: A small pool of op names, so random trees share ops and repeat them.
POOL = ("a", "b", "c", "crash", "x.y", "sql:star", "t-1", "_z")

#: Arbitrary legal op names (for printing and parsing round trips).
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.:-]{0,12}", fullmatch=True).filter(lambda s: s not in KEYWORDS)

#: Exact decimal numbers, including negative ones and sums that tie with floats (0.1 + 0.2).
numbers = st.one_of(
    st.builds(Fraction, st.integers(-12, 12), st.sampled_from([1, 2, 4, 5, 10])),
    st.sampled_from([Fraction(1, 10), Fraction(2, 10), Fraction(3, 10), Fraction(0), Fraction(-3, 10)]),
    st.builds(Fraction, st.integers(-(10**30), 10**30), st.sampled_from([1, 10**6, 2**40])),
)


def _combine(children: st.SearchStrategy[Node], min_children: int = 1) -> st.SearchStrategy[Node]:
    kids = st.lists(children, min_size=min_children, max_size=max(4, min_children))
    return st.one_of(
        kids.map(Any),
        kids.map(All),
        *([children.map(Not)] if min_children <= 1 else []),
        kids.flatmap(lambda cs: st.integers(1, len(cs)).map(lambda k: Vote(k, cs))),
        kids.flatmap(
            lambda cs: st.tuples(numbers, st.lists(numbers, min_size=len(cs), max_size=len(cs))).map(
                lambda tw: WVote(tw[0], cs, tw[1])
            )
        ),
    )


def trees(names: st.SearchStrategy[str] = st.sampled_from(POOL), max_leaves: int = 12) -> st.SearchStrategy[Node]:
    """Random expression trees over op names drawn from ``names``."""
    return st.recursive(names.map(OpRef), _combine, max_leaves=max_leaves)


@st.composite
def matrices(draw, ops: tuple[str, ...] = POOL, max_items: int = 150) -> VerdictMatrix:
    """Random verdict matrices over ``ops``; some columns abstain on every item, and the item
    count often straddles a 64-bit word boundary."""
    n = draw(st.one_of(st.integers(1, max_items), st.sampled_from([63, 64, 65, 128, 129])))
    codes = draw(hnp.arrays(np.int8, (n, len(ops)), elements=st.integers(-1, 1)))
    silent = draw(st.lists(st.sampled_from(range(len(ops))), max_size=3, unique=True))
    codes[:, silent] = -1
    return VerdictMatrix.from_array(codes, [f"item{i}" for i in range(n)], ops)


def combinators(min_children: int = 1, max_leaves: int = 6) -> st.SearchStrategy[Node]:
    """Random trees whose root is a combinator with at least ``min_children`` children."""
    return _combine(trees(max_leaves=max_leaves), min_children)


#: OpRef names of the small matrices the objective and batch tests draw ("r" is the root).
NAMES = ["r", "a", "b", "c", "d"]


def small_trees(depth=3):
    leaf = st.sampled_from(NAMES[1:]).map(OpRef)

    def extend(children):
        kids = st.lists(children, min_size=1, max_size=4)
        return st.one_of(
            kids.map(Any),
            kids.map(All),
            children.map(Not),
            kids.flatmap(lambda ks: st.integers(1, len(ks)).map(lambda k: Vote(k, ks))),
            kids.flatmap(
                lambda ks: st.tuples(
                    st.sampled_from(["0.5", "1", "1.5", "-1"]),
                    st.lists(st.sampled_from(["0.5", "1", "2", "-0.5"]), min_size=len(ks), max_size=len(ks)),
                ).map(lambda tw: WVote(tw[0], ks, tw[1]))
            ),
        )

    return st.recursive(leaf, extend, max_leaves=8)
