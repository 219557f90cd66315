"""The code family's pack: Python function synthesis graded by hidden unit tests.

``PACK`` (``packs = ["code"]`` in a family.toml) holds the root ``parses`` and its ops (the static and exec
seed detectors, the peer op ``disagrees_with_peers`` and its baselines, ``crashes_in_domain``,
``violates_example_invariant``), the failure taxonomy, the failure classifier, the check templates (tag
``"code"``) and the skill loop's hooks (:mod:`vx.families.code.ratchet`: hidden tests, the solver's prompt, a
demo). ``JUDGE`` (``"code-judge"``) is the opt-in LLM judge op ``spec_mismatch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vx.families.code import ops, ratchet
from vx.families.code.ops import judge, templates
from vx.families.code.ops.taxonomy import TAXONOMY, classify_by_evidence
from vx.families.pack import Pack
from vx.families.schema import task_schema
from vx.ops.similarity import Similarity


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """The failure class of a failing item, for clustering misses and gaps (None: unknown).

    Provenance first: a ``meta["failure_class"]`` in the taxonomy, or the class of the mutation
    ``meta["operator"]`` that made the output (the builder's record); otherwise the evidence of the
    seed ops (:func:`~vx.families.code.ops.taxonomy.classify_by_evidence`)."""
    meta = meta or {}
    cls = meta.get("failure_class")
    if isinstance(cls, str) and cls in TAXONOMY:
        return cls
    operator = meta.get("operator")
    if isinstance(operator, str):
        from vx.families.code.data.mutate import OPERATORS

        if operator in OPERATORS and OPERATORS[operator].failure_class in TAXONOMY:
            return OPERATORS[operator].failure_class
    return classify_by_evidence(task, output)


def describe_environment() -> str:
    """Where this pack's exec ops run model code: the sandbox layer in use."""
    return ops.sandbox().describe().strip().splitlines()[0]


def describe_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """What the code ops derive from a task: its visible examples, the domain they imply, the example
    invariants, and the probe inputs the peer ops compare attempts on (``vx explain`` shows it)."""
    from vx.families.code.ops import invariants
    from vx.families.code.probes import probe

    gen, domain, why = probe.generated(task)
    tests = probe.model_tests_with_counts(task)
    inferred = invariants.infer(task)
    return {
        "visible examples": [e.call for e in probe.visible_examples(task)],
        "inferred domain": list(domain),
        "example invariants": [_invariant_line(i, invariants.DEFAULT_KINDS) for i in inferred.invariants]
        or [inferred.why],
        "generated probes": [f"{p.klass.removeprefix('gen_')}: {p.call}" for p in gen],
        "model-written tests": [f"{p.call} == {values_short(p.expected)} (written {n}x)" for p, n in tests],
        **({"no probes": why} if why and not gen else {}),
    }


def prepare_task(task: Mapping[str, Any]) -> None:
    """Generate the task's probes now (kept in this process and in the probe store), so that grading its
    first output does not pay for them (`vx serve --warm`)."""
    from vx.families.code.probes import probe

    probe.generated(task)


def _invariant_line(inv: Any, default_kinds: tuple[str, ...]) -> str:
    why = "a prior" if inv.kind in ("no_mutation", "deterministic") else f"{inv.support} examples could have broken it"
    where = "" if inv.kind in default_kinds else "; template only"
    return f"{inv.kind}: {inv.text} ({why}{where})"


def behaviour_clusters(task: Mapping[str, Any], observations: Sequence[Any]) -> list[list[int]]:
    """The attempts that behave identically on the visible examples and every peer probe (the observations
    of the ``behaviour`` observer; attempts that do not load form one cluster): what an attempt's support
    is counted in when a verifier ranks a task's attempts."""
    from vx.families.code.ops.peers import Behaviour
    from vx.families.code.ops.peers import behaviour_clusters as clusters

    return clusters([Behaviour.from_data(o) for o in observations])


def behaviour_agreement(task: Mapping[str, Any], observations: Sequence[Any]) -> list[float]:
    """Per attempt, 1 plus, for every other attempt, the share of the inputs (visible examples and peer
    probes) on which it answers alike (`same_answer`'s rule; attempts that do not load answer alike among
    themselves): counted per input from the size of each answer's group, so it costs k x inputs, not k^2."""
    from vx.families.code.ops.peers import Answer, Behaviour, answer_key, same_answer

    behaviours = [Behaviour.from_data(o) for o in observations]
    rows = [(b.example_answers + b.answers) if b.loaded else () for b in behaviours]
    width = max((len(r) for r in rows), default=0)
    if width == 0:
        return [float(len(behaviours))] * len(behaviours)
    agree = [0.0] * len(behaviours)
    for p in range(width):
        groups: list[tuple[Any, list[int]]] = []  # (representative answer, members)
        by_key: dict[Any, int] = {}
        loose_groups: list[int] = []
        for i, (b, row) in enumerate(zip(behaviours, rows)):
            if not b.loaded:
                key: Any = ("does not load",)
                answer: Any = None
            elif p >= len(row) or row[p].kind == "not_run":
                continue  # no answer here: agrees with no one
            else:
                answer = row[p]
                key = answer_key(answer)
            loose = key is None or key[0] == "value~"  # compared within a tolerance, or not keyed at all
            g = by_key.get(key) if not loose else None
            if g is None and loose and isinstance(answer, Answer):  # only such answers can equal another key
                g = next((n for n in loose_groups if same_answer(groups[n][0], answer)), None)
            if g is None:
                g = len(groups)
                groups.append((answer, []))
                if loose:
                    loose_groups.append(g)
                else:
                    by_key[key] = g
            groups[g][1].append(i)
        for _, members in groups:
            for i in members:
                agree[i] += (len(members) - 1) / width
    return [1.0 + a for a in agree]


def open_source(spec: str, data_dir: Any = None) -> Any:
    """HumanEval+ / MBPP+ / HumanEval (or an evalplus release file) as a task source for `vx grade`."""
    from vx.families.code.data.sources import open_source as open_code_source

    return open_code_source(spec, data_dir)


def values_short(value: Any) -> str:
    from vx.families.code.ops.values import short

    return short(value, 40)


#: A visible example call, as the builders write it (``vx.families.code.examples.Example``).
EXAMPLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["call", "function", "args", "expected"],
    "properties": {
        "call": {"type": "string", "description": "The call as written, e.g. add(2, 3)."},
        "function": {"type": "string", "minLength": 1},
        "args": {"type": "array", "description": "The positional arguments (JSON values)."},
        "expected": {"description": "The expected return value (a JSON value)."},
        "args_src": {"type": "string", "description": "The arguments as Python source (exact types)."},
        "expected_src": {"type": "string", "description": "The expected value as Python source."},
        "source": {"type": "string", "description": "Where the example was found: doctest, docstring, assert..."},
    },
}

