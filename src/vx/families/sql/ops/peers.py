"""SQL peer ops: an attempt's results compared with the other attempts' at the same question.

Every attempt runs once on the task's database and on each neighbour database the task lists
(:mod:`vx.families.sql.variants`); the observer :data:`results` keeps, per database, whether the query
ran and a signature of its result (:func:`vx.families.sql.compare.result_signature`: equal exactly when
the results match by the task's rule -- Spider's for ``"match": "spider"`` tasks, which also drops
DISTINCT first, as Spider's evaluator does) plus a few rows for the message. Judging happens in the
parent, over the attempts' observations.

``disagrees_with_peers`` (the name the code family's peer op has too: one idea, two families):

* **voters** are the other attempts that run on the original database (an attempt that errors is no
  witness);
* on each database the voters' results are grouped by signature; the top group is a **clear
  plurality** when it has at least ``min_support`` (2) voters, at least ``quorum`` (0.3) of those who
  ran, and more than the runner-up;
* the op **fires** when this attempt's result differs from a clear plurality on some database -- its
  message names the database (original or variant) and rows that differ -- or when it does not run
  while the voters agree on a result; it is clean when it agrees with every clear plurality it met,
  and **abstains** when fewer than ``min_support`` voters ran or no database has a clear plurality.

``outside_plurality`` (shadow: applied and recorded, never selected) is what a user would pick instead,
self-consistency as DAIL-SQL votes: among the attempts that run, the attempt's result on the original
database is not the most common one (ties: every most common result passes). The check template
``results_disagree_with_peers`` (params ``quorum``, ``min_support``, ``databases``) lets synthesis
propose variants of the peer op and the birth gate test them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from vx.families.sql import compare, spider, variants
from vx.families.sql.ops import item
from vx.families.sql.ops.item import sql_text
from vx.families.sql.warehouse import DEFAULT_MAX_ROWS, DEFAULT_TIMEOUT, WarehouseError, session
from vx.ops.core import abstain, clean, drawback, observer, peer_op
from vx.ops.specs import SpecError, inducer, template
from vx.ops.vote import clear_plurality

DEPENDS = (__name__, compare, spider, variants, item, "vx.families.sql.warehouse", "vx.ops.vote")
SAMPLE_ROWS = 20  # rows of each result kept for messages
CELL_CHARS = 60
DATABASES = ("all", "original", "variants")
PEER_TIMEOUT = 120.0  # the observer's budget for one attempt on every database
#: The seed op's rule, chosen on the development half of the Spider data (even question numbers; docs/sql.md)
DEFAULT_QUORUM = 0.3
DEFAULT_SUPPORT = 2


def _ignore_order(task: Mapping[str, Any]) -> bool:
    return bool(task.get("ignore_order", True))


def comparable_sql(task: Mapping[str, Any], output: Any) -> str:
    """The text that runs for comparison: Spider's evaluation text for Spider tasks, else the output."""
    sql = sql_text(output)
    return spider.comparable_text(sql) if task.get("match") == spider.MATCH else sql


def _cell(v: Any) -> str:
    t = repr(v)
    return t if len(t) <= CELL_CHARS else t[: CELL_CHARS - 1] + "…"


def _observe_one(spec: Mapping[str, Any], sql: str, timeout: float, max_rows: int, ordered: bool) -> list[Any]:
    try:
        res = session(spec).execute(sql, timeout=timeout, max_rows=max_rows)
    except WarehouseError as exc:
        return ["unavailable", "", "", 0, 0, [[str(exc)[:200]]]]
    if not res.ok:
        return [res.error_kind or "error", "", "", 0, 0, [[(res.error or "")[:200]]]]
    if res.truncated:
        return ["truncated", "", "", len(res.rows), len(res.columns), []]
    bag = compare.result_signature(res.rows)
    sig = compare.result_signature(res.rows, ordered=True) if ordered else bag
    sample = [[_cell(v) for v in r] for r in res.rows[:SAMPLE_ROWS]]
    return ["ok", sig, bag, len(res.rows), len(res.columns), sample]


@observer(depends=DEPENDS)
def results(task, output, ctx):
    """The attempt's result on the task's database and each of its variants, as signatures."""
    dbs = variants.task_variant_specs(task)
    if not dbs:
        return {"ran": False, "dbs": [], "note": "the task names no warehouse"}
    sql = comparable_sql(task, output)
    timeout = float(task.get("timeout") or DEFAULT_TIMEOUT)
    max_rows = int(task.get("max_rows") or DEFAULT_MAX_ROWS)
    ordered = not _ignore_order(task)
    out = []
    for k, (label, spec) in enumerate(dbs):
        row = _observe_one(spec, sql, timeout, max_rows, ordered)
        out.append([label, *row])
        if k == 0 and row[0] != "ok":  # it does not run on the original: the variants are not tried
            break
    return {"ran": out[0][1] == "ok", "dbs": out, "note": ""}


