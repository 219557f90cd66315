"""The API key never reaches the disk cache, the run's usage record, or sandboxed candidate code."""

from __future__ import annotations

import pytest

KEY = "sk-ant-test-0123456789-do-not-store"


def test_the_key_is_not_stored_in_the_cache_or_ledger(make_client, fake_api, tmp_path):
    c = make_client()
    c.complete("judge", "question", system="shared prefix")
    c.complete("judge", "question", system="shared prefix")
    raw = b"".join(p.read_bytes() for p in c.cache.path.parent.glob(c.cache.path.name + "*"))
    assert b"question" in raw  # the request is there …
    assert b"sk-test-not-a-real-key" not in raw  # … the key the SDK sent in a header is not
    assert "sk-test" not in repr(c.usage())


def test_sandboxed_candidates_never_see_the_key(monkeypatch):
    from vx.sandbox import Sandbox, SandboxConfig, SandboxUnavailable

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    try:
        sb = Sandbox(SandboxConfig())
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox on this machine: {exc}")
    code = "import os\ndef f():\n    return sorted(k for k in os.environ if 'ANTHROPIC' in k or 'VX_LLM' in k)\n"
    rep = sb.run_calls(code, "f", [([], {})])
    assert rep.status == "ok" and rep.calls[0].status == "ok"
    assert rep.calls[0].value == []
