"""Two detectors that flag the same dev failures both stay: on ten dev items the second one's
leave-one-out marginal is 0 whatever it adds on the train split, so a zero marginal is no evidence of
harm (retiring for it threw away `disagrees_with_peers`)."""

import shutil
from pathlib import Path

from vx.evolve import EvolveConfig, evolve_family
from vx.evolve.store import RunStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"

TWINS = '''

@op(detects="too_long")
def too_long_twin(task, output, ctx):
    """The output is longer than the task's limit (a second detector of the same defect)."""
    if ctx.artifact is None:
        return None
    return len(output) >= task["max_len"] + 1


@op(detects="too_long")
def repeats_words(task, output, ctx):
    """Some word occurs four times or more (flags the same dev item as too_long, other train items)."""
    if ctx.artifact is None:
        return None
    return max(Counter(output.lower().split()).values()) >= 4
'''


def _family(tmp_path, seed):
    fam = tmp_path / "evo"
    shutil.copytree(FIXTURE, fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    (fam / "ops.py").write_text((fam / "ops.py").read_text() + TWINS)
    (fam / "seed.vx").write_text(seed + "\n")
    return fam


def test_two_ops_that_overlap_on_dev_both_stay(tmp_path):
    fam = _family(tmp_path, "(any missing_keyword too_long too_long_twin repeats_words)")
    res = evolve_family(
        fam,
        config=EvolveConfig(rounds=5, seed=1, jobs=1),
        out=tmp_path / "r.vxrun.sqlite",
        composers=[],
        synthesizers=[],
    )
    with RunStore(res.run_path) as s:
        retired = [e["op"] for e in s.events() if e["kind"] == "retired"]
        status = {o["name"]: o["status"] for o in s.ops()}
        state = s.rounds()[0]["state"]
    assert not set(retired) & {"too_long", "too_long_twin", "repeats_words"}, retired
    assert all(status[n] == "active" for n in ("too_long", "too_long_twin", "repeats_words"))
    # in the seed, each of the three has a leave-one-out marginal of 0 on dev: recorded, not acted on
    marg = {o["name"]: o["marginal"] for o in state["ops"]}
    assert marg["too_long"] == marg["too_long_twin"] == marg["repeats_words"] == 0.0


def test_an_op_that_false_alarms_on_the_anchor_retires_after_the_grace(tmp_path):
    fam = _family(tmp_path, "(any missing_keyword too_long says_here)")
    (fam / "ops.py").write_text(
        (fam / "ops.py").read_text()
        + '''

@op(detects="marker")
def says_here(task, output, ctx):
    """The output contains the word 'here' (four dev items labelled pass do)."""
    if ctx.artifact is None:
        return None
    return "here" in output.split()
'''
    )
    res = evolve_family(
        fam,
        config=EvolveConfig(rounds=4, seed=3, jobs=1),
        out=tmp_path / "h.vxrun.sqlite",
        composers=[],
        synthesizers=[],
    )
    with RunStore(res.run_path) as s:
        retired = [e for e in s.events() if e["kind"] == "retired"]
        assert [(e["op"], e["round"]) for e in retired] == [("says_here", 3)]
        assert "fires on 4 dev item(s) labelled pass (dv6, dv7, dv8 …)" in retired[0]["reason"]
        assert [o["status"] for o in s.ops() if o["name"] == "says_here"] == ["retired"]
    assert "says_here" not in res.best.op_names()
    # no-lifecycle: nothing retires
    res = evolve_family(
        fam,
        config=EvolveConfig(rounds=4, seed=3, jobs=1, ablation="no-lifecycle"),
        out=tmp_path / "nl.vxrun.sqlite",
        composers=[],
        synthesizers=[],
    )
    assert not [e for e in RunStore(res.run_path).events() if e["kind"] == "retired"]
