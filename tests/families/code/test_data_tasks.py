"""Task loaders (vx.families.code.data.tasks): plain HumanEval offline, evalplus datasets from local files."""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest

from vx.families.code.data.tasks import DataError, find_plus_file, literal_check_inputs, load, load_humaneval

EVALPLUS_DIR = Path(__file__).resolve().parents[4] / "shared" / "data" / "evalplus"
if not EVALPLUS_DIR.is_dir():
    EVALPLUS_DIR = Path("/work/shared/data/evalplus")
needs_data = pytest.mark.skipif(not EVALPLUS_DIR.is_dir(), reason="../shared/data/evalplus is absent")


def test_literal_check_inputs_in_source_order_deduplicated():
    test = """
def check(candidate):
    assert candidate([1, 2], 3) == True
    for i in range(3):
        assert candidate([i], 1)
    assert abs(candidate([0.5], 1) - 1.0) < 1e-6
    assert candidate([1, 2], 3) == True
"""
    inputs, skipped = literal_check_inputs(test)
    assert inputs == [[[1, 2], 3], [[0.5], 1]]
    assert skipped == 1


def test_plain_humaneval_loads_offline():
    tasks = load_humaneval()
    assert len(tasks) == 164
    task = tasks["HumanEval/0"]
    assert task.entry_point == "has_close_elements"
    assert task.reference.startswith(task.prompt)
    assert task.base_inputs[0] == [[1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3]
    assert task.plus_inputs == ()
    assert task.examples and task.examples[0].source == "doctest"
    record = task.family_record()
    assert set(record) >= {"id", "prompt", "entry_point", "examples", "reference"}
    # randomised check functions have no literal inputs
    assert tasks["HumanEval/38"].base_inputs == ()


@needs_data
def test_mbpp_plus_through_evalplus_from_data_dir():
    tasks = load("mbpp+", EVALPLUS_DIR)
    assert len(tasks) == 378
    task = tasks["Mbpp/2"]
    assert task.base_inputs[0] == [(3, 4, 5, 6), (5, 7, 4, 10)]  # evalplus deserialised tuples
    assert task.plus_inputs and task.examples[0].function == "similar_elements"


@needs_data
def test_humaneval_plus_via_override_variable_and_plain_jsonl(tmp_path, monkeypatch):
    [gz] = sorted(EVALPLUS_DIR.glob("HumanEvalPlus-*.jsonl.gz"))
    plain = tmp_path / gz.name.replace(".gz", "")
    with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    monkeypatch.setenv("HUMANEVAL_OVERRIDE_PATH", str(plain))
    assert find_plus_file("humaneval+", None) == plain
    tasks = load("humaneval+")
    assert len(tasks) == 164 and tasks["HumanEval/0"].plus_inputs


def test_bad_data_dir_is_reported(tmp_path):
    with pytest.raises(DataError, match="no MbppPlus"):
        find_plus_file("mbpp+", tmp_path)
    with pytest.raises(DataError, match="no such directory"):
        find_plus_file("mbpp+", tmp_path / "missing")
    with pytest.raises(DataError, match="unknown dataset"):
        load("apps")


def test_missing_override_file_is_reported(monkeypatch, tmp_path):
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", os.fspath(tmp_path / "nope.jsonl"))
    with pytest.raises(DataError, match="MBPP_OVERRIDE_PATH"):
        find_plus_file("mbpp+", None)


@needs_data
@pytest.mark.data
def test_humaneval_plus_ground_truth_with_find_zero_oracle(tmp_path):
    from vx.families.code.data.groundtruth import Grader

    tasks = load("humaneval+", EVALPLUS_DIR)
    chosen = {tid: tasks[tid] for tid in ("HumanEval/0", "HumanEval/32")}
    grader = Grader(chosen, version="he-plus-test", cache_dir=tmp_path, workers=2)
    assert grader.prepare() == {}
    for task in chosen.values():
        assert grader.grade(task, task.reference).label == "pass", task.id
    find_zero = chosen["HumanEval/32"]
    wrong = find_zero.prompt + "    return 0.5\n"
    truth = grader.grade(find_zero, wrong)
    assert truth.label == "fail" and "poly" in truth.first_failure["reason"]


@pytest.fixture
def no_local_files(monkeypatch, tmp_path):
    """No override variables, and an empty evalplus cache folder."""
    for var in ("MBPP_OVERRIDE_PATH", "HUMANEVAL_OVERRIDE_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "evalplus"


def test_failed_download_is_explained(monkeypatch, no_local_files):
    from vx.families.code.data import tasks as task_data

    monkeypatch.setattr(task_data, "RELEASE_URL", "http://127.0.0.1:9/{repo}/{version}/{stem}.jsonl.gz")  # discard port
    with pytest.raises(DataError, match="could not download MbppPlus v0.2.0.*--data-dir DIR.*MBPP_OVERRIDE_PATH"):
        task_data.load_mbpp_plus()
    with pytest.raises(DataError, match="could not download MbppPlus"):
        task_data.plus_version("mbpp+")
    assert not no_local_files.exists() or not any(no_local_files.iterdir())  # nothing half-written
    with pytest.raises(DataError, match="no local MbppPlus v0.2.0 file"):
        task_data.plus_file("mbpp+", download=False)


@pytest.fixture
def release_server(tmp_path):
    """A local HTTP server standing in for GitHub's release downloads (the network is closed here)."""
    import http.server
    import threading

    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@needs_data
def test_download_fills_evalplus_cache_and_is_reused(monkeypatch, no_local_files, release_server):
    from vx.families.code.data import tasks as task_data

    root, base = release_server
    [gz] = sorted(EVALPLUS_DIR.glob("MbppPlus-*.jsonl.gz"))
    (root / "v0.2.0").mkdir()
    shutil.copy(gz, root / "v0.2.0" / "MbppPlus.jsonl.gz")
    monkeypatch.setattr(task_data, "RELEASE_URL", base + "/{version}/{stem}.jsonl.gz")
    tasks = task_data.load_mbpp_plus()
    cached = no_local_files / "MbppPlus-v0.2.0.jsonl"  # where evalplus itself keeps it, decompressed
    assert cached.is_file() and len(tasks) == 378
    with gzip.open(gz, "rb") as handle:
        assert cached.read_bytes() == handle.read()
    monkeypatch.setattr(task_data, "RELEASE_URL", "http://127.0.0.1:9/{stem}")  # no second download
    assert task_data.find_plus_file("mbpp+", None) == cached
    assert task_data.load_mbpp_plus()["Mbpp/2"].base_inputs == tasks["Mbpp/2"].base_inputs


def test_a_download_that_is_not_a_release_is_refused(monkeypatch, no_local_files, release_server):
    from vx.families.code.data import tasks as task_data

    root, base = release_server
    (root / "v0.1.10").mkdir()
    (root / "v0.1.10" / "HumanEvalPlus.jsonl.gz").write_bytes(gzip.compress(b'{"task_id": "x"}\n'))
    monkeypatch.setattr(task_data, "RELEASE_URL", base + "/{version}/{stem}.jsonl.gz")
    with pytest.raises(DataError, match="not an evalplus task .missing prompt"):
        task_data.load_humaneval_plus()
    assert not (no_local_files / "HumanEvalPlus-v0.1.10.jsonl").exists()
    (root / "v0.1.10" / "HumanEvalPlus.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="could not download HumanEvalPlus"):
        task_data.load_humaneval_plus()


def test_malformed_release_files_are_named(tmp_path):
    from vx.families.code.data import tasks as task_data

    bad = tmp_path / "MbppPlus-v0.2.0.jsonl"
    bad.write_text('{"task_id": "Mbpp/2"}\nnot json\n')
    with pytest.raises(DataError, match=r"MbppPlus-v0.2.0.jsonl:1: not an evalplus task"):
        task_data.read_plus_file("mbpp+", bad)
    bad.write_text("[1, 2]\n")
    with pytest.raises(DataError, match=r":1: expected a JSON object"):
        task_data.read_plus_file("mbpp+", bad)
    trunc = tmp_path / "MbppPlus-v0.2.0.jsonl.gz"
    trunc.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="cannot read"):
        task_data.read_plus_file("mbpp+", trunc)


def _same(a, b) -> bool:
    """Equal values of exactly the same types, all the way down (a tuple never equals a list here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, set):
        return a == b and sorted(map(repr, a)) == sorted(map(repr, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


@needs_data
@pytest.mark.parametrize("dataset", ["mbpp+", "humaneval+"])
def test_release_files_read_exactly_as_evalplus_reads_them(dataset):
    """vx reads the release files itself; every field of every task, inputs' types included, equals
    what evalplus 0.3.1's own loader returns (when evalplus is installed: the [bench] extra)."""
    pytest.importorskip("evalplus")
    from vx.families.code.data import tasks as task_data
    from vx.families.code.data.validate import evalplus_humaneval_plus, evalplus_mbpp_plus

    path = task_data.plus_file(dataset, EVALPLUS_DIR)
    ours = task_data.read_plus_file(dataset, path)
    theirs = (evalplus_mbpp_plus if dataset == "mbpp+" else evalplus_humaneval_plus)(path)
    assert list(ours) == list(theirs)
    for task_id in theirs:
        assert _same(ours[task_id], theirs[task_id]), task_id
    kinds = {type(v).__name__ for p in ours.values() for inp in p["base_input"] for v in inp}
    if dataset == "mbpp+":
        assert {"tuple", "complex", "list"} <= kinds  # the deserialiser did restore non-JSON types


def test_vendored_deserializer_carries_its_licence():
    from pathlib import Path as P

    import vx.families.code.data.evalplus_inputs as module

    text = P(module.__file__).read_text()
    assert "Apache License, Version 2.0" in text and "EvalPlus authors" in text
    licence = P(module.__file__).with_name("LICENSE.evalplus")
    assert "Apache License" in licence.read_text() and "Version 2.0" in licence.read_text()
