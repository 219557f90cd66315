"""Best of n: a verifier ranks the attempts at one task and keeps the best.

The first thing a grader is used for in an agent loop is to choose: keep the best of n attempts, filter
samples for rejection-sampling fine-tuning, pick the answer to show. A vx verifier says PASS, FAIL or
ABSTAIN per attempt; ranking orders the attempts at one task by four keys, each used only where the ones
before it tie:

1. **the final verdict**: PASS, then ABSTAIN, then FAIL;
2. **the verifier's own evidence** (:data:`SCORES`; the default, :data:`DEFAULT_SCORE` ``"drawbacks"``, was
   chosen on the quality benchmark's train-split labels, docs/selection.md): fewer of the verifier's checks --
   its root and the ops its expression names -- firing first. Clean verdicts count for nothing: a check that
   abstains because it does not apply is no evidence against an attempt (counting cleans, ``"evidence"``,
   ranked worse on the design split);
3. **support among the peers**: the size of the attempt's behaviour cluster among the attempts at the task
   (the family's :class:`~vx.ops.similarity.Similarity`: the same answers on the same probes for code, the
   same results on the same databases for SQL), the support MBR-exec's plurality pick and CodeT's consensus
   sets use; 0 where the family cannot say which attempts behave alike. A family's soft agreement (1 plus the
   share of inputs each other attempt answers alike; ``support_sizes(soft=True)``) was compared on the design
   split and is not the default;
4. **a deterministic tie-break** that does not depend on the attempt's position: a digest of the task and
   the output, so shuffling the attempts never changes which one is chosen, and identical outputs tie.

Everything here reads verdicts the verifier already computed and observations its peer ops already made:
ranking runs no op and no sandbox.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.dsl.verdict import Final
from vx.ops.similarity import Similarity

#: verdict order of the first key (lower ranks first)
VERDICT_ORDER: dict[Final, int] = {Final.PASS: 0, Final.ABSTAIN: 1, Final.FAIL: 2}

Score = Callable[[VerdictMatrix, Sequence[str]], np.ndarray]


def evidence_score(matrix: VerdictMatrix, ops: Sequence[str]) -> np.ndarray:
    """Per item, (checks that stay clean − checks that fire) / checks, over `ops` (the verifier's root and
    expression ops): in [−1, 1]. Among attempts the verifier passes, one more of its checks had an opinion
    and found nothing; among those it fails, fewer of its checks found a drawback."""
    cols = [matrix.column(o) for o in ops if o in matrix.op_names]
    if not cols:
        return np.zeros(matrix.n_items)
    votes = np.stack(cols, axis=1)
    return ((votes == 0).sum(axis=1) - (votes == 1).sum(axis=1)) / len(cols)


def drawback_score(matrix: VerdictMatrix, ops: Sequence[str]) -> np.ndarray:
    """Per item, −(checks that fire) / checks, over `ops` (the verifier's root and expression ops): in [−1, 0].
    Clean verdicts count for nothing: a check that abstains because it does not apply (the attempt uses no
    construct it inspects) is no evidence against the attempt, so only drawbacks separate attempts."""
    cols = [matrix.column(o) for o in ops if o in matrix.op_names]
    if not cols:
        return np.zeros(matrix.n_items)
    return -(np.stack(cols, axis=1) == 1).sum(axis=1) / len(cols)


def no_score(matrix: VerdictMatrix, ops: Sequence[str]) -> np.ndarray:
    """No evidence key: the verdict, then the support decide."""
    return np.zeros(matrix.n_items)


#: the evidence scores a ranking may use, by name
SCORES: dict[str, Score] = {"evidence": evidence_score, "drawbacks": drawback_score, "none": no_score}
DEFAULT_SCORE = "drawbacks"


def tie_key(task: str, output: Any) -> str:
    """The deterministic tie-break: a digest of the task id and the output (not of its position)."""
    text = output if isinstance(output, str) else json.dumps(output, sort_keys=True, default=repr)
    return hashlib.sha256(f"{task}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def support_sizes(
    observations: Mapping[str, Mapping[str, Any]],
    similarity: Similarity | None,
    tasks: Mapping[str, Mapping[str, Any]],
    *,
    soft: bool = False,
) -> dict[str, tuple[float, int]]:
    """Per attempt id, (its support, the attempts compared), from one observer's observations by task
    (``Application.observations[similarity.observer]``): the family's soft agreement where it has one and
    `soft`, else the size of the attempt's behaviour cluster. Empty without a similarity or observations."""
    if similarity is None:
        return {}
    out: dict[str, tuple[float, int]] = {}
    for task_id, by_attempt in observations.items():
        ids = list(by_attempt)
        if not ids or task_id not in tasks:
            continue
        seen = [by_attempt[i] for i in ids]
        values = similarity.support(tasks[task_id], seen) if soft else similarity.sizes(tasks[task_id], seen)
        out.update({i: (float(v), len(ids)) for i, v in zip(ids, values)})
    return out


@attrs.frozen
class Placement:
    """Where one attempt ranks among the attempts at its task, and why."""

    item: str
    task: str
    rank: int  # 1 = the best of its task
    of: int  # attempts ranked at the task
    verdict: Final
    score: float  # the verifier's evidence (higher first)
    support: float  # 1 (itself) + how much the other attempts behave alike (0: unknown)
    compared: int  # attempts whose behaviour was compared (0: no similarity)
    key: str  # the tie-break digest (lower first)
    reason: str = ""

    @property
    def best(self) -> bool:
        return self.rank == 1

    def sort_key(self) -> tuple[int, float, float, str]:
        return (VERDICT_ORDER[self.verdict], -self.score, -self.support, self.key)

    def as_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "task": self.task,
            "rank": self.rank,
            "of": self.of,
            "verdict": self.verdict.value,
            "score": round(float(self.score), 6),
            "support": round(float(self.support), 6),
            "compared": self.compared,
            "key": self.key,
            "reason": self.reason,
        }


