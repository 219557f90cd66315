"""End to end through the CLI on the tiny family: eval, explain, ops, cache."""

import json

from click.testing import CliRunner

from vx.cli.main import main


def run(*args):
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r


def test_eval_dev_reports_agreement_ops_and_disagreements(tiny_family):
    r = run("eval", str(tiny_family / "seed.vx"), "--dataset", "dev", "--jobs", "1")
    assert r.exit_code == 0, r.output
    out = r.output
    assert "family tiny, split dev (6 items)" in out
    assert "(any missing_keyword shouting too_long)" in out
    assert "recall-weighted" in out and "missing_keyword" in out
    # d1..d6: every label is matched by this seed (d5 fails at the root, d6 is too long)
    assert "no disagreements" in out


def test_eval_json_and_zero_calls_on_rerun(tiny_family, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    a = json.loads(run("eval", str(tiny_family / "seed.vx"), "--json", "-j", "1", "--cache", cache).output)
    b = json.loads(run("eval", str(tiny_family / "seed.vx"), "--json", "-j", "1", "--cache", cache).output)
    assert a["op_calls"] > 0 and b["op_calls"] == 0 and b["cache_hits"] == a["op_calls"]
    assert a["metrics"]["accuracy"] == 1.0
    assert a["metrics"]["confusion"] == {"tp": 4, "fp": 0, "tn": 2, "fn": 0}
    d6 = next(i for i in a["items"] if i["id"] == "d6")
    assert d6["verdict"] == "fail" and d6["fired"][0]["op"] == "too_long"


def test_eval_locked_and_fail_under(tiny_family):
    (tiny_family / "weak.vx").write_text("shouting\n")
    r = run("eval", str(tiny_family / "weak.vx"), "--dataset", "locked", "-j", "1", "--fail-under", "0.9")
    assert r.exit_code == 1
    assert "below --fail-under 0.9" in r.output
    assert "disagreements" in r.output and "l3" in r.output


def test_eval_train_is_unlabeled(tiny_family):
    r = run("eval", str(tiny_family / "seed.vx"), "--dataset", "train", "-j", "1")
    assert r.exit_code == 0
    assert "verdicts (unlabeled split)" in r.output


def test_eval_bad_expression_is_a_clean_error(tiny_family):
    (tiny_family / "bad.vx").write_text("(any missing_keywrd shouting)\n")
    r = run("eval", str(tiny_family / "bad.vx"), "-j", "1")
    assert r.exit_code == 2
    assert "missing_keywrd" in r.output and "missing_keyword" in r.output  # the nearest name is suggested
    assert "Traceback" not in r.output


def test_eval_broken_family_lists_problems(tiny_family):
    with (tiny_family / "dev.jsonl").open("a") as f:
        f.write("{oops\n")
    r = run("eval", str(tiny_family / "seed.vx"), "-j", "1")
    assert r.exit_code == 2
    assert "dev.jsonl:7: malformed JSON" in r.output


def test_crashing_op_is_summarised_not_a_traceback(tiny_family):
    (tiny_family / "b.vx").write_text("(any buggy shouting)\n")
    r = run("eval", str(tiny_family / "b.vx"), "--dataset", "train", "-j", "1")
    # an op failing on the infrastructure side fails the evaluation (exit 3) unless allowed
    assert r.exit_code == 3
    assert "op failures" in r.output and "kaboom" in r.output and "Traceback" not in r.output
    assert "--max-op-failures" in r.output
    r = run("eval", str(tiny_family / "b.vx"), "--dataset", "train", "-j", "1", "--max-op-failures", "1")
    assert r.exit_code == 0, r.output


def test_explain_names_the_failed_check(tiny_family):
    r = run("explain", str(tiny_family / "seed.vx"), "--item", "d2")
    assert r.exit_code == 0, r.output
    assert "FAIL" in r.output and "missing_keyword" in r.output and "'pear' never appears" in r.output
    j = json.loads(run("explain", str(tiny_family / "seed.vx"), "--item", "d2", "--json").output)
    assert j["verdict"] == "fail"
    assert j["drawbacks"] == [{"op": "missing_keyword", "message": "'pear' never appears"}]
    assert j["trace"]["kind"] == "any" and len(j["trace"]["children"]) == 3


def test_explain_says_where_the_item_ranks_among_its_task_s_attempts(tiny_family):
    """Best of n: d2, r2 and a locked item answer t2, and each fails on one check: the digest decides."""
    r = run("explain", str(tiny_family / "seed.vx"), "--item", "d2")
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "best of n: rank " in flat and " of 3: FAIL, evidence -0.250" in flat and "support unknown" in flat
    j = json.loads(run("explain", str(tiny_family / "seed.vx"), "--item", "d2", "--json").output)
    assert (
        j["ranking"]["of"] == 3 and j["ranking"]["verdict"] == "fail" and "tie-break digest" in j["ranking"]["reason"]
    )
    j = json.loads(run("explain", str(tiny_family / "seed.vx"), "--item", "d2", "--json", "--no-rank").output)
    assert j["ranking"] is None


def test_explain_unknown_item_suggests(tiny_family):
    r = run("explain", str(tiny_family / "seed.vx"), "--item", "d22")
    assert r.exit_code == 2 and "did you mean" in r.output


def test_ops_and_cache_commands(tiny_family, tmp_path):
    r = run("ops", str(tiny_family))
    assert r.exit_code == 0 and "nonempty (root)" in r.output and "missing_keyword" in r.output
    cache = str(tmp_path / "c2.sqlite")
    run("eval", str(tiny_family / "seed.vx"), "-j", "1", "--cache", cache)
    info = json.loads(run("cache", "info", "--cache", cache, "--json").output)
    assert info["entries"] > 0
    assert "removed" in run("cache", "clear", "--cache", cache).output
    assert json.loads(run("cache", "info", "--cache", cache, "--json").output)["entries"] == 0


def test_python_api_grades_one_output(tiny_family):
    from vx import Verifier

    v = Verifier.load(tiny_family / "seed.vx")
    g = v.grade("t2", "no fruit here")
    assert g.verdict.value == "fail" and not g.passed
    assert g.drawbacks == (("missing_keyword", "'pear' never appears"),)
    ok = v.grade({"keyword": "fig", "max_len": 30}, "fig jam")
    assert ok.passed and ok.drawbacks == ()
    batch = v.grade_items(list(v.family.split("dev").items), jobs=1, progress=False)
    assert [f.value for f in batch.finals] == ["pass", "fail", "fail", "pass", "fail", "fail"]
    assert batch.matrix.op_names == ("nonempty", "missing_keyword", "shouting", "too_long")


def test_check_takes_known_ops_from_the_family(tiny_family):
    (tiny_family / "typo.vx").write_text("(any missing_keyword shoutin)\n")
    r = run("check", str(tiny_family / "typo.vx"))
    assert r.exit_code == 1
    assert "unknown op 'shoutin'" in r.output and "did you mean 'shouting'?" in r.output
    assert run("check", str(tiny_family / "seed.vx")).exit_code == 0
    # outside any family only the syntax is checked
    assert run("check", "--ops", "a,b", str(tiny_family / "seed.vx")).exit_code == 1


def test_check_warns_when_a_specs_header_points_nowhere(tiny_family):
    (tiny_family / "evolved.vx").write_text("; specs: missing.specs.json\n(any missing_keyword syn_x)\n")
    r = CliRunner().invoke(main, ["check", str(tiny_family / "evolved.vx")])
    assert r.exit_code == 1
    assert "cannot read the specs file" in r.output and "unknown op 'syn_x'" in r.output


def test_explain_says_when_a_drawback_comes_from_an_op_estimated_to_false_alarm(tiny_family):
    # what `vx evolve` writes in an evolved .vx: each op's estimated false-alarm rate on the train split
    (tiny_family / "doubt.vx").write_text(
        "; family: tiny\n; false_alarms: missing_keyword 0.0800 (n 250), "
        "shouting 0.0000 (n 250)\n(any missing_keyword shouting too_long)\n"
    )
    r = run("explain", str(tiny_family / "doubt.vx"), "--item", "d2")
    assert r.exit_code == 0, r.output
    assert "missing_keyword fires on an estimated 8.0% of correct outputs" in " ".join(r.output.split())
    j = json.loads(run("explain", str(tiny_family / "doubt.vx"), "--item", "d2", "--json").output)
    assert j["doubtful_drawbacks"] == [{"op": "missing_keyword", "false_alarm_rate": 0.08, "n": 250.0}]
    # without the header (a hand-written .vx) nothing is said
    plain = json.loads(run("explain", str(tiny_family / "seed.vx"), "--item", "d2", "--json").output)
    assert plain["doubtful_drawbacks"] == []


def test_ops_false_alarms_applies_the_pool_and_reports_each_op_with_its_evidence(tiny_family, tmp_path):
    cache = str(tmp_path / "c3.sqlite")
    r = run("ops", str(tiny_family), "--false-alarms", "-j", "1", "--cache", cache)
    assert r.exit_code == 0, r.output
    assert "est. false alarms" in r.output and "false alarms estimated without labels" in r.output
    doc = json.loads(run("ops", str(tiny_family), "--false-alarms", "--json", "-j", "1", "--cache", cache).output)
    fa = doc["false_alarms"]
    assert fa["estimator"] == "pseudo-positives" and {r["op"] for r in fa["ops"]} >= {"missing_keyword", "shouting"}
    assert all({"rate", "n", "fires", "evidence"} <= set(row) for row in fa["ops"])
