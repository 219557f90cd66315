"""The one JSON-lines reader (vx.inputs.read_json_lines / parse_json_lines), attacked line by line: every bad
line is an error that names the file, the line and what to do (or a skip the caller counts); no line break
but "\\n" splits a line; a compressed file inflates no further than an uncompressed one may be large."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vx.errors import DataError
from vx.inputs import InputFileError, JsonLine, parse_json_lines, read_json_lines
from vx.text import json_dumps

SRC = Path(__file__).resolve().parents[2] / "src" / "vx"

#: characters str.splitlines() breaks at besides "\n" (all valid raw inside a JSON string)
SEPARATORS = "\u2028\u2029\x85\x0b\x0c\x1c\x1d\x1e\r"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(SEPARATORS)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(st.lists(json_values, max_size=6), st.sampled_from(["\n", "\r\n"]))
def test_what_vx_writes_reads_back_line_for_line(values: list[object], newline: str) -> None:
    text = "".join(json_dumps(v) + newline for v in values)
    rows = list(parse_json_lines(text, "mem.jsonl"))
    assert [r.value for r in rows] == values
    assert [r.number for r in rows] == list(range(1, len(values) + 1))


def test_blank_lines_are_passed_over_and_lines_keep_their_numbers() -> None:
    rows = list(parse_json_lines('\n{"a": 1}\n  \n[2]\r\n', "f.jsonl"))
    assert rows == [JsonLine(2, {"a": 1}, '{"a": 1}'), JsonLine(4, [2], "[2]")]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"id": "x", "label": "pass"', "malformed JSON (Expecting ',' delimiter at column 28)"),
        ("{garbage", "malformed JSON (Expecting property name enclosed in double quotes at column 2)"),
        ("[" * 100_000 + "]" * 100_000, "JSON nested too deeply to read"),
        ("1" * 5000, "unreadable JSON (Exceeds the limit (4300 digits)"),
        ("NaN", None),  # Python's JSON reads NaN: a value, as json.loads has it
    ],
)
def test_a_bad_line_names_file_line_and_what_to_do(tmp_path: Path, line: str, reason: str | None) -> None:
    path = tmp_path / "dev.jsonl"
    path.write_text('{"ok": 1}\n' + line + "\n", encoding="utf-8")
    if reason is None:
        assert len(list(read_json_lines(path))) == 2
        return
    with pytest.raises(InputFileError) as caught:
        list(read_json_lines(path, "split file"))
    message = str(caught.value)
    assert message.startswith(f"{path}:2: {reason}"), message
    assert message.endswith("each line of a split file is one JSON value: fix or delete that line"), message


def test_an_object_is_asked_for_and_a_list_is_found(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"tasks.jsonl:2: expected a JSON object, got list; each line of a tasks "):
        list(read_json_lines(path, "tasks file", objects=True, error=DataError))


def test_a_caller_that_skips_bad_lines_hears_of_each() -> None:
    seen: list[tuple[int, str]] = []
    text = '{"a": 1}\n{oops\n"text"\n{"b": 2}\n'
    rows = list(parse_json_lines(text, "f", objects=True, skip=lambda n, why: seen.append((n, why))))
    assert [r.value for r in rows] == [{"a": 1}, {"b": 2}]
    assert [n for n, _ in seen] == [2, 3] and seen[1][1] == "expected a JSON object, got str"


def test_a_gzip_file_is_read_and_a_gzip_bomb_is_refused(tmp_path: Path) -> None:
    small = tmp_path / "answers.jsonl.gz"
    small.write_bytes(gzip.compress(b'{"a": "\xe2\x80\xa8"}\n{"b": 2}\n'))
    assert [r.value for r in read_json_lines(small)] == [{"a": "\u2028"}, {"b": 2}]
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 KiB on disk, 4 MiB inflated
    assert bomb.stat().st_size < 1 << 20
    with pytest.raises(
        InputFileError, match=r"bomb.jsonl.gz: cannot read the JSON-lines file: it decompresses to more"
    ):
        read_json_lines(bomb, limit=1 << 20)


def test_a_cut_gzip_file_and_text_that_is_not_utf8(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"a": 1}\n' * 1000)[:-20])
    with pytest.raises(InputFileError, match="cut.jsonl.gz: cannot read the answers file: not a complete gzip file"):
        read_json_lines(cut, "answers file")
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
    with pytest.raises(InputFileError, match=r"latin.jsonl:2: not UTF-8 text \(byte 0xe9"):
        read_json_lines(latin)


def test_the_labels_of_vx_grade_hold_a_raw_line_separator(tmp_path: Path) -> None:
    """The attack: an output holding U+2028, labelled for `vx grade --labels`, cut its line in two."""
    from vx.grading import read_labels

    path = tmp_path / "labels.jsonl"
    row = {"task": "HumanEval/0", "output": "def f():\n    return '\u2028'\n", "label": "fail"}
    path.write_text(json_dumps(row) + "\n", encoding="utf-8")
    assert [r["output"] for r in read_labels(path)] == [row["output"]]
    path.write_text(json_dumps(row) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"labels.jsonl:2: malformed JSON .*fix or delete that line"):
        read_labels(path)


def test_a_teacher_labels_file_with_a_bad_line_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    from vx.evolve.roles.teacher import LABELS_FILE, read_labels

    (tmp_path / LABELS_FILE).write_text(json.dumps({"id": "a", "label": 0.9}) + "\n{cut short", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{LABELS_FILE}:2: malformed JSON"):
        read_labels(tmp_path)


def _decodes_lines_by_hand(tree: ast.AST) -> list[int]:
    """Lines where a loop over lines (or a comprehension over them) calls json.loads itself."""
    found = []
    for node in ast.walk(tree):
        loops = [node.iter] if isinstance(node, ast.For) else []
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            loops = [g.iter for g in node.generators]
        if not any(word in ast.unparse(it) for it in loops for word in ("line", "open(", "handle")):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and ast.unparse(sub.func) == "json.loads":
                found.append(sub.lineno)
    return found


def test_no_module_but_vx_inputs_reads_json_lines_by_hand() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "inputs.py" or rel.startswith("sandbox/"):  # the sandbox reads frames, not lines of a file
            continue
        offenders += [f"{rel}:{n}" for n in _decodes_lines_by_hand(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, f"read these JSON lines with vx.inputs.read_json_lines: {offenders}"
