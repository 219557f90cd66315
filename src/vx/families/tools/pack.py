"""The tools family's packs.

``PACK`` (``"tools"``): single-turn function calling -- a question, the functions offered (BFCL's
function-doc dialect), and one answer to grade: the root ``decodes`` (the one model-independent decoder,
:mod:`vx.families.tools.decode`), the checks of calls against the docs, the failure taxonomy and its
classifier. The multi-turn pack (``"tools-multi"``: trajectories replayed on stateful backends) lives
beside it in this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vx.families.pack import Pack
from vx.families.schema import task_schema
from vx.families.tools import ops
from vx.families.tools.ops.taxonomy import TAXONOMY, classify_by_evidence
from vx.ops.similarity import Similarity


def classify_failure(task: Mapping[str, Any], output: Any, meta: Mapping[str, Any] | None = None) -> str | None:
    """The failure class of a failing single-turn answer: the mutation's class when the builder made it
    with one (``meta["failure_class"]``), else a class read off the answer itself."""
    cls = (meta or {}).get("failure_class")
    if isinstance(cls, str) and cls in TAXONOMY:
        return cls
    return classify_by_evidence(task, output)


def answer_clusters(task: Mapping[str, Any], observations: Sequence[Any]) -> list[list[int]]:
    """The answers equal in normal form (the observations of the ``answer_form`` observer; the equality
    ``outside_normal_plurality`` votes with: defaults filled, values compared as values, calls as a multiset;
    answers that cannot be read form one cluster): what an answer's support is counted in when a verifier
    ranks a question's answers."""
    from vx.families.tools.ops.peers import Form

    groups: dict[str, list[int]] = {}
    for i, data in enumerate(observations):
        groups.setdefault(Form.from_data(data).key, []).append(i)
    return list(groups.values())


def read_reply(reply: str) -> str:
    """A model's reply graded whole: the decoder reads the calls inside a fenced block or tool-call tags
    itself, and whether they came fenced (or with words around them) is part of what the format checks
    judge, so no block is cut out of it first."""
    return reply


#: One offered function, in BFCL's dialect (``parameters`` is a ``dict`` schema: properties, required).
FUNCTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "parameters": {"type": "object", "description": "type dict, properties, required (BFCL's dialect)."},
    },
}

#: A single-turn tools task: a line of tasks.jsonl as the builder writes it.
TASK_SCHEMA = task_schema(
    "vx tools task (single-turn)",
    {
        "question": {
            "description": "The user's request: text, or BFCL's messages ([{role, content}], possibly per turn).",
            "type": ["string", "array"],
        },
        "functions": {"type": "array", "items": FUNCTION_SCHEMA, "description": "The functions offered."},
        "category": {
            "type": "string",
            "description": "BFCL's category (simple, multiple, parallel, parallel_multiple, relevance): provenance "
            "for reports, read by no op.",
        },
        "meta": {"type": "object"},
    },
    required=("question", "functions"),
)

PACK = Pack(
    name="tools",
    ops=ops.SINGLE_OPS,
    root=ops.ROOT,
    taxonomy=TAXONOMY,
    classify_failure=classify_failure,
    description="Single-turn function calling: calls read by one decoder, checked against the offered docs",
    task_schema=TASK_SCHEMA,
    output_language="python",
    gate="breaks_contract",
    agreement="outside_consensus",
    similarity=Similarity(
        "answer_form", answer_clusters, "the same calls in normal form (the offered docs' defaults filled)"
    ),
    read_reply=read_reply,
)

# --------------------------------------------------------------------------- multi-turn ("tools-multi")

#: A multi-turn tools task: a line of tasks.jsonl as the builder writes it (never the ground-truth calls).
MULTI_TASK_SCHEMA = task_schema(
    "vx tools task (multi-turn)",
    {
        "turns": {
            "type": "array",
            "description": "Per user turn, its messages ([{role, content}]); empty: a turn "
            "where held-out functions are offered again.",
        },
        "involved_classes": {"type": "array", "items": {"type": "string"}, "description": "BFCL's backend classes."},
        "initial_config": {"type": "object", "description": "The backends' initial state, per class."},
        "functions": {"type": "array", "items": FUNCTION_SCHEMA, "description": "The functions offered."},
        "held_out": {"type": "object", "description": "{turn: [names]}: functions not offered before that turn."},
        "category": {"type": "string", "description": "BFCL's category: provenance for reports, read by no op."},
    },
    required=("turns", "involved_classes", "functions"),
)


def describe_multi_environment() -> str:
    """Where the multi-turn exec ops run (shown by ``vx eval``)."""
    from vx.families.tools import backends

    why = backends.missing()
    if why:
        return f"tools-multi: trajectories cannot be replayed here ({why})"
    return f"tools-multi: trajectories replayed on BFCL's backends ({backends.version()}) in the sandbox"


def state_clusters(task: Mapping[str, Any], observations: Sequence[Any]) -> list[list[int]]:
    """The trajectories that leave the backends in the same state after every turn BFCL compares (the state
    digests of the ``outcomes`` observer, BFCL's equality: dicts whatever their key order, 2940 == 2940.0;
    not the turn before held-out functions come back, where BFCL compares no state; trajectories that were
    not replayed to the end form one cluster): what an attempt's support is counted in when a verifier
    ranks a task's trajectories."""
    from vx.families.tools.ops.states import usable
    from vx.families.tools.ops.turns import held_out

    skip = {at - 1 for at in held_out(task)}
    groups: dict[Any, list[int]] = {}
    for i, data in enumerate(observations):
        key: Any = (
            tuple(
                str(t.get("state", "")) for k, t in enumerate(data["turns"]) if k not in skip and isinstance(t, Mapping)
            )
            if usable(data)
            else ("not replayed",)
        )
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def _multi_pack() -> Pack:
    from vx.families.tools.ops import multi_taxonomy

    return Pack(
        name="tools-multi",
        ops=ops.multi_ops(),
        root=ops.MULTI_ROOT,
        taxonomy=multi_taxonomy.TAXONOMY,
        classify_failure=multi_taxonomy.classify_failure,
        templates=("tools-multi",),
        describe_environment=describe_multi_environment,
        description="Multi-turn tool use: trajectories replayed on BFCL's stateful backends, judged by what they "
        "did, by the other attempts' states and by evaluator-first state checks",
        task_schema=MULTI_TASK_SCHEMA,
        output_language="json",
        gate="silent_turn",
        agreement="outside_state_unanimity",
        similarity=Similarity(
            "outcomes", state_clusters, "the same backends' state after every turn (BFCL's state equality)"
        ),
    )


MULTI = _multi_pack()
