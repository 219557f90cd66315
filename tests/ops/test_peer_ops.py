"""Peer ops: observers, two-phase application, attempt-set cache keys, extra peers, standalone calls."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from vx.ops.apply import apply_ops, single
from vx.ops.cache import VerdictCache, attempt_set_hash, decode_plain, encode_plain, peer_key
from vx.ops.core import Context, observer, op, peer_op
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.ops.specs import op_from_spec, template

CALLS: Counter = Counter()


@observer
def length(task, output, ctx):
    CALLS["observe"] += 1
    return {"n": len(output), "seen_root": ctx.get("artifact") == output}


@peer_op(observe=length, tier="static", detects="odd_one_out")
def odd_length(task, mine, peers, ctx):
    """Fires when the attempt's length differs from the most common length of its peers."""
    if not peers:
        return None
    common, n = Counter(p["n"] for p in peers).most_common(1)[0]
    if mine["n"] != common:
        return True, f"length {mine['n']}; {n} of {len(peers)} peers have {common}"
    return False, f"length {common} like {n} of {len(peers)} peers"


@op(root=True, detects="empty")
def nonempty(task, output, ctx):
    ctx["artifact"] = output
    return not output


@op(detects="has_x")
def has_x(task, output, ctx):
    return "x" in output


def pool() -> OpPool:
    return OpPool([nonempty, has_x, odd_length], root="nonempty")


TASKS = {"t1": {"id": "t1"}, "t2": {"id": "t2"}}


def items_of(outputs: dict[str, list[str]]) -> list[Item]:
    return [Item(f"{t}#{k}", t, o) for t, outs in outputs.items() for k, o in enumerate(outs)]


def verdicts(app, name="odd_length"):
    return dict(zip(app.matrix.item_ids, app.matrix.column(name).tolist()))


def test_peer_verdicts_compare_the_attempts_of_one_task_only():
    items = items_of({"t1": ["aa", "bb", "cc", "ddd"], "t2": ["eee", "fff", "g"]})
    app = apply_ops(pool(), items, TASKS, jobs=1, progress=False)
    v = verdicts(app)
    assert v == {"t1#0": 0, "t1#1": 0, "t1#2": 0, "t1#3": 1, "t2#0": 0, "t2#1": 0, "t2#2": 1}
    assert "3 of 3 peers have 2" in app.message("t1#3", "odd_length")
    # the observer ran after the root, in the item's context
    assert app.matrix.column("has_x").tolist() == [0] * 7


def test_serial_and_parallel_agree_and_failures_are_none():
    items = items_of({"t1": ["aa", "bb", "c", "dd"], "t2": ["xx", "yy", "zzz"]})
    a = apply_ops(pool(), items, TASKS, jobs=1, progress=False)
    b = apply_ops(pool(), items, TASKS, jobs=2, progress=False)
    assert (a.matrix.to_array() == b.matrix.to_array()).all()
    assert a.messages == b.messages and not a.failures and not b.failures


def test_extra_peers_join_the_attempt_set_but_are_not_graded():
    items = items_of({"t1": ["abc"]})
    alone = apply_ops(pool(), items, TASKS, jobs=1, progress=False)
    assert verdicts(alone) == {"t1#0": -1}
    app = apply_ops(pool(), items, TASKS, jobs=1, progress=False, peers={"t1": ["aa", "bb", "cc"], "t9": ["zz"]})
    assert list(app.matrix.item_ids) == ["t1#0"] and verdicts(app) == {"t1#0": 1}


def test_a_peer_op_called_alone_abstains_and_says_why():
    res = odd_length({"id": "t1"}, "abc", Context())
    assert int(res.verdict) == -1 and "grade_many" in res.message
    outs = single(pool(), {"id": "t1"}, "abc")
    assert outs["odd_length"].verdict == -1
    # with peers' observations in ctx["peers"], the standalone call judges
    res = odd_length({"id": "t1"}, "abc", Context(peers=[{"n": 2}, {"n": 2}]))
    assert int(res.verdict) == 1