#: A model-written test case of a task (``vx.families.code.data.codet.model_test_records``).
MODEL_TEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["args_src", "expected_src"],
    "properties": {
        "call": {"type": "string", "description": "The call as written, e.g. add(2, 3)."},
        "args_src": {"type": "string", "description": "The arguments as a Python tuple literal."},
        "expected_src": {"type": "string", "description": "The value the test expects, as a Python literal."},
        "count": {"type": "integer", "minimum": 1, "description": "How many of the model's samples wrote it."},
    },
}

#: A code task: a line of tasks.jsonl (``Task.family_record``), what the ops may read.
TASK_SCHEMA = task_schema(
    "vx code task",
    {
        "prompt": {"type": "string", "description": "The task as given to the model (signature and docstring)."},
        "entry_point": {"type": "string", "minLength": 1, "description": "The function to call."},
        "examples": {"type": "array", "items": EXAMPLE_SCHEMA, "description": "The visible example calls."},
        "reference": {"type": "string", "description": "A correct solution (never read by the ops)."},
        "aliases": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "description": "Other accepted names of the entry point.",
        },
        "meta": {"type": "object"},
        "dataset": {"type": "string", "description": "humaneval, humaneval+ or mbpp+ (evalplus's comparison)."},
        "atol": {"type": "number", "minimum": 0, "description": "evalplus's float tolerance."},
        "model_tests": {
            "type": "array",
            "items": MODEL_TEST_SCHEMA,
            "description": "Model-written test cases (unlabeled; CodeT's), most often written first.",
        },
    },
    required=("entry_point",),
)

PACK = Pack(
    name="code",
    ops=ops.SEED_OPS,
    root=ops.ROOT,
    taxonomy=TAXONOMY,
    classify_failure=classify_failure,
    templates=(templates.FAMILY,),
    describe_environment=describe_environment,
    description="Python functions graded by hidden unit tests: parse, static and sandboxed exec checks",
    describe_task=describe_task,
    prepare_task=prepare_task,
    task_schema=TASK_SCHEMA,
    sources=open_source,
    datasets=("humaneval+", "mbpp+", "humaneval"),
    output_language="python",
    ratchet=ratchet.HOOKS,
    gate="fails_visible_example",
    agreement="outside_unanimity",
    similarity=Similarity(
        "behaviour",
        behaviour_clusters,
        "identical answers on the visible examples and every generated probe",
        behaviour_agreement,
    ),
)

JUDGE = Pack(
    name="code-judge",
    ops=(judge.spec_mismatch,),
    taxonomy=TAXONOMY,
    templates=(templates.FAMILY,),
    description="The code family's opt-in LLM judge op (spec_mismatch)",
)
