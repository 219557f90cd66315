"""Opt-in live test: a 2-round `vx evolve --llm` on the bundled HumanEval family, against the real API.

    ANTHROPIC_API_KEY=... pytest -m live tests/llm/test_live.py

Costs a few cents (judge calls on every item with the cheapest model, a few composer and
synthesizer calls), capped by --llm-budget. The rerun must make zero API calls.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not os.environ.get("ANTHROPIC_API_KEY"), reason="needs ANTHROPIC_API_KEY (opt-in live test)"),
]


def test_two_llm_rounds_on_humaneval_then_a_free_rerun(tmp_path):
    pytest.importorskip("anthropic")
    if not (EXAMPLE / "family.toml").is_file():
        pytest.skip(f"{EXAMPLE} is not built")
    from click.testing import CliRunner

    from vx.cli.main import main
    from vx.evolve.store import RunStore

    fam = tmp_path / "humaneval"
    shutil.copytree(EXAMPLE, fam, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    toml = fam / "family.toml"
    text = toml.read_text()
    if "code-judge" not in text:  # opt the judge op in
        text = re.sub(r"packs\s*=\s*\[", 'packs = ["code-judge", ', text, count=1)
        toml.write_text(text)

    def evolve(out):
        return CliRunner().invoke(
            main,
            [
                "evolve",
                str(fam),
                "--llm",
                "--rounds",
                "2",
                "--out",
                str(out),
                "-q",
                "--llm-budget",
                "1.0",
                "--cache",
                str(tmp_path / "verdicts.sqlite"),
            ],
            catch_exceptions=False,
        )

    first = evolve(tmp_path / "one.vxrun.sqlite")
    assert first.exit_code == 0, first.output
    with RunStore(tmp_path / "one.vxrun.sqlite") as s:
        usage = json.loads(s.meta()["llm_usage"])
    roles = {r["role"] for r in usage["by_role"] if r["api_calls"]}
    assert {"judge", "composer"} <= roles and usage["cost_usd"] <= 1.0
    second = evolve(tmp_path / "two.vxrun.sqlite")
    assert second.exit_code == 0, second.output
    with RunStore(tmp_path / "two.vxrun.sqlite") as s:
        again = json.loads(s.meta()["llm_usage"])
    assert again["api_calls"] == 0 and again["cache_hits"] >= usage["api_calls"]
