from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vx.llm import client as llm_client

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ratchet"


@pytest.fixture(autouse=True)
def _isolated_llm(request, tmp_path, monkeypatch):
    """No test reads the user's LLM config or cache or sees a real key (except opt-in live tests)."""
    if request.node.get_closest_marker("live") is None:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    for var in list(os.environ):
        if var.startswith("VX_LLM_"):
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("VX_LLM_CONFIG", str(tmp_path / "no-user-llm.toml"))
    monkeypatch.setenv("VX_LLM_CACHE", str(tmp_path / "llm.sqlite"))
    llm_client.deactivate()
    yield
    llm_client.deactivate()


@pytest.fixture
def notes(tmp_path) -> Path:
    """A writable copy of the `notes` fixture family."""
    dst = tmp_path / "notes"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    return dst
