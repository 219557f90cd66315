"""JSON lines holding U+2028, U+2029 or U+0085, in the attacker's words: "vx writes
those characters raw and `str.splitlines()` splits on them, so my output cuts its own line in two: the
family `vx data build` wrote is refused as malformed JSON, and a valid samples file is refused by
`vx grade`". Every JSON-lines reader splits with one function, `vx.text.file_lines`."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from vx.families.family import Family
from vx.text import json_dumps

from .conftest import EXAMPLE

SEPARATORS = "\u2028 \u2029 \x85 \x0b \x0c \x1c \x1d \x1e"
SRC = Path(__file__).resolve().parents[2] / "src" / "vx"


def test_file_lines_splits_at_newlines_only():
    from vx.text import file_lines

    assert file_lines(f'{{"a": "{SEPARATORS}"}}\r\n\n{{"b": 1}}\n') == [f'{{"a": "{SEPARATORS}"}}', "", '{"b": 1}']
    assert file_lines("") == [] and file_lines("x") == ["x"]


def test_a_family_whose_output_holds_raw_line_separators_loads(tmp_path):
    fam = tmp_path / "fam"
    shutil.copytree(EXAMPLE, fam)
    first = json.loads((fam / "locked.jsonl").read_text(encoding="utf-8").split("\n")[0])
    output = first["output"] + f"\n# {SEPARATORS}\n"
    row = {**first, "id": "separators", "output": output}
    line = json_dumps(row)  # raw, as vx's writers write them
    assert "\u2028" in line
    with open(fam / "locked.jsonl", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    items = {it.id: it for it in Family(fam).audit().labeled_split()}
    assert items["separators"].output == output


def test_a_valid_samples_file_with_raw_line_separators_is_read(tmp_path):
    from vx.families.code.data.samples import read_samples
    from vx.families.sources import read_plain_samples

    solution = f'def f(x):\n    return "{SEPARATORS}"\n'
    path = tmp_path / "samples.jsonl"
    path.write_text(
        json.dumps({"task_id": "HumanEval/0", "solution": solution}, ensure_ascii=False)
        + "\n"
        + json.dumps({"task_id": "HumanEval/1", "solution": "x = 1\n"})
        + "\n",
        encoding="utf-8",
    )
    assert [s.solution for s in read_samples(path)] == [solution, "x = 1\n"]
    plain = read_plain_samples([path], {"HumanEval/0": {}, "HumanEval/1": {}})
    assert [a.output for a in plain] == [solution, "x = 1\n"]


def test_an_anchor_log_and_an_eval_export_with_raw_separators_read_back(tmp_path):
    from vx.evaluation import load_eval_document
    from vx.families.anchoring import anchor_log

    record = {"item": "a", "label": "pass", "status": "pending", "note": SEPARATORS}
    (tmp_path / "anchor.jsonl").write_text(json_dumps(record) + "\n", encoding="utf-8")
    assert anchor_log(tmp_path) == [record]
    export = tmp_path / "eval.jsonl"
    export.write_text(json_dumps({"id": SEPARATORS, "verdict": "pass"}) + "\n", encoding="utf-8")
    assert [r["id"] for r in load_eval_document(export)["items"]] == [SEPARATORS]


@pytest.mark.parametrize(
    "module",
    [
        "evaluation.py",
        "families/family.py",
        "families/sources.py",
        "families/anchoring.py",
        "families/code/data/samples.py",
        "families/code/data/codet.py",
        "families/code/data/tasks.py",
        "families/report/data/build.py",
        "evolve/roles/teacher.py",
    ],
)
def test_no_json_lines_reader_splits_with_splitlines(module):
    # a reader of a file's text (read_text / read_input_text / a variable named text) never calls .splitlines()
    tree = ast.parse((SRC / module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "splitlines":
            target = ast.unparse(node.func.value)
            assert not ("read_text" in target or "read_input_text" in target or target == "text"), (
                f"{module}:{node.lineno}: {target}.splitlines() splits JSON lines at U+2028; use vx.text.file_lines"
            )
