"""The documentation as a test: the breakage a reader would hit.

* every relative link in README.md, CHANGELOG.md and docs/ names an existing file, and every anchor a heading
  that both GitHub and MkDocs generate (docs pages link only inside docs/, which MkDocs can serve);
* every ``vx`` command shown in a shell block of those files parses against the real command tree (click's own
  parser: no command runs), and every ``vx ...`` named in running text names a command and options that exist;
* every figure the README (and so the home page, docs/index.md, generated from it) states is stated in the same
  words by the page that owns it, so a re-measured figure cannot stay behind in the README;
* the dated results pages (``docs/results/YYYY-MM-DD-topic.md``) name their commit, machine and command;
* mkdocs.yml's nav names every page, the README stays a short front door, CI runs the README's test command,
  and the site builds (``mkdocs build --strict``; skipped when MkDocs is not installed).

Each checker is a plain function over text, so its own test feeds it the breakage and sees it reported.
``python tests/docs/test_docs.py`` prints every finding.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
CHANGELOG = ROOT / "CHANGELOG.md"
#: The README is a front door: what vx is, install, the two commands, a tour, the families, links.
README_MAX_BYTES = 12 * 1024

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
#: Fenced blocks whose lines may be shell commands (```text, ```python, ```lisp ... are not).
SHELL_LANGS = {"", "sh", "bash", "shell", "console"}


def markdown_files() -> list[Path]:
    return [README, CHANGELOG, *sorted(DOCS.rglob("*.md"))]


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()


# --- markdown, as much as these files need ----------------------------------------------------------------------


def fenced_blocks(text: str) -> Iterator[tuple[str, list[tuple[int, str]]]]:
    """(language, [(line number, line), ...]) of every fenced code block."""
    fence: str | None = None
    lang = ""
    body: list[tuple[int, str]] = []
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence, lang, body = m.group(2), m.group(3).strip().lower(), []
        elif fence is not None and re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", line):
            yield lang, body
            fence = None
        elif fence is not None:
            body.append((n, line))


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines outside code blocks and HTML comments, code spans kept."""
    text = re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    fence: str | None = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m and (fence is None or m.group(2)[0] == fence):
            fence = None if fence else m.group(2)[0]
            continue
        if fence is None:
            yield n, line


def headings(text: str) -> list[str]:
    return [m.group(2) for _, line in prose_lines(text) if (m := HEADING.match(line))]


