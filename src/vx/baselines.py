"""Peer methods: what a person could use instead of an evolved vx verifier, over the same verdicts.

Every peer turns one verdict matrix (items × ops, int8 tri-state: 1 drawback, 0 clean, -1
abstain) into one verdict per item, from the same evidence vx evolution gets — the op verdicts on
the unlabeled train items and on the labeled dev items — and nothing else:

==========================  =====================================================================
`BestSingleOp`              the one op with the best dev agreement (recall-weighted, FAIL weight 2)
`MajorityVote`              drawback when more opining ops fire than stay clean; a tie abstains
`SnorkelLabelModel`         Snorkel's generative `LabelModel`, fitted on the unlabeled train matrix
`SnorkelMajority`           Snorkel's `MajorityLabelVoter` (a check that `MajorityVote` is the standard)
`Spade`                     SPADE-style selection: the smallest *conjunction* of ops (an output
                            passes only if no selected op fires, i.e. ``(any o1 … ok)``) whose dev
                            failure coverage is ≥ α and false-failure rate ≤ τ, solved exactly as
                            an integer program (scipy's `milp`)
`LogisticRegression`        L2 logistic regression on the dev items' op verdicts (scikit-learn when
                            installed, else an exact Newton solver of the same objective in numpy)
==========================  =====================================================================

Protocol: ``peer.fit(FitData) -> Fitted``; ``fitted.predict(votes) -> int8 codes`` (1 drawback,
0 clean, -1 abstain) for any rows of the same op columns. `FitData` holds train verdicts (no
labels), dev verdicts and dev labels: the locked split cannot reach a peer. The family's root is
not a peer's business: `run_peer` hands it the rows the root does not decide and conjoins the
root afterwards, exactly as a vx verifier's final verdict does (docs/design.md §2), so every method is
compared on the same footing.

Optional dependencies: `Spade` needs scipy; the Snorkel peers need ``snorkel`` (and torch); all
are in the ``bench`` extra (``pip install 'vx-verifiers[bench]'``). `LogisticRegression` works
without scikit-learn.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import attrs
import numpy as np

from vx.dsl.ast import Any as AnyNode
from vx.dsl.ast import Node, OpRef
from vx.dsl.printer import to_text
from vx.dsl.semantics import final_codes
from vx.errors import MissingDependency

__all__ = [
    "FitData",
    "Fitted",
    "FixedOps",
    "Peer",
    "PeerResult",
    "BestSingleOp",
    "MajorityVote",
    "SnorkelLabelModel",
    "SnorkelMajority",
    "Spade",
    "LogisticRegression",
    "MissingDependency",
    "run_peer",
    "majority_codes",
    "any_codes",
    "dev_score",
    "logistic_fit_numpy",
]

DRAWBACK, CLEAN, ABSTAIN = 1, 0, -1


def _require(module: str, peer: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(
            f"the {peer} peer needs the {module.split('.')[0]!r} package ({exc}); "
            "install the benchmark extra: pip install 'vx-verifiers[bench]'"
        ) from None


# ----------------------------------------------------------------------------------------------
# data


def _votes(a: Any, what: str) -> np.ndarray:
    v = np.asarray(a)
    if v.ndim != 2:
        raise ValueError(f"{what} must be a 2-d array (items × ops), got shape {v.shape}")
    v = v.astype(np.int8, copy=False)
    if v.size and not np.isin(v, (-1, 0, 1)).all():
        raise ValueError(f"{what} must hold tri-state codes 1 (drawback), 0 (clean), -1 (abstain)")
    return v


def _strs(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(items)


@attrs.frozen
class FitData:
    """What a peer may learn from: verdicts of `op_names` on unlabeled train rows and on labeled dev rows.

    ``dev_labels`` are P(pass) (1 pass, 0 fail; soft labels are thresholded at 0.5).
    ``dev_forced`` marks dev rows the family's root already fails (their final verdict is FAIL
    whatever the peer says); `train` holds only rows the root does not decide.
    """

    op_names: tuple[str, ...] = attrs.field(converter=_strs)
    train: np.ndarray = attrs.field(converter=lambda a: _votes(a, "train votes"))
    dev: np.ndarray = attrs.field(converter=lambda a: _votes(a, "dev votes"))
    dev_labels: np.ndarray = attrs.field(converter=lambda a: np.asarray(a, dtype=float))
    dev_forced: np.ndarray = attrs.field(
        default=attrs.Factory(lambda self: np.zeros(self.dev.shape[0], dtype=bool), takes_self=True),
        converter=lambda a: np.asarray(a, dtype=bool),
    )

    def __attrs_post_init__(self) -> None:
        k = len(self.op_names)
        for name, arr in (("train", self.train), ("dev", self.dev)):
            if arr.shape[1] != k:
                raise ValueError(f"{name} votes have {arr.shape[1]} columns but there are {k} op names")
        if self.dev_labels.shape != (self.dev.shape[0],):
            raise ValueError(f"{self.dev.shape[0]} dev rows but {self.dev_labels.shape} dev labels")
        if np.isnan(self.dev_labels).any() or ((self.dev_labels < 0) | (self.dev_labels > 1)).any():
            raise ValueError("dev labels must be probabilities of pass in [0, 1]")
        if self.dev_forced.shape != (self.dev.shape[0],):
            raise ValueError("dev_forced must have one entry per dev row")

    @property
    def dev_fail(self) -> np.ndarray:
        return self.dev_labels < 0.5


class Fitted(Protocol):
    def predict(self, votes: np.ndarray) -> np.ndarray: ...

    def describe(self) -> str: ...


class Peer(Protocol):
    name: str

    def fit(self, data: FitData) -> Fitted: ...


# ----------------------------------------------------------------------------------------------
# shared pieces


def majority_codes(votes: np.ndarray) -> np.ndarray:
    """Per row: 1 if more opining columns fire than stay clean, 0 if fewer, -1 on a tie or no opinion."""
    v = _votes(votes, "votes")
    fires = (v == DRAWBACK).sum(axis=1)
    cleans = (v == CLEAN).sum(axis=1)
    return np.where(fires > cleans, DRAWBACK, np.where(cleans > fires, CLEAN, ABSTAIN)).astype(np.int8)


def any_codes(votes: np.ndarray, columns: Sequence[int]) -> np.ndarray:
    """``(any …)`` over the given columns: 1 if one fires, else 0 if one opines, else -1.
    With no columns at all (an empty conjunction of checks) every row is clean."""
    v = _votes(votes, "votes")
    if len(columns) == 0:
        return np.zeros(v.shape[0], dtype=np.int8)
    sub = v[:, list(columns)]
    return np.where(
        (sub == DRAWBACK).any(axis=1), DRAWBACK, np.where((sub == CLEAN).any(axis=1), CLEAN, ABSTAIN)
    ).astype(np.int8)


def dev_score(codes: np.ndarray, fail: np.ndarray, forced: np.ndarray | None = None, fail_weight: float = 2.0) -> float:
    """Recall-weighted dev agreement of final verdicts (an abstention counts as PASS; a forced
    row — the root fails it — counts as FAIL), the way vx's A_dev weighs the classes."""
    says_fail = np.asarray(codes) == DRAWBACK
    if forced is not None:
        says_fail = says_fail | np.asarray(forced, dtype=bool)
    fail = np.asarray(fail, dtype=bool)
    parts, weights = [], []
    if fail.any():
        parts.append(says_fail[fail].mean())
        weights.append(fail_weight)
    if (~fail).any():
        parts.append((~says_fail[~fail]).mean())
        weights.append(1.0)
    if not parts:
        return float("nan")
    return float(np.dot(parts, weights) / sum(weights))


