"""The SQL family's hooks for the skill loop (`vx ratchet`): the solver's instructions and view of a task, its
reply read as one query, the format contract, execution comparison as ground truth, and a scripted demo.

**Ground truth** -- each output is executed on the task's warehouse and its result compared with the gold
queries' results. For a family of ``vx data build sql`` (Spider 2.0 rules: values only, order only when the
question asks for one) the gold queries come from the question file named in the family's provenance
(``questions``, checked against ``questions_sha256``), found in the data directories (``--data-dir``,
``$VX_DATA_DIR``, or their ``sql/``). For a family of ``vx data build spider`` (Spider's execution match,
:class:`vx.families.sql.data.spider.SpiderTruth`, the locked labels' rule) they come from the Spider folder's
``questions.jsonl``: the provenance's ``data_dir``, else a data directory or its ``sql/spider/``, checked
against ``questions_sha256``.

**Demo** (``vx ratchet FAMILY --demo``, Spider families) -- a scripted solver that replies with the question's
gold query (read from the Spider folder of the task's database script), spoilt in ways named lessons repair:
odd-numbered questions get a misspelt table name (lesson ``use-the-schema-names``, learnt after a "no such
table" failure), every third a ``LIMIT 1`` it was not asked for (``no-limit-unless-asked``, learnt after a
result mismatch); ``comment-the-query`` is a harmless lesson, ``always-limit-1`` the habit a grader that
passes everything teaches.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from vx.errors import DataError
from vx.families.pack import DemoLesson, DemoScript, GroundTruthUnavailable, RatchetHooks, first_block
from vx.inputs import read_json_lines

SYSTEM = "You write SQL queries. Reply with exactly one read-only query in a single ```sql block, nothing else."
CONTRACT = (
    "One read-only SQL query in the task's dialect that answers the question over the given tables. "
    "Only the query's result is graded: column names, column order and formatting do not matter."
)


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
            raise GroundTruthUnavailable(
                f"{family.dir / 'family.toml'}: [provenance] names no question file "
                "(questions = …); the gold queries cannot be found"
            )
        path = next((c for d in data_dirs for c in (d / name, d / "sql" / name) if c.is_file()), None)
        if path is None:
            raise GroundTruthUnavailable(
                f"the gold queries of {family.name} are in {name}; pass --data-dir DIR "
                "(a folder holding it, or its sql/ subfolder) or set VX_DATA_DIR"
            )
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        want = (family.provenance or {}).get("questions_sha256")
        if want and digest != want:
            raise GroundTruthUnavailable(
                f"{path} is not the question file {family.name} was built from (sha256 {digest}…, expected {want}…)"
            )
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
            res = wh.execute(
                sql,
                timeout=float(task.get("timeout") or DEFAULT_TIMEOUT),
                max_rows=int(task.get("max_rows") or DEFAULT_MAX_ROWS),
            )
            if not res.ok:
                out.append({"passed": False, "score": 0.0, "checks": [["execution", f"{res.error_kind}: {res.error}"]]})
                continue
            ok = label_output(res, golds, bool(task.get("ignore_order", True))) == "pass"
            checks = (
                []
                if ok
                else [
                    [
                        "result_mismatch",
                        f"the result ({len(res.rows)} rows × {len(res.columns)} "
                        "columns) does not match the gold result",
                    ]
                ]
            )
            out.append({"passed": ok, "score": float(ok), "checks": checks})
        return out


SPIDER_BUILDER = "vx.families.sql.data.spider.build_spider"


def is_spider(family: Any) -> bool:
    return str((family.provenance or {}).get("builder", "")).startswith(SPIDER_BUILDER)


def _spider_questions(family: Any, data_dirs: Sequence[Path]) -> Path:
    prov = family.provenance or {}
    want = prov.get("questions_sha256")
    dirs = ([Path(prov["data_dir"])] if prov.get("data_dir") else []) + list(data_dirs)
    seen = []
    for d in dirs:
        for c in (d / "questions.jsonl", d / "sql" / "spider" / "questions.jsonl", d / "spider" / "questions.jsonl"):
            if c.is_file():
                if not want or hashlib.sha256(c.read_bytes()).hexdigest() == want:
                    return c
                seen.append(str(c))
    if seen:
        raise GroundTruthUnavailable(
            f"{', '.join(seen)}: not the questions.jsonl {family.name} was built from (sha256 {str(want)[:16]}…)"
        )
    raise GroundTruthUnavailable(
        f"the gold queries of {family.name} are in its Spider folder's questions.jsonl; pass "
        "--data-dir DIR (the Spider folder, or a folder holding sql/spider/) or set VX_DATA_DIR"
    )


class SpiderMatch:
    """Spider's execution match with the gold queries of the family's Spider folder (the locked labels' rule)."""

    kind = "spider-execution-match"

    def __init__(self, family: Any, data_dirs: Sequence[Path]) -> None:
        from vx.families.sources import Skipped
        from vx.families.sql.data.spider import Databases, SpiderTruth, read_questions

        self.path = _spider_questions(family, data_dirs)
        questions = read_questions(self.path, Skipped())
        tasks = family.tasks
        specs = {t["database"]: t["warehouse"] for t in tasks.values() if isinstance(t.get("warehouse"), Mapping)}
        missing = [tid for tid in tasks if tid not in questions]
        if missing:
            raise GroundTruthUnavailable(f"{self.path}: no gold query for {missing[0]} (+{len(missing) - 1} more)")
        first: Mapping[str, Any] = next(iter(tasks.values()), {})
        self._truth = SpiderTruth(questions, specs, Databases(), timeout=float(first.get("timeout") or 10.0))

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "questions": self.path.name}

    def grade_many(self, pairs: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for tid, sql in pairs:
            t = self._truth.grade(tid, str(sql))
            if t.label == "pass":
                out.append({"passed": True, "score": 1.0, "checks": []})
            elif not t.detail.get("executes"):
                out.append({"passed": False, "score": 0.0, "checks": [["execution", t.detail.get("error", "error")]]})
            else:
                out.append(
                    {
                        "passed": False,
                        "score": 0.0,
                        "checks": [
                            [
                                "result_mismatch",
                                f"the result ({t.detail.get('rows')} rows) does not match the gold result by "
                                "Spider's execution match",
                            ]
                        ],
                    }
                )
        return out


def ground_truth(family: Any, data_dirs: Sequence[Path]) -> Any:
    """The family's ground truth: Spider's match for a Spider family, else execution comparison."""
    return SpiderMatch(family, data_dirs) if is_spider(family) else ExecutionMatch(family, data_dirs)


# --------------------------------------------------------------------------- the scripted demo


@lru_cache(maxsize=8)
def _gold_queries(questions: str) -> dict[str, str]:
    """The gold query of each question id (lines that are no question are passed over, as the ground truth's
    reader passes them over)."""
    rows = read_json_lines(questions, "questions file", objects=True, error=DataError, skip=lambda n, why: None)
    return {r["id"]: r["gold"] for _, r, _ in rows if "id" in r and "gold" in r}


def _demo_gold(task: Mapping[str, Any]) -> str | None:
    script = (task.get("warehouse") or {}).get("script")
    if not script:
        return None
    questions = Path(script).parent.parent / "questions.jsonl"
    return _gold_queries(str(questions)).get(str(task.get("id"))) if questions.is_file() else None


def demo_solve(task: Mapping[str, Any], lessons: Sequence[str]) -> str:
    """The scripted SQL solver's reply (see the module docstring)."""
    sql = _demo_gold(task)
    if not sql:
        return "```sql\n-- (no gold query to script a reply from)\nSELECT 1\n```"
    digits = re.findall(r"\d+", str(task.get("id", "")))
    n = int(digits[-1]) if digits else 0
    sql = sql.strip().rstrip(";")
    if n % 2 and "use-the-schema-names" not in lessons:
        sql = re.sub(r"(?i)\bFROM\s+([A-Za-z_][A-Za-z0-9_]*)", lambda m: f"FROM {m.group(1)}x", sql, count=1)
    no_limit = not re.search(r"(?i)\blimit\b", sql)
    if no_limit and ((n % 3 == 0 and "no-limit-unless-asked" not in lessons) or "always-limit-1" in lessons):
        sql += " LIMIT 1"
    if "comment-the-query" in lessons:
        sql = "-- the query below answers the question\n" + sql
    return f"```sql\n{sql}\n```"


DEMO = DemoScript(
    solve=demo_solve,
    lessons=(
        DemoLesson(
            "use-the-schema-names",
            "Name tables and columns exactly as the schema spells them.",
            after_failure=r"(?i)no such (table|column)",
        ),
        DemoLesson(
            "comment-the-query",
            "Open the query with a comment saying what it returns.",
            after_failure=r"(?i)no such (table|column)",
        ),
        DemoLesson(
            "no-limit-unless-asked",
            "Add a LIMIT only when the question asks for a number of rows.",
            after_failure=r"(?i)result_mismatch|does not match",
        ),
        DemoLesson(
            "always-limit-1",
            "End every query with LIMIT 1, as the queries that passed do.",
            after_practice=r"(?i)\blimit 1\b",
        ),
    ),
    description="a scripted SQL solver: each question's gold query, spoilt in ways named lessons repair",
)

HOOKS = RatchetHooks(
    name="sql",
    solver_system=SYSTEM,
    format_contract=CONTRACT,
    render_task=render_task,
    extract_output=extract_output,
    ground_truth=ground_truth,
    demo=DEMO,
)
