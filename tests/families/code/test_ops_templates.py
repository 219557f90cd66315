"""The code pack's check templates (typed specs for synthesis) and their inducers."""

from __future__ import annotations

import ast
import json

import pytest

from vx.dsl.verdict import Verdict
from vx.families.code.pack import PACK as pack
from vx.ops.core import Context
from vx.ops.specs import TEMPLATES, SpecError, op_from_spec, templates_for

D, C, A = Verdict.DRAWBACK, Verdict.CLEAN, Verdict.ABSTAIN
CHECKS = (
    "ast_call_present",
    "ast_node_present",
    "imports_module",
    "raises_on_probe_class",
    "raises_exception",
    "prints_value",
    "returns_constant",
    "returns_none_on_probe_class",
)


def example(call: str, expected_src: str) -> dict:
    node = ast.parse(call, mode="eval").body
    args = tuple(ast.literal_eval(a) for a in node.args)
    return {
        "call": call,
        "function": node.func.id,
        "args": list(args),
        "expected": ast.literal_eval(expected_src),
        "args_src": repr(args),
        "expected_src": expected_src,
        "source": "assert",
    }


def task(entry, *examples, tid="T/1") -> dict:
    return {"id": tid, "prompt": "", "entry_point": entry, "examples": list(examples)}


BIG = task("biggest", example("biggest([4, 9, 2])", "9"))
SMALL = task("smallest", example("smallest([4, 9, 2])", "2"), tid="T/2")


def make(check, detects="x", **params):
    return op_from_spec({"kind": TEMPLATES[check].kind, "check": check, "params": params, "detects": detects})


def verdict(o, t, src):
    return o(t, src, Context())


def test_templates_are_registered_under_the_pack_tag_with_inducers():
    assert pack.templates == ("code",)
    found = {t.check: t for t in templates_for("code")}
    for check in CHECKS:
        assert check in found and found[check].family == "code" and found[check].induce is not None
        schema = found[check].schema()
        assert schema["check"] == check and schema["description"]


def test_specs_round_trip_through_json():
    spec = {
        "kind": "static",
        "check": "ast_call_present",
        "params": {"name": "print"},
        "detects": "returns_not_print_only",
    }
    a = op_from_spec(spec)
    b = op_from_spec(json.loads(json.dumps(spec)))
    assert (a.name, a.version) == (b.name, b.version)
    assert a.name.startswith("ast_call_present__")
    assert make("ast_call_present", name="sorted").version != a.version


@pytest.mark.parametrize(
    "check, params",
    [
        ("ast_call_present", {"name": "not an identifier"}),
        ("ast_node_present", {"node": "NoSuchNode"}),
        ("ast_node_present", {"node": "literal_eval"}),
        ("imports_module", {"name": "1abc"}),
        ("raises_on_probe_class", {"klass": "huge"}),
        ("returns_none_on_probe_class", {"klass": "huge"}),
        ("raises_exception", {"name": "Value Error"}),
        ("prints_value", {"mode": "loud"}),
        ("returns_constant", {"min_calls": 1}),
    ],
)
def test_bad_params_are_refused_with_the_choices(check, params):
    with pytest.raises(SpecError):
        make(check, **params)


# --------------------------------------------------------------------------- static templates


def test_ast_call_present():
    o = make("ast_call_present", name="sort")
    res = verdict(o, BIG, "def biggest(xs):\n    xs.sort()\n    return xs[-1]\n")
    assert res.verdict == D and res.message == "line 2 calls sort()"
    assert verdict(o, BIG, "def biggest(xs):\n    return max(xs)\n").verdict == C
    assert verdict(o, BIG, "def biggest(xs) return\n").verdict == A
    # calls under the main guard never run
    src = "def biggest(xs):\n    return max(xs)\nif __name__ == '__main__':\n    [3].sort()\n"
    assert verdict(o, BIG, src).verdict == C


def test_ast_call_present_inducer():
    cluster = [(BIG, "def biggest(xs):\n    print(max(xs))\n"), (SMALL, "def smallest(xs):\n    print(min(xs))\n")]
    good = [(BIG, "def biggest(xs):\n    return max(xs)\n"), (SMALL, "def smallest(xs):\n    return min(xs)\n")]
    proposals = TEMPLATES["ast_call_present"].induce(cluster, good)
    assert proposals[0] == {"name": "print"}
    assert {"name": "max"} not in proposals and {"name": "min"} not in proposals  # used by good outputs too
    for params in proposals:  # every proposal catches some of the cluster and none of the good outputs
        o = make("ast_call_present", **params)
        assert any(verdict(o, t, s).verdict == D for t, s in cluster)
        assert all(verdict(o, t, s).verdict == C for t, s in good)