# --- links and anchors --------------------------------------------------------------------------------------------


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every relative link outside code blocks and code spans."""
    out = []
    for n, line in prose_lines(text):
        line = re.sub(r"(`+).*?\1", "", line)
        for target in re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                out.append((n, target))
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


def anchors(path: Path, slug: Callable[[str], str]) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for h in headings(path.read_text(encoding="utf-8")):
        s = slug(h)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}" if slug is slug_github else f"{s}_{n}")
    return out


def broken_links(path: Path, docs: Path) -> list[str]:
    bad = []
    for n, target in links(path.read_text(encoding="utf-8")):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path.resolve()
        where = f"{rel(path)}:{n}: ({target})"
        if not dest.exists():
            bad.append(f"{where}: no such file")
            continue
        if docs in path.parents and docs not in dest.parents and dest != docs:
            bad.append(f"{where}: a docs page may only link inside docs/ (MkDocs cannot serve the rest)")
            continue
        if anchor:
            if dest.suffix != ".md":
                bad.append(f"{where}: an anchor into a file that is not markdown")
            elif anchor not in anchors(dest, slug_github) & anchors(dest, slug_mkdocs):
                bad.append(f"{where}: no heading of {dest.name} has the anchor #{anchor} (on GitHub and in MkDocs)")
    return bad


def test_every_link_and_anchor_resolves() -> None:
    bad = [b for p in markdown_files() for b in broken_links(p, DOCS)]
    assert not bad, "\n".join(bad)


def test_the_link_check_sees_a_broken_link(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "b.md").write_text("# Bee\n\n## The `vx.sandbox` layers\n", encoding="utf-8")
    (tmp_path / "outside.md").write_text("# Out\n", encoding="utf-8")
    page = docs / "a.md"
    page.write_text(
        "[ok](b.md#the-vxsandbox-layers) [gone](c.md)\n[anchor](b.md#nope) `[code](c.md)`\n"
        "```\n[in a block](d.md)\n```\n[out](../outside.md)\n",
        encoding="utf-8",
    )
    bad = broken_links(page, docs)
    assert len(bad) == 3, bad
    assert "a.md:1: (c.md): no such file" in bad[0]
    assert "a.md:2: (b.md#nope)" in bad[1] and "#nope" in bad[1]
    assert "only link inside docs/" in bad[2]


# --- the commands shown parse -----------------------------------------------------------------------------------


def shell_commands(text: str) -> Iterator[tuple[int, str]]:
    """(line, command) of every `vx ...` command in the shell blocks of a page.

    In a block where some line starts with ``$ `` only those lines are commands (the rest is output);
    backslash continuations are joined; ``&&``, ``||``, ``;`` and ``|`` separate commands; leading
    ``VAR=value``, ``nice -n N`` and ``time`` are skipped. In a command, ``[--opt N]`` (an optional part, as in a
    usage line) reads as ``--opt N``, and a redirection ends it.
    """
    for lang, body in fenced_blocks(text):
        if lang not in SHELL_LANGS:
            continue
        prompted = any(line.lstrip().startswith("$ ") for _, line in body)
        joined: list[tuple[int, str]] = []
        pending: tuple[int, str] | None = None
        for n, line in body:
            s = line.strip()
            if pending is None and prompted:
                if not s.startswith("$ "):
                    continue
                s = s[2:]
            if pending is not None:
                n, s = pending[0], pending[1] + " " + s
            if s.endswith("\\"):
                pending = (n, s[:-1])
                continue
            pending = None
            joined.append((n, s))
        for n, s in joined:
            for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", s):
                m = re.match(r"^(?:\w+=\S*\s+)*(?:nice -n \d+\s+|time\s+)*(vx(?:\s.*)?)$", part.strip())
                if m:
                    yield n, m.group(1)


def root_command() -> click.Group:
    from vx.cli.main import main

    return main


def parse_error(line: str, root: click.Group) -> str | None:
    """Why `line` (a `vx ...` command) does not parse against `root`, or None; nothing is run."""
    try:
        argv = shlex.split(line, comments=True)[1:]
    except ValueError as e:
        return f"the shell cannot split it: {e}"
    redirect = [i for i, a in enumerate(argv) if re.match(r"^(?:\d?>|<|&>)", a)]
    argv = [a.strip("[]") if a.startswith("[") or a.endswith("]") else a for a in argv[: min(redirect, default=None)]]
    cmd: click.Command = root
    ctx = click.Context(root, info_name="vx")
    path = ["vx"]
    while isinstance(cmd, click.Group):
        if not argv or argv[0].startswith("-"):
            try:
                cmd.make_parser(ctx).parse_args(list(argv))
            except click.UsageError as e:
                return f"{' '.join(path)}: {e.format_message()}"
            return None
        sub = cmd.get_command(ctx, argv[0])
        if sub is None:
            return f"{' '.join(path)} has no command {argv[0]!r}"
        path.append(argv[0])
        ctx = click.Context(sub, info_name=argv[0], parent=ctx)
        cmd, argv = sub, argv[1:]
    try:
        _, extra, _ = cmd.make_parser(ctx).parse_args(list(argv))
    except click.UsageError as e:
        return f"{' '.join(path)}: {e.format_message()}"
    if extra and not ctx.allow_extra_args:
        return f"{' '.join(path)}: unexpected extra arguments {extra}"
    return None


def option_names(cmd: click.Command, ctx: click.Context) -> set[str]:
    """The option names of `cmd`, and of every command below it when it is a group."""
    names = {"--help", "-h"}
    for p in cmd.params:
        if isinstance(p, click.Option):
            names.update(p.opts)
            names.update(p.secondary_opts)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                names |= option_names(sub, click.Context(sub, info_name=name, parent=ctx))
    return names


def inline_command_errors(text: str, root: click.Group) -> list[tuple[int, str]]:
    """Commands named in running text (``vx evolve FAMILY --rounds N``): the command and its options exist.

    Placeholders stay placeholders: an upper-case or bracketed word where a command name would be is skipped,
    and ``a|b`` or ``a/b`` offers alternatives (the first command is checked, and every option).
    """
    out = []
    for n, line in prose_lines(text):
        for m in re.finditer(r"`(vx [^`]+)`", line):
            words = m.group(1).replace("\\|", "|").split()[1:]
            cmd: click.Command = root
            ctx = click.Context(root, info_name="vx")
            while isinstance(cmd, click.Group) and words and not words[0].startswith("-"):
                word = re.split(r"[|/]", words[0])[0]
                if word.isupper() or word.startswith("<") or word.endswith(":") or not word:
                    break
                sub = cmd.get_command(ctx, word)
                if sub is None:
                    out.append((n, f"`{m.group(1)}`: {ctx.command_path} has no command {word!r}"))
                    break
                ctx = click.Context(sub, info_name=word, parent=ctx)
                cmd, words = sub, words[1:]
            known = option_names(cmd, ctx)
            for w in words:
                if not re.match(r"^--?[A-Za-z]", w):
                    continue
                for opt in re.split(r"[/|]", re.split(r"[=\[]", w)[0].rstrip(",.:;)")):
                    if opt.startswith("-") and opt not in known:
                        out.append((n, f"`{m.group(1)}`: {ctx.command_path} has no option {opt}"))
    return out


def test_every_shell_example_parses() -> None:
    root = root_command()
    bad = []
    seen = 0
    for p in markdown_files():
        for n, line in shell_commands(p.read_text(encoding="utf-8")):
            seen += 1
            err = parse_error(line, root)
            if err:
                bad.append(f"{rel(p)}:{n}: {line}\n    {err}")
    assert seen >= 10, f"only {seen} vx commands found in the docs' shell blocks: is the extraction broken?"
    assert not bad, "commands shown in the docs that the CLI no longer accepts:\n" + "\n".join(bad)


def test_every_command_named_in_the_text_exists() -> None:
    root = root_command()
    bad = [f"{rel(p)}:{n}: {e}" for p in markdown_files() for n, e in inline_command_errors(p.read_text("utf-8"), root)]
    assert not bad, "\n".join(bad)


@click.group()
def _toy() -> None:
    """A command tree for the checkers' own tests."""