@attrs.frozen
class _Columns:
    """A fitted peer that is a vx expression over some of the op columns."""

    node: Node | None
    columns: tuple[int, ...]
    kind: str  # "op" | "any"
    note: str = ""

    def predict(self, votes: np.ndarray) -> np.ndarray:
        v = _votes(votes, "votes")
        if self.kind == "op":
            return v[:, self.columns[0]].copy()
        return any_codes(v, self.columns)

    def describe(self) -> str:
        text = to_text(self.node) if self.node is not None else "(no op: every output passes the peer)"
        return f"{text}{'; ' + self.note if self.note else ''}"


# ----------------------------------------------------------------------------------------------
# 1. best single op


@attrs.frozen
class BestSingleOp:
    """The op whose verdicts agree best with the dev labels (recall-weighted agreement with the
    FAIL class weighted `fail_weight`, as in vx's A_dev). Ties: more dev-opined items, then more
    train items opined on, then the op name."""

    fail_weight: float = 2.0
    name: str = "best single op"

    def fit(self, data: FitData) -> Fitted:
        if not data.op_names:
            raise ValueError("no ops to choose from")
        best: tuple | None = None
        for j, op in enumerate(data.op_names):
            col = data.dev[:, j]
            key = (
                -round(dev_score(col, data.dev_fail, data.dev_forced, self.fail_weight), 12),
                -int((col >= 0).sum()),
                -int((data.train[:, j] >= 0).sum()),
                op,
            )
            if best is None or key < best[0]:
                best = (key, j)
        assert best is not None
        (neg, *_), j = best
        return _Columns(OpRef(data.op_names[j]), (j,), "op", f"dev score {-neg:.3f}")


