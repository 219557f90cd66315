"""The multi-turn ops on small hand-made tasks: each fires where its failure is, stays clean on a correct
trajectory, abstains where it cannot tell; the peer ops and the evaluator-first state checks judge a
batch of attempts; a missing backend is a drawback with a message, never a pass."""

from __future__ import annotations

import json

import pytest

from vx.dsl.verdict import Verdict
from vx.families.pack import load_pack
from vx.families.tools import backends
from vx.families.tools.ops import checks, executed, states, turns
from vx.ops.core import Context

from .multi_task import c, task

pytestmark = pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed")


def verdict(op, t, output) -> tuple[Verdict, str]:
    r = op(t, output, Context())
    return r.verdict, r.message


T2 = task("Move log.txt into archive.", "Show me what is in archive.")


def test_the_root_reads_a_trajectory_per_user_turn():
    assert verdict(turns.reads_trajectory, T2, [[c("mv", source="log.txt", destination="archive")], [c("ls")]])[0] == 0
    v, msg = verdict(turns.reads_trajectory, T2, "Error during inference: 500")
    assert v == Verdict.DRAWBACK and "not a trajectory" in msg
    v, msg = verdict(turns.reads_trajectory, T2, [[c("ls")]])
    assert v == Verdict.DRAWBACK and "1 turn(s) for 2 user turn(s)" in msg


def test_silent_turn_fires_on_a_request_with_no_call():
    v, msg = verdict(executed.silent_turn, T2, [[c("mv", source="log.txt", destination="archive")], []])
    assert v == Verdict.DRAWBACK and "turn 2" in msg and "Show me" in msg
    assert verdict(executed.silent_turn, T2, [[c("mv", source="log.txt", destination="archive")], [c("ls")]])[0] == 0


def test_silent_turn_abstains_where_the_agent_may_have_asked():
    t = task("Copy log.txt into a folder.", "The folder is 'archive'.")
    v, msg = verdict(executed.silent_turn, t, [[], [c("cp", source="log.txt", destination="archive")]])
    assert v == Verdict.ABSTAIN and "may have asked" in msg


def test_silent_turn_accepts_silence_before_a_held_out_function_comes_back():
    t = task("Move log.txt into archive.", "", held_out={"1": ["mv"]})
    assert verdict(executed.silent_turn, t, [[], [c("mv", source="log.txt", destination="archive")]])[0] == 0


def test_unhandled_error_fires_when_a_failed_call_is_never_made_to_work():
    out = [[[{"mv<|channel|>commentary": json.dumps({"source": "log.txt", "destination": "archive"})}]], [c("ls")]]
    v, msg = verdict(executed.unhandled_error, T2, out)
    assert v == Verdict.DRAWBACK and "was not run" in msg
    out[0].append(c("mv", source="log.txt", destination="archive"))
    assert verdict(executed.unhandled_error, T2, out)[0] == 0


def test_unoffered_call_fires_on_a_held_out_function_called_early():
    t = task("Move log.txt into archive.", "", held_out={"1": ["mv"]})
    v, msg = verdict(executed.unoffered_call, t, [[c("mv", source="log.txt", destination="archive")], []])
    assert v == Verdict.DRAWBACK and "not offered yet (offered from turn 2)" in msg
    assert verdict(executed.unoffered_call, t, [[], [c("mv", source="log.txt", destination="archive")]])[0] == 0


def test_guessed_value_fires_when_the_agent_redoes_a_guess_with_the_users_value():
    t = task("Copy log.txt into a new folder.", "The folder name is 'backup'.")
    out = [
        [c("mkdir", dir_name="copies"), c("cp", source="log.txt", destination="copies")],
        [c("mkdir", dir_name="backup"), c("cp", source="log.txt", destination="backup")],
    ]
    v, msg = verdict(executed.guessed_value, t, out)
    assert v == Verdict.DRAWBACK and '"copies"' in msg and '"backup"' in msg
    assert verdict(executed.guessed_value, t, [[], out[1]])[0] == 0


