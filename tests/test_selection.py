"""Best of n (`vx.selection`, `Verifier.rank` / `Verifier.best`): the four keys, their laws, support from a
family's behaviour clusters, and the errors a person sees."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.verdict import Final
from vx.errors import ArgumentError
from vx.ops.core import observer, op, peer_op
from vx.ops.pool import OpPool
from vx.ops.similarity import Similarity
from vx.selection import (
    VERDICT_ORDER,
    drawback_score,
    evidence_score,
    rank,
    rank_matrix,
    support_sizes,
    tie_key,
)
from vx.verifier import Verifier

# ------------------------------------------------------------------------------------------------ a toy pack


@observer
def answer(task, output, ctx):
    """What the attempt answers: its text, lower-cased and stripped."""
    return {"answer": output.strip().lower()}


@peer_op(observe=answer, tier="static", detects="odd_one_out")
def odd_answer(task, mine, peers, ctx):
    """Fires when no other attempt answers as this one does (a baseline-like peer op)."""
    if not peers:
        return None
    return all(p["answer"] != mine["answer"] for p in peers)


@op(root=True, detects="empty")
def nonempty(task, output, ctx):
    return not output.strip()


@op(detects="missing_keyword")
def missing_keyword(task, output, ctx):
    return task["keyword"] not in output.lower()


@op(detects="shouting")
def shouting(task, output, ctx):
    letters = [c for c in output if c.isalpha()]
    if len(letters) < 3:
        return None  # too short to tell
    return all(c.isupper() for c in letters)


def same_answer(task, observations):
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(observations):
        groups.setdefault(o["answer"], []).append(i)
    return list(groups.values())


def toy_verifier(expr: str = "(any missing_keyword shouting)", similarity: bool = True) -> Verifier:
    pool = OpPool([nonempty, missing_keyword, shouting, odd_answer.as_baseline()], root="nonempty")
    pool.similarity = Similarity("answer", same_answer, "the same answer") if similarity else None
    return Verifier(expr, pool, {"t": {"id": "t", "keyword": "apple"}})


# ------------------------------------------------------------------------------------------------ Verifier.rank


def test_rank_puts_pass_first_then_evidence_then_support_then_a_digest():
    v = toy_verifier()
    outputs = ["an apple", "APPLE PIE", "a pear", "An apple ", "an apple", "ok apple", "ap"]
    ranked = v.rank("t", outputs)
    assert [r.index for r in ranked][:1] in ([0], [3], [4])  # "an apple" behaves like 3 attempts
    by_index = {r.index: r for r in ranked}
    # PASS (an apple x3, ok apple) before FAIL (APPLE PIE shouts; a pear and ap miss the keyword)
    assert {r.index for r in ranked[:4]} == {0, 3, 4, 5}
    assert all(r.verdict is Final.FAIL for r in ranked[4:])
    # among the PASSes, the same evidence: support decides (3 attempts answer "an apple", 1 "ok apple")
    assert by_index[0].placement.support == 3 and by_index[5].placement.support == 1
    assert by_index[5].rank == 4 and "more support (3.00 against 1.00)" in by_index[5].reason
    # "APPLE PIE" and "a pear" fail on one check each, "ap" too ("shouting" cannot tell, which counts for
    # nothing): the digest orders them; with the clean-counting score, "ap" has less evidence than "a pear"
    assert {by_index[1].rank, by_index[2].rank, by_index[6].rank} == {5, 6, 7}
    assert "the tie-break digest" in by_index[6].reason or "the tie-break digest" in by_index[2].reason
    evidence = {r.index: r for r in v.rank("t", outputs, score="evidence")}
    assert evidence[2].rank < evidence[6].rank and "more evidence" in evidence[6].reason
    best = v.best("t", outputs)
    assert best.output.strip().lower() == "an apple" and best.rank == 1 and best.reason.startswith("rank 1 of 7")
    assert best.as_dict()["grade"]["verdict"] == "pass" and best.as_dict()["support"] == 3


def test_the_ranking_does_not_depend_on_the_attempts_order():
    v = toy_verifier()
    outputs = ["an apple", "APPLE PIE", "a pear", "apple!", "an apple", "red apple", "ap", "Apple"]
    chosen = {v.best("t", outputs).output}
    rng = random.Random(0)
    for _ in range(5):
        shuffled = outputs[:]
        rng.shuffle(shuffled)
        order = [r.output for r in v.rank("t", shuffled)]
        assert order == [r.output for r in v.rank("t", outputs)]
        chosen.add(order[0])
    assert chosen == {"an apple"}


def test_support_needs_a_similarity_and_the_observer_is_applied_when_the_expression_has_none():
    v = toy_verifier()
    assert v.ops == ["nonempty", "missing_keyword", "shouting"]
    assert v.ranking_ops() == ["nonempty", "missing_keyword", "shouting", "odd_answer"]
    without = toy_verifier(similarity=False)
    assert without.ranking_ops() == without.ops
    ranked = without.rank("t", ["an apple", "an apple", "ok apple"])
    assert all(r.placement.support == 0 and "support unknown" in r.reason for r in ranked)
    assert all(r.grade.verdict is Final.PASS for r in ranked)


def test_rank_errors_are_for_people():
    v = toy_verifier()
    with pytest.raises(ArgumentError, match="outputs is empty: there is nothing to rank"):
        v.rank("t", [])
    with pytest.raises(ArgumentError, match="a str would be ranked character by character"):
        v.rank("t", "an apple")
    with pytest.raises(ArgumentError, match="unknown task id 'nope'"):
        v.best("nope", ["an apple"])
    with pytest.raises(ArgumentError, match="peers must be a list of outputs"):
        v.rank("t", ["an apple"], peers="x")
    with pytest.raises(ValueError, match="score must be one of evidence, drawbacks, none"):
        v.rank("t", ["an apple"], score="vibes")


# ------------------------------------------------------------------------------------------------ the keys, as laws

finals = st.sampled_from([Final.PASS, Final.ABSTAIN, Final.FAIL])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), finals, st.floats(-1, 1), st.integers(0, 5), st.text(max_size=3)),
        min_size=1,
        max_size=12,
    ),
    st.randoms(use_true_random=False),
)
def test_ranking_laws(rows, rnd):
    """Within a task: ranks are 1..n; a better verdict always ranks first; equal verdicts rank by score, then
    support; the ranking of each output does not depend on the order the attempts come in."""

    def placements(rows):
        ids = [f"i{k}" for k in range(len(rows))]
        supports = {i: (r[3], 5) for i, r in zip(ids, rows)}
        keys = [tie_key(r[0], r[4]) for r in rows]
        return rank(ids, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], supports, keys)

    placed = placements(rows)
    for task in {r[0] for r in rows}:
        mine = [(r, p) for r, p in zip(rows, placed) if r[0] == task]
        assert sorted(p.rank for _, p in mine) == list(range(1, len(mine) + 1))
        for ra, pa in mine:
            for rb, pb in mine:
                if VERDICT_ORDER[ra[1]] < VERDICT_ORDER[rb[1]]:
                    assert pa.rank < pb.rank
                elif ra[1] is rb[1] and ra[2] > rb[2]:
                    assert pa.rank < pb.rank
                elif ra[1] is rb[1] and ra[2] == rb[2] and ra[3] > rb[3]:
                    assert pa.rank < pb.rank
    order = list(range(len(rows)))
    rnd.shuffle(order)
    again = placements([rows[k] for k in order])
    by_content = {(r, p.rank) for r, p in zip(rows, placed)}
    assert {(rows[k], p.rank) for k, p in zip(order, again)} == by_content


def test_evidence_score_counts_clean_checks_against_fired_ones():
    m = VerdictMatrix.from_array(
        np.array([[0, 0, 0], [0, 1, -1], [1, 1, 1], [-1, -1, -1]], dtype=np.int8), ["a", "b", "c", "d"], ["r", "x", "y"]
    )
    assert evidence_score(m, ["r", "x", "y"]).tolist() == [1.0, 0.0, -1.0, 0.0]
    assert evidence_score(m, ["x", "nope"]).tolist() == [1.0, -1.0, -1.0, 0.0]  # ops the matrix lacks are left out
    assert evidence_score(m, []).tolist() == [0.0] * 4
    assert drawback_score(m, ["r", "x", "y"]).tolist() == pytest.approx([0.0, -1 / 3, -1.0, 0.0])


def test_tie_key_is_a_digest_of_task_and_output_not_of_position():
    assert tie_key("t", "x") == tie_key("t", "x") != tie_key("u", "x")
    assert tie_key("t", {"b": 1, "a": 2}) == tie_key("t", {"a": 2, "b": 1})
    assert len(tie_key("t", "\ud800")) == 16  # a lone surrogate does not break it


# ------------------------------------------------------------------------------------------------ support


def test_support_sizes_and_a_similarity_that_loses_an_attempt():
    sim = Similarity("answer", same_answer)
    obs = {"t": {"t#0": {"answer": "x"}, "t#1": {"answer": "y"}, "t#2": {"answer": "x"}}}
    assert support_sizes(obs, sim, {"t": {}}) == {"t#0": (2, 3), "t#1": (1, 3), "t#2": (2, 3)}
    assert support_sizes(obs, None, {"t": {}}) == {}
    assert support_sizes(obs, sim, {}) == {}  # a task the ranking does not know: no support
    lossy = Similarity("answer", lambda task, o: [[0, 1]])
    with pytest.raises(ValueError, match="clusters leave attempt\\(s\\) out"):
        lossy.sizes({}, [1, 2, 3])
    twice = Similarity("answer", lambda task, o: [[0, 1], [1, 2]])
    with pytest.raises(ValueError, match="index 1 in no valid place"):
        twice.sizes({}, [1, 2, 3])


def test_rank_matrix_reads_observations_by_task_and_refuses_a_bad_score():
    m = VerdictMatrix.from_array(np.zeros((3, 1), np.int8), ["t#0", "t#1", "t#2"], ["r"])
    obs = {"answer": {"t": {"t#0": {"answer": "x"}, "t#1": {"answer": "y"}, "t#2": {"answer": "x"}}}}
    placed = rank_matrix(
        m,
        [Final.PASS] * 3,
        tasks_of=["t"] * 3,
        outputs=["x", "y", "x "],
        ops=["r"],
        observations=obs,
        similarity=Similarity("answer", same_answer),
        tasks={"t": {}},
    )
    assert [p.rank for p in placed][1] == 3 and {placed[0].rank, placed[2].rank} == {1, 2}
    with pytest.raises(ValueError, match="score must be one of"):
        rank_matrix(m, [Final.PASS] * 3, tasks_of=["t"] * 3, outputs=["x"] * 3, ops=["r"], score="nope")
    with pytest.raises(ValueError, match="one task, verdict, score and key per item"):
        rank(["a"], ["t", "t"], [Final.PASS], [0.0], {}, ["k"])


# ------------------------------------------------------------------------------------------------ the packs' agreement

answers_st = st.lists(
    st.lists(
        st.sampled_from([("value", 1), ("value", 2), ("value", 0.1), ("value", 0.1 + 1e-9), ("raised", None)]),
        min_size=3,
        max_size=3,
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=100, deadline=None)
@given(answers_st, st.lists(st.booleans(), min_size=8, max_size=8))
def test_the_code_pack_s_soft_support_is_the_cluster_size_when_attempts_agree_all_or_nothing(rows, loaded):
    """Support = 1 + the sum over the other attempts of the share of inputs answered alike (floats within
    the family's tolerance): between 1 and k, the cluster size when every pair agrees on all inputs or on
    none, and equal for attempts that behave identically."""
    from vx.families.code.pack import behaviour_agreement, behaviour_clusters

    obs = [
        {"loaded": loaded[i], "examples_ok": True, "answers": [[k, v, ""] for k, v in r], "example_answers": []}
        for i, r in enumerate(rows)
    ]
    soft = behaviour_agreement({}, obs)
    sizes = {i: len(c) for c in behaviour_clusters({}, obs) for i in c}
    assert all(1.0 <= x <= len(obs) + 1e-9 for x in soft)
    for i in range(len(obs)):
        assert soft[i] >= 1.0 + (sizes[i] - 1) - 1e-9  # an identical attempt counts 1 in full
        for j in range(len(obs)):
            if sizes[i] == sizes[j] and any(i in c and j in c for c in behaviour_clusters({}, obs)):
                assert soft[i] == pytest.approx(soft[j])
    distinct_per_input = all(len({(loaded[i], tuple(r[p])) for i, r in enumerate(rows)}) == 1 for p in range(3))
    if distinct_per_input:
        assert soft == pytest.approx([float(len(obs))] * len(obs))


def test_the_sql_pack_s_soft_support_counts_databases_alike():
    from vx.families.sql.pack import result_agreement

    def obs(*sigs):
        return {"ran": True, "dbs": [[f"db{k}", "ok", s, s, 1, 1, []] for k, s in enumerate(sigs)], "note": ""}

    failed = {"ran": False, "dbs": [["db0", "runtime", "", "", 0, 0, []]], "note": ""}
    soft = result_agreement({}, [obs("a", "b"), obs("a", "c"), obs("a", "b"), failed, failed])
    assert soft == pytest.approx([1 + 0.5 + 1.0, 1 + 0.5 + 0.5, 1 + 0.5 + 1.0, 2.0, 2.0])
