"""The SQL family builder behind ``vx data build sql``.

From defog's question file (gold SQL) and the defog-data databases (loaded into DuckDB or SQLite) it writes a
family directory: tasks (question, schema catalog, warehouse spec — never the gold SQL), outputs to
grade (gold-query variants, benign rewrites and mutants from `vx.families.sql.data.mutate`), labels by
executing each output and comparing its result with every gold result (`vx.families.sql.compare`),
and train / dev / locked splits, disjoint by task, reproducible from the seed.

Gold queries come as PostgreSQL (or SQLite). Each is run on the target warehouse — DuckDB by
default, or SQLite — as written; one that fails is transpiled (sqlglot, source dialect → target)
and kept if that runs. A question is left out — and counted in the
provenance — when no gold query runs, or when its gold result is empty or entirely NULL (every
empty or NULL output would then match it). Databases other than defog-data's seven are skipped.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.errors import BuildError
from vx.families.build_report import BuildReport
from vx.families.family_files import write_jsonl, write_seed
from vx.families.family_toml import write_family_toml
from vx.families.sql import defog as sqldata
from vx.families.sql.catalog import Catalog, solver_prompt
from vx.families.sql.compare import matches_any
from vx.families.sql.data.mutate import (
    BENIGN,
    HARMFUL,
    OPERATORS,
    MutationError,
    mutate,
)
from vx.families.sql.warehouse import (
    DEFAULT_MAX_ROWS,
    DEFAULT_TIMEOUT,
    QueryResult,
    open_warehouse,
)

SEED_EXPRESSION = """\
; family: sql
; the hand-written seed: any known SQL drawback fails the query
(any
  execution_error
  timeout
  missing_group_by
  unknown_identifier
  cartesian_join
  top_n_missing_limit
  (vote 2 empty_result null_heavy_result date_as_string_compare select_star))
