"""The LLM composer: a model proposes candidate expressions as .vx text (docs/design.md §6, Select).

It implements `vx.evolve.compose.Composer` (``name`` and ``propose(ctx)``). The model sees the op
catalog (names, tiers, failure classes, descriptions, coverage), the current gaps, and the elite
history with each elite's scores and shortcomings — never a label. It answers with expressions in a
```vx fenced block. Every proposal goes through the parser and `vx.dsl.check.check` against the
selectable ops; invalid ones (syntax errors, unknown ops, K out of range, …) are counted and
dropped, with their reasons kept in `LLMComposer.history`.

A failed or refused call (budget spent, API error) never stops evolution: the composer records it,
proposes nothing that round, and after the budget is spent makes no further calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.dsl.ast import Node
from vx.dsl.check import check
from vx.dsl.parse import VxSyntaxError, parse
from vx.dsl.printer import to_text

SYSTEM = """You design verifiers for outputs of AI agents, written in the vx expression language.

A verifier is an s-expression over named drawback detectors ("ops"). Each op returns, per item, \
DRAWBACK (a known defect found), CLEAN (none found) or ABSTAIN (no opinion). Abstaining children \
are ignored by every combinator; if all children abstain, the node abstains.

  op_name                      the op's verdict
  (any e1 ... ek)              drawback if any opining child is a drawback
  (all e1 ... ek)              drawback if every opining child is a drawback
  (not e)                      flips drawback and clean
  (vote K e1 ... ek)           drawback if at least K opining children are drawbacks (1 <= K <= k)
  (wvote T e1@w1 ... ek@wk)    drawback if the weighted sum of drawback children is >= T

An item FAILS when the expression says DRAWBACK. The objective rewards catching real failures \
(a missed failure costs twice a false alarm), agreeing with the pool's consensus on unlabeled items, \
and small expressions (each op beyond three costs a little, an LLM-judge op costs more).

Ops you may use (no others exist):
{catalog}

Reply with up to {n} new candidate expressions, each different from the elites shown, inside one \
fenced block:
```vx
(any op_a (vote 2 op_b op_c op_d))
(all op_e (not op_f))
```
Use only the ops listed above. Write nothing inside the block except expressions (and ; comments)."""


def _fmt_num(x: Any) -> str:
    try:
        f = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "n/a" if f != f else f"{f:.3f}"


def render_catalog(catalog: Sequence[Mapping[str, Any]], selectable: Sequence[str]) -> str:
    """One line per selectable op: name [tier] detects — description (coverage and other statistics)."""
    by_name = {str(c.get("name")): c for c in catalog}
    lines = []
    for name in sorted(selectable):
        c = by_name.get(name, {})
        stats = [
            f"{k}={_fmt_num(v)}"
            for k, v in sorted(c.items())
            if k in ("coverage", "fires", "fire_rate", "accuracy", "marginal", "overlap", "conflict") and v is not None
        ]
        desc = str(c.get("description") or "").strip()
        line = f"- {name} [{c.get('tier', '?')}] detects {c.get('detects') or name}"
        if desc:
            line += f" — {desc}"
        if stats:
            line += f" ({', '.join(stats)})"
        lines.append(line)
    return "\n".join(lines)


def derived_shortcomings(elite: Any) -> list[str]:
    """What an elite's scores say it gets wrong (when the engine gives no itemised shortcomings)."""
    out: list[str] = []
    try:
        a_dev, a_train = float(elite.a_dev), float(elite.a_train)
    except (TypeError, ValueError):
        return out
    if a_dev == a_dev and a_dev < 1.0:
        out.append(
            f"misjudges some labelled items (recall-weighted dev agreement {a_dev:.2f}; a missed failure "
            "costs twice a false alarm)"
        )
    if a_train == a_train and a_train < 0.9:
        out.append(f"disagrees with the ops' consensus on unlabeled items (A_train {a_train:.2f})")
    if elite.node.size() > 3:
        out.append(f"uses {elite.node.size()} op leaves; each beyond three costs")
    return out


def render_context(ctx: Any, max_elites: int = 8, max_gaps: int = 12) -> str:
    parts = [f"Round {ctx.round}."]
    if ctx.incumbent is not None:
        parts.append(f"Current best (incumbent): {to_text(ctx.incumbent, width=10**6)}")
    if ctx.elites:
        parts.append("Elite history (best first), with scores and shortcomings:")
        for e in list(ctx.elites)[:max_elites]:
            line = (
                f"- {to_text(e.node, width=10**6)}  objective={_fmt_num(e.objective)} "
                f"A_dev={_fmt_num(e.a_dev)} A_train={_fmt_num(e.a_train)}"
            )
            shortcomings = getattr(e, "shortcomings", ()) or derived_shortcomings(e)
            if shortcomings:
                line += "; shortcomings: " + "; ".join(str(s) for s in shortcomings)
            parts.append(line)
    if ctx.gaps:
        parts.append("Gaps (unlabeled items where the ops abstain entirely or split):")
        for g in list(ctx.gaps)[:max_gaps]:
            parts.append("- " + json.dumps(g, ensure_ascii=False, default=str, sort_keys=True)[:400])
        if len(ctx.gaps) > max_gaps:
            parts.append(f"- … and {len(ctx.gaps) - max_gaps} more")
    parts.append("Propose new candidate expressions that could fix these shortcomings and cover these gaps.")
    return "\n".join(parts)