GOOD = [[c("mv", source="log.txt", destination="archive")], [c("cd", folder="archive"), c("ls")]]
NOT_MOVED = [[c("cp", source="log.txt", destination="archive")], [c("cd", folder="archive"), c("ls")]]
NOT_SHOWN = [[c("mv", source="log.txt", destination="archive")], [c("cd", folder="archive")]]


def observe(t, output):
    return states.outcomes(t, output, Context())


def judge(op, t, mine, others):
    return op.judge(t, observe(t, mine), [observe(t, o) for o in others], Context())


def test_state_peer_op_fires_on_a_state_the_plurality_does_not_reach():
    r = judge(states.state_disagrees_with_peers, T2, NOT_MOVED, [GOOD, GOOD, GOOD])
    assert r.verdict == Verdict.DRAWBACK and "after turn 1" in r.message
    assert judge(states.state_disagrees_with_peers, T2, GOOD, [GOOD, GOOD, NOT_MOVED]).verdict == 0


def test_missing_shown_result_names_what_the_others_were_shown():
    r = judge(states.missing_shown_result, T2, NOT_SHOWN, [GOOD, GOOD, GOOD])
    assert r.verdict == Verdict.DRAWBACK and "log.txt" in r.message
    assert judge(states.missing_shown_result, T2, GOOD, [GOOD, GOOD, NOT_SHOWN]).verdict == 0


def test_missing_shown_result_accepts_the_same_call_answered_from_another_state():
    # the others' `ls` lists one file, this attempt's the same `ls` two: it was shown what it asked for, and
    # BFCL judges the differing state by the state checks, not by a missing result
    extra = [
        [c("mv", source="log.txt", destination="archive")],
        [c("cd", folder="archive"), c("touch", file_name="n.txt"), c("ls")],
    ]
    assert judge(states.missing_shown_result, T2, extra, [GOOD, GOOD, GOOD]).verdict == Verdict.CLEAN


T_LOG = task("Move log.txt into archive.", "Show me the log in archive.")
LOOKED_UP = [
    [c("mv", source="log.txt", destination="archive")],
    [c("cd", folder="archive"), c("ls"), c("cat", file_name="log.txt")],
]
STRAIGHT = [
    [c("mv", source="log.txt", destination="archive")],
    [c("cd", folder="archive"), c("cat", file_name="log.txt")],
]


def test_missing_shown_result_accepts_skipping_a_lookup_whose_value_the_attempt_already_used():
    # the others list the folder to find the file they then read; this attempt reads it straight away
    assert judge(states.missing_shown_result, T_LOG, STRAIGHT, [LOOKED_UP] * 3).verdict == Verdict.CLEAN
    # a result the user asked to see is no lookup: never reading the file is still a drawback
    r = judge(states.missing_shown_result, T_LOG, NOT_SHOWN, [LOOKED_UP] * 3)
    assert r.verdict == Verdict.DRAWBACK and "cat" in r.message


def test_missing_shown_result_lets_an_attempt_that_asked_show_it_after_the_answer():
    asked = task("Move the log file into archive, then list archive.", "It is log.txt.")
    guessed = [[c("mv", source="log.txt", destination="archive"), c("cd", folder="archive"), c("ls")], []]
    waited = [[], [c("mv", source="log.txt", destination="archive"), c("cd", folder="archive"), c("ls")]]
    assert judge(states.missing_shown_result, asked, waited, [guessed] * 3).verdict == Verdict.CLEAN
    late = task(
        "Move the log file into archive, then list archive.", "Thanks. Now tell me what else you can do in folders?"
    )
    assert judge(states.missing_shown_result, late, [[], []], [guessed] * 3).verdict == Verdict.DRAWBACK


def test_a_peer_op_graded_alone_abstains():
    assert states.state_disagrees_with_peers(T2, GOOD, Context()).verdict == Verdict.ABSTAIN


