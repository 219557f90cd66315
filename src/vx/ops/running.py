"""Running an item's ops in one process: the root first, each op under its time limit, one shared context.

The worker side of op application: `vx.ops.apply` decides what must run and records what comes back,
`vx.ops.workers` and `vx.ops.executors` decide where it runs, and this module runs it. An op that raises
abstains on the item with its error recorded; an op that overruns its time limit is interrupted
(SIGALRM, in the main thread) and abstains. An output over :data:`MAX_OUTPUT_CHARS` runs no op at all.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from vx.dsl.verdict import Verdict
from vx.ops.core import Context, Op
from vx.text import clean

__all__ = [
    "MAX_OUTPUT_CHARS",
    "OUTPUT_TOO_LARGE",
    "OpTimeout",
    "Outcome",
    "clip",
    "failure_text",
    "output_too_large",
    "run_item",
    "run_op",
]


class OpTimeout(BaseException):
    """Raised inside an op that overran its time limit (BaseException: `except Exception` in an
    op cannot swallow it)."""


@attrs.frozen
class Outcome:
    """One op on one item."""

    verdict: int
    message: str = ""
    duration: float = 0.0
    error: str | None = None
    kind: str | None = None  # None, "error", "timeout", "died"
    evidence: Any = None  # an observer's observation (observer pseudo-ops only)
    #: Why this verdict is never cached ("" when it may be): the item's verdicts depend on more than its task
    #: and output (``Context.mark_volatile``: the clock, randomness).
    volatile: str = ""


def _alarm(signum: int, frame: object) -> None:  # pragma: no cover - exercised through timeouts
    raise OpTimeout()


def run_op(o: Op, task: Mapping[str, Any], output: Any, ctx: Context, timeout: float | None) -> Outcome:
    """One op on one item, under its time limit: its verdict and message, or an abstention with the error."""
    t0 = time.perf_counter()
    use_alarm = bool(timeout) and _can_alarm()
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
    try:
        if use_alarm:  # armed inside the try: a limit that expires at once is a timeout, not an escape
            signal.setitimer(signal.ITIMER_REAL, float(timeout or 0))
        res = o(task, output, ctx)
        evidence = res.evidence if o.provenance.get("observes") else None
        return Outcome(int(res.verdict), clip(res.message), time.perf_counter() - t0, evidence=evidence)
    except OpTimeout:
        return Outcome(int(Verdict.ABSTAIN), "", time.perf_counter() - t0, f"timed out after {timeout:g}s", "timeout")
    except Exception as exc:  # an op bug: abstain on this item, record what happened
        return Outcome(int(Verdict.ABSTAIN), "", time.perf_counter() - t0, failure_text(exc), "error")
    finally:
        if use_alarm:
            _disarm()
            signal.signal(signal.SIGALRM, old)


def _disarm() -> None:
    """Stop the op's timer; an alarm that fires while it is being stopped is absorbed here."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            return
        except OpTimeout:
            continue


def _can_alarm() -> bool:
    return threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")


def clip(text: str, n: int = 500) -> str:
    """Op messages and errors as vx keeps them: clipped, and valid Unicode (an op may quote the
    candidate, whose text can carry unpaired surrogates that no cache or terminal accepts)."""
    text = clean(str(text))
    return text if len(text) <= n else text[: n - 1] + "…"


def failure_text(exc: BaseException) -> str:
    """An op's (or a judge's) exception as an error kept with its abstention: type, clipped message and
    the file and line it was raised at."""
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {clip(str(exc), 300)}{where}"


#: The largest output (characters of a text, bytes of a bytes value) ops are run on. A larger one is
#: judged without running an op: the root op reports the drawback ``output_too_large`` and the other
#: ops abstain, so no parser, sandbox run or comparison ever works on megabytes of candidate text (whose
#: parent-side cost grows with its size, a minute and more for a few megabytes of statements).
MAX_OUTPUT_CHARS = 256 * 1024
OUTPUT_TOO_LARGE = "output_too_large"


def output_too_large(output: Any) -> str | None:
    """The ``output_too_large`` drawback message for an output over :data:`MAX_OUTPUT_CHARS`, else None."""
    if isinstance(output, (str, bytes, bytearray)) and len(output) > MAX_OUTPUT_CHARS:
        unit = "characters" if isinstance(output, str) else "bytes"
        return (
            f"{OUTPUT_TOO_LARGE}: the output has {len(output):,} {unit}, more than the {MAX_OUTPUT_CHARS:,} vx judges"
        )
    return None


def run_item(
    ops: Sequence[Op],
    task: Mapping[str, Any],
    output: Any,
    timeout: float | None,
    on_start: Callable[[int], None] | None = None,
    skip: frozenset[int] = frozenset(),
    ctx: Context | None = None,
) -> dict[int, Outcome]:
    """Run `ops` (root first) on one item with one shared context; keyed by index in `ops`. An output
    over :data:`MAX_OUTPUT_CHARS` runs no op: the root's verdict is the drawback ``output_too_large``,
    every other op abstains (see :func:`output_too_large`)."""
    ctx = ctx if ctx is not None else Context()
    out: dict[int, Outcome] = {}
    too_large = output_too_large(output)
    if too_large is not None:
        # the root reports it (with no root in the pool, every op does); a peer op's observer observes
        # nothing (the peer op abstains on this attempt, and its peers are compared without it)
        has_root = any(o.provenance.get("root") for o in ops)
        for k, o in enumerate(ops):
            if k in skip or o.provenance.get("observes"):
                continue
            fires = bool(o.provenance.get("root")) or not has_root
            out[k] = Outcome(
                int(Verdict.DRAWBACK if fires else Verdict.ABSTAIN),
                too_large if fires else f"not run: {OUTPUT_TOO_LARGE}",
                0.0,
            )
        return out
    for k, o in enumerate(ops):
        if k in skip:
            continue
        if on_start is not None:
            on_start(k)
        out[k] = run_op(o, task, output, ctx, o.timeout or timeout)
    if ctx.volatile:  # marked by any op of the item (the root, reading the output): none of it is kept
        out = {k: attrs.evolve(v, volatile=ctx.volatile) for k, v in out.items()}
    return out
