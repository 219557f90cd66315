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
    r = evolve_family(Path(__file__).parents[1] / "fixtures" / "tiny", config=EvolveConfig(rounds=2, seed=3), out=d / "t.vxrun.sqlite",
                      vx_out=d / "t.vx")
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
