"""The SQL family's hooks for the skill loop (`vx ratchet`): the solver's instructions and view of a task, its
reply read as one query, the format contract, and execution comparison as ground truth.

**Ground truth** -- each output is executed on the task's warehouse and its result compared with the gold
queries' results (Spider 2.0 rules: values only, order only when the question asks for one). The gold queries
come from the question file named in the family's provenance (``questions``, checked against
``questions_sha256``), found in the data directories (``--data-dir``, ``$VX_DATA_DIR``, or their ``sql/``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vx.families.pack import GroundTruthUnavailable, RatchetHooks, first_block

SYSTEM = "You write SQL queries. Reply with exactly one read-only query in a single ```sql block, nothing else."
CONTRACT = ("One read-only SQL query in the task's dialect that answers the question over the given tables. "
            "Only the query's result is graded: column names, column order and formatting do not matter.")


def render_task(task: Mapping[str, Any]) -> str:
    return str(task.get("prompt") or task.get("question", "")).strip()


def extract_output(reply: str) -> str:
    return first_block(reply, ("sql",)).strip().rstrip(";").strip()


class ExecutionMatch:
    """Execution comparison with the gold queries of the family's question file."""

    kind = "execution-match"

    def __init__(self, family: Any, data_dirs: Sequence[Path]) -> None:
        from vx.families.sql import defog  # here, not at the top: every family load would pay for it

        name = (family.provenance or {}).get("questions")
        if not name:
            raise GroundTruthUnavailable(f"{family.dir / 'family.toml'}: [provenance] names no question file "
                                         "(questions = …); the gold queries cannot be found")
        path = next((c for d in data_dirs for c in (d / name, d / "sql" / name) if c.is_file()), None)
        if path is None:
            raise GroundTruthUnavailable(f"the gold queries of {family.name} are in {name}; pass --data-dir DIR "
                                         "(a folder holding it, or its sql/ subfolder) or set VX_DATA_DIR")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        want = (family.provenance or {}).get("questions_sha256")
        if want and digest != want:
            raise GroundTruthUnavailable(f"{path} is not the question file {family.name} was built from "
                                         f"(sha256 {digest}…, expected {want}…)")
        self.path = path
        self._gold = {q.id: q.gold for q in defog.load_questions(path)}
        self._tasks = family.tasks
        self._results: dict[str, list[Any]] = {}

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "questions": self.path.name}

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
                raise GroundTruthUnavailable(f"{tid}: no gold query of {self.path.name} runs on this warehouse")
            self._results[tid] = out
        return self._results[tid]

    def grade_many(self, pairs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
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
                out.append({"passed": False, "score": 0.0, "checks": [["execution", f"{res.error_kind}: {res.error}"]]})
                continue
            ok = label_output(res, golds, bool(task.get("ignore_order", True))) == "pass"
            checks = [] if ok else [["result_mismatch", f"the result ({len(res.rows)} rows × {len(res.columns)} "
                                     "columns) does not match the gold result"]]
            out.append({"passed": ok, "score": float(ok), "checks": checks})
        return out


HOOKS = RatchetHooks(name="sql", solver_system=SYSTEM, format_contract=CONTRACT, render_task=render_task,
                     extract_output=extract_output, ground_truth=ExecutionMatch)
