"""Caches vx reads back are checked before they are believed, in the attacker's words.

* **"I empty a task's probe list in the shared probe store"** (a world-writable ``VX_PROBE_CACHE``): the
  peer op then had no probe to compare on, and a lookup table of the visible examples beside three
  correct peers went from FAIL to PASS, with nothing saying the probes were empty. Now a store another
  user may write is not used (said once), each entry carries a digest of how it was made, and an entry
  that lists no probe without saying why is not believed.
* **"I write verdicts into your verdict cache"** or **"I plant a database in your SQL cache"**: a cache
  file another user owns or may write is refused, naming it.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest

from vx.families.code.probes import store
from vx.integrations.trl import VxReward
from vx.ops.cache import CacheError, VerdictCache
from vx.verifier import Verifier

from .conftest import EXAMPLE

TASK = "HumanEval/0"
TABLE = (
    "    table = {(1.0, 2.0, 3.0, 0.5): False, (1.0, 2.8, 3.0, 4.0, 5.0, 2.0, 0.3): True}\n"
    "    return table.get((*numbers, threshold), False)\n"
)


@pytest.fixture(autouse=True)
def _fresh_store_state(monkeypatch):
    from vx.families.code.probes import probe

    monkeypatch.setattr(store, "_trusted", {})
    monkeypatch.setattr(store, "_warned", False)
    for memo in (probe._GENERATED_CACHE, probe._PROBES_CACHE, probe._TEXTS_CACHE):
        memo.clear()
    yield
    for memo in (probe._GENERATED_CACHE, probe._PROBES_CACHE, probe._TEXTS_CACHE):
        memo.clear()


def _group(tmp_path: Path) -> tuple[VxReward, list[str]]:
    from vx.families.code.ops import run

    try:
        run.sandbox()
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"no sandbox: {exc}")
    task = json.loads((EXAMPLE / "tasks.jsonl").read_text(encoding="utf-8").split("\n")[0])
    good = task["reference"]
    group = [good, good.replace("for idx, elem", "for idx,  elem"), good.replace("distance = ", "distance  = ")]
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers fails_visible_example)\n", encoding="utf-8")
    return VxReward(Verifier.load(expr, EXAMPLE)), [*group, task["prompt"] + TABLE]


def _empty_every_entry(root: Path, *, recompute_digest: bool) -> int:
    n = 0
    for path in root.rglob("*.json"):
        entry = json.loads(path.read_text())
        entry["probes"] = []
        if recompute_digest:  # the forger knows the format: the digest alone does not stop them
            entry["made"] = store._made([], entry["why"])
            entry["digest"] = store._digest(entry)
        path.write_text(json.dumps(entry))
        n += 1
    return n


def test_my_emptied_probe_list_in_a_world_writable_store_is_not_used(tmp_path, monkeypatch):
    shared = tmp_path / "shared-probes"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone may write it, and it is not sticky
    monkeypatch.setenv("VX_PROBE_CACHE", str(shared))
    reward, group = _group(tmp_path)
    with pytest.warns(RuntimeWarning, match="which every user may write|writable by every user"):
        assert reward(prompts=["p"] * 4, completions=group, task_id=[TASK] * 4) == [1.0, 1.0, 1.0, 0.0]
    assert not any(shared.rglob("*.json")), "nothing is kept in a store others may write"


@pytest.mark.parametrize("recompute_digest", [False, True])
def test_my_emptied_probe_list_is_not_believed(tmp_path, monkeypatch, recompute_digest):
    private = tmp_path / "probes"
    monkeypatch.setenv("VX_PROBE_CACHE", str(private))
    reward, group = _group(tmp_path)
    assert reward(prompts=["p"] * 4, completions=group, task_id=[TASK] * 4) == [1.0, 1.0, 1.0, 0.0]
    assert _empty_every_entry(private, recompute_digest=recompute_digest) > 0
    from vx.families.code.probes import probe

    for memo in (probe._GENERATED_CACHE, probe._PROBES_CACHE, probe._TEXTS_CACHE):
        memo.clear()
    reward, group = _group(tmp_path)
    assert reward(prompts=["p"] * 4, completions=[*group[:3], group[3] + "\n"], task_id=[TASK] * 4) == [
        1.0,
        1.0,
        1.0,
        0.0,
    ], "the emptied entry was believed"


def test_an_entry_says_how_it_was_made_and_a_changed_one_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_PROBE_CACHE", str(tmp_path / "probes"))
    rows = [("gen_mutant", "f", (1, [2]), "generated (mutant)"), ("gen_drawn", "f", (3, []), "drawn")]
    assert store.store("task-key", rows, ["x: int"], "")
    assert store.load("task-key") == (list(rows), ("x: int",), "")
    (path,) = (tmp_path / "probes").rglob("*.json")
    entry = json.loads(path.read_text())
    assert entry["made"]["probes"] == 2 and entry["made"]["classes"] == {"gen_mutant": 1, "gen_drawn": 1}
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    entry["probes"][0][2] = {"tuple": [99, [2]]}  # one argument changed, digest left as it was
    path.write_text(json.dumps(entry))
    assert store.load("task-key") is None
    assert store.store("empty-key", [], [], "the task shows no visible example call to mutate")
    assert store.load("empty-key") == ([], (), "the task shows no visible example call to mutate")


def test_an_entry_another_user_may_write_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("VX_PROBE_CACHE", str(tmp_path / "probes"))
    assert store.store("task-key", [("gen_mutant", "f", (1,), "d")], [], "")
    (path,) = (tmp_path / "probes").rglob("*.json")
    os.chmod(path, 0o666)
    assert store.load("task-key") is None


def test_a_world_writable_verdict_cache_is_refused_naming_it(tmp_path):
    path = tmp_path / "verdicts.sqlite"
    VerdictCache(path).close()
    os.chmod(path, 0o666)
    with pytest.raises(CacheError, match=r"verdicts.sqlite: the verdict cache is writable by every user \(mode 0666\)"):
        VerdictCache(path)
    os.chmod(path, 0o644)
    folder = tmp_path / "open"
    folder.mkdir()
    os.chmod(folder, 0o777)
    with pytest.raises(CacheError, match="which every user may write and which is not sticky"):
        VerdictCache(folder / "v.sqlite")
    os.chmod(folder, 0o1777)  # sticky, like /tmp: nobody else can replace a file of mine there
    VerdictCache(folder / "v.sqlite").close()


def test_vx_eval_with_a_world_writable_cache_says_so_and_exits_2(tmp_path):
    from click.testing import CliRunner

    from vx.cli.main import main

    path = tmp_path / "verdicts.sqlite"
    VerdictCache(path).close()
    os.chmod(path, 0o666)
    result = CliRunner().invoke(main, ["eval", str(EXAMPLE / "seed.vx"), "--dataset", "dev", "--cache", str(path)])
    assert result.exit_code == 2, result.output
    assert "writable by every user" in result.output and "Traceback" not in result.output


def test_a_planted_database_in_a_world_writable_sql_cache_is_refused(tmp_path, monkeypatch):
    pytest.importorskip("sqlglot")
    from vx.errors import DataError
    from vx.families.sql.scripts import database_file, materialize, script_spec

    monkeypatch.setenv("VX_SQL_CACHE", str(tmp_path / "sql"))
    script = tmp_path / "t.sql"
    script.write_text("CREATE TABLE t (x INT);\nINSERT INTO t VALUES (1);\n", encoding="utf-8")
    spec = script_spec(script, "t")
    built = materialize(spec)
    assert built == database_file(spec)
    os.chmod(built, 0o666)
    with pytest.raises(DataError, match="writable by every user"):
        materialize(spec)


def test_the_warning_is_said_once(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setenv("VX_PROBE_CACHE", str(shared))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for key in ("a", "b", "c"):
            store.load(key)
            store.store(key, [("gen_mutant", "f", (1,), "d")], [], "")
    assert len([w for w in caught if issubclass(w.category, RuntimeWarning)]) == 1
