"""The evaluation page in a real headless browser (Debian's `chromium`; skipped when it is absent):
it renders, its filters change the visible rows (from the URL fragment and from the controls'
change events), a row click opens its failure capsule, and hostile text never runs as script."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium here (apt-get install chromium)")

# would set data-pwned on <body> if any of it ran as HTML or script
PAYLOAD = (
    "</script><img src=x onerror=\"document.body.setAttribute('data-pwned','1')\"><script>"
    "document.body.setAttribute('data-pwned','2')</script>"
)


def dump_dom(page: Path, tmp_path: Path, fragment: str = "") -> str:
    profile = tmp_path / f"profile-{abs(hash(fragment))}"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        page.resolve().as_uri() + fragment,
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("chromium did not finish within 90 s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def pwned(dom: str) -> bool:
    """Did any payload run? (It sets an attribute on <body>; the payload's own text is harmless.)"""
    return re.search(r"<body[^>]*data-pwned", dom) is not None


def visible(dom: str) -> int:
    return int(re.search(r'id="f-count"[^>]*data-visible="(\d+)"', dom).group(1))


def hidden_items(dom: str) -> int:
    return len(re.findall(r'<tbody class="item[^"]*"[^>]*\shidden(?:=""|\s|>)', dom))


@pytest.fixture
def hostile_page(tiny_family, tmp_path):
    tasks = [json.loads(line) for line in (tiny_family / "tasks.jsonl").read_text().splitlines()]
    tasks[1]["keyword"] = PAYLOAD  # reaches the page through missing_keyword's message
    (tiny_family / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    dev = [json.loads(line) for line in (tiny_family / "dev.jsonl").read_text().splitlines()]
    dev[0]["output"] = "an apple " + PAYLOAD  # the output itself (shown in the capsule)
    dev[2]["id"] = "d3" + PAYLOAD  # an item id
    (tiny_family / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in dev))
    page = tmp_path / "eval.html"
    res = CliRunner().invoke(main, ["eval", str(tiny_family / "seed.vx"), "-j", "1", "--html", str(page), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    return page, doc


def test_page_renders_filters_and_never_runs_candidate_text(hostile_page, tmp_path):
    page, doc = hostile_page
    n = len(doc["items"])
    html = page.read_text()
    assert "http://" not in html and "https://" not in html  # nothing to fetch: offline by construction
    assert PAYLOAD not in html  # only escaped copies

    dom = dump_dom(page, tmp_path)
    assert 'data-ready="1"' in dom  # the script ran to its end
    assert not pwned(dom)
    assert visible(dom) == n and hidden_items(dom) == 0
    assert "never appears" in dom and "onerror=" in dom  # the payload is there, as text

    fails = sum(i["verdict"] == "fail" for i in doc["items"])
    assert 0 < fails < n
    dom = dump_dom(page, tmp_path, "#verdict=fail")
    assert visible(dom) == fails and hidden_items(dom) == n - fails

    fired = sum(any(f["op"] == "missing_keyword" for f in i["fired"]) for i in doc["items"])
    dom = dump_dom(page, tmp_path, "#op=missing_keyword&label=fail")
    assert visible(dom) == fired and not pwned(dom)
    dom = dump_dom(page, tmp_path, "#q=d3")
    assert visible(dom) == 1


def test_controls_change_the_visible_rows(hostile_page, tmp_path):
    """Drive the page as a person would: change a select, click a row; the page's own listeners act."""
    page, doc = hostile_page
    driver = """<script>
    (function(){
      var sel=document.getElementById('f-verdict'); sel.value='pass';
      sel.dispatchEvent(new Event('change'));
      var afterPass=document.getElementById('f-count').dataset.visible;
      sel.value=''; sel.dispatchEvent(new Event('change'));
      var afterAny=document.getElementById('f-count').dataset.visible;
      var first=document.querySelector('tbody.item');
      var before=first.querySelector('tr.capsule').hidden;
      first.querySelector('tr.head').click();
      var after=first.querySelector('tr.capsule').hidden;
      document.body.setAttribute('data-result', [afterPass, afterAny, before, after, location.hash].join('|'));
    })();
    </script></body>"""
    driven = tmp_path / "driven.html"
    driven.write_text(page.read_text().replace("</body>", driver))
    dom = dump_dom(driven, tmp_path)
    result = re.search(r'data-result="([^"]*)"', dom).group(1).split("|")
    passes = sum(i["verdict"] == "pass" for i in doc["items"])
    assert result == [str(passes), str(len(doc["items"])), "true", "false", ""]
