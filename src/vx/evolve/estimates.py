"""Label-free estimates of how often each op, and each candidate verifier, fails a correct output.

Ten dev items cannot see a false-alarm rate: with five dev passes, an op that wrongly fires on 10 % of
correct outputs goes unseen with probability 0.9^5 = 0.59. The unlabeled train split is large, and two
kinds of evidence on it say that an output is correct without a label:

* **Agreement** -- where a task has three or more attempts, an attempt that every other attempt
  behaves like (the pack's ``agreement`` op, a baseline peer op, is clean) *and* that passes what its
  task visibly asks (the pack's ``gate`` op -- the code family's visible examples, SQL's "it
  executes" -- is clean). Unanimity alone is not enough: five attempts that all print instead of
  returning agree with each other, and an op that rightly flags them would be charged a false alarm.
* **Quiet** -- where there is no agreement evidence (one or two attempts per task): an output that
  passes the gate and that at most one op of the reference pool flags (a family without a gate has no
  quiet evidence: that no op flags an output says nothing of a failure class no op detects yet). An op that fires alone
  on such an output is charged a false alarm; an output two ops flag is a corroborated failure, not evidence
  of a pass. (This over-charges a detector for the failures only it catches, which is why agreement
  evidence is preferred wherever it exists.)

The outputs either kind calls correct are the **pseudo-positives**; an op's firing rate on them
estimates its false-alarm rate, and a candidate's estimated *pass recall* is the share of them whose
final verdict is not FAIL. A second estimator is the flat **label model** (one latent "fails", the
classic Dawid–Skene model of `vx.evolve.labelmodel`, fitted on the same items with the gate and
agreement ops among its voters): every item weighs ``P(pass | verdicts)``. Both give a weight per item;
Each op's estimate was compared with the truth on the train split's hidden labels of every benchmark family
(the quality benchmark's design figures), which is how the default was chosen.

Everything here reads the unlabeled train items (and, for the label model's anchor, the dev labels);
never a locked label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.evolve.labelmodel import fit_label_model
from vx.ops.apply import apply_ops
from vx.ops.progress import Reporter

__all__ = [
    "ESTIMATORS",
    "DEFAULT_ESTIMATOR",
    "PassEvidence",
    "OpEstimate",
    "pass_evidence",
    "op_estimates",
    "HIGH_FALSE_ALARM",
    "estimates_table",
    "header_estimates",
    "parse_header_estimates",
]

ESTIMATORS = ("pseudo-positives", "label-model")
DEFAULT_ESTIMATOR = "pseudo-positives"
#: an op whose estimated false-alarm rate is at least this is flagged as such (`vx ops`, `vx explain`)
HIGH_FALSE_ALARM = 0.02

AGREEMENT, QUIET = 1, 2  # PassEvidence.kind: every other attempt behaves the same and it passes the gate; it
#                          passes the gate and at most one op flags it


@attrs.frozen
class PassEvidence:
    """How strongly each item is believed correct: ``weight[i]`` in [0, 1] (0 outside the scope).

    ``kind[i]`` is `AGREEMENT`, `QUIET` or 0 (pseudo-positives only; the label model's are all 0)."""

    estimator: str
    weight: np.ndarray  # float[n_items]
    kind: np.ndarray  # int8[n_items]
    gate: str | None = None
    agreement: str | None = None

    @property
    def n(self) -> float:
        return float(self.weight.sum())

    def known_good(self) -> np.ndarray:
        """The items strong enough to gate a new op's birth: agreement pseudo-positives (quiet ones hold the
        failures only a new detector would see: 28 % of them fail on the MBPP+ design split), or, for the
        label model, P(pass) ≥ 0.9."""
        if self.estimator == "label-model":
            return self.weight >= 0.9
        return self.kind == AGREEMENT

    def counts(self) -> dict[str, int]:
        return {"agreement": int((self.kind == AGREEMENT).sum()), "quiet": int((self.kind == QUIET).sum())}

    def describe(self) -> str:
        if self.estimator == "label-model":
            return f"label model: {self.n:.1f} expected correct outputs"
        c = self.counts()
        return (
            f"{c['agreement']} pseudo-positive(s) by agreement ({self.agreement}) and {c['quiet']} quiet ones "
            f"(gate {self.gate or 'none'})"
        )

    def pass_recall(self, fires: np.ndarray) -> float:
        """The estimated pass recall of a verdict column (``fires``: bool[n_items], FAIL)."""
        total = self.n
        return float(1.0 - (self.weight * fires).sum() / total) if total > 0 else float("nan")


@attrs.frozen
class OpEstimate:
    """An op's estimated false-alarm rate: it fires on ``fires`` of the ``n`` pseudo-positives it opines on."""

    op: str
    rate: float  # nan when n == 0
    n: float
    fires: float
    evidence: str

    def as_dict(self) -> dict[str, object]:
        return {
            "op": self.op,
            "rate": None if np.isnan(self.rate) else round(float(self.rate), 6),
            "n": round(float(self.n), 3),
            "fires": round(float(self.fires), 3),
            "evidence": self.evidence,
        }

    @property
    def high(self) -> bool:
        return bool(not np.isnan(self.rate) and self.rate >= HIGH_FALSE_ALARM)


def _column(matrix: VerdictMatrix, name: str | None) -> np.ndarray | None:
    return matrix.column(name) if name is not None and name in matrix.op_names else None


def pass_evidence(
    matrix: VerdictMatrix,
    scope: np.ndarray,
    *,
    reference: Sequence[str],
    gate: str | None = None,
    agreement: str | None = None,
    estimator: str = DEFAULT_ESTIMATOR,
    dev_p: np.ndarray | None = None,
    root: str | None = None,
) -> PassEvidence:
    """The pass evidence of every item of ``scope`` (bool[n_items]: the unlabeled train items the root
    leaves open), from the ``reference`` ops' verdicts and the pack's ``gate`` and ``agreement`` ops."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {', '.join(ESTIMATORS)}, not {estimator!r}")
    n = matrix.n_items
    scope = np.asarray(scope, dtype=bool)
    g = _column(matrix, gate)
    a = _column(matrix, agreement)
    ref = [o for o in reference if o in matrix.op_names and o not in (gate, agreement)]
    if estimator == "label-model":
        voters = list(dict.fromkeys([*ref, *(o for o in (gate, agreement) if o in matrix.op_names)]))
        votes = matrix.select_ops(voters).to_array() if voters else np.zeros((n, 0), np.int8)
        root_open = np.ones(n, bool) if root is None or root not in matrix.op_names else matrix.column(root) != 1
        dev = ~np.isnan(dev_p) if dev_p is not None else np.zeros(n, bool)
        modelled = (scope | dev) & root_open
        anchors = np.where(dev, 1.0 - dev_p, np.nan) if dev_p is not None else np.full(n, np.nan)
        lm = fit_label_model(votes, voters, modelled=modelled, anchors=anchors)
        weight = np.where(scope, 1.0 - np.nan_to_num(lm.q, nan=1.0), 0.0)
        return PassEvidence(estimator, weight, np.zeros(n, np.int8), gate, agreement)
    gate_ok = np.ones(n, bool) if g is None else g == 0
    firing = np.zeros(n, np.int64)
    for o in ref:
        firing += matrix.column(o) == 1
    kind = np.zeros(n, np.int8)
    if a is not None:
        kind[scope & (a == 0) & gate_ok] = AGREEMENT
    if g is not None:  # quiet evidence needs a gate: "no op flags it" alone is no evidence of a pass
        quiet = scope & gate_ok & (firing <= 1) & ((a == -1) if a is not None else True)
        kind[quiet & (kind == 0)] = QUIET
    return PassEvidence(estimator, (kind > 0).astype(float), kind, gate, agreement)


def op_estimates(matrix: VerdictMatrix, evidence: PassEvidence, ops: Sequence[str]) -> dict[str, OpEstimate]:
    """Each op's estimated false-alarm rate on the pass evidence (its firing rate on the pseudo-positives
    it opines on, weighted by the evidence)."""
    out: dict[str, OpEstimate] = {}
    w = evidence.weight
    what = (
        "label model P(pass)"
        if evidence.estimator == "label-model"
        else "pseudo-positives: " + "; ".join(f"{k} {v}" for k, v in evidence.counts().items() if v)
    )
    for o in ops:
        if o not in matrix.op_names:
            continue
        col = matrix.column(o)
        n = float((w * (col != -1)).sum())
        f = float((w * (col == 1)).sum())
        out[o] = OpEstimate(o, f / n if n > 0 else float("nan"), n, f, what)
    return out


def estimates_table(estimates: Mapping[str, OpEstimate]) -> list[dict[str, Any]]:
    """Plain rows (for the run record and reports), highest estimated rate first."""
    rows = [e.as_dict() for e in estimates.values()]
    return sorted(rows, key=lambda r: (-(r["rate"] if r["rate"] is not None else -1.0), str(r["op"])))


def header_estimates(rows: Sequence[Mapping[str, Any]]) -> str:
    """The ``; false_alarms:`` header value of an evolved .vx file: ``op rate (n N), ...``."""
    parts = []
    for r in rows:
        rate = r.get("rate")
        parts.append(f"{r['op']} {'n/a' if rate is None else f'{float(rate):.4f}'} (n {float(r.get('n') or 0):.0f})")
    return ", ".join(parts) if parts else "none"


def parse_header_estimates(value: str) -> dict[str, tuple[float, float]]:
    """The estimates a ``; false_alarms:`` header gives: op → (rate, n); unreadable parts are skipped."""
    out: dict[str, tuple[float, float]] = {}
    for part in (value or "").split(","):
        bits = part.replace("(", " ").replace(")", " ").split()
        if len(bits) == 4 and bits[2] == "n":
            try:
                out[bits[0]] = (float(bits[1]), float(bits[3]))
            except ValueError:
                continue
    return out


@attrs.frozen
class FamilyEstimates:
    """Every op's estimated false-alarm rate on a family's train split (`family_false_alarms`)."""

    family: str
    evidence: PassEvidence
    ops: dict[str, OpEstimate]

    def as_dict(self) -> dict[str, object]:
        return {
            "family": self.family,
            "estimator": self.evidence.estimator,
            "evidence": self.evidence.describe(),
            "pseudo_positives": round(self.evidence.n, 3),
            "ops": estimates_table(self.ops),
        }


def family_false_alarms(
    family,
    *,
    estimator: str = DEFAULT_ESTIMATOR,
    jobs: int | None = None,
    timeout: float = 10.0,
    cache=None,
    progress: bool | Reporter = False,
) -> FamilyEstimates:
    """Apply a family's pool to its train and dev items and estimate each op's false-alarm rate there
    (what `vx ops FAMILY --false-alarms` shows; the engine computes the same every round)."""
    view = family.evolution_view()
    pool = view.pool()
    items = list(view.train.items) + list(view.dev.items)
    app = apply_ops(
        pool,
        items,
        view.tasks,
        jobs=jobs,
        timeout=timeout,
        cache=cache,
        progress=progress,
        description="applying the pool",
        peers=getattr(view, "peers", None),
    )
    m = app.matrix
    n = m.n_items
    train = np.zeros(n, bool)
    train[: len(view.train)] = True
    dev_p = np.full(n, np.nan)
    dev_p[len(view.train) :] = [float(it.label) for it in view.dev.items]
    root = pool.root_name
    scope = train & (m.column(root) != 1 if root is not None else np.ones(n, bool))
    reference = [o.name for o in pool if o.status == "active" and o.name != root]
    pack = view.pack()
    ev = pass_evidence(
        m,
        scope,
        reference=reference,
        gate=pack.gate,
        agreement=pack.agreement,
        estimator=estimator,
        dev_p=dev_p,
        root=root,
    )
    names = [o.name for o in pool if o.name != root and not o.baseline]
    return FamilyEstimates(family.name, ev, op_estimates(m, ev, names))
