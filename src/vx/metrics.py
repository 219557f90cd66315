"""Statistics that come with every comparison (DESIGN §9).

Conventions: the positive class is FAIL (a drawback was found). Labels are P(pass) in [0, 1]
(soft labels are thresholded at 0.5 for the counting metrics). A final ABSTAIN counts as PASS in
agreement figures — the consumer convention, "no known drawback was found" — and `coverage`
reports the share of items the verifier actually opined on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vx.dsl.verdict import Final


def _fail_mask(labels: Sequence[float | None]) -> np.ndarray:
    return np.array([lab is not None and lab < 0.5 for lab in labels], dtype=bool)


def _labeled_mask(labels: Sequence[float | None]) -> np.ndarray:
    return np.array([lab is not None for lab in labels], dtype=bool)


@attrs.frozen
class Agreement:
    """Agreement of final verdicts with labels."""

    n: int  # labeled items
    tp: int  # verdict FAIL, label fail
    fp: int  # verdict FAIL, label pass
    tn: int  # verdict PASS (or ABSTAIN), label pass
    fn: int  # verdict PASS (or ABSTAIN), label fail
    abstained: int
    fail_weight: float = 2.0

    @property
    def accuracy(self) -> float:
        return (self.tp + self.tn) / self.n if self.n else float("nan")

    @property
    def fail_recall(self) -> float:
        d = self.tp + self.fn
        return self.tp / d if d else float("nan")

    @property
    def pass_recall(self) -> float:
        d = self.tn + self.fp
        return self.tn / d if d else float("nan")

    @property
    def pass_precision(self) -> float:
        """Of the items the verifier passes (or abstains on), the share whose label is pass."""
        d = self.tn + self.fn
        return self.tn / d if d else float("nan")

    @property
    def balanced_accuracy(self) -> float:
        return _weighted_recall(self.fail_recall, self.pass_recall, 1.0)

    @property
    def recall_weighted(self) -> float:
        """(fail_weight · recall_fail + recall_pass) / (fail_weight + 1); one class if the other is absent."""
        return _weighted_recall(self.fail_recall, self.pass_recall, self.fail_weight)

    @property
    def coverage(self) -> float:
        return (self.n - self.abstained) / self.n if self.n else float("nan")

    @property
    def kappa(self) -> float:
        """Cohen's κ between verdicts (abstain as pass) and labels."""
        n = self.n
        if not n:
            return float("nan")
        po = (self.tp + self.tn) / n
        p_fail_v = (self.tp + self.fp) / n
        p_fail_l = (self.tp + self.fn) / n
        pe = p_fail_v * p_fail_l + (1 - p_fail_v) * (1 - p_fail_l)
        return (po - pe) / (1 - pe) if pe < 1 else (1.0 if po == 1 else 0.0)

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "accuracy": self.accuracy, "recall_weighted": self.recall_weighted,
                "balanced_accuracy": self.balanced_accuracy, "fail_recall": self.fail_recall,
                "pass_recall": self.pass_recall, "kappa": self.kappa, "coverage": self.coverage,
                "confusion": {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn},
                "abstained": self.abstained}


def _weighted_recall(r_fail: float, r_pass: float, fw: float) -> float:
    if np.isnan(r_fail) and np.isnan(r_pass):
        return float("nan")
    if np.isnan(r_fail):
        return r_pass
    if np.isnan(r_pass):
        return r_fail
    return (fw * r_fail + r_pass) / (fw + 1)


def agreement(verdicts: Sequence[Final | str], labels: Sequence[float | None], *,
              fail_weight: float = 2.0) -> Agreement:
    """Confusion counts of final verdicts against labels (unlabeled items are skipped)."""
    if len(verdicts) != len(labels):
        raise ValueError(f"{len(verdicts)} verdicts but {len(labels)} labels")
    tp = fp = tn = fn = ab = n = 0
    for v, lab in zip(verdicts, labels):
        if lab is None:
            continue
        n += 1
        v = Final(v)
        if v is Final.ABSTAIN:
            ab += 1
        says_fail = v is Final.FAIL
        is_fail = lab < 0.5
        if says_fail and is_fail:
            tp += 1
        elif says_fail:
            fp += 1
        elif is_fail:
            fn += 1
        else:
            tn += 1
    return Agreement(n, tp, fp, tn, fn, ab, fail_weight)


# ----------------------------------------------------------------------------------------------
# per-op analysis (in the spirit of Snorkel's LF summary)

@attrs.frozen
class OpSummary:
    op: str
    coverage: float  # share of items the op opines on
    fire_rate: float  # share of items where it reports a drawback
    polarity: tuple[str, ...]  # which verdicts it emits: "drawback", "clean"
    overlaps: float  # share of items where it and at least one other op opine
    conflicts: float  # share of items where it opines and some other opining op disagrees
    accuracy: float  # on labeled, opined items: fires on fail / clean on pass (nan if none, or if it never
    #                  fired on one: an op that only says clean has no accuracy as a detector, just the pass rate)
    n_labeled: int  # labeled items it opined on
    fail_hits: int  # labeled fail items it fired on
    false_alarms: int  # labeled pass items it fired on


