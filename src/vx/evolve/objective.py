"""The selection objective S(e) = A_dev(e) · A_train(e)^w − C(e) (docs/design.md §5).

Everything is computed on **final verdicts** — the family root conjoined with the expression —
because that is what a consumer of the verifier sees. A final ABSTAIN is scored as PASS by default
(``abstain="pass"``): that is what every consumer does with it ("no known drawback was found"), and
scoring only the items a candidate opines on lets a candidate that abstains almost everywhere
reach perfect agreement on the two or three items it keeps (observed on the HumanEval family with
a synthesized exec op, under the one-vote consensus). ``abstain="exclude"`` is the literal reading — only the items the
final verdict opines on count — and remains available (``vx evolve --abstain exclude``).

* **A_dev** — recall-weighted mean of the FAIL-class and PASS-class recalls over the dev items,
  FAIL weighted ``fail_weight`` (2), PASS 1. Soft labels (P(pass) = p) split an item between the
  classes: it adds weight 1 − p to the FAIL class and p to the PASS class, and counts as recalled
  in a class when the verdict says that class. Hard labels are p ∈ {0, 1}, so this is the ordinary
  recall for them.
* **A_train** — agreement with the *consensus* of the opining active pool ops (root excluded) on
  the unlabeled train items the root leaves open. Each op votes with weight 1 + 10·max(0, m_o),
  m_o its anchored leave-one-out marginal (see `vx.evolve.lifecycle.marginals`; ops without one
  vote 1). By default (``consensus="per-class"``) the ops vote *within their failure class*
  (`Op.detects`): a class says FAIL where its weighted drawback votes exceed its weighted clean
  votes, PASS where they fall short; the item's consensus is FAIL when some class says FAIL, PASS
  when some class says PASS and none FAIL, and undecided otherwise (such items do not count). An
  op's CLEAN means "no drawback *of my class*" (docs/design.md §1), so it can outvote another detector of
  the same class but not a detector of a different one. ``consensus="majority"`` is one weighted
  vote over all ops; with drawback detectors it calls almost every item PASS (one op finds the
  defect, the others see nothing of theirs), and A_train then rewards verifiers that rarely fire:
  on the HumanEval family the majority consensus called 472 of 544 train items PASS, 294 of them
  mutants, and selection traded a seed with 0.87 locked agreement for a 0.63 one.
* **C** — ``op_cost`` per leaf beyond ``op_floor`` leaves, plus ``llm_cost`` per leaf whose op calls
  an LLM (`Op.uses_llm`).

A candidate without a usable dev opinion (`vx.evolve.guards`) gets A_dev 0 when fail-closed and 1
when open (the naive ablation). With ``abstain="exclude"``, other missing evidence (no opined item
in a class, no consensus item opined on) is likewise 0 when fail-closed and skipped when open.

`Objective.score` does this for thousands of compiled candidates at once with packed-bit
popcounts (`vx.dsl.compile`); `Objective.reference` is the plain per-item definition, kept as
the spec the fast path is tested against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np

from vx.dsl.ast import Node
from vx.dsl.compile import (
    ABSTAIN_OP,
    ABSTAIN_SLOT,
    BatchRows,
    CompiledBatch,
    compile_candidates,
    evaluate_batch,
)
from vx.dsl.matrix import VerdictMatrix, pack_bits
from vx.dsl.printer import to_text
from vx.dsl.semantics import evaluate_item, final_codes, final_verdict
from vx.dsl.verdict import Final, Verdict
from vx.evolve.estimates import DEFAULT_ESTIMATOR, PassEvidence, pass_evidence
from vx.evolve.guards import GUARD_OK, GUARD_REASONS, REASONS, UNANCHORED, VALID, Guards, guard_codes, validity_codes
from vx.evolve.labelmodel import LabelModel, fit_label_model

ABSTAIN_MODES = ("pass", "exclude")
CONSENSUS_MODES = ("corroborated", "per-class", "label-model", "label-model-flat", "majority")

__all__ = [
    "ABSTAIN_MODES",
    "CONSENSUS_MODES",
    "consensus_labels",
    "engine_objective",
    "ObjectiveConfig",
    "EvalData",
    "Objective",
    "Score",
    "Scores",
    "consensus_votes",
    "reliability_weight",
]


@attrs.frozen
class ObjectiveConfig:
    """The family's objective constants (``[objective]`` in family.toml)."""

    w: float = 1.0
    fail_weight: float = 2.0
    op_cost: float = 0.001
    op_floor: int = 3
    llm_cost: float = 0.002
    abstain: str = "pass"  # how a final ABSTAIN is scored: "pass" (the consumer convention) or "exclude"
    consensus: str = "corroborated"  # one of CONSENSUS_MODES (docs/evolve.md)
    pass_tolerance: float = 0.01  # the pass-recall floor: the seed's estimated pass recall minus this
    estimator: str = DEFAULT_ESTIMATOR  # the pass evidence of the floor (`vx.evolve.estimates.ESTIMATORS`)

    def __attrs_post_init__(self) -> None:
        if not 0.0 <= self.pass_tolerance <= 1.0:
            raise ValueError(f"pass_tolerance must be in [0, 1], not {self.pass_tolerance!r}")
        if self.abstain not in ABSTAIN_MODES:
            raise ValueError(f"abstain must be one of {', '.join(ABSTAIN_MODES)}, not {self.abstain!r}")
        if self.consensus not in CONSENSUS_MODES:
            raise ValueError(f"consensus must be one of {', '.join(CONSENSUS_MODES)}, not {self.consensus!r}")

    @classmethod
    def from_mapping(
        cls,
        m: Mapping[str, float],
        *,
        abstain: str = "pass",
        consensus: str = "corroborated",
        pass_tolerance: float | None = None,
        estimator: str = DEFAULT_ESTIMATOR,
    ) -> ObjectiveConfig:
        tol = float(m.get("pass_tolerance", 0.01)) if pass_tolerance is None else float(pass_tolerance)
        return cls(
            w=float(m.get("w", 1.0)),
            fail_weight=float(m.get("fail_weight", 2.0)),
            op_cost=float(m.get("op_cost", 0.001)),
            op_floor=int(m.get("op_floor", 3)),
            llm_cost=float(m.get("llm_cost", 0.002)),
            abstain=abstain,
            consensus=consensus,
            pass_tolerance=tol,
            estimator=estimator,
        )

    def as_dict(self) -> dict[str, float]:
        return attrs.asdict(self)