"""

ENGINE_NAMES = {"duckdb": "DuckDB", "sqlite": "SQLite"}  # backends the bundled databases can be built for
EASY = ("syntax_error", "misspell_identifier", "select_star")
_ORDER_WORDS = re.compile(
    r"\b(order(?:ed)?|sort(?:ed)?|rank(?:ed)?|descending|ascending|from (?:highest|lowest|"
    r"most|least|largest|smallest)|in (?:alphabetical|chronological) order)\b",
    re.I,
)


@attrs.define
class _Item:
    id: str
    task: str
    output: str
    label: str
    meta: dict[str, Any]


def ignore_order_for(question: str) -> bool:
    """Row order counts only when the question asks for an order."""
    return not _ORDER_WORDS.search(question)


def label_output(result: QueryResult, golds: Sequence[QueryResult], ignore_order: bool) -> str:
    if not result.ok or result.truncated:
        return "fail"
    ok = matches_any(
        result.rows,
        [g.rows for g in golds],
        ignore_order=ignore_order,
        pred_width=len(result.columns),
        gold_widths=[len(g.columns) for g in golds],
    )
    return "pass" if ok else "fail"


def _norm(sql: str) -> str:
    return " ".join(sql.split()).rstrip(";").strip().lower()


def _runnable_gold(wh, gold: Sequence[str], source_dialect: str = "postgres") -> list[tuple[str, QueryResult, bool]]:
    """(query text that runs on the warehouse, its result, whether it was transpiled) per working gold."""
    import sqlglot

    out = []
    for g in gold:
        res = wh.execute(g)
        transpiled = False
        if not res.ok:
            try:
                t = sqlglot.transpile(g, read=source_dialect, write=wh.dialect)[0]
            except sqlglot.errors.SqlglotError:
                continue
            res = wh.execute(t)
            if not res.ok:
                continue
            g, transpiled = t, True
        out.append((g, res, transpiled))
    return out


def _degenerate(res: QueryResult) -> bool:
    return not res.rows or all(v is None for r in res.rows for v in r)


def build_sql(
    questions_csv: str | Path,
    out_dir: str | Path,
    *,
    seed: int = 0,
    n_locked: int = 40,
    n_dev_fail: int = 5,
    n_dev_pass: int = 5,
    max_mutants: int = 4,
    max_gold_variants: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    max_rows: int = DEFAULT_MAX_ROWS,
    locked_share: float = 0.3,
    seed_expr: str | Path | None = None,
    backend: str = "duckdb",
    source_dialect: str = "postgres",
    progress: Callable[[str, int | None, int], None] | None = None,
) -> BuildReport:
    """Build the SQL family into `out_dir` (see the module docstring). `backend` is where the
    databases are built and the outputs run ("duckdb" or "sqlite"); `source_dialect` is the dialect
    of the question file's gold SQL (defog ships "postgres" and "sqlite" files)."""
    if backend not in ENGINE_NAMES:
        raise BuildError(f"the bundled databases can be built for duckdb or sqlite, not {backend!r}")
    progress = progress or (lambda stage, total, advance: None)
    csv_path = Path(questions_csv)
    questions = sqldata.load_questions(csv_path)
    if not questions:
        raise BuildError(
            f"{csv_path}: no question is about a defog-data database ({', '.join(sqldata.DEFOG_DATABASES)})"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    made = _make_items(
        questions,
        backend=backend,
        source_dialect=source_dialect,
        timeout=timeout,
        max_rows=max_rows,
        seed=seed,
        max_mutants=max_mutants,
        max_gold_variants=max_gold_variants,
        progress=progress,
    )
    splits = _split(
        made.items,
        seed=seed,
        n_locked=n_locked,
        n_dev_fail=n_dev_fail,
        n_dev_pass=n_dev_pass,
        locked_share=locked_share,
    )
    used_tasks = sorted({it.task for part in splits.values() for it in part})
    _write_items(out, made, splits, used_tasks)
    write_seed(out, seed_expr, SEED_EXPRESSION)
    provenance = _provenance(csv_path, backend, seed, questions, made)
    counts = {
        "tasks": len(used_tasks),
        "train_items": len(splits["train"]),
        "dev_items": len(splits["dev"]),
        "dev_labels": dict(Counter(it.label for it in splits["dev"])),
        "locked_items": len(splits["locked"]),
        "locked_labels": dict(Counter(it.label for it in splits["locked"])),
        "items_labelled": len(made.items),
        "labels": dict(Counter(it.label for it in made.items)),
    }
    _write_family_toml(out / "family.toml", provenance, counts, backend)
    notes: list[str] = []
    if made.excluded:
        notes.append(f"{len(made.excluded)} question(s) left out (listed under provenance.excluded in family.toml)")
    return BuildReport(out, counts, provenance, notes)


@attrs.define
class _Made:
    """What the questions gave: a task record per usable question, the labelled outputs, the golden query per
    task, the questions left out (with why) and how many gold queries were transpiled."""

    tasks: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    items: list[_Item] = attrs.field(factory=list)
    references: dict[str, str] = attrs.field(factory=dict)
    excluded: dict[str, str] = attrs.field(factory=dict)
    transpiled_golds: int = 0


def _make_items(
    questions: Sequence[sqldata.Question],
    *,
    backend: str,
    source_dialect: str,
    timeout: float,
    max_rows: int,
    seed: int,
    max_mutants: int,
    max_gold_variants: int,
    progress: Callable[[str, int | None, int], None],
) -> _Made:
    """Each database built once; each question's gold queries run on it, the task recorded and its outputs
    (gold variants and mutants) labelled by execution against the gold result."""
    made = _Made()
    by_db: dict[str, list[sqldata.Question]] = defaultdict(list)
    for q in questions:
        by_db[q.database].append(q)
    progress("questions", len(questions), 0)
    for db in sorted(by_db):
        spec = {"backend": backend, "source": "defog", "database": db}
        with open_warehouse(spec) as wh:  # a fresh connection per build
            catalog = Catalog.from_warehouse(wh)
            cat_json = catalog.to_json()
            for q in by_db[db]:
                progress("questions", None, 1)
                golds = _runnable_gold(wh, q.gold, source_dialect)
                if not golds:
                    made.excluded[q.id] = f"no gold query runs on {ENGINE_NAMES[backend]}"
                    continue
                if _degenerate(golds[0][1]):
                    made.excluded[q.id] = "the gold result is empty or entirely NULL"
                    continue
                made.transpiled_golds += sum(t for _, _, t in golds)
                ignore_order = ignore_order_for(q.question)
                made.tasks[q.id] = {
                    "id": q.id,
                    "question": q.question,
                    "instructions": q.instructions,
                    "category": q.category,
                    "database": db,
                    "dialect": backend,
                    "prompt": solver_prompt(q.question, catalog, dialect=backend, instructions=q.instructions),
                    "warehouse": spec,
                    "catalog": cat_json,
                    "ignore_order": ignore_order,
                    "timeout": timeout,
                    "max_rows": max_rows,
                }
                made.references[q.id] = golds[0][0]
                gold_results = [r for _, r, _ in golds]
                made.items += _outputs_for(
                    q, golds, gold_results, catalog, wh, ignore_order, seed, max_mutants, max_gold_variants
                )
    if not made.tasks:
        raise BuildError("no usable question (every gold query failed or returned nothing)")
    return made


def _write_items(out: Path, made: _Made, splits: dict[str, list[_Item]], used_tasks: Sequence[str]) -> None:
    """tasks.jsonl and the splits' files. Only dev items carry meta (how each output was made): on train and
    locked items it would give the answer away ("gold" = pass), and item ids are opaque for the same reason."""
    write_jsonl(out / "tasks.jsonl", [made.tasks[t] for t in sorted(made.tasks) if t in used_tasks])
    write_jsonl(out / "train.jsonl", [{"id": it.id, "task": it.task, "output": it.output} for it in splits["train"]])
    write_jsonl(
        out / "dev.jsonl",
        [
            {
                "id": it.id,
                "task": it.task,
                "output": it.output,
                "label": it.label,
                "reference": made.references[it.task],
                "meta": it.meta,
            }
            for it in splits["dev"]
        ],
    )
    write_jsonl(
        out / "locked.jsonl",
        [{"id": it.id, "task": it.task, "output": it.output, "label": it.label} for it in splits["locked"]],
    )


def _provenance(
    csv_path: Path, backend: str, seed: int, questions: Sequence[sqldata.Question], made: _Made
) -> dict[str, Any]:
    ops_counter = Counter(it.meta.get("operator", "gold") for it in made.items)
    return {
        "questions": csv_path.name,
        "questions_sha256": hashlib.sha256(csv_path.read_bytes()).hexdigest()[:16],
        "questions_origin": "github.com/defog-ai/sql-eval data/ (Apache-2.0)",
        "databases": f"PyPI defog-data {sqldata.defog_version()} (Apache-2.0), loaded into {ENGINE_NAMES[backend]}",
        "seed": seed,
        "questions_read": len(questions),
        "questions_used": len(made.tasks),
        "questions_excluded": len(made.excluded),
        "excluded": dict(sorted(made.excluded.items())),
        "gold_queries_transpiled": made.transpiled_golds,
        "operators": dict(sorted(ops_counter.items())),
    }


def _outputs_for(q, golds, gold_results, catalog, wh, ignore_order, seed, max_mutants, max_gold_variants):
    rng = random.Random(f"vx-sql:{seed}:{q.id}")
    base = golds[0][0]
    seen = set()
    out: list[_Item] = []

    def add(kind: str, sql: str, meta: dict[str, Any]) -> None:
        key = _norm(sql)
        if key in seen:
            return
        seen.add(key)
        res = wh.execute(sql)
        label = label_output(res, gold_results, ignore_order)
        out.append(_Item(kind, q.id, sql, label, meta))

    variants = list(range(len(golds)))
    chosen = [0] + rng.sample(variants[1:], min(len(variants) - 1, max_gold_variants - 1))
    for k in chosen:
        add(f"gold{k}", golds[k][0], {"operator": "gold", "variant": k})
    benign = [b for b in BENIGN]
    rng.shuffle(benign)
    for name in benign:
        m = _try_mutate(base, name, catalog, seed, wh.dialect)
        if m is not None:
            add(f"{name}", m.sql, {"operator": name, "detail": m.detail})
            break
    # semantic mutants first (they need a matching site); the always-applicable ones (syntax error,
    # misspelt column, SELECT *) add at most one per question, so they do not crowd the others out
    harmful = [h for h in HARMFUL if h not in EASY]
    rng.shuffle(harmful)
    easy = list(EASY)
    rng.shuffle(easy)
    made = 0
    for name in harmful + easy[:1]:
        if made >= max_mutants + (name in EASY):
            break
        m = _try_mutate(base, name, catalog, seed, wh.dialect)
        if m is None:
            continue
        before = len(out)
        add(name, m.sql, {"operator": name, "failure_class": OPERATORS[name].failure_class, "detail": m.detail})
        made += len(out) > before
    rng.shuffle(out)  # opaque ids: the id must not tell how the output was made
    for n, it in enumerate(out):
        it.id = f"{q.id}#{n}"
    return out


def _try_mutate(sql, name, catalog, seed, dialect):
    try:
        return mutate(sql, name, dialect=dialect, catalog=catalog, seed=seed)
    except MutationError:
        return None


def _split(
    items: list[_Item], *, seed: int, n_locked: int, n_dev_fail: int, n_dev_pass: int, locked_share: float
) -> dict[str, list[_Item]]:
    """Disjoint by task. Dev: one item per task, drawn at random from the task's items while walking
    the shuffled tasks — failures until `n_dev_fail` (each of another failure class while possible:
    a ten-item anchor should show distinct failure modes), passes until `n_dev_pass`; a dev task's
    other items are dropped. Locked: the next tasks until `locked_share` of the items (at
    least `n_locked`). Train: the rest, unlabeled."""
    by_task: dict[str, list[_Item]] = defaultdict(list)
    for it in items:
        by_task[it.task].append(it)
    order = sorted(by_task)
    random.Random(f"vx-split:{seed}").shuffle(order)
    dev: list[_Item] = []
    dev_tasks: set[str] = set()
    classes: set[str] = set()
    pick_rng = random.Random(f"vx-dev:{seed}")
    for distinct in (True, False):  # first walk: every dev failure of another failure class
        for t in order:
            fails = sum(1 for d in dev if d.label == "fail")
            passes = len(dev) - fails
            if fails >= n_dev_fail and passes >= n_dev_pass:
                break
            if t in dev_tasks:
                continue
            cands = by_task[t][:]
            pick_rng.shuffle(cands)
            cand = None
            if fails < n_dev_fail:
                cand = next(
                    (it for it in cands if it.label == "fail" and not (distinct and _failure_class(it) in classes)),
                    None,
                )
            if cand is None and passes < n_dev_pass:
                cand = next((it for it in cands if it.label == "pass"), None)
            if cand is not None:
                dev.append(cand)
                dev_tasks.add(t)
                if cand.label == "fail":
                    classes.add(_failure_class(cand))
    if sum(d.label == "fail" for d in dev) < n_dev_fail or sum(d.label == "pass" for d in dev) < n_dev_pass:
        raise BuildError(
            f"cannot fill the dev split with {n_dev_fail} failing and {n_dev_pass} passing items; "
            "use more questions or fewer dev items"
        )
    rest = [t for t in order if t not in dev_tasks]
    target = max(n_locked, int(round(locked_share * sum(len(by_task[t]) for t in rest))))
    locked: list[_Item] = []
    locked_tasks: set[str] = set()
    for t in rest:
        if len(locked) >= target:
            break
        locked += by_task[t]
        locked_tasks.add(t)
    if len(locked) < n_locked:
        raise BuildError(f"only {len(locked)} items are left for the locked split; {n_locked} are needed")
    train = [it for t in rest if t not in locked_tasks for it in by_task[t]]
    key = {t: i for i, t in enumerate(sorted(by_task))}
    for part in (dev, locked, train):
        part.sort(key=lambda it: (key[it.task], it.id))
    return {"train": train, "dev": dev, "locked": locked}


def _failure_class(it: _Item) -> str:
    return str(it.meta.get("failure_class") or it.meta.get("operator") or "")


def _write_family_toml(path: Path, provenance: dict[str, Any], counts: dict[str, Any], backend: str = "duckdb") -> None:
    public = {k: v for k, v in counts.items() if k not in ("locked_labels", "labels")}  # no locked class balance
    write_family_toml(
        path,
        name="sql",
        description=f"Text-to-SQL over defog-data's seven databases on {ENGINE_NAMES[backend]}: gold-query "
        "variants and mutants, labelled by executing them and comparing results with the gold (Spider 2.0 rules)",
        packs=["sql"],
        root="parses",
        provenance={
            **{k: v for k, v in provenance.items() if k != "excluded"},
            "counts": public,
            "excluded": provenance.get("excluded", {}),
        },
    )


__all__ = ["BuildError", "BuildReport", "SEED_EXPRESSION", "build_sql", "ignore_order_for", "label_output"]
