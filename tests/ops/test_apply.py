import numpy as np
import pytest

from vx.dsl.verdict import Verdict
from vx.families.family import Family, Item
from vx.ops.apply import apply_ops
from vx.ops.cache import VerdictCache


@pytest.fixture
def fam(tiny_family):
    return Family(tiny_family)


def _items(fam):
    return list(fam.split("dev").items) + list(fam.split("train").items)


def test_serial_application(fam):
    app = apply_ops(fam.pool(), _items(fam), fam.tasks, jobs=1, progress=False)
    m = app.matrix
    assert m.op_names[0] == "nonempty"
    assert m.get("d2", "missing_keyword") is Verdict.DRAWBACK
    assert app.message("d2", "missing_keyword") == "'pear' never appears"
    assert m.get("d5", "nonempty") is Verdict.DRAWBACK
    assert m.get("d5", "missing_keyword") is Verdict.ABSTAIN  # no artifact: abstains
    assert m.get("d3", "shouting") is Verdict.DRAWBACK
    assert m.get("r4", "buggy") is Verdict.ABSTAIN
    [f] = [f for f in app.failures if f.op == "buggy"]
    assert f.item == "r4" and f.kind == "error" and "ValueError: kaboom" in f.error


def test_parallel_equals_serial(fam):
    items = _items(fam) * 3
    items = [Item(f"{it.id}-{k}", it.task, it.output) for k, it in enumerate(items)]
    pool = fam.pool()
    ops = [n for n in pool.names if n != "sleepy"]
    a = apply_ops(pool, items, fam.tasks, ops=ops, jobs=1, progress=False)
    b = apply_ops(pool, items, fam.tasks, ops=ops, jobs=2, progress=False)
    assert np.array_equal(a.matrix.to_array(), b.matrix.to_array())
    assert a.messages == b.messages
    assert [(f.item, f.op, f.error) for f in a.failures] == [(f.item, f.op, f.error) for f in b.failures]


@pytest.mark.parametrize("jobs", [1, 2])
def test_hanging_op_abstains_and_the_rest_still_runs(fam, jobs):
    items = [Item("h", "t1", "apple sleep"), Item("ok", "t2", "pear")]
    app = apply_ops(fam.pool(), items, fam.tasks, jobs=jobs, timeout=0.5, progress=False)
    assert app.matrix.get("h", "sleepy") is Verdict.ABSTAIN
    assert app.matrix.get("h", "missing_keyword") is Verdict.CLEAN
    assert app.matrix.get("ok", "sleepy") is Verdict.CLEAN
    [f] = app.failures
    assert f.kind == "timeout" and f.op == "sleepy" and f.item == "h"


def test_worker_killed_when_op_ignores_the_timeout(tiny_family):
    (tiny_family / "ops.py").write_text(
        (tiny_family / "ops.py").read_text()
        + '''

@op(tier="exec", detects="stubborn")
def stubborn(task, output, ctx):
    """Swallows every exception, even the timeout, while spinning."""
    import time
    end = time.time() + 30
    while time.time() < end and "spin" in output:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
    return False


@op(tier="exec", detects="suicide")
def suicide(task, output, ctx):
    """Kills its own process."""
    import os
    if "die" in output:
        os._exit(3)
    return False
'''
    )
    fam = Family(tiny_family)
    items = [Item("s", "t1", "apple spin"), Item("d", "t1", "apple die"), Item("n", "t2", "pear")]
    ops = ["nonempty", "stubborn", "suicide", "missing_keyword"]
    app = apply_ops(fam.pool(), items, fam.tasks, ops=ops, jobs=2, timeout=0.3, progress=False)
    m = app.matrix
    assert m.get("s", "stubborn") is Verdict.ABSTAIN
    assert m.get("d", "suicide") is Verdict.ABSTAIN
    # the ops after the stuck/dead one still ran for that item
    assert m.get("s", "missing_keyword") is Verdict.CLEAN
    assert m.get("d", "missing_keyword") is Verdict.CLEAN
    assert m.get("n", "suicide") is Verdict.CLEAN
    kinds = {(f.item, f.op): f.kind for f in app.failures}
    assert kinds == {("s", "stubborn"): "timeout", ("d", "suicide"): "died"}