def reliability_weight(marginal: float | None) -> float:
    """An op's consensus vote weight: 1 + 10·max(0, m_o); 1 without anchored evidence."""
    return 1.0 if marginal is None else 1.0 + 10.0 * max(0.0, float(marginal))


def consensus_votes(
    matrix: VerdictMatrix, ops: Sequence[str], weights: Mapping[str, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: total weight of the ``ops`` that fire, and of those that say clean."""
    fire_w = np.zeros(matrix.n_items)
    clean_w = np.zeros(matrix.n_items)
    for name in ops:
        col = matrix.column(name)
        w = float(weights.get(name, 1.0))
        fire_w += w * (col == 1)
        clean_w += w * (col == 0)
    return fire_w, clean_w


def consensus_labels(
    matrix: VerdictMatrix,
    ops: Sequence[str],
    weights: Mapping[str, float],
    classes: Mapping[str, str] | None,
    mode: str,
) -> tuple[np.ndarray, np.ndarray]:
    """``(FAIL, PASS)`` boolean masks of the consensus (both False: no consensus).

    ``majority``: one weighted vote of all ``ops``. ``per-class``: a weighted vote among the ops
    detecting each failure class (``classes``: op → class), then FAIL where any class votes FAIL,
    PASS where some class votes PASS and none FAIL. ``corroborated``: the per-class vote, except that a
    FAIL resting on one op's drawback alone (no other of ``ops`` fires on the item) is no consensus at
    all -- an unconfirmed drawback is evidence neither way."""
    if mode == "corroborated":
        fail, ok = consensus_labels(matrix, ops, weights, classes, "per-class")
        firing = np.zeros(matrix.n_items, dtype=np.int64)
        for o in ops:
            firing += matrix.column(o) == 1
        return fail & (firing >= 2), ok
    if mode == "majority" or classes is None:
        f, c = consensus_votes(matrix, ops, weights)
        return f > c, c > f
    by_class: dict[str, list[str]] = {}
    for o in ops:
        by_class.setdefault(classes.get(o, o), []).append(o)
    fail = np.zeros(matrix.n_items, dtype=bool)
    some_pass = np.zeros(matrix.n_items, dtype=bool)
    for cls in sorted(by_class):
        f, c = consensus_votes(matrix, by_class[cls], weights)
        fail |= f > c
        some_pass |= c > f
    return fail, some_pass & ~fail


@attrs.frozen
class EvalData:
    """The items evolution may score on: one verdict matrix over train ∪ dev items (every op
    applied so far, root included), which items are train, and the dev labels (P(pass))."""

    matrix: VerdictMatrix
    train: np.ndarray  # bool[n_items]
    dev_p: np.ndarray  # float[n_items]: P(pass) of dev items, nan elsewhere
    root: str | None

    @property
    def dev(self) -> np.ndarray:
        return ~np.isnan(self.dev_p)

    def root_fires(self) -> np.ndarray:
        if self.root is None:
            return np.zeros(self.matrix.n_items, dtype=bool)
        return self.matrix.column(self.root) == 1

    def with_matrix(self, matrix: VerdictMatrix) -> EvalData:
        if matrix.item_ids != self.matrix.item_ids:
            raise ValueError("the new matrix must cover the same items in the same order")
        return attrs.evolve(self, matrix=matrix)


@attrs.frozen
class Score:
    """One candidate's objective and its parts."""

    objective: float
    a_dev: float
    a_train: float
    cost: float
    size: int
    usable: bool  # has a usable dev opinion
    validity: int  # guards.VALID or the degenerate kind
    selectable: bool
    guard: int = GUARD_OK  # guards.GUARD_OK or why the candidate fails the anchor guard
    #: estimated pass recall on the train split's pass evidence, and estimated precision of its train
    #: drawbacks (nan without evidence); not part of equality (nan != nan)
    pass_recall: float = attrs.field(default=float("nan"), eq=False)
    precision: float = attrs.field(default=float("nan"), eq=False)

    @property
    def reason(self) -> str:
        """Why the candidate is not selectable ("" when it is)."""
        if self.selectable:
            return ""
        if self.validity != VALID and self.validity in REASONS:
            return REASONS[self.validity]
        if not self.usable:
            return UNANCHORED
        return GUARD_REASONS.get(self.guard, UNANCHORED)

    def as_dict(self) -> dict:
        return {
            "objective": self.objective,
            "a_dev": self.a_dev,
            "a_train": self.a_train,
            "cost": self.cost,
            "size": self.size,
            "usable": self.usable,
            "validity": self.validity,
            "selectable": self.selectable,
            "guard": self.guard,
            "reason": self.reason,
            "pass_recall": None if np.isnan(self.pass_recall) else self.pass_recall,
            "precision": None if np.isnan(self.precision) else self.precision,
        }


@attrs.frozen
class Scores:
    """Objective parts of many candidates (arrays in candidate order)."""

    objective: np.ndarray
    a_dev: np.ndarray
    a_train: np.ndarray
    cost: np.ndarray
    size: np.ndarray
    usable: np.ndarray
    validity: np.ndarray
    selectable: np.ndarray
    guard: np.ndarray
    pass_recall: np.ndarray | None = None
    precision: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.objective)

    def get(self, i: int) -> Score:
        pr = float(self.pass_recall[i]) if self.pass_recall is not None else float("nan")
        pc = float(self.precision[i]) if self.precision is not None else float("nan")
        return Score(
            float(self.objective[i]),
            float(self.a_dev[i]),
            float(self.a_train[i]),
            float(self.cost[i]),
            int(self.size[i]),
            bool(self.usable[i]),
            int(self.validity[i]),
            bool(self.selectable[i]),
            int(self.guard[i]),
            pr,
            pc,
        )


def _popcount_rows(a: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return np.bitwise_count(np.bitwise_and(a, mask)).sum(axis=1, dtype=np.int64)


def _weighted_rows(a: np.ndarray, weights: np.ndarray, chunk: int = 1024) -> np.ndarray:
    """Σ_i weights[i] over the set bits i of each row of packed bits ``a`` (``uint64[n, n_words]``);
    ``weights`` is zero-padded to ``64 · n_words``. Rows are unpacked in chunks (bounded memory)."""
    n = a.shape[0]
    out = np.zeros(n)
    if n == 0:
        return out
    little = np.ascontiguousarray(a, dtype="<u8")
    for lo in range(0, n, chunk):
        bits = np.unpackbits(little[lo : lo + chunk].view(np.uint8), axis=1, bitorder="little")
        out[lo : lo + chunk] = bits @ weights
    return out


class Objective:
    """Scores candidate expressions on one `EvalData` under fixed consensus weights."""

    def __init__(
        self,
        data: EvalData,
        *,
        config: ObjectiveConfig = ObjectiveConfig(),
        guards: Guards = Guards(),
        consensus_ops: Sequence[str] = (),
        consensus_weights: Mapping[str, float] | None = None,
        consensus_classes: Mapping[str, str] | None = None,
        llm_ops: Sequence[str] = (),
        guard_ops: Sequence[str] | None = None,
        evidence: PassEvidence | None = None,
    ) -> None:
        self.data = data
        self.config = config
        self.guards = guards
        self.consensus_ops = tuple(consensus_ops)
        self.guard_ops = tuple(self.consensus_ops if guard_ops is None else guard_ops)
        self.consensus_weights = dict(consensus_weights or {})
        self.consensus_classes = dict(consensus_classes) if consensus_classes is not None else None
        self.llm_ops = frozenset(llm_ops)
        m = data.matrix
        self._columns = {name: j for j, name in enumerate(m.op_names)}
        self._columns[ABSTAIN_OP] = ABSTAIN_SLOT
        self._rows = BatchRows(m)
        self._llm_flag = np.array([name in self.llm_ops for name in m.op_names] + [False], dtype=np.int64)
        n = m.n_items
        root_f = data.root_fires()
        self.decide = ~root_f
        self.root_f_bits = pack_bits(root_f)
        self.decide_bits = pack_bits(self.decide)
        self.n_decided = int(self.decide.sum())
        dev = data.dev
        self.dev_decide_bits = pack_bits(dev & self.decide)
        # dev items grouped by label value: weight (1 - p) to FAIL, p to PASS
        self._dev_groups = []
        for p in sorted({float(x) for x in data.dev_p[dev]}):
            self._dev_groups.append((p, pack_bits(dev & (data.dev_p == p))))
        fire_w, clean_w = consensus_votes(m, self.consensus_ops, self.consensus_weights)
        self.fire_w, self.clean_w = fire_w, clean_w
        open_train = data.train & self.decide
        self.label_model: LabelModel | None = None
        self._soft: tuple[np.ndarray, np.ndarray, float] | None = None
        if config.consensus in ("label-model", "label-model-flat"):
            self.label_model = self._fit_label_model(open_train)
            q = np.nan_to_num(self.label_model.q, nan=0.0)
            c_fail, c_pass = q >= 0.5, q < 0.5
            # soft agreement: Σ_T f_i q_i + (1 - f_i)(1 - q_i) = Σ_T (1 - q_i) + Σ_T f_i (2 q_i - 1)
            width = 64 * pack_bits(open_train).shape[-1]
            w_fire = np.zeros(width)
            w_fire[:n] = np.where(open_train, 2.0 * q - 1.0, 0.0)
            w_open = np.zeros(width)
            w_open[:n] = np.where(open_train, 1.0 - q, 0.0)
            self._soft = (w_fire, w_open, float(w_open.sum()))
        else:
            c_fail, c_pass = consensus_labels(
                m, self.consensus_ops, self.consensus_weights, self.consensus_classes, config.consensus
            )
        self.cons_fail = open_train & c_fail
        self.cons_pass = open_train & c_pass
        self.cons_fail_bits = pack_bits(self.cons_fail)
        self.cons_pass_bits = pack_bits(self.cons_pass)
        self.cons_bits = pack_bits(self.cons_fail | self.cons_pass)
        self.n_consensus = int((self.cons_fail | self.cons_pass).sum())
        self._group_sizes = {p: int((dev & (data.dev_p == p)).sum()) for p, _ in self._dev_groups}
        self._n = n
        # the anchor guard: dev failures some selectable op flags without flagging a dev pass
        dev_fail = dev & (data.dev_p < 0.5) & self.decide
        dev_pass = dev & (data.dev_p >= 0.5) & self.decide
        flaggable = np.zeros(n, dtype=bool)
        clean_ops = []
        for name in self.guard_ops:
            col = m.column(name) == 1
            if not (col & dev_pass).any():
                clean_ops.append(name)
                flaggable |= col & dev_fail
        self.guard_flaggable = flaggable
        self.guard_clean_ops = tuple(clean_ops)
        self.guard_fail_bits = pack_bits(flaggable)
        self.guard_pass_bits = pack_bits(dev_pass)
        self.n_flaggable = int(flaggable.sum())
        # the pass evidence (pseudo-positives or the label model's P(pass)) and the pass-recall floor
        self.evidence = evidence
        self.pass_floor: float | None = None
        width = 64 * self.decide_bits.shape[-1]
        self._pp_w = np.zeros(width)
        if evidence is not None:
            self._pp_w[:n] = np.where(data.train & self.decide, evidence.weight, 0.0)
        self._pp_total = float(self._pp_w.sum())
        self.train_open_bits = pack_bits(data.train & self.decide)

    def set_pass_floor(self, node: Node | None) -> float | None:
        """Set the pass-recall floor to ``node``'s (the seed's) estimated pass recall minus the tolerance;
        None (no floor) without pass evidence. Returns the floor."""
        self.pass_floor = None
        if node is not None and self._pp_total > 0:
            est = self.score_one(node).pass_recall
            if not np.isnan(est):
                self.pass_floor = float(est) - self.config.pass_tolerance
        return self.pass_floor

    def _fit_label_model(self, open_train: np.ndarray) -> LabelModel:
        """The Dawid–Skene model of the consensus ops on the open train items, anchored on the open dev items."""
        d = self.data
        ops = list(self.consensus_ops)
        votes = d.matrix.select_ops(ops).to_array() if ops else np.zeros((d.matrix.n_items, 0), np.int8)
        modelled = (d.train | d.dev) & self.decide
        anchors = np.where(d.dev, 1.0 - d.dev_p, np.nan)
        classes = None
        if self.config.consensus == "label-model":  # class-conditional: one latent per failure class
            classes = [(self.consensus_classes or {}).get(o, o) for o in ops]
        return fit_label_model(votes, ops, modelled=modelled, anchors=anchors, classes=classes)

    def guard_cover(self) -> list[str]:
        """A smallest-first greedy set of the guard's clean ops that flags every flaggable dev failure
        (``(any <these>)`` meets the anchor guard); sorted names, empty when nothing is flaggable."""
        m = self.data.matrix
        left = self.guard_flaggable.copy()
        cols = {o: (m.column(o) == 1) for o in self.guard_clean_ops}
        chosen: list[str] = []
        while left.any():
            best = max(sorted(cols), key=lambda o: int((cols[o] & left).sum()))
            gain = cols[best] & left
            if not gain.any():
                break
            chosen.append(best)
            left &= ~gain
        return sorted(chosen)

    # --- the fast path ---------------------------------------------------------------------
    def compile(self, nodes: Sequence[Node]) -> CompiledBatch:
        return compile_candidates(nodes, self._columns)

    def score(self, nodes: Sequence[Node]) -> Scores:
        """Score many candidate expressions at once."""
        return self.score_batch(self.compile(nodes))

    def score_one(self, node: Node) -> Score:
        return self.score([node]).get(0)

    def score_batch(self, batch: CompiledBatch) -> Scores:
        opines, fires = evaluate_batch(batch, self.data.matrix, rows=self._rows)
        size = np.zeros(batch.n, dtype=np.int64)
        llm = np.zeros(batch.n, dtype=np.int64)
        for _shape, cols, where in batch.groups:
            size[where] = cols.shape[1]
            llm[where] = self._llm_flag[cols].sum(axis=1)
        return self.score_packed(opines, fires, size, llm)

    def score_packed(self, opines: np.ndarray, fires: np.ndarray, size: np.ndarray, llm: np.ndarray) -> Scores:
        """Objective parts from the expressions' packed verdicts ``uint64[n, n_words]``."""
        cfg, closed = self.config, self.guards.fail_closed
        # validity and anchoring, on the items the expression decides
        dec_op = _popcount_rows(opines, self.decide_bits)
        dec_fi = _popcount_rows(fires, self.decide_bits)
        validity = validity_codes(self.n_decided, dec_op, dec_fi)
        usable = _popcount_rows(opines, self.dev_decide_bits) > 0
        # A_dev on final verdicts (root conjoined); an ABSTAIN counts as PASS or is left out
        as_pass = cfg.abstain == "pass"
        fin_o = np.bitwise_or(opines, self.root_f_bits) if not as_pass else None
        fin_f = np.bitwise_or(fires, self.root_f_bits)
        w_fail = np.zeros(len(opines))
        w_pass = np.zeros(len(opines))
        hit_fail = np.zeros(len(opines))
        hit_pass = np.zeros(len(opines))
        for p, bits in self._dev_groups:
            n_op = np.full(len(opines), self._group_sizes[p]) if fin_o is None else _popcount_rows(fin_o, bits)
            n_fi = _popcount_rows(fin_f, bits)
            w_fail += (1.0 - p) * n_op
            hit_fail += (1.0 - p) * n_fi
            w_pass += p * n_op
            hit_pass += p * (n_op - n_fi)
        a_dev = self._recall_weighted(hit_fail, w_fail, hit_pass, w_pass, closed)
        a_dev = np.where(usable, a_dev, 0.0 if closed else 1.0)
        # A_train: agreement with the consensus (over the items the expression opines on, or all)
        if self._soft is not None:  # the label model: expected agreement under its posterior
            w_fire, w_open, total_open = self._soft
            fired = _weighted_rows(fires, w_fire)
            if as_pass:
                agree = total_open + fired
                n_tr = np.full(len(opines), self.n_consensus)
            else:
                agree = _weighted_rows(opines, w_open) + fired
                n_tr = _popcount_rows(opines, self.cons_bits)
        else:
            not_firing = np.bitwise_not(fires) if as_pass else np.bitwise_and(opines, np.bitwise_not(fires))
            agree = _popcount_rows(fires, self.cons_fail_bits) + _popcount_rows(not_firing, self.cons_pass_bits)
            n_tr = np.full(len(opines), self.n_consensus) if as_pass else _popcount_rows(opines, self.cons_bits)
        with np.errstate(invalid="ignore", divide="ignore"):
            a_train = np.where(n_tr > 0, agree / np.maximum(n_tr, 1), self._no_consensus_value(closed))
        cost = cfg.op_cost * np.maximum(0, size - cfg.op_floor) + cfg.llm_cost * llm
        objective = a_dev * np.power(a_train, cfg.w) - cost
        # the pass evidence: estimated pass recall (abstain = pass) and precision of the train drawbacks
        if self._pp_total > 0:
            false_w = _weighted_rows(fires, self._pp_w)
            pass_recall = 1.0 - false_w / self._pp_total
            n_fired = _popcount_rows(fires, self.train_open_bits)
            precision = np.where(n_fired > 0, 1.0 - false_w / np.maximum(n_fired, 1), np.nan)
        else:
            pass_recall = np.full(len(opines), np.nan)
            precision = np.full(len(opines), np.nan)
        below = None
        if self.pass_floor is not None and self.guards.pass_floor:
            below = np.round(pass_recall, 12) < round(self.pass_floor, 12)
        guard = guard_codes(
            _popcount_rows(fires, self.guard_fail_bits),
            self.n_flaggable,
            _popcount_rows(fires, self.guard_pass_bits),
            below,
        )
        selectable = np.ones(len(opines), dtype=bool)
        if self.guards.fail_closed:
            selectable &= usable
        if self.guards.validity_gate:
            selectable &= validity == VALID
        if self.guards.anchor or self.guards.pass_floor:
            selectable &= guard == GUARD_OK
        return Scores(
            objective,
            a_dev,
            a_train.astype(float),
            cost.astype(float),
            size,
            usable,
            validity,
            selectable,
            guard,
            pass_recall,
            precision,
        )

    def _no_consensus_value(self, closed: bool) -> float:
        """A_train when no consensus item counts: 1 when the train split offers no consensus at all
        (nothing to regularise against), else 0 fail-closed / 1 fail-open."""
        return 1.0 if self.n_consensus == 0 or not closed else 0.0

    def _recall_weighted(self, hit_fail, w_fail, hit_pass, w_pass, closed: bool) -> np.ndarray:
        fw = self.config.fail_weight
        has_f, has_p = w_fail > 0, w_pass > 0
        r_f = np.divide(hit_fail, w_fail, out=np.zeros_like(hit_fail), where=has_f)
        r_p = np.divide(hit_pass, w_pass, out=np.zeros_like(hit_pass), where=has_p)
        if closed:  # a class without evidence contributes recall 0
            return (fw * r_f + r_p) / (fw + 1.0)
        both = (fw * r_f + r_p) / (fw + 1.0)
        return np.where(has_f & has_p, both, np.where(has_f, r_f, np.where(has_p, r_p, 1.0)))

    # --- the reference definition -------------------------------------------------------------
    def reference(self, node: Node) -> Score:
        """The objective computed item by item with the reference interpreter (the spec)."""
        m, cfg, closed = self.data.matrix, self.config, self.guards.fail_closed
        root = self.data.root
        w_fail = w_pass = hit_fail = hit_pass = 0.0
        dec_op = dec_fi = dev_usable = 0
        agree: float = 0  # an int while only hits are counted; expected agreement under a label model is not
        n_tr = 0
        flagged = false_alarms = 0
        pp_false = 0.0
        n_fired_train = 0
        if not hasattr(self, "_ref_rows"):  # the op verdicts of every item, read once
            arr = m.to_array()
            self._ref_rows = [{o: Verdict(int(v)) for o, v in zip(m.op_names, row)} for row in arr.tolist()]
        for i in range(m.n_items):
            row = self._ref_rows[i]
            e = evaluate_item(node, row)
            r = row[root] if root is not None else Verdict.ABSTAIN
            fin = final_verdict(r, e)
            open_ = r is not Verdict.DRAWBACK
            if open_:
                dec_op += e is not Verdict.ABSTAIN
                dec_fi += e is Verdict.DRAWBACK
            p = self.data.dev_p[i]
            as_pass = cfg.abstain == "pass"
            if not np.isnan(p):
                dev_usable += open_ and e is not Verdict.ABSTAIN
                if fin is not Final.ABSTAIN or as_pass:
                    w_fail += 1.0 - p
                    w_pass += p
                    if fin is Final.FAIL:
                        hit_fail += 1.0 - p
                    else:
                        hit_pass += p
            if not np.isnan(p) and open_:  # the anchor guard, on the open dev items
                if p < 0.5 and self.guard_flaggable[i]:
                    flagged += e is Verdict.DRAWBACK
                elif p >= 0.5:
                    false_alarms += e is Verdict.DRAWBACK
            if self.data.train[i] and open_ and e is Verdict.DRAWBACK:
                n_fired_train += 1
                pp_false += float(self._pp_w[i])
            if self.data.train[i] and open_ and (e is not Verdict.ABSTAIN or as_pass):
                if self.label_model is not None:  # expected agreement under the label model's posterior
                    q = float(self.label_model.q[i])
                    n_tr += 1
                    agree += q if e is Verdict.DRAWBACK else 1.0 - q
                    continue
                label = self._reference_consensus(row)
                if label is not None:
                    n_tr += 1
                    agree += (label == "fail") == (e is Verdict.DRAWBACK)
        a_dev = float(
            self._recall_weighted(
                np.array([hit_fail]), np.array([w_fail]), np.array([hit_pass]), np.array([w_pass]), closed
            )[0]
        )
        a_train = agree / n_tr if n_tr else self._no_consensus_value(closed)
        if dev_usable == 0:
            a_dev = 0.0 if closed else 1.0
        size = node.size()
        llm = sum(1 for name in node.leaves() if name in self.llm_ops)
        cost = cfg.op_cost * max(0, size - cfg.op_floor) + cfg.llm_cost * llm
        validity = int(validity_codes(self.n_decided, np.array([dec_op]), np.array([dec_fi]))[0])
        usable = dev_usable > 0
        pass_recall = 1.0 - pp_false / self._pp_total if self._pp_total > 0 else float("nan")
        precision = (
            (1.0 - pp_false / n_fired_train if n_fired_train else float("nan")) if self._pp_total > 0 else float("nan")
        )
        below = None
        if self.pass_floor is not None and self.guards.pass_floor:
            below = np.array([round(pass_recall, 12) < round(self.pass_floor, 12)])
        guard = int(guard_codes(np.array([flagged]), self.n_flaggable, np.array([false_alarms]), below)[0])
        selectable = (
            (usable or not closed)
            and (validity == VALID or not self.guards.validity_gate)
            and (guard == GUARD_OK or not (self.guards.anchor or self.guards.pass_floor))
        )
        return Score(
            a_dev * a_train**cfg.w - cost,
            a_dev,
            a_train,
            cost,
            size,
            usable,
            validity,
            selectable,
            guard,
            pass_recall,
            precision,
        )

    def _reference_consensus(self, row: Mapping[str, Verdict]) -> str | None:
        groups: dict[str, list[str]] = {}
        for o in self.consensus_ops:
            key = (
                ""
                if self.config.consensus == "majority" or self.consensus_classes is None
                else self.consensus_classes.get(o, o)
            )
            groups.setdefault(key, []).append(o)
        votes = []
        for ops in groups.values():
            f = sum(self.consensus_weights.get(o, 1.0) for o in ops if row[o] is Verdict.DRAWBACK)
            c = sum(self.consensus_weights.get(o, 1.0) for o in ops if row[o] is Verdict.CLEAN)
            votes.append("fail" if f > c else "pass" if c > f else None)
        if "fail" in votes:
            if (
                self.config.consensus == "corroborated"
                and sum(row[o] is Verdict.DRAWBACK for o in self.consensus_ops) < 2
            ):
                return None  # one op's drawback alone: no consensus
            return "fail"
        return "pass" if "pass" in votes else None

    # --- helpers ------------------------------------------------------------------------------
    def final_codes(self, node: Node) -> np.ndarray:
        """``int8[n_items]`` final verdicts (1 FAIL, 0 PASS, -1 ABSTAIN) of ``node``."""
        o, f = evaluate_batch(self.compile([node]), self.data.matrix, rows=self._rows)
        from vx.dsl.matrix import Packed

        # rows the root does not leave to the expression are FAIL: the root conjoined (docs/design.md §2)
        return final_codes((~self.decide).astype(np.int8), Packed(o[0], f[0], self._n).to_int8())

    def describe(self, node: Node) -> str:
        s = self.score_one(node)
        return f"{to_text(node)}: S={s.objective:.4f} A_dev={s.a_dev:.3f} A_train={s.a_train:.3f}"


def engine_objective(
    data: EvalData,
    *,
    statuses: Mapping[str, str],
    marginals: Mapping[str, float | None],
    classes: Mapping[str, str],
    llm_ops: Sequence[str] = (),
    config: ObjectiveConfig = ObjectiveConfig(),
    guards: Guards = Guards(),
    gate: str | None = None,
    agreement: str | None = None,
    floor_node: Node | None = None,
) -> Objective:
    """The objective an evolution round selects under, from the op records (the one definition the
    engine and `vx.evolve.recompute` share).

    * The **reference** of the train consensus is every op that has ever been selectable: active *and
      retired* ops (not the root, not shadows -- baselines are shadows), so it does not shrink as ops
      retire; an op's consensus vote weight is its reliability weight (`reliability_weight`).
    * The **anchor guard** asks of the active ops only: what the pool can flag is what a selectable
      expression could.
    * The **pass evidence** (`vx.evolve.estimates.pass_evidence`, ``config.estimator``) is read on the
      open train items with the same reference, the pack's ``gate`` and ``agreement`` ops; the
      **pass-recall floor** is ``floor_node``'s (the seed's) estimate minus ``config.pass_tolerance``."""
    root = data.root
    reference = sorted(n for n, st in statuses.items() if st in ("active", "retired") and n != root)
    active = sorted(n for n, st in statuses.items() if st == "active" and n != root)
    weights = {n: reliability_weight(marginals.get(n)) for n in reference}
    root_open = (
        data.matrix.column(root) != 1
        if root is not None and root in data.matrix.op_names
        else np.ones(data.matrix.n_items, bool)
    )
    evidence = pass_evidence(
        data.matrix,
        data.train & root_open,
        reference=reference,
        gate=gate,
        agreement=agreement,
        estimator=config.estimator,
        dev_p=data.dev_p,
        root=root,
    )
    obj = Objective(
        data,
        config=config,
        guards=guards,
        consensus_ops=reference,
        consensus_weights=weights,
        consensus_classes={n: classes.get(n, n) for n in reference},
        llm_ops=llm_ops,
        guard_ops=active,
        evidence=evidence,
    )
    obj.set_pass_floor(floor_node)
    return obj
