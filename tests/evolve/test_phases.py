"""Each phase of a round as a function of a hand-built state: what it returns, and that the state it was
given is left as it was (`vx.evolve.state`)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from vx.dsl.ast import OpRef
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.evolve import curate, grow, record, select, sense
from vx.evolve.compose import Elite
from vx.evolve.config import EvolutionError, EvolveConfig
from vx.evolve.lifecycle import LifecyclePolicy, OpRecord
from vx.evolve.objective import ObjectiveConfig
from vx.evolve.state import Applied, RunSetup, RunState, canonical_columns, objective
from vx.evolve.store import RunStore
from vx.evolve.synthesize import Cluster
from vx.ops.core import op
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.ops.specs import template


@op(detects="empty", root=True)
def r(task, output, ctx):
    """The root: the output is not empty."""
    return not output


@op(detects="apple")
def a(task, output, ctx):
    return "apple" in output


@op(detects="pear")
def b(task, output, ctx):
    return "pear" in output


@op(detects="long")
def c(task, output, ctx):
    return len(output) > 20


@template("phase_test_has_word", kind="static", params={"word": "str"}, family="phase-test")
def phase_test_has_word(word):
    """Fires when the output holds a word."""

    def fn(task, output, ctx):
        return word in output.split()

    return fn


OUTPUTS = {
    "t0": "apple pear",
    "t1": "fine",
    "t2": "fine plum",
    "t3": "plum apple",
    "t4": "plum here",
    "d0": "apple",
    "d1": "plum",
    "d2": "fine",
    "d3": "pear fine",
}
LABELS = {"d0": 0.0, "d1": 0.0, "d2": 1.0, "d3": 1.0}


def _setup(policy: LifecyclePolicy | None = None) -> RunSetup:
    ids = list(OUTPUTS)
    items = tuple(Item(i, "T", OUTPUTS[i], label=LABELS.get(i)) for i in ids)
    return RunSetup(
        name="phase-test",
        items=items,
        tasks={"T": {"id": "T"}},
        train_mask=np.array([i.startswith("t") for i in ids]),
        dev_p=np.array([LABELS.get(i, np.nan) for i in ids]),
        root="r",
        seed=parse("(any a)"),
        objective_config=ObjectiveConfig.from_mapping({"w": 1.0}),
        policy=policy or LifecyclePolicy(),
        template_families=("phase-test",),
    )


def _apply(setup: RunSetup):
    """A hand-built `Apply`: each op called on each item in this process."""

    def apply(names, pool) -> Applied:
        cols = {
            n: np.array([int(pool[n](setup.tasks[it.task], it.output).verdict) for it in setup.items]) for n in names
        }
        return Applied(VerdictMatrix.from_columns(cols, [it.id for it in setup.items]), {})

    return apply


def _state(setup: RunSetup, incumbent: str = "(any a)", **fields: Any) -> RunState:
    pool = OpPool([r, a, b, c], root="r")
    records = {o.name: OpRecord(o.name, "active", "seed", 0) for o in pool}
    matrix = _apply(setup)(pool.names, pool).matrix.select_ops(canonical_columns(pool, "r"))
    return RunState(pool, matrix, records, parse(incumbent), **fields)


def test_sense_finds_the_dev_failures_the_incumbent_passes():
    setup = _setup()
    state = _state(setup)
    sensed = sense.sense(state, setup, objective(setup, state))
    ids = [it.id for it in setup.items]
    assert [ids[i] for i in np.flatnonzero(sensed.misses)] == ["d1"]  # "plum": (any a) passes it
    assert not sensed.gaps[~setup.train_mask].any()  # gaps are train items only


def test_cluster_groups_misses_and_gaps_by_the_ops_that_fire_and_keeps_recurring_ones():
    setup = _setup()
    state = _state(setup)
    sensed = sense.Sensed(
        np.zeros(len(setup.items), np.int8),
        np.array([False] * 5 + [False, True, False, False]),
        np.array([False, False, True, False, True] + [False] * 4),
    )
    clusters = sense.cluster(state, setup, sensed, EvolveConfig(min_cluster=2))
    assert [(cl.failure_class, cl.items, cl.anchored) for cl in clusters] == [("sig:none", ("d1", "t2", "t4"), True)]


def test_select_replaces_the_incumbent_by_a_better_candidate_and_leaves_its_input_alone():
    setup = _setup()
    state = _state(setup, incumbent="(any c)")

    class Proposes:
        name = "fixed"

        def propose(self, ctx):
            return ["(any a b)", "(any a)"]

    obj = objective(setup, state)
    chosen, after = select.select(
        state,
        setup,
        1,
        np.random.default_rng(0),
        obj,
        np.zeros(9, bool),
        [],
        composers=[Proposes()],
        config=EvolveConfig(),
    )
    assert chosen.replaced and chosen.gain > 0
    assert (
        after.incumbent == chosen.nodes[int(np.argmax(np.where(chosen.scores.selectable, chosen.scores.objective, -1)))]
    )
    assert state.incumbent == parse("(any c)") and state.elites == ()  # the input is unchanged
    assert after.elites and after.elites[0].node == after.incumbent
    assert chosen.top[0]["expression"] == str(after.incumbent)


def test_curate_retires_an_op_that_fires_on_a_dev_pass_past_its_grace():
    setup = _setup(LifecyclePolicy(grace=1))
    state = _state(setup, incumbent="(any a b)")
    state = attrs.evolve(state, records={**state.records, "b": OpRecord("b", "active", "seed", 0, streak=1)})
    events, after = curate.curate(state, setup, 3, objective(setup, state))
    assert [(e.op, e.kind) for e in events] == [("b", "retired")]
    assert "fires on 1 dev item(s) labelled pass (d3)" in events[0].reason
    assert after.records["b"].status == "retired" and after.pool["b"].status == "retired"
    assert after.incumbent == OpRef("a")
    # the state it was given is as it was
    assert state.records["b"].status == "active" and state.records["b"].streak == 1
    assert state.pool["b"].status == "active" and state.incumbent == parse("(any a b)")


def test_grow_admits_a_synthesized_op_through_the_birth_gate():
    setup = _setup(LifecyclePolicy(min_support=1))
    state = _state(setup)
    spec = {"kind": "static", "check": "phase_test_has_word", "params": {"word": "plum"}, "detects": "plum"}

    class Synth:
        name = "hand"

        def propose(self, request):
            return [{**spec, "name": "has_plum"}, {**spec, "name": "also_plum"}]

    items = ("t2", "t4", "d1")
    cl = Cluster("plum", items, tuple(({"id": "T"}, OUTPUTS[i]) for i in items), anchored=True, n_misses=1)
    obj = objective(setup, state)
    gaps = np.array([it.id in ("t2", "t4") for it in setup.items])  # the cluster's train items are gaps
    sensed = attrs.evolve(sense.sense(state, setup, obj), gaps=gaps)
    said: list[str] = []
    growth, after = grow.grow(
        state, setup, 1, obj, [cl], sensed, synthesizers=[Synth()], apply=_apply(setup), say=said.append
    )
    assert (growth.born, growth.rejected) == (1, 1)  # the second is the first again (redundant)
    assert [(e.op, e.kind) for e in growth.events] == [("has_plum", "born"), ("also_plum", "rejected")]
    assert growth.events[1].reason.startswith("duplicate of has_plum")
    assert "has_plum" in after.pool and after.records["has_plum"].origin == "synthesized"
    assert after.specs["has_plum"]["params"] == {"word": "plum"}
    assert after.tried == {"has_plum", "also_plum"}
    assert after.matrix.op_names == ("r", "a", "b", "c", "has_plum")
    assert said == ["round 1: applying 2 synthesized op(s)"]
    assert "has_plum" not in state.pool and state.tried == frozenset() and "has_plum" not in state.matrix.op_names


def test_commit_writes_the_round_and_holds_the_incumbent(tmp_path):
    setup = _setup()
    state = _state(setup, elites=(Elite(parse("(any a)"), 0.5),))
    obj = objective(setup, state)
    rows: list[dict] = []
    with RunStore(tmp_path / "p.vxrun.sqlite", create=True) as store:
        store.set_meta({"format": 1, "family": "phase-test"})
        done = record.Round(0, obj.score_one(state.incumbent), candidates=1)
        after = record.commit(state, done, store=store, on_round=rows.append)
        assert [r["round"] for r in store.rounds()] == [0]
        assert store.last_state()[1]["incumbent"] == "(any a)"
    assert after.held == ({"expression": "(any a)", "round": 0},) and state.held == ()
    assert rows[0]["incumbent"] == "(any a)" and rows[0]["pool_size"] == 4


def test_an_unlabelled_dev_item_is_refused_with_its_file_and_id(tmp_path):
    from vx.evolve.loop import run_setup

    class Split:
        def __init__(self, items, path):
            self.items, self.path = items, path

        def __len__(self):
            return len(self.items)

    class View:
        name = "phase-test"
        tasks = {"T": {"id": "T"}}
        train = Split([Item("t0", "T", "x")], "train.jsonl")
        dev = Split([Item("d0", "T", "y", label=1.0), Item("d1", "T", "z")], "fam/dev.jsonl")
        objective: dict[str, float] = {}

    with pytest.raises(EvolutionError, match=r"fam/dev.jsonl: dev item 'd1' has no label"):
        run_setup(View(), parse("(any a)"), OpPool([r, a], root="r"), EvolveConfig())  # type: ignore[arg-type]


def test_a_new_run_needs_a_family():
    from vx.evolve.run import evolve_family

    with pytest.raises(EvolutionError, match="name the family to evolve"):
        evolve_family(None)  # type: ignore[arg-type]
