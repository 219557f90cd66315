"""The Spider family on the real data in ../shared/data/sql/spider (skipped when absent)."""

import importlib.util
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vx.families.family import Family
from vx.families.sql import variants
from vx.families.sql.compare import result_signature, spider_match
from vx.families.sql.data.spider import Databases, Skipped, SpiderTruth, read_attempts, read_questions
from vx.families.sql.scripts import script_spec

pytestmark = pytest.mark.data


def jsonl(path):
    return [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]


def shared_grader(root):
    """The reference grader of the data folder, imported from where it lives (never copied)."""
    spec = importlib.util.spec_from_file_location("grade_spider", root / "grade_spider.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def truth_for(root, questions):
    specs = {db: script_spec(root / "databases" / f"{db}.sql", db) for db in {q.database for q in questions.values()}}
    return SpiderTruth(questions, specs, Databases())


@pytest.mark.slow
def test_labels_agree_with_the_shared_grader_on_every_prediction(spider_root):
    root = spider_root
    G = shared_grader(root)
    skipped = Skipped()
    questions = read_questions(root / "questions.jsonl", skipped)
    truth = truth_for(root, questions)
    conns, golds = {}, {}
    agree, disagreements = 0, []
    files = sorted((root / "samples").glob("*.jsonl")) + sorted((root / "samples-frontier").glob("*.jsonl"))
    for f in files:
        for a in read_attempts(f, questions, skipped):
            q = questions[a.task]
            if q.database not in conns:
                conns[q.database] = G.load_db(str(root / "databases" / f"{q.database}.sql"), q.database)
            if q.id not in golds:
                golds[q.id] = G.run_sql(conns[q.database], G.official_normalize("", q.gold)[1])
            p = G.run_sql(conns[q.database], G.official_normalize(a.sql, "")[0])
            ref = p[0] == "ok" and G.result_eq(golds[q.id][1], p[1], G.gold_orders(q.gold))
            mine = truth.grade(a.task, a.sql).label == "pass"
            agree += mine == ref
            if mine != ref:
                disagreements.append(f"{a.run} {a.task}: vx {mine}, shared grader {ref}")
    total = agree + len(disagreements)
    assert total == 191 * len(files) and not skipped.counts
    assert agree / total >= 0.99, "\n".join(disagreements)
    print(f"labels agree with grade_spider.py on {agree} of {total}; disagreements: {disagreements}")


def test_variants_of_every_spider_database_keep_their_keys_consistent(spider_root):
    root = spider_root
    for script in sorted((root / "databases").glob("*.sql")):
        spec = script_spec(script)
        original = variants.read_tables(variants._base_file(spec))
        keys = variants.infer_keys(original)
        for i in range(2):
            tables = variants.read_tables(variants.materialize(variants.variant_spec(spec, i)))
            for r in keys.references:
                parent = {str(row[r.key]) for row in tables[r.parent].rows}
                dangling = [
                    row[r.column]
                    for row in tables[r.table].rows
                    if row[r.column] is not None and str(row[r.column]) not in parent
                ]
                assert not dangling, (script.name, i, r, dangling[:3])


@pytest.fixture
def small_spider(tmp_path, spider_root):
    """A Spider folder with the questions of six small databases, two real prediction files and a third
    file of bad lines (written here)."""
    root = spider_root
    data = tmp_path / "spider"
    (data / "samples").mkdir(parents=True)
    small = {"concert_singer", "singer", "pets_1", "poker_player", "orchestra", "employee_hire_evaluation"}
    lines = [
        x
        for x in (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if x.strip() and json.loads(x)["db_id"] in small
    ]
    (data / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "databases").symlink_to(root / "databases")
    keep = ["din-sql-pred_Qwen2.5-Coder-7B-Instruct.jsonl", "din-sql-pred_Phi-3.5-mini-instruct.jsonl"]
    for name in keep:
        shutil.copy(root / "samples" / name, data / "samples" / name)
    first = jsonl(root / "samples" / keep[0])[0]
    (data / "samples" / "zz-bad.jsonl").write_text(
        "\n".join(
            [
                "{not json",
                json.dumps({"task_id": first["task_id"]}),  # no sql
                json.dumps(
                    {"task_id": "spider-dev-999999", "sql": "SELECT 1"}
                ),  # no such question (nor the files' others)
                json.dumps({"task_id": first["task_id"], "sql": "SELECT 1"}),
                json.dumps({"task_id": first["task_id"], "sql": "SELECT 2"}),  # a second prediction in one file
                "[1, 2]",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return data


def test_build_spider_from_real_predictions_skips_bad_lines_with_reasons(small_spider, tmp_path):
    from vx.cli.main import main

    out = tmp_path / "fam"
    r = CliRunner().invoke(
        main,
        ["data", "build", "spider", "--data-dir", str(small_spider), "--out", str(out), "--variants", "2", "--json"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.output[r.output.index("{") :])
    skipped = report["input_skipped"]
    n_questions = len(jsonl(small_spider / "questions.jsonl"))
    unknown = 2 * (191 - n_questions)  # the two real files' predictions of questions left out of this folder
    assert skipped["total"] == 5 + unknown
    first = jsonl(small_spider / "samples" / "din-sql-pred_Qwen2.5-Coder-7B-Instruct.jsonl")[0]["task_id"]
    assert {k.split(" (")[0] for k in skipped["counts"]} == {
        "malformed JSON",
        "expected a JSON object, got list",
        "a prediction needs string fields task_id and sql",
        "the prediction's task_id is not a question of questions.jsonl",
        f"a second prediction of {first} in one file",
    }
    assert all(n <= 10 for n in Counter(x.split(": ", 1)[1] for x in skipped["listed"]).values())  # 10 per reason
    assert {x for x in skipped["listed"] if x.startswith("zz-bad.jsonl:")} >= {
        "zz-bad.jsonl:1: malformed JSON (Expecting property name enclosed in double quotes at column 2)",
        "zz-bad.jsonl:6: expected a JSON object, got list",
    }
    counts = report["counts"]
    assert counts["dev_items"] == 10 and counts["dev_labels"] == {"fail": 5, "pass": 5}

    fam = Family(out)
    tasks = {name: {it.task for it in fam.split(name)} for name in ("train", "dev")}
    tasks["locked"] = {it.task for it in fam.audit().labeled_split()}
    assert not tasks["train"] & tasks["dev"] and not tasks["train"] & tasks["locked"]
    assert not tasks["dev"] & tasks["locked"]
    assert set(fam.peers) <= tasks["dev"]  # the dev tasks' other attempts, unlabeled
    for t in fam.tasks.values():
        assert t["match"] == "spider" and t["dialect"] == "sqlite" and "gold" not in t
        assert set(t["variants"]["use"]) <= {0, 1}
    dev = fam.split("dev")
    assert all(it.reference for it in dev)
    assert all(it.meta["teacher"] == "execution-variants" for it in dev)
    fails = [it for it in dev if it.hard_label() == "fail"]
    assert all(it.meta["teacher_agreement"] <= 0.5 for it in fails)  # clear: they differ on the original
    locked = fam.audit().labeled_split()
    assert len(locked) >= (counts["train_items"] + len(locked) + 10) // 4
    # the locked labels are the ground truth
    questions = read_questions(small_spider / "questions.jsonl", Skipped())
    truth = truth_for(small_spider, questions)
    assert all(truth.grade(it.task, it.output).label == it.hard_label() for it in list(locked)[:60])


mixed_cells = st.one_of(
    st.none(), st.integers(-2, 2), st.sampled_from([1.0, 1.5, 2.0, -0.5, 0.0]), st.sampled_from(["a", "1", "1.5"])
)


@st.composite
def mixed_pairs(draw):
    """Two tables of one width whose rows mix ints and floats: often the same rows with some ints made
    floats (``(1, 1.5)`` against ``(1.0, 1.5)``), columns permuted and rows shuffled."""
    width = draw(st.integers(1, 4))
    a = draw(st.lists(st.tuples(*([mixed_cells] * width)), min_size=1, max_size=4))
    b = [tuple(float(v) if isinstance(v, int) and draw(st.booleans()) else v for v in r) for r in a]
    if draw(st.booleans()):
        perm = draw(st.permutations(range(width)))
        b = [tuple(r[j] for j in perm) for r in b]
    b = draw(st.permutations(b))
    if draw(st.booleans()):
        b = draw(st.lists(st.tuples(*([mixed_cells] * width)), min_size=len(a), max_size=len(a)))
    return a, list(b)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pair=mixed_pairs(), ordered=st.booleans())
def test_spider_match_is_the_reference_result_eq_on_int_float_mixing(spider_root, pair, ordered):
    gold, pred = pair
    ref = shared_grader(spider_root).result_eq(gold, pred, ordered)
    assert spider_match(pred, gold, order_matters=ordered) == ref
    assert (result_signature(pred, ordered=ordered) == result_signature(gold, ordered=ordered)) == ref


def test_the_issue_s_int_float_row_is_different_as_the_reference_says(spider_root):
    ref = shared_grader(spider_root)
    assert not ref.result_eq([(1, 1.5)], [(1.0, 1.5)], False)
    assert not spider_match([(1.0, 1.5)], [(1, 1.5)])
    assert spider_match([(1.0, 2.0)], [(1, 2)]) and ref.result_eq([(1, 2)], [(1.0, 2.0)], False)


def test_the_frontier_family_builds_from_samples_frontier_with_the_stratified_draw(spider_root, tmp_path):
    """``vx data build spider --samples-dir samples-frontier``: the four published systems, k = 4, and the
    dev failures stratified by the teacher's evidence (a small folder of six databases' questions)."""
    from vx.cli.main import main
    from vx.families.sql.data.spider import DRAW_STRATA

    data = tmp_path / "spider"
    (data / "samples-frontier").mkdir(parents=True)
    small = {
        "concert_singer",
        "singer",
        "pets_1",
        "poker_player",
        "orchestra",
        "employee_hire_evaluation",
        "car_1",
        "world_1",
    }
    lines = [
        x
        for x in (spider_root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if x.strip() and json.loads(x)["db_id"] in small
    ]
    (data / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (data / "databases").symlink_to(spider_root / "databases")
    keep = {json.loads(x)["id"] for x in lines}
    systems = sorted(p.name for p in (spider_root / "samples-frontier").glob("*.jsonl"))
    assert len(systems) == 4
    for name in systems:
        rows = [r for r in jsonl(spider_root / "samples-frontier" / name) if r["task_id"] in keep]
        (data / "samples-frontier" / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "fam"
    r = CliRunner().invoke(
        main,
        [
            "data",
            "build",
            "spider",
            "--data-dir",
            str(data),
            "--out",
            str(out),
            "--samples-dir",
            "samples-frontier",
            "--dev-draw",
            "stratified",
            "--variants",
            "1",
            "--json",
        ],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    report = json.loads(r.output[r.output.index("{") :])
    assert report["counts"]["dev_labels"] == {"fail": 5, "pass": 5}
    fam = Family(out)
    assert fam.provenance["samples_dir"] == "samples-frontier" and fam.provenance["dev_draw"] == "stratified"
    per_task = Counter(it.task for it in list(fam.split("train").items) + list(fam.audit().labeled_split().items))
    assert set(per_task.values()) == {4}
    runs = {it.id.split("#", 1)[1] for it in fam.audit().labeled_split()}
    assert runs == {s.removesuffix(".jsonl") for s in systems}
    fails = [it for it in fam.split("dev") if it.hard_label() == "fail"]
    evidence = Counter(it.meta["teacher_evidence"] for it in fails)
    assert set(evidence) <= set(DRAW_STRATA) and len(evidence) >= 2  # not all in one stratum
    assert all(it.meta["teacher_agreement"] <= 0.5 for it in fails)  # variant-only differences never enter dev


def test_bench_quality_lists_the_frontier_family(spider_root):
    spec = importlib.util.spec_from_file_location(
        "bench_quality", Path(__file__).resolve().parents[3] / "benchmarks" / "bench_quality.py"
    )
    bq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bq)
    assert "spider-frontier" in bq.FAMILIES and "spider-frontier" in bq.DEFAULT_FAMILIES
    fs = bq.spider_frontier_spec(spider_root)
    assert fs.kind == "spider" and fs.per_task is None and len(fs.samples) == 4
    assert all(p.parent.name == "samples-frontier" for p in fs.samples)


def test_vx_ratchet_runs_on_a_spider_family_demo_and_oracle(small_spider, tmp_path):
    """`vx ratchet` on a Spider family: the scripted SQL solver (--demo) and Spider's execution match as the
    oracle's ground truth (the gold queries come from the Spider folder, never from the family)."""
    from vx.cli.main import main
    from vx.families.sql.ratchet import SpiderMatch
    from vx.ratchet.store import RatchetStore

    (small_spider / "samples" / "zz-bad.jsonl").unlink()
    fam_dir = tmp_path / "fam"
    r = CliRunner().invoke(
        main,
        ["data", "build", "spider", "--data-dir", str(small_spider), "--out", str(fam_dir), "--variants", "0"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    fam = Family(fam_dir)
    truth = SpiderMatch(fam, [])
    tid = next(iter(fam.tasks))
    gold = {q["id"]: q["gold"] for q in jsonl(small_spider / "questions.jsonl")}[tid]
    ok, bad = truth.grade_many([(tid, gold), (tid, "SELECT nope FROM nowhere")])
    assert ok["passed"] and not bad["passed"] and bad["checks"][0][0] == "execution"

    out = tmp_path / "demo.vxratchet.sqlite"
    r = CliRunner().invoke(
        main,
        ["ratchet", str(fam_dir), "--demo", "--oracle", "--schedule", "0:4", "--out", str(out), "-j", "1"],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.output
    assert "SCRIPTED DEMO" in r.output
    with RatchetStore(out) as s:
        meta = s.meta()
        assert meta["ground_truth"]["kind"] == "spider-execution-match"
        oracle = s.rounds("oracle")
        skills = {k["name"] for k in s.skills("oracle")}
    assert oracle[0]["report_score"] < oracle[-1]["report_score"]  # the scripted lessons repair the queries
    assert "use-the-schema-names" in skills
