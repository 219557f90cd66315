"""Replaying multi-turn trajectories on BFCL's backends: semantics, bounds, and attacks written as attacks.

No call string is ever evaluated: a name outside the involved classes' public methods is refused with a
message, a backend method given a hostile value is stopped by its CPU budget (or its wall-clock backstop),
and the replay says so."""

from __future__ import annotations

import json
import os

import pytest

from vx.errors import MissingDependency
from vx.families.tools import backends
from vx.families.tools import replay as rp
from vx.families.tools.trajectory import MAX_ARG_CHARS, MAX_CALLS, TrajectoryError, read_trajectory

pytestmark = pytest.mark.skipif(backends.missing() is not None, reason="bfcl-eval is not installed")

FS = {
    "GorillaFileSystem": {
        "root": {
            "alex": {
                "type": "directory",
                "contents": {
                    "notes.txt": {"type": "file", "content": "one Error two"},
                    "archive": {"type": "directory", "contents": {}},
                },
            }
        }
    }
}
TASK = {"id": "t", "involved_classes": ["GorillaFileSystem", "MathAPI"], "initial_config": FS}


def call(name: str, **args: object) -> dict[str, str]:
    return {name: json.dumps(args)}


def run(*turns: list[list[dict[str, str]]]) -> rp.Replay:
    return rp.replay(TASK, read_trajectory(list(turns)))


def test_replay_runs_calls_in_order_and_records_results_and_states():
    r = run(
        [[call("ls")], [call("mv", source="notes.txt", destination="archive")]],
        [[call("cd", folder="archive")], [call("grep", file_name="notes.txt", pattern="Error")]],
    )
    assert r.status == "ok"
    assert [c.outcome for c in r.calls] == ["ok"] * 4
    assert json.loads(r.calls[0].result) == {"current_directory_content": ["notes.txt", "archive"]}
    assert [c.changed for c in r.calls] == [False, True, False, False]
    assert json.loads(r.calls[3].result) == {"matching_lines": ["one Error two"]}
    fs0 = r.initial["GorillaFileSystem"]["root"]["contents"]
    assert "notes.txt" in fs0
    after = r.states[0]["GorillaFileSystem"]["root"]["contents"]
    assert "notes.txt" not in after and "notes.txt" in after["archive"]["contents"]
    assert r.results_until(0) == [c.result for c in r.calls[:2]]


def test_each_replay_starts_from_fresh_backends():
    first = run([[call("touch", file_name="new.txt")]])
    second = run([[call("ls")]])
    assert "new.txt" in first.end["GorillaFileSystem"]["root"]["contents"]
    assert "new.txt" not in json.loads(second.calls[0].result)["current_directory_content"]


def test_a_backend_error_is_an_outcome_with_bfcls_rendering():
    r = run([[call("cd", wrong_arg="x")]])
    assert r.calls[0].outcome == "error"
    assert r.calls[0].result.startswith("Error during execution: ")
    assert "unexpected keyword argument 'wrong_arg'" in r.calls[0].result


@pytest.mark.parametrize(
    "name",
    [
        "__import__('os').system",
        "_load_scenario",
        "__init__",
        "open",
        "eval",
        "exec",
        "print(open('/etc/passwd').read()) or ls",
        "GorillaFileSystem.ls",
        "post_tweet",  # a real backend method, but of a class the task does not involve
    ],
)
def test_attack_names_outside_the_backends_public_methods_are_refused_never_run(name, tmp_path):
    marker = tmp_path / "pwned"
    r = run([[{name: json.dumps({"command": f"touch {marker}", "file": "/etc/passwd"})}], [call("ls")]])
    assert r.calls[0].outcome == "refused"
    assert "is not a function of the task's backends" in r.calls[0].result
    assert r.calls[1].outcome == "ok"  # the replay goes on
    assert not marker.exists()


def test_attack_hostile_math_values_are_stopped_by_the_cpu_budget():
    r = run([[call("logarithm", value=2, base=3, precision=100_000_000)], [call("add", a=1, b=2)]])
    assert r.calls[0].outcome in ("timeout", "error")
    assert r.calls[1].outcome == "ok" and json.loads(r.calls[1].result) == {"result": 3}