@pytest.mark.parametrize(
    "node, src",
    [
        ("Global", "N = 0\ndef biggest(xs):\n    global N\n    N += 1\n    return max(xs)\n"),
        ("WhileTrueNoExit", "def biggest(xs):\n    while True:\n        xs = xs[1:]\n"),
        ("BareExcept", "def biggest(xs):\n    try:\n        return max(xs)\n    except:\n        return 0\n"),
        ("ModuleLevelCode", "def biggest(xs):\n    return max(xs)\nprint(biggest([1, 2]))\n"),
        (
            "RecursiveCall",
            "def biggest(xs):\n    if len(xs) == 1:\n        return xs[0]\n    return max(xs[0], biggest(xs[1:]))\n",
        ),
        ("NestedFunction", "def biggest(xs):\n    def key(x):\n        return x\n    return max(xs, key=key)\n"),
        ("ListComp", "def biggest(xs):\n    return max([x for x in xs])\n"),
    ],
)
def test_ast_node_present(node, src):
    o = make("ast_node_present", node=node)
    assert verdict(o, BIG, src).verdict == D
    clean_src = "MAX = 10\n\ndef biggest(xs):\n    '''doc'''\n    while True:\n        break\n    return max(xs)\n"
    assert verdict(o, BIG, clean_src).verdict == C


def test_ast_node_present_inducer_skips_ubiquitous_nodes():
    cluster = [(BIG, "def biggest(xs):\n    while True:\n        pass\n")]
    good = [(BIG, "def biggest(xs):\n    return max(xs)\n")]
    proposals = TEMPLATES["ast_node_present"].induce(cluster, good)
    nodes = [p["node"] for p in proposals]
    assert "WhileTrueNoExit" in nodes or "While" in nodes
    assert not {"Module", "FunctionDef", "Name"} & set(nodes)


def test_imports_module_and_inducer():
    o = make("imports_module", name="numpy")
    assert verdict(o, BIG, "import numpy as np\ndef biggest(xs):\n    return int(np.max(xs))\n").verdict == D
    assert verdict(o, BIG, "from numpy.linalg import norm\ndef biggest(xs):\n    return 1\n").verdict == D
    assert verdict(o, BIG, "import math\ndef biggest(xs):\n    return max(xs)\n").verdict == C
    cluster = [(BIG, "import numpy\ndef biggest(xs):\n    return numpy.max(xs)\n")]
    good = [(BIG, "import math\ndef biggest(xs):\n    return max(xs)\n")]
    assert TEMPLATES["imports_module"].induce(cluster, good) == [{"name": "numpy"}]


# --------------------------------------------------------------------------- exec templates

NO_EMPTY = "def biggest(xs):\n    return max(xs)\n"
EMPTY_OK = "def biggest(xs):\n    return max(xs, default=None)\n"


def test_raises_on_probe_class():
    o = make("raises_on_probe_class", klass="empty")
    res = verdict(o, BIG, NO_EMPTY)
    assert res.verdict == D and "biggest([]) raised ValueError" in res.message and "made empty" in res.message
    assert verdict(o, BIG, EMPTY_OK).verdict == C
    # no probe of the class: an int-only example has nothing to empty
    t = task("double", example("double(3)", "6"))
    assert verdict(o, t, "def double(x):\n    return 2 * x\n").verdict == A
    assert verdict(o, BIG, "def big(xs):\n    return 1\n").verdict == A  # root failed


def test_raises_on_probe_class_inducer():
    cluster = [(BIG, NO_EMPTY), (SMALL, "def smallest(xs):\n    return sorted(xs)[0]\n")]
    good = [(BIG, EMPTY_OK), (SMALL, "def smallest(xs):\n    return min(xs) if xs else None\n")]
    proposals = TEMPLATES["raises_on_probe_class"].induce(cluster, good)
    assert {"klass": "empty"} in proposals
    assert {"klass": "example"} not in proposals


def test_raises_exception_and_inducer():
    o = make("raises_exception", name="NameError")
    res = verdict(o, BIG, "def biggest(xs):\n    return numpy.max(xs)\n")
    assert res.verdict == D and "NameError" in res.message
    assert verdict(o, BIG, NO_EMPTY).verdict == C
    load = verdict(o, BIG, "x = undefined\ndef biggest(xs):\n    return max(xs)\n")
    assert load.verdict == D and "loading the code raised NameError" in load.message
    cluster = [
        (BIG, "def biggest(xs):\n    return numpy.max(xs)\n"),
        (SMALL, "def smallest(xs):\n    return heapq.nsmallest(1, xs)[0]\n"),
    ]
    good = [(BIG, NO_EMPTY)]  # raises ValueError on empty input, never NameError
    assert TEMPLATES["raises_exception"].induce(cluster, good)[0] == {"name": "NameError"}


