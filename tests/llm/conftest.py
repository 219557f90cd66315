from __future__ import annotations

import random

import pytest

from vx.llm import client as llm_client
from vx.llm.cache import ResponseCache
from vx.llm.config import load_config


@pytest.fixture(autouse=True)
def _isolated_llm(isolated_llm):
    """Every test here runs with the LLM isolation of tests/conftest.py."""
    yield


@pytest.fixture
def fake_api():
    """A fake Anthropic endpoint (tests using it are skipped when the anthropic SDK is not installed)."""
    from .fake import FakeAPI  # importorskip: the SDK is an optional extra

    return FakeAPI()


@pytest.fixture
def make_client(tmp_path, fake_api):
    """Build an LLMClient on the fake API; sleeps are recorded, not slept."""
    sleeps: list[float] = []

    def make(api=None, run_id: str = "run1", **overrides):
        cfg = load_config(overrides=overrides)
        c = llm_client.LLMClient(
            cfg,
            run_id=run_id,
            sdk=(api or fake_api).sdk(),
            cache=ResponseCache(cfg.cache),
            sleep=sleeps.append,
            rng=random.Random(0),
        )
        c.sleeps = sleeps
        return c

    return make
