import json

import pytest

from vx.dsl.verdict import Verdict
from vx.ops import Context, OpError, Result, abstain, clean, drawback, op, op_from_spec, template
from vx.ops.core import to_result
from vx.ops.specs import SpecError, spec_to_json, validate_spec


def test_decorator_reads_naturally():
    @op(tier="static", detects="print_instead_of_return")
    def prints(task, output, ctx):
        """Prints instead of returning."""
        return drawback("prints 3") if "print" in output else clean()

    assert prints.name == "prints"
    assert prints.tier == "static"
    assert prints.detects == "print_instead_of_return"
    assert prints.description == "Prints instead of returning."
    assert prints.status == "active"
    assert len(prints.version) == 12
    r = prints({}, "print(3)")
    assert r == Result(Verdict.DRAWBACK, "prints 3")
    assert prints({}, "return 3").verdict is Verdict.CLEAN


@pytest.mark.parametrize(
    "value,expected",
    [
        (True, Verdict.DRAWBACK),
        (False, Verdict.CLEAN),
        (None, Verdict.ABSTAIN),
        (Verdict.ABSTAIN, Verdict.ABSTAIN),
        (1, Verdict.DRAWBACK),
        ((True, "why"), Verdict.DRAWBACK),
        (abstain("no idea"), Verdict.ABSTAIN),
    ],
)
def test_return_values_normalise(value, expected):
    assert to_result(value).verdict is expected


def test_bad_return_value_names_the_op():
    with pytest.raises(OpError, match=r"op 'x' returned 'yes'"):
        to_result("yes", "x")


def test_bad_tier_is_rejected():
    with pytest.raises(OpError, match="tier must be one of"):
        op(tier="magic")(lambda t, o, c: None)


def test_version_changes_with_code():
    def make(src):
        ns = {}
        exec(src, ns)
        return op(ns["f"])

    a = make("def f(task, output, ctx):\n    return True\n")
    b = make("def f(task, output, ctx):\n    return False\n")
    # exec'd code has no source file: the version falls back to the bytecode and still differs
    assert a.version != b.version


def test_version_follows_what_runs_not_its_layout(tmp_path, monkeypatch):
    """Reformatting an op, or editing its comments and docstring, keeps its version (cached verdicts
    stay valid); changing what it computes does not."""
    import importlib
    import sys

    def version_of(source, name):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        monkeypatch.syspath_prepend(str(tmp_path))
        module = importlib.import_module(name)
        try:
            return op(module.f).version
        finally:
            sys.modules.pop(name, None)

    base = version_of("def f(task, output, ctx):\n    return len(output) > 3\n", "m_base")
    laid_out = version_of(
        'def f(task,\n      output, ctx):  # a comment\n    """Says why."""\n'
        "    return (len(output)\n            > 3)\n",
        "m_laid_out",
    )
    changed = version_of("def f(task, output, ctx):\n    return len(output) > 4\n", "m_changed")
    assert base == laid_out
    assert changed != base


def test_context_is_shared_scratch():
    ctx = Context()
    ctx["artifact"] = 42
    assert ctx.artifact == 42


@template("contains_text", kind="static", params={"text": "str"}, family="test")
def _contains_text(text):
    """Output contains a given text."""

    def fn(task, output, ctx):
        return text in output

    return fn


def test_spec_round_trips_to_identical_op():
    spec = {"kind": "static", "check": "contains_text", "params": {"text": "TODO"}, "detects": "unfinished"}
    a = op_from_spec(spec)
    b = op_from_spec(json.loads(spec_to_json(a)))
    assert (a.name, a.version, a.spec) == (b.name, b.version, b.spec)
    assert a({}, "x TODO").verdict is Verdict.DRAWBACK
    c = op_from_spec({**spec, "params": {"text": "FIXME"}})
    assert c.version != a.version and c.name != a.name


@pytest.mark.parametrize(
    "spec,msg",
    [
        ({"kind": "static", "check": "contains_txt", "params": {}, "detects": "x"}, "did you mean contains_text"),
        ({"kind": "exec", "check": "contains_text", "params": {"text": "a"}, "detects": "x"}, "is of kind 'static'"),
        ({"kind": "static", "check": "contains_text", "params": {}, "detects": "x"}, "needs parameter"),
        ({"kind": "static", "check": "contains_text", "params": {"text": 3}, "detects": "x"}, "must be str"),
        ({"kind": "static", "check": "contains_text", "params": {"text": "a", "b": 1}, "detects": "x"}, "no parameter"),
        ({"kind": "static", "check": "contains_text", "params": {"text": "a"}}, "lacks detects"),
        ("nope", "must be a JSON object"),
    ],
)
def test_spec_errors(spec, msg):
    with pytest.raises(SpecError, match=msg):
        validate_spec(spec)
