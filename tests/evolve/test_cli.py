"""`vx evolve`, `vx runs`, `vx compare` through the command line (on the evo fixture family)."""

import json
from pathlib import Path

from click.testing import CliRunner

from vx.cli.main import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


def invoke(*args):
    res = CliRunner().invoke(main, [str(a) for a in args])
    return res


def test_evolve_runs_and_compare(evo, tmp_path):
    run_a = tmp_path / "a.vxrun.sqlite"
    res = invoke("evolve", evo, "--rounds", 2, "--seed", 1, "-j", 1, "--out", run_a, "--quiet")
    assert res.exit_code == 0, res.output
    assert "seed vs evolved" in res.output and "locked evolved" in res.output
    vx = tmp_path / "a.vx"
    assert vx.exists() and run_a.exists()

    res = invoke("runs", "list", tmp_path)
    assert res.exit_code == 0 and "a.vxrun.sqlite" in res.output
    res = invoke("runs", "show", run_a, "--events")
    assert res.exit_code == 0, res.output
    assert "lifecycle: seed" in res.output and "history" in res.output
    res = invoke("runs", "verify", run_a)
    assert res.exit_code == 0 and "every round recomputes" in res.output, res.output
    res = invoke("runs", "export", run_a, "--json")
    data = json.loads(res.output)
    assert [r["round"] for r in data["rounds"]] == [0, 1, 2]
    assert data["funnel"]["seed"] >= 5 and data["verdicts"]

    res = invoke(
        "compare", evo / "seed.vx", vx, "--family", evo, "--dataset", "locked", "-j", 1, "--json", "--permutations", 500
    )
    assert res.exit_code == 0, res.output
    cmp = json.loads(res.output)
    assert cmp["n"] == 40 and cmp["fixed"] + cmp["broken"] + cmp["both_right"] + cmp["both_wrong"] == 40
    assert 0 < cmp["p_value"] <= 1

    run_b = tmp_path / "b.vxrun.sqlite"
    assert invoke("evolve", evo, "--rounds", 1, "--seed", 2, "-j", 1, "--out", run_b, "-q").exit_code == 0
    res = invoke("compare", "--seeds", run_a, run_b, "--dataset", "dev", "-j", 1, "--permutations", 500)
    assert res.exit_code == 0, res.output
    assert "mean Δ" in res.output


def test_evolve_errors_are_for_people(evo, tmp_path):
    res = invoke("evolve")
    assert res.exit_code == 2 and "name a family directory" in res.output
    out = tmp_path / "x.vxrun.sqlite"
    out.write_text("not sqlite")
    res = invoke("evolve", evo, "--out", out, "-q")
    assert res.exit_code == 2 and "already exists" in res.output
    res = invoke("evolve", "--resume", out)
    assert res.exit_code == 2 and "not a vx run file" in res.output
    res = invoke("runs", "show", out)
    assert res.exit_code == 2 and "not a vx run file" in res.output


def test_one_run_loads_its_family_once_and_opens_its_run_file_once(evo, tmp_path, monkeypatch):
    from vx.evolve import store as store_mod
    from vx.families import family as family_mod

    loads, opens = [], []
    real_family_init, real_store_init = family_mod.Family.__init__, store_mod.RunStore.__init__

    def family_init(self, *a, **k):
        loads.append(a)
        real_family_init(self, *a, **k)

    def store_init(self, *a, **k):
        opens.append(a)
        real_store_init(self, *a, **k)

    monkeypatch.setattr(family_mod.Family, "__init__", family_init)
    monkeypatch.setattr(store_mod.RunStore, "__init__", store_init)
    res = invoke(
        "evolve", evo, "--rounds", 1, "--seed", 1, "-j", 1, "--out", tmp_path / "r.vxrun.sqlite", "--quiet", "--no-llm"
    )
    assert res.exit_code == 0, res.output
    assert len(loads) == 1 and len(opens) == 1, (loads, opens)


def test_the_consensus_option_offers_every_mode_and_the_engine_default():
    from vx.cli.evolve import evolve_cmd
    from vx.evolve.loop import EvolveConfig
    from vx.evolve.objective import CONSENSUS_MODES

    opt = next(p for p in evolve_cmd.params if p.name == "consensus")
    assert sorted(opt.type.choices) == sorted(CONSENSUS_MODES)
    assert opt.default == EvolveConfig().consensus