@_toy.command("eval")
@click.argument("expr")
@click.option("--dataset", type=click.Choice(["dev", "train"]))
@click.option("--json", "as_json", is_flag=True)
def _toy_eval(expr: str, dataset: str, as_json: bool) -> None:
    raise AssertionError("a checker ran a command")


def test_the_command_check_sees_a_stale_example() -> None:
    page = (
        "```sh\n$ vx eval seed.vx --dataset dev   # fine\nvx: output, not a command\n"
        "$ vx eval seed.vx \\\n    --datset dev\n$ vx evaluate x.vx && vx eval a b\n"
        "$ vx eval x.vx [--json] > out.json\n```\n"
        "```python\nvx eval --nope\n```\n"
        "Run `vx eval EXPR.vx --json`, not `vx eval EXPR.vx --jsn`, nor `vx frobnicate`; `vx COMMAND --help`.\n"
    )
    found = list(shell_commands(page))
    assert [n for n, _ in found] == [2, 4, 6, 6, 7], found
    errors = [parse_error(c, _toy) for _, c in found]
    assert errors[0] is None
    assert errors[1] is not None and "--datset" in errors[1]
    assert errors[2] is not None and "'evaluate'" in errors[2]
    assert errors[3] is not None and "unexpected extra argument" in errors[3].lower()
    assert errors[4] is None
    inline = inline_command_errors(page, _toy)
    assert [e for _, e in inline] == [
        "`vx eval EXPR.vx --jsn`: vx eval has no option --jsn",
        "`vx frobnicate`: vx has no command 'frobnicate'",
    ], inline


# --- the README states the figures the pages state -----------------------------------------------------------

#: A measured figure: a number with a unit of time, size, rate or share, or a decimal; not a version
#: (``Python ≥ 3.11``, ``torch==2.13.0``).
FIGURE = re.compile(
    r"(?<![\w.@/=-])(?<!≥ )(?<!>= )(?<!Python )(?:\d[\d,]*(?:\.\d+)?\s?(?:%|×|x\b|ms\b|µs\b|s\b|min\b|KB\b|MB\b|GB\b|"
    r"items/s\b|attempts/s\b)|\d[\d,]*\.\d+(?!\d|\.\d))"
)
STOP = set(
    "with from that this than they their there which when where what have into each only over also more less".split()
)


def words(s: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9+_@-]{3,}", s.lower()) if w not in STOP]


def statements(text: str) -> list[str]:
    """Sentences of the prose and whole table rows, code spans and link targets flattened to text."""
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.extend(re.split(r"(?<=[.;])\s+(?=[A-Z(])", " ".join(para)))
            para.clear()

    for _, line in prose_lines(text):
        line = re.sub(r"\]\([^)]*\)", "]", line).replace("`", "").replace("*", "").strip()
        if line.startswith("|"):
            flush()
            out.append(line)
        elif not line or HEADING.match(line):
            flush()
            if line:
                out.append(line)
        else:
            para.append(line)
    flush()
    return [s for s in out if s]