def op_summary(matrix_array: np.ndarray, op_names: Sequence[str], labels: Sequence[float | None] | None = None,
               ) -> list[OpSummary]:
    """Per-op coverage, overlaps, conflicts and empirical accuracy over an int8 verdict array."""
    a = np.asarray(matrix_array, dtype=np.int8)
    n = a.shape[0]
    opines = a >= 0
    fires = a == 1
    n_op = opines.sum(axis=1)
    n_fire = fires.sum(axis=1)
    lab_mask = _labeled_mask(labels) if labels is not None else np.zeros(n, bool)
    fail = _fail_mask(labels) if labels is not None else np.zeros(n, bool)
    out = []
    for j, name in enumerate(op_names):
        o, f = opines[:, j], fires[:, j]
        others_op = n_op - o
        others_fire = n_fire - f
        # another opining op disagrees: some other op says the opposite verdict
        disagree = o & ((f & (others_op - others_fire > 0)) | (~f & (others_fire > 0)))
        lo = o & lab_mask
        correct = lo & (f == fail)
        pol = tuple(p for p, present in (("drawback", f.any()), ("clean", (o & ~f).any())) if present)
        out.append(OpSummary(
            name, o.mean() if n else float("nan"), f.mean() if n else float("nan"), pol,
            (o & (others_op > 0)).mean() if n else float("nan"), disagree.mean() if n else float("nan"),
            correct.sum() / lo.sum() if lo.sum() and (lo & f).any() else float("nan"), int(lo.sum()),
            int((f & fail).sum()), int((f & lab_mask & ~fail).sum())))
    return out


def conflict_matrix(matrix_array: np.ndarray) -> np.ndarray:
    """[i, j] = share of items where ops i and j both opine and disagree."""
    a = np.asarray(matrix_array, dtype=np.int8)
    if a.shape[0] == 0:
        return np.zeros((a.shape[1], a.shape[1]))
    op = (a >= 0).astype(np.int32)
    fi = (a == 1).astype(np.int32)
    cl = op - fi
    return (fi.T @ cl + cl.T @ fi) / a.shape[0]


# ----------------------------------------------------------------------------------------------
# comparisons

@attrs.frozen
class PermutationTest:
    diff: float  # mean per-item accuracy of A minus B
    p_value: float
    n_clusters: int
    n_items: int
    n_permutations: int


def paired_permutation_test(correct_a: Sequence[bool], correct_b: Sequence[bool], clusters: Sequence[Any], *,
                            n_permutations: int = 10000, seed: int = 0) -> PermutationTest:
    """Paired sign-flip permutation test, clustered: the sign of each cluster's summed
    difference is flipped at random (items of one task move together), two-sided."""
    a = np.asarray(correct_a, dtype=float)
    b = np.asarray(correct_b, dtype=float)
    if a.shape != b.shape or len(clusters) != len(a):
        raise ValueError("correct_a, correct_b and clusters must have the same length")
    keys = {c: i for i, c in enumerate(dict.fromkeys(clusters))}
    idx = np.array([keys[c] for c in clusters], dtype=np.int64)
    d = np.bincount(idx, weights=a - b, minlength=len(keys))
    obs = d.sum()
    n = len(a)
    if n == 0:
        return PermutationTest(float("nan"), 1.0, 0, 0, 0)
    rng = np.random.default_rng(seed)
    done = 0
    extreme = 0
    while done < n_permutations:
        m = min(2000, n_permutations - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(m, len(d)))
        extreme += int((np.abs(signs @ d) >= abs(obs) - 1e-12).sum())
        done += m
    return PermutationTest(obs / n, (extreme + 1) / (n_permutations + 1), len(d), n, n_permutations)


def bootstrap_ci(values: Sequence[float], *, n_resamples: int = 10000, alpha: float = 0.05,
                 seed: int = 0) -> tuple[float, float, float]:
    """Mean and percentile bootstrap (1 − alpha) confidence interval of `values` (e.g. over seeds)."""
    v = np.asarray([x for x in values if not np.isnan(x)], dtype=float)
    if len(v) == 0:
        return (float("nan"), float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = rng.choice(v, size=(n_resamples, len(v)), replace=True).mean(axis=1)
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(v.mean()), float(lo), float(hi)


def summarize(values: Sequence[float]) -> Mapping[str, float]:
    v = np.asarray(values, dtype=float)
    return {"mean": float(np.nanmean(v)) if len(v) else float("nan"),
            "std": float(np.nanstd(v, ddof=1)) if len(v) > 1 else 0.0}
