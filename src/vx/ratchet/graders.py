"""Graders of the skill loop's attempts, and the family's ground truth.

Every grader turns (task id, output) pairs into `Judgement`s: passed or not, a score in [0, 1] and the
named checks that failed with their messages (what a failure capsule carries).

* `VerifierGrader` — any .vx verifier (ABSTAIN counts as PASS: no known drawback was found); the checks
  are the ops on the path to FAIL, with their messages.
* `AlwaysPass` — the collapsed control: passes everything, names nothing.
* `GroundTruth` — the family's strongest reference, rebuilt at ratchet time (never stored in the family
  directory, never handed to the verifier loop), from one of:

  - ``[ratchet] ground_truth = "file.py:function"`` in family.toml (relative to the family directory) or
    ``"module:function"``, called as ``function(task, output)``;
  - the family's pack hook (`vx.families.pack.RatchetHooks.ground_truth`: hidden tests, execution
    comparison, a rubric — each family says how, in its own folder), called with the data directories
    (``--data-dir``, then ``$VX_DATA_DIR``).

  Either returns, per output, a bool, a score in [0, 1] (a pass at 0.5 or more) or
  ``{"passed": …, "score": …, "checks": [[name, message], …]}``; `judgement` reads all three. Grades are
  memoised per (task, output): a frozen solver repeats itself, and ground truth may cost a sandboxed run.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.families.pack import GroundTruthUnavailable
from vx.ratchet.config import RatchetError
from vx.ratchet.tasks import hooks_of


@attrs.frozen
class Judgement:
    passed: bool
    score: float
    checks: tuple[tuple[str, str], ...] = ()
    verdict: str = ""  # "pass" | "fail" | "abstain" (verifiers) — "" means passed/failed says it all

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "score": self.score,
            "checks": [list(c) for c in self.checks],
            "verdict": self.verdict or ("pass" if self.passed else "fail"),
        }


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
        grading = self.verifier.grade_items(
            items, jobs=self.jobs, timeout=self.timeout, cache=self.cache, progress=False
        )
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


def judgement(result: Any, where: str = "ground truth") -> Judgement:
    """A `Judgement` from what a ground truth returns for one output: a bool, a score in [0, 1] (a pass at
    0.5 or more), or ``{"passed", "score", "checks"}``."""
    if isinstance(result, Judgement):
        return result
    if isinstance(result, Mapping):
        if "passed" not in result:
            raise RatchetError(f'{where} returned {_clip(result, 120)}: a mapping needs "passed"')
        passed = bool(result["passed"])
        score = _score(result.get("score", 1.0 if passed else 0.0), where)
        checks = tuple(
            (_clip(c[0], 80), _clip(c[1] if len(c) > 1 else ""))
            for c in result.get("checks") or ()
            if isinstance(c, Sequence) and not isinstance(c, str) and c
        )
    elif isinstance(result, bool):
        passed, score, checks = result, float(result), ()
    else:
        score = _score(result, where)
        passed, checks = score >= 0.5, ()
    return Judgement(passed, score, checks, "pass" if passed else "fail")


def _score(x: Any, where: str) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise RatchetError(f"{where} returned the score {_clip(x, 80)!s}: give a number in [0, 1]") from None
    if not math.isfinite(v):
        raise RatchetError(f"{where} returned the score {v}: give a number in [0, 1]")
    return max(0.0, min(1.0, v))


class GroundTruth(Grader):
    """The family's ground truth: a pack hook's grader or a ``[ratchet] ground_truth`` function, behind one
    interface (judgements memoised per (task, output))."""

    name = "ground-truth"

    def __init__(
        self, grade_many: Callable[[Pairs], Sequence[Any]], description: Mapping[str, Any], where: str
    ) -> None:
        self._grade_many, self._description, self._where = grade_many, dict(description), where
        self._memo: dict[tuple[str, str], Judgement] = {}

    @property
    def kind(self) -> str:
        return str(self._description.get("kind", "?"))

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, **self._description}

    def grade_many(self, pairs: Pairs) -> list[Judgement]:
        todo = list(dict.fromkeys((t, o) for t, o in pairs if (t, o) not in self._memo))
        if todo:
            try:
                results = list(self._grade_many(todo))
            except GroundTruthUnavailable as exc:
                raise RatchetError(str(exc)) from None
            if len(results) != len(todo):
                raise RatchetError(f"{self._where} returned {len(results)} grades for {len(todo)} outputs")
            for key, r in zip(todo, results):
                self._memo[key] = judgement(r, self._where)
        return [self._memo[(t, o)] for t, o in pairs]


def plugin_truth(family: Any, spec: str) -> GroundTruth:
    """A family's own ground-truth function (``[ratchet] ground_truth``)."""
    fn = _load_callable(spec, family.dir)
    tasks = family.tasks
    return GroundTruth(
        lambda pairs: [fn(tasks[t], o) for t, o in pairs],
        {"kind": "plugin", "function": spec},
        f"[ratchet] ground_truth {spec}",
    )


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
            if spec_ is None or spec_.loader is None:
                raise RatchetError(f"[ratchet] ground_truth: {path} cannot be imported as a Python module")
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


def data_dirs(data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Where a ground truth's dataset files are looked for: `data_dir`, then ``$VX_DATA_DIR``."""
    return [Path(d).expanduser() for d in (data_dir, os.environ.get("VX_DATA_DIR")) if d]


def ground_truth_for(family: Any, *, data_dir: str | os.PathLike[str] | None = None) -> GroundTruth:
    """The family's ground truth (see the module docstring): family.toml's, else its pack's."""
    cfg = (family.config or {}).get("ratchet") or {}
    if cfg.get("ground_truth"):
        return plugin_truth(family, str(cfg["ground_truth"]))
    hooks = hooks_of(family)
    if hooks is None or hooks.ground_truth is None:
        raise RatchetError(
            f"family {family.name} has no ground truth vx knows: add [ratchet] ground_truth = "
            '"file.py:function" to its family.toml (or a ground_truth hook to its pack)'
        )
    try:
        built = hooks.ground_truth(family, data_dirs(data_dir))
    except GroundTruthUnavailable as exc:
        raise RatchetError(str(exc)) from None
    return GroundTruth(built.grade_many, built.describe(), f"the {hooks.name} pack's ground truth")