def figure_mismatches(front: str, owners: list[str]) -> list[str]:
    """Figures of `front` that no owning page states in the same words.

    A figure is stated "in the same words" when a sentence or table row of an owning page holds the same figure
    and at least two of the (up to five) content words before it in the front page's sentence (one, when only
    one precedes it).
    """
    pool = [(s, set(words(s))) for text in owners for s in statements(text)]
    out = []
    for sentence in statements(front):
        for m in FIGURE.finditer(sentence):
            context = words(sentence[: m.start()])[-5:]
            if not context:
                continue
            need = min(2, len(context))
            same = re.compile(r"(?<![\d.])" + re.escape(m.group(0)).replace(r"\ ", r"\s?") + r"(?![\d])")
            if not any(same.search(s) and len(ws & set(context)) >= need for s, ws in pool):
                out.append(f"{m.group(0)!r} after {' '.join(context)!r} in: {sentence.strip()[:160]}")
    return out


def test_the_readme_states_the_figures_the_docs_state() -> None:
    """The README (and so the home page, docs/index.md) repeats figures of the pages; they must agree."""
    owners = [p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md")) if p.name != "index.md"]
    bad = [f"README.md: {b}" for b in figure_mismatches(README.read_text(encoding="utf-8"), owners)]
    assert not bad, (
        "figures in the README that no other docs page states in the same words (re-measured? say it where the "
        "figure lives and copy it):\n" + "\n".join(bad)
    )


def test_the_figure_check_sees_a_stale_figure() -> None:
    owner = "On the two files: estimated pass@1 0.682, true 0.565.\n\n"
    owner += "| family | balanced |\n|---|---|\n| CodeT family | 0.925 |\n"
    assert figure_mismatches("The estimated pass@1 is 0.682 and the true pass@1 0.565.", [owner]) == []
    assert figure_mismatches("| CodeT family | 0.925 |", [owner]) == []
    stale = figure_mismatches("The estimated pass@1 is 0.690 (true 0.565); CodeT balanced 0.925.", [owner])
    assert len(stale) == 2 and "0.690" in stale[0] and "0.925" in stale[1], stale


# --- the site's home page is the README ---------------------------------------------------------------------------


def home_page(readme: str) -> str:
    """docs/index.md from README.md: links into docs/ made relative to it, links outside it named as files."""

    def relink(m: re.Match[str]) -> str:
        text, target = m.group(1), m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            return m.group(0)
        if target.startswith("docs/"):
            return f"[{text}]({target[len('docs/') :]})"
        return f"{text} (`{target}` in the repository)"

    body = re.sub(r"\[([^\]]*)\]\(([^)\s]+)\)", relink, readme)
    note = "<!-- Generated from README.md: python tests/docs/test_docs.py --write-index -->\n"
    return note + body


def test_the_home_page_is_the_readme() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    assert index == home_page(README.read_text(encoding="utf-8")), (
        "docs/index.md differs from README.md: edit README.md, then run python tests/docs/test_docs.py --write-index"
    )


def test_the_home_page_relinks() -> None:
    out = home_page("See [the sandbox](docs/sandbox.md#layers), [log](CHANGELOG.md) and [x](https://x.org).\n")
    assert out.endswith(
        "See [the sandbox](sandbox.md#layers), log (`CHANGELOG.md` in the repository) and [x](https://x.org).\n"
    )


# --- the design's sections, as the code cites them ------------------------------------------------------------


def design_citations(root: Path) -> list[tuple[str, int, str]]:
    """(file, line, citation) of every ``design.md §N`` and every bare ``DESIGN §`` in code, tests, examples, docs."""
    out = []
    for top in ("src", "tests", "examples", "benchmarks", "scripts", "docs"):
        for path in sorted((root / top).rglob("*")):
            if not path.is_file() or path.suffix not in {".py", ".lark", ".toml", ".md", ".sh"}:
                continue
            if path.resolve() == Path(__file__).resolve():
                continue  # this file names the forms it looks for
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                for m in re.finditer(r"design\.md §\d+|DESIGN\b[^\n]{0,3}§?\s*\d*", line):
                    out.append((rel(path), n, m.group(0)))
    return out


def dangling_design_citations(citations: list[tuple[str, int, str]], design: str) -> list[str]:
    sections = {m.group(1) for m in re.finditer(r"^## (\d+)\. ", design, re.M)}
    bad = []
    for where, n, cite in citations:
        m = re.fullmatch(r"design\.md §(\d+)", cite)
        if m is None:
            bad.append(f"{where}:{n}: {cite!r} cites no document: cite docs/design.md §N")
        elif m.group(1) not in sections:
            bad.append(f"{where}:{n}: docs/design.md has no section {m.group(1)}")
    return bad


def test_every_design_citation_has_a_target() -> None:
    cites = design_citations(ROOT)
    assert cites, "no code cites docs/design.md: is the search broken?"
    bad = dangling_design_citations(cites, (DOCS / "design.md").read_text(encoding="utf-8"))
    assert not bad, "\n".join(bad)


def test_the_design_check_sees_a_dangling_citation() -> None:
    design = "# D\n\n## 1. Verdicts\n\n## 2. The language\n"
    cites = [("a.py", 1, "design.md §2"), ("a.py", 2, "design.md §7"), ("b.py", 3, "DESIGN §1")]
    assert dangling_design_citations(cites, design) == [
        "a.py:2: docs/design.md has no section 7",
        "b.py:3: 'DESIGN §1' cites no document: cite docs/design.md §N",
    ]


# --- results pages, the nav, the README ------------------------------------------------------------------------

RESULT_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$")


def results_page_problems(name: str, text: str) -> list[str]:
    """A dated results page names its date (in its file name), commit, machine and the exact command."""
    out = []
    if not RESULT_NAME.match(name):
        out.append(f"{name}: a results page is named YYYY-MM-DD-topic.md")
    if not re.search(r"\b[0-9a-f]{7,40}\b", text):
        out.append(f"{name}: names no commit (a 7+ digit hash)")
    if not re.search(r"(?i)\bmachine\b", text):
        out.append(f"{name}: says nothing of the machine it ran on")
    has_command = any(lang in SHELL_LANGS and body for lang, body in fenced_blocks(text))
    if not has_command:
        out.append(f"{name}: shows no command (a shell block)")
    return out


def test_every_results_page_names_its_commit_machine_and_command() -> None:
    pages = sorted((DOCS / "results").glob("*.md"))
    bad = [b for p in pages if p.name != "index.md" for b in results_page_problems(p.name, p.read_text("utf-8"))]
    assert not bad, "\n".join(bad)


def test_the_results_check_sees_a_bare_page() -> None:
    assert (
        results_page_problems("2026-12-01-x.md", "# X\n\nAt 1a2b3c4, machine: 2 cores.\n\n```sh\nvx eval\n```\n") == []
    )
    bad = results_page_problems("quality-run.md", "# X\n\nFigures.\n")
    assert len(bad) == 4, bad


def nav_pages() -> list[str]:
    return re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)