# --------------------------------------------------------------------------- judging


@attrs.frozen
class Result:
    """One database's entry of an observation."""

    label: str
    status: str
    signature: str  # by the task's rule (ordered when the order counts)
    bag: str  # rows as a bag
    n_rows: int
    n_cols: int
    sample: tuple[tuple[str, ...], ...]

    @property
    def answer(self) -> str:
        return self.signature if self.status == "ok" else f"<{self.status}>"

    def text(self) -> str:
        if self.status != "ok":
            return (
                f"does not run ({self.status} error)"
                if self.status in ("syntax", "runtime", "rejected")
                else f"does not run ({self.status})"
            )
        return f"{self.n_rows} row(s)" + (f" × {self.n_cols} column(s)" if self.n_rows else "")


def _results(data: Any) -> tuple[bool, list[Result], str]:
    if not isinstance(data, Mapping):
        return False, [], "no observation"
    out = []
    for row in data.get("dbs") or ():
        if isinstance(row, (list, tuple)) and len(row) == 7:
            label, status, sig, bag, n, w, sample = row
            out.append(
                Result(
                    str(label),
                    str(status),
                    str(sig),
                    str(bag),
                    int(n),
                    int(w),
                    tuple(tuple(str(c) for c in r) for r in (sample or ()) if isinstance(r, (list, tuple))),
                )
            )
    return bool(data.get("ran")), out, str(data.get("note", ""))


def _row_difference(mine: Result, theirs: Result) -> str:
    """Rows (of the kept samples) in one result and not the other, for the message."""
    a, b = Counter(mine.sample), Counter(theirs.sample)
    extra = list((a - b).elements())[:2]
    missing = list((b - a).elements())[:2]
    parts = []
    if extra:
        parts.append("this attempt has " + ", ".join("(" + ", ".join(r) + ")" for r in extra))
    if missing:
        parts.append("they have " + ", ".join("(" + ", ".join(r) + ")" for r in missing))
    return "; ".join(parts)


@attrs.frozen
class Vote:
    verdict: int  # 1 drawback, 0 clean, -1 abstain
    message: str


def _groups(voters: Sequence[list[Result]], label: str) -> tuple[Counter[str], dict[str, Result]]:
    groups: Counter[str] = Counter()
    rep: dict[str, Result] = {}
    for rs in voters:
        other = next((r for r in rs if r.label == label), None)
        if other is not None:
            groups[other.answer] += 1
            rep.setdefault(other.answer, other)
    return groups, rep


def vote(
    mine: Any,
    peers: Sequence[Any],
    *,
    quorum: float = DEFAULT_QUORUM,
    min_support: int = DEFAULT_SUPPORT,
    databases: str = "all",
) -> Vote:
    """The peer verdict of one attempt (the rule in the module docstring)."""
    ran, me, note = _results(mine)
    if not peers:
        return Vote(-1, "no other attempt at this question is in the batch: no peers to compare with")
    voters = [rs for ok, rs, _ in map(_results, peers) if ok]
    if len(voters) < max(1, min_support):
        return Vote(
            -1,
            f"only {len(voters)} of {len(peers)} other attempt(s) run on the database "
            f"(at least {max(1, min_support)} needed to vote)",
        )
    if not ran:
        if not me:
            return Vote(-1, note or "no result to compare")
        clear = clear_plurality(_groups(voters, me[0].label)[0], quorum, min_support)
        if clear is None or databases == "variants":
            return Vote(-1, f"it does not run, and the {len(voters)} other attempts that run agree on no result")
        return Vote(
            1,
            f"on the original database it {me[0].text()}, while {clear[1]} of {len(voters)} other "
            "attempts run and agree on a result",
        )
    agreed = hits = 0
    first = ""
    for j, res in enumerate(me):
        if (databases == "original" and j > 0) or (databases == "variants" and j == 0):
            continue
        groups, rep = _groups(voters, res.label)
        clear = clear_plurality(groups, quorum, min_support)
        if clear is None:
            continue
        top, support, answered = clear
        if res.answer == top:
            agreed += 1
            continue
        hits += 1
        if not first:
            theirs = rep[top]
            if res.status == "ok" and theirs.status == "ok" and res.bag == theirs.bag:
                diff = "the same rows in another order"
            elif res.status == "ok" and theirs.status == "ok":
                diff = _row_difference(res, theirs)
            else:
                diff = ""
            first = (
                f"on the {res.label} database it returns {res.text()}; {support} of {answered} other attempts "
                f"that run return {theirs.text()}" + (f" ({diff})" if diff else "")
            )
    if first:
        return Vote(1, first + (f" (and {hits - 1} more database(s))" if hits > 1 else ""))
    if agreed:
        return Vote(
            0, f"agrees with the clear plurality of the {len(voters)} other attempts that run on {agreed} database(s)"
        )
    return Vote(-1, f"no database has a clear plurality among the {len(voters)} other attempt(s) that run")


