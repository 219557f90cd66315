"""`vx doctor`: the sandbox section of the report and its rendering."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from vx import doctor as doctor_module
from vx.cli.main import main
from vx.doctor import Check, doctor_report, python_section, sandbox_section
from vx.sandbox import LAYERS


@pytest.fixture(autouse=True)
def _sandbox_sections_only(monkeypatch):
    """Other sections (e.g. LLM roles) may reach the network; these tests are about the sandbox."""
    monkeypatch.setattr(doctor_module, "SECTIONS", [python_section, sandbox_section])


def test_sandbox_section_names_the_layer_and_every_alternative() -> None:
    checks = sandbox_section(measure=False)
    by_name = {c.name.strip(): c for c in checks}
    if "sandbox" in by_name:  # no layer works on this machine: the reason must be given
        assert by_name["sandbox"].status == "fail" and by_name["sandbox"].detail
        return
    layer = by_name["sandbox layer"].detail.split(" ")[0]
    assert layer in LAYERS
    for name in LAYERS:
        assert by_name[name].detail, f"no explanation for layer {name}"
    assert by_name[layer].status == "ok"
    assert {"sandbox account", "sandbox python", "seccomp"} <= set(by_name)


def test_doctor_report_is_a_list_of_checks() -> None:
    checks = doctor_report()
    assert checks and all(isinstance(c, Check) for c in checks)
    assert any(c.name == "sandbox overhead" for c in checks) or any(c.status == "fail" for c in checks)


def test_cli_renders_table_and_json() -> None:
    runner = CliRunner()
    table = runner.invoke(main, ["doctor"])
    assert "sandbox layer" in table.output or "sandbox" in table.output
    as_json = runner.invoke(main, ["doctor", "--json"])
    doc = json.loads(as_json.output)
    rows = doc["checks"]
    assert doc["schema"] == "vx-doctor/1" and doc["ok"] == (not any(r["status"] == "fail" for r in rows))
    assert {"name", "status", "detail"} <= set(rows[0])
    failed = any(r["status"] == "fail" for r in rows)
    assert as_json.exit_code == (1 if failed else 0)