def test_the_nav_names_every_page_and_only_pages_that_exist() -> None:
    nav = nav_pages()
    assert nav, "mkdocs.yml has no nav"
    missing = [p for p in nav if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml names pages that do not exist: {missing}"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    unlisted = sorted(pages - set(nav))
    assert not unlisted, f"pages in docs/ that mkdocs.yml's nav does not list (no reader finds them): {unlisted}"


def test_readme_is_a_short_front_door() -> None:
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; the front door keeps to {README_MAX_BYTES}"
    assert "docs/index.md" in README.read_text(encoding="utf-8"), "README.md must link the documentation site"


def test_changelog_keeps_an_unreleased_section() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert re.search(r"^## \[Unreleased\]\s*$", text, re.M), "CHANGELOG.md needs its '## [Unreleased]' heading"


def test_ci_runs_the_readme_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    commands = [
        m.strip()
        for _, body in fenced_blocks(text)
        for _, ln in body
        for m in re.findall(r"(python -m pytest[^#\n&]*)", ln)
    ]
    assert commands, "the README shows no test command (python -m pytest ...)"
    ci = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert commands[0] in ci, f".ci/run must run the README's test command {commands[0]!r}"


# --- the site builds -------------------------------------------------------------------------------------------


def test_mkdocs_build_strict(tmp_path: Path) -> None:
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


if __name__ == "__main__":  # a report for people: python tests/docs/test_docs.py [--write-index]
    if "--write-index" in sys.argv:
        (DOCS / "index.md").write_text(home_page(README.read_text(encoding="utf-8")), encoding="utf-8")
    root = root_command()
    for p in markdown_files():
        text = p.read_text(encoding="utf-8")
        for b in broken_links(p, DOCS):
            print(b)
        for n, line in shell_commands(text):
            if err := parse_error(line, root):
                print(f"{rel(p)}:{n}: {line}\n    {err}")
        for n, e in inline_command_errors(text, root):
            print(f"{rel(p)}:{n}: {e}")
    owners = [p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md")) if p.name != "index.md"]
    for b in figure_mismatches(README.read_text(encoding="utf-8"), owners):
        print(f"README.md: {b}")
