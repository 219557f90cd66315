"""The Spider family builder behind ``vx data build spider``: real text-to-SQL predictions, many per
question, graded by Spider's execution accuracy on SQLite.

Input: a Spider data folder (``../shared/data/sql/spider/``, see its README) with

* ``questions.jsonl`` -- ``{"id", "db_id", "question", "gold"}`` per question;
* ``databases/<db_id>.sql`` -- each database as a SQLite script (Spider's names, types and values);
* ``samples/*.jsonl`` (or the files given) -- ``{"task_id", "sql"}``, one prediction per question and file.

Every prediction becomes an attempt at its question (``<question>#<samples file>``). Labels:

* **ground truth** (locked; `SpiderTruth`) -- Spider's execution match on the original database
  (:mod:`vx.families.sql.spider` for the query text, :func:`vx.families.sql.compare.spider_match` for the
  result): DISTINCT removed, rows as a bag, order only when the gold orders, column permutations tried,
  a time limit per query; a prediction that does not run is wrong;
* **dev teacher** (`SpiderTeacher`) -- the same match on the original *and on every variant* of the
  task's database (:mod:`vx.families.sql.variants`) the gold query is useful on; its ``agreement``
  weighs the original as half the evidence, so that only a prediction that differs on the original is
  a *clear* dev failure.

Splits are disjoint by task (:func:`vx.families.split.split_by_task`, the rule every
multi-attempt family uses): dev holds 5 clear failures + 5 passes by the teacher, the other attempts of
the dev tasks are unlabeled peers (``peers.jsonl``), locked the next tasks, train the rest. Bad input
lines (not JSON, missing fields, unknown question, a second prediction of one question in one file) and
questions whose gold query does not run are skipped, counted and listed with the reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import DataError
from vx.families.build_report import BuildReport
from vx.families.sources import Skipped
from vx.families.split import LabelledItem, Splits, split_by_task
from vx.families.sql.catalog import Catalog, solver_prompt
from vx.families.sql.compare import spider_match
from vx.families.sql.data.build import SEED_EXPRESSION as SQL_SEED
from vx.families.sql.data.build import ignore_order_for
from vx.families.sql.ops.analysis import limit_tie_probe, tie_at_limit
from vx.families.sql.scripts import script_spec
from vx.families.sql.spider import MATCH, comparable_text, order_matters
from vx.families.sql.variants import DEFAULT_COUNT, variant_spec
from vx.families.sql.variants import VERSION as VARIANTS_VERSION
from vx.families.sql.warehouse import QueryResult, Warehouse, open_warehouse
from vx.inputs import read_json_lines

BUILDER_VERSION = "2"  # 2: the teacher's evidence classes and the stratified dev draw; samples-frontier
TRUTH_TIMEOUT = 10.0  # seconds per query, as Spider's evaluator
MAX_ROWS = 100_000
ROOT_OP = "parses"

#: The seed written into a new Spider family: the SQL family's gold-free seed (no peer op, no gold).
SEED_EXPRESSION = "; family: spider\n" + SQL_SEED.split("\n", 1)[1]

Progress = Callable[[str, "int | None", int], None]


def _no_progress(stage: str, total: int | None, advance: int) -> None:
    return None


# --------------------------------------------------------------------------- reading the data folder


@attrs.frozen
class Question:
    id: str
    database: str
    question: str
    gold: str


@attrs.frozen
class Attempt:
    task: str
    sql: str
    run: str  # the samples file's stem
    line: int


def _json_lines(path: Path, skipped: Skipped) -> list[tuple[int, dict[str, Any]]]:
    """The JSON objects of a file, one a line (:func:`vx.inputs.read_json_lines`); the lines it cannot
    read go to `skipped` under their reason (a file it cannot read is a DataError)."""
    rows = read_json_lines(path, objects=True, error=DataError, skip=skipped.lines_of(path))
    return [(row.number, row.value) for row in rows]


def read_questions(path: str | os.PathLike[str], skipped: Skipped) -> dict[str, Question]:
    """The questions of a ``questions.jsonl`` (bad lines skipped into `skipped`)."""
    p = Path(path)
    out: dict[str, Question] = {}
    for n, obj in _json_lines(p, skipped):
        names = ("id", "db_id", "question", "gold")
        fields = {k: v for k in names if isinstance(v := obj.get(k), str) and v.strip()}
        missing = [k for k in names if k not in fields]
        if missing:
            skipped.add(f"a question needs non-empty text fields {', '.join(missing)}", f"{p.name}:{n}")
        elif fields["id"] in out:
            skipped.add(f"duplicate question id {fields['id']!r}", f"{p.name}:{n}")
        else:
            out[fields["id"]] = Question(fields["id"], fields["db_id"], fields["question"].strip(), fields["gold"])
    return out


def read_attempts(path: str | os.PathLike[str], questions: Mapping[str, Question], skipped: Skipped) -> list[Attempt]:
    """One samples file: ``{"task_id", "sql"}`` lines, one prediction per question (bad lines skipped)."""
    p = Path(path)
    run = p.name.removesuffix(".jsonl")
    seen: dict[str, int] = {}
    out: list[Attempt] = []
    for n, obj in _json_lines(p, skipped):
        tid, sql = obj.get("task_id"), obj.get("sql")
        where = f"{p.name}:{n}"
        if not isinstance(tid, str) or not isinstance(sql, str):
            skipped.add("a prediction needs string fields task_id and sql", where)
        elif tid not in questions:
            skipped.add("the prediction's task_id is not a question of questions.jsonl", where)
        elif tid in seen:
            skipped.add(f"a second prediction of {tid} in one file (the first, line {seen[tid]}, is kept)", where)
        else:
            seen[tid] = n
            out.append(Attempt(tid, sql, run, n))
    return out


#: The prediction folders of the shared Spider data: DIN-SQL's 20 runs, and four published systems'
#: predictions (C3SQL, DAIL-SQL with and without self-consistency, Graphix-T5) on the same questions.
SAMPLES_DIRS = ("samples", "samples-frontier")


def samples_files(
    data_dir: Path, samples: Sequence[str | os.PathLike[str]] | None, samples_dir: str = "samples"
) -> list[Path]:
    """The prediction files: `samples` when given, else every ``<data_dir>/<samples_dir>/*.jsonl``."""
    if samples:
        return [Path(s) for s in samples]
    folder = Path(samples_dir) if Path(samples_dir).is_absolute() else data_dir / samples_dir
    found = sorted(folder.glob("*.jsonl"))
    if not found:
        raise DataError(f"{folder}: no samples file (*.jsonl); pass --samples FILE or another --samples-dir")
    return found


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- grading


@attrs.frozen
class Truth:
    label: str  # "pass" | "fail"
    detail: dict[str, Any]


def _run(wh: Warehouse, sql: str, timeout: float) -> QueryResult:
    return wh.execute(sql, timeout=timeout, max_rows=MAX_ROWS)


def _useful(res: QueryResult) -> bool:
    """A gold result that tells queries apart: it runs and has a cell that is neither NULL nor 0."""
    return res.ok and not res.truncated and any(v not in (None, 0) for r in res.rows for v in r)


class Databases:
    """Open warehouses for the original databases and their variants, one connection per spec."""

    def __init__(self) -> None:
        self._open: dict[str, Warehouse] = {}

    def get(self, spec: Mapping[str, Any]) -> Warehouse:
        key = json.dumps(dict(spec), sort_keys=True)
        if key not in self._open:
            self._open[key] = open_warehouse(spec)
        return self._open[key]

    def close(self) -> None:
        for wh in self._open.values():
            wh.close()
        self._open.clear()


class SpiderTruth:
    """Spider's execution accuracy of a prediction on the question's original database."""

    def __init__(
        self,
        questions: Mapping[str, Question],
        specs: Mapping[str, Mapping[str, Any]],
        databases: Databases,
        *,
        timeout: float = TRUTH_TIMEOUT,
    ) -> None:
        self.questions, self.specs, self.dbs, self.timeout = questions, specs, databases, timeout
        self._gold: dict[tuple[str, str], QueryResult] = {}

    def gold(self, qid: str, spec: Mapping[str, Any] | None = None) -> QueryResult:
        """The gold query's result on the original database, or on the database `spec` names."""
        q = self.questions[qid]
        spec = spec or self.specs[q.database]
        key = (qid, json.dumps(dict(spec), sort_keys=True))
        if key not in self._gold:
            self._gold[key] = _run(self.dbs.get(spec), comparable_text(q.gold, prediction=False), self.timeout)
        return self._gold[key]

    def matches(self, qid: str, sql: str, spec: Mapping[str, Any] | None = None) -> tuple[bool, QueryResult]:
        q = self.questions[qid]
        spec = spec or self.specs[q.database]
        res = _run(self.dbs.get(spec), comparable_text(sql), self.timeout)
        gold = self.gold(qid, spec)
        ok = (
            res.ok
            and not res.truncated
            and gold.ok
            and spider_match(res.rows, gold.rows, order_matters=order_matters(q.gold))
        )
        return ok, res

    def grade(self, qid: str, sql: str) -> Truth:
        ok, res = self.matches(qid, sql)
        detail: dict[str, Any] = {"truth": "spider-ex", "executes": res.ok}
        if not res.ok:
            detail["error"] = f"{res.error_kind}: {(res.error or '').splitlines()[0][:200]}"
        else:
            detail["rows"] = len(res.rows)
        return Truth("pass" if ok else "fail", detail)


@attrs.frozen
class TeacherLabel:
    """The dev teacher's label: the interface :func:`split_by_task` reads."""

    label: str
    agreement: float
    n_inputs: int
    detail: dict[str, Any] = attrs.field(factory=dict)
    kind: str = "execution-variants"
    #: For a failure, which evidence the teacher has (:data:`DRAW_STRATA`, or ``variant_only``).
    evidence: str = ""

    def meta(self) -> dict[str, Any]:
        extra = {"teacher_evidence": self.evidence} if self.evidence else {}
        return {
            "teacher": self.kind,
            "teacher_agreement": round(self.agreement, 4),
            "teacher_inputs": self.n_inputs,
            **self.detail,
            **extra,
        }


class SpiderTeacher:
    """Compares a prediction with the gold on the original database and the variants the task uses."""

    def __init__(self, truth: SpiderTruth, tasks: Mapping[str, Mapping[str, Any]]) -> None:
        self.truth, self.tasks = truth, tasks

    def databases(self, qid: str) -> list[tuple[str, dict[str, Any]]]:
        from vx.families.sql.variants import task_variant_specs

        return task_variant_specs(self.tasks[qid])

    def teach(self, qid: str, sql: str) -> TeacherLabel:
        """Pass when the prediction matches the gold on every database. ``agreement`` weighs the original
        database as half the evidence and the variants together as the other half: a prediction that
        differs on the original (a failure by Spider's own rule) has agreement at most 0.5, a *clear*
        failure for the dev draw; one that differs on variants only stays above 0.5 (the variants are
        the weaker evidence: a few of their differences are false, docs/sql.md)."""
        dbs = self.databases(qid)
        matched, first, original = [], None, None
        for name, spec in dbs:
            ok, res = self.truth.matches(qid, sql, spec)
            matched.append(ok)
            if original is None:
                original = res
            if not ok and first is None:
                first = name
        rest = matched[1:]
        agreement = (0.5 * matched[0] + 0.5 * (sum(rest) / len(rest))) if rest else float(matched[0])
        detail = {"teacher_first_difference": first} if first else {}
        if all(matched):
            return TeacherLabel("pass", agreement, len(dbs), detail)
        return TeacherLabel("fail", agreement, len(dbs), detail, evidence=self.evidence(qid, matched[0], original))

    def evidence(self, qid: str, on_original: bool, res: QueryResult | None) -> str:
        """Which evidence a failure has: it does not run on the original database (``does_not_run``), it
        returns no rows where the gold has some or rows where the gold has none (``empty_vs_rows``), other
        rows (``wrong_rows``), or it matches on the original and differs on a neighbour database only
        (``variant_only``: the weaker evidence, which the dev draw does not take)."""
        if on_original:
            return "variant_only"
        if res is None or not res.ok:
            return "does_not_run"
        gold = self.truth.gold(qid)
        if bool(res.rows) != bool(gold.rows):
            return "empty_vs_rows"
        return "wrong_rows"


# --------------------------------------------------------------------------- the build

#: The teacher's evidence classes of a failure, in the order the stratified dev draw deals its places.
#: ``variant_only`` failures (they match the gold on the original database) never enter dev: a third of
#: them are false differences (docs/sql.md), and Spider's own rule calls them right.
DRAW_STRATA = ("wrong_rows", "empty_vs_rows", "does_not_run")
DEFAULT_DEV_DRAW = "gross"


def useful_variants(truth: SpiderTruth, qid: str, spec: Mapping[str, Any], n_variants: int, seed: int) -> list[int]:
    """The variants of the question's database on which its gold query runs, is useful and does not
    hang on row order: the same result with every table's rows reversed, and no tie across its outer
    ``ORDER BY … LIMIT`` (:func:`vx.families.sql.ops.analysis.limit_tie_probe`)."""
    gold = truth.questions[qid].gold
    ordered = order_matters(gold)
    probe = _tie_probe(comparable_text(gold, prediction=False))
    keep = []
    for i in range(n_variants):
        vspec = variant_spec(spec, i, seed)
        res = truth.gold(qid, vspec)
        if not _useful(res):
            continue
        again = truth.gold(qid, variant_spec(spec, i, seed, reversed_rows=True))
        if not again.ok or not spider_match(res.rows, again.rows, order_matters=ordered):
            continue
        if probe is not None:
            ties = _run(truth.dbs.get(vspec), probe[0], truth.timeout)
            if not ties.ok or tie_at_limit(ties.rows, probe[1]):
                continue
        keep.append(i)
    return keep


def _tie_probe(sql: str) -> tuple[str, int] | None:
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except SqlglotError:
        return None
    return limit_tie_probe(tree, "sqlite")


@attrs.frozen(kw_only=True)
class SpiderBuild:
    """The options of a Spider family's build: the predictions to read (``samples``: these files, else every
    file under ``samples_dir``), the split (``n_locked`` None: a third of the attempts), the neighbour
    databases, the queries' time limit, and the progress callback."""

    samples: Sequence[str | os.PathLike[str]] | None = None
    samples_dir: str = "samples"
    per_task: int | None = None  # a seeded subsample of at most N attempts per question
    seed: int = 0
    n_locked: int | None = None
    n_dev_fail: int = 5
    n_dev_pass: int = 5
    dev_draw: str = DEFAULT_DEV_DRAW
    n_variants: int = DEFAULT_COUNT
    variant_seed: int = 0
    timeout: float = TRUTH_TIMEOUT
    seed_expr: str | os.PathLike[str] | None = None
    progress: Progress = attrs.field(default=_no_progress, eq=False)


def build_spider(
    data_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], options: SpiderBuild | None = None
) -> BuildReport:
    """Build a Spider family into `out_dir` (see the module docstring); ``per_task`` keeps a seeded
    subsample (``random.Random("vx-per-task:<seed>:<question>")``, as the code family does)."""
    opts = options or SpiderBuild()
    root = Path(data_dir)
    if not (root / "questions.jsonl").is_file():
        raise DataError(f"{root}: no questions.jsonl (expected a Spider folder such as ../shared/data/sql/spider)")
    if opts.per_task is not None and opts.per_task < 1:
        raise DataError(f"--per-task must be at least 1, got {opts.per_task}")
    skipped = Skipped()
    questions = read_questions(root / "questions.jsonl", skipped)
    attempts, sources = _read_predictions(samples_files(root, opts.samples, opts.samples_dir), questions, skipped)
    specs = _database_specs(root, questions)
    dropped: dict[str, str] = {}
    for qid, q in questions.items():
        if q.database not in specs:
            dropped[qid] = f"its database script databases/{q.database}.sql is missing"
        elif not attempts.get(qid):
            dropped[qid] = "no prediction in the samples files"
    live = sorted((qid for qid in questions if qid not in dropped), key=_question_order)
    dbs = Databases()
    try:
        truth = SpiderTruth(questions, specs, dbs, timeout=opts.timeout)
        tasks = _spider_tasks(live, questions, specs, truth, dbs, opts, dropped)
        items, per_task_counts = _spider_items(tasks, attempts, opts)
        splits = _label_and_split(items, tasks, truth, opts)
    finally:
        dbs.close()
    used = set(splits.tasks["train"]) | set(splits.tasks["dev"]) | set(splits.tasks["locked"])
    teacher_vs_truth = _teacher_agreement(splits)
    provenance = {
        "builder": f"vx.families.sql.data.spider.build_spider v{BUILDER_VERSION}",
        "data_dir": os.fspath(root.resolve()),
        "questions_sha256": _sha256(root / "questions.jsonl"),
        "samples": sources,
        "seed": opts.seed,
        "per_task": opts.per_task,
        "samples_dir": opts.samples_dir if not opts.samples else "(the files given)",
        "dev_draw": opts.dev_draw,
        "labels": {
            "locked": "Spider execution match on the original SQLite database (DISTINCT removed, rows as "
            "a bag, order when the gold orders, column permutations tried, "
            f"{opts.timeout:g}s per query)",
            "dev": "execution teacher: the same match on the original database and the task's variants",
        },
        "variants": {
            "count": opts.n_variants,
            "seed": opts.variant_seed,
            "version": VARIANTS_VERSION,
            "used_per_task": dict(sorted(Counter(len(t["variants"]["use"]) for t in tasks.values()).items())),
        },
        "split": "disjoint by task; the other attempts of the dev tasks are unlabeled peers (peers.jsonl)",
        "questions_read": len(questions),
        "tasks_kept": len(used),
        "tasks_dropped": dict(sorted(dropped.items(), key=lambda kv: _question_order(kv[0]))),
        "input_skipped": skipped.as_dict(),
        "attempts_per_task": {t: per_task_counts[t] for t in sorted(used, key=_question_order)},
        "dev_teacher_vs_truth": teacher_vs_truth,
        "counts": splits.counts(),
    }
    out = Path(out_dir)
    notes = write_family(
        out,
        tasks=[tasks[t] for t in sorted(used, key=_question_order)],
        splits=splits,
        references={qid: questions[qid].gold for qid in tasks},
        provenance=provenance,
        seed_expr=opts.seed_expr,
    )
    notes += _build_notes(splits, skipped, dropped)
    counts = splits.counts(with_hidden_labels=True)
    counts["dev_teacher_vs_truth"] = teacher_vs_truth
    counts["tasks_dropped"] = len(dropped)
    counts["input_skipped"] = sum(skipped.counts.values())
    return BuildReport(out, counts, provenance, notes, truth=splits.truth())


def _read_predictions(
    files: Sequence[Path], questions: Mapping[str, Question], skipped: Skipped
) -> tuple[dict[str, list[Attempt]], list[dict[str, Any]]]:
    """Every prediction of every file, per question; each file's source record."""
    attempts: dict[str, list[Attempt]] = defaultdict(list)
    sources = []
    for f in files:
        rows = read_attempts(f, questions, skipped)
        for a in rows:
            attempts[a.task].append(a)
        sources.append({"path": os.fspath(f), "sha256": _sha256(f), "predictions": len(rows)})
    return attempts, sources


def _database_specs(root: Path, questions: Mapping[str, Question]) -> dict[str, dict[str, Any]]:
    """The warehouse spec of every database a question names whose script is in ``databases/``."""
    specs: dict[str, dict[str, Any]] = {}
    for db in sorted({q.database for q in questions.values()}):
        script = root / "databases" / f"{db}.sql"
        if script.is_file():
            specs[db] = {**script_spec(script, db)}
    return specs


def _spider_tasks(
    live: Sequence[str],
    questions: Mapping[str, Question],
    specs: Mapping[str, dict[str, Any]],
    truth: SpiderTruth,
    dbs: Databases,
    opts: SpiderBuild,
    dropped: dict[str, str],
) -> dict[str, dict[str, Any]]:
    """The task record of every question whose gold query runs (the others go to `dropped`, with why):
    the question, its database's catalog and prompt, and the neighbour databases that tell answers apart."""
    progress = opts.progress
    catalogs: dict[str, dict[str, Any]] = {}
    tasks: dict[str, dict[str, Any]] = {}
    progress("gold queries on the databases and their variants", len(live), 0)
    for qid in live:
        q = questions[qid]
        spec = specs[q.database]
        gold = truth.gold(qid)
        progress("gold queries on the databases and their variants", None, 1)
        if not gold.ok or gold.truncated:
            dropped[qid] = f"the gold query does not run on SQLite ({gold.error_kind}: {gold.error})"
            continue
        if q.database not in catalogs:
            catalogs[q.database] = Catalog.from_warehouse(dbs.get(spec)).to_json()
        cat = catalogs[q.database]
        use = useful_variants(truth, qid, spec, opts.n_variants, opts.variant_seed)
        tasks[qid] = {
            "id": qid,
            "question": q.question,
            "database": q.database,
            "dialect": "sqlite",
            "prompt": solver_prompt(q.question, Catalog.from_json(cat), dialect="sqlite"),
            "warehouse": spec,
            "catalog": cat,
            "ignore_order": ignore_order_for(q.question),
            "match": MATCH,
            "timeout": opts.timeout,
            "max_rows": MAX_ROWS,
            "variants": {"seed": opts.variant_seed, "version": VARIANTS_VERSION, "use": use},
        }
    return tasks


def _spider_items(
    tasks: Mapping[str, Any], attempts: Mapping[str, list[Attempt]], opts: SpiderBuild
) -> tuple[list[LabelledItem], dict[str, int]]:
    """Every kept prediction (a seeded subsample of ``per_task``) as an unlabelled item; the count per task."""
    items: list[LabelledItem] = []
    per_task_counts: dict[str, int] = {}
    for qid in tasks:
        mine = attempts[qid]
        idx = list(range(len(mine)))
        if opts.per_task is not None and len(idx) > opts.per_task:
            idx = sorted(random.Random(f"vx-per-task:{opts.seed}:{qid}").sample(idx, opts.per_task))
        per_task_counts[qid] = len(idx)
        for i in idx:
            a = mine[i]
            items.append(
                LabelledItem(id=f"{qid}#{a.run}", task=qid, output=a.sql, meta={"run": a.run, "source_line": a.line})
            )
    return items, per_task_counts


def _label_and_split(
    items: list[LabelledItem], tasks: Mapping[str, Any], truth: SpiderTruth, opts: SpiderBuild
) -> Splits:
    """Every item labelled by Spider's execution match, then split by task with the execution teacher's
    dev labels (a failure seen on a variant only is never a dev failure, unless the draw is gross)."""
    progress = opts.progress
    progress("ground truth (Spider execution match)", len(items), 0)
    for it in items:
        t = truth.grade(it.task, it.output)
        it.truth, it.truth_detail = t.label, t.detail
        progress("ground truth (Spider execution match)", None, 1)
    teacher = SpiderTeacher(truth, tasks)
    cache: dict[str, TeacherLabel] = {}

    def teach(it: LabelledItem) -> TeacherLabel:
        if it.id not in cache:
            label = teacher.teach(it.task, it.output)
            if label.evidence == "variant_only" and opts.dev_draw != "gross":
                # not a dev failure under any draw (the gross draw's agreement bound already keeps it out)
                label = attrs.evolve(label, label="unsure")
            cache[it.id] = label
            progress("teacher labels for dev candidates", None, 1)
        return cache[it.id]

    progress("teacher labels for dev candidates", None, 0)
    return split_by_task(
        items,
        seed=opts.seed,
        teacher=teach,
        n_dev_fail=opts.n_dev_fail,
        n_dev_pass=opts.n_dev_pass,
        n_locked=opts.n_locked if opts.n_locked is not None else max(1, len(items) // 3),
        dev_draw=opts.dev_draw,
        strata=DRAW_STRATA,
    )


def _build_notes(splits: Splits, skipped: Skipped, dropped: Mapping[str, str]) -> list[str]:
    notes = []
    if len({it.truth for it in splits.locked}) == 1:
        notes.append(
            f"every locked item is labelled {splits.locked[0].truth}: agreement on that split cannot tell a "
            "verifier from a constant one; use more questions, more samples files or another --seed"
        )
    if skipped.counts:
        notes.append(f"{sum(skipped.counts.values())} input line(s) skipped (provenance.input_skipped lists why)")
    if dropped:
        notes.append(f"{len(dropped)} question(s) left out (provenance.tasks_dropped lists why)")
    return notes


def _question_order(qid: str) -> tuple[int, str]:
    tail = qid.rsplit("-", 1)[-1]
    return (int(tail), qid) if tail.isdigit() else (1 << 30, qid)


def _teacher_agreement(splits: Splits) -> dict[str, Any]:
    dev = splits.dev
    return {
        "agree": sum(1 for it in dev if it.teacher_label == it.truth),
        "items": len(dev),
        "teacher_pass_truth_fail": sum(1 for it in dev if it.teacher_label == "pass" and it.truth == "fail"),
        "teacher_fail_truth_pass": sum(1 for it in dev if it.teacher_label == "fail" and it.truth == "pass"),
    }


def write_family(
    out: Path,
    *,
    tasks: Sequence[Mapping[str, Any]],
    splits: Splits,
    references: Mapping[str, str],
    provenance: Mapping[str, Any],
    seed_expr: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The family files (format: docs/ARCHITECTURE.md); returns notes for the user."""
    from vx.families.family_files import write_jsonl, write_seed, write_splits
    from vx.families.family_toml import write_family_toml

    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    write_jsonl(out / "tasks.jsonl", list(tasks))
    write_splits(out, splits, references=references)
    if write_seed(out, seed_expr, SEED_EXPRESSION):
        notes.append(f"wrote the default Spider seed expression to {out / 'seed.vx'}")
    skipped_keys = ("tasks_dropped", "attempts_per_task", "input_skipped", "samples")
    write_family_toml(
        out / "family.toml",
        name="spider",
        description="Spider dev questions with real text-to-SQL predictions (several per question) "
        "on SQLite; locked labels by Spider execution match, dev labels by an execution teacher "
        "on database variants",
        packs=["sql"],
        root="parses",
        peers=bool(splits.dev_peers),
        provenance={
            **{k: v for k, v in provenance.items() if k not in skipped_keys},
            "samples": [s["path"].rsplit("/", 1)[-1] for s in provenance.get("samples", [])],
            "input_skipped": provenance.get("input_skipped", {}).get("counts", {}),
            "tasks_dropped": provenance.get("tasks_dropped", {}),
        },
    )
    return notes


__all__ = [
    "Attempt",
    "BuildReport",
    "Databases",
    "Question",
    "SEED_EXPRESSION",
    "Skipped",
    "SpiderTeacher",
    "SpiderTruth",
    "TeacherLabel",
    "Truth",
    "DRAW_STRATA",
    "SAMPLES_DIRS",
    "build_spider",
    "read_attempts",
    "read_questions",
    "useful_variants",
    "write_family",
]
