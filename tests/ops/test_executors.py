"""Executors: ops travel as specs / pack references; a Dask cluster gives the local matrix, byte for
byte, also when one of its workers is killed mid-run."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.ops.apply import apply_ops
from vx.ops.core import OpError, op
from vx.ops.executors import Executor, ExecutorError, LocalExecutor, make_executor
from vx.ops.specs import op_from_spec
from vx.verifier import Verifier

FAMILY = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


def test_pack_and_spec_ops_travel_by_reference() -> None:
    pool = Family(FAMILY).pool()
    spec = op_from_spec(
        {"kind": "exec", "check": "raises_on_probe_class", "params": {"klass": "empty"}, "detects": "crash"},
        status="shadow",
    )
    for original in [*pool, spec]:
        blob = pickle.dumps(original)
        assert len(blob) < 4000  # a reference, not the function's code
        back = pickle.loads(blob)
        assert (back.name, back.version, back.status, back.tier) == (
            original.name,
            original.version,
            original.status,
            original.tier,
        )
    assert pickle.loads(pickle.dumps(spec)).spec == spec.spec


def test_an_op_made_from_a_spec_carries_its_own_rebuild_recipe() -> None:
    """The op's shipping reference names the function that rebuilds it (vx.ops.core never reaches for specs)."""
    from vx.ops.core import _rebuild_op
    from vx.ops.specs import rebuild_spec_op

    spec = {"kind": "exec", "check": "raises_on_probe_class", "params": {"klass": "empty"}, "detects": "crash"}
    o = op_from_spec(spec, status="shadow", provenance={"origin": "synthesized", "round": 2})
    ref = o.shipping_ref()
    assert ref["kind"] == "recipe" and ref["build"] is rebuild_spec_op
    assert ref["data"]["template_module"] == "vx.families.code.ops.templates"
    back = pickle.loads(pickle.dumps(o))
    assert (back.version, back.status, back.provenance) == (o.version, "shadow", o.provenance)
    with pytest.raises(OpError, match="has version"):
        _rebuild_op(dict(ref, version="0" * 12))


def test_a_verifier_pickles_without_its_family() -> None:
    v = Verifier.from_family(FAMILY)
    back = pickle.loads(pickle.dumps(v))
    assert back.text == v.text and back.family is None and back.pool.names == v.pool.names
    assert set(back.tasks) == set(v.tasks)


def test_an_op_from_main_cannot_travel_and_says_why() -> None:
    def hidden(task, output, ctx):
        return 0

    hidden.__module__ = "__main__"
    o = op(hidden)
    with pytest.raises(OpError, match="cannot be sent to another process"):
        pickle.dumps(o)


def test_a_version_mismatch_is_refused() -> None:
    from vx.ops.core import _rebuild_op

    ref = Family(FAMILY).pool()["crash"].shipping_ref()
    with pytest.raises(OpError, match="has version"):
        _rebuild_op(dict(ref, version="0" * 12))


def test_unknown_executor(monkeypatch) -> None:
    with pytest.raises(ExecutorError, match="choose one of local, dask"):
        make_executor("spark")
    monkeypatch.delenv("VX_EXECUTOR", raising=False)
    assert isinstance(make_executor(None, jobs=2), LocalExecutor)
    monkeypatch.setenv("VX_EXECUTOR", "spark")  # what commands without --executor use
    with pytest.raises(ExecutorError, match="unknown executor 'spark'"):
        make_executor(None)


def _items(n: int):
    fam = Family(FAMILY)
    # no endless loops: they only make the test slow (each costs the 4 s run limit)
    items = [it for it in fam.split("train").items if "while" not in it.output][:n]
    return fam, items


def _same(a, b) -> None:
    assert a.matrix.item_ids == b.matrix.item_ids and a.matrix.op_names == b.matrix.op_names
    assert a.matrix.to_array().tobytes() == b.matrix.to_array().tobytes()
    assert [(f.item, f.op, f.kind) for f in a.failures] == [(f.item, f.op, f.kind) for f in b.failures]


class _Recorder(Executor):
    """Wraps an executor, counting the results handed to the driver."""

    def __init__(self, inner: Executor) -> None:
        self.inner, self.seen = inner, []

    def run(self, jobs, ops, tasks, timeout, on_done) -> None:
        def done(j, res):
            self.seen.append(j)
            on_done(j, res)

        self.inner.run(jobs, ops, tasks, timeout, done)


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_gives_the_local_matrix(dask_cluster) -> None:
    from vx.ops.executors import DaskExecutor

    fam, items = _items(48)
    pool = fam.pool()
    local = apply_ops(pool, items, fam.tasks, jobs=1, progress=False)
    executor = _Recorder(DaskExecutor(client=dask_cluster, chunk=4))
    remote = apply_ops(pool, items, fam.tasks, executor=executor, progress=False)
    _same(local, remote)
    assert sorted(executor.seen) == list(range(len(items)))  # each item recorded exactly once


def test_killing_a_worker_mid_run_loses_and_doubles_nothing(dask_cluster) -> None:
    from vx.ops.executors import DaskExecutor

    fam, items = _items(64)
    pool = fam.pool()
    local = apply_ops(pool, items, fam.tasks, jobs=1, progress=False)
    pids = dask_cluster.run(os.getpid)
    victim = sorted(pids.values())[0]
    executor = _Recorder(DaskExecutor(client=dask_cluster, chunk=2))
    at_kill = []

    def kill_once_work_flows() -> None:
        deadline = time.monotonic() + 60
        while len(executor.seen) < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        at_kill.append(len(executor.seen))
        os.kill(victim, signal.SIGKILL)

    killer = threading.Thread(target=kill_once_work_flows)
    killer.start()
    remote = apply_ops(pool, items, fam.tasks, executor=executor, progress=False)
    killer.join()
    assert at_kill and at_kill[0] < len(items)  # it died while items were still outstanding
    with pytest.raises(ProcessLookupError):
        os.kill(victim, 0)
    _same(local, remote)
    assert sorted(executor.seen) == list(range(len(items)))


def test_grade_items_on_dask(dask_cluster) -> None:
    from vx.ops.executors import DaskExecutor

    fam, items = _items(12)
    v = Verifier.from_family(fam)
    here = v.grade_items(items, jobs=1, progress=False)
    there = v.grade_items(items, executor=DaskExecutor(client=dask_cluster), progress=False)
    assert here.finals == there.finals
    _same(here.application, there.application)