def test_cache_keys_include_the_attempt_set(tmp_path):
    cache = VerdictCache(tmp_path / "v.sqlite")
    outs = {"t1": ["aa", "bb", "cc", "ddd"], "t2": ["eee", "fff", "g"]}
    CALLS.clear()
    first = apply_ops(pool(), items_of(outs), TASKS, jobs=1, progress=False, cache=cache)
    assert CALLS["observe"] == 7
    CALLS.clear()
    again = apply_ops(pool(), items_of(outs), TASKS, jobs=1, progress=False, cache=cache)
    assert CALLS["observe"] == 0 and again.calls == 0, "observations and peer verdicts come from the cache"
    assert (again.matrix.to_array() == first.matrix.to_array()).all()
    assert again.messages == first.messages
    # one more attempt at t1: only it is observed, only t1's peer verdicts are judged again
    outs2 = {"t1": ["aa", "bb", "cc", "ddd", "zz"], "t2": outs["t2"]}
    CALLS.clear()
    third = apply_ops(pool(), items_of(outs2), TASKS, jobs=1, progress=False, cache=cache)
    assert CALLS["observe"] == 1
    # root and has_x of the new item (2), and the 5 peer verdicts of t1; t2's come from the cache
    assert third.calls == 2 + 5
    assert verdicts(third)["t1#3"] == 1 and verdicts(third)["t2#2"] == 1
    cache.close()


def test_attempt_set_hash_is_order_free_and_counts_multiplicity():
    assert attempt_set_hash(["a", "b"]) == attempt_set_hash(["b", "a"])
    assert attempt_set_hash(["a", "b"]) != attempt_set_hash(["a", "b", "b"])
    assert peer_key("x", attempt_set_hash(["x", "y"])) != peer_key("y", attempt_set_hash(["x", "y"]))


