"""The SQL family's pack: root ``parses``, eight static and six exec ops, the peer op
``disagrees_with_peers`` (and the self-consistency baseline in shadow), the failure taxonomy, the
classifier, the check templates (tag ``"sql"``) and the skill loop's hooks
(:mod:`vx.families.sql.ratchet`: execution comparison, the solver's prompt); ``JUDGE``
(``"sql-judge"``) is the opt-in LLM judge op."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vx.families.pack import Pack
from vx.families.schema import task_schema
from vx.families.sql import ops, ratchet
from vx.families.sql.ops import judge, templates
from vx.families.sql.ops.taxonomy import TAXONOMY, classify_by_evidence
from vx.ops.similarity import Similarity


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """The failure class of a failing item: the mutation operator's class when the builder made it
    with one (``meta["operator"]``), else a class read off the query itself, else "wrong_result"."""
    from vx.families.sql.data.mutate import OPERATORS

    name = (meta or {}).get("operator")
    if name in OPERATORS and OPERATORS[name].failure_class in TAXONOMY:
        return OPERATORS[name].failure_class
    return classify_by_evidence(task, output)


def result_clusters(task: Mapping[str, Any], observations: Sequence[Any]) -> list[list[int]]:
    """The attempts that return the same result on the task's database and every neighbour database (the
    observations of the ``results`` observer; attempts that do not run form one cluster): what an
    attempt's support is counted in when a verifier ranks a question's attempts."""
    from vx.families.sql.ops.peers import _results

    groups: dict[Any, list[int]] = {}
    for i, data in enumerate(observations):
        ran, rows, _ = _results(data)
        key: Any = tuple((r.label, r.answer) for r in rows) if ran and rows else ("does not run",)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def result_agreement(task: Mapping[str, Any], observations: Sequence[Any]) -> list[float]:
    """Per attempt, 1 plus, for every other attempt, the share of the databases (the question's and its
    neighbours) on which it returns the same result (attempts that do not run agree among themselves)."""
    from vx.families.sql.ops.peers import _results

    answers: list[dict[str, str] | None] = []
    for data in observations:
        ran, rows, _ = _results(data)
        answers.append({r.label: r.answer for r in rows} if ran and rows else None)
    labels = sorted({lab for a in answers if a for lab in a})
    width = max(len(labels), 1)
    agree = [0.0] * len(answers)
    for lab in labels or ["-"]:
        groups: dict[Any, list[int]] = {}
        for i, a in enumerate(answers):
            if a is None:
                groups.setdefault(("does not run",), []).append(i)
            elif lab in a:
                groups.setdefault(a[lab], []).append(i)
        for members in groups.values():
            for i in members:
                agree[i] += (len(members) - 1) / width
    return [1.0 + x for x in agree]


#: A SQL task: a line of tasks.jsonl as the builder writes it.
TASK_SCHEMA = task_schema(
    "vx SQL task",
    {
        "question": {"type": "string", "minLength": 1, "description": "The question the query answers."},
        "instructions": {"type": "string"},
        "category": {"type": "string"},
        "database": {"type": "string", "minLength": 1},
        "dialect": {"type": "string", "minLength": 1, "description": "The SQL dialect of the warehouse (duckdb...)."},
        "prompt": {"type": "string", "description": "The prompt given to the model."},
        "warehouse": {"type": "object", "description": "Where the query runs (backend, source, database)."},
        "catalog": {"type": "object", "description": "Tables, columns and sample values."},
        "ignore_order": {"type": "boolean"},
        "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Seconds the query may run."},
        "max_rows": {"type": "integer", "minimum": 1},
        "match": {
            "type": "string",
            "enum": ["spider"],
            "description": "Compare results by Spider's execution match (vx.families.sql.spider).",
        },
        "variants": {
            "type": "object",
            "description": "Neighbour databases the task's queries also run on "
            "(vx.families.sql.variants): seed, version, use.",
        },
    },
    required=("question",),
)

PACK = Pack(
    name="sql",
    ops=ops.OPS,
    root=ops.ROOT,
    taxonomy=TAXONOMY,
    classify_failure=classify_failure,
    templates=(templates.FAMILY,),
    description="Text-to-SQL graded by running the query: parse, static and execution checks",
    task_schema=TASK_SCHEMA,
    output_language="sql",
    ratchet=ratchet.HOOKS,
    gate="execution_error",
    agreement="outside_unanimity",
    similarity=Similarity(
        "results",
        result_clusters,
        "the same result on the question's database and every neighbour database",
        result_agreement,
    ),
)

JUDGE = Pack(
    name="sql-judge",
    ops=tuple(judge.OPS),
    taxonomy=TAXONOMY,
    templates=(templates.FAMILY,),
    description="The SQL family's opt-in LLM judge op",
)
