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
