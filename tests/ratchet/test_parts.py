"""The ratchet's parts on their own: schedule, the held-out parts, contributions, eviction, routing, skill
parsing, the judge's two-order rule, the dry-run plan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.ratchet import extract_output as code_output
from vx.families.pack import first_block
from vx.ratchet.config import RatchetConfig, RatchetError, parse_schedule
from vx.ratchet.loop import batch_tasks
from vx.ratchet.roles import FinalJudge, SkillSynthesizer, parse_winner, solver_user_message
from vx.ratchet.routing import Router
from vx.ratchet.run import heldout_parts
from vx.ratchet.skills import Bank, Contribution, Skill, SkillError, contributions, curate, validate_skill
from vx.ratchet.tasks import Adapter


def test_schedule_parsing_and_phases():
    assert parse_schedule("15,8,5,2:25,25,25,25") == ((15, 8, 5, 2), (25, 25, 25, 25))
    assert parse_schedule("2,1:3") == ((2, 1), (3, 3))
    for bad in ("15,8", "1,2:3,4,5", "1:0", "a:b"):
        with pytest.raises(RatchetError):
            parse_schedule(bad)
    cfg = RatchetConfig(arms=("oracle", "co"), verifier_rounds=(2, 1), skill_rounds=(3, 4))
    assert cfg.phases("co") == [("verifier", 2), ("skill", 3), ("verifier", 1), ("skill", 4)]
    assert cfg.phases("oracle") == [("skill", 7)]
    assert [cfg.skill_phase_of(r) for r in range(1, 8)] == [0, 0, 0, 1, 1, 1, 1]
    assert cfg.first_round_of_phase(1) == 4
    assert not cfg.rollback_for("naive") and cfg.rollback_for("co")
    assert RatchetConfig.from_dict(cfg.as_dict()) == cfg
    with pytest.raises(RatchetError, match="verifier arm needs"):
        RatchetConfig(arms=("verifier",))


@given(st.integers(2, 60), st.integers(0, 10**6), st.floats(0.01, 0.99))
@settings(max_examples=80, deadline=None)
def test_the_held_out_parts_are_a_seeded_disjoint_split(n, seed, share):
    held = [f"t{i}" for i in range(n)]
    parts = heldout_parts(list(reversed(held)), RatchetConfig(seed=seed, rollback_share=share))
    assert parts.protocol == "two-part" and parts.rollback and parts.report
    assert not set(parts.rollback) & set(parts.report) and sorted(parts.tasks) == sorted(held)
    assert len(parts.rollback) == min(n - 1, max(1, round(share * n)))
    assert heldout_parts(held, RatchetConfig(seed=seed, rollback_share=share)) == parts  # seeded: same split
    papers = heldout_parts(held, RatchetConfig(seed=seed, protocol="papers"))
    assert papers.rollback == papers.report == tuple(sorted(held))


def test_the_held_out_parts_differ_by_seed_and_refuse_a_single_task():
    held = [f"t{i}" for i in range(20)]
    assert len({heldout_parts(held, RatchetConfig(seed=s)).report for s in range(5)}) > 1
    with pytest.raises(RatchetError, match="at least two held-out tasks"):
        heldout_parts(["t0"], RatchetConfig())
    with pytest.raises(RatchetError, match="protocol"):
        RatchetConfig(protocol="mine")
    with pytest.raises(RatchetError, match="rollback-share"):
        RatchetConfig(rollback_share=1.0)


@given(st.integers(1, 40), st.integers(1, 12), st.integers(0, 5))
@settings(max_examples=60, deadline=None)
def test_batches_cover_every_task_once_per_epoch(n, b, seed):
    tasks = [f"t{i}" for i in range(n)]
    if b > n:
        b = n
    seen = []
    rounds = n  # n rounds of b tasks = b epochs
    for r in range(1, rounds + 1):
        batch = batch_tasks(tasks, r, b, seed)
        assert len(set(batch)) == len(batch) <= b
        seen += batch
    # positions 0 .. n*b-1 walk b whole epochs: every task appears b times, minus in-batch duplicates
    assert set(seen) == set(tasks)
    assert batch_tasks(tasks, 3, b, seed) == batch_tasks(tasks, 3, b, seed)


def _attempts(rng, skills_effect, tasks, n, holdout=0.3):
    out = []
    for _ in range(n):
        t = tasks[rng.integers(len(tasks))]
        routed = list(skills_effect)
        inc = [s for s in routed if rng.random() >= holdout]
        score = float(np.clip(0.2 + sum(skills_effect[s] for s in inc) + (0.1 if t == tasks[0] else 0), 0, 1))
        out.append({"task": t, "routed": routed, "included": inc, "score": score})
    return out


def test_randomized_holdout_separates_skills_that_are_always_routed_together():
    rng = np.random.default_rng(0)
    eff = {"good": 0.5, "useless": 0.0, "bad": -0.2}
    c = contributions(_attempts(rng, eff, ["a", "b", "c"], 300), eff, ridge=1.0)
    assert c["good"].effect == pytest.approx(0.5, abs=0.05)
    assert c["useless"].effect == pytest.approx(0.0, abs=0.05)
    assert c["bad"].effect == pytest.approx(-0.2, abs=0.05)
    assert c["good"].routed == 300 and c["good"].included + c["good"].held_out == 300


def test_a_skill_never_left_out_has_no_measurable_effect():
    atts = [{"task": "a", "routed": ["s"], "included": ["s"], "score": 1.0} for _ in range(5)]
    assert contributions(atts, ["s", "never"])["s"].effect == pytest.approx(0.0)
    assert contributions(atts, ["never"])["never"].effect is None


def test_curate_retires_harmful_then_evicts_lowest_and_keeps_newcomers():
    bank = Bank(
        [
            Skill("old-good", "lesson one two", born=1),
            Skill("old-meh", "lesson one two", born=1),
            Skill("old-bad", "lesson one two", born=1),
            Skill("fresh", "lesson one two", born=5),
        ]
    )
    contrib = {
        "old-good": Contribution(0.4, 10, 7, 3),
        "old-meh": Contribution(0.01, 10, 7, 3),
        "old-bad": Contribution(-0.3, 10, 7, 3),
    }
    removals = curate(bank, contrib, round_=5, capacity=2, grace=2, min_evidence=4, retire_below=-0.05)
    assert [(r.name, r.kind) for r in removals] == [("old-bad", "retired"), ("old-meh", "evicted")]
    assert bank.names == ["old-good", "fresh"]


def test_skill_validation():
    s = validate_skill({"name": "Return Not Print!", "lesson": "Return the value; never print it."}, born=3)
    assert s.name == "return-not-print" and s.general and s.born == 3
    for bad in (
        {"name": "x", "lesson": "long enough lesson"},
        {"name": "fine-name", "lesson": "short"},
        {"name": "fine-name", "lesson": "long enough lesson", "extra": 1},
        "not an object",
    ):
        with pytest.raises(SkillError):
            validate_skill(bad, born=1)


def test_synthesizer_reply_parsing_drops_duplicates_and_removed_skills():
    synth = SkillSynthesizer(client=None, adapter=Adapter("generic", "s", "c"), family="f", n=2)
    reply = (
        '```json\n[{"name": "keep", "lesson": "already in the bank here"}, {"name": "gone-one", "lesson": '
        '"removed earlier on"}, {"name": "new-one", "lesson": "a fresh lesson to add"}, {"name": "bad"}, '
        '{"name": "new-two", "lesson": "another fresh lesson"}, {"name": "new-three", "lesson": "one too many"}]\n```'
    )
    new, dropped = synth.parse(reply, born=4, origin={}, bank=[Skill("keep", "x" * 20)], removed=["gone-one"])
    assert [s.name for s in new] == ["new-one", "new-two"]
    problems = {d["problem"].split(" (")[0] for d in dropped}
    assert {"already in the bank", "was removed earlier", "more than 2 skills in one round"} <= problems
    assert synth.parse("no json here", born=1, origin={}, bank=[], removed=[])[0] == []


def test_routing_prefers_matching_topical_skills_and_caps_k():
    corpus = [
        "sort the list of numbers ascending",
        "parse the date string",
        "count vowels in a word",
        "merge two sorted arrays",
    ]
    r = Router(corpus, k=2, min_similarity=0.1, general_score=0.15)
    skills = [
        Skill("date-formats", "Parse dates with an explicit format string.", when="date parsing", born=1),
        Skill("general-habit", "Check the edge cases first.", born=2),
        Skill("sorting-stability", "Sorted output must keep equal items in order.", when="sort sorted", born=3),
    ]
    assert r.route("parse the date string from the log", skills) == ["date-formats", "general-habit"]
    assert r.route("count vowels in a word", skills) == ["general-habit"]
    assert r.similarity("sort the numbers", skills[2]) > 0.1 > r.similarity("sort the numbers", skills[0])
    assert r.route("sort the numbers", skills) == ["sorting-stability", "general-habit"]


def test_judge_counts_a_win_only_when_both_orders_agree():
    assert parse_winner("WINNER: B\nREASON: fine") == "B"
    assert parse_winner("I think B") is None and parse_winner("WINNER: A\nB\nC") is None
    # order 1: A = old, B = new; order 2: A = new, B = old
    assert FinalJudge.outcome("WINNER: B", "WINNER: A") == ("new", "new", "win")
    assert FinalJudge.outcome("WINNER: A", "WINNER: B") == ("old", "old", "loss")
    assert FinalJudge.outcome("WINNER: B", "WINNER: B")[2] == "tie"  # position bias: no agreement
    assert FinalJudge.outcome("WINNER: B", "garbled")[2] == "tie"


def test_solver_prompt_and_extraction():
    msg = solver_user_message("do it", [Skill("a-skill", "the lesson text")])
    assert (
        msg.startswith("<lessons>") and "- a-skill: the lesson text" in msg and msg.endswith("<task>\ndo it\n</task>")
    )
    assert solver_user_message("do it", []) == "<task>\ndo it\n</task>"
    assert first_block("text\n```python\ndef f():\n    return 1\n```\nmore") == "def f():\n    return 1"
    assert first_block("```sql\nSELECT 1\n```", ("sql",)) == "SELECT 1"
    assert code_output("def f(): pass") == "def f(): pass\n"
    assert Adapter("generic", "", "").extract("  the answer \n") == "the answer"


def test_dry_run_plan_counts_calls(notes):
    from vx.llm.config import load_config
    from vx.ratchet.run import plan

    cfg = RatchetConfig(arms=("oracle", "co", "frozen"), verifier_rounds=(1, 1), skill_rounds=(2, 3), batch_size=4)
    p = plan(notes, cfg, load_config())
    by = {a["arm"]: a["roles"] for a in p["arms"]}
    assert p["train_tasks"] == 16 and p["heldout_tasks"] == 10
    assert (p["protocol"], p["rollback_tasks"], p["report_tasks"]) == ("two-part", 5, 5)
    assert by["oracle"]["solver"]["calls"] == 10 * 6 + 4 * 5  # both parts are attempted every round
    assert by["oracle"]["skill_synthesizer"]["calls"] == 5
    assert by["oracle"]["final_judge"]["calls"] == 5 * 2 * 2  # the report part's pairs, both orders, two rubrics
    assert by["frozen"] == {"solver": by["frozen"]["solver"]} and by["frozen"]["solver"]["calls"] == 60
    assert p["worst_usd"] == pytest.approx(sum(a["worst_usd"] for a in p["arms"]), abs=1e-3) and p["worst_usd"] > 0
