"""CodeT's multi-sample files: truncation, test-case extraction, the builder (real data: `data`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vx.errors import DataError
from vx.families.code.data import codet

SHARED_DATA = Path(os.environ.get("VX_SHARED_DATA", Path(__file__).resolve().parents[4] / "shared" / "data"))


def shared_data(*parts: str) -> Path:
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"{p} is absent (real third-party data lives in ../shared/data)")
    return p


def test_truncation_cuts_at_the_earliest_stop_sequence():
    body = "    return x\n\ndef helper():\n    pass\nprint(1)\n"
    assert codet.truncate(body) == "    return x\n"
    assert codet.truncate("    return 1\n# a comment\nif True:\n") == "    return 1"  # the newline goes with the token
    assert codet.truncate("    return 1\n") == "    return 1\n"


def test_test_case_extraction_as_codet_does():
    text = "\tf(1) == 2\nassert f(2) == 3\nassert g(1) == 1\nassert f(\n"
    assert codet.extract_tests(text, "f") == ["assert \tf(1) == 2", "assert f(2) == 3"]
    assert codet.parse_test("assert f(1, [2]) == (3, 'a')", "f") == ((1, [2]), (3, "a"))
    assert codet.parse_test("assert not f(0)", "f") == ((0,), False)
    assert codet.parse_test("assert f(x) == 1", "f") is None
    assert codet.parse_test("assert round(f(1), 2) == 1", "f") is None
    records, skipped = codet.model_test_records(
        [["assert f(1) == 2", "assert f(1) == 2", "assert f(x) == 1"], ["assert f(3) == 4"]], "f"
    )
    assert records[0] == {"call": "f(1)", "args_src": "(1,)", "expected_src": "2", "count": 2}
    assert len(records) == 2 and skipped == 1


def test_bad_codet_files_say_what_is_wrong(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"prompt": "p", "samples": "not a list"}\n')
    with pytest.raises(DataError, match="samples"):
        codet.read_solutions(bad, {"p": "T/0"})
    other = tmp_path / "y.jsonl"
    other.write_text(json.dumps({"prompt": "unknown", "samples": ["x"]}) + "\n")
    with pytest.raises(DataError, match="match no task prompt"):
        codet.read_solutions(other, {"p": "T/0"})
    one_per_task = tmp_path / "z.jsonl"
    one_per_task.write_text(json.dumps({"task_id": "HumanEval/0", "solution": "def f(): pass"}) + "\n")
    assert codet.is_codet_file(other) and not codet.is_codet_file(one_per_task)


@pytest.mark.data
def test_the_codet_files_match_every_task_by_prompt():
    d = shared_data("samples", "humaneval-codet")
    prompts, entries = codet.read_task_prompts(d / "HumanEval_for_code_generation.jsonl")
    sols = codet.read_solutions(d / "codegen16B_code_solution.jsonl", prompts)
    assert len(sols) == 164 and len({s.task_id for s in sols}) == 164
    assert all(len(s.programs) == 100 for s in sols)
    assert all(s.programs[0].startswith(next(p for p, t in prompts.items() if t == s.task_id)) for s in sols)
    tests = codet.read_tests(d / "codegen16B_test_case.jsonl", prompts, entries)
    assert len(tests) == 164 and all(len(v) == 100 for v in tests.values())
    assert all(len(cases) <= codet.TESTS_PER_SAMPLE for v in tests.values() for cases in v)


@pytest.mark.slow
@pytest.mark.data
def test_build_a_multi_attempt_family_from_codet_and_one_per_task_samples(tmp_path):
    from vx.families.code.data.build import SamplesBuild, build_humaneval_samples
    from vx.families.family import Family

    d = shared_data("samples", "humaneval-codet")
    one = shared_data("samples", "humaneval", "codellama.jsonl")
    evalplus = shared_data("evalplus")
    rep = build_humaneval_samples(
        [d / "codegen16B_code_solution.jsonl", one],
        tmp_path / "fam",
        SamplesBuild(
            seed=0,
            data_dir=evalplus,
            tests_path=d / "codegen16B_test_case.jsonl",
            per_task=3,
            n_locked=60,
            workers=2,
        ),
    )
    prov = rep.provenance
    assert set(prov["tasks_dropped"]) == {"HumanEval/15", "HumanEval/130"}
    assert all("too large" in why for why in prov["tasks_dropped"].values())
    assert set(prov["attempts_per_task"].values()) == {3}
    assert rep.counts["dev_items"] == 10 and rep.counts["dev_peer_items"] == 20
    assert rep.counts["dev_teacher_vs_truth"]["items"] == 10
    assert prov["solution_stats"]["model_tests_kept"] > 0
    fam = Family(tmp_path / "fam")
    assert sum(map(len, fam.peers.values())) == 20
    assert sum(1 for t in fam.tasks.values() if t.get("model_tests")) > 100
    ids = [it.id for it in fam.split("train").items]
    assert any("#codellama" in i for i in ids) and any("#codegen16B." in i for i in ids)
