from pathlib import Path

import pytest

pytest.importorskip("markdown_it", reason="the report family needs the [report] extra (markdown-it-py)")

REPO = Path(__file__).resolve().parents[3]
FAMILY_DIR = REPO / "examples" / "report"
SOURCES = FAMILY_DIR / "sources"


@pytest.fixture(scope="session")
def bundled_tasks():
    from vx.families.report.data.build import load_sources

    return {t.id: t for t in load_sources(SOURCES)}


@pytest.fixture
def task(bundled_tasks):
    """A task with pools, a weak card, opposing evidence and money figures."""
    return bundled_tasks["storage-05"]


def _run_op(op, task, text):
    from vx.ops.core import Context

    return op(task.record(), text, Context())


@pytest.fixture
def run_op():
    """run_op(op, task, text) -> Result, with a fresh context."""
    return _run_op