plain = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.tuples(kids, kids),
        st.dictionaries(st.text(max_size=3), kids, max_size=3),
        st.frozensets(st.integers(), max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(plain)
def test_observations_round_trip_the_cache_encoding(value):
    import json

    back = decode_plain(json.loads(json.dumps(encode_plain(value))))
    assert back == value and type(back) is type(value)


def test_label_permutation_leaves_peer_verdicts_identical():
    """Peers are unlabeled outputs: whatever the labels, the peer verdicts are the same."""
    outs = {"t1": ["aa", "bb", "cc", "ddd"], "t2": ["eee", "fff", "g"]}
    base = [Item(f"{t}#{k}", t, o, label=float(k % 2)) for t, os_ in outs.items() for k, o in enumerate(os_)]
    flipped = [Item(it.id, it.task, it.output, label=1.0 - it.label) for it in base]
    a = apply_ops(pool(), base, TASKS, jobs=1, progress=False)
    b = apply_ops(pool(), flipped, TASKS, jobs=1, progress=False)
    assert (a.matrix.to_array() == b.matrix.to_array()).all() and a.messages == b.messages


@template("length_differs", kind="static", params={"min_peers": "int"}, observer=length)
def length_differs(min_peers: int):
    """A peer-op template: the attempt's length differs from every peer's (with at least min_peers peers)."""

    def judge(task, mine, peers, ctx):
        if len(peers) < min_peers:
            return None
        return all(p["n"] != mine["n"] for p in peers)

    return judge


def test_peer_op_templates_make_peer_ops():
    o = op_from_spec({"kind": "static", "check": "length_differs", "params": {"min_peers": 2}, "detects": "odd"})
    assert o.is_peer and o.observer is length
    other = op_from_spec({"kind": "static", "check": "length_differs", "params": {"min_peers": 3}, "detects": "odd"})
    assert other.version != o.version
    p = pool()
    p.add(o)
    app = apply_ops(p, items_of({"t1": ["aa", "bb", "ccc"]}), TASKS, ops=[o.name], jobs=1, progress=False)
    assert app.matrix.column(o.name).tolist() == [0, 0, 1]


def test_an_observer_that_raises_makes_the_peer_op_abstain_with_the_error():
    @observer
    def boom(task, output, ctx):
        if output == "bad":
            raise RuntimeError("cannot observe")
        return len(output)

    @peer_op(observe=boom, tier="static", detects="x")
    def differs(task, mine, peers, ctx):
        return any(p != mine for p in peers) if peers else None

    p = OpPool([nonempty, differs], root="nonempty")
    app = apply_ops(p, items_of({"t1": ["aa", "bad", "bb"]}), TASKS, jobs=1, progress=False)
    assert app.matrix.column("differs").tolist() == [0, -1, 0], "the failed attempt is no peer and abstains"
    assert any(f.item == "t1#1" and "cannot observe" in f.error for f in app.failures)


def test_grade_many_grades_attempts_together():
    from vx.verifier import Verifier

    v = Verifier("(any has_x odd_length)", pool())
    grades = v.grade_many({"id": "t1"}, ["aa", "bb", "cc", "ddd"])
    assert [g.verdict.name for g in grades] == ["PASS", "PASS", "PASS", "FAIL"]
    assert grades[3].drawbacks[0][0] == "odd_length"
    alone = v.grade_many({"id": "t1"}, ["ddd"])
    assert alone[0].verdict.name == "PASS"  # the peer op abstains alone: no known drawback


def test_a_task_is_judged_as_soon_as_its_attempts_are_in_while_other_tasks_still_run():
    """Phase 2 overlaps phase 1: a task's peer verdicts are judged once its last attempt is recorded, not
    after every task has run, and the verdicts are the same as judging them all at the end."""
    from vx.ops.apply import run_item
    from vx.ops.executors import Executor

    events: list[str] = []

    @peer_op(observe=length, tier="static", detects="odd_one_out")
    def odd_logged(task, mine, peers, ctx):
        """Fires when the attempt's length differs from its peers' most common one (and logs the judging)."""
        events.append(f"judge {task['id']}")
        return odd_length.judge(task, mine, peers, ctx)

    class InOrder(Executor):
        def run(self, jobs, ops, tasks, timeout, on_done):
            for j, (it, need) in enumerate(jobs):
                events.append(f"ran {it.id}")
                on_done(j, run_item([ops[c] for c in need], tasks[it.task], it.output, timeout))

    items = items_of({"t1": ["aa", "bb", "cc", "ddd"], "t2": ["eee", "fff", "g"]})
    p = OpPool([nonempty, has_x, odd_logged], root="nonempty")
    app = apply_ops(p, items, TASKS, executor=InOrder(), progress=False)
    first_t2 = events.index("ran t2#0")
    assert events[:first_t2].count("judge t1") == 4 and "judge t2" not in events[:first_t2]
    assert events[-3:] == ["judge t2"] * 3
    assert verdicts(app, "odd_logged") == verdicts(apply_ops(pool(), items, TASKS, jobs=1, progress=False))


@op(detects="bang")
def bangs(task, output, ctx):
    """Raises on an output with a '!' (an op bug), says the output's length otherwise."""
    if "!" in output:
        raise ValueError("no bangs")
    return False, f"{len(output)} characters"


def _reference(outputs: dict[str, list[str]]) -> tuple[dict, dict, set]:
    """Each attempt graded on its own, as if no two were alike: odd_length's verdict and message against
    all its task's other attempts, and the items bangs fails on."""
    verdict, message, failed = {}, {}, set()
    for t, outs in outputs.items():
        for k, o in enumerate(outs):
            mine = {"n": len(o), "seen_root": True}
            others = [{"n": len(p), "seen_root": True} for q, p in enumerate(outs) if q != k]
            res = odd_length.judge(TASKS[t], mine, others, Context())
            verdict[f"{t}#{k}"], message[f"{t}#{k}"] = int(res.verdict), res.message
            if "!" in o:
                failed.add(f"{t}#{k}")
    return verdict, message, failed


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["t1", "t2"]),
        st.lists(st.sampled_from(["a", "aa", "bb", "b!", "ccc"]), min_size=1, max_size=7),
        min_size=1,
    )
)
def test_identical_attempts_are_graded_once_and_get_what_each_would_have_got(outputs):
    """An attempt identical to another of the batch (same task, same output) is not run again: it takes a
    copy of the other's outcomes (its observation too) -- and every verdict, message and failure is the
    one grading each attempt on its own gives. Peer verdicts are still judged per attempt: a judge may
    break ties by its peers' order, which differs between two identical attempts."""
    items = items_of(outputs)
    p = OpPool([nonempty, has_x, bangs, odd_length], root="nonempty")
    CALLS.clear()
    app = apply_ops(p, items, TASKS, jobs=1, progress=False)
    unique = {(t, o) for t, outs in outputs.items() for o in outs}
    assert CALLS["observe"] == len(unique)
    verdict, message, failed = _reference(outputs)
    assert verdicts(app) == verdict
    assert {i: app.message(i, "odd_length") for i in verdict} == message
    assert {f.item for f in app.failures if f.op == "bangs"} == failed
    for it in items:
        if "!" not in it.output:
            assert app.message(it.id, "bangs") == f"{len(it.output)} characters"
    n_ops = 3  # nonempty, has_x, bangs
    assert app.calls == n_ops * len(unique) + len(items) and app.shared == n_ops * (len(items) - len(unique))


