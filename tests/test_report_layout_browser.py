"""The run report's layout in a real headless Chromium (Debian's `chromium`; skipped when absent), at a
laptop's 1366 px and a phone's 390 px: the page never scrolls sideways, at 1366 px no table needs its
own scroll box either, the table of contents links every section, and the locked misses carry their
outputs, collapsed. Screenshots of both widths are written for a person to look at: their paths are
printed (``pytest -s`` or the test report shows them); set VX_SCREENSHOT_DIR to keep them elsewhere."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from vx.evolve.html import SECTIONS, write_report

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (apt-get install chromium)")
FIXTURES = Path(__file__).parent / "fixtures"

#: measures the page as laid out and posts the figures to the host page (below)
MEASURE = """<script>
window.addEventListener('load', function(){
  var doc = document.documentElement, scrolling = [], wide = [];
  document.querySelectorAll('.scroll').forEach(function(b){
    if (b.scrollWidth > b.clientWidth + 1) {
      var th = b.querySelector('th'); scrolling.push(th ? th.textContent : '?'); }
  });
  document.querySelectorAll('body *').forEach(function(el){
    if (el.getBoundingClientRect().right > window.innerWidth + 1 && !el.closest('.scroll')) {
      wide.push(el.tagName + '.' + el.className); }
  });
  parent.postMessage(JSON.stringify({inner: window.innerWidth, page: doc.scrollWidth, scrolling: scrolling,
      wide: wide.slice(0, 5),
      toc: Array.prototype.map.call(document.querySelectorAll('nav.toc a'),
                                    function(a){ return a.getAttribute('href'); }),
      outputs: document.querySelectorAll('#locked-misses details.output').length}), '*');
});
</script></body>"""

#: the report in a frame exactly `width` px wide (headless Chromium's window is at least 500 px wide, so a
#: phone's width is had with a frame); the host writes what the frame measured on its <body>
HOST = """<!DOCTYPE html><html><body style="margin:0">
<iframe src="{src}" style="border:0;width:{width}px;height:4000px;display:block"></iframe>
<script>
window.addEventListener('message', function(e){{ document.body.setAttribute('data-layout', e.data); }});
</script>
</body></html>"""


def _chromium(page: Path, tmp_path: Path, width: int, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--allow-file-access-from-files",
        f"--user-data-dir={tmp_path / f'profile-{width}-{len(extra)}'}",
        f"--window-size={max(width, 500)},4000",
        "--virtual-time-budget=8000",
        *extra,
        page.resolve().as_uri(),
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("chromium did not finish within 120 s")
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The report of a real (tiny) run, with a long locked output and a long op description to lay out."""
    from vx.evolve import EvolveConfig, evolve_family

    d = tmp_path_factory.mktemp("layout")
    fam = d / "tiny"
    shutil.copytree(FIXTURES / "tiny", fam, ignore=shutil.ignore_patterns("__pycache__"))
    locked = [json.loads(line) for line in (fam / "locked.jsonl").read_text().splitlines()]
    locked[0]["output"] = "an unbroken " + "x" * 400 + " line, and\n" + "many lines\n" * 40
    (fam / "locked.jsonl").write_text("".join(json.dumps(r) + "\n" for r in locked))
    r = evolve_family(fam, config=EvolveConfig(rounds=2, seed=3), out=d / "t.vxrun.sqlite", vx_out=d / "t.vx")
    return write_report(r.run_path, d / "t.html")


@pytest.mark.parametrize("width", [1366, 390])
def test_report_fits_the_screen(report, tmp_path, width):
    measured = tmp_path / "measured.html"
    measured.write_text(report.read_text().replace("</body></html>", MEASURE + "</html>"))
    host = tmp_path / "host.html"
    host.write_text(HOST.format(src=measured.name, width=width))
    dom = _chromium(host, tmp_path, width, "--dump-dom").stdout
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, "the report's measuring script did not report back"
    layout = json.loads(html.unescape(found.group(1)))
    assert layout["inner"] == width
    assert layout["page"] <= width, f"the page scrolls sideways at {width} px: {layout}"
    assert not layout["wide"], f"elements wider than the screen at {width} px: {layout['wide']}"
    if width >= 1366:  # a laptop: every table fits whole, none needs its own scroll box
        assert not layout["scrolling"], f"tables that scroll at {width} px: {layout['scrolling']}"
    assert [h.lstrip("#") for h in layout["toc"]] == [s for s in SECTIONS], layout["toc"]
    assert layout["outputs"] >= 1  # the locked misses show what was graded, collapsed

    shots = Path(os.environ.get("VX_SCREENSHOT_DIR") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"report-{width}px.png"
    framed = tmp_path / "framed.html"
    framed.write_text(HOST.format(src=report.resolve().as_uri(), width=width))
    _chromium(framed, tmp_path, width, f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000
    _crop(shot, width)
    print(f"screenshot of the run report at {width} px: {shot}")


def _crop(shot: Path, width: int) -> None:
    """Cut the screenshot to the frame's width (the window is at least 500 px wide); needs Pillow."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(shot) as image:
        if image.width > width:
            image.crop((0, 0, width, image.height)).save(shot)
