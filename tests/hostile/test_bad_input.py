"""Bad input: every case is a clear vx error (file, line or field, what to do)
with a non-zero exit, never a Python traceback, a hang or a silent success."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from vx.cli.main import main


def run(*args, timeout: float = 120.0):
    """Invoke the CLI in a thread (a hang fails the test instead of blocking the suite)."""
    box: dict = {}

    def target() -> None:
        box["result"] = CliRunner().invoke(main, [str(a) for a in args])

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"vx {' '.join(map(str, args))} hung"
    res = box["result"]
    assert res.exception is None or isinstance(res.exception, SystemExit), (
        f"traceback instead of an error: {res.exception!r}\n{res.output}"
    )
    return res


def assert_error(res, *needles: str) -> None:
    assert res.exit_code != 0, f"accepted silently:\n{res.output}"
    text = " ".join(res.output.split())
    for needle in needles:
        assert needle in text, f"{needle!r} not in: {text}"


def edit_toml(fam: Path, old: str, new: str) -> None:
    path = fam / "family.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def eval_locked(fam: Path, *extra):
    return run("eval", fam / "seed.vx", "--family", fam, "-d", "locked", "-j", "1", "--no-cache", *extra)


# --------------------------------------------------------------------------------------------
# family.toml


@pytest.mark.parametrize(
    "old, new, needles",
    [
        ('seed = "seed.vx"', 'sed = "seed.vx"', ["family.toml", "sed", "seed"]),
        ("[splits]", "[split]", ["family.toml", "split", "splits"]),
        ('name = "humaneval"', "name = 7", ["family.toml", "name", "string"]),
        ('root = "parses"', "root = [1]", ["family.toml", "root", "string"]),
        ("w = 1.0", "w = -5", ["family.toml", "w", "objective"]),
        ("fail_weight = 2.0", "fail_weight = 0", ["family.toml", "fail_weight"]),
        ("w = 1.0", "ww = 1.0", ["family.toml", "ww", "w"]),
        ('train = "train.jsonl"', "train = 3", ["family.toml", "train", "string"]),
    ],
    ids=[
        "unknown-key",
        "unknown-table",
        "name-not-string",
        "root-not-string",
        "negative-w",
        "zero-fail-weight",
        "unknown-objective-key",
        "split-path-not-string",
    ],
)
def test_bad_family_toml(fam: Path, old: str, new: str, needles: list[str]) -> None:
    edit_toml(fam, old, new)
    res = eval_locked(fam)
    assert_error(res, *needles)


def test_unknown_family_key_names_its_line(fam: Path) -> None:
    edit_toml(fam, 'seed = "seed.vx"', 'sed = "seed.vx"')
    line = next(n for n, text in enumerate((fam / "family.toml").read_text().splitlines(), 1) if text.startswith("sed"))
    assert_error(eval_locked(fam), f"family.toml:{line}", "did you mean 'seed'")


@pytest.mark.parametrize(
    "content", [b"\x00\x01\xff\xfe binary", "name = 'caf\xe9'\n".encode("latin-1")], ids=["binary", "latin-1"]
)
def test_family_toml_that_is_not_utf8(fam: Path, content: bytes) -> None:
    (fam / "family.toml").write_bytes(content)
    assert_error(eval_locked(fam), "family.toml", "UTF-8")


# --------------------------------------------------------------------------------------------
# task and item records


def rewrite_jsonl(path: Path, change) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    change(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def set_field(index: int, key: str, value):
    def change(rows):
        rows[index][key] = value

    return change


@pytest.mark.parametrize(
    "split, index, key, value, needles",
    [
        ("locked", 1, "task", 53, ["locked.jsonl:2", "task", "string"]),
        ("locked", 0, "id", ["x"], ["locked.jsonl:1", "id"]),
        ("locked", 2, "lable", "pass", ["locked.jsonl:3", "lable", "label"]),
        ("locked", 0, "meta", "not an object", ["locked.jsonl:1", "meta"]),
    ],
    ids=["task-not-string", "id-not-string", "unknown-item-key", "meta-not-object"],
)
def test_bad_item_records(fam: Path, split: str, index: int, key: str, value, needles) -> None:
    rewrite_jsonl(fam / f"{split}.jsonl", set_field(index, key, value))
    assert_error(eval_locked(fam), *needles)


@pytest.mark.parametrize(
    "key, value, needles",
    [
        ("entry_point", 5, ["tasks.jsonl:1", "entry_point", "string"]),
        ("examples", "add(1, 2) == 3", ["tasks.jsonl:1", "examples", "array"]),
        ("promt", "typo", ["tasks.jsonl:1", "promt", "prompt"]),
    ],
    ids=["entry-point-not-string", "examples-not-a-list", "unknown-task-key"],
)
def test_bad_task_records(fam: Path, key: str, value, needles) -> None:
    rewrite_jsonl(fam / "tasks.jsonl", set_field(0, key, value))
    assert_error(eval_locked(fam), *needles)


@pytest.mark.parametrize(
    "line, needles",
    [
        ("[" * 100_000 + "]" * 100_000, ["locked.jsonl:5", "nested"]),
        ('{"id": "x", "task": "HumanEval/0", "output": "", "label": ' + "9" * 5000 + "}", ["locked.jsonl:5"]),
        ('{"id": "x", "task": "HumanEval/0", "output": "\\ud800", "label": "fail"}', []),
    ],
    ids=["deeply-nested", "huge-integer", "lone-surrogate-output"],
)
def test_hostile_json_lines(fam: Path, line: str, needles: list[str]) -> None:
    with open(fam / "locked.jsonl", "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    res = eval_locked(fam)
    if needles:
        assert_error(res, *needles)
    else:  # a valid line whose output is not valid Unicode: graded (as a failure), not a crash
        assert res.exit_code == 0, res.output


def test_split_path_that_is_a_directory(fam: Path) -> None:
    (fam / "locked.jsonl").unlink()
    (fam / "locked.jsonl").mkdir()
    assert_error(eval_locked(fam), "locked.jsonl", "not a regular file")


def test_split_path_that_is_a_fifo(fam: Path) -> None:
    (fam / "locked.jsonl").unlink()
    os.mkfifo(fam / "locked.jsonl")
    assert_error(eval_locked(fam), "locked.jsonl", "not a regular file")


@pytest.mark.parametrize(
    "content", [b"\x89PNG\r\n\x1a\n\x00\x00", "; caf\xe9\n(any crash)\n".encode("latin-1")], ids=["binary", "latin-1"]
)
def test_vx_file_that_is_not_utf8(fam: Path, content: bytes) -> None:
    (fam / "seed.vx").write_bytes(content)
    assert_error(eval_locked(fam), "seed.vx", "UTF-8")


# --------------------------------------------------------------------------------------------
# options


@pytest.mark.parametrize(
    "args, needles",
    [
        (["-j", "0"], ["--jobs", "0"]),
        (["--timeout", "-1"], ["--timeout"]),
        (["--timeout", "nan"], ["--timeout"]),
    ],
    ids=["jobs-0", "negative-timeout", "nan-timeout"],
)
def test_bad_eval_options(fam: Path, args: list[str], needles: list[str]) -> None:
    assert_error(eval_locked(fam, *args), *needles)


def test_fail_under_on_an_empty_split(fam: Path) -> None:
    (fam / "locked.jsonl").write_text("", encoding="utf-8")
    res = eval_locked(fam, "--fail-under", "0.5")
    assert_error(res, "empty")


def test_negative_rounds(fam: Path, tmp_path: Path) -> None:
    res = run("evolve", fam, "--rounds", "-2", "-j", "1", "--quiet", "--no-cache", "--out", tmp_path / "r.vxrun.sqlite")
    assert_error(res, "--rounds")
    assert not (tmp_path / "r.vxrun.sqlite").exists()


@pytest.mark.parametrize("content", [b"not a database at all", None], ids=["text-file", "foreign-sqlite"])
def test_cache_that_is_not_a_vx_cache(fam: Path, tmp_path: Path, content: bytes | None) -> None:
    cache = tmp_path / "foreign.sqlite"
    if content is None:
        import sqlite3

        db = sqlite3.connect(cache)
        db.execute("CREATE TABLE verdicts (x TEXT)")
        db.commit()
        db.close()
    else:
        cache.write_bytes(content)
    before = cache.read_bytes()
    res = run("eval", fam / "seed.vx", "--family", fam, "-d", "locked", "-j", "1", "--cache", cache)
    assert_error(res, str(cache), "not a vx verdict cache")
    assert cache.read_bytes() == before, "vx wrote into a file that is not its cache"


def test_an_environment_error_is_not_served_from_the_cache(tiny_family: Path, tmp_path: Path) -> None:
    """An op that fails because something is missing (an optional dependency) is not cached: after the
    fix, the next run computes the verdict instead of repeating the failure."""
    marker = tmp_path / "installed"
    (tiny_family / "ops.py").write_text(
        (tiny_family / "ops.py").read_text()
        + f"""

@op(detects="needs_extra")
def needs_extra(task, output, ctx):
    \"\"\"Needs an optional dependency.\"\"\"
    import os
    if not os.path.exists({str(marker)!r}):
        from vx.errors import MissingDependency
        raise MissingDependency("needs_extra needs a package: pip install 'vx-verifiers[extra]'")
    return drawback("found it")
"""
    )
    (tiny_family / "x.vx").write_text("(any needs_extra)\n")
    cache = tmp_path / "cache.sqlite"
    args = ["eval", tiny_family / "x.vx", "-d", "dev", "-j", "1", "--cache", cache]
    first = run(*args)
    assert first.exit_code == 3 and "vx-verifiers[extra]" in " ".join(first.output.split()), first.output
    marker.write_text("yes")
    second = run(*args, "--json")
    assert second.exit_code == 0, second.output
    data = json.loads(second.output)
    assert data["failures"] == [] and all(item["verdict"] == "fail" for item in data["items"])
