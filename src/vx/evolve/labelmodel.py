"""A class-conditional label model of the op pool: Dawid–Skene by EM, anchored on the dev labels.

What evolution needs from the unlabeled train split is an estimate of how often each detector is
right, with more than ten items behind it. The per-class vote (`vx.evolve.objective`) cannot give
one: an op that fires alone in its failure class makes its class say FAIL, so it is never charged
for firing where nothing else agrees, and a clean verdict counts as much as a drawback. This model
estimates, for every op ``o`` of a fixed reference set,

* its **sensitivity** ``sens_o = P(o fires | the output fails, o opines)``,
* its **false-alarm rate** ``fpr_o = P(o fires | the output passes, o opines)``,

and the share of failures ``prior = P(fail)``, by expectation–maximisation over the train items the
root leaves open, with the dev items' labels held fixed (the anchor). Abstentions are missing
observations. The posterior ``q_i = P(item i fails | its verdicts)`` weighs each verdict by its
likelihood ratio, which is what a consensus of drawback detectors needs:

* a drawback of a precise op (small ``fpr``) is strong evidence of failure, and a clean verdict of an op
  that misses most failures (small ``sens``) is weak evidence of a pass;
* an op that fires where no other evidence agrees ends up with a higher estimated ``fpr``, and a
  candidate that follows it is charged on those items.

Conditional independence of the ops given the label is assumed (the classic model); correlated
detectors (two checks of the same symptom) are counted twice, which the Beta priors only soften.

Priors (pseudo-counts): ``sens ~ Beta(1, 1)``; ``fpr ~ Beta(1, 19)``
(a drawback detector is built to stay clean on correct outputs: prior mean 5 %, worth 20 items);
``prior ~ Beta(1, 1)``. The first E-step starts from the drawback reading of the verdicts: an item
some op fires on is taken to fail with probability 0.9, one every opining op calls clean with 0.1,
which also fixes which class is "fail" (EM cannot swap them).

A hand-written EM rather than a library: it must hold some labels fixed (no crowd-sourcing package
on PyPI anchors on known labels), run every round inside the engine on int8 verdict matrices, and
stay in the core install (crowd-kit needs pandas and scikit-learn). It is about forty lines of numpy.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

__all__ = ["LabelModel", "fit_label_model"]

SENS_PRIOR = (1.0, 1.0)  # Beta(a, b) pseudo-counts: (fires, clean) among failures
FPR_PRIOR = (1.0, 19.0)  # Beta(a, b) pseudo-counts: (fires, clean) among passes
CLASS_PRIOR = (1.0, 1.0)  # Beta(a, b): (fail, pass)
_EPS = 1e-6
POOLED = "*pooled*"  # the latent shared by the failure classes that have one op each


@attrs.frozen
class LabelModel:
    """A fitted model: per-op estimates (in ``ops`` order) and the posterior of every item."""

    ops: tuple[str, ...]
    sens: np.ndarray  # float[n_ops]
    fpr: np.ndarray  # float[n_ops]
    prior: float  # P(fail) among the modelled items
    q: np.ndarray  # float[n_items]: P(fail) per item (anchored items: their label; unmodelled: nan)
    iterations: int
    converged: bool
    classes: tuple[str, ...] = ()  # the failure classes of a class-conditional model (empty: one latent)
    class_prior: np.ndarray | None = None  # P(defect of each class is present)

    def summary(self) -> dict[str, object]:
        """Plain data for the run record: each op's estimated sensitivity and false-alarm rate."""
        return {
            "prior_fail": round(float(self.prior), 6),
            "iterations": self.iterations,
            "converged": self.converged,
            **(
                {"class_prior": {c: round(float(p), 6) for c, p in zip(self.classes, self.class_prior)}}
                if self.classes and self.class_prior is not None
                else {}
            ),
            "ops": {
                o: {"sens": round(float(s), 6), "fpr": round(float(f), 6)}
                for o, s, f in zip(self.ops, self.sens, self.fpr)
            },
        }


