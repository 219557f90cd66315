"""Retirement of redundant ops: two ops that catch the same dev failures both have a zero
leave-one-out marginal, but only one of them may retire (re-measured after each retirement)."""

import shutil
from pathlib import Path

from vx.evolve import EvolveConfig, evolve_family
from vx.evolve.store import RunStore

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"

TWIN = '''

@op(detects="too_long")
def too_long_twin(task, output, ctx):
    """The output is longer than the task's limit (a second detector of the same defect)."""
    if ctx.artifact is None:
        return None
    return len(output) >= task["max_len"] + 1
'''


def test_only_one_of_two_redundant_ops_retires(tmp_path):
    fam = tmp_path / "evo"
    shutil.copytree(FIXTURE, fam, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    (fam / "ops.py").write_text((fam / "ops.py").read_text() + TWIN)
    (fam / "seed.vx").write_text("(any missing_keyword too_long too_long_twin)\n")
    res = evolve_family(fam, config=EvolveConfig(rounds=5, seed=1, jobs=1), out=tmp_path / "r.vxrun.sqlite",
                        composers=[], synthesizers=[])
    with RunStore(res.run_path) as s:
        retired = [e["op"] for e in s.events() if e["kind"] == "retired"]
        rounds = s.rounds()
    assert len(set(retired) & {"too_long", "too_long_twin"}) == 1, retired
    final = set(res.best.op_names())
    assert "missing_keyword" in final and len(final & {"too_long", "too_long_twin"}) == 1
    # nothing the seed caught on dev is lost by curation
    assert rounds[-1]["a_dev"] >= rounds[0]["a_dev"] - 1e-12
