"""The verifier: an expression over ops, conjoined with its family's root — the Python API.

    >>> from vx import Verifier
    >>> v = Verifier.load("examples/humaneval/seed.vx")           # family found upwards
    >>> g = v.grade(task, output)                                  # one (task, output)
    >>> g.verdict, g.drawbacks                                     # Final.FAIL, [("crash", "raises …")]
    >>> batch = v.grade_items(family.split("dev").items)           # verdict matrix + verdicts
    >>> grades = v.grade_many(task, [attempt1, attempt2, attempt3])  # k attempts at one task, together
    >>> best = v.best(task, [attempt1, attempt2, attempt3])           # the one to keep, and why
    >>> best.index, best.placement.reason

A verifier is fully reproducible from its expression text plus the op pool it names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vx.dsl.ast import Node, Not, OpRef, Vote, WVote
from vx.dsl.compile import BatchEvaluator
from vx.dsl.matrix import VerdictMatrix
from vx.dsl.parse import parse
from vx.dsl.printer import to_text
from vx.dsl.semantics import evaluate_item, final_codes, final_verdict, to_finals
from vx.dsl.verdict import Final, Verdict
from vx.errors import ArgumentError
from vx.families.family import Family, Item, find_family_dir
from vx.ops.apply import Application, apply_ops, single
from vx.ops.cache import VerdictCache
from vx.ops.pool import OpPool
from vx.ops.progress import Reporter
from vx.selection import DEFAULT_SCORE, Placement, rank_matrix


@attrs.frozen
class TraceNode:
    """One node of an explained expression on one item."""

    path: tuple[int, ...]
    text: str  # the node's canonical text (for a leaf: the op name)
    kind: str  # "op", "any", "all", "not", "vote", "wvote", "root"
    verdict: Verdict
    message: str = ""
    error: str | None = None
    children: tuple[TraceNode, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "text": self.text, "verdict": str(self.verdict)}
        if self.message:
            d["message"] = self.message
        if self.error:
            d["error"] = self.error
        if self.children:
            d["children"] = [c.as_dict() for c in self.children]
        return d


@attrs.frozen
class Grade:
    """A verifier's verdict on one item, the drawbacks that caused it, and the full trace."""

    verdict: Final
    drawbacks: tuple[tuple[str, str], ...]  # (op name, message) of fired ops on a path to FAIL
    root: TraceNode | None
    trace: TraceNode

    @property
    def passed(self) -> bool:
        """ABSTAIN counts as PASS (no known drawback was found)."""
        return self.verdict is not Final.FAIL

    def as_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "drawbacks": [{"op": o, "message": m} for o, m in self.drawbacks],
            "root": self.root.as_dict() if self.root else None,
            "trace": self.trace.as_dict(),
        }

    def _repr_html_(self) -> str:
        """Notebook display: the verdict, the drawbacks and the explained expression."""
        from vx.pages import grade_html, notebook

        return notebook(grade_html(self.as_dict()))


@attrs.frozen
class Ranked:
    """One attempt of a ranked group: its position in the outputs given, the output, its grade, and where
    it ranks among the group and why (:class:`vx.selection.Placement`)."""

    index: int
    output: Any
    grade: Grade
    placement: Placement

    @property
    def rank(self) -> int:
        return self.placement.rank

    @property
    def verdict(self) -> Final:
        return self.grade.verdict

    @property
    def reason(self) -> str:
        return self.placement.reason

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, **self.placement.as_dict(), "grade": self.grade.as_dict()}


@attrs.define
class Grading:
    """A verifier applied to many items."""

    item_ids: list[str]
    finals: list[Final]
    expr: np.ndarray  # int8 expression verdicts
    application: Application

    @property
    def matrix(self) -> VerdictMatrix:
        return self.application.matrix


def explain_tree(
    node: Node,
    verdicts: Mapping[str, Verdict | int],
    messages: Mapping[str, str] | None = None,
    errors: Mapping[str, str] | None = None,
    path: tuple[int, ...] = (),
) -> TraceNode:
    """Every node's verdict on one item (reference semantics), with each op's message."""
    messages = messages or {}
    errors = errors or {}
    v = evaluate_item(node, verdicts)
    if isinstance(node, OpRef):
        return TraceNode(path, node.name, "op", v, messages.get(node.name, ""), errors.get(node.name))
    kids = (node.child,) if isinstance(node, Not) else node.children
    children = tuple(explain_tree(c, verdicts, messages, errors, path + (i,)) for i, c in enumerate(kids))
    kind = type(node).__name__.lower()
    head = {"Vote": lambda n: f"vote {n.k}", "WVote": lambda n: f"wvote {to_text(n).split()[1]}"}
    label = head[type(node).__name__](node) if isinstance(node, (Vote, WVote)) else kind
    return TraceNode(path, f"({label} …)", kind, v, children=children)