def fit_label_model(
    votes: np.ndarray,
    ops: Sequence[str],
    *,
    modelled: np.ndarray,
    anchors: np.ndarray,
    classes: Sequence[str] | None = None,
    iterations: int = 200,
    tol: float = 1e-7,
) -> LabelModel:
    """Fit the model on ``votes`` (``int8[n_items, n_ops]``: 1 drawback, 0 clean, -1 abstain).

    ``modelled`` (bool[n_items]) marks the items the model is fitted on (the open train and dev
    items); ``anchors`` (float[n_items]) holds the known P(fail) of labelled items and nan elsewhere.
    Items outside ``modelled`` get ``q = nan``.

    ``classes`` (one failure class per op, e.g. `Op.detects`) makes the model *class-conditional*:
    each class ``c`` has a latent "defect c is present" with its own prior, its ops' verdicts depend
    on it alone, and an item fails when some defect is present, ``q = 1 − Π_c (1 − r_c)``. A clean
    verdict then only speaks for its own class (docs/design.md §1), and ops are compared with the ops of
    their class. Anchors: a dev pass has no defect; a dev failure has at least one (the posterior of
    each class is conditioned on that). Without ``classes`` there is one latent (the classic model)."""
    votes = np.asarray(votes)
    n, m = votes.shape
    groups, member = _latents(classes, m)
    fires = ((votes == 1) & modelled[:, None]).astype(float)
    cleans = ((votes == 0) & modelled[:, None]).astype(float)
    known = modelled & ~np.isnan(anchors)
    fail_known = known & (anchors >= 0.5)
    pass_known = known & (anchors < 0.5)
    free = modelled & ~known
    n_model = float(modelled.sum())

    def em(r: np.ndarray):
        r = r.copy()
        r[pass_known] = 0.0
        sens = np.full(m, 0.5)
        fpr = np.full(m, FPR_PRIOR[0] / sum(FPR_PRIOR))
        prior = np.full(len(groups), 0.5)
        converged, it = False, 0
        q = _item_fail(r)
        for it in range(1, iterations + 1):  # noqa: B007 (the count of iterations run is returned)
            rm = np.where(modelled[:, None], r, 0.0)
            pm = np.where(modelled[:, None], 1.0 - r, 0.0)
            r_op, p_op = rm @ member.T, pm @ member.T  # each op's class responsibility, per item
            sens = ((r_op * fires).sum(0) + SENS_PRIOR[0]) / ((r_op * (fires + cleans)).sum(0) + sum(SENS_PRIOR))
            fpr = ((p_op * fires).sum(0) + FPR_PRIOR[0]) / ((p_op * (fires + cleans)).sum(0) + sum(FPR_PRIOR))
            prior = (
                (rm.sum(0) + CLASS_PRIOR[0]) / (n_model + sum(CLASS_PRIOR)) if n_model else np.full(len(groups), 0.5)
            )
            sens, fpr = np.clip(sens, _EPS, 1 - _EPS), np.clip(fpr, _EPS, 1 - _EPS)
            prior = np.clip(prior, _EPS, 1 - _EPS)
            new = _posterior(sens, fpr, prior)
            # anchors: a pass has no defect; a failure has at least one (condition each class on that)
            new[pass_known] = 0.0
            if fail_known.any():
                none = np.prod(1.0 - new[fail_known], axis=1, keepdims=True)
                new[fail_known] = new[fail_known] / np.maximum(1.0 - none, _EPS)
                new[fail_known] = np.clip(new[fail_known], 0.0, 1.0)
            q_new = _item_fail(new)
            delta = float(np.max(np.abs(q_new[free] - q[free]))) if free.any() else 0.0
            r, q = new, q_new
            if delta < tol:
                converged = True
                break
        return sens, fpr, prior, r, q, it, converged, _log_evidence(sens, fpr, prior)

    def _posterior(sens, fpr, prior):
        w_fire = np.log(sens) - np.log(fpr)
        w_clean = np.log1p(-sens) - np.log1p(-fpr)
        logit = np.log(prior) - np.log1p(-prior) + (fires * w_fire) @ member + (cleans * w_clean) @ member
        return 1.0 / (1.0 + np.exp(-np.clip(logit, -50, 50)))

    def _log_evidence(sens, fpr, prior):
        """The log posterior density of the fit (the free items' marginal likelihood plus the Beta priors):
        what chooses between the starts."""
        ll_fail = np.log(prior) + (fires * np.log(sens)) @ member + (cleans * np.log1p(-sens)) @ member
        ll_pass = np.log1p(-prior) + (fires * np.log(fpr)) @ member + (cleans * np.log1p(-fpr)) @ member
        total = float(np.logaddexp(ll_fail, ll_pass)[free].sum())
        total += float(((SENS_PRIOR[0] - 1) * np.log(sens) + (SENS_PRIOR[1] - 1) * np.log1p(-sens)).sum())
        total += float(((FPR_PRIOR[0] - 1) * np.log(fpr) + (FPR_PRIOR[1] - 1) * np.log1p(-fpr)).sum())
        return total

    fits = [em(r0) for r0 in _starts(fires, cleans, member)]  # the fit with the higher posterior density is kept
    sens, fpr, prior, r, q, it, converged, _ = max(fits, key=lambda f: f[-1])
    q = np.where(known, anchors, q)
    q = np.where(modelled, q, np.nan)
    return LabelModel(
        tuple(ops),
        sens,
        fpr,
        float(_item_fail(prior[None, :])[0]),
        q,
        it,
        converged,
        tuple(groups) if classes is not None else (),
        prior,
    )


