"""`vx llm …` commands and the --llm options (no network)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from vx.cli.main import main


def run(*args, **kw):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, **kw)


def test_config_shows_the_table_and_sources(tiny_family, monkeypatch):
    monkeypatch.setenv("VX_LLM_TEACHER_MODEL", "env-teacher")
    r = run("llm", "config", str(tiny_family), "--llm-model", "judge=cli-judge", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["roles"]["judge"]["model"] == "cli-judge" and d["sources"]["judge.model"] == "command line"
    assert d["roles"]["teacher"]["model"] == "env-teacher" and d["key_set"] is False
    r = run("llm", "config", str(tiny_family))
    assert "LLM roles are off" in r.output and "claude-haiku-4-5" in r.output


def test_bad_configuration_is_a_clean_error(tiny_family):
    toml = tiny_family / "family.toml"
    toml.write_text(toml.read_text() + '\n[llm]\nbudget_usd = "lots"\n')
    r = CliRunner().invoke(main, ["llm", "config", str(tiny_family)])
    assert r.exit_code == 2 and "budget_usd must be int or float" in r.output and "family.toml [llm]" in r.output
    r = CliRunner().invoke(main, ["llm", "config", "--llm-model", "judge"])
    assert r.exit_code == 2 and "ROLE=MODEL" in r.output


def test_check_without_a_key(tiny_family):
    r = run("llm", "check", str(tiny_family), "--json")
    assert r.exit_code == 0
    d = json.loads(r.output)
    assert d["ok"] is None and all(x["state"] == "off" for x in d["roles"])


def test_teach_needs_a_key(tiny_family):
    r = CliRunner().invoke(main, ["llm", "teach", str(tiny_family)])
    assert r.exit_code == 2 and "--llm needs an API key" in r.output


def test_usage_of_an_unknown_run_is_explained():
    r = CliRunner().invoke(main, ["llm", "usage", "no-such-run"])
    assert r.exit_code == 2 and "no LLM calls are recorded for run 'no-such-run'" in r.output


def test_doctor_section_when_roles_are_off():
    from vx.doctor import llm_section as doctor_checks

    (c,) = doctor_checks()
    assert c.name == "LLM roles" and c.status == "info" and c.detail.startswith("LLM roles are off")
