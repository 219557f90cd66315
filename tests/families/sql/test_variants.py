"""Script databases and their neighbour databases (variants): deterministic, cached, keys consistent."""

import sqlite3

import pytest

from vx.families.sql import scripts, variants
from vx.families.sql.warehouse import WarehouseError, open_warehouse


def rows(path, sql):
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_script_database_is_built_once_and_opened_read_only(shop_spec):
    path = scripts.materialize(shop_spec)
    assert path.name.startswith("shop-") and rows(path, "SELECT count(*) FROM stadium") == [(5,)]
    assert scripts.materialize(shop_spec) == path  # cached
    with open_warehouse(shop_spec) as wh:
        assert wh.execute("SELECT Name FROM stadium WHERE Capacity > 10000").rows == (
            ("Somerset Park",),
            ("Hampden Park",),
        )
        assert wh.execute("DELETE FROM stadium").error_kind == "rejected"


def test_a_changed_or_missing_script_is_an_error_that_says_rebuild(shop_spec, tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("VX_SQL_CACHE", str(tmp_path / "fresh"))  # nothing built yet
    Path(shop_spec["script"]).write_text("CREATE TABLE x (a INT);", encoding="utf-8")
    with pytest.raises(WarehouseError, match="changed since the family was built"):
        open_warehouse(shop_spec)
    gone = {**shop_spec, "script": str(tmp_path / "nowhere.sql")}
    with pytest.raises(WarehouseError, match="rebuild the family"):
        open_warehouse(gone)


def test_keys_and_references_are_read_off_the_data(shop_spec):
    tables = variants.read_tables(scripts.materialize(shop_spec))
    keys = variants.infer_keys(tables)
    described = keys.describe(tables)
    assert "concert.Stadium_ID -> stadium.Stadium_ID" in described
    assert "singer_in_concert.Singer_ID -> singer.Singer_ID" in described
    assert "singer_in_concert.concert_ID -> concert.concert_ID" in described
    assert "stadium.Stadium_ID is a key" in described
    assert "singer.Age is a key" not in described  # a number distinct by chance is no key


@pytest.mark.parametrize("index", range(6))
def test_variants_are_deterministic_and_keep_keys_consistent(shop_spec, index):
    spec = variants.variant_spec(shop_spec, index, seed=3)
    path = variants.materialize(spec)
    first = path.read_bytes()
    path.unlink()
    assert variants.materialize(spec).read_bytes() == first  # a pure function of (database, index, seed)
    tables = variants.read_tables(path)
    original = variants.read_tables(scripts.materialize(shop_spec))
    assert set(tables) == set(original) and all(tables[t].create == original[t].create for t in tables)
    keys = variants.infer_keys(original)
    for r in keys.references:  # every reference still resolves
        parent = {str(row[r.key]) for row in tables[r.parent].rows}
        assert all(row[r.column] is None or str(row[r.column]) in parent for row in tables[r.table].rows), r
    for t, cols in keys.unique.items():  # every key stays distinct
        for j in cols:
            vals = [str(row[j]) for row in tables[t].rows]
            assert len(vals) == len(set(vals)), (t, j)
    assert all(tables[t].rows for t in tables)


def test_variants_differ_from_the_original_and_from_each_other(shop_spec):
    base = scripts.materialize(shop_spec)
    dumps = {
        i: rows(variants.materialize(variants.variant_spec(shop_spec, i)), "SELECT * FROM concert") for i in range(4)
    }
    assert all(d != rows(base, "SELECT * FROM concert") for d in dumps.values())
    assert len({tuple(d) for d in dumps.values()}) == 4


def test_a_reversed_variant_holds_the_same_rows_in_reverse_order(shop_spec):
    fwd = variants.materialize(variants.variant_spec(shop_spec, 1))
    rev = variants.materialize(variants.variant_spec(shop_spec, 1, reversed_rows=True))
    assert rows(rev, "SELECT * FROM singer") == rows(fwd, "SELECT * FROM singer")[::-1]


def test_task_variant_specs_lists_the_original_first(shop_spec):
    task = {"warehouse": shop_spec, "variants": {"seed": 0, "version": variants.VERSION, "use": [2, 5]}}
    labels = [label for label, _ in variants.task_variant_specs(task)]
    assert labels == ["original", "variant 2", "variant 5"]
    assert [label for label, _ in variants.task_variant_specs({"warehouse": shop_spec})] == ["original"]


def test_a_variant_of_another_version_is_refused(shop_spec):
    spec = variants.variant_spec(shop_spec, 0)
    spec["variant"]["version"] = "0"
    with pytest.raises(WarehouseError, match="rebuild the family"):
        open_warehouse(spec)
