"""vx.memo.IdentityMemo: results remembered by object identity, never served for another object."""

from __future__ import annotations

import gc

from vx.memo import MISSING, IdentityMemo


def test_a_value_is_served_for_the_same_objects_only():
    memo = IdentityMemo(8)
    a, b, twin = [1], [2], [1]
    memo.put("ab", a, b)
    assert memo.get(a, b) == "ab"
    assert memo.get(b, a) is MISSING and memo.get(twin, b) is MISSING  # equal is not the same object


def test_an_object_freed_elsewhere_is_held_so_its_id_never_names_another():
    memo = IdentityMemo(8)
    memo.put("first", [1, 2, 3])
    gc.collect()
    strangers = [[i] for i in range(1000)]  # would reuse a freed id
    assert all(memo.get(s) is MISSING for s in strangers) and len(memo) == 1


def test_full_it_starts_over():
    memo = IdentityMemo(2)
    objs = [object() for _ in range(3)]
    for k, o in enumerate(objs):
        memo.put(k, o)
    assert len(memo) == 1 and memo.get(objs[2]) == 2 and memo.get(objs[0]) is MISSING
    memo.clear()
    assert len(memo) == 0


# --------------------------------------------------------------------------------------------
# bounded in bytes as well as entries

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vx.memo import Memo, size_of  # noqa: E402


def test_an_identity_memo_counts_each_held_object_once_and_starts_over_past_its_bytes():
    memo = IdentityMemo(1000, max_bytes=10_000, sizer=lambda obj: 1000)
    a, b, c = object(), object(), object()
    memo.put(1, a, b, size=0)
    memo.put(2, b, a, size=0)  # the same two objects: counted once
    assert memo.bytes == 2000 and len(memo) == 2
    for i in range(9):  # 2,000 + 9 x 1,000 bytes is over 10,000
        memo.put(i, object(), size=0)
    assert memo.bytes <= 10_000 and memo.get(a, b) is MISSING  # past its bytes: it started over
    memo.put("big", c, size=5_000)  # more than a quarter of its bytes: not kept
    assert memo.get(c) is MISSING


def test_a_memo_keeps_the_most_recent_within_its_bytes_and_refuses_an_oversized_entry():
    memo = Memo(entries=100, max_bytes=1000, entry_bytes=400)
    for k in range(5):
        memo.put(k, str(k), 300)
    assert memo.bytes <= 1000 and list(memo._data) == [2, 3, 4]
    memo.get(2)  # used: now the most recent
    memo.put(5, "5", 300)
    assert memo.get(3) is MISSING and memo.get(2) == "2"
    assert memo.put("huge", "h", 401) == "h" and memo.get("huge") is MISSING


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 500)), max_size=60))
def test_a_memo_never_holds_more_than_its_bounds(puts):
    memo = Memo(entries=8, max_bytes=1000, entry_bytes=300)
    for key, size in puts:
        memo.put(key, key, size)
        assert len(memo) <= 8 and 0 <= memo.bytes <= 1000
        assert memo.bytes == sum(s for _, s in memo._data.values())


def test_size_of_grows_with_the_value_and_stops_at_its_limit():
    small, large = list(range(10)), list(range(100_000))
    assert size_of(small) < size_of(large)
    assert size_of(large) > 100_000 * 28
    assert 1000 < size_of(large, limit=1000) < 1000 + 1_000_000  # stopped soon after the limit
    shared = [large, large]
    assert size_of(shared) < 2 * size_of(large)  # an object reached twice is counted once
