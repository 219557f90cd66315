import os
import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
SHARED_DATA = Path(os.environ.get("VX_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture
def tiny_family(tmp_path) -> Path:
    """A fresh, writable copy of the tiny test family."""
    dst = tmp_path / "tiny"
    shutil.copytree(FIXTURES / "tiny", dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Never touch the user's verdict cache from tests."""
    monkeypatch.setenv("VX_CACHE", str(tmp_path / "cache.sqlite"))


def shared_data(*parts: str) -> Path:
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p
