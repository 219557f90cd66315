"""No evasion: an attempt that answers what the seed ops look at and then dies, exits, hangs,
kills its process group or closes stdout on the other probes is flagged, never abstained on -- with
peers (``disagrees_with_peers``) and alone (``crashes_in_domain``). Every test is the attack, run on
the default sandbox layer."""

from __future__ import annotations

import pytest

from vx.ops.apply import apply_ops
from vx.ops.item import Item

from .test_ops_peers import RIGHT, RIGHT2, TASK, _sandbox_available, pool  # noqa: F401 (autouse: skip without a sandbox)

#: Correct on the visible examples and on everything of their length (the seed exec ops' in-domain
#: probes: the examples, their repeats and re-orderings); the evasion everywhere else.
ATTACK = "def below(l, t):\n    if len(l) == 4:\n        return all(x < t for x in l)\n    {evasion}\n"
EVASIONS = {
    "os._exit": "import os; os._exit(0)",
    "sys.exit": "import sys; sys.exit()",
    "endless loop": "while True: pass",
    "swallowed interrupts": (
        "while True:\n        try:\n            while True: pass\n        except BaseException:\n            pass"
    ),
    "kills its process group": "import os, signal; os.killpg(0, signal.SIGKILL)",
    "closes stdout": "import os; os.close(1); return True",
    "wrong value": "return 17",
}


def _verdicts(outputs: list[str], ops: list[str]) -> tuple[dict[str, list[int]], object]:
    items = [Item(f"T/0#{k}", "T/0", o) for k, o in enumerate(outputs)]
    app = apply_ops(pool(), items, {"T/0": TASK}, jobs=1, progress=False, ops=["parses", *ops])
    return {op: app.matrix.column(op).tolist() for op in ops}, app


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_an_evading_attempt_is_flagged_by_its_peers(name):
    bad = ATTACK.replace("{evasion}", EVASIONS[name])
    cols, app = _verdicts([RIGHT, RIGHT2, RIGHT, RIGHT2, bad], ["fails_visible_example", "disagrees_with_peers"])
    assert cols["fails_visible_example"][4] == 0, "the attack passes its visible examples"
    assert cols["disagrees_with_peers"][4] == 1, (name, app.message("T/0#4", "disagrees_with_peers"))
    assert cols["disagrees_with_peers"][:4] == [0, 0, 0, 0]


#: The sandbox keeps the candidate from killing its own process group (os.killpg returns and the call
#: goes on to return None): alone, that attack is a wrong value, for the peers or the invariants.
SURVIVED = {"wrong value", "kills its process group"}


@pytest.mark.parametrize("name", sorted(set(EVASIONS) - SURVIVED))
def test_an_evading_attempt_is_flagged_alone(name):
    """One attempt per task: no peer to compare with, the examples pass -- and still a drawback."""
    bad = ATTACK.replace("{evasion}", EVASIONS[name])
    cols, app = _verdicts([bad], ["fails_visible_example", "crashes_in_domain", "disagrees_with_peers"])
    assert cols["fails_visible_example"] == [0]
    assert cols["disagrees_with_peers"] == [-1], "graded alone, the peer op abstains"
    assert cols["crashes_in_domain"] == [1], (name, app.message("T/0#0", "crashes_in_domain"))
    assert "below(" in app.message("T/0#0", "crashes_in_domain"), "the input is named"


#: The endless loop again, after spending CPU on every visible example call (its repeats and re-orderings
#: too): its own pace raises the budgets of the seed probes outside the domain (OWN_FACTOR x that CPU), on
#: each of which it runs out of time. Before the seed pool (budgets.SEED_CPU) those timeouts spent the run's
#: whole budget before any generated probe, and both ops abstained; 2 ms is what a loaded machine's CPU
#: accounting gave the plain endless loop by chance (a CI failure), 60 ms stays below the share of its
#: own CPU that makes a run starved (run.STARVE_SHARE: 6 calls x 60 ms < 0.5 s).
SLOW_ATTACK = (
    "import time\n"
    "def below(l, t):\n"
    "    if len(l) == 4:\n"
    "        end = time.process_time() + {spin}\n"
    "        while time.process_time() < end:\n"
    "            pass\n"
    "        return all(x < t for x in l)\n"
    "    while True:\n"
    "        pass\n"
)


@pytest.mark.parametrize("spin", [0.002, 0.06])
def test_an_endless_loop_slow_on_its_examples_still_meets_the_generated_probes(spin):
    bad = SLOW_ATTACK.format(spin=spin)
    cols, app = _verdicts([RIGHT, RIGHT2, RIGHT, RIGHT2, bad], ["fails_visible_example", "disagrees_with_peers"])
    assert cols["fails_visible_example"][4] == 0, "the attack passes its visible examples"
    assert cols["disagrees_with_peers"] == [0, 0, 0, 0, 1], app.message("T/0#4", "disagrees_with_peers")
    cols, app = _verdicts([bad], ["crashes_in_domain"])
    assert cols["crashes_in_domain"] == [1], app.message("T/0#0", "crashes_in_domain")


def test_correct_attempts_are_clean_and_deliberate_rejections_do_not_count():
    rejects = (
        "def below(l, t):\n    if len(l) > 4:\n        raise ValueError('at most 4 numbers')\n"
        "    return all(x < t for x in l)\n"
    )
    indexes = "def below(l, t):\n    return l[3] < t and all(x < t for x in l)\n"  # a real bug: short lists
    cols, app = _verdicts([RIGHT, RIGHT2, rejects, indexes], ["crashes_in_domain"])
    assert cols["crashes_in_domain"][:3] == [0, 0, 0], [app.message(f"T/0#{k}", "crashes_in_domain") for k in range(3)]
    assert cols["crashes_in_domain"][3] == 1 and "IndexError" in app.message("T/0#3", "crashes_in_domain")
