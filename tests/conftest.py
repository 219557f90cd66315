import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
#: Wall-clock bounds in tests are multiplied by this: the suite must hold on a loaded 2-core machine
#: (two busy processes beside it run a test up to ~3x slower). CPU-time budgets need no margin.
#: ``$VX_TEST_TIME_MARGIN`` changes it (1: the bounds as measured on an idle machine).
TIME_MARGIN = float(os.environ.get("VX_TEST_TIME_MARGIN", "3"))
SHARED_DATA = Path(os.environ.get("VX_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture
def tiny_family(tmp_path) -> Path:
    """A fresh, writable copy of the tiny test family."""
    dst = tmp_path / "tiny"
    shutil.copytree(FIXTURES / "tiny", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


@pytest.fixture
def evo(tmp_path) -> Path:
    """A fresh, writable copy of the `evo` family (the evolution engine's synthetic text family)."""
    dst = tmp_path / "evo"
    shutil.copytree(FIXTURES / "evo", dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    return dst


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Never touch the user's verdict cache or probe store from tests (the store is off: a test that
    changes the generator must see it run; the store's own tests turn it on in a tmp directory)."""
    monkeypatch.setenv("VX_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("VX_PROBE_CACHE", "off")


@pytest.fixture
def isolated_llm(request, tmp_path, monkeypatch):
    """No test reads the user's LLM config or cache, or sees a real key (except opt-in live tests);
    LLM roles start off. The LLM and ratchet tests use it for every test (their conftest)."""
    from vx.llm import client as llm_client

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


def shared_data(*parts: str) -> Path:
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p
