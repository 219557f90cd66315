"""Evolution runs offline on the report family: synthesis from the pack's templates, selection, audit."""

from pathlib import Path

import pytest

FAMILY_DIR = Path(__file__).resolve().parents[3] / "examples" / "report"


def test_evolve_family_offline(tmp_path):
    from vx.evolve import EvolveConfig, evolve_family

    r = evolve_family(
        FAMILY_DIR,
        config=EvolveConfig(rounds=2, seed=0, jobs=1),
        out=tmp_path / "run.sqlite",
        vx_out=tmp_path / "best.vx",
    )
    s = r.summary
    assert s["dev"]["evolved"]["accuracy"] >= s["dev"]["seed"]["accuracy"]
    assert s["objective"]["evolved"]["objective"] >= s["objective"]["seed"]["objective"]
    assert 0 <= s["locked"]["evolved"]["agreement"] <= 1 and s["locked"]["seed"]["n"] == 42
    assert (tmp_path / "best.vx").read_text().strip()


def test_vx_evolve_command(tmp_path):
    from click.testing import CliRunner

    from vx.cli.main import COMMANDS, main

    if "evolve" not in COMMANDS:
        pytest.skip("`vx evolve` is not registered in this checkout")
    r = CliRunner().invoke(
        main,
        ["evolve", str(FAMILY_DIR), "--rounds", "1", "--out", str(tmp_path / "r.sqlite"), "-j", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "evolved:" in r.output and (tmp_path / "r.sqlite").exists()
