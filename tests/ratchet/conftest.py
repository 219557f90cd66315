from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ratchet"


@pytest.fixture(autouse=True)
def _isolated_llm(isolated_llm):
    """Every test here runs with the LLM isolation of tests/conftest.py."""
    yield


@pytest.fixture
def notes(tmp_path) -> Path:
    """A writable copy of the `notes` fixture family."""
    dst = tmp_path / "notes"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    return dst
