"""Selection that keeps the detectors that work: the best incumbent ever held is the result,
the .vx header states the written expression's scores, baselines never enter an expression or get
promoted, the anchor guard, and the consensus reference does not shrink as ops retire."""

import re
from pathlib import Path

import attrs
import numpy as np
import pytest

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.evolve import record
from vx.evolve.guards import GUARD_FALSE_ALARM, GUARD_MISSES, GUARD_OK, Guards
from vx.evolve.loop import Evolution, EvolveConfig
from vx.evolve.objective import EvalData, Objective, engine_objective
from vx.evolve.run import evolve_family
from vx.evolve.state import copy_records, objective
from vx.evolve.store import RunStore
from vx.families.family import Family

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


def _engine(evo: Path, tmp_path: Path, seed: str, **cfg) -> Evolution:
    fam = Family(evo)
    store = RunStore(tmp_path / "e.vxrun.sqlite", create=True)
    store.set_meta({"format": 1, "family": fam.name, "family_dir": str(evo)})
    return Evolution(
        fam.evolution_view(), seed, store=store, config=EvolveConfig(jobs=1, **cfg), composers=[], synthesizers=[]
    )


def test_the_result_is_the_best_incumbent_ever_held_rescored(evo, tmp_path):
    eng = _engine(evo, tmp_path, "(any too_long shouting)", rounds=0)
    eng.run()
    obj = eng.objective()
    better = parse("(any missing_keyword too_long)")
    assert obj.score_one(better).objective > obj.score_one(eng.incumbent).objective
    # an incumbent held in an earlier round that scores better under the final pool is what is written
    held = ({"expression": "(any missing_keyword too_long)", "round": 0}, *eng.state.held)
    res = record.finish(attrs.evolve(eng.state, held=held), eng.setup, obj, store=eng.store)
    assert res.best == better
    assert res.best_score == obj.score_one(better)
    assert res.summary["selected"]["from_round"] == 0
    assert "best incumbent held" in res.summary["selected"]["why"]
    assert res.summary["objective"]["evolved"]["objective"] == pytest.approx(res.best_score.objective)


def test_a_held_incumbent_loses_its_retired_ops_before_it_is_rescored(evo, tmp_path):
    eng = _engine(evo, tmp_path, "(any too_long shouting)", rounds=0)
    eng.run()
    held = ({"expression": "(any missing_keyword too_long very_short)", "round": 0}, *eng.state.held)
    records = copy_records(eng.state.records)
    records["very_short"].status = "retired"
    pool = eng.state.pool.copy()
    pool.set_status("very_short", "retired")
    state = attrs.evolve(eng.state, held=held, records=records, pool=pool)
    res = record.finish(state, eng.setup, objective(eng.setup, state), store=eng.store)
    assert "very_short" not in res.best.op_names()


def test_the_vx_header_states_the_scores_of_the_expression_written(evo, tmp_path):
    from vx.dsl.vxfile import VxFile

    res = evolve_family(evo, config=EvolveConfig(rounds=3, seed=3, jobs=1), out=tmp_path / "h.vxrun.sqlite")
    vx = VxFile.read(res.vx_path)
    m = re.match(r"([0-9.]+) \(A_dev ([0-9.]+), A_train ([0-9.]+)", vx.header["objective"])
    assert m, vx.header
    s = res.best_score
    assert float(m[1]) == pytest.approx(s.objective, abs=1e-6)
    assert (float(m[2]), float(m[3])) == pytest.approx((s.a_dev, s.a_train), abs=1e-4)
    assert vx.expression(None) == res.best
    assert res.summary["objective"]["evolved"]["objective"] == pytest.approx(s.objective)
    with RunStore(res.run_path) as st:
        assert st.meta()["best_expression"] == res.best_text


def test_a_baseline_is_never_promoted_nor_selectable():
    from vx.families.code.pack import PACK
    from vx.ops.core import OpError

    base = {o.name: o for o in PACK.ops}
    assert base["outside_plurality"].baseline and base["outside_plurality"].status == "shadow"
    assert base["outside_dual_agreement"].baseline
    assert not base["disagrees_with_peers"].baseline
    with pytest.raises(OpError, match="is a baseline"):
        base["outside_plurality"].with_status("active")
    pool = PACK.pool()
    assert "outside_plurality" not in pool.selectable()


# --------------------------------------------------------------------------- the anchor guard