@attrs.frozen
class FixedOps:
    """A method that learns nothing: ``(any o1 … ok)`` over named ops (one op: that op alone). What a
    user picks off the shelf, e.g. a plurality vote of the attempts (MBR-exec) or CodeT's dual
    agreement -- both peer ops of the code family -- alone or with the visible example."""

    ops: tuple[str, ...] = attrs.field(converter=_strs)
    name: str = "fixed ops"

    def fit(self, data: FitData) -> Fitted:
        missing = [o for o in self.ops if o not in data.op_names]
        if missing:
            raise ValueError(f"{self.name}: op(s) {', '.join(missing)} are not among the columns")
        cols = tuple(data.op_names.index(o) for o in self.ops)
        node = OpRef(self.ops[0]) if len(self.ops) == 1 else AnyNode([OpRef(o) for o in self.ops])
        return _Columns(node, cols, "op" if len(cols) == 1 else "any")


# ----------------------------------------------------------------------------------------------
# 2. majority vote


@attrs.frozen
class _Majority:
    def predict(self, votes: np.ndarray) -> np.ndarray:
        return majority_codes(votes)

    def describe(self) -> str:
        return "majority of opining ops (tie or no opinion: abstain)"


@attrs.frozen
class MajorityVote:
    """Unweighted majority of the opining ops; learns nothing."""

    name: str = "majority vote"

    def fit(self, data: FitData) -> Fitted:
        return _Majority()


# ----------------------------------------------------------------------------------------------
# 3. Snorkel


@attrs.frozen
class _SnorkelModel:
    model: Any
    text: str

    def predict(self, votes: np.ndarray) -> np.ndarray:
        v = _votes(votes, "votes")
        if v.shape[0] == 0:
            return np.zeros(0, dtype=np.int8)
        return np.asarray(self.model.predict(v.astype(np.int64), tie_break_policy="abstain"), dtype=np.int8)

    def describe(self) -> str:
        return self.text


@attrs.frozen
class SnorkelLabelModel:
    """Snorkel's `LabelModel` (cardinality 2; class 1 = drawback) fitted on the unlabeled train
    verdicts with its defaults except `n_epochs`, `lr` and `seed`; ties abstain."""

    seed: int = 0
    n_epochs: int = 500
    lr: float = 0.01
    name: str = "Snorkel LabelModel"

    def fit(self, data: FitData) -> Fitted:
        lm = _require("snorkel.labeling.model", self.name)
        if data.train.shape[0] == 0:
            raise ValueError("the Snorkel LabelModel needs unlabeled train rows to fit on")
        model = lm.LabelModel(cardinality=2, verbose=False)
        model.fit(data.train.astype(np.int64), n_epochs=self.n_epochs, lr=self.lr, seed=self.seed, progress_bar=False)
        weights = model.get_weights()
        top = sorted(zip(data.op_names, weights), key=lambda t: -t[1])[:3]
        return _SnorkelModel(model, "estimated op accuracies: " + ", ".join(f"{n} {w:.2f}" for n, w in top) + " …")