@pytest.mark.slow
def test_attack_a_call_stuck_in_c_code_is_killed_and_the_rest_not_run():
    r = run([[call("square_root", number=2, precision=300_000_000)], [call("add", a=1, b=2)]])
    assert r.calls[0].outcome in ("timeout", "crashed", "error")
    if r.calls[0].outcome != "error":
        assert r.status == "incomplete" and r.calls[1].outcome == "not_run"
        assert "killed" in r.detail or "crash" in r.detail or r.detail


def test_unreadable_arguments_drop_their_step_as_bfcls_decoder_does():
    r = run([[{"ls": "{not json"}, call("touch", file_name="a.txt")], [call("touch", file_name="b.txt")]])
    assert [c.outcome for c in r.calls] == ["dropped", "dropped", "ok"]
    assert "not JSON" in r.calls[0].result
    contents = r.end["GorillaFileSystem"]["root"]["contents"]
    assert "a.txt" not in contents and "b.txt" in contents


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ('{"file_name": NaN}', "non-finite"),
        ('{"file-name": "x"}', "not a Python name"),
        ('{"class": "x"}', "not a Python name"),
        ('{"a": ' + "[" * 30 + "]" * 30 + "}", "nested deeper"),
    ],
)
def test_arguments_that_cannot_be_passed_are_refused(args, why):
    r = run([[{"touch": args}]])
    assert r.calls[0].outcome == "refused"
    assert why in r.calls[0].result


def test_attack_oversized_arguments_are_not_sent():
    big = json.dumps({"content": "x" * (MAX_ARG_CHARS + 1), "file_name": "a.txt"})
    r = run([[{"echo": big}]])
    assert r.calls[0].outcome == "dropped" and "longer than" in r.calls[0].result


def test_attack_too_many_calls_is_not_a_trajectory():
    with pytest.raises(TrajectoryError, match=f"more than {MAX_CALLS} calls"):
        read_trajectory([[[call("ls")] for _ in range(MAX_CALLS + 1)]])


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("Error during inference: 500", "the output is text, not a trajectory"),
        (42, "not a list of turns"),
        ([["ls"]], "not a list of calls"),
        ([[[["ls"]]]], "not a {name: arguments} call"),
    ],
)
def test_outputs_that_are_no_trajectory_say_what_was_found(output, message):
    with pytest.raises(TrajectoryError, match=message.replace("{", r"\{").replace("}", r"\}")):
        read_trajectory(output)


def test_a_json_text_output_is_read():
    t = read_trajectory(json.dumps([[[call("ls")]]]))
    assert t.n_calls == 1 and next(t.calls())[2].name == "ls"


def test_missing_backends_are_a_clear_error(monkeypatch):
    monkeypatch.setattr(backends, "_package_dir", lambda: None)
    with pytest.raises(MissingDependency, match="pip install --no-deps bfcl-eval"):
        rp.replay(TASK, read_trajectory([[[call("ls")]]]))


def test_the_staged_directory_holds_only_the_backends_and_mpmath():
    path = backends.staged_dir()
    assert sorted(p for p in os.listdir(path) if not p.startswith(".")) == ["bfcl_eval", "mpmath"]
    pkg = os.path.join(path, *backends.PACKAGE.split("."))
    mods = sorted(f[:-3] for f in os.listdir(pkg) if f.endswith(".py"))
    assert mods == sorted(["__init__", *backends.CLASSES.values(), *backends.SUPPORT])
    assert not os.path.exists(os.path.join(path, "bfcl_eval", "data"))  # BFCL's answers stay out of reach
    mode = os.stat(path).st_mode
    assert not mode & 0o022


def test_the_parent_and_the_child_agree_on_the_public_methods():
    classes = list(backends.CLASSES)
    r = rp.sandbox().run_calls(
        rp._child_code(), "vx_replay", [(["load", classes, {}], {})], timeouts=[rp.LOAD_CPU], args_after=False
    )
    assert r.calls[0].status == "ok"
    for cls_name, names in r.calls[0].value.items():
        assert tuple(sorted(names)) == backends.public_methods(cls_name)
