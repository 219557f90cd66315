"""The clear-plurality rule every family's peer ops vote by (vx.ops.vote)."""

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from vx.ops.vote import clear_plurality

votes = st.dictionaries(st.sampled_from("abcde"), st.integers(1, 9)).map(Counter)


@given(votes, st.floats(0.0, 1.0), st.integers(1, 5))
def test_a_clear_top_is_strictly_ahead_has_its_quorum_and_support(groups, quorum, min_support):
    found = clear_plurality(groups, quorum, min_support)
    counts = sorted(groups.values(), reverse=True)
    clear = (
        bool(counts)
        and counts[0] >= min_support
        and counts[0] >= quorum * sum(counts)
        and (len(counts) == 1 or counts[0] > counts[1])
    )
    assert (found is not None) == clear
    if found is not None:
        top, support, answered = found
        assert groups[top] == support == counts[0]
        assert answered == sum(counts)


def test_a_tie_and_an_empty_vote_say_nothing():
    assert clear_plurality(Counter(), 0.0, 1) is None
    assert clear_plurality(Counter({"a": 3, "b": 3}), 0.0, 1) is None
    assert clear_plurality(Counter({"a": 3, "b": 2}), 0.5, 1) == ("a", 3, 5)
    assert clear_plurality(Counter({"a": 3, "b": 2}), 0.7, 1) is None