@attrs.frozen
class SnorkelMajority:
    """Snorkel's `MajorityLabelVoter` (ties abstain) — the reference for `MajorityVote`."""

    name: str = "Snorkel MajorityLabelVoter"

    def fit(self, data: FitData) -> Fitted:
        lm = _require("snorkel.labeling.model", self.name)
        return _SnorkelModel(lm.MajorityLabelVoter(cardinality=2), "Snorkel majority (tie: abstain)")


# ----------------------------------------------------------------------------------------------
# 4. SPADE-style selection


@attrs.frozen
class Spade:
    """The smallest set of ops S such that ``(any S)`` — an output fails if any selected op fires —
    covers at least `alpha` of the dev failures and falsely fails at most `tau` of the dev passes
    (root-failed dev rows count as covered / falsely failed whatever S is). Ties between sets of
    the same size: more failures covered, then fewer false failures. Solved exactly as a 0/1
    integer program with scipy's `milp` (HiGHS).

    When no set meets both bounds the peer says so and falls back to the set with the most
    failures covered within the false-failure bound (then the smallest); when even the empty set
    breaks the false-failure bound, the empty set.
    """

    alpha: float = 0.9
    tau: float = 0.25
    name: str = "SPADE (min. conjunction)"

    def fit(self, data: FitData) -> Fitted:
        x, feasible = spade_select(data.dev, data.dev_fail, data.dev_forced, alpha=self.alpha, tau=self.tau)
        cols = tuple(int(j) for j in np.flatnonzero(x))
        node = (
            AnyNode(tuple(OpRef(data.op_names[j]) for j in cols))
            if len(cols) > 1
            else (OpRef(data.op_names[cols[0]]) if cols else None)
        )
        note = f"α={self.alpha:g}, τ={self.tau:g}" + ("" if feasible else "; infeasible: best coverage within τ")
        return _Columns(node, cols, "any", note)


