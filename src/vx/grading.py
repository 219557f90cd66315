"""Grading samples files: every output graded with the other attempts at its task, and pass@k.

    >>> from vx import Verifier
    >>> from vx.grading import grade_samples, open_tasks
    >>> source = open_tasks("humaneval+", data_dir="../shared/data/evalplus")
    >>> v = Verifier.load("examples/humaneval/seed.vx")
    >>> g = grade_samples(v, source, ["samples.jsonl"], truth=True)
    >>> g.estimated, g.true        # {1: 0.71, 10: ...} -- pass@k from vx's verdicts / the hidden tests
    >>> g.write("verdicts.jsonl"); g.write_html("verdicts.html")

`vx grade` is a thin layer over :func:`grade_samples`. The attempts at one task are graded together,
so peer ops compare each with the others. **vx-estimated pass@k** is the unbiased estimator of Chen et
al. (2021), ``1 - C(n - c, k) / C(n, k)`` averaged over tasks, with ``c`` the attempts the verifier
passes (a final ABSTAIN counts as a pass: no known drawback was found, as everywhere in vx); the
**true pass@k** is the same estimator with ``c`` the attempts that pass the hidden tests. As evalplus,
pass@k is given for k = 1, 10, 100 where every task has at least k attempts.

The raw pass@1 is biased by exactly the verifier's errors (it passes some failures, fails some
passes). **Corrected pass@1** (:attr:`SampleGrading.corrected`) undoes that bias with the verifier's
error rates measured on labelled **anchor** items -- the family's dev split, and any ``labels`` given
(:func:`read_labels`) -- as a Bayesian prevalence estimate with a 95% interval
(:func:`vx.metrics.corrected_pass_rate`).

**Best of n** (``select=True``): every task's attempts are also ranked by the verifier
(:mod:`vx.selection`: verdict, the verifier's evidence, support among the attempts, a digest tie-break),
and the top one is the task's *chosen* attempt. **pass@1 after selection** is the share of tasks whose
chosen attempt the verifier passes; with `truth`, the true pass@1 of the chosen attempts stands beside that
of a random attempt (the raw true pass@1: an expected value, not one draw) and of the oracle (a task
counts when any of its attempts passes), with the **lift retention** (chosen − random) / (oracle − random).
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import ArgumentError, DataError
from vx.evaluation import Evaluation, evaluate, write_rows
from vx.families.pack import BUILTIN, Pack, PackError, load_pack
from vx.families.sources import Attempt, TaskSource, tasks_file
from vx.inputs import read_json_lines
from vx.metrics import Agreement, CorrectedRate, agreement, corrected_pass_rate
from vx.ops.cache import VerdictCache, item_hash
from vx.ops.item import Item, parse_label
from vx.selection import Placement
from vx.verifier import Verifier

SCHEMA = "vx-grade/1"
KS = (1, 10, 100)
#: attempts at one task beyond which `grade_samples` says, before grading, that they are held in memory together
LARGE_TASK = 10_000


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task with `n` attempts of which `c` pass: 1 - C(n-c, k) / C(n, k)
    (exact integer binomials; 1.0 when fewer than k attempts fail)."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_at_k_table(counts: Mapping[str, tuple[int, int]], ks: Iterable[int] = KS) -> dict[int, float]:
    """Mean pass@k over tasks (``task -> (n attempts, c passing)``), for each k in `ks` that every task
    has at least k attempts for (evalplus's rule)."""
    if not counts:
        return {}
    least = min(n for n, _ in counts.values())
    return {k: sum(pass_at_k(n, c, k) for n, c in counts.values()) / len(counts) for k in ks if k <= least}


# ------------------------------------------------------------------------------------------------
# task sources


def _packs(first: Sequence[Pack]) -> Iterable[Pack]:
    yield from first
    for name in BUILTIN:  # vx's own families, loaded one at a time (a missing extra only skips that one)
        try:
            yield load_pack(name)
        except PackError:
            continue


def open_tasks(spec: str, *, data_dir: str | Path | None = None, packs: Sequence[Pack] = ()) -> TaskSource:
    """The tasks `spec` names: a dataset a pack knows (``humaneval+``, ``mbpp+``...; `packs` are asked
    first, then vx's own), a dataset's own file (an evalplus release file), or a family-style
    ``tasks.jsonl``."""
    known: list[str] = []
    for pack in _packs(packs):
        if pack.sources is not None:
            found = pack.sources(spec, data_dir)
            if found is not None:
                return found if found.pack is not None else attrs.evolve(found, pack=pack)
        known += [d for d in pack.datasets if d not in known]
    if Path(spec).exists():  # tasks_file refuses what is not a regular file, naming it
        return tasks_file(spec)
    raise DataError(
        f"--tasks {spec}: neither a dataset vx knows ({', '.join(known) or 'none installed'}) nor a "
        "file (a family's tasks.jsonl, or a dataset's release file)"
    )


# ------------------------------------------------------------------------------------------------
# grading


@attrs.define
class SampleGrading:
    """Samples graded by a verifier, with pass@k (and the hidden tests' verdicts, where asked)."""

    evaluation: Evaluation
    source: TaskSource
    attempts: list[Attempt]
    truth: list[dict[str, Any]] | None = None
    samples: tuple[str, ...] = ()
    #: what the samples reader said (samples left out, and why)
    notes: tuple[str, ...] = ()
    #: the verifier's verdicts against the anchor labels (the family's dev split, `labels`), None without any
    anchor: Agreement | None = None
    #: where the anchor labels came from, one line per source ("dev split of family humaneval: 10 labels")
    anchor_sources: tuple[str, ...] = ()
    #: where each attempt ranks among its task's attempts (``select=True``), in the attempts' order
    placements: list[Placement] | None = None
    _memo: dict[Any, Any] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def items(self) -> list[Item]:
        return self.evaluation.items

    def _counts(self, passed: Sequence[bool]) -> dict[str, tuple[int, int]]:
        out: dict[str, list[int]] = {}
        for it, ok in zip(self.items, passed):
            n_c = out.setdefault(it.task, [0, 0])
            n_c[0] += 1
            n_c[1] += bool(ok)
        return {t: (n, c) for t, (n, c) in out.items()}

    @property
    def vx_passed(self) -> list[bool]:
        """Per attempt: does the verifier pass it (FAIL is the only failing verdict)?"""
        return [f.value != "fail" for f in self.evaluation.grading.finals]

    @property
    def estimated(self) -> dict[int, float]:
        """vx-estimated pass@k (the verifier's verdicts as the judge)."""
        return pass_at_k_table(self._counts(self.vx_passed))

    @property
    def true(self) -> dict[int, float] | None:
        """pass@k from the hidden tests (None without `truth`), over the tasks that have ground truth."""
        if self.truth is None:
            return None
        keep = self.truth_tasks
        return pass_at_k_table(
            {t: nc for t, nc in self._counts([t["label"] == "pass" for t in self.truth]).items() if t in keep}
        )

    @property
    def truth_tasks(self) -> set[str]:
        """The tasks whose attempts all have ground truth (every task, unless a reference cannot run)."""
        if self.truth is None:
            return set()
        lacking = {it.task for it, t in zip(self.items, self.truth) if t["label"] is None}
        return {it.task for it in self.items} - lacking

    @property
    def estimated_on_truth(self) -> dict[int, float]:
        """vx-estimated pass@k over the tasks the hidden tests grade (what `true` is compared with)."""
        keep = self.truth_tasks if self.truth is not None else {it.task for it in self.items}
        return pass_at_k_table({t: nc for t, nc in self._counts(self.vx_passed).items() if t in keep})

    def _corrected(self, keep: set[str] | None) -> CorrectedRate | None:
        key = None if keep is None else frozenset(keep)
        if key not in self._memo:  # a Monte Carlo of a few 10^6 numbers: once per grading
            self._memo[key] = self._corrected_now(keep)
        return self._memo[key]

    def _corrected_now(self, keep: set[str] | None) -> CorrectedRate | None:
        if self.anchor is None or self.anchor.n == 0:
            return None
        counts = {t: nc for t, nc in self._counts(self.vx_passed).items() if keep is None or t in keep}
        if not counts:
            return None
        raw = pass_at_k_table(counts, (1,))[1]
        return corrected_pass_rate(raw, sum(n for n, _ in counts.values()), self.anchor)

    @property
    def corrected(self) -> CorrectedRate | None:
        """pass@1 corrected for the verifier's errors on the anchor labels, with its 95% interval (None
        without anchor labels); over every task graded."""
        return self._corrected(None)

    @property
    def corrected_on_truth(self) -> CorrectedRate | None:
        """:attr:`corrected` over the tasks the hidden tests grade (what `true` is compared with)."""
        return self._corrected(self.truth_tasks if self.truth is not None else None)

    @property
    def no_truth(self) -> dict[str, str]:
        """Tasks without ground truth, with the reason."""
        return {it.task: str(t.get("why")) for it, t in zip(self.items, self.truth or []) if t["label"] is None}

    @property
    def agreement(self) -> Agreement | None:
        """The verifier's verdicts against the hidden tests (None without `truth`)."""
        return self.evaluation.metrics if self.truth is not None else None

    @property
    def per_task(self) -> dict[str, int]:
        """How many attempts each task has (the same for all tasks when pass@k goes past k=1)."""
        return {t: n for t, (n, _) in self._counts(self.vx_passed).items()}

    # ---------------------------------------------------------------- best of n
    @property
    def chosen(self) -> list[int]:
        """The index of every task's chosen attempt (its rank 1), in the order the tasks first appear
        (empty without ``select=True``)."""
        if self.placements is None:
            return []
        return [i for i, p in enumerate(self.placements) if p.rank == 1]

    @property
    def selected_estimated(self) -> float | None:
        """pass@1 after selection, as the verifier estimates it: the share of tasks whose chosen attempt it
        does not fail (None without ``select=True``)."""
        if self.placements is None:
            return None
        finals = self.evaluation.grading.finals
        chosen = self.chosen
        return sum(finals[i].value != "fail" for i in chosen) / len(chosen) if chosen else None

    def selection_truth(self) -> dict[str, float] | None:
        """Over the tasks the hidden tests grade: the true pass@1 of the chosen attempts (``selected``), of a
        random attempt (``random``, the expected value: the raw true pass@1), of the oracle (``oracle``: the
        share of tasks with a passing attempt), and the lift retention (selected − random) / (oracle −
        random) (NaN when no task leaves room). None without truth or selection."""
        if self.truth is None or self.placements is None:
            return None
        keep = self.truth_tasks
        ok = [t["label"] == "pass" for t in self.truth]
        by_task: dict[str, list[int]] = {}
        for i, it in enumerate(self.items):
            if it.task in keep:
                by_task.setdefault(it.task, []).append(i)
        if not by_task:
            return None
        chosen = {self.items[i].task: i for i in self.chosen}
        sel = [float(ok[chosen[t]]) for t in by_task]
        rand = [sum(ok[i] for i in rows) / len(rows) for rows in by_task.values()]
        orc = [float(any(ok[i] for i in rows)) for rows in by_task.values()]
        room = sum(orc) - sum(rand)
        return {
            "tasks": len(by_task),
            "selected": sum(sel) / len(sel),
            "random": sum(rand) / len(rand),
            "oracle": sum(orc) / len(orc),
            "retention": (sum(sel) - sum(rand)) / room if room > 1e-12 else float("nan"),
        }

    def selection_rows(self) -> list[dict[str, Any]]:
        """One row per task: its chosen attempt as a samples line (``task_id``, ``solution``) with where it
        came from, its rank among the task's attempts, verdict, evidence score, support and the reason
        (and ``truth`` with the hidden tests)."""
        if self.placements is None:
            return []
        out = []
        for i in self.chosen:
            it, att, p = self.items[i], self.attempts[i], self.placements[i]
            row: dict[str, Any] = {
                "task_id": it.task,
                "solution": it.output,
                "id": it.id,
                "model": att.meta.get("model", ""),
                "source_line": att.meta.get("source_line", ""),
                "rank": p.rank,
                "of": p.of,
                "verdict": p.verdict.value,
                "score": round(float(p.score), 6),
                "support": p.support,
                "compared": p.compared,
                "reason": p.reason,
            }
            if self.truth is not None:
                row["truth"] = self.truth[i]["label"]
            out.append(row)
        return out

    def write_selection(self, path: str | Path) -> Path:
        """The chosen attempts as a JSON-lines samples file (:meth:`selection_rows`): one line per task,
        readable again by `vx grade` and evalplus (``task_id``, ``solution``)."""
        from vx.text import json_dumps

        path = Path(path)
        path.write_text("".join(json_dumps(r) + "\n" for r in self.selection_rows()), encoding="utf-8")
        return path

    # ---------------------------------------------------------------- rows and files
    def rows(self) -> list[dict[str, Any]]:
        """One row per attempt: the evaluation's row (id, task, verdict, every op's verdict and message),
        with ``truth`` (the hidden tests' verdict, "" without) and where the attempt came from."""
        out = []
        for row, att, i in zip(self.evaluation.rows(), self.attempts, range(len(self.attempts))):
            row = {k: v for k, v in row.items() if k not in ("split", "label")}
            truth = self.truth[i] if self.truth is not None else None
            extra = {
                "model": att.meta.get("model", ""),
                "source_line": att.meta.get("source_line", ""),
                "truth": truth["label"] if truth else None,
                "truth_detail": _why(truth.get("why")) if truth else None,
            }
            out.append({"id": row.pop("id"), "task": row.pop("task"), "verdict": row.pop("verdict"), **extra, **row})
        return out

    def write(self, path: str | Path, *, escape_formulas: bool = True) -> Path:
        """The rows as .csv, .jsonl or .parquet (by the suffix; `escape_formulas`: see
        :func:`vx.evaluation.write_rows`)."""
        rows = self.rows()
        columns = list(rows[0]) if rows else ["id", "task", "verdict", "model", "source_line", "truth"]
        return write_rows(rows, path, columns=columns, escape_formulas=escape_formulas)

    def summary(self) -> dict[str, Any]:
        agr = self.agreement
        per_task = sorted(set(self.per_task.values()))
        out: dict[str, Any] = {
            "tasks": self.source.name,
            "tasks_version": self.source.version,
            "samples": list(self.samples),
            "attempts": len(self.items),
            "tasks_graded": len(self.per_task),
            "attempts_per_task": per_task,
            "expression": self.evaluation.verifier.text,
            "pass_at_k": {"estimated": _keys(self.estimated), "true": _keys(self.true)},
            "tasks_without_truth": self.no_truth,
            "notes": list(self.notes),
            "verdicts": _count(f.value for f in self.evaluation.grading.finals),
        }
        if self.no_truth:
            out["pass_at_k"]["estimated_on_truth_tasks"] = _keys(self.estimated_on_truth)
        if agr is not None:
            out["agreement"] = {
                **agr.as_dict(),
                "pass_precision": agr.pass_precision,
                "truth": self.source.truth_description,
            }
        corrected = self.corrected
        out["corrected_pass_at_1"] = corrected.as_dict() if corrected is not None else None
        if corrected is not None and self.no_truth:
            out["corrected_pass_at_1_on_truth_tasks"] = self.corrected_on_truth.as_dict()  # type: ignore[union-attr]
        out["anchor"] = {
            "sources": list(self.anchor_sources),
            **(self.anchor.as_dict() if self.anchor is not None else {"n": 0}),
        }
        if self.placements is not None:
            out["selection"] = {
                "pass_at_1_after_selection": self.selected_estimated,
                "true": self.selection_truth(),
                "chosen": len(self.chosen),
            }
        return out

    def as_dict(self) -> dict[str, Any]:
        """Everything, as plain data (schema vx-grade/1): the summary and one row per attempt."""
        return {"schema": SCHEMA, **self.summary(), "items": self.rows()}

    def page_document(self) -> dict[str, Any]:
        """The evaluation page's document (vx-eval/1), titled for the samples, with the pass@k table."""
        doc = self.evaluation.as_dict()
        names = ", ".join(Path(s).name for s in self.samples) or "samples"
        doc.update(
            {
                "title": f"vx grade — {names} · {self.source.name}",
                "split": "samples",
                "family": self.source.name,
                "pass_at_k": self.summary()["pass_at_k"],
                "label_name": "hidden tests" if self.truth is not None else None,
            }
        )
        return doc

    def write_html(self, path: str | Path) -> Path:
        from vx.pages import eval_page

        path = Path(path)
        path.write_text(eval_page(self.page_document()), encoding="utf-8")
        return path


def _keys(table: Mapping[int, float] | None) -> dict[str, float] | None:
    return None if table is None else {f"pass@{k}": v for k, v in table.items()}


def _count(values: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _why(why: Any) -> str:
    if not why:
        return ""
    if isinstance(why, Mapping):
        return f"{why.get('phase', '')} input {why.get('index', '?')}: {why.get('reason', '')}".strip()
    return str(why)


def attempt_items(attempts: Sequence[Attempt]) -> list[Item]:
    """Items for attempts: ids ``<task>#<k>``, k counting each task's attempts from 0 in file order."""
    seen: dict[str, int] = {}
    items = []
    for att in attempts:
        k = seen.get(att.task, 0)
        seen[att.task] = k + 1
        items.append(Item(id=f"{att.task}#{k}", task=att.task, output=att.output, meta=dict(att.meta)))
    return items


def read_labels(path: str | Path) -> list[dict[str, Any]]:
    """Anchor labels from a JSON-lines file, one labelled output a line: ``{"id", "label"}`` labels a
    sample being graded (its id as ``vx grade -o`` writes it, ``<task>#<k>``), ``{"task", "output",
    "label"}`` any output at one of the tasks (graded by the verifier for the anchor only). A label is
    ``"pass"``, ``"fail"`` or a probability of pass (thresholded at 0.5)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"--labels {path}: no such file")
    rows: list[dict[str, Any]] = []
    for n, row, _ in read_json_lines(path, "labels file", error=DataError):
        if not isinstance(row, dict) or "label" not in row:
            raise DataError(
                f'{path}:{n}: a labels line is an object with a "label" and an "id" (a graded '
                'sample\'s id, <task>#<k>) or a "task" and an "output"'
            )
        try:
            label = parse_label(row["label"])
        except ValueError as exc:
            raise DataError(f"{path}:{n}: {exc}") from None
        if "output" in row:
            if not isinstance(row.get("task"), str):
                raise DataError(f'{path}:{n}: a labelled output needs the "task" it answers (a task id)')
            rows.append(
                {
                    "task": row["task"],
                    "output": row["output"],
                    "label": label,
                    "where": f"{path}:{n}",
                    "id": str(row.get("id") or f"{path.name}:{n}"),
                }
            )
        elif isinstance(row.get("id"), str):
            rows.append({"id": row["id"], "label": label, "where": f"{path}:{n}"})
        else:
            raise DataError(f'{path}:{n}: give the "id" of a graded sample (<task>#<k>) or a "task" and an "output"')
    if not rows:
        raise DataError(f"--labels {path}: no labels in it")
    return rows


def distinct_labels(
    labels: Sequence[Mapping[str, Any]], dev: Sequence[Item] = ()
) -> tuple[list[Mapping[str, Any]], str]:
    """Every labelled sample counted once: `labels` (rows of :func:`read_labels`, from any number of files)
    without the rows that label again a sample labelled before -- the same graded sample (``id``), or the same
    output at the same task (``task``, ``output``), also one of the family's `dev` items -- and a line saying
    how many were left out ("" when none). One sample labelled 1,000 times would otherwise weigh 1,000 times
    in the corrected pass rate. Two rows giving one sample different labels are a DataError naming both."""
    seen: dict[tuple[str, ...], tuple[float, str]] = {}
    for it in dev:
        if it.label is not None:
            seen.setdefault(("output", str(it.task), item_hash({"id": str(it.task)}, it.output)), (it.label, "dev"))
    kept: list[Mapping[str, Any]] = []
    dropped: list[str] = []
    for row in labels:
        if "output" in row:
            key: tuple[str, ...] = ("output", str(row["task"]), item_hash({"id": str(row["task"])}, row["output"]))
        else:
            key = ("id", str(row["id"]))
        first = seen.get(key)
        if first is None:
            seen[key] = (float(row["label"]), str(row.get("where", "?")))
            kept.append(row)
            continue
        if (first[0] >= 0.5) != (float(row["label"]) >= 0.5) or abs(first[0] - float(row["label"])) > 1e-9:
            what = f"sample {row['id']!r}" if key[0] == "id" else f"one output at task {row['task']!r}"
            where = "the family's dev split" if first[1] == "dev" else first[1]
            raise DataError(
                f"--labels {row.get('where', '?')}: {what} is labelled {_said(float(row['label']))} here and "
                f"{_said(first[0])} in {where}; a sample has one label: remove the wrong one"
            )
        dropped.append(str(row.get("where", "?")))
    if not dropped:
        return kept, ""
    return kept, (f"{len(dropped)} label(s) of samples already labelled counted once (the first at {dropped[0]})")


def _said(label: float) -> str:
    return {1.0: "pass", 0.0: "fail"}.get(label, f"{label:g}")


def _sum_agreements(parts: Sequence[Agreement]) -> Agreement:
    return Agreement(
        sum(a.n for a in parts),
        sum(a.tp for a in parts),
        sum(a.fp for a in parts),
        sum(a.tn for a in parts),
        sum(a.fn for a in parts),
        sum(a.abstained for a in parts),
    )


def anchor_agreement(
    verifier: Verifier,
    evaluation: Evaluation,
    source: TaskSource,
    *,
    family: bool = True,
    labels: Sequence[Mapping[str, Any]] = (),
    jobs: int | None = None,
    timeout: float = 10.0,
    cache: VerdictCache | None = None,
) -> tuple[Agreement | None, tuple[str, ...]]:
    """The verifier's verdicts against the anchor labels: its family's dev split (`family`) and the
    `labels` rows (:func:`read_labels`; a row with an ``id`` labels a sample of `evaluation`, one with an
    ``output`` is graded here, the outputs at one task together). Returns the summed confusion counts
    (None when there is no label) and one line per source."""
    parts: list[Agreement] = []
    sources: list[str] = []
    fam = verifier.family
    if family and fam is not None:
        dev = fam.split("dev")
        if any(it.label is not None for it in dev):
            dev_eval = evaluate(verifier, dev, jobs=jobs, timeout=timeout, cache=cache, progress=False)
            if dev_eval.metrics is not None:
                parts.append(dev_eval.metrics)
                sources.append(f"dev split of family {fam.name}: {dev_eval.metrics.n} labels")
    labels, repeated = distinct_labels(labels, fam.split("dev").items if family and fam is not None else ())
    if repeated:
        sources.append(repeated)
    by_id = [r for r in labels if "output" not in r]
    if by_id:
        index = {it.id: i for i, it in enumerate(evaluation.items)}
        finals = evaluation.grading.finals
        unknown = [r for r in by_id if r["id"] not in index]
        if unknown:
            some = ", ".join(f"{r['id']!r} ({r['where']})" for r in unknown[:3])
            raise DataError(
                f"--labels: {len(unknown)} label(s) name no graded sample: {some}; ids are <task>#<k> "
                f"as vx grade -o writes them (e.g. {evaluation.items[0].id!r})"
            )
        parts.append(agreement([finals[index[r["id"]]] for r in by_id], [r["label"] for r in by_id]))
        sources.append(f"labels of graded samples: {len(by_id)}")
    outputs = [r for r in labels if "output" in r]
    if outputs:
        missing = [r for r in outputs if r["task"] not in source.tasks]
        if missing:
            raise DataError(f"--labels {missing[0]['where']}: {missing[0]['task']!r} is not a task of {source.name}")
        items = [
            Item(id=f"label:{i}:{r['id']}", task=r["task"], output=r["output"], label=r["label"])
            for i, r in enumerate(outputs)
        ]
        ev = evaluate(
            verifier, items, tasks=source.tasks, jobs=jobs, timeout=timeout, cache=cache, progress=False, peers={}
        )
        if ev.metrics is not None:
            parts.append(ev.metrics)
            sources.append(f"labelled outputs graded for the anchor: {ev.metrics.n}")
    return (_sum_agreements(parts) if parts else None), tuple(sources)


def grade_samples(
    verifier: Verifier,
    source: TaskSource,
    samples: Sequence[str | Path],
    *,
    truth: bool = False,
    jobs: int | None = None,
    timeout: float = 10.0,
    cache: VerdictCache | None = None,
    progress: Any = None,
    executor: Any = None,
    on_phase: Callable[[str], None] | None = None,
    anchor: bool = True,
    labels: Sequence[Mapping[str, Any]] = (),
    select: bool = False,
) -> SampleGrading:
    """Grade every attempt in the `samples` files against `source`'s tasks (the attempts at one task
    together, so peer ops compare them), then -- with `truth` -- run the hidden tests on each.

    The anchor for the corrected pass@1: the verifier's family's dev labels (`anchor`; off: only
    `labels`) and `labels` (rows of :func:`read_labels`).

    Resumable: verdicts go to the verdict `cache` as they are computed and hidden-test results to
    the source's own store, so a second call after an interruption redoes only what was missing.
    `progress` as for :func:`vx.ops.apply.apply_ops`; `on_phase(text)` hears each phase start.
    `select`: also rank every task's attempts and choose one (best of n; the module docstring)."""
    if isinstance(samples, (str, bytes, os.PathLike)):
        raise ArgumentError(
            f"samples must be a list of samples files, not one {type(samples).__name__}: [{os.fspath(samples)!r}]"
        )
    if truth and source.truth is None:
        raise DataError(
            f"--truth: the tasks {source.name} have no hidden tests (a dataset such as humaneval+ or mbpp+ has)"
        )
    say = on_phase or (lambda text: None)
    attempts = source.read_samples(list(samples))
    if not attempts:
        raise DataError(f"{', '.join(map(str, samples))}: no samples to grade")
    items = attempt_items(attempts)
    truths = None
    if truth:
        grader = source.truth()  # type: ignore[misc]
        say(f"running the hidden tests on {len(items)} attempts")
        from vx.ops.progress import reporter_for

        reporter = reporter_for(progress)
        pairs = [(it.task, it.output) for it in items]
        if reporter is None:
            truths = grader(pairs, None)
        else:
            with reporter.task(f"hidden tests, {len(items)} attempts", len(items)) as advance:
                truths = grader(pairs, advance)
        items = [
            attrs.evolve(it, label=None if t["label"] is None else float(t["label"] == "pass"))
            for it, t in zip(items, truths)
        ]
    per_task = Counter(it.task for it in items)
    say(f"grading {len(items)} attempts at {len(per_task)} tasks")
    crowded = [(task, n) for task, n in per_task.most_common(3) if n > LARGE_TASK]
    if crowded:
        say(
            f"{', '.join(f'{n:,} attempts at {task}' for task, n in crowded)}: the attempts at one task are graded "
            "together (peer ops compare them), so memory grows with the largest task (about 5 KB an attempt on "
            "HumanEval); "
            "split the samples file by task, or subsample it, to bound it"
        )
    ev = evaluate(
        verifier,
        items,
        tasks=source.tasks,
        jobs=jobs,
        timeout=timeout,
        cache=cache,
        progress=progress,
        peers={},
        executor=executor,
        rank=select,
    )
    ev.family, ev.split = source.name, "samples"
    placements = verifier.placements(ev.grading, items, tasks=source.tasks) if select else None
    if anchor or labels:
        say("grading the anchor's labelled items")
    agr, anchor_sources = anchor_agreement(
        verifier, ev, source, family=anchor, labels=labels, jobs=jobs, timeout=timeout, cache=cache
    )
    return SampleGrading(
        ev,
        source,
        list(attempts),
        truths,
        tuple(str(s) for s in samples),
        tuple(getattr(attempts, "notes", ())),
        agr,
        anchor_sources,
        placements,
    )


def verifier_for(vx_path: str | Path, source: TaskSource, family_dir: str | Path | None = None) -> Verifier:
    """The verifier of a .vx file for grading `source`'s tasks: with its family's pool when the file
    lives in a family (or `family_dir` names one), else with the pool of the pack that knows the tasks."""
    from vx.dsl.parse import parse
    from vx.dsl.vxfile import read_text
    from vx.families.family import FamilyError, find_family_dir

    try:
        where = family_dir or find_family_dir(vx_path)
    except FamilyError:
        where = None
    if where is not None:
        return Verifier.load(vx_path, where)
    pack = source.pack
    if pack is None:
        raise DataError(
            f"{vx_path}: no family.toml above it, and the tasks {source.name} name no op pack; "
            "name the family whose ops the verifier uses (--family DIR)"
        )
    pool = pack.pool()
    return Verifier(parse(read_text(vx_path), filename=str(vx_path), known_ops=pool.names), pool, source.tasks)


__all__ = [
    "KS",
    "SCHEMA",
    "SampleGrading",
    "anchor_agreement",
    "attempt_items",
    "distinct_labels",
    "grade_samples",
    "open_tasks",
    "pass_at_k",
    "pass_at_k_table",
    "read_labels",
    "verifier_for",
]
