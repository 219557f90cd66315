"""`vx report`: the HTML page renders every section from a real (tiny) run file."""

from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from vx.cli.main import main


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.tags, self.stack_ok = set(), [], True

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k == "id":
                self.ids.add(v)


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    from pathlib import Path

    from vx.evolve import EvolveConfig, evolve_family

    d = tmp_path_factory.mktemp("run")
    r = evolve_family(
        Path(__file__).parents[1] / "fixtures" / "tiny",
        config=EvolveConfig(rounds=2, seed=3),
        out=d / "t.vxrun.sqlite",
        vx_out=d / "t.vx",
    )
    return r.run_path


def test_report_has_every_section(run_file, tmp_path):
    from vx.evolve.html import SECTIONS

    out = tmp_path / "r.html"
    res = CliRunner().invoke(main, ["report", str(run_file), "--out", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    p = _Collect()
    p.feed(page)
    assert set(SECTIONS) <= p.ids
    assert "Locked agreement per round (audit)" in page
    import re

    assert not re.search(r"(src|href)=['\"]?(https?:)?//", page)  # nothing to fetch: viewable offline
    pytest.importorskip("matplotlib")
    assert page.count("<svg") >= 3  # objective, audit, funnel plots are inline


def test_report_on_a_non_run_file_is_a_clean_error(tmp_path):
    bogus = tmp_path / "x.sqlite"
    bogus.write_text("not a database")
    res = CliRunner().invoke(main, ["report", str(bogus)])
    assert res.exit_code == 2 and "not a vx run file" in res.output


@pytest.fixture(scope="module")
def run_with_locked_misses(tmp_path_factory):
    """A run on a copy of the tiny family whose locked labels are all flipped: evolution never reads
    them, so the run is the same, and every locked item becomes a miss the report must list."""
    import json
    import shutil
    from pathlib import Path

    from vx.evolve import EvolveConfig, evolve_family

    d = tmp_path_factory.mktemp("flipped")
    fam = d / "tiny"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "tiny", fam, ignore=shutil.ignore_patterns("__pycache__"))
    rows = [json.loads(line) for line in (fam / "locked.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        row["label"] = "pass" if row["label"] == "fail" else "fail"
    (fam / "locked.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = evolve_family(fam, config=EvolveConfig(rounds=1, seed=3), out=d / "f.vxrun.sqlite", vx_out=d / "f.vx")
    return r.run_path


def test_report_layout_fixes_and_locked_misses(run_with_locked_misses, tmp_path):
    """Prose columns are left-aligned and roomy, descriptions' `code` spans are rendered, the locked
    misses are listed (an audit, shown to people), plots use the data's range and whole-number op counts."""
    import re

    from vx.evolve.html import render_html
    from vx.evolve.store import RunStore

    run_file = run_with_locked_misses
    page = render_html(run_file)
    assert "<h2>Op pool</h2>" in page
    ops = page[page.index("id='ops'") : page.index("id='disagreements'")]
    assert ops.count("<td class='prose'>") >= 3  # every op's description
    assert "<td class='num'>" in ops
    from vx.families.family import Family

    with RunStore(run_file) as s:
        locked, family_dir = s.verdicts("locked"), s.meta()["family_dir"]
    labels = {it.id: it.label for it in Family(family_dir).audit().labeled_split().items}
    bad = [v for v in locked if (v["final"] == "fail") != (labels[v["item"]] < 0.5)]
    assert locked and len(bad) == len(locked)  # every label flipped
    section = page[page.index("id='locked-misses'") :]
    assert f"Locked misses ({len(bad)} of {len(locked)}, audit)" in section
    for v in bad:
        assert f"<code>{v['item']}</code>" in section
    assert not re.search(r"<td[^>]*>[^<]*`", page)  # no raw backticks left in cells


def test_inline_markdown_and_value_range():
    from vx.evolve.html import value_range
    from vx.pages import inline_markdown

    assert inline_markdown("calls `f(x)` <b>") == "calls <code>f(x)</code> &lt;b&gt;"
    assert inline_markdown("one ` tick") == "one ` tick"
    lo, hi = value_range([0.91, 0.95, 0.97])
    assert 0.85 < lo < 0.91 and 0.97 < hi <= 1.0  # the run's own range, not a fixed 0-1
    assert value_range([1.0, 1.0]) == (0.95, 1.0) and value_range([0.0]) == (0.0, 0.05)
    assert value_range([None]) == (0.0, 1.0)


def test_funnel_plot_ticks_are_whole_numbers(run_file):
    pytest.importorskip("matplotlib")
    import re

    from vx.evolve.html import render_html

    page = render_html(run_file)
    funnel = page[page.index("id='funnel'") : page.index("id='expression'")]
    ticks = re.findall(r"<!-- ([0-9.]+) -->", funnel)  # matplotlib labels each tick in an SVG comment
    assert ticks and all(float(t) == int(float(t)) for t in ticks), ticks


def test_evolution_result_displays_in_a_notebook(tmp_path):
    from pathlib import Path

    from vx.evolve import EvolveConfig, evolve_family

    r = evolve_family(
        Path(__file__).parents[1] / "fixtures" / "tiny",
        config=EvolveConfig(rounds=1, seed=3),
        out=tmp_path / "n.vxrun.sqlite",
        vx_out=tmp_path / "n.vx",
    )
    html = r._repr_html_()
    assert "<b>evolved</b>" in html and "objective S" in html and "locked evolved (audit)" in html
    assert f"<code>{r.best_text}</code>" in html and "<script" not in html