def _latents(classes: Sequence[str] | None, m: int) -> tuple[list[str], np.ndarray]:
    """The latent classes and each of the `m` ops' class (one-hot ``float[m, n_classes]``): one latent "*"
    without `classes`; with them, a class of one op joins the pooled latent."""
    if classes is not None:
        # a class of one op cannot be estimated from its own op (its rate fits any prior, sensitivity and
        # false-alarm rate: the fit leaves the op at its prior and calls its firings defects); such
        # classes share one pooled latent, where their ops are compared with each other
        size = {c: list(classes).count(c) for c in classes}
        classes = [c if size[c] > 1 else POOLED for c in classes]
    groups = list(dict.fromkeys(classes)) if classes is not None else ["*"]
    member = np.zeros((m, len(groups)))  # op -> its class (one-hot)
    for j, c in enumerate(classes if classes is not None else ["*"] * m):
        member[j, groups.index(c)] = 1.0
    return groups, member


def _starts(fires: np.ndarray, cleans: np.ndarray, member: np.ndarray) -> list[np.ndarray]:
    """The EM's starting class posteriors: the drawback reading (an item some op fires on fails with 0.9),
    and the rare-evidence reading (only a drawback of an op that fires at most twice as often as the median
    op counts) -- an op that fires on a quarter of all items at random makes the first start settle on "that
    op fires", which the second avoids."""
    m = fires.shape[1]
    per_class_fires = fires @ member
    starts = [np.where(per_class_fires > 0, 0.9, 0.1)]
    opined = (fires + cleans).sum(0)
    rate = np.divide(fires.sum(0), opined, out=np.zeros(m), where=opined > 0)
    if m > 1 and (rate > 0).any():
        rare = rate <= 2.0 * np.median(rate[rate > 0])
        starts.append(np.where((fires * rare) @ member > 0, 0.9, 0.1))
    return starts


def _item_fail(r: np.ndarray) -> np.ndarray:
    """P(some defect is present) from the per-class posteriors ``r[n, n_classes]``."""
    return 1.0 - np.prod(1.0 - r, axis=1)
