"""Candidate code is compiled as plain Python would compile it: no __future__ flags leak in from vx."""

from vx.sandbox import Sandbox, SandboxConfig


def test_annotations_are_evaluated_as_in_plain_python():
    sb = Sandbox(SandboxConfig())
    # without `from typing import List` this fails at definition time in plain Python (and evalplus)
    rep = sb.run_calls("def f(x: List[int]) -> int:\n    return 1\n", "f", [([1], {})])
    assert rep.status == "load_error" and "NameError" in rep.load_error
    ok = sb.run_calls(
        "from typing import List\ndef f(x: List[int]) -> int:\n    return len(x)\n", "f", [([[1, 2]], {})]
    )
    assert ok.status == "ok" and ok.calls[0].value == 2
