"""Which task a trainer's completion answers, from the id the trainer carries with it.

Trainers do not know vx's task ids unless the dataset carries them; what they carry is one of:

1. **a task id** in a column the dataset defines (TRL's ``task_id`` column, OpenRLHF's ``label``, verl's
   ``reward_model.ground_truth``, the ``answer`` of a ``verifiers`` dataset): used when it is a task of the
   verifier's family;
2. **a data source and an index** (verl's ``data_source`` and ``extra_info["index"]``): the task
   ``"{data_source}/{index}"`` (``HumanEval`` and ``0``: ``HumanEval/0``);
3. **the prompt's text**: the task whose ``prompt`` field occurs in it (a chat template wraps the task's
   prompt in its own markup); when several do, the longest, and two different tasks of that length are an
   error (the prompt does not say which).

:meth:`TaskIndex.find` tries them in that order and says, when none matches, what it tried.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from collections.abc import Mapping
from typing import Any

from vx.errors import VxError

#: Prompt texts whose task was looked up, remembered (by digest) for the next completion of the group.
REMEMBER = 4096


class UnknownTask(VxError):
    """No task of the verifier's family matches what the trainer sent."""


class TaskIndex:
    """The verifier's tasks, found by id, by data source and index, or by prompt text (see the module)."""

    def __init__(self, tasks: Mapping[str, Mapping[str, Any]]) -> None:
        self.tasks = tasks
        prompts = [(str(t.get("prompt")), tid) for tid, t in tasks.items() if isinstance(t.get("prompt"), str)]
        self._prompts = sorted(((p, tid) for p, tid in prompts if p.strip()), key=lambda pt: -len(pt[0]))
        self._seen: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._lock = threading.Lock()

    def find(
        self,
        *,
        task_id: Any = None,
        data_source: Any = None,
        index: Any = None,
        prompt: Any = None,
        where: str = "a completion",
    ) -> str:
        """The id of the task a completion answers (see the module for the order); UnknownTask if none."""
        if isinstance(task_id, str) and task_id in self.tasks:
            return task_id
        if data_source is not None and index is not None and not isinstance(index, bool):
            candidate = f"{data_source}/{index}"
            if candidate in self.tasks:
                return candidate
        if isinstance(prompt, str) and prompt:
            found = self._by_prompt(prompt)
            if found is not None:
                return found
        tried = []
        if task_id is not None:
            tried.append(f"the id {_short(task_id)}")
        if data_source is not None and index is not None:
            tried.append(f"the data source and index {_short(f'{data_source}/{index}')}")
        if isinstance(prompt, str) and prompt:
            tried.append("the prompt's text")
        some = ", ".join(list(self.tasks)[:3])
        raise UnknownTask(
            f"{where}: no task of the verifier's family matches "
            + (" or ".join(tried) if tried else "anything (no task id, data source and index, or prompt was given)")
            + f"; give a task id of the family (ids like {some}), or the task's prompt inside the prompt text"
        )

    def _by_prompt(self, text: str) -> str | None:
        key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            hit = self._seen.get(key)
            if hit is not None:
                self._seen.move_to_end(key)
                return hit
        best: str | None = None
        best_len = 0
        for p, tid in self._prompts:
            if len(p) < best_len:
                break
            if p in text:
                if best is not None and best != tid:
                    raise UnknownTask(
                        f"the prompt's text holds the prompts of two tasks ({best}, {tid}) of the same length: "
                        "give the task id instead"
                    )
                best, best_len = tid, len(p)
        if best is not None:
            with self._lock:
                self._seen[key] = best
                while len(self._seen) > REMEMBER:
                    self._seen.popitem(last=False)
        return best


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["TaskIndex", "UnknownTask"]
