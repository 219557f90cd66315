"""The skill loop's mechanics, end to end: the real anthropic SDK against the fake transport, with a scripted
solver whose notes depend on the skills in its prompt (tests/ratchet/scripted.py), on the `notes` family."""

from __future__ import annotations

import random

import pytest

from llm.fake import FakeAPI
from vx.ratchet import RatchetConfig, run_ratchet
from vx.ratchet.graders import ground_truth_for
from vx.ratchet.store import RatchetStore

from .scripted import ScriptedModel, make_client


def run(notes, tmp_path, name="run", truth=None, **cfg):
    model = ScriptedModel()
    api = FakeAPI(default=model)
    client = make_client(api, tmp_path / "llm.sqlite")
    defaults = dict(arms=("oracle",), verifier_rounds=(0,), skill_rounds=(5,), batch_size=16, capacity=2, jobs=1)
    defaults.update(cfg)
    config = RatchetConfig(**defaults)
    result = run_ratchet(notes, config=config, out=tmp_path / f"{name}.vxratchet.sqlite", client=client, truth=truth)
    return result, model, api


def test_a_fixing_skill_lifts_the_held_out_score_and_survives_while_a_useless_one_is_evicted(notes, tmp_path):
    result, model, api = run(notes, tmp_path)
    with RatchetStore(result.run_path) as s:
        rounds = s.rounds("oracle")
        skills = {k["name"]: k for k in s.skills("oracle")}
        events = [(e["round"], e["skill"], e["kind"]) for e in s.events("oracle")]
        capsules = s.capsules("oracle")
    assert rounds[0]["heldout"] == pytest.approx(0.4)  # the frozen solver: r20, r23, r26, r29 pass
    assert rounds[1]["heldout"] == pytest.approx(0.7)  # + name-the-keyword: r21, r24, r27
    assert rounds[-1]["heldout"] == pytest.approx(1.0)  # + use-lowercase
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
    assert fig["lift_peak"] == pytest.approx(0.6) and fig["improved"] == 6


def test_a_harmful_skill_triggers_rollback(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, capacity=3)
    with RatchetStore(result.run_path) as s:
        r2 = s.rounds("oracle")[2]
        skills = {k["name"]: k for k in s.skills("oracle")}
        kinds = {(e["skill"], e["kind"]) for e in s.events("oracle")}
    assert r2["synth"]["new"] == ["pad-with-detail"]
    assert r2["rolled_back"] and r2["heldout_measured"] == pytest.approx(0.0)
    assert r2["heldout"] == pytest.approx(0.7) and r2["heldout_round"] == 1  # the restored bank's score
    assert "pad-with-detail" not in [k["name"] for k in r2["state"]["bank"]]
    assert "pad-with-detail" in r2["state"]["removed"]
    assert skills["pad-with-detail"]["status"] == "rolled_back"
    assert ("pad-with-detail", "rolled_back") in kinds


def test_without_rollback_the_harmful_skill_stays_and_the_held_out_score_drops(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, capacity=3, rollback=False, skill_rounds=(2,))
    with RatchetStore(result.run_path) as s:
        r2 = s.rounds("oracle")[2]
    assert not r2["rolled_back"] and r2["heldout"] == pytest.approx(0.0)


def test_the_always_pass_grader_looks_perfect_while_the_locked_score_stays_put(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, arms=("oracle", "always-pass"))
    with RatchetStore(result.run_path) as s:
        ap = s.rounds("always-pass")
        oracle = s.rounds("oracle")
    assert all(r["train_pass"] == 1.0 for r in ap[1:])  # its own score: every attempt passes, every round
    assert max(r["train_pass"] for r in oracle[1:]) < 1.0
    assert [k["name"] for k in ap[-1]["state"]["bank"]] == ["keep-it-short"]  # it "learned" by its own lights
    assert {r["heldout"] for r in ap} == {ap[0]["heldout"]} and ap[0]["heldout"] == pytest.approx(0.4)  # no lift
    fig = result.figures
    assert fig["arms"]["always-pass"]["lift_peak"] == 0.0 and fig["retention"]["always-pass"]["peak"] == 0.0


def test_co_evolution_alternates_phases_and_its_verifier_grades_only_training_tasks(notes, tmp_path):
    result, _model, _api = run(notes, tmp_path, arms=("oracle", "co", "naive"), verifier_rounds=(1, 1),
                               skill_rounds=(3, 3))
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
    assert judge["win"] == 6 and judge["loss"] == 0


def test_a_weaker_verifier_retains_less_of_the_oracle_lift(notes, tmp_path):
    """With no verifier rounds the co arm grades with the seed, which never names a missing keyword."""
    result, _model, _api = run(notes, tmp_path, arms=("oracle", "co"), verifier_rounds=(0,), skill_rounds=(4,))
    fig = result.figures
    assert fig["arms"]["oracle"]["peak"] == pytest.approx(1.0)
    assert fig["arms"]["co"]["peak"] == pytest.approx(0.7)  # only the case lesson was learned
    assert 0.0 < fig["retention"]["co"]["peak"] < 1.0


class ShuffledTruth:
    """The family's ground truth with the verdicts of every held-out task scrambled (a different locked set)."""

    def __init__(self, inner, seed):
        self.inner, self.rng = inner, random.Random(seed)
        self.name, self.kind = "ground-truth", "shuffled"

    def describe(self):
        return {"name": self.name, "kind": self.kind}

    def grade_many(self, pairs):
        out = self.inner.grade_many(pairs)
        flips = [self.rng.random() < 0.5 for _ in pairs]
        return [j if int(t[1:]) < 20 else type(j)(f, float(f), (), "") for (t, _), j, f in zip(pairs, out, flips)]


def test_the_verifier_loop_never_reads_the_locked_split(notes, tmp_path):
    """Without rollback (the only place the skill side reads held-out scores), scrambling the held-out ground
    truth leaves the co arm's verifier evolution — and its whole skill side — byte-identical."""
    from vx.evolve.store import RunStore
    from vx.families.family import Family

    fam = Family(notes)
    records = []
    for k in range(2):
        out = tmp_path / f"leak{k}"
        out.mkdir()
        truth = ShuffledTruth(ground_truth_for(fam), seed=k)
        result, _m, _a = run(notes, out, arms=("co",), verifier_rounds=(1, 1), skill_rounds=(2, 2), rollback=False,
                             truth=truth, judge=False)
        with RunStore(out / "run.co.verifier.vxrun.sqlite") as vs:
            vrounds = [{k2: v for k2, v in r.items() if k2 != "seconds"} for r in vs.rounds()]
        with RatchetStore(result.run_path) as s:
            train = [(a["round"], a["task"], a["output"], a["passed"]) for a in s.attempts("co", kind="train")]
            phases = [(p["verifier"], p["specs"]) for p in s.phases("co")]
            held = [r["heldout"] for r in s.rounds("co")]
        records.append((vrounds, train, phases, held))
    assert records[0][:3] == records[1][:3]
    assert records[0][3] != records[1][3]  # the measurement did change
