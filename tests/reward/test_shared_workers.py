"""Worker processes shared by concurrent applications: concurrent groups are graded on the same workers with
the verdicts a lone grading gives; a call's deadline answers on time, what was not graded abstaining with the
reason and the worker running it replaced; an op that will not stop is killed and the item's other ops go on."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from vx.ops.core import op
from vx.ops.item import Item
from vx.ops.shared import DEADLINE, SharedWorkers
from vx.reward.grader import GroupGrader
from vx.verifier import Verifier

ROOT = Path(__file__).resolve().parents[2]
HUMANEVAL = ROOT / "examples" / "humaneval"


def _task(i: int = 0) -> dict:
    return json.loads((HUMANEVAL / "tasks.jsonl").read_text().splitlines()[i])


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(HUMANEVAL / "seed.vx")


def test_concurrent_groups_share_the_workers_and_get_a_lone_grading_s_verdicts(verifier):
    tasks = [_task(i) for i in range(6)]
    groups = [(t["id"], [t["reference"], t["prompt"] + "    return None\n", t["reference"]]) for t in tasks]
    alone = {tid: [g.verdict.value for g in verifier.grade_many(tid, outs)] for tid, outs in groups}
    found: dict[str, list[str]] = {}
    with GroupGrader(verifier, workers=2, deadline=None) as grader:
        threads = [
            threading.Thread(
                target=lambda tid=tid, outs=outs: found.__setitem__(
                    tid, [g.verdict for g in grader.grade_group(tid, outs).graded]
                )
            )
            for tid, outs in groups
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        again = grader.grade_group(groups[0][0], groups[0][1])  # the same group: from the verdict cache
        assert grader.pool.restarts == 0
    assert found == alone
    assert again.calls == 0 and again.cache_hits > 0
    assert grader.stats.groups == 7 and grader.stats.completions == 21


def test_a_deadline_answers_on_time_and_the_worker_is_replaced(verifier):
    t = _task()
    loops = t["prompt"] + "    while True:\n        pass\n"
    with GroupGrader(verifier, workers=1) as grader:
        grader.grade_group(t["id"], [t["reference"]])  # its verdicts are cached
        result = grader.grade_group(t["id"], [t["reference"], loops], deadline=0.05)
        assert [g.verdict for g in result.graded] == ["pass", "abstain"]
        assert [g.reason for g in result.graded] == [None, DEADLINE]
        assert "not graded within the request's deadline (0.05 s)" in str(result.graded[1].grade.as_dict())
        deadline = time.monotonic() + 120
        while grader.pool.restarts == 0 and time.monotonic() < deadline:  # the worker running the loop is killed
            time.sleep(0.05)
        assert grader.pool.restarts == 1
        later = grader.grade_group(t["id"], [loops + "\n"], deadline=None)  # the replaced worker grades the next
        assert [g.verdict for g in later.graded] == ["fail"]
        assert grader.stats.abstentions[DEADLINE] == 1


@op(tier="static", detects="never", description="sleeps past its limit, ignoring the alarm", timeout=0.2)
def _stubborn(task, output, ctx):
    import signal

    signal.signal(signal.SIGALRM, signal.SIG_IGN)
    time.sleep(60)
    return False


@op(tier="static", detects="x", description="fires on 'x'")
def _says_x(task, output, ctx):
    return output == "x"


def test_an_op_that_will_not_stop_is_killed_and_the_item_s_other_ops_go_on():
    items = [Item(id="a", task="t", output="x")]
    got: dict[int, dict] = {}
    with SharedWorkers(1) as workers:
        workers.run(
            [(items[0], [0, 1])], [_stubborn, _says_x], {"t": {"id": "t"}}, 0.2, lambda j, r: got.update({j: r})
        )
        assert workers.restarts == 1
    outcomes = got[0]
    assert outcomes[0].kind == "timeout" and "its worker was killed" in outcomes[0].error
    assert outcomes[1].verdict == 1  # the other op ran in the new worker


def test_workers_are_replaced_after_so_many_jobs_and_nothing_is_lost(verifier):
    t = _task()
    items = [Item(id=f"a{k}", task=t["id"], output=t["reference"] + "\n" * k) for k in range(7)]
    got: dict[int, dict] = {}
    ops = [verifier.pool[n] for n in verifier.ops]
    with SharedWorkers(2, recycle_after=2) as workers:
        workers.run([(it, list(range(len(ops)))) for it in items], ops, {t["id"]: t}, 10.0, got.__setitem__)
        assert workers.recycled >= 2 and workers.restarts == 0
    assert sorted(got) == list(range(7)) and all(len(r) == len(ops) for r in got.values())


def test_workers_outlive_the_short_lived_thread_that_first_used_the_pool():
    """The attack: a trainer's adapter grades each batch from a fresh thread (asyncio.run + to_thread, anyio's
    pruned worker threads). PR_SET_PDEATHSIG follows the thread that forked a worker, so workers forked by that
    thread were killed when it ended and the next group's completions abstained ("died"): reward 0."""
    tools = Verifier.load(ROOT / "examples" / "tools" / "seed.vx")
    task = next(iter(tools.tasks))
    outputs = ["[]", "None of the functions fits."]
    with GroupGrader(tools, workers=1, deadline=None, start=False, cache_entries=0) as grader:
        first: list = []
        thread = threading.Thread(target=lambda: first.append(grader.grade_group(task, outputs)))
        thread.start()
        thread.join()
        time.sleep(0.2)  # the kernel's SIGKILL, were the workers tied to the ended thread, is delivered by now
        again = grader.grade_group(task, outputs)
        assert grader.pool.restarts == 0
    assert [g.reason for g in again.graded] == [g.reason for g in first[0].graded]
    assert "died" not in [g.reason for g in again.graded]
    assert [g.verdict for g in again.graded] == [g.verdict for g in first[0].graded]
