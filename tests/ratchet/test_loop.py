"""The skill loop's mechanics, end to end: the real anthropic SDK against the fake transport, with a scripted
solver whose notes depend on the skills in its prompt (tests/ratchet/scripted.py), on the `notes` family (a
family defined only in tests/fixtures/ratchet, its pack supplying every hook the ratchet uses).

With seed 0 the held-out tasks r20-r29 split into the rollback part r20 r21 r22 r25 r26 and the report part
r23 r24 r27 r28 r29; the frozen solver passes r20, r23, r26, r29 (0.4 on each part); ``name-the-keyword``
fixes r21 (rollback) and r24, r27 (report), ``use-lowercase`` r22, r25 (rollback) and r28 (report)."""

from __future__ import annotations

import random

import pytest
from llm.fake import FakeAPI

from vx.families.family import Family
from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.graders import ground_truth_for
from vx.ratchet.run import heldout_parts, split_tasks
from vx.ratchet.store import RatchetStore

from .scripted import BlindModel, ScriptedModel, make_client

ROLLBACK = ("r20", "r21", "r22", "r25", "r26")
REPORT = ("r23", "r24", "r27", "r28", "r29")


def run(notes, tmp_path, name="run", truth=None, model=None, **cfg):
    model = model or ScriptedModel()
    api = FakeAPI(default=model)
    client = make_client(api, tmp_path / f"{name}-llm.sqlite")
    defaults = dict(arms=("oracle",), verifier_rounds=(0,), skill_rounds=(5,), batch_size=16, capacity=2, jobs=1)
    defaults.update(cfg)
    config = RatchetConfig(**defaults)
    result = run_ratchet(notes, config=config, out=tmp_path / f"{name}.vxratchet.sqlite", client=client, truth=truth)
    return result, model, api


def test_the_seeded_split_of_the_fixture(notes):
    _train, held = split_tasks(Family(notes))
    parts = heldout_parts(held, RatchetConfig(seed=0))
    assert (parts.rollback, parts.report) == (ROLLBACK, REPORT)


def test_a_fixing_skill_lifts_the_held_out_score_and_survives_while_a_useless_one_is_evicted(notes, tmp_path):
    result, model, api = run(notes, tmp_path)
    with RatchetStore(result.run_path) as s:
        rounds = s.rounds("oracle")
        skills = {k["name"]: k for k in s.skills("oracle")}
        events = [(e["round"], e["skill"], e["kind"]) for e in s.events("oracle")]
        capsules = s.capsules("oracle")
    assert [(r["rollback_score"], r["report_score"]) for r in rounds[:2]] == [(0.4, 0.4), (0.6, 0.8)]
    assert (rounds[-1]["rollback_score"], rounds[-1]["report_score"]) == (1.0, 1.0)  # + use-lowercase
    assert skills["name-the-keyword"]["status"] == "active"
    assert skills["name-the-keyword"]["contribution"]["effect"] > 0.2
    assert skills["be-polite"]["status"] == "evicted"
    assert skills["be-polite"]["contribution"]["effect"] < skills["name-the-keyword"]["contribution"]["effect"]
    assert (3, "be-polite", "evicted") in events
    assert all(len(r["state"]["bank"]) <= 2 for r in rounds)  # bounded
    # capsules carry the grader's named checks and messages
    first = [c for c in capsules if c["round"] == 1]
    assert first and all(c["checks"] for c in first)
    assert {c["checks"][0][0] for c in first} == {"keyword", "case"}
    assert "does not name" in first[0]["checks"][0][1] or "capitals" in first[0]["checks"][0][1]
    # the synthesizer saw them: its request carries the check names
    synth_reqs = [r for r in api.requests if "You keep a bank of skills" in r["system"][0]["text"]]
    assert "  - keyword: the note does not name" in synth_reqs[0]["messages"][0]["content"]
    fig = result.figures["arms"]["oracle"]
    assert fig["lift_peak"] == pytest.approx(0.6) and fig["improved_tasks"] == ["r24", "r27", "r28"]  # report part
    assert fig["rollback_part"]["lift_peak"] == pytest.approx(0.6)
    with RatchetStore(result.run_path) as s:  # the fixture's pack hooks: its rendering, reply format, contract
        held = s.attempts("oracle", kind="heldout", round_=0)
        assert s.meta()["adapter"] == "notes" and s.meta()["ground_truth"]["kind"] == "notes-rules"
    assert {a["task"] for a in held} == set(ROLLBACK + REPORT) and all(not a["output"].startswith("NOTE") for a in held)
    solver_req = next(r for r in api.requests if "You write short notes" in r["system"][0]["text"])
    assert "names the keyword" in solver_req["messages"][0]["content"]