@pytest.mark.parametrize("n_items", [2, 3, 5, 9])
def test_no_worker_is_left_idle_while_another_holds_a_job_sent_ahead(tiny_family, n_items):
    """Jobs are sent ahead only while more are left than the workers can hold: with few jobs each worker
    gets its own (two jobs on two workers run in two processes, not one after the other in one)."""
    (tiny_family / "ops.py").write_text(
        (tiny_family / "ops.py").read_text()
        + '''

@op(tier="exec", detects="whose")
def whose(task, output, ctx):
    """Names the process it ran in."""
    import os
    return drawback(f"pid {os.getpid()}")
'''
    )
    from vx.ops import workers as A

    fam = Family(tiny_family)
    items = [Item(f"i{k}", "t1", f"apple {k}") for k in range(n_items)]
    app = apply_ops(fam.pool(), items, fam.tasks, ops=["whose"], jobs=2, progress=False)
    pids = [app.messages[(it.id, "whose")] for it in items]
    assert len(set(pids)) == 2
    if n_items <= 2 * A.WORKER_DEPTH:  # no job sent ahead at the start: the first two go to two workers
        assert pids[0] != pids[1]


def test_cache_hits_misses_and_version_invalidation(tiny_family, tmp_path):
    fam = Family(tiny_family)
    items = list(fam.split("dev").items)
    ops = ["nonempty", "missing_keyword", "shouting"]
    with VerdictCache(tmp_path / "c.sqlite") as cache:
        a = apply_ops(fam.pool(), items, fam.tasks, ops=ops, jobs=1, cache=cache, progress=False)
        assert a.calls == 18 and a.cache_hits == 0
        b = apply_ops(fam.pool(), items, fam.tasks, ops=ops, jobs=1, cache=cache, progress=False)
        assert b.calls == 0 and b.cache_hits == 18
        assert np.array_equal(a.matrix.to_array(), b.matrix.to_array())
        assert a.messages == b.messages
    # change one op's code: only that op re-runs (plus the root, which feeds it)
    src = (tiny_family / "ops.py").read_text()
    (tiny_family / "ops.py").write_text(src.replace('"written in capitals"', '"ALL CAPS"'))
    import sys

    for name in [m for m in sys.modules if m.startswith("vx_pack_ops_")]:
        del sys.modules[name]
    fam2 = Family(tiny_family)
    with VerdictCache(tmp_path / "c.sqlite") as cache:
        c = apply_ops(fam2.pool(), items, fam2.tasks, ops=ops, jobs=1, cache=cache, progress=False)
    assert c.calls == 12  # shouting (6) re-ran with its root (6)
    assert c.cache_hits == 18 - 6  # root + missing_keyword found; shouting's old version not used
    assert c.message("d3", "shouting") == "ALL CAPS"


def test_cache_info_and_clear(tmp_path):
    with VerdictCache(tmp_path / "x.sqlite") as c:
        c.put_many(
            [
                ("a", "v1", "h1", 1, "m", 0.1, None),
                ("a", "v1", "h2", 0, "", 0.1, "Err: x"),
                ("b", "v1", "h1", -1, "", 0.0, None),
            ]
        )
        info = c.info()
        assert info["entries"] == 3
        assert info["ops"][0] == {"op": "a", "versions": 1, "entries": 2, "errors": 1}
        assert c.get_many([("a", "v1", "h1"), ("a", "v2", "h1")]).keys() == {("a", "v1", "h1")}
        assert c.clear("a") == 2
        assert c.info()["entries"] == 1


def test_a_workers_running_slot_names_the_op_of_its_current_job_only():
    """The parent learns which op a worker runs from a shared slot (no message per op): a value left from
    the worker's previous job never starts the clock of the new one."""
    import multiprocessing as mp

    from vx.ops import workers as A

    w = A._Worker.__new__(A._Worker)
    w.running, w.seen, w.queue, w.current, w.started = mp.get_context("fork").RawValue("q", 0), 0, [7, 8], None, 0.0
    w.running.value = A._running_code(6, 3)  # the last op of job 6, not yet overwritten
    w.look(100.0)
    assert w.current is None
    w.running.value = A._running_code(7, 0)
    w.look(101.0)
    assert (w.current, w.started) == (0, 101.0)
    w.look(105.0)  # the same op still running: its clock keeps its start
    assert (w.current, w.started) == (0, 101.0)
    w.running.value = A._running_code(7, 4)
    w.look(106.0)
    assert (w.current, w.started) == (4, 106.0)
    # job 8 was sent ahead: the worker starts it before the parent has read job 7's result
    w.running.value = A._running_code(8, 0)
    w.look(107.0)
    assert (w.job, w.current, w.started) == (7, 4, 106.0)  # not job 7's op
    w.answered(7)
    assert (w.job, w.current) == (8, None)
    w.look(108.0)  # the slot named job 8's op before job 7 was answered: read afresh, its clock starts now
    assert (w.current, w.started) == (0, 108.0)
