"""Counted progress bars with ETA (vx.ops.progress): terminal only, compact at 80 columns, fed by
every phase that applies ops."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from rich.console import Console

from vx.ops.progress import Bars, reporter_for

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def lines(buf: io.StringIO) -> list[str]:
    text = ANSI.sub("", buf.getvalue())
    return [part for chunk in text.split("\n") for part in chunk.split("\r") if part.strip()]


def drive(width: int, description: str = "applying 12 op(s)") -> list[str]:
    buf = io.StringIO()
    bars = Bars(Console(file=buf, force_terminal=True, width=width), transient=False)
    with bars.task(description, total=554) as advance:
        for _ in range(554):
            advance()
    return lines(buf)


def test_compact_at_80_columns_whole_description_no_wrap():
    out = drive(80)
    assert out and all(len(line) <= 80 for line in out)
    last = out[-1]
    assert last.startswith("applying 12 op(s) ") and "554/554" in last and "ETA" in last


def test_wide_terminal_shows_elapsed_and_time_left():
    last = drive(140)[-1]
    assert "554/554" in last and "left" in last and re.search(r"\d:\d\d:\d\d", last)


def test_nothing_on_a_pipe():
    buf = io.StringIO()
    bars = Bars(Console(file=buf, force_terminal=False, width=80))
    with bars.task("grading 10 items", total=10) as advance:
        advance(10)
    assert buf.getvalue() == ""
    assert reporter_for(False) is None
    assert isinstance(reporter_for(True), Bars)
    with pytest.raises(TypeError):
        reporter_for("yes")


class Recorder:
    def __init__(self):
        self.tasks: list[list] = []

    @contextlib.contextmanager
    def task(self, description, total):
        record = [description, total, 0]
        self.tasks.append(record)

        def advance(n=1):
            record[2] += n

        yield advance


def test_apply_ops_feeds_a_reporter(tiny_family):
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    fam = Family(tiny_family)
    rec = Recorder()
    items = list(fam.split("dev").items)
    apply_ops(fam.pool(), items, fam.tasks, jobs=1, progress=rec, description="applying ops")
    assert rec.tasks == [["applying ops", len(items), len(items)]]
    rec2 = Recorder()
    apply_ops(fam.pool(), items, fam.tasks, jobs=2, progress=rec2, description="again")  # parallel path
    assert rec2.tasks == [["again", len(items), len(items)]]


def test_evolve_births_and_audits_report_progress(tiny_family, tmp_path):
    from vx.evolve import EvolveConfig, evolve_family

    rec = Recorder()
    evolve_family(
        tiny_family, config=EvolveConfig(rounds=2, seed=3, jobs=1), out=tmp_path / "r.vxrun.sqlite", progress=rec
    )
    names = [t[0] for t in rec.tasks]
    assert names[0].startswith("applying") and any(n.startswith("audit") for n in names)
    assert all(t[1] == t[2] for t in rec.tasks)  # every bar reached its total


def test_stage_callback_draws_one_bar_per_stage():
    buf = io.StringIO()
    bars = Bars(Console(file=buf, force_terminal=True, width=80), transient=False)
    update = bars.stage()
    update("running reference solutions", 4, 0)
    for _ in range(4):
        update("running reference solutions", None, 1)
    update("grading outputs (hidden tests)", None, 0)
    update("grading outputs (hidden tests)", 2, 2)
    bars.close_stages(update)
    out = lines(buf)
    assert any("running reference solutions" in x and "4/4" in x for x in out)
    assert any("grading outputs (hidden tests)" in x and "2/2" in x for x in out)


def test_evolve_history_is_compact_at_80_columns():
    from vx.cli.evolve import _history_table

    expr = "(any crash fails_visible_example returns_not_print_only wrong_entry_point timeout)"
    rows = [
        {
            "round": 0,
            "objective": 0.83,
            "a_dev": 0.86,
            "a_train": 0.96,
            "audit_agreement": 0.86,
            "candidates": 1,
            "pool_size": 12,
            "born": 0,
            "rejected": 0,
            "incumbent": expr,
            "replaced": False,
        },
        {
            "round": 1,
            "objective": 0.98,
            "a_dev": 1.0,
            "a_train": 0.98,
            "audit_agreement": 0.9,
            "candidates": 1307,
            "pool_size": 18,
            "born": 6,
            "rejected": 11,
            "incumbent": "(any fails_visible_example hardcodes_example)",
            "replaced": True,
        },
    ]
    buf = io.StringIO()
    Console(file=buf, width=80, force_terminal=False).print(_history_table(rows, width=80))
    out = buf.getvalue()
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "incumbent" not in out.splitlines()[1]  # no squeezed column
    for name in ("fails_visible_example", "returns_not_print_only", "hardcodes_example", "wrong_entry_point"):
        assert name in out  # every op name whole
    wide = io.StringIO()
    Console(file=wide, width=160).print(_history_table(rows, width=160))
    assert "incumbent" in wide.getvalue()