def _support_text(p: Placement) -> str:
    if not p.compared:
        return "support unknown"
    return f"support {p.support:.2f} (itself and how alike the {p.compared - 1} other attempts behave)"


def _decider(a: Placement, b: Placement) -> str:
    """Which key puts `a` ahead of `b` (a ranks just above b), in words."""
    if a.verdict is not b.verdict:
        return f"{a.verdict.value.upper()} before {b.verdict.value.upper()}"
    if a.score != b.score:
        return f"same verdict, more evidence ({a.score:+.3f} against {b.score:+.3f})"
    if a.support != b.support:
        return f"same verdict and evidence, more support ({a.support:.2f} against {b.support:.2f})"
    if a.key == b.key:
        return "an identical output (same verdict, evidence and support)"
    return f"same verdict, evidence and support; the tie-break digest {a.key[:8]} < {b.key[:8]}"


def _reason(p: Placement, above: Placement | None, below: Placement | None, score_name: str) -> str:
    head = (
        f"rank {p.rank} of {p.of}: {p.verdict.value.upper()}, evidence {p.score:+.3f} ({score_name}), "
        f"{_support_text(p)}"
    )
    parts = [head]
    if above is not None:
        parts.append(f"after rank {above.rank} ({_decider(above, p)})")
    if below is not None:
        parts.append(f"ahead of rank {below.rank} ({_decider(p, below)})")
    return "; ".join(parts)


def rank(
    item_ids: Sequence[str],
    tasks_of: Sequence[str],
    finals: Sequence[Final],
    scores: Sequence[float],
    supports: Mapping[str, tuple[float, int]],
    keys: Sequence[str],
    *,
    score_name: str = DEFAULT_SCORE,
) -> list[Placement]:
    """Rank the attempts of every task (the four keys of the module docstring); one placement per item,
    in the items' order."""
    n = len(item_ids)
    if not (len(tasks_of) == len(finals) == len(scores) == len(keys) == n):
        raise ValueError("rank needs one task, verdict, score and key per item")
    by_task: dict[str, list[int]] = {}
    for i, t in enumerate(tasks_of):
        by_task.setdefault(t, []).append(i)
    out: list[Placement | None] = [None] * n
    for task, rows in by_task.items():
        drafts = [
            Placement(
                item_ids[i],
                task,
                0,
                len(rows),
                finals[i],
                float(scores[i]),
                supports.get(item_ids[i], (0, 0))[0],
                supports.get(item_ids[i], (0, 0))[1],
                keys[i],
            )
            for i in rows
        ]
        order = sorted(range(len(rows)), key=lambda j: drafts[j].sort_key())
        placed = [attrs.evolve(drafts[j], rank=r + 1) for r, j in enumerate(order)]
        for r, j in enumerate(order):
            above = placed[r - 1] if r > 0 else None
            below = placed[r + 1] if r + 1 < len(placed) else None
            out[rows[j]] = attrs.evolve(placed[r], reason=_reason(placed[r], above, below, score_name))
    return [p for p in out if p is not None]


def rank_matrix(
    matrix: VerdictMatrix,
    finals: Sequence[Final],
    *,
    tasks_of: Sequence[str],
    outputs: Sequence[Any],
    ops: Sequence[str],
    observations: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
    similarity: Similarity | None = None,
    tasks: Mapping[str, Mapping[str, Any]] | None = None,
    score: str = DEFAULT_SCORE,
) -> list[Placement]:
    """Rank graded items from their verdict matrix (``ops``: the verifier's root and expression ops, which
    the evidence score reads), their final verdicts and, for the support, the observations of the
    similarity's observer (``Application.observations``)."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {', '.join(SCORES)}, not {score!r}")
    values = SCORES[score](matrix, ops)
    seen = (observations or {}).get(similarity.observer, {}) if similarity is not None else {}
    supports = support_sizes(seen, similarity, tasks or {})
    keys = [tie_key(t, o) for t, o in zip(tasks_of, outputs)]
    return rank(list(matrix.item_ids), list(tasks_of), list(finals), list(values), supports, keys, score_name=score)


__all__ = [
    "DEFAULT_SCORE",
    "SCORES",
    "VERDICT_ORDER",
    "Placement",
    "Score",
    "drawback_score",
    "evidence_score",
    "no_score",
    "rank",
    "rank_matrix",
    "support_sizes",
    "tie_key",
]