def test_prints_value_modes():
    printer = "def biggest(xs):\n    print(max(xs))\n"
    chatty = "def biggest(xs):\n    print('looking at', xs)\n    return max(xs)\n"
    expected = make("prints_value", mode="prints_expected")
    none_and_print = make("prints_value", mode="returns_none_and_prints")
    anything = make("prints_value", mode="prints_anything")
    assert verdict(expected, BIG, printer).verdict == D
    assert verdict(none_and_print, BIG, printer).verdict == D
    assert verdict(none_and_print, BIG, chatty).verdict == C
    assert verdict(anything, BIG, chatty).verdict == D
    assert verdict(anything, BIG, NO_EMPTY).verdict == C
    res = verdict(anything, BIG, "print('hello')\ndef biggest(xs):\n    return max(xs)\n")
    assert res.verdict == D and "loading the code printed 'hello'" in res.message
    assert verdict(expected, BIG, "def biggest(xs):\n    return xs[10]\n").verdict == C
    proposals = TEMPLATES["prints_value"].induce([(BIG, printer)], [(BIG, chatty)])
    assert {"mode": "returns_none_and_prints"} in proposals and {"mode": "prints_anything"} not in proposals


def test_returns_constant_and_inducer():
    const = "def biggest(xs):\n    return 9\n"
    o = make("returns_constant", min_calls=3)
    res = verdict(o, BIG, const)
    assert res.verdict == D and "all returned 9" in res.message
    assert verdict(o, BIG, EMPTY_OK).verdict == C
    t = task("double", example("double(3)", "6"))  # few distinct probes
    assert verdict(make("returns_constant", min_calls=8), t, "def double(x):\n    return 6\n").verdict == A
    proposals = TEMPLATES["returns_constant"].induce([(BIG, const)], [(BIG, EMPTY_OK)])
    assert proposals and all(p["min_calls"] >= 2 for p in proposals)


def test_exec_inducers_share_one_run_per_output(monkeypatch):
    from vx.families.code import ops as O
    from vx.families.code.ops import templates as T

    T._CONTEXTS.clear()
    from vx.families.code.ops import run as R
    from vx.families.code.pack import classify_failure

    R._runs.clear()
    sb = O.sandbox()
    runs = []
    real = sb.run_calls
    monkeypatch.setattr(sb, "run_calls", lambda *a, **k: runs.append(1) or real(*a, **k))
    cluster = [(BIG, "def biggest(xs):\n    return sorted(xs)[-1] + 0 * xs[0]\n")]
    good = [(BIG, EMPTY_OK)]
    for check in ("raises_on_probe_class", "raises_exception", "prints_value", "returns_constant"):
        TEMPLATES[check].induce(cluster, good)
    assert len(runs) == 2
    # ... and the ops and the failure classifier reuse those runs (evolution asks every round)
    T._CONTEXTS.clear()
    for _ in range(3):
        classify_failure(*cluster[0])
        for check in ("raises_on_probe_class", "returns_constant"):
            TEMPLATES[check].induce(cluster, good)
    assert len(runs) == 2


def test_returns_none_on_probe_class_and_inducer():
    falls_through = "def biggest(xs):\n    if xs:\n        return max(xs)\n"
    o = make("returns_none_on_probe_class", klass="empty")
    res = verdict(o, BIG, falls_through)
    assert res.verdict == D and "biggest([]) returned None (argument 1 made empty)" in res.message
    assert verdict(o, BIG, "def biggest(xs):\n    return max(xs) if xs else 0\n").verdict == C
    assert verdict(o, BIG, NO_EMPTY).verdict == A  # raises on empty input: returned nothing
    t = task("log", example("log('x')", "None"))  # the example expects None
    assert verdict(o, t, "def log(s):\n    print(s)\n").verdict == A
    proposals = TEMPLATES["returns_none_on_probe_class"].induce(
        [(BIG, falls_through)], [(BIG, EMPTY_OK.replace("default=None", "default=0"))]
    )
    assert proposals == [{"klass": "empty"}]


def test_inducers_propose_only_what_can_clear_the_birth_gate():
    from vx.families.code.ops import templates as T

    def cluster(n_print):
        outs = [(BIG, "def biggest(xs):\n    print(max(xs))\n")] * n_print
        return outs + [(BIG, f"def biggest(xs):\n    return max(xs) + {k}\n") for k in range(1, 4 - n_print)]

    good = [(BIG, "def biggest(xs):\n    return max(xs)\n")]
    assert T.MIN_CLUSTER_SHARE == 0.5
    assert {"name": "print"} not in TEMPLATES["ast_call_present"].induce(cluster(1), good)  # 1 of 3
    assert {"name": "print"} in TEMPLATES["ast_call_present"].induce(cluster(2), good)  # 2 of 3
