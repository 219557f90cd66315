"""`vx doctor`'s LLM part: roles configured and reachable, probed without spending tokens."""

from __future__ import annotations

from vx.doctor import role_status, summary_line
from vx.llm.config import ROLES, load_config


def test_without_a_key_nothing_is_sent_and_roles_are_off(fake_api):
    statuses = role_status(load_config(), env={})
    assert [s.role for s in statuses] == list(ROLES)
    assert all(s.state == "off" and s.ok is None for s in statuses)
    ok, line = summary_line(statuses)
    assert ok is None and line.startswith("LLM roles are off: set ANTHROPIC_API_KEY")
    assert fake_api.requests == [] and fake_api.model_lookups == []


def test_probe_uses_the_free_models_endpoint_once_per_model(fake_api):
    cfg = load_config()
    statuses = role_status(cfg, sdk=fake_api.sdk())
    assert all(s.state == "reachable" for s in statuses)
    assert sorted(fake_api.model_lookups) == sorted({rc.model for rc in cfg.roles.values()})
    assert fake_api.requests == []  # no Messages call: no tokens spent
    ok, line = summary_line(statuses)
    assert ok is True and f"{len(ROLES)} roles reachable" in line


def test_an_unknown_model_is_reported_with_its_role(fake_api):
    cfg = load_config(overrides={"judge.model": "claude-nonexistent"})
    fake_api.unknown_models.add("claude-nonexistent")
    statuses = {s.role: s for s in role_status(cfg, sdk=fake_api.sdk())}
    assert statuses["judge"].state == "unreachable" and "unknown model id" in statuses["judge"].detail
    assert statuses["judge"].source == "command line" and statuses["teacher"].source == "default"
    ok, line = summary_line(list(statuses.values()))
    assert ok is False and line.startswith("judge (claude-nonexistent): unknown model id")


def test_no_probe_sends_nothing(fake_api):
    statuses = role_status(load_config(), probe=False, sdk=fake_api.sdk())
    assert all(s.state == "not probed" for s in statuses) and fake_api.model_lookups == []
    assert summary_line(statuses)[1].startswith(f"{len(ROLES)} roles configured")
