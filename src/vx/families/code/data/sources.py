"""The code family's task sources for `vx grade`: HumanEval+, MBPP+ (or their release files), plain
HumanEval, and the samples files people have (evalplus's, CodeT's, samples/humaneval's).

:func:`open_source` returns a :class:`vx.families.sources.TaskSource`: the task records the ops read
(``Task.family_record``), a reader of samples files into attempts, and -- the datasets ship hidden
tests -- the ground truth of an attempt (:class:`~vx.families.code.data.groundtruth.Grader`: the
hidden tests run in the sandbox, compared in the parent with evalplus's rules).

Ground truth is remembered per (dataset version, task, attempt text) in one JSON-lines file beside the
expected outputs (``~/.cache/vx/code-expected/<version>.truth.jsonl``), appended as each attempt is
graded, so an interrupted `vx grade --truth` resumes where it stopped. A result decided by a time limit
is not kept (it depends on the machine's load), as the verdict cache keeps no timeouts.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.errors import DataError
from vx.families.code.data import tasks as task_data
from vx.families.code.data.attempts import read_attempts
from vx.families.sources import Attempt, Attempts, TaskSource
from vx.inputs import read_json_lines
from vx.text import json_dumps

#: the dataset names `vx grade --tasks` takes for this family
DATASETS = ("humaneval+", "mbpp+", "humaneval")
_RELEASE_STEMS = {"HumanEvalPlus": "humaneval+", "MbppPlus": "mbpp+"}


def release_dataset(path: Path) -> str | None:
    """The dataset of an evalplus release file (``HumanEvalPlus-v0.1.10.jsonl.gz``...), by its name."""
    for stem, dataset in _RELEASE_STEMS.items():
        if path.name.startswith(stem) and (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
            return dataset
    return None


def open_source(spec: str, data_dir: str | os.PathLike[str] | None = None) -> TaskSource | None:
    """The tasks named by `spec` -- ``humaneval+``, ``mbpp+``, ``humaneval`` or an evalplus release
    file -- or None when `spec` is none of those."""
    if spec in DATASETS:
        return _source(spec, spec, task_data.load(spec, data_dir), task_data.dataset_version(spec, data_dir))
    path = Path(spec)
    dataset = release_dataset(path)
    if dataset is None or not path.is_file():
        return None
    with _override(task_data.PLUS_RELEASES[dataset][2], str(path.resolve())):  # exactly this file
        return _source(path.name, dataset, task_data.load(dataset), task_data.dataset_version(dataset))


@contextlib.contextmanager
def _override(name: str, value: str) -> Iterator[None]:
    """An environment variable set for the duration of a block (then restored)."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _source(name: str, dataset: str, loaded: Mapping[str, task_data.Task], version: str) -> TaskSource:
    # what the ops may read: the task's record without its canonical solution (never shown to a verifier)
    records = {t: {k: v for k, v in task.family_record().items() if k != "reference"} for t, task in loaded.items()}
    return TaskSource(
        name=name,
        tasks=records,
        read_samples=lambda paths: _read(paths, loaded),
        truth=lambda: _Truth(loaded, version).grade,
        version=version,
        truth_description=f"{dataset}'s hidden tests, compared with evalplus's rules",
    )


def _read(paths: Sequence[str | os.PathLike[str]], loaded: Mapping[str, task_data.Task]) -> list[Attempt]:
    stats: Counter[str] = Counter()
    unknown: list[str] = []
    attempts, _ = read_attempts(paths, loaded, codet_tasks=None, prepend_prompt=True, stats=stats, unknown=unknown)
    n_unknown = stats.get("attempts_of_unknown_tasks", 0)
    listed = ", ".join(unknown) + (" …" if n_unknown > len(unknown) else "")
    if n_unknown and not attempts:
        raise DataError(
            f"{', '.join(map(str, paths))}: no sample names a task of this dataset ({listed}; task ids "
            f"look like {next(iter(loaded), '?')!r})"
        )
    notes = []
    if n_unknown:
        notes.append(
            f"{n_unknown} sample(s) name tasks that are not in this dataset: left out ({listed}; task ids "
            f"look like {next(iter(loaded), '?')!r})"
        )
    if stats.get("prompt_prepended"):
        notes.append(f"{stats['prompt_prepended']} solution(s) were a bare function body: graded after the prompt")
    return Attempts(
        (Attempt(task=tid, output=program, meta=meta) for tid in loaded for program, meta in attempts.get(tid, [])),
        notes,
    )  # the dataset's order


class _Truth:
    """Hidden-test grades of attempts, remembered on disk (see the module docstring)."""

    def __init__(
        self, loaded: Mapping[str, task_data.Task], version: str, cache_dir: str | os.PathLike[str] | None = None
    ) -> None:
        from vx.families.code.data.groundtruth import Grader, default_cache_dir

        self.loaded = loaded
        self.grader = Grader(loaded, version=version, cache_dir=cache_dir)
        self.path = Path(cache_dir or default_cache_dir()) / f"{version}.truth.jsonl"

    @staticmethod
    def _key(task: str, output: str) -> str:
        return hashlib.sha256(f"{task}\0{output}".encode("utf-8", "surrogatepass")).hexdigest()

    def _known(self) -> dict[str, dict[str, Any]]:
        if not self.path.is_file():
            return {}
        rows = read_json_lines(
            self.path, "ground-truth store", objects=True, error=DataError, skip=lambda n, why: None
        )  # a line cut short by an interruption is passed over: its attempt is graded again
        return {
            str(r["key"]): {"label": str(r["label"]), "why": r.get("why")}
            for _, r, _ in rows
            if {"key", "label"} <= r.keys()
        }

    def grade(
        self, attempts: Sequence[tuple[str, str]], progress: Callable[[int], None] | None = None
    ) -> list[dict[str, Any]]:
        """``{"label": "pass"|"fail", "why": first failing input or None}`` per (task id, output), in
        order; each new grade is appended to the file as soon as it is known. A task whose reference
        cannot run on its hidden inputs has no ground truth: ``{"label": None, "why": the reason}``."""
        from concurrent.futures import ThreadPoolExecutor, as_completed

        known = self._known()
        keys = [self._key(t, o) for t, o in attempts]
        todo = list({k: i for i, k in enumerate(keys) if k not in known}.values())  # one index per new text
        if progress and len(attempts) > len(todo):  # known already, or the same text again: done
            progress(len(attempts) - len(todo))
        if not todo:
            return [known[k] for k in keys]
        problems = self.grader.prepare(sorted({attempts[i][0] for i in todo}))
        for i in [i for i in todo if attempts[i][0] in problems]:  # a reference that cannot run: no truth
            known[keys[i]] = {"label": None, "why": problems[attempts[i][0]]}
            if progress:
                progress(1)
        todo = [i for i in todo if attempts[i][0] not in problems]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            pool = ThreadPoolExecutor(max_workers=self.grader.workers)
            try:
                futures = {pool.submit(self.grader.grade, self.loaded[attempts[i][0]], attempts[i][1]): i for i in todo}
                for future in as_completed(futures):
                    i = futures[future]
                    truth = future.result()
                    record = {"label": truth.label, "why": truth.first_failure}
                    known[keys[i]] = record
                    reason = str((truth.first_failure or {}).get("reason", ""))
                    if not reason.startswith(("timeout", "run timeout")):  # load-dependent: not kept
                        handle.write(json_dumps({"key": keys[i], **record}, default=str) + "\n")
                        handle.flush()
                    if progress:
                        progress(1)
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        return [known[k] for k in keys]
