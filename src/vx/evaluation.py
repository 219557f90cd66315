"""Evaluating a verifier on many items: agreement, per-op figures, one row per item, exports.

    >>> from vx import Verifier, evaluate
    >>> ev = evaluate(Verifier.load("examples/humaneval/seed.vx"), "dev")
    >>> ev.metrics.accuracy, ev.metric("kappa")
    >>> ev.rows()[0]          # {"id", "task", "split", "label", "verdict", "verdict:<op>", "message:<op>", ...}
    >>> ev.to_pandas()        # the same rows as a DataFrame (pandas installed)
    >>> ev.write("dev.csv")   # .csv, .jsonl or .parquet (pyarrow installed)
    >>> ev.write_html("dev.html")   # a self-contained page: every item, filters, failure capsules

`vx eval` is a thin layer over :func:`evaluate`; its ``--json`` output is :meth:`Evaluation.as_dict`
(schema ``vx-eval/1``), which ``vx report`` turns into the same page.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError, MissingDependency
from vx.families.family import Family, Split
from vx.inputs import parse_json_lines, read_input_text
from vx.metrics import Agreement, OpSummary, agreement, op_summary
from vx.ops.cache import VerdictCache
from vx.ops.item import Item
from vx.text import json_dumps
from vx.verifier import Grading, Verifier

SCHEMA = "vx-eval/1"
EXPORT_FORMATS = (".csv", ".jsonl", ".parquet")
#: --metric names → Agreement attributes
METRICS = {
    "accuracy": "accuracy",
    "balanced": "balanced_accuracy",
    "recall-weighted": "recall_weighted",
    "kappa": "kappa",
}
_VERDICT_NAMES = {1: "drawback", 0: "clean", -1: "abstain"}
_SURROGATE = re.compile("[\ud800-\udfff]")


@attrs.define
class Evaluation:
    """A verifier graded on a list of items (a split of its family, or items an agent loop built)."""

    verifier: Verifier
    items: list[Item]
    grading: Grading
    split: str | None = None
    family: str | None = None
    fail_weight: float = 2.0
    metrics: Agreement | None = None  # None when no item is labeled
    op_stats: list[OpSummary] = attrs.field(factory=list)

    # ---------------------------------------------------------------- figures
    def metric(self, name: str) -> float:
        """One agreement figure by its command-line name: accuracy, balanced, recall-weighted, kappa."""
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}")
        if self.metrics is None:
            raise ValueError("no item is labeled: there is no agreement to measure")
        return float(getattr(self.metrics, METRICS[name]))

    @property
    def op_names(self) -> list[str]:
        """The ops that were run, root first (the columns of every row)."""
        return list(self.grading.matrix.op_names)

    def _errors(self) -> dict[tuple[str, str], str]:
        return {(f.item, f.op): f.error for f in self.grading.application.failures}

    # ---------------------------------------------------------------- rows
    def _op_table(self) -> tuple[Any, dict[tuple[str, str], str], list[str], Any]:
        """(the op application, its errors, the op names, the items x ops verdict codes)."""
        app = self.grading.application
        return app, self._errors(), list(self.op_names), app.matrix.to_array()

    def rows(self) -> list[dict[str, Any]]:
        """One flat dict per item: id, task, split, label ("pass" / "fail" / None), verdict (the final
        verdict), then per op (root first) ``verdict:<op>`` (drawback / clean / abstain) and
        ``message:<op>`` (its message; "error: …" when the op failed and abstained)."""
        app, errors, names, arr = self._op_table()
        out = []
        for r, (it, final) in enumerate(zip(self.items, self.grading.finals)):
            row: dict[str, Any] = {
                "id": it.id,
                "task": it.task,
                "split": self.split,
                "label": it.hard_label(),
                "verdict": final.value,
            }
            for c, op in enumerate(names):
                row[f"verdict:{op}"] = _VERDICT_NAMES[int(arr[r, c])]
                message = app.message(it.id, op)
                error = errors.get((it.id, op))
                row[f"message:{op}"] = message or (f"error: {error}" if error else "")
            out.append(row)
        return out

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas: pip install pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingDependency(
                "to_pandas() needs pandas: pip install pandas (or pip install 'vx-verifiers[export]')"
            ) from exc
        return pd.DataFrame(self.rows(), columns=self._columns())

    def _columns(self) -> list[str]:
        return ["id", "task", "split", "label", "verdict"] + [
            f"{kind}:{op}" for op in self.op_names for kind in ("verdict", "message")
        ]

    def write(self, path: str | Path, *, escape_formulas: bool = True) -> Path:
        """Write the rows to `path`; the format follows its suffix: .csv, .jsonl or .parquet
        (`escape_formulas`: see :func:`write_rows`)."""
        return write_rows(self.rows(), path, columns=self._columns(), escape_formulas=escape_formulas)

    # ---------------------------------------------------------------- the full record
    def items_detail(self) -> list[dict[str, Any]]:
        """Per item: its row's facts plus every op's verdict, message and error, the drawbacks on a
        path to FAIL, the explained expression and the output (the failure capsule)."""
        app, errors, names, arr = self._op_table()
        out = []
        for r, (it, final) in enumerate(zip(self.items, self.grading.finals)):
            ops = {}
            for c, op in enumerate(names):
                entry: dict[str, Any] = {"verdict": _VERDICT_NAMES[int(arr[r, c])]}
                if app.message(it.id, op):
                    entry["message"] = app.message(it.id, op)
                if (it.id, op) in errors:
                    entry["error"] = errors[(it.id, op)]
                ops[op] = entry
            grade = self.verifier.explain(it, self.grading)
            fired = [op for op in names if ops[op]["verdict"] == "drawback"]
            out.append(
                {
                    "id": it.id,
                    "task": it.task,
                    "label": it.hard_label(),
                    "verdict": final.value,
                    "fired": [{"op": op, "message": ops[op].get("message", "")} for op in fired],
                    "drawbacks": [{"op": o, "message": m} for o, m in grade.drawbacks],
                    "ops": ops,
                    "trace": grade.trace.as_dict(),
                    "output": it.output if isinstance(it.output, str) else _json_text(it.output),
                }
            )
        return out

    def as_dict(self) -> dict[str, Any]:
        """The whole evaluation as plain data (schema vx-eval/1): what `vx eval --json` prints and
        `vx report` reads."""
        app = self.grading.application
        tiers = {o.name: o.tier for o in self.verifier.pool}
        failures = []
        for (op_name, kind), fs in sorted(app.failure_summary().items()):
            failures.append(
                {
                    "op": op_name,
                    "kind": kind,
                    "count": len(fs),
                    "example_item": fs[0].item,
                    "example_error": fs[0].error,
                }
            )
        return {
            "schema": SCHEMA,
            "family": self.family,
            "split": self.split,
            "expression": self.verifier.text,
            "root": self.verifier.pool.root_name,
            "n": len(self.items),
            "metrics": self.metrics.as_dict() if self.metrics else None,
            "ops": [{**attrs.asdict(s), "tier": tiers.get(s.op)} for s in self.op_stats],
            "environment": self.verifier.pool.describe_environment(),
            "items": self.items_detail(),
            "failures": failures,
            "op_calls": app.calls,
            "cache_hits": app.cache_hits,
            "shared": app.shared,
            "seconds": app.seconds,
        }

    # ---------------------------------------------------------------- pages
    def to_html(self) -> str:
        """A self-contained page (offline, no CDN): every item, filterable, with failure capsules."""
        from vx.pages import eval_page

        return eval_page(self.as_dict())

    def write_html(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.to_html(), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        """Notebook display: agreement, ops, and the first items (with their capsules)."""
        from vx.pages import eval_body, notebook

        return notebook(eval_body(self.as_dict(), max_items=25, interactive=False))

    def __repr__(self) -> str:
        figs = f"accuracy {self.metrics.accuracy:.3f}" if self.metrics and self.metrics.n else "unlabeled"
        return f"<Evaluation {self.family or '?'}/{self.split or 'items'}: {len(self.items)} items, {figs}>"


def _json_text(value: Any) -> str:
    try:
        return json_dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def evaluate(
    verifier: Verifier,
    items: str | Split | Sequence[Item] = "dev",
    *,
    family: Family | None = None,
    tasks: Mapping[str, Mapping[str, Any]] | None = None,
    jobs: int | None = None,
    timeout: float = 10.0,
    cache: VerdictCache | None = None,
    progress: Any = None,
    **grade_kwargs: Any,
) -> Evaluation:
    """Grade `items` (a split name of the verifier's family, a Split, or a list of Items) and measure
    agreement with their labels (items without a label are left out of the figures)."""
    fam = family or verifier.family
    split_name: str | None = None
    if isinstance(items, str):
        if fam is None:
            raise ValueError("a split name needs the verifier's family (Verifier.load finds it)")
        split_name = items
        items = fam.labeled(items)
    if isinstance(items, Split):
        split_name = split_name or items.name
        if not items.items:  # a split with nothing in it is a mistake, not a perfect score over 0 items
            where = f"{items.path}: " if items.path is not None else ""
            raise DataError(
                f"{where}the {split_name} split is empty: there is nothing to evaluate; add items to it "
                "(or evaluate another split with --dataset)"
            )
        items = list(items.items)
    items = list(items)
    grading = verifier.grade_items(
        items, tasks=tasks, jobs=jobs, timeout=timeout, cache=cache, progress=progress, **grade_kwargs
    )
    labels = [it.label for it in items]
    fail_weight = float((fam.objective if fam is not None else {}).get("fail_weight", 2.0))
    labeled = any(lab is not None for lab in labels)
    metrics = agreement(grading.finals, labels, fail_weight=fail_weight) if labeled else None
    stats = op_summary(grading.matrix.to_array(), grading.matrix.op_names, labels if labeled else None)
    return Evaluation(
        verifier,
        items,
        grading,
        split=split_name,
        family=fam.name if fam is not None else None,
        fail_weight=fail_weight,
        metrics=metrics,
        op_stats=stats,
    )


# ------------------------------------------------------------------------------------------------
# writing and reading rows


def _cell(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)  # a lone surrogate cannot be written as UTF-8
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


#: What a spreadsheet reads as the start of a formula (or of a DDE command): a CSV cell beginning with one
#: of these is written with a leading apostrophe, unless ``escape_formulas=False`` (`--csv-formulas`).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any, escape_formulas: bool = True) -> Any:
    """A CSV cell: text a spreadsheet would run as a formula (`=HYPERLINK(...)`, `@SUM(...)`, a
    candidate's `-2+3`...) gets a leading ``'`` so it shows as text (OWASP's CSV injection advice)."""
    if escape_formulas and isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def write_rows(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    columns: Sequence[str] | None = None,
    escape_formulas: bool = True,
) -> Path:
    """Write rows (dicts with the same keys) as .csv, .jsonl or .parquet, by the suffix of `path`.

    In a .csv file, a cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (what
    a spreadsheet runs as a formula: outputs and op messages quote candidates) gets a leading ``'``;
    ``escape_formulas=False`` writes such cells as they are (.jsonl and .parquet are never changed)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in EXPORT_FORMATS:
        raise DataError(
            f"{path}: unknown export format {path.suffix or '(none)'!r}; use one of {', '.join(EXPORT_FORMATS)}"
        )
    columns = list(columns) if columns is not None else (list(rows[0]) if rows else ["id"])
    clean = [{k: _cell(row.get(k)) for k in columns} for row in rows]
    if suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise MissingDependency(
                f"{path}: writing .parquet needs pyarrow: pip install pyarrow (or pip install "
                "'vx-verifiers[export]'); .csv and .jsonl need nothing"
            ) from exc
        schema = pa.schema([(c, pa.string()) for c in columns])
        pq.write_table(pa.Table.from_pylist(clean, schema=schema), path)
        return path
    if suffix == ".csv":
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(
                {k: ("" if v is None else csv_cell(v, escape_formulas)) for k, v in row.items()} for row in clean
            )
        return path
    with open(path, "w", encoding="utf-8") as handle:
        for row in clean:
            handle.write(json_dumps(row) + "\n")
    return path


def load_eval_document(path: str | Path) -> dict[str, Any]:
    """An evaluation for `vx report`: a vx-eval/1 JSON file (`vx eval --json`) or a .jsonl export
    (`vx eval -o FILE.jsonl`), as the plain data the page is built from."""
    path = Path(path)
    text = read_input_text(path, "evaluation", error=DataError)  # a regular file of bounded size
    stripped = text.lstrip()
    if stripped.startswith("{") and path.suffix.lower() != ".jsonl":
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise DataError(f"{path}: not JSON ({exc})") from None
        if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
            found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
            raise DataError(
                f'{path}: not a vx evaluation (expected "schema": "{SCHEMA}", found {found!r}); '
                "write one with vx eval ... --json > FILE.json"
            )
        if not isinstance(doc.get("items"), list):
            raise DataError(f'{path}: "items" must be a list')
        return doc
    rows = []
    for number, row, _ in parse_json_lines(text, path, "evaluation export", error=DataError):
        if not isinstance(row, dict) or "id" not in row or "verdict" not in row:
            raise DataError(
                f'{path}:{number}: not an exported row (needs "id" and "verdict"; '
                "write them with vx eval ... -o FILE.jsonl)"
            )
        rows.append(row)
    doc = document_from_rows(rows)
    doc["title"] = f"vx eval — {path.name}" + (f" · {doc['split']}" if doc.get("split") else "")
    return doc


def document_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A page document from exported rows (no trace or output: they are not exported)."""
    ops: list[str] = []
    for row in rows:
        for key in row:
            if key.startswith("verdict:") and key[8:] not in ops:
                ops.append(key[8:])
    items: list[dict[str, Any]] = []
    for row in rows:
        entry = {
            op: {"verdict": row.get(f"verdict:{op}"), "message": row.get(f"message:{op}") or ""}
            for op in ops
            if f"verdict:{op}" in row
        }
        fired = [op for op in ops if (entry.get(op) or {}).get("verdict") == "drawback"]
        items.append(
            {
                "id": row.get("id"),
                "task": row.get("task"),
                "label": row.get("label") or None,
                "verdict": row.get("verdict"),
                "ops": entry,
                "drawbacks": [{"op": op, "message": entry[op]["message"]} for op in fired],
            }
        )
    labels = [None if it["label"] is None else (0.0 if it["label"] == "fail" else 1.0) for it in items]
    metrics = None
    if any(lab is not None for lab in labels):
        try:
            metrics = agreement([it["verdict"] for it in items], labels).as_dict()
        except ValueError:
            metrics = None
    splits = sorted({str(r.get("split")) for r in rows if r.get("split")})
    return {
        "schema": SCHEMA,
        "family": None,
        "split": ", ".join(splits) or None,
        "expression": "",
        "n": len(items),
        "metrics": metrics,
        "ops": [{"op": op} for op in ops],
        "items": items,
        "root": ops[0] if ops else None,
    }


__all__ = [
    "EXPORT_FORMATS",
    "FORMULA_STARTS",
    "csv_cell",
    "Evaluation",
    "METRICS",
    "SCHEMA",
    "document_from_rows",
    "evaluate",
    "load_eval_document",
    "write_rows",
]
