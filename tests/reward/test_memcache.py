"""The verdict cache in memory: its bounds are laws (entries and bytes never exceeded, whatever is put),
it serves what was put while there is room, least recently used goes first, failures are never kept."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.ops.memcache import ENTRY_OVERHEAD, MemoryVerdictCache

rows = st.lists(
    st.tuples(st.sampled_from(["crash", "timeout"]), st.text(max_size=6), st.integers(0, 1), st.text(max_size=300)),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(rows, st.integers(1, 20), st.integers(ENTRY_OVERHEAD, 20 * (ENTRY_OVERHEAD + 400)))
def test_the_bounds_hold_whatever_is_put(puts, entries, max_bytes):
    cache = MemoryVerdictCache(entries, max_bytes)
    for op, h, verdict, message in puts:
        cache.put_many([(op, "v1", h, verdict, message, 0.0, None)])
        cache.put_observations([(op, "v1", h, {"answers": [message]})])
        assert len(cache) <= entries and cache.bytes <= max_bytes
    assert cache.bytes == sum(size for _, size in cache._store.values())


def test_it_serves_what_was_put_and_forgets_the_least_recently_used():
    cache = MemoryVerdictCache(entries=2)
    cache.put_many([("crash", "v1", "a", 1, "raises", 0.1, None), ("crash", "v1", "b", 0, "", 0.1, None)])
    assert cache.get_many([("crash", "v1", "a")])[("crash", "v1", "a")].message == "raises"  # a is used: b is older
    cache.put_many([("crash", "v1", "c", 0, "", 0.1, None)])
    found = cache.get_many([("crash", "v1", "a"), ("crash", "v1", "b"), ("crash", "v1", "c")])
    assert set(found) == {("crash", "v1", "a"), ("crash", "v1", "c")} and cache.evicted == 1
    assert cache.get_many([("crash", "v2", "a")]) == {}  # another version is another key


def test_failures_are_never_kept_and_an_observation_is_a_fresh_copy_each_time():
    cache = MemoryVerdictCache()
    cache.put_many([("crash", "v1", "a", -1, "", 0.1, "TimeoutError")])
    assert cache.get_many([("crash", "v1", "a")]) == {}
    cache.put_observations([("observe:peers", "v1", "a", {"answers": [1, 2]}), ("o", "v1", "b", object())])
    first = cache.get_observations([("observe:peers", "v1", "a"), ("o", "v1", "b")])
    assert first == {("observe:peers", "v1", "a"): {"answers": [1, 2]}}  # not plain data: not kept
    first[("observe:peers", "v1", "a")]["answers"].append(3)
    assert cache.get_observations([("observe:peers", "v1", "a")])[("observe:peers", "v1", "a")] == {"answers": [1, 2]}


def test_one_entry_larger_than_a_sixteenth_of_the_bound_is_not_kept():
    cache = MemoryVerdictCache(max_bytes=16_000)
    cache.put_many([("crash", "v1", "small", 1, "x", 0.0, None)])
    cache.put_observations([("o", "v1", "huge", {"answers": ["y" * 2_000]})])
    assert cache.get_observations([("o", "v1", "huge")]) == {}
    assert cache.get_many([("crash", "v1", "small")])  # the huge one did not push the small one out


def test_forget_all_clears_every_identity_memo_and_a_lookup_then_recomputes():
    from vx.memo import MISSING, IdentityMemo, forget_all

    memo, key = IdentityMemo(8), {"an": "observation"}
    memo.put("decoded", key)
    assert memo.get(key) == "decoded"
    assert forget_all() >= 1 and len(memo) == 0 and memo.get(key) is MISSING