def disagrees_with_peers_check(
    quorum: float = DEFAULT_QUORUM, min_support: int = DEFAULT_SUPPORT, databases: str = "all"
):
    """The judge of a ``disagrees_with_peers`` variant (see :func:`vote`)."""
    if databases not in DATABASES:
        raise SpecError(
            f"results_disagree_with_peers: databases must be one of {', '.join(DATABASES)}, not {databases!r}"
        )
    if not 0 < quorum <= 1:
        raise SpecError(f"results_disagree_with_peers: quorum must be in (0, 1], got {quorum}")
    if min_support < 1:
        raise SpecError(f"results_disagree_with_peers: min_support must be at least 1, got {min_support}")

    def judge(task, mine, peers, ctx):
        v = vote(mine, peers, quorum=quorum, min_support=min_support, databases=databases)
        return {1: drawback, 0: clean, -1: abstain}[v.verdict](v.message)

    return judge


@peer_op(observe=results, detects="wrong_result", timeout=PEER_TIMEOUT, depends=DEPENDS)
def disagrees_with_peers(task, mine, peers, ctx):
    """On the task's database or one of its variants, the query's result differs from what a clear
    plurality of the other attempts that run return."""
    return disagrees_with_peers_check()(task, mine, peers, ctx)


@peer_op(observe=results, detects="wrong_result", timeout=PEER_TIMEOUT, depends=DEPENDS)
def outside_plurality(task, mine, peers, ctx):
    """Self-consistency: among the attempts that run, this one's result on the task's database is not
    the most common (a baseline; kept in shadow)."""
    ran, me, note = _results(mine)
    if not ran:
        return abstain(note or "the attempt does not run: no result to vote with")
    answers = [me[0].answer] + [rs[0].answer for ok, rs, _ in map(_results, peers) if ok and rs]
    if len(answers) < 2:
        return abstain("no other attempt that runs is in the batch: no plurality to join")
    counts = Counter(answers)
    big = max(counts.values())
    if counts[me[0].answer] == big:
        return clean(f"its result is a most common one ({big} of {len(answers)} attempts that run)")
    return drawback(
        f"its result is shared by {counts[me[0].answer]} of {len(answers)} attempts that run; the most "
        f"common one by {big}"
    )


# --------------------------------------------------------------------------- the template

#: Variants the inducer proposes (the birth gate decides); the seed op's parameters first.
VARIANTS: tuple[dict[str, Any], ...] = (
    {"quorum": DEFAULT_QUORUM, "min_support": DEFAULT_SUPPORT, "databases": "all"},
    {"quorum": 0.5, "min_support": 2, "databases": "all"},
    {"quorum": DEFAULT_QUORUM, "min_support": 3, "databases": "all"},
    {"quorum": DEFAULT_QUORUM, "min_support": DEFAULT_SUPPORT, "databases": "original"},
)


@template(
    "results_disagree_with_peers",
    kind="exec",
    params={"quorum": "float", "min_support": "int", "databases": "str"},
    family="sql",
    depends=DEPENDS,
    observer=results,
)
def results_disagree_with_peers(quorum: float, min_support: int, databases: str):
    """The query's result on the task's database or its variants differs from a clear plurality of the
    other attempts that run (quorum: share of voters; min_support: voters needed; databases: all,
    original or variants)."""
    return disagrees_with_peers_check(float(quorum), int(min_support), str(databases))


@inducer("results_disagree_with_peers")
def _induce_peer_variants(cluster: list, good: list) -> list[dict[str, Any]]:
    # a peer verdict needs the whole batch, which a cluster of (task, output) pairs does not carry:
    # propose the variants for tasks that name a warehouse, and let the birth gate decide
    if not any(isinstance(task.get("warehouse"), Mapping) for task, _ in cluster):
        return []
    return [dict(v) for v in VARIANTS]


#: The pack's peer ops: the seed op and the self-consistency baseline (shadow).
PEER_OPS = (disagrees_with_peers, outside_plurality.with_status("shadow"))

__all__ = [
    "DATABASES",
    "PEER_OPS",
    "VARIANTS",
    "Vote",
    "comparable_sql",
    "disagrees_with_peers",
    "disagrees_with_peers_check",
    "outside_plurality",
    "results",
    "results_disagree_with_peers",
    "vote",
]
