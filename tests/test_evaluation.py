"""vx.evaluation: one row per item, exports (csv / jsonl / parquet), pandas, the eval document."""

from __future__ import annotations

import csv
import json
import sys

import pytest

from vx.errors import DataError, MissingDependency


@pytest.fixture
def ev(tiny_family):
    from vx import Verifier, evaluate

    return evaluate(Verifier.load(tiny_family / "seed.vx"), "dev", jobs=1)


def test_rows_have_every_op_verdict_and_message(ev):
    rows = ev.rows()
    assert [r["id"] for r in rows] == [it.id for it in ev.items]
    ops = ev.op_names
    assert ops[0] == "nonempty"  # root first
    d2 = next(r for r in rows if r["id"] == "d2")
    assert d2["task"] == "t2" and d2["split"] == "dev" and d2["label"] == "fail" and d2["verdict"] == "fail"
    assert d2["verdict:missing_keyword"] == "drawback" and d2["message:missing_keyword"] == "'pear' never appears"
    for r in rows:
        assert set(r) == {"id", "task", "split", "label", "verdict"} | {
            f"{k}:{o}" for o in ops for k in ("verdict", "message")
        }
        assert all(r[f"verdict:{o}"] in ("drawback", "clean", "abstain") for o in ops)
    assert ev.metric("accuracy") == ev.metrics.accuracy == 1.0
    assert ev.metric("balanced") == ev.metrics.balanced_accuracy
    with pytest.raises(ValueError, match="unknown metric"):
        ev.metric("f1")


def test_the_api_rows_and_every_export_agree(ev, tmp_path):
    rows = ev.rows()
    ev.write(tmp_path / "e.jsonl")
    assert [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()] == rows
    ev.write(tmp_path / "e.csv")
    with open(tmp_path / "e.csv", newline="", encoding="utf-8") as handle:
        back = list(csv.DictReader(handle))
    assert [{k: (v if v != "" else None) for k, v in r.items()} for r in back] == [
        {k: (v if v != "" else None) for k, v in r.items()} for r in rows
    ]
    pd = pytest.importorskip("pandas")
    df = ev.to_pandas()
    assert list(df["id"]) == [r["id"] for r in rows] and list(df.columns) == list(rows[0])
    pytest.importorskip("pyarrow")
    ev.write(tmp_path / "e.parquet")
    back = pd.read_parquet(tmp_path / "e.parquet")
    assert back.to_dict("records") == df.to_dict("records")


def test_unknown_format_and_missing_optional_dependencies(ev, tmp_path, monkeypatch):
    with pytest.raises(DataError, match="unknown export format '.xlsx'"):
        ev.write(tmp_path / "e.xlsx")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    with pytest.raises(MissingDependency, match="needs pyarrow: pip install pyarrow"):
        ev.write(tmp_path / "e.parquet")
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MissingDependency, match="needs pandas"):
        ev.to_pandas()


def test_hostile_text_survives_exports(tiny_family, tmp_path):
    from vx import Verifier, evaluate

    nasty = "=cmd|' /C calc'!A0 \"quoted\", comma\nnewline \x1b[31m <b>"
    tasks = [json.loads(line) for line in (tiny_family / "tasks.jsonl").read_text().splitlines()]
    tasks[1]["keyword"] = nasty
    (tiny_family / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    ev = evaluate(Verifier.load(tiny_family / "seed.vx"), "dev", jobs=1)
    ev.write(tmp_path / "e.csv")
    ev.write(tmp_path / "e.jsonl")
    with open(tmp_path / "e.csv", newline="", encoding="utf-8") as handle:
        d2 = next(r for r in csv.DictReader(handle) if r["id"] == "d2")
    assert d2["message:missing_keyword"] == f"'{nasty}' never appears"  # exported exactly, quoted by csv
    rows = [json.loads(line) for line in (tmp_path / "e.jsonl").read_text().splitlines()]
    assert next(r for r in rows if r["id"] == "d2")["message:missing_keyword"] == f"'{nasty}' never appears"


def test_unencodable_text_is_replaced_not_a_crash(tmp_path):
    from vx.evaluation import write_rows

    for name in ("r.csv", "r.jsonl"):
        write_rows([{"id": "x\ud800y", "verdict": "pass"}], tmp_path / name)
        assert "x\ufffdy" in (tmp_path / name).read_text(encoding="utf-8")


def test_evaluate_plain_items_without_a_split(tiny_family):
    from vx import Item, Verifier, evaluate

    v = Verifier.load(tiny_family / "seed.vx")
    items = [Item("a", "t1", "an apple"), Item("b", "t1", "NO FRUIT HERE"), Item("c", "t2", "a pear", label=1.0)]
    ev = evaluate(v, items, jobs=1)
    assert ev.split is None and [r["verdict"] for r in ev.rows()] == ["pass", "fail", "pass"]
    assert ev.metrics.n == 1  # only the labeled item counts
    assert "items" in repr(ev)


def test_eval_document_round_trips_through_report_loading(ev, tmp_path):
    from vx.evaluation import SCHEMA, load_eval_document

    doc = ev.as_dict()
    assert doc["schema"] == SCHEMA and doc["n"] == len(ev.items)
    item = next(i for i in doc["items"] if i["id"] == "d2")
    assert item["drawbacks"] == [{"op": "missing_keyword", "message": "'pear' never appears"}]
    assert item["ops"]["missing_keyword"]["verdict"] == "drawback" and item["trace"]["children"]
    (tmp_path / "e.json").write_text(json.dumps(doc))
    assert load_eval_document(tmp_path / "e.json")["items"][1]["id"] == doc["items"][1]["id"]
    ev.write(tmp_path / "e.jsonl")
    from_rows = load_eval_document(tmp_path / "e.jsonl")
    assert [i["id"] for i in from_rows["items"]] == [i["id"] for i in doc["items"]]
    assert from_rows["metrics"]["accuracy"] == doc["metrics"]["accuracy"]
    (tmp_path / "x.json").write_text('{"schema": "other"}')
    with pytest.raises(DataError, match="not a vx evaluation"):
        load_eval_document(tmp_path / "x.json")
    (tmp_path / "y.jsonl").write_text('{"a": 1}\n')
    with pytest.raises(DataError, match="y.jsonl:1: not an exported row"):
        load_eval_document(tmp_path / "y.jsonl")


def test_notebook_displays(ev, tiny_family):
    from vx import Verifier

    html = ev._repr_html_()
    assert "Agreement with labels" in html and "d2" in html and "<script" not in html and "body{" not in html
    grade = Verifier.load(tiny_family / "seed.vx").grade("t2", "a banana")
    g = grade._repr_html_()
    assert "FAIL" in g and "missing_keyword" in g and "&#x27;pear&#x27; never appears" in g