def test_identical_attempts_in_parallel_match_the_serial_grading_and_the_progress_counts_items():
    outputs = {"t1": ["aa", "aa", "bb", "ccc", "ccc", "ccc"], "t2": ["x", "x"]}
    items = items_of(outputs)
    serial = apply_ops(pool(), items, TASKS, jobs=1, progress=False)
    steps: list[int] = []

    class Reporter:
        def task(self, description, total):
            import contextlib

            steps.append(total)
            return contextlib.nullcontext(lambda n=1: steps.append(-n))

    parallel = apply_ops(pool(), items, TASKS, jobs=2, progress=Reporter())
    assert (serial.matrix.to_array() == parallel.matrix.to_array()).all() and serial.messages == parallel.messages
    assert steps[0] == len(items) and -sum(steps[1:]) == len(items)  # items counted, copies included
    assert serial.item_seconds.keys() == {it.id for it in items}


def test_observe_runs_a_peer_op_s_observer_without_judging_it():
    """What a ranking reads: the observations of every attempt, by task, without the op in the matrix."""
    import pytest

    from vx.errors import ArgumentError

    CALLS.clear()
    items = items_of({"t1": ["aa", "bb", "ccc"], "t2": ["x"]})
    app = apply_ops(
        OpPool([nonempty, has_x, odd_length], root="nonempty"),
        items,
        TASKS,
        ops=["has_x"],
        jobs=1,
        progress=False,
        observe=["odd_length"],
        peers={"t1": ["dd"]},
    )
    assert list(app.matrix.op_names) == ["nonempty", "has_x"] and "odd_length" not in app.durations
    seen = app.observations["length"]
    assert {t: sorted(v) for t, v in seen.items()} == {"t1": ["peer:t1:0", "t1#0", "t1#1", "t1#2"], "t2": ["t2#0"]}
    assert seen["t1"]["t1#2"]["n"] == 3 and CALLS["observe"] == 5
    with pytest.raises(ArgumentError, match="'has_x' is not a peer op"):
        apply_ops(pool(), items, TASKS, jobs=1, progress=False, observe=["has_x"])


# --------------------------------------------------------------------------------------------
# verdicts that depend on more than the task and the output are never cached


@op(root=True, detects="empty")
def nonempty_or_dice(task, output, ctx):
    """A root that marks outputs asking for dice as volatile (as the SQL family marks random())."""
    ctx["artifact"] = output
    if "dice" in output:
        ctx.mark_volatile("the output rolls dice")
    return not output


def test_a_volatile_item_leaves_no_verdict_no_observation_and_no_peer_verdict_in_the_cache(tmp_path):
    cache = VerdictCache(tmp_path / "c.sqlite")
    p = OpPool([nonempty_or_dice, has_x, odd_length], root="nonempty_or_dice")
    items = items_of({"t1": ["aa", "bb", "cc", "dice"], "t2": ["ee", "ff", "gg"]})
    app = apply_ops(p, items, TASKS, jobs=1, progress=False, cache=cache)
    assert verdicts(app)["t1#3"] == 1
    again = apply_ops(p, items, TASKS, jobs=1, progress=False, cache=cache)
    # t2 is served whole from the cache; the dice and every peer verdict of its task are computed again
    assert again.cache_hits == 3 * 2 + 3 * 1 + 3 * 2  # t1's plain verdicts of the three others, t2's all
    stored = {r[0] for r in cache._db.execute("SELECT item FROM verdicts")}
    assert item_hash_of(TASKS["t1"], "dice") not in stored
    observed = {r[0] for r in cache._db.execute("SELECT item FROM observations")}
    assert item_hash_of(TASKS["t1"], "dice") not in observed and item_hash_of(TASKS["t1"], "aa") in observed


def item_hash_of(task, output):
    from vx.ops.cache import item_hash

    return item_hash(task, output)


def test_a_context_says_why_it_is_volatile_once():
    ctx = Context()
    assert ctx.volatile == ""
    ctx.mark_volatile("the clock")
    ctx.mark_volatile("randomness")
    assert ctx.volatile == "the clock"