def test_state_checks_are_induced_from_the_peers_and_show_their_challenges():
    op = load_pack("tools-multi").pool()["fails_state_checks"]
    r = judge(op, T2, NOT_MOVED, [GOOD, GOOD, GOOD])
    assert r.verdict == Verdict.DRAWBACK
    assert "fails the check" in r.message and "accepts 3 pseudo-positive state(s); rejects" in r.message
    r = judge(op, T2, GOOD, [GOOD, GOOD, NOT_MOVED])
    assert r.verdict == Verdict.CLEAN and "rejects 1 of 1 weak state(s)" in r.message


def test_state_checks_abstain_without_a_consensus():
    op = load_pack("tools-multi").pool()["fails_state_checks"]
    assert judge(op, T2, GOOD, [NOT_MOVED]).verdict == Verdict.ABSTAIN


def test_state_checks_make_no_check_of_a_tie():
    # half the other attempts moved the file, half copied it: no consensus says it must be gone from alex/
    op = load_pack("tools-multi").pool()["fails_state_checks"]
    assert judge(op, T2, NOT_MOVED, [GOOD, GOOD, NOT_MOVED, NOT_MOVED]).verdict != Verdict.DRAWBACK
    assert judge(op, T2, NOT_MOVED, [GOOD, GOOD, GOOD, NOT_MOVED]).verdict == Verdict.DRAWBACK


def test_state_checks_make_no_check_of_a_leaf_only_a_weak_attempt_changed():
    # two attempts also create a file named by a word of the task ("what"); the others leave it: a leaf only
    # the weaker side changed makes no "left as it was" check (that side may be the one that did what was asked)
    wrote = [
        [c("mv", source="log.txt", destination="archive"), c("touch", file_name="what")],
        [c("cd", folder="archive"), c("ls")],
    ]
    op = load_pack("tools-multi").pool()["fails_state_checks"]
    assert judge(op, T2, wrote, [GOOD, GOOD, GOOD, wrote]).verdict != Verdict.DRAWBACK


def test_a_check_that_survives_a_counterfactual_mutation_is_not_trusted():
    vacuous = checks.Check("contains", "GorillaFileSystem/root/contents/alex/contents/x/content", "")
    survivors = [name for name, changed in vacuous.mutations(checks.CHALLENGES) if vacuous.holds(changed)]
    assert survivors  # an empty phrase is in every text: the suite exposes it


def test_missing_backends_are_a_drawback_with_a_message(monkeypatch):
    monkeypatch.setattr(backends, "_package_dir", lambda: None)
    v, msg = verdict(executed.silent_turn, T2, GOOD)
    assert v == Verdict.DRAWBACK and "pip install --no-deps bfcl-eval" in msg
    r = judge(states.state_disagrees_with_peers, T2, GOOD, [GOOD, GOOD])
    assert r.verdict == Verdict.DRAWBACK and "bfcl-eval" in r.message


def test_the_pack_loads_with_its_gate_and_agreement_ops():
    pack = load_pack("tools-multi")
    names = [o.name for o in pack.ops]
    assert pack.root == "reads_trajectory" and names[0] == "reads_trajectory"
    assert pack.gate in names and pack.agreement in names
    assert {"states_disagree_with_peers", "results_missing_vs_peers", "end_state_checks"} <= {
        t.check for t in __import__("vx.ops.specs", fromlist=["templates_for"]).templates_for("tools-multi")
    }


def test_states_equal_by_bfcls_comparison_share_a_digest():
    # two files made in either order: the directory's dict differs in key order only, which == ignores
    ab = [[c("touch", file_name="a.txt"), c("touch", file_name="b.txt")], [c("ls")]]
    ba = [[c("touch", file_name="b.txt"), c("touch", file_name="a.txt")], [c("ls")]]
    assert observe(T2, ab)["turns"][0]["state"] == observe(T2, ba)["turns"][0]["state"]
    assert states.canonical({"b": 2940.0, "a": [1.0, 2.5]}) == states.canonical({"a": [1, 2.5], "b": 2940})