def spade_select(
    dev: np.ndarray, fail: np.ndarray, forced: np.ndarray | None = None, *, alpha: float = 0.9, tau: float = 0.25
) -> tuple[np.ndarray, bool]:
    """The 0/1 op selection of `Spade` and whether it meets both bounds (see `Spade`)."""
    optimize = _require("scipy.optimize", "SPADE")
    v = _votes(dev, "dev votes")
    n, k = v.shape
    fail = np.asarray(fail, dtype=bool)
    forced = np.zeros(n, dtype=bool) if forced is None else np.asarray(forced, dtype=bool)
    if not 0 <= alpha <= 1 or not 0 <= tau <= 1:
        raise ValueError("alpha and tau must be in [0, 1]")
    fires = (v == DRAWBACK).astype(float)
    F = np.flatnonzero(fail & ~forced)  # failures a selection must cover
    P = np.flatnonzero(~fail & ~forced)  # passes a selection may falsely fail
    need = math.ceil(alpha * fail.sum() - 1e-9) - int((fail & forced).sum())
    budget = math.floor(tau * (~fail).sum() + 1e-9) - int((~fail & forced).sum())
    if budget < 0 or k == 0:
        return np.zeros(k, dtype=bool), budget >= 0 and need <= 0
    # variables: x (k ops) | c (covered failures, |F|) | f (falsely failed passes, |P|)
    nf, npass = len(F), len(P)
    nv = k + nf + npass
    rows, lo, hi = [], [], []

    def row() -> np.ndarray:
        return np.zeros(nv)

    for t, i in enumerate(F):  # c_t <= sum_j fires[i, j] x_j
        r = row()
        r[:k] = -fires[i]
        r[k + t] = 1
        rows.append(r)
        lo.append(-np.inf)
        hi.append(0)
    for t, i in enumerate(P):  # f_t >= x_j for every op j firing on pass item i
        for j in np.flatnonzero(fires[i]):
            r = row()
            r[j] = 1
            r[k + nf + t] = -1
            rows.append(r)
            lo.append(-np.inf)
            hi.append(0)
    budget_row = row()
    budget_row[k + nf :] = 1
    cover_row = row()
    cover_row[k : k + nf] = 1
    integrality = np.ones(nv)
    bounds = optimize.Bounds(np.zeros(nv), np.ones(nv))
    w_size = nf + npass + 1  # one op more outweighs any change of the two counts

    def solve(extra_rows, extra_lo, extra_hi, cost) -> np.ndarray | None:
        A = np.array(rows + extra_rows) if rows or extra_rows else np.zeros((0, nv))
        cons = optimize.LinearConstraint(A, np.array(lo + extra_lo), np.array(hi + extra_hi)) if len(A) else None
        res = optimize.milp(cost, constraints=cons, integrality=integrality, bounds=bounds)
        if res.status != 0 or res.x is None:
            return None
        return np.round(res.x[:k]).astype(bool)

    cost = np.concatenate([np.full(k, float(w_size)), -np.ones(nf), np.ones(npass)])
    x = solve([cover_row, budget_row], [max(need, 0), -np.inf], [np.inf, budget], cost)
    if x is not None:
        return x, True
    # no set meets both bounds: most coverage within the false-failure budget, then fewest ops
    cost = np.concatenate([np.ones(k), -np.full(nf, float(k + 1)), np.zeros(npass)])
    x = solve([budget_row], [-np.inf], [budget], cost)
    return (x if x is not None else np.zeros(k, dtype=bool)), False


# ----------------------------------------------------------------------------------------------
# 5. logistic regression on the dev items


def _features(votes: np.ndarray) -> np.ndarray:
    """+1 drawback, -1 clean, 0 abstain (an abstention is no evidence either way)."""
    return _votes(votes, "votes").astype(float)


