"""What the trainer adapters share: a grader in this process or a `vx serve` behind a URL.

:class:`RewardSource` is either a :class:`vx.reward.grader.GroupGrader` over a verifier (a .vx path or a
:class:`~vx.Verifier`: worker processes of this process, started at the first call) or a client of a
running ``vx serve`` (``"http://127.0.0.1:8000"``: the groups are graded there, sent as POST /grade with
the standard library's HTTP client). Either way :meth:`RewardSource.grade` takes rows (task id, output) and
returns one verdict and reason per row, each task's rows graded as one group.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from vx.integrations.common import IntegrationError, OptionError, check_jobs, check_rewards, check_timeout
from vx.reward.grader import DEFAULT_REWARDS, GroupGrader
from vx.reward.shapes import Extract, Row, read_output, reply_reader
from vx.reward.tasks import TaskIndex
from vx.verifier import Verifier

#: The verdict and the reason of one graded row.
Verdict = tuple[str, str | None]


class RewardSource:
    """Grades rows in this process (a verifier) or through a running `vx serve` (a URL); see the module."""

    def __init__(
        self,
        verifier: Verifier | str | Path,
        *,
        rewards: Mapping[str, float] | None = None,
        jobs: int | None = 2,
        timeout: float = 10.0,
        deadline: float = 60.0,
        token: str | None = None,
    ) -> None:
        self.rewards = check_rewards(rewards, DEFAULT_REWARDS)
        self.timeout = check_timeout(timeout)
        self.deadline = check_timeout(deadline, "deadline")
        jobs = check_jobs(jobs) or 2
        self.url: str | None = None
        self.grader: GroupGrader | None = None
        if isinstance(verifier, str) and verifier.startswith(("http://", "https://")):
            self.url = verifier.rstrip("/")
            self.token = token
            self.index: TaskIndex | None = None
        elif isinstance(verifier, (str, Path, Verifier)):
            v = verifier if isinstance(verifier, Verifier) else Verifier.load(verifier)
            self.grader = GroupGrader(v, workers=jobs, timeout=self.timeout, deadline=self.deadline, start=False)
            self.index = TaskIndex(v.tasks)
        else:
            raise OptionError(
                f"verifier must be a .vx path, a vx.Verifier or the URL of a vx serve, not {type(verifier).__name__}"
            )

    def reader(self, extract: bool) -> Extract:
        """How a reply's text becomes the output graded (:func:`vx.reward.shapes.reply_reader`): in this
        process, what the verifier's family reads from a reply; through a URL (the family unknown here),
        the first fenced block with `extract`."""
        return reply_reader(self.grader.verifier if self.grader is not None else None, extract)

    def find(self, **where: Any) -> str:
        """The task id a completion answers (in this process; a URL's server finds it itself, so the id
        the trainer carries is passed on as it is)."""
        if self.index is None:
            tid = where.get("task_id")
            if not isinstance(tid, str):
                raise IntegrationError(
                    f"{where.get('where', 'a completion')}: grading through a vx serve needs the task id "
                    "(the dataset's task column)"
                )
            return tid
        return self.index.find(**where)

    def grade(self, rows: Sequence[Row]) -> list[Verdict]:
        """One (verdict, reason) per row, in order; each task's rows graded together, the tasks side by side."""
        groups: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            groups.setdefault(row.task_id, []).append(i)
        out: list[Verdict] = [("abstain", "no_opinion")] * len(rows)

        def one(task_id: str, idx: list[int]) -> None:
            outputs = [rows[i].output for i in idx]
            found = (
                self._grade_here(task_id, outputs) if self.grader is not None else self._grade_there(task_id, outputs)
            )
            for i, v in zip(idx, found):
                out[i] = v

        if len(groups) == 1:
            one(*next(iter(groups.items())))
        elif groups:
            with ThreadPoolExecutor(min(32, len(groups))) as pool:
                list(pool.map(lambda kv: one(*kv), groups.items()))
        return out

    def reward(self, verdict: str) -> float:
        return float(self.rewards[verdict])

    def _grade_here(self, task_id: str, outputs: list[Any]) -> list[Verdict]:
        assert self.grader is not None
        result = self.grader.grade_group(task_id, outputs)
        return [(g.verdict, g.reason) for g in result.graded]

    def _grade_there(self, task_id: str, outputs: list[Any]) -> list[Verdict]:
        body = json.dumps({"task_id": task_id, "solutions": outputs, "deadline": self.deadline}).encode()
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.url}/grade", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.deadline + 60) as answer:
                doc = json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise IntegrationError(f"vx serve at {self.url} answered {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise IntegrationError(f"vx serve at {self.url} cannot be reached: {exc}") from None
        results = doc.get("results") if isinstance(doc, Mapping) else None
        if not isinstance(results, list) or len(results) != len(outputs):
            raise IntegrationError(f"vx serve at {self.url} answered something other than one result per solution")
        return [(str(r.get("verdict")), r.get("reason")) for r in results]

    def close(self) -> None:
        if self.grader is not None:
            self.grader.close()


class SourcedReward:
    """A trainer's reward callable grading through a :class:`RewardSource`, with the options every such
    callable takes: ``rewards`` (a number per verdict), ``extract`` (grade the program read out of a markdown
    answer rather than the whole text), ``jobs``, ``timeout``, ``deadline`` and ``token`` (for a URL)."""

    def __init__(
        self,
        verifier: Verifier | str | Path,
        *,
        rewards: Mapping[str, float] | None = None,
        extract: bool = True,
        jobs: int | None = 2,
        timeout: float = 10.0,
        deadline: float = 60.0,
        token: str | None = None,
    ) -> None:
        self.source = RewardSource(
            verifier, rewards=rewards, jobs=jobs, timeout=timeout, deadline=deadline, token=token
        )
        self.extract = extract
        self._read = self.source.reader(extract)

    def output(self, text: str) -> Any:
        """What is graded of a completion's text: with ``extract``, what the verifier's family reads from a
        reply (the tools family: all of it), else its first fenced block."""
        return read_output(text, self._read)

    def close(self) -> None:
        self.source.close()


__all__ = ["RewardSource", "SourcedReward"]