_FENCE = re.compile(r"```[ \t]*(?:vx|lisp|scheme|clojure)?[ \t]*\n(.*?)```", re.DOTALL)


def split_expressions(text: str) -> list[str]:
    """The top-level expressions of the reply's fenced ```vx block(s): parenthesised forms and bare op
    names, separated at parenthesis depth 0; ``;`` comments dropped. A reply without a fenced block
    is read as prose: only its parenthesised forms count.
    A line starting at column 0 always begins a new expression (continuation lines are indented), so
    one unclosed form cannot swallow the ones after it; an unbalanced form is returned as it is, so
    that the parser reports it."""
    blocks = _FENCE.findall(text)
    body = "\n".join(blocks) if blocks else text
    out: list[str] = []
    cur: list[str] = []
    depth = 0

    def flush() -> None:
        nonlocal cur
        if cur:
            out.append("".join(cur))
            cur = []

    for line in body.splitlines():
        line = line.split(";", 1)[0]
        if depth > 0 and line[:1] and not line[:1].isspace() and line[:1] != ")":
            flush()
            depth = 0
        for ch in line + "\n":
            if depth == 0 and ch.isspace():
                flush()
                continue
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            cur.append(ch)
            if depth == 0 and ch == ")":
                flush()
            elif depth < 0:  # a stray closing parenthesis: hand the fragment to the parser as is
                flush()
                depth = 0
    flush()
    exprs = [e for e in (s.strip() for s in out) if e]
    if not blocks:  # no fenced block: the reply is prose with expressions in it; keep the forms only
        exprs = [e for e in exprs if e.startswith("(")]
    return exprs


@attrs.frozen
class Checked:
    text: str
    node: Node | None
    problem: str | None  # why it was dropped


def check_proposal(text: str, selectable: Sequence[str], max_leaves: int = 12) -> Checked:
    """Parse and check one proposal: syntax, known ops only, no check errors, bounded size."""
    try:
        node = parse(text, filename="<llm composer>", known_ops=selectable)
    except VxSyntaxError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "syntax error"
        return Checked(text, None, first)
    errors = [p for p in check(node, selectable) if p.severity == "error"]
    if errors:
        return Checked(text, None, errors[0].message)
    if node.size() > max_leaves:
        return Checked(text, None, f"too large: {node.size()} leaves (at most {max_leaves})")
    return Checked(text, node, None)


@attrs.define
class LLMComposer:
    """Composer backed by the ``composer`` role. `client_factory()` returns an `LLMClient` or None."""

    client_factory: Callable[[], Any]
    n: int = 8
    max_leaves: int = 12
    name: str = "llm"
    say: Callable[[str], None] | None = None
    history: list[dict[str, Any]] = attrs.field(factory=list)
    stopped: str | None = None  # why no further calls are made (budget spent)

    @property
    def invalid(self) -> int:
        return sum(h["invalid"] for h in self.history)

    @property
    def proposed(self) -> int:
        return sum(h["proposed"] for h in self.history)

    def propose(self, ctx: Any) -> list[Node]:
        from vx.llm.client import BudgetExceeded, LLMError

        record: dict[str, Any] = {"round": ctx.round, "proposed": 0, "valid": 0, "invalid": 0, "dropped": []}
        self.history.append(record)
        client = self.client_factory()
        if client is None or self.stopped or not ctx.selectable:
            record["skipped"] = self.stopped or ("LLM roles are off" if client is None else "no selectable ops")
            return []
        system = SYSTEM.format(catalog=render_catalog(ctx.catalog, ctx.selectable), n=self.n)
        try:
            completion = client.complete("composer", render_context(ctx), system=system)
        except BudgetExceeded as exc:
            self.stopped = str(exc)
            record["error"] = str(exc)
            if self.say:
                self.say(f"{exc} — the LLM composer stops; evolution goes on with the offline composers")
            return []
        except LLMError as exc:
            record["error"] = str(exc)
            if self.say:
                self.say(f"LLM composer: {exc} (round {ctx.round} goes on without its proposals)")
            return []
        except Exception as exc:  # never let the LLM side stop a run
            record["error"] = f"{type(exc).__name__}: {exc}"
            return []
        record["cached"] = completion.cached
        out: list[Node] = []
        seen: set[str] = set()
        for text in split_expressions(completion.text)[: 3 * self.n]:
            record["proposed"] += 1
            c = check_proposal(text, ctx.selectable, self.max_leaves)
            if c.node is None:
                record["invalid"] += 1
                record["dropped"].append({"text": text[:200], "problem": c.problem})
                continue
            key = to_text(c.node, width=10**6)
            if key in seen:
                continue
            seen.add(key)
            out.append(c.node)
        record["valid"] = len(out)
        return out
