"""The tools packs' behaviour clusters: which answers (single-turn) and which trajectories (multi-turn) at one
task behave alike, the support a ranking counts (`vx.selection`)."""

from __future__ import annotations

import pytest

from vx.dsl.verdict import Final
from vx.families.pack import load_pack
from vx.families.tools import backends
from vx.families.tools.ops import states
from vx.families.tools.ops.peers import answer_form
from vx.families.tools.pack import answer_clusters, state_clusters
from vx.ops.core import Context
from vx.verifier import Verifier

from .multi_task import c, task

TASK = {
    "id": "t",
    "question": "What is the weather in Paris, France in celsius?",
    "functions": [
        {
            "name": "weather.get",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "description": "The unit.", "default": "celsius"},
                },
                "required": ["city"],
            },
        }
    ],
}
PARIS = "[weather.get(city='Paris')]"
#: the same answer spelled otherwise: the documented default written out, another case
PARIS_AGAIN = "[weather.get(city='paris', unit='celsius')]"
LONDON = "[weather.get(city='London')]"
FAHRENHEIT = "[weather.get(city='Paris', unit='fahrenheit')]"


def clusters_of(outputs: list[str]) -> list[set[int]]:
    obs = [answer_form(TASK, o, Context()) for o in outputs]
    return sorted((set(c) for c in answer_clusters(TASK, obs)), key=min)


def test_two_spellings_of_one_answer_cluster_and_another_value_does_not():
    assert clusters_of([PARIS, PARIS_AGAIN, LONDON, FAHRENHEIT]) == [{0, 1}, {2}, {3}]


def test_answers_that_cannot_be_read_cluster_together_apart_from_calls_and_from_declining():
    unreadable = ["[weather.get(city='Paris'", '[{"weather.get": ']
    declines = ["I cannot tell the weather.", "No function fits."]
    assert clusters_of([unreadable[0], PARIS, declines[0], unreadable[1], declines[1]]) == [{0, 3}, {1}, {2, 4}]
    # an observation that is not a mapping (an observer that failed) is an unreadable answer
    assert [set(c) for c in answer_clusters(TASK, [None, "junk", answer_form(TASK, PARIS, Context())])] == [
        {0, 1},
        {2},
    ]


def test_the_single_turn_pack_ranks_the_larger_cluster_first():
    pool = load_pack("tools").pool()
    assert pool.similarity is not None and pool.similarity.observer == "answer_form"
    v = Verifier("(any unknown_function missing_required)", pool, {"t": TASK})
    assert v.ranking_ops()[-1] in {o.name for o in pool if o.observer is not None}
    ranked = v.rank("t", [LONDON, PARIS, FAHRENHEIT, PARIS_AGAIN])
    assert all(r.grade.verdict is Final.PASS for r in ranked)
    assert {r.index for r in ranked[:2]} == {1, 3} and ranked[0].placement.support == 2
    assert ranked[2].placement.support == 1 and "more support (2.00 against 1.00)" in ranked[2].reason


# --------------------------------------------------------------------------------------------- multi-turn

T2 = task("Make a.txt and b.txt.", "Show me what is here.")
AB = [[c("touch", file_name="a.txt"), c("touch", file_name="b.txt")], [c("ls")]]
#: the same end state reached in another order (BFCL's equality ignores the directory's key order)
BA = [[c("touch", file_name="b.txt"), c("touch", file_name="a.txt")], [c("ls")]]
ONLY_A = [[c("touch", file_name="a.txt")], [c("ls")]]
#: the same states as AB, reached with other calls in the second turn (states, not calls, decide)
AB_CAT = [[c("touch", file_name="a.txt"), c("touch", file_name="b.txt")], [c("cat", file_name="a.txt")]]


def multi_clusters(t: dict, outputs: list) -> list[set[int]]:
    obs = [states.outcomes(t, o, Context()) for o in outputs]
    return sorted((set(c) for c in state_clusters(t, obs)), key=min)


needs_backends = pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed")


@needs_backends
def test_trajectories_reaching_the_same_states_cluster_and_another_state_does_not():
    assert multi_clusters(T2, [AB, ONLY_A, BA, AB_CAT]) == [{0, 2, 3}, {1}]


@needs_backends
def test_a_state_differing_after_an_earlier_turn_only_is_another_cluster():
    # the same end state; after turn 1 one of them has made only a.txt
    t = task("Make a.txt.", "Now make b.txt.")
    step = [[c("touch", file_name="a.txt")], [c("touch", file_name="b.txt")]]
    late = [[], [c("touch", file_name="a.txt"), c("touch", file_name="b.txt")]]
    assert multi_clusters(t, [step, late, step]) == [{0, 2}, {1}]


def test_the_turn_before_a_held_out_function_comes_back_is_not_compared():
    # turn 1 asks for what no offered function does until turn 2: BFCL compares no state after it
    first = {"ok": True, "turns": [{"state": "tried"}, {"state": "end"}]}
    second = {"ok": True, "turns": [{"state": "waited"}, {"state": "end"}]}
    held = task("Copy log.txt into archive.", "", held_out={"1": ["cp"]})
    assert [set(c) for c in state_clusters(held, [first, second])] == [{0, 1}]
    assert [set(c) for c in state_clusters(T2, [first, second])] == [{0}, {1}]


def test_trajectories_not_replayed_cluster_together():
    obs = [{"ok": False, "note": "no trajectory"}, None, {"ok": True, "turns": [{"state": "abc"}]}]
    assert sorted((set(c) for c in state_clusters(T2, obs)), key=min) == [{0, 1}, {2}]
    assert load_pack("tools-multi").similarity.observer == "outcomes"