#        items: t0 t1 t2 t3 | d0(fail) d1(fail) d2(fail) d3(pass) d4(pass)
OPS = ["r", "a", "b", "c", "noisy"]
ROWS = [
    [0, 1, 0, 0, 1],
    [0, 0, 0, 0, 0],
    [0, 0, 1, 0, 1],
    [0, 0, 0, 1, 0],
    [0, 1, 0, 0, 0],  # d0: a flags it
    [0, 0, 1, 0, 1],  # d1: b flags it (noisy too)
    [0, 0, 0, 0, 0],  # d2: nothing flags it
    [0, 0, 0, 0, 1],  # d3: noisy false-alarms on a pass
    [0, 0, 0, 0, 0],
]
IDS = ["t0", "t1", "t2", "t3", "d0", "d1", "d2", "d3", "d4"]
P = {"d0": 0.0, "d1": 0.0, "d2": 0.0, "d3": 1.0, "d4": 1.0}


def guard_data() -> EvalData:
    m = VerdictMatrix.from_array(np.array(ROWS, dtype=np.int8), IDS, OPS)
    return EvalData(m, np.array([i.startswith("t") for i in IDS]), np.array([P.get(i, np.nan) for i in IDS]), "r")


def test_the_anchor_guard_asks_for_every_flaggable_dev_failure_and_no_false_alarm():
    obj = Objective(guard_data(), consensus_ops=["a", "b", "c", "noisy"])
    # noisy flags d3 (a pass), so it does not count towards what the pool can flag: d0 (a) and d1 (b)
    assert obj.guard_clean_ops == ("a", "b", "c") and obj.n_flaggable == 2
    assert obj.guard_cover() == ["a", "b"]
    codes = {e: obj.score_one(parse(e)).guard for e in ("(any a b)", "a", "(any a noisy)", "(any a b c)")}
    assert codes == {
        "(any a b)": GUARD_OK,
        "a": GUARD_MISSES,
        "(any a noisy)": GUARD_FALSE_ALARM,
        "(any a b c)": GUARD_OK,
    }
    s = obj.score_one(parse("a"))
    assert not s.selectable and "misses a dev failure the pool can flag" in s.reason
    assert not obj.score_one(parse("(any a noisy)")).selectable
    assert obj.score_one(parse("(any a b)")).selectable
    # the guard is off in the naive ablation, and the reference interpreter agrees with the fast path
    assert Objective(guard_data(), consensus_ops=["a", "b"], guards=Guards.naive()).score_one(parse("a")).selectable
    for e in ("(any a b)", "a", "(any a noisy)", "(all a b)", "(not c)"):
        assert obj.reference(parse(e)) == obj.score_one(parse(e)), e


def test_the_consensus_reference_keeps_retired_ops_and_the_guard_only_active_ones():
    data = guard_data()
    st = {"r": "active", "a": "active", "b": "retired", "c": "active", "noisy": "shadow"}
    obj = engine_objective(data, statuses=st, marginals={}, classes={})
    assert obj.consensus_ops == ("a", "b", "c")  # retired b stays, the shadow does not vote, nor the root
    assert obj.guard_ops == ("a", "c")  # only what a selectable expression could use
    assert obj.n_flaggable == 1  # d1 was b's


BASELINE = '''


def _looks_like_filler(task, output, ctx):
    """What a person could use instead: flags the two defect classes the seed pool cannot see."""
    if ctx.artifact is None:
        return None
    return "lorem" in output or "todo" in output


looks_like_filler = op(_looks_like_filler, name="looks_like_filler", detects="filler").as_baseline()
'''


def test_a_baseline_that_would_raise_dev_agreement_is_never_promoted_nor_written(evo, tmp_path):
    (evo / "ops.py").write_text((evo / "ops.py").read_text() + BASELINE)
    pool = Family(evo).pool()
    assert pool["looks_like_filler"].baseline
    res = evolve_family(
        evo, config=EvolveConfig(rounds=3, seed=3, jobs=1), out=tmp_path / "b.vxrun.sqlite", synthesizers=[]
    )
    with RunStore(res.run_path) as st:
        assert not [e for e in st.events() if e["op"] == "looks_like_filler" and e["kind"] == "promoted"]
        assert all("looks_like_filler" not in r["incumbent"] for r in st.rounds())
    assert "looks_like_filler" not in res.best.op_names()
    # it is applied and recorded like any shadow (its verdicts are there to be compared with)
    with RunStore(res.run_path) as st:
        assert "looks_like_filler" in st.matrix()