def test_a_harmful_skill_triggers_rollback(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, capacity=3)
    with RatchetStore(result.run_path) as s:
        r2 = s.rounds("oracle")[2]
        skills = {k["name"]: k for k in s.skills("oracle")}
        kinds = {(e["skill"], e["kind"]) for e in s.events("oracle")}
    assert r2["synth"]["new"] == ["pad-with-detail"]
    assert r2["rolled_back"] and r2["rollback_measured"] == 0.0 and r2["report_measured"] == 0.0
    assert r2["bank_round"] == 1 and (r2["rollback_score"], r2["report_score"]) == (0.6, 0.8)  # the restored bank
    assert "pad-with-detail" not in [k["name"] for k in r2["state"]["bank"]]
    assert "pad-with-detail" in r2["state"]["removed"]
    assert skills["pad-with-detail"]["status"] == "rolled_back"
    assert ("pad-with-detail", "rolled_back") in kinds


def test_without_rollback_the_harmful_skill_stays_and_the_held_out_score_drops(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, capacity=3, rollback=False, skill_rounds=(2,))
    with RatchetStore(result.run_path) as s:
        r2 = s.rounds("oracle")[2]
    assert not r2["rolled_back"] and r2["rollback_score"] == r2["report_score"] == 0.0


def test_the_always_pass_control_collapses_and_its_validity_is_vacuous(notes, tmp_path):
    """With nothing failing, the synthesizer learns from the 'passed' attempts' habits — shouting, which the
    control passed — and the lesson makes the solver worse; the control's report-part lift stays below the
    oracle's while its own training pass rate is 1.0 in every round."""
    result, _model, _api = run(
        notes, tmp_path, arms=("oracle", "always-pass"), capacity=3, skill_rounds=(6,), final_rounds=3
    )
    with RatchetStore(result.run_path) as s:
        ap = s.rounds("always-pass")
        oracle = s.rounds("oracle")
        ap_skills = {k["name"]: k["status"] for k in s.skills("always-pass")}
    assert all(r["train_pass"] == 1.0 for r in ap[1:])  # its own score: every attempt passes, every round
    assert max(r["train_pass"] for r in oracle[1:]) < 1.0
    assert ap[1]["synth"]["new"] == ["write-in-capitals"] and ap[1]["rollback_measured"] == 0.0  # worse, everywhere
    assert ap_skills == {"write-in-capitals": "rolled_back"}
    fig = result.figures
    assert fig["arms"]["always-pass"]["lift_final"] < fig["arms"]["oracle"]["lift_final"] == pytest.approx(0.6)
    assert fig["arms"]["always-pass"]["verifier_validity"] == "vacuous"
    assert fig["retention"]["always-pass"] == {
        "peak": 0.0,
        "final": 0.0,
        "verifier_validity": "vacuous",
        "train_pass": 1.0,
    }


