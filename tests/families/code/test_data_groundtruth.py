"""Ground truth (vx.families.code.data.groundtruth) and the teacher, with the real sandbox."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.data.groundtruth import Grader, GroundTruthError, _decode, _encode, _entry_point_for
from vx.families.code.data.tasks import Task
from vx.families.code.data.teacher import teach

REFERENCE = "def f(xs, k):\n    return sorted(xs)[:k]\n"
TASK = Task(
    id="T/1",
    dataset="mbpp+",
    prompt="",
    entry_point="f",
    reference=REFERENCE,
    base_inputs=([[3, 1, 2], 2], [[5], 1]),
    plus_inputs=([[], 0], [[9, 8, 7, 6], 3]),
)
FLOAT_TASK = Task(
    id="T/2",
    dataset="mbpp+",
    prompt="",
    entry_point="g",
    reference="def g(x):\n    return x / 3\n",
    base_inputs=([1.0], [2.0]),
    plus_inputs=([10.0],),
)
RENAMED = Task(
    id="T/3",
    dataset="mbpp+",
    prompt="",
    entry_point="old_name",
    aliases=("new_name",),
    reference="def new_name(x):\n    return x + 1\n",
    base_inputs=([1],),
    plus_inputs=([2],),
    meta={"evalplus_entry_point": "new_name"},
)
NOT_NONE = Task(
    id="T/4",
    dataset="mbpp+",
    prompt="",
    entry_point="text_match_three",
    reference="import re\ndef text_match_three(s):\n    return re.search('ab{3}', s)\n",
    base_inputs=(["abbb"], ["ac"]),
    plus_inputs=(),
)
TASKS = {t.id: t for t in (TASK, FLOAT_TASK, RENAMED, NOT_NONE)}


class CountingSandbox:
    """Wraps the real sandbox and counts runs (to see what the cache saves)."""

    def __init__(self, inner):
        self.inner = inner
        self.runs = 0
        self.layer = inner.layer

    def run_calls(self, *args, **kwargs):
        self.runs += 1
        return self.inner.run_calls(*args, **kwargs)

    def prepare_calls(self, *args, **kwargs):
        self.prepared = getattr(self, "prepared", 0) + 1
        return self.inner.prepare_calls(*args, **kwargs)


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    g = Grader(TASKS, version="test-v1", cache_dir=tmp_path_factory.mktemp("cache"), workers=2)
    assert g.prepare() == {}
    return g


@pytest.mark.parametrize(
    "solution, label, phase, reason",
    [
        (REFERENCE, "pass", None, None),
        ("def f(xs, k):\n    return sorted(xs)[:k + 1]\n", "fail", "base", "returned [1, 2, 3], expected [1, 2]"),
        ("def f(xs, k):\n    return tuple(sorted(xs)[:k])\n", "fail", "base", "expected [1, 2]"),
        ("def f(xs, k):\n    return sorted(xs)[:k] if xs else 1 / 0\n", "fail", "plus", "ZeroDivisionError"),
        ("def f(xs, k):\n    print(sorted(xs)[:k])\n", "fail", "base", "returned None"),
        ("def f(xs, k):\n    while True:\n        pass\n", "fail", "base", "timeout"),
        ("def g(xs, k):\n    return sorted(xs)[:k]\n", "fail", "base", "no entry point"),
        ("def f(xs, k)\n    return xs\n", "fail", "base", "syntax error (line 1)"),
        ("def f(xs, k):\n    return input()\n", "fail", "base", "EOFError"),
    ],
)
def test_grade(grader, solution, label, phase, reason):
    truth = grader.grade(TASK, solution)
    assert truth.label == label
    if label == "fail":
        assert truth.first_failure["phase"] == phase
        assert reason in truth.first_failure["reason"]
        assert "input" in truth.first_failure
    else:
        assert truth.first_failure is None
        assert truth.meta()["passed_inputs"] == {"base": 2, "plus": 2}


def test_a_tasks_inputs_are_prepared_once_for_all_its_candidates_and_mutation_does_not_carry_over(grader, tmp_path):
    """The hidden inputs are checked and encoded once per task (``Sandbox.prepare_calls``), not per candidate;
    a candidate that mutates its arguments changes nothing the next one is sent."""
    counting = CountingSandbox(grader.sandbox)
    g = Grader(TASKS, version="test-v1", cache_dir=grader.cache_path.parent, sandbox=counting)
    g.prepare()
    mutating = "def f(xs, k):\n    xs.clear()\n    xs.append(99)\n    return []\n"
    truths = [g.grade(TASK, code) for code in (mutating, REFERENCE, REFERENCE.replace("xs", "ys"))]
    assert [t.label for t in truths] == ["fail", "pass", "pass"]
    assert counting.runs == 3 and counting.prepared == 1
    assert TASK.base_inputs[0] == [[3, 1, 2], 2]
    assert g.grade(FLOAT_TASK, "def g(x):\n    return x / 3\n").label == "pass" and counting.prepared == 2


def test_forged_equality_is_not_trusted(grader):
    # An object that claims to equal everything never reaches the parent's comparison.
    always_equal = (
        "class Eq(list):\n    def __eq__(self, other):\n        return True\n"
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def f(xs, k):\n    return Anything()\n"
    )
    truth = grader.grade(TASK, always_equal)
    assert truth.label == "fail" and "not plain data" in truth.first_failure["reason"]
    subclass = "class Eq(list):\n    def __eq__(self, other):\n        return True\ndef f(xs, k):\n    return Eq([0])\n"
    assert grader.grade(TASK, subclass).label == "fail"  # reduced to the plain list [0]


def test_float_tolerance_and_type(grader):
    assert grader.grade(FLOAT_TASK, "def g(x):\n    return x / 3 + 1e-9\n").label == "pass"
    assert grader.grade(FLOAT_TASK, "def g(x):\n    return x / 3 + 1e-3\n").label == "fail"
    assert grader.grade(FLOAT_TASK, "def g(x):\n    return round(x / 3, 2)\n").label == "fail"


def test_alias_entry_point(grader):
    assert _entry_point_for("def old_name(x):\n    return x + 1\n", RENAMED) == "old_name"
    assert _entry_point_for("def new_name(x):\n    return x + 1\n", RENAMED) == "new_name"
    assert grader.grade(RENAMED, "def old_name(x):\n    return x + 1\n").label == "pass"
    assert grader.grade(RENAMED, "def new_name(x):\n    return x + 1\n").label == "pass"
    assert grader.grade(RENAMED, "def old_name(x):\n    return x + 2\n").label == "fail"


def test_not_none_oracle_with_unserializable_match_objects(grader):
    assert grader.expected("T/4").values["base"] == [True, False]
    good = "import re\ndef text_match_three(s):\n    return re.search('ab{3}', s)\n"
    assert grader.grade(NOT_NONE, good).label == "pass"
    assert grader.grade(NOT_NONE, "def text_match_three(s):\n    return 'abbb' in s\n").label == "pass"
    assert grader.grade(NOT_NONE, "def text_match_three(s):\n    return None\n").label == "fail"


def test_teacher_reads_base_inputs_only(grader):
    # Wrong only on the plus inputs: the teacher passes it, the ground truth fails it.
    plus_bug = "def f(xs, k):\n    return sorted(xs)[:k] if xs else None\n"
    assert grader.grade(TASK, plus_bug).label == "fail"
    label = teach(grader, TASK, plus_bug)
    assert label.label == "pass" and label.agreement == 1.0 and label.n_inputs == 2
    half = teach(grader, TASK, "def f(xs, k):\n    return [5] if xs == [5] else []\n")
    assert half.label == "fail" and half.agreement == 0.5
    assert half.meta()["teacher_agreement"] == 0.5 and "teacher_first_failure" in half.meta()


def test_expected_outputs_are_cached_per_version(grader, tmp_path):
    assert grader.cache_path.is_file()
    data = json.loads(grader.cache_path.read_text())
    assert data["version"] == "test-v1" and data["tasks"]["T/1"]["plus"] == [[], [6, 7, 8]]
    counting = CountingSandbox(grader.sandbox)
    again = Grader(TASKS, version="test-v1", cache_dir=grader.cache_path.parent, sandbox=counting)
    assert again.prepare() == {} and counting.runs == 0
    assert again.expected("T/1").values["plus"] == [[], [6, 7, 8]]
    other = Grader(TASKS, version="test-v2", cache_dir=grader.cache_path.parent, sandbox=counting)
    other.prepare(["T/1"])
    assert counting.runs == 1


def test_unusable_reference_is_reported(tmp_path, grader):
    broken = Task(
        id="B/1",
        dataset="mbpp+",
        prompt="",
        entry_point="h",
        reference="def h(x):\n    return 1 / x\n",
        base_inputs=([0],),
    )
    g = Grader({"B/1": broken}, version="b", cache_dir=tmp_path, sandbox=grader.sandbox)
    problems = g.prepare()
    assert "ZeroDivisionError" in problems["B/1"]
    with pytest.raises(GroundTruthError, match="B/1"):
        g.expected("B/1")
    counting = CountingSandbox(grader.sandbox)  # the problem is cached: the reference is not rerun
    again = Grader({"B/1": broken}, version="b", cache_dir=tmp_path, sandbox=counting)
    assert again.prepare() == problems and counting.runs == 0


def test_grade_many_keeps_order(grader):
    jobs = [(TASK, REFERENCE), (TASK, "def f(xs, k):\n    return []\n"), (FLOAT_TASK, "def g(x):\n    return x / 3\n")]
    seen = []
    truths = grader.grade_many(jobs, progress=seen.append)
    assert [t.label for t in truths] == ["pass", "fail", "pass"] and sum(seen) == 3


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=4),
    st.complex_numbers(allow_nan=False),
)
hashables = st.recursive(
    scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=3), max_leaves=6
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(hashables, inner, max_size=3)
        | st.sets(hashables, max_size=3)
    ),
    max_leaves=10,
)


def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=200, deadline=None)
@given(values)
def test_expected_value_cache_codec_round_trips_types(value):
    assert same(_decode(json.loads(json.dumps(_encode(value)))), value)


def test_runs_stop_once_the_label_is_decided(grader, tmp_path):
    from vx.families.code.data.groundtruth import PLUS_HEAD, PLUS_MIDDLE

    many = Task(
        id="M/1",
        dataset="mbpp+",
        prompt="",
        entry_point="sq",
        reference="def sq(x):\n    return x * x\n",
        base_inputs=([1], [2]),
        plus_inputs=tuple([i] for i in range(10, 10 + PLUS_HEAD + PLUS_MIDDLE + 5)),
    )
    counting = CountingSandbox(grader.sandbox)
    g = Grader({"M/1": many}, version="many", cache_dir=tmp_path, sandbox=counting)
    g.prepare()
    counting.runs = 0
    base_bug = g.grade(many, "def sq(x):\n    return 0 if x == 2 else x * x\n")
    # one process per candidate; the parent ends it at the first wrong result
    assert base_bug.first_failure["phase"] == "base" and counting.runs == 1
    assert base_bug.skipped == ("plus",) and base_bug.meta()["not_run"] == ["plus"]
    assert base_bug.meta()["inputs"] == {"base": 2, "plus": 0}  # nothing after the failing base input ran
    head_bug = g.grade(many, "def sq(x):\n    return 0 if x == 10 else x * x\n")
    assert (
        head_bug.first_failure == {"phase": "plus", "index": 0, "input": "[10]", "reason": "returned 0, expected 100"}
        and counting.runs == 2
    )
    assert head_bug.meta()["inputs"] == {"base": 2, "plus": 1}
    late_index = PLUS_HEAD + PLUS_MIDDLE + 1
    late = g.grade(many, f"def sq(x):\n    return 0 if x == {10 + late_index} else x * x\n")
    assert late.first_failure["index"] == late_index and counting.runs == 3
    assert late.meta()["inputs"] == {"base": 2, "plus": late_index + 1} and late.skipped == ("plus",)
    ok = g.grade(many, "def sq(x):\n    return x ** 2\n")
    assert ok.label == "pass" and counting.runs == 4 and ok.skipped == ()
    assert ok.meta()["inputs"] == {"base": 2, "plus": len(many.plus_inputs)}
    # the teacher's run is one process with the base inputs only
    counting.runs = 0
    assert teach(g, many, "def sq(x):\n    return 0\n").agreement == 0.0 and counting.runs == 1
