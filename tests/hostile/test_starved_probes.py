"""A candidate that keeps the generated and drawn probes from judging it.

Each test is the attack in the attacker's words, run on the default sandbox layer:

* **"I burn my CPU budget on the visible examples"** (item 2): a lookup table of the examples that
  spends 0.2 s of CPU per call (the attacker used 0.22 s: under the 0.25 s example budget) uses up the run's CPU budget,
  so vx stops the run before the probes that would show the table is wrong. Probes the candidate prevented
  from running are evidence against it: FAIL alone (``crashes_in_domain``) and beside three correct
  peers (``disagrees_with_peers``; the TRL group reward gives it 0, the peers 1).
* **"``if 0: raise IndexError`` buys my IndexErrors an excuse"** (item 3): a dead ``raise`` made
  ``crashes_in_domain`` count real IndexErrors (``l[3]`` on a short list) as rejected on purpose.
  Now an exception is on purpose only when a ``raise`` statement of the code raised it at run time.
* **"I ``os._exit`` on the first large input"** (item 4): the seed's large probes run first, and
  ``crashes_in_domain`` excused deaths on large inputs while the peer op did not. One policy: an
  attempt that ends its own run is never excused, by either op.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx.integrations.trl import VxReward
from vx.ops.apply import apply_ops
from vx.ops.item import Item
from vx.ops.pool import OpPool
from vx.verifier import Verifier

HUMANEVAL = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


@pytest.fixture(scope="module", autouse=True)
def _sandbox_available():
    from vx.families.code import ops as O
    from vx.sandbox import SandboxUnavailable

    try:
        O.sandbox()
    except SandboxUnavailable as exc:  # pragma: no cover
        pytest.skip(f"no sandbox layer works here: {exc}")


def _example(args: list, expected: bool) -> dict:
    call = f"below({args[0]!r}, {args[1]!r})"
    return {
        "call": call,
        "function": "below",
        "args": args,
        "expected": expected,
        "args_src": repr(tuple(args)),
        "expected_src": repr(expected),
        "source": "doctest",
    }


#: The task of the peer tests (tests/families/code/test_ops_peers.py): "are all numbers in l below t?"
TASK = {
    "id": "T/0",
    "entry_point": "below",
    "prompt": "",
    "examples": [_example([[1, 2, 4, 10], 100], True), _example([[1, 20, 4, 10], 5], False)],
}
RIGHT = "def below(l, t):\n    return all(x < t for x in l)\n"
RIGHT2 = "def below(l, t):\n    for x in l:\n        if x >= t:\n            return False\n    return True\n"


def pool() -> OpPool:
    from vx.families.code.pack import PACK

    return OpPool(PACK.ops, root="parses")


def _verdicts(outputs: list[str], ops: list[str]) -> tuple[dict[str, list[int]], object]:
    items = [Item(f"T/0#{k}", "T/0", o) for k, o in enumerate(outputs)]
    app = apply_ops(pool(), items, {"T/0": TASK}, jobs=1, progress=False, ops=["parses", *ops])
    return {op: app.matrix.column(op).tolist() for op in ops}, app


# --------------------------------------------------------------------------- item 2: starving the probes

BURN = "    import time\n    t0 = time.process_time()\n    while time.process_time() - t0 < {burn}:\n        pass\n"
#: The attacker's candidate for HumanEval/0: the visible examples looked up, every other input False.
TABLE = (
    "    table = {(1.0, 2.0, 3.0, 0.5): False, (1.0, 2.8, 3.0, 4.0, 5.0, 2.0, 0.3): True}\n"
    "    return table.get((*numbers, threshold), False)\n"
)


def _humaneval0() -> dict:
    return json.loads((HUMANEVAL / "tasks.jsonl").read_text(encoding="utf-8").splitlines()[0])


def test_burning_the_run_budget_on_the_examples_does_not_pass_alone_or_beside_correct_peers(tmp_path):
    task = _humaneval0()
    attack = task["prompt"] + BURN.format(burn=0.2) + TABLE
    good = task["reference"]
    group = [good, good.replace("for idx, elem", "for idx,  elem"), good.replace("distance = ", "distance  = "), attack]
    expr = tmp_path / "peers.vx"
    expr.write_text("(any disagrees_with_peers crashes_in_domain fails_visible_example timeout crash)\n")
    reward = VxReward(Verifier.load(expr, HUMANEVAL), name="vx")
    logged: dict = {}
    rewards = reward(
        prompts=["p"] * 4,
        completions=group,
        task_id=["HumanEval/0"] * 4,
        log_extra=lambda col, vals: logged.__setitem__(col, vals),
    )
    assert rewards == [1.0, 1.0, 1.0, 0.0], logged
    assert "disagrees_with_peers" in logged["vx_failed_checks"][3]
    assert reward(prompts=["p"], completions=[attack], task_id=["HumanEval/0"]) == [0.0], "alone it fails too"


def test_the_starving_attempt_is_told_why_and_a_correct_attempt_is_not_accused():
    slow_table = (
        "def below(l, t):\n"
        + BURN.format(burn=0.2)
        + "    return {(1, 2, 4, 10, 100): True, (1, 20, 4, 10, 5): False}.get((*l, t), True)\n"
    )
    cols, app = _verdicts(
        [RIGHT, RIGHT2, RIGHT, RIGHT2, slow_table],
        ["fails_visible_example", "crashes_in_domain", "disagrees_with_peers"],
    )
    assert cols["fails_visible_example"][4] == 0, app.message("T/0#4", "fails_visible_example")
    assert cols["crashes_in_domain"] == [0, 0, 0, 0, 1], [
        app.message(f"T/0#{k}", "crashes_in_domain") for k in range(5)
    ]
    assert "CPU budget" in app.message("T/0#4", "crashes_in_domain")
    assert cols["disagrees_with_peers"] == [0, 0, 0, 0, 1], app.message("T/0#4", "disagrees_with_peers")


def test_a_candidate_that_is_merely_slower_than_vx_floor_is_not_called_a_starver():
    """The rule's other side: time a candidate spends *out of time* at vx's own fixed budgets (a slow
    large input) is not its choice, so stopping the run for it accuses nothing by itself."""
    slow_large = (
        "def below(l, t):\n"
        "    if len(l) > 30:\n"
        "        import time\n"
        "        s = time.process_time()\n"
        "        while time.process_time() - s < 5:\n"
        "            pass\n"
        "    return all(x < t for x in l)\n"
    )
    cols, app = _verdicts([slow_large], ["crashes_in_domain"])
    assert "CPU budget of 1 s" not in app.message("T/0#0", "crashes_in_domain")


# --------------------------------------------------------------------------- item 3: dead code as an excuse

INDEXES = "def below(l, t):\n    return l[3] < t and all(x < t for x in l)\n"  # a real bug on short lists


def test_a_dead_raise_buys_no_excuse_for_real_index_errors():
    dead = INDEXES.replace("def below(l, t):\n", "def below(l, t):\n    if 0:\n        raise IndexError('never')\n")
    never_called = INDEXES + "\n\ndef _unused():\n    raise IndexError\n"
    cols, app = _verdicts([INDEXES, dead, never_called], ["fails_visible_example", "crashes_in_domain"])
    assert cols["fails_visible_example"] == [0, 0, 0], "all three pass the visible examples"
    assert cols["crashes_in_domain"] == [1, 1, 1], [app.message(f"T/0#{k}", "crashes_in_domain") for k in range(3)]
    assert "IndexError" in app.message("T/0#1", "crashes_in_domain")


def test_a_raise_that_runs_is_still_a_deliberate_rejection():
    rejects = (
        "def below(l, t):\n    if len(l) < 4:\n        raise IndexError('at least 4 numbers')\n"
        "    return all(x < t for x in l)\n"
    )
    cols, app = _verdicts([rejects], ["crashes_in_domain"])
    assert cols["crashes_in_domain"] == [0], app.message("T/0#0", "crashes_in_domain")


# --------------------------------------------------------------------------- item 4: exiting on large inputs

EXITS_ON_LARGE = (
    "def below(l, t):\n    if len(l) > 8:\n        import os\n        os._exit(0)\n    return all(x < t for x in l)\n"
)


def test_exiting_on_the_first_large_input_is_flagged_alone_and_by_peers_alike():
    alone, app = _verdicts([EXITS_ON_LARGE], ["fails_visible_example", "crashes_in_domain"])
    assert alone["fails_visible_example"] == [0]
    assert alone["crashes_in_domain"] == [1], app.message("T/0#0", "crashes_in_domain")
    assert "killed its process" in app.message("T/0#0", "crashes_in_domain")
    cols, app = _verdicts([RIGHT, RIGHT2, RIGHT, RIGHT2, EXITS_ON_LARGE], ["disagrees_with_peers", "crashes_in_domain"])
    assert cols["disagrees_with_peers"][4] == 1, app.message("T/0#4", "disagrees_with_peers")
    assert cols["crashes_in_domain"][4] == 1, "the same policy as the peer op"
    assert cols["disagrees_with_peers"][:4] == cols["crashes_in_domain"][:4] == [0, 0, 0, 0]