@pytest.mark.parametrize("protocol", ["two-part", "papers"])
def test_a_grader_blind_synthesizer_shows_the_control_only_under_the_two_part_protocol(notes, tmp_path, protocol):
    """The audit scenario: the synthesizer ignores the grader and writes the same lessons in every arm, one of
    them (add-detail) hurting every task but the two-part run's rollback part. Under the papers' protocol
    rollback reads every held-out task, removes it, and the always-pass control retains the oracle's whole lift
    (1.0: the downstream score certifies a grader that passes everything). Under the two-part protocol rollback
    cannot see it: the control keeps it and its report-part lift ends negative, while the oracle retires it
    from its training evidence."""
    result, _model, _api = run(
        notes,
        tmp_path,
        model=BlindModel(spared=ROLLBACK),
        arms=("oracle", "always-pass"),
        capacity=3,
        skill_rounds=(6,),
        final_rounds=3,
        protocol=protocol,
    )
    fig = result.figures
    ret, oracle, ap = fig["retention"]["always-pass"], fig["arms"]["oracle"], fig["arms"]["always-pass"]
    assert oracle["lift_final"] == pytest.approx(0.6) and ap["verifier_validity"] == "vacuous"
    with RatchetStore(result.run_path) as s:
        kinds = {(e["skill"], e["kind"]) for a in ("oracle", "always-pass") for e in s.events(a)}
        ap_rounds = s.rounds("always-pass")
    if protocol == "papers":
        assert ret["final"] == ret["peak"] == pytest.approx(1.0)
        assert ("add-detail", "rolled_back") in kinds
        assert [r["report_score"] for r in ap_rounds] == sorted(r["report_score"] for r in ap_rounds)  # never falls
    else:
        assert ret["final"] <= 0.0 and ap["lift_final"] == pytest.approx(-0.4)
        assert ap["rollback_part"]["lift_final"] == pytest.approx(0.6)  # what rollback sees: all is well
        assert ("add-detail", "retired") in kinds and ("add-detail", "rolled_back") not in kinds
        assert [k["name"] for k in ap_rounds[-1]["state"]["bank"]] == [
            "name-the-keyword",
            "add-detail",
            "use-lowercase",
        ]
    judge = fig["judge"]["always-pass/final/task-aware"]
    assert (judge["loss"] > 0) == (protocol == "two-part")


def test_co_evolution_alternates_phases_and_its_verifier_grades_only_training_tasks(notes, tmp_path):
    result, _model, _api = run(
        notes, tmp_path, arms=("oracle", "co", "naive"), verifier_rounds=(1, 1), skill_rounds=(3, 3)
    )
    train = {f"r{i}" for i in range(16)}
    with RatchetStore(result.run_path) as s:
        phases = s.phases("co")
        co_train = s.attempts("co", kind="train")
        co = s.rounds("co")
        naive_phases = s.phases("naive")
        naive = s.rounds("naive")
    assert [(p["phase"], p["total_rounds"], p["first_skill_round"]) for p in phases] == [(0, 1, 1), (1, 2, 4)]
    assert "missing_keyword" in phases[0]["verifier"]  # the seed (any too_long shouting) could not see it
    assert phases[0]["validity"]["agreement"] is not None  # verifier validity on the locked split (an audit)
    assert {a["task"] for a in co_train} <= train
    assert {c[0] for a in co_train for c in a["checks"]} <= {"missing_keyword", "too_long", "shouting", "nonempty"}
    assert co[1]["grader"]["expression"] == phases[0]["verifier"]
    assert (tmp_path / "run.co.verifier.vxrun.sqlite").is_file()
    fig = result.figures
    assert fig["retention"]["co"]["peak"] == pytest.approx(1.0)
    assert "verifier_validity" in fig["retention"]["naive"]
    assert not any(r["rolled_back"] for r in naive)  # the naive arm never rolls back
    assert len(naive_phases) == 2
    judge = fig["judge"]["co/final/task-aware"]
    assert judge["win"] == 3 and judge["loss"] == 0  # the report part's three improved tasks


def test_a_weaker_verifier_retains_less_of_the_oracle_lift(notes, tmp_path):
    """With no verifier rounds the co arm grades with the seed, which never names a missing keyword."""
    result, _model, _api = run(notes, tmp_path, arms=("oracle", "co"), verifier_rounds=(0,), skill_rounds=(4,))
    fig = result.figures
    assert fig["arms"]["oracle"]["peak"] == pytest.approx(1.0)
    assert fig["arms"]["co"]["peak"] == pytest.approx(0.6)  # only the case lesson was learned (r28)
    assert fig["retention"]["co"]["peak"] == pytest.approx(1 / 3)


class ScrambledReport:
    """The family's ground truth with the verdicts of the report part's tasks scrambled (a different report
    part): what rollback and every loop read is untouched."""

    def __init__(self, inner, seed):
        self.inner, self.rng = inner, random.Random(seed)
        self.name, self.kind = "ground-truth", "scrambled"

    def describe(self):
        return {"name": self.name, "kind": self.kind}

    def grade_many(self, pairs):
        out = self.inner.grade_many(pairs)
        return [
            type(j)(f, float(f), (), "") if t in REPORT else j
            for (t, _), j, f in zip(pairs, out, [self.rng.random() < 0.5 for _ in pairs])
        ]


