"""The bundled tools example (``examples/tools``): BFCL's questions, function docs and ground-truth calls
(from the ``bfcl-eval`` package's own data files, Apache-2.0), with answers made from the ground truth.

For each question (the ids in :data:`EXAMPLE_IDS`, a fixed draw from the questions of the shared data's
single-turn files, so that no held-back question is used) the builder writes the ground-truth calls in
three forms a model might answer in -- Python call text, a function-calling API's structured calls (names
with ``_`` for ``.``), ``<tool_call>`` JSON -- plus correct variants (other values the ground truth allows,
optional parameters spelled out or left out), and mutants of one ground-truth answer, each with its failure
class: a wrong value, a required argument left out, another function called, a call dropped or repeated, a
value of the wrong type, a parameter the docs do not have, the calls wrapped in a markdown fence. On a
question none of the functions fits the correct answers decline in words (or answer ``[]``); the mutants
call an offered function anyway.

Labels are by construction; with ``bfcl-eval`` importable every answer but the fenced one is also graded by
BFCL's own checker and an answer whose label it contradicts is left out (counted in the provenance). No
model output is used.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import BuildError
from vx.families.build_report import BuildReport
from vx.families.split import LabelledItem, split_by_task
from vx.families.tools.data import bfcl, single
from vx.families.tools.data.single import TeacherLabel, write_family
from vx.families.tools.decode import decode
from vx.families.tools.dialect import NO_DEFAULT, functions

BUILDER_VERSION = "1"
#: The questions of the example, by BFCL v4 file: drawn (seeded) from the questions of the shared data's
#: single-turn files that BFCL v4 keeps unchanged.
EXAMPLE_IDS: dict[str, tuple[str, ...]] = {
    "simple_python": tuple(
        f"simple_python_{n}" for n in (36, 37, 69, 118, 124, 126, 131, 138, 162, 192, 247, 278, 295, 393)
    ),
    "multiple": tuple(f"multiple_{n}" for n in (12, 23, 24, 27, 53, 118, 125, 163)),
    "parallel": tuple(f"parallel_{n}" for n in (6, 12, 20, 57, 58, 73, 136, 161)),
    "parallel_multiple": tuple(f"parallel_multiple_{n}" for n in (5, 109, 110, 123, 138, 154)),
    "irrelevance": tuple(f"irrelevance_{n}" for n in (68, 127, 130, 164, 189, 216, 221, 224)),
}
#: The categories of the shared data's files (a task's ``category`` field), by BFCL v4 file.
CATEGORY = {
    "simple_python": "simple",
    "multiple": "multiple_function",
    "parallel": "parallel_function",
    "parallel_multiple": "parallel_multiple_function",
    "irrelevance": "relevance",
}
DESCRIPTION = (
    "BFCL questions and function docs (bfcl-eval's data files, Apache-2.0) with answers made from the "
    "ground-truth calls: correct forms and variants, and mutants; labels by construction, checked by BFCL"
)
SEED_EXPRESSION = "; family: tools-example\n" + single.SEED_BODY  # the same seed as a built family's
#: The dev draw's strata, by the failure class of a mutant.
STRATUM = {
    "wrong_value": "wrong_value",
    "irrelevant_call": "irrelevant_call",
    "format": "format",
}


def _data_dir() -> Path:
    try:
        import bfcl_eval
    except ImportError as exc:
        raise BuildError(
            "the tools example is built from the bfcl-eval package's data files: pip install --no-deps bfcl-eval"
        ) from exc
    return Path(bfcl_eval.__file__).parent / "data"


def _read(path: Path, ids: set[str]) -> dict[str, dict[str, Any]]:
    out = {}
    with path.open(encoding="utf-8") as f:
        for line in f:
            obj = json.loads(line)
            if obj.get("id") in ids:
                out[obj["id"]] = obj
    return out


# --------------------------------------------------------------------------- answers

Calls = list[tuple[str, dict[str, Any]]]


def python_text(calls: Calls) -> str:
    """Calls as Python call text: ``[f(a=1), g(b='x')]``."""
    return "[" + ", ".join(f"{n}(" + ", ".join(f"{k}={v!r}" for k, v in a.items()) + ")" for n, a in calls) + "]"


def structured(calls: Calls) -> list[dict[str, str]]:
    """Calls as a function-calling API returns them: ``[{name: json-args}]``, dots sent as ``_``."""
    return [{n.replace(".", "_"): json.dumps(a)} for n, a in calls]


def tagged(calls: Calls) -> str:
    """Calls inside ``<tool_call>`` tags, one a tag, as JSON."""
    return "\n".join(
        f"<tool_call>\n{json.dumps({'name': n.replace('.', '_'), 'arguments': a})}\n</tool_call>" for n, a in calls
    )


def _choose(truth: Sequence[Mapping[str, Mapping[str, list[Any]]]], pick: str) -> Calls:
    """Concrete calls from BFCL's ground truth: per parameter the first allowed value (``first``), or the last
    one while leaving out what is optional (``last``), or every optional one spelled out (``spelled``)."""
    out: Calls = []
    for call in truth:
        ((name, params),) = call.items()
        args: dict[str, Any] = {}
        for p, allowed in params.items():
            values = [v for v in allowed if v != ""]
            optional = "" in allowed
            if not values or (pick == "last" and optional):
                continue
            args[p] = values[-1] if pick == "last" else values[0]
        out.append((name, args))
    return out


def _mutants(calls: Calls, docs: Sequence[Mapping[str, Any]], rng: random.Random) -> list[tuple[str, str, Any]]:
    """(operator, failure class, calls) mutants of one correct answer."""
    offered = functions(docs)
    out: list[tuple[str, str, Any]] = []
    name, args = calls[0]
    fn = offered.get(name)
    numeric = [k for k, v in args.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    strings = [k for k, v in args.items() if isinstance(v, str)]
    if numeric:
        k = rng.choice(numeric)
        v = args[k]
        out.append(
            (
                "wrong_value",
                "wrong_value",
                [(name, {**args, k: v + 1 if isinstance(v, int) else v * 2 + 1})] + calls[1:],
            )
        )
        out.append(("wrong_type", "wrong_type", [(name, {**args, k: str(v)})] + calls[1:]))
    elif strings:
        k = rng.choice(strings)
        out.append(("wrong_value", "wrong_value", [(name, {**args, k: args[k] + " Annex"})] + calls[1:]))
    required = [p for p in (fn.required if fn else ()) if p in args]
    if required:
        drop = rng.choice(required)
        out.append(
            ("missing_required", "missing_argument", [(name, {k: v for k, v in args.items() if k != drop})] + calls[1:])
        )
    others = [n for n in offered if n != name]
    wrong = rng.choice(others) if others else name + "_v2"
    out.append(("wrong_function", "wrong_call" if others else "unknown_function", [(wrong, args)] + calls[1:]))
    out.append(("unknown_parameter", "unknown_argument", [(name, {**args, "verbose": True})] + calls[1:]))
    if len(calls) > 1:
        out.append(("dropped_call", "wrong_count", calls[:-1]))
    else:
        out.append(("extra_call", "wrong_count", calls + calls))
    out.append(("fenced", "format", "```json\n" + python_text(calls) + "\n```"))
    return out


def _filler(param: Any) -> Any:
    return {"string": "example", "integer": 1, "float": 1.0, "boolean": True, "array": [], "tuple": [], "dict": {}}.get(
        param.type, "example"
    )


def _irrelevant_answers(docs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str, Any]]:
    """(id suffix, label, failure class, output) for a question none of the functions fits."""
    fn = next(iter(functions(docs).values()))
    call = [
        (
            fn.name,
            {
                p: (fn.params[p].default if fn.params[p].default is not NO_DEFAULT else _filler(fn.params[p]))
                for p in fn.required
            },
        )
    ]
    return [
        ("declines", "pass", "", "None of the offered functions can answer this question."),
        ("declines-structured", "pass", "", ["I cannot help with that: no offered function fits the request."]),
        ("empty-list", "pass", "", "[]"),
        ("calls-anyway", "fail", "irrelevant_call", python_text(call)),
        ("calls-anyway-structured", "fail", "irrelevant_call", structured(call)),
    ]


def build_example(out_dir: str | os.PathLike[str], *, seed: int = 0, n_locked: int | None = None) -> BuildReport:
    """Build the bundled example into `out_dir` (see the module docstring)."""
    data = _data_dir()
    rng = random.Random(f"vx-tools-example:{seed}")
    try:
        checker: bfcl.Checker | None = bfcl.load_checker()
    except bfcl.Unavailable:
        checker = None
    tasks: dict[str, dict[str, Any]] = {}
    items: list[LabelledItem] = []
    dropped: Counter[str] = Counter()
    for stem, ids in EXAMPLE_IDS.items():
        wanted = set(ids)
        questions = _read(data / f"BFCL_v4_{stem}.json", wanted)
        answers_file = data / "possible_answer" / f"BFCL_v4_{stem}.json"
        truth = _read(answers_file, wanted) if answers_file.is_file() else {}
        category = CATEGORY[stem]
        for qid in ids:
            q = questions[qid]
            docs = q["function"]
            tasks[qid] = {"id": qid, "question": q["question"], "functions": docs, "category": category}
            if category == "relevance":
                answers = _irrelevant_answers(docs)
            else:
                gt = truth[qid]["ground_truth"]
                first, last, spelled = _choose(gt, "first"), _choose(gt, "last"), _choose(gt, "spelled")
                answers = [
                    ("python", "pass", "", python_text(first)),
                    ("structured", "pass", "", structured(first)),
                    ("tagged", "pass", "", tagged(first)),
                    ("alternative", "pass", "", python_text(last)),
                    ("optional-spelled", "pass", "", structured(spelled)),
                ]
                if len(first) > 1:
                    answers.append(("reordered", "pass", "", python_text(first[::-1])))
                for op, cls, calls in _mutants(first, docs, rng):
                    answers.append((op, "fail", cls, calls if isinstance(calls, str) else python_text(calls)))
            for suffix, label, cls, output in answers:
                if checker is not None and cls != "format" and category != "relevance":
                    ok = _bfcl_agrees(checker, category, docs, output, truth[qid]["ground_truth"], label)
                    if not ok:
                        dropped[suffix] += 1
                        continue
                meta = {"operator": suffix, **({"failure_class": cls} if cls else {})}
                items.append(
                    LabelledItem(
                        f"{qid}#{suffix}", qid, output, meta=meta, truth=label, truth_detail={"truth": "construction"}
                    )
                )

    def teach(it: LabelledItem) -> TeacherLabel:
        if it.truth == "pass":
            return TeacherLabel("pass", 1.0)
        return TeacherLabel("fail", 0.0, STRATUM.get(str(it.meta.get("failure_class")), "wrong_call"))

    splits = split_by_task(
        items,
        seed=seed,
        teacher=teach,
        n_locked=n_locked if n_locked is not None else len(items) // 3,
        dev_draw="stratified",
        strata=("wrong_value", "wrong_call", "irrelevant_call", "format"),
    )
    provenance: dict[str, Any] = {
        "builder": f"vx.families.tools.data.example.build_example v{BUILDER_VERSION}",
        "source": "bfcl-eval package data files (BFCL_v4_*.json, possible_answer/): Apache-2.0, "
        "ShishirPatil/gorilla berkeley-function-call-leaderboard",
        "bfcl_checker": (f"bfcl-eval {checker.version}" if checker else "not installed: labels by construction only"),
        "left_out_by_bfcl": dict(sorted(dropped.items())),
        "seed": seed,
        "questions": len(tasks),
        "split": "disjoint by question",
        "counts": splits.counts(),
    }
    notes = write_family(
        Path(out_dir),
        tasks=list(tasks.values()),
        splits=splits,
        provenance=provenance,
        name="tools-example",
        description=DESCRIPTION,
        seed_text=SEED_EXPRESSION,
    )
    return BuildReport(Path(out_dir), splits.counts(with_hidden_labels=True), provenance, notes, truth=splits.truth())


def _bfcl_agrees(checker: bfcl.Checker, category: str, docs: list[Any], output: Any, truth: Any, label: str) -> bool:
    """Whether BFCL's checker gives `label` to `output` (decoded by this family's decoder)."""
    d = decode(output, docs)
    if not d.ok:
        return label == "fail"
    decoded = [{c.written: dict(c.args)} for c in d.calls]
    dots = any(c.written != c.name for c in d.calls)
    ok, _ = bfcl.bfcl_label(
        checker,
        category=category,
        functions=list(docs),
        decoded=decoded,
        decode_failed=False,
        possible_answer=truth,
        dots_replaced=dots,
    )
    return ok == (label == "pass")


__all__ = ["EXAMPLE_IDS", "build_example", "python_text", "structured", "tagged"]