def fired_leaves(t: TraceNode, negated: bool = False) -> list[TraceNode]:
    """Leaves whose verdict pushes the expression towards FAIL (fired, or clean under a `not`)."""
    if t.kind == "op":
        target = Verdict.CLEAN if negated else Verdict.DRAWBACK
        return [t] if t.verdict is target else []
    out: list[TraceNode] = []
    for c in t.children:
        out += fired_leaves(c, negated ^ (t.kind == "not"))
    return out


def pool_for_vx(vx_path: str | Path, family: Family) -> OpPool:
    """The family's pool plus the typed-spec ops that a .vx file's ``; specs: FILE`` header names."""
    from vx.dsl.vxfile import VxFile
    from vx.ops.specs import op_from_spec

    vx = VxFile.read(vx_path)
    pool = family.pool()
    for spec in vx.specs():
        o = op_from_spec(spec, provenance={"origin": "synthesized", "file": str(vx.specs_path)})
        if o.name not in pool:
            pool.add(o)
    return pool


class Verifier:
    """An expression plus the op pool (and root) it is evaluated with."""

    def __init__(
        self,
        expr: Node | str,
        pool: OpPool,
        tasks: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        family: Family | None = None,
    ) -> None:
        self.expr = parse(expr, known_ops=pool.names) if isinstance(expr, str) else expr
        missing = [n for n in self.expr.op_names() if n not in pool]
        if missing:
            raise KeyError("; ".join(pool.unknown_message(n) for n in missing))
        self.pool = pool
        self.tasks = tasks or {}
        self.family = family

    def __getstate__(self) -> dict[str, Any]:
        """Pickling (e.g. to a distributed worker) ships the expression, the op pool (ops travel as
        specs or pack references, see ``vx.ops.core.Op.__reduce__``) and the tasks; the family
        object, which holds the locked labels, stays behind."""
        return {"expr": self.expr, "pool": self.pool, "tasks": dict(self.tasks), "family": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @classmethod
    def load(cls, path: str | Path, family: str | Path | Family | None = None) -> Verifier:
        """Load a .vx file; its family is `family` or the nearest family.toml above the file.

        Synthesized ops named by a ``; specs: FILE`` header (written by `vx evolve`) join the pool.
        """
        if not Path(path).is_file():  # said before any family is looked for
            from vx.dsl.vxfile import VxFileError

            raise VxFileError(f"{path}: no such .vx file" if not Path(path).exists() else f"{path}: not a file")
        fam = family if isinstance(family, Family) else Family(family or find_family_dir(path))
        pool = pool_for_vx(path, fam)
        from vx.dsl.vxfile import read_text

        text = read_text(path)  # strict UTF-8: a binary or Latin-1 file is a VxFileError naming it
        return cls(parse(text, filename=str(path), known_ops=pool.names), pool, fam.tasks, family=fam)

    @classmethod
    def from_family(cls, family: str | Path | Family) -> Verifier:
        """The family's seed verifier."""
        fam = family if isinstance(family, Family) else Family(family)
        pool = fam.pool()
        return cls(fam.seed(pool.names), pool, fam.tasks, family=fam)

    def __repr__(self) -> str:
        text = to_text(self.expr)
        text = text if len(text) <= 120 else text[:117] + "..."
        where = f", family={self.family.name!r}" if self.family is not None else ""
        return f"Verifier({text!r}, root={self.pool.root_name!r}{where}, {len(self.ops)} ops, {len(self.tasks)} tasks)"

    def _task(self, task: Any) -> Mapping[str, Any]:
        """A task record, or this verifier's task of that id (an unknown id is an ArgumentError)."""
        if isinstance(task, str):
            if task not in self.tasks:
                some = ", ".join(repr(t) for t in list(self.tasks)[:3])
                raise ArgumentError(
                    f"unknown task id {task!r}: "
                    + (
                        f"not one of this verifier's {len(self.tasks)} tasks (e.g. {some})"
                        if self.tasks
                        else "this verifier has no tasks; pass the task record itself"
                    )
                )
            return self.tasks[task]
        if not isinstance(task, Mapping):
            raise ArgumentError(f"task must be a task record (a mapping) or a task id (str), not {type(task).__name__}")
        return task

    @property
    def text(self) -> str:
        return to_text(self.expr)

    @property
    def ops(self) -> list[str]:
        """The ops this verifier runs: the root, then the expression's ops."""
        names = list(self.expr.op_names())
        root = self.pool.root_name
        return ([root] if root else []) + [n for n in names if n != root]

    def grade(self, task: Mapping[str, Any] | str, output: Any, *, timeout: float = 10.0) -> Grade:
        """Grade one output. `task` is a task record, or a task id of this verifier's family."""
        task = self._task(task)
        outs = single(self.pool, task, output, timeout=timeout, ops=self.ops)  # peer ops abstain: graded alone
        verdicts = {k: Verdict(v.verdict) for k, v in outs.items()}
        messages = {k: v.message for k, v in outs.items()}
        errors = {k: v.error for k, v in outs.items() if v.error}
        return self._grade_from(verdicts, messages, errors)

    def _grade_from(
        self, verdicts: Mapping[str, Verdict], messages: Mapping[str, str], errors: Mapping[str, str]
    ) -> Grade:
        trace = explain_tree(self.expr, verdicts, messages, errors)
        root_name = self.pool.root_name
        root_t = None
        root_v = Verdict.ABSTAIN
        if root_name:
            root_v = Verdict(verdicts[root_name])
            root_t = TraceNode((), root_name, "root", root_v, messages.get(root_name, ""), errors.get(root_name))
        final = final_verdict(root_v, trace.verdict)
        drawbacks: list[tuple[str, str]] = []
        if root_name and root_v is Verdict.DRAWBACK:
            drawbacks.append((root_name, messages.get(root_name, "")))
        if trace.verdict is Verdict.DRAWBACK:
            seen = set()
            for leaf in fired_leaves(trace):
                if leaf.text not in seen:
                    seen.add(leaf.text)
                    drawbacks.append((leaf.text, leaf.message))
        return Grade(final, tuple(drawbacks), root_t, trace)

    def grade_many(
        self,
        task: Mapping[str, Any] | str,
        outputs: Sequence[Any],
        *,
        jobs: int | None = 1,
        timeout: float = 10.0,
        cache: VerdictCache | None = None,
        peers: Sequence[Any] = (),
    ) -> list[Grade]:
        """Grade several attempts at one task together (an agent loop that samples k attempts):
        peer ops compare each attempt with the others and with `peers`, more attempts that are not
        graded; with no `peers`, the family's stored attempts at the task are those (as in
        :meth:`grade_items`; `vx grade` and `vx serve` grade a group with none). An attempt with no
        peers at all makes peer ops abstain, saying so."""
        task = self._task(task)
        _check_outputs(outputs, peers, "graded character by character); to grade one output: grade(task, output)")
        items, grading = self._grade_group(task, outputs, peers, jobs=jobs, timeout=timeout, cache=cache)
        return [self.explain(it, grading) for it in items]

    def _grade_group(
        self,
        task: Mapping[str, Any],
        outputs: Sequence[Any],
        peers: Sequence[Any],
        *,
        jobs: int | None,
        timeout: float,
        cache: VerdictCache | None,
        rank: bool = False,
    ) -> tuple[list[Item], Grading]:
        """The attempts at one task as items (``<task>#<k>``), graded together with `peers`."""
        tid = str(task.get("id") or "task")
        items = [Item(id=f"{tid}#{k}", task=tid, output=o) for k, o in enumerate(outputs)]
        grading = self.grade_items(
            items,
            tasks={tid: task},
            jobs=jobs,
            timeout=timeout,
            cache=cache,
            progress=False,
            peers={tid: list(peers)} if peers else None,
            rank=rank,
        )
        return items, grading

    def grade_items(
        self,
        items: Sequence[Item],
        *,
        tasks: Mapping[str, Mapping[str, Any]] | None = None,
        jobs: int | None = None,
        timeout: float = 10.0,
        cache: VerdictCache | None = None,
        progress: bool | Reporter | None = None,
        all_ops: bool = False,
        peers: Mapping[str, Sequence[Any]] | None = None,
        executor: Any = None,
        rank: bool = False,
    ) -> Grading:
        """Grade many items: one verdict matrix (root + the expression's ops, or every runnable
        op with `all_ops`), the expression's verdicts and the final verdicts. The items of one task
        are each other's peers; `peers` adds attempts that are not graded (default: when the
        verifier has a family, the family's other attempts at the items' tasks). `executor`: where
        the ops run (see `vx.ops.apply.apply_ops`: "local", "dask" or an Executor). `rank`: also apply
        what ranking the items needs (:meth:`ranking_ops`), for :meth:`placements`."""
        tasks = tasks or self.tasks
        ops = None if all_ops else self.ops
        watch = [n for n in self.ranking_ops() if n not in (ops or self.pool.names)] if rank else []
        if (
            peers is None
            and self.family is not None
            and any(self.pool[n].is_peer for n in [*(ops or self.pool.names), *watch])
        ):
            peers = self.family.attempts_for(items)
        app = apply_ops(
            self.pool,
            items,
            tasks,
            ops=ops,
            jobs=jobs,
            timeout=timeout,
            cache=cache,
            progress=progress,
            description=f"grading {len(items)} items",
            peers=peers,
            executor=executor,
            observe=watch,
        )
        expr = BatchEvaluator(app.matrix).evaluate_int8(self.expr)
        root = app.matrix.column(self.pool.root_name) if self.pool.root_name else None
        finals = to_finals(final_codes(root, expr))
        return Grading([it.id for it in items], finals, expr, app)

    def ranking_ops(self) -> list[str]:
        """The ops a ranking of this verifier's grades reads: its own (:attr:`ops`), plus -- when none of them
        observes what the pool's similarity clusters (``OpPool.similarity``) -- one peer op that does (a
        baseline first), whose observer grading with ``rank=True`` runs (without judging the op), so that
        every attempt's support can be counted from its observation."""
        ops = self.ops
        sim = self.pool.similarity
        if sim is None:
            return ops

        def observes(name: str) -> bool:
            o = self.pool[name]
            return o.observer is not None and o.observer.name == sim.observer

        if any(observes(n) for n in ops):
            return ops
        found = sorted((o for o in self.pool.runnable() if observes(o.name)), key=lambda o: not o.baseline)
        return ops + [found[0].name] if found else ops

    def placements(
        self,
        grading: Grading,
        items: Sequence[Item],
        *,
        tasks: Mapping[str, Mapping[str, Any]] | None = None,
        score: str = DEFAULT_SCORE,
    ) -> list[Placement]:
        """Where each graded item ranks among the items of its task (`vx.selection`): its verdict, the
        evidence of this verifier's checks, its support among the attempts observed at the task, a
        digest tie-break. Reads the grading only (grade with ``rank=True`` for the support)."""
        if [it.id for it in items] != list(grading.item_ids):
            raise ArgumentError("placements needs the items the grading graded, in the same order")
        return rank_matrix(
            grading.matrix,
            grading.finals,
            tasks_of=[it.task for it in items],
            outputs=[it.output for it in items],
            ops=self.ops,
            observations=grading.application.observations,
            similarity=self.pool.similarity,
            tasks=tasks or self.tasks,
            score=score,
        )

    def rank(
        self,
        task: Mapping[str, Any] | str,
        outputs: Sequence[Any],
        *,
        jobs: int | None = 1,
        timeout: float = 10.0,
        cache: VerdictCache | None = None,
        peers: Sequence[Any] = (),
        score: str = DEFAULT_SCORE,
    ) -> list[Ranked]:
        """Grade several attempts at one task together and rank them, best first: PASS before ABSTAIN
        before FAIL, then fewer of this verifier's checks firing, then the attempt's support among the
        attempts (its behaviour cluster's size), then a digest of the output (never its position).
        Each :class:`Ranked` keeps its index in `outputs`, its grade and the reason for its place."""
        task = self._task(task)
        _check_outputs(outputs, peers, "ranked character by character)")
        if not outputs:
            raise ArgumentError("outputs is empty: there is nothing to rank")
        items, grading = self._grade_group(task, outputs, peers, jobs=jobs, timeout=timeout, cache=cache, rank=True)
        placed = self.placements(grading, items, tasks={items[0].task: task}, score=score)
        ranked = [
            Ranked(k, out, self.explain(it, grading), place)
            for k, (it, out, place) in enumerate(zip(items, outputs, placed))
        ]
        return sorted(ranked, key=lambda r: r.rank)

    def best(
        self,
        task: Mapping[str, Any] | str,
        outputs: Sequence[Any],
        **options: Any,
    ) -> Ranked:
        """The attempt :meth:`rank` puts first (the one to keep), with its grade and the reason."""
        return self.rank(task, outputs, **options)[0]

    def explain(self, item: Item, grading: Grading | None = None, **kw: Any) -> Grade:
        """The trace of one item; reuses a grading's verdicts when given (no op calls)."""
        if grading is None:
            grading = self.grade_items([item], progress=False, **kw)
        app = grading.application
        row = app.matrix.row(item.id)
        messages = {op: app.message(item.id, op) for op in app.matrix.op_names}
        errors = {f.op: f.error for f in app.failures if f.item == item.id}
        return self._grade_from(row, messages, errors)


def _check_outputs(outputs: Any, peers: Any, as_str: str) -> None:
    """`outputs` and `peers` are lists of outputs (a str is refused: it would be `as_str`)."""
    if isinstance(outputs, (str, bytes)) or not isinstance(outputs, Sequence):
        raise ArgumentError(f"outputs must be a list of outputs, not {type(outputs).__name__} (a str would be {as_str}")
    if isinstance(peers, (str, bytes)) or not isinstance(peers, Sequence):
        raise ArgumentError(f"peers must be a list of outputs, not {type(peers).__name__}")