def logistic_fit_numpy(
    X: np.ndarray, y: np.ndarray, C: float = 1.0, *, tol: float = 1e-10, max_iter: int = 100
) -> tuple[np.ndarray, float]:
    """Minimise C·Σ logloss + ½‖w‖² (intercept not penalised) — scikit-learn's
    ``LogisticRegression(C=C)`` objective — by Newton's method. Returns (w, b)."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, k = X.shape
    Z = np.hstack([X, np.ones((n, 1))])
    theta = np.zeros(k + 1)
    reg = np.ones(k + 1) / C
    reg[-1] = 0.0
    for _ in range(max_iter):
        z = Z @ theta
        p = 1.0 / (1.0 + np.exp(-z))
        grad = Z.T @ (p - y) + reg * theta
        H = (Z.T * (p * (1 - p))) @ Z + np.diag(reg) + 1e-12 * np.eye(k + 1)
        step = np.linalg.solve(H, grad)
        # backtracking keeps Newton safe when the classes are separable (the intercept is unpenalised)
        f0 = _lr_objective(Z, y, theta, reg)
        t = 1.0
        while t > 1e-8 and _lr_objective(Z, y, theta - t * step, reg) > f0 - 1e-4 * t * grad @ step:
            t /= 2
        theta = theta - t * step
        if np.abs(t * step).max() < tol:
            break
    return theta[:-1], float(theta[-1])


def _lr_objective(Z: np.ndarray, y: np.ndarray, theta: np.ndarray, reg: np.ndarray) -> float:
    z = Z @ theta
    return float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * np.sum(reg * theta * theta))


@attrs.frozen
class _Linear:
    w: np.ndarray
    b: float
    op_names: tuple[str, ...]
    backend: str

    def predict(self, votes: np.ndarray) -> np.ndarray:
        z = _features(votes) @ self.w + self.b
        return np.where(z >= 0, DRAWBACK, CLEAN).astype(np.int8)

    def describe(self) -> str:
        top = sorted(zip(self.op_names, self.w), key=lambda t: -abs(t[1]))[:3]
        return f"{self.backend}; largest weights: " + ", ".join(f"{n} {w:+.2f}" for n, w in top)


@attrs.frozen
class _Constant:
    code: int
    why: str

    def predict(self, votes: np.ndarray) -> np.ndarray:
        return np.full(_votes(votes, "votes").shape[0], self.code, dtype=np.int8)

    def describe(self) -> str:
        return self.why


@attrs.frozen
class LogisticRegression:
    """L2 logistic regression (C = 1, scikit-learn's defaults) predicting FAIL from the op
    verdicts of the dev rows the root does not decide; features +1 drawback / -1 clean / 0 abstain.
    Never abstains. `backend`: "auto" (scikit-learn when installed, else numpy), "sklearn" or "numpy"."""

    C: float = 1.0
    backend: str = "auto"
    name: str = "logistic regression (dev)"

    def fit(self, data: FitData) -> Fitted:
        rows = ~data.dev_forced
        X = _features(data.dev[rows])
        y = data.dev_fail[rows].astype(int)
        if len(y) == 0 or y.min() == y.max():
            code = DRAWBACK if len(y) and y[0] == 1 else CLEAN
            return _Constant(code, f"dev rows of one class only: always {'FAIL' if code == 1 else 'PASS'}")
        backend = self.backend
        if backend == "auto":
            try:
                import sklearn  # noqa: F401

                backend = "sklearn"
            except ImportError:
                backend = "numpy"
        if backend == "sklearn":
            lm = _require("sklearn.linear_model", self.name)
            clf = lm.LogisticRegression(C=self.C, max_iter=1000)
            clf.fit(X, y)
            return _Linear(clf.coef_[0].astype(float), float(clf.intercept_[0]), data.op_names, "scikit-learn")
        if backend != "numpy":
            raise ValueError(f"unknown backend {self.backend!r}; choose auto, sklearn or numpy")
        w, b = logistic_fit_numpy(X, y, self.C)
        return _Linear(w, b, data.op_names, "numpy (Newton)")


# ----------------------------------------------------------------------------------------------
# running a peer with the family's root


@attrs.frozen
class PeerResult:
    name: str
    codes: np.ndarray  # final int8 codes per item: 1 FAIL, 0 PASS, -1 ABSTAIN (root conjoined)
    detail: str


def run_peer(
    peer: Peer,
    votes: np.ndarray,
    op_names: Sequence[str],
    *,
    train: np.ndarray,
    dev: np.ndarray,
    dev_labels: np.ndarray,
    root: np.ndarray | None = None,
) -> PeerResult:
    """Fit `peer` on the train rows (unlabeled) and dev rows (with `dev_labels`, aligned with
    ``np.flatnonzero(dev)``), predict every row of `votes`, and conjoin the root: a row the root
    fails is FAIL whatever the peer says. Rows that are neither train nor dev (locked) are only
    predicted."""
    v = _votes(votes, "votes")
    n = v.shape[0]
    train = np.asarray(train, dtype=bool)
    dev = np.asarray(dev, dtype=bool)
    if train.shape != (n,) or dev.shape != (n,):
        raise ValueError("train and dev masks must have one entry per row of votes")
    if (train & dev).any():
        raise ValueError("train and dev rows overlap")
    root_fails = np.zeros(n, dtype=bool) if root is None else (np.asarray(root) == DRAWBACK)
    data = FitData(
        tuple(op_names), v[train & ~root_fails], v[dev], np.asarray(dev_labels, dtype=float), root_fails[dev]
    )
    fitted = peer.fit(data)
    codes = np.asarray(fitted.predict(v), dtype=np.int8)
    if codes.shape != (n,):
        raise ValueError(f"{peer.name}: predicted {codes.shape} codes for {n} rows")
    codes = final_codes(root_fails.astype(np.int8), codes)
    return PeerResult(peer.name, codes, fitted.describe())