def test_nothing_in_any_loop_reads_the_report_part(notes, tmp_path):
    """Rollback on (it reads the rollback part): scrambling the report part's ground truth leaves every arm's
    trajectory — rounds, bank, capsules, events, every training attempt and every rollback-part attempt — and
    the co arms' verifier evolutions byte-identical; only the report part's scores move."""
    from vx.evolve.store import RunStore

    fam = Family(notes)
    arms = ("oracle", "co", "naive", "always-pass")
    records = []
    for k in range(2):
        out = tmp_path / f"leak{k}"
        out.mkdir()
        truth = ScrambledReport(ground_truth_for(fam), seed=k)
        result, _m, _a = run(
            notes, out, arms=arms, verifier_rounds=(1, 1), skill_rounds=(2, 2), capacity=3, truth=truth, judge=False
        )
        verifier = []
        for arm in ("co", "naive"):
            with RunStore(out / f"run.{arm}.verifier.vxrun.sqlite") as vs:
                verifier.append([{k2: v for k2, v in r.items() if k2 != "seconds"} for r in vs.rounds()])
        with RatchetStore(result.run_path) as s:
            loops = {
                arm: (
                    [
                        {c: v for c, v in r.items() if c not in ("seconds", "report_measured", "report_score")}
                        for r in s.rounds(arm)
                    ],
                    [
                        (
                            a["round"],
                            a["kind"],
                            a["task"],
                            a["routed"],
                            a["included"],
                            a["output"],
                            a["passed"],
                            a["score"],
                            a["checks"],
                        )
                        for a in s.attempts(arm)
                        if a["task"] not in REPORT
                    ],
                    [(a["round"], a["task"], a["output"]) for a in s.attempts(arm) if a["task"] in REPORT],
                    s.capsules(arm),
                    s.skills(arm),
                    [{c: v for c, v in e.items() if c != "id"} for e in s.events(arm)],
                    s.phases(arm),
                )
                for arm in arms
            }
            report = {arm: [r["report_score"] for r in s.rounds(arm)] for arm in arms}
        records.append((loops, verifier, report))
    assert records[0][0] == records[1][0]
    assert records[0][1] == records[1][1]
    assert records[0][2] != records[1][2]  # the measurement did change


def test_a_family_ground_truth_function_in_family_toml_still_works(notes, tmp_path):
    """`[ratchet] ground_truth = "truth.py:grade"` (the hook for a user family) takes precedence over the pack's
    and, being the same function here, gives the same record."""
    (notes / "family.toml").write_text(
        (notes / "family.toml").read_text() + '\n[ratchet]\nground_truth = "truth.py:grade"\n'
    )
    plugin, _m, _a = run(notes, tmp_path, name="plugin", judge=False)
    with RatchetStore(plugin.run_path) as s:
        assert s.meta()["ground_truth"] == {"name": "ground-truth", "kind": "plugin", "function": "truth.py:grade"}
        a = [(r["round"], r["rollback_score"], r["report_score"]) for r in s.rounds("oracle")]
    (notes / "family.toml").write_text((notes / "family.toml").read_text().split("\n[ratchet]")[0] + "\n")
    pack, _m, _a = run(notes, tmp_path, name="pack", judge=False)
    with RatchetStore(pack.run_path) as s:
        assert s.meta()["ground_truth"]["kind"] == "notes-rules"
        b = [(r["round"], r["rollback_score"], r["report_score"]) for r in s.rounds("oracle")]
    assert a == b


def test_the_ratchet_holds_no_family_names():
    """Family knowledge lives in each family's folder: vx/ratchet imports no family and names none."""
    import ast
    from pathlib import Path

    import vx.ratchet
    from vx.families.pack import BUILTIN

    root = Path(vx.ratchet.__file__).parent
    names = set(BUILTIN) | {"generic-code", "humaneval", "mbpp", "spider"}
    for path in sorted(root.glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(
                    m.startswith(("vx.families.code", "vx.families.sql", "vx.families.report")) for m in mods
                ), f"{path.name}:{node.lineno} imports a family"
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert node.value not in names, f"{path.name}:{node.lineno} names the family {node.value!r}"
