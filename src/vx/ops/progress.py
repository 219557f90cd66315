"""Counted progress bars with an ETA, for every phase that applies ops (or grades, or builds).

One look everywhere (`vx eval`, `vx evolve`'s start, births and audits, `vx data build`): the phase,
a bar, done/total, elapsed and time left, on stderr and only on a terminal (a pipe or a log file gets
nothing). The layout adapts to the terminal: at 80 columns the bar shrinks and the elapsed time goes,
so a line never wraps and the phase's text is never cut.

    bar = Bars()                       # on stderr, when it is a terminal
    with bar.task("applying 12 op(s)", total=len(items)) as advance:
        for item in items:
            ...
            advance()                  # or advance(n)

`Bars(embedded=True)` draws nothing itself: a command that already runs a live display (`vx evolve`)
puts `bars.renderable` in it. Anything with a ``task(description, total)`` context manager can stand
in for `Bars` (``apply_ops(progress=...)`` accepts one).

`Lines()` is the same counted progress for a pipe or a log file: plain lines (no control codes), one
when a phase starts, then at most one each `every` seconds or 25% of the way, and one when it ends:

    grading 614 items: 0/614
    grading 614 items: 160/614 (26%), 12s, about 34s left
    grading 614 items: 614/614 done in 41s

`for_console(console)` picks one: bars on a terminal, lines elsewhere (what the commands use).
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

COMPACT_WIDTH = 100  # below this many columns: a narrower bar, no elapsed column


class Reporter(Protocol):
    def task(self, description: str, total: int | None) -> contextlib.AbstractContextManager[Callable[..., None]]: ...


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def columns(width: int) -> list[Any]:
    """The bar's columns for a terminal `width` columns wide."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    compact = width < COMPACT_WIDTH
    cols: list[Any] = [
        TextColumn("{task.description}"),
        BarColumn(bar_width=max(10, min(40, width - 60)) if compact else 40),
        MofNCompleteColumn(),
    ]
    if not compact:
        cols.append(TimeElapsedColumn())
    cols += [TextColumn("ETA" if compact else "left"), TimeRemainingColumn(compact=compact)]
    return cols


class Bars:
    """Progress bars on a rich console (default: stderr), shown only when it is a terminal."""

    def __init__(
        self, console: Any = None, *, embedded: bool = False, transient: bool = True, force: bool = False
    ) -> None:
        from rich.console import Console

        self.console = console if console is not None else Console(stderr=True)
        self.enabled = force or self.console.is_terminal
        self.embedded = embedded
        self.transient = transient
        self._progress: Any = None
        self._lock = threading.Lock()
        self._active = 0

    def _make(self) -> Any:
        from rich.progress import Progress

        return Progress(
            *columns(self.console.size.width),
            console=self.console,
            transient=self.transient,
            auto_refresh=not self.embedded,
            expand=False,
        )

    @property
    def renderable(self) -> Any:
        """What an embedding live display shows: the bars while a task runs, else nothing."""
        from rich.text import Text

        return self._progress if self._progress is not None and self._active else Text("")

    def __rich__(self) -> Any:
        return self.renderable

    @contextlib.contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Callable[..., None]]:
        if not self.enabled or (total is not None and total <= 0):
            yield lambda n=1: None
            return
        with self._lock:
            started_here = self._progress is None
            if started_here:
                self._progress = self._make()
                if not self.embedded:
                    self._progress.start()
            self._active += 1
            tid = self._progress.add_task(description, total=total)
        progress = self._progress
        try:
            yield lambda n=1: progress.advance(tid, n)
        finally:
            with self._lock:
                progress.remove_task(tid) if self.transient else progress.update(tid, completed=total)
                self._active -= 1
                if started_here and not self.embedded:
                    progress.stop()
                if self._active == 0 and not self.embedded:
                    self._progress = None

    def stage(self) -> Callable[[str, int | None, int], None]:
        """A `(stage, total, advance)` callback (the data builders' protocol) drawing one bar per stage;
        a stage's bar ends when the next stage starts. Close it with :meth:`close_stages`."""
        state: dict[str, Any] = {"name": None, "cm": None, "advance": None}

        def update(name: str, total: int | None, advance: int) -> None:
            if name != state["name"]:
                self.close_stages(state)
                state["name"] = name
                state["cm"] = self.task(name, total)
                state["advance"] = state["cm"].__enter__()
            elif total is not None and self._progress is not None:
                with self._lock:
                    for t in self._progress.tasks:
                        if t.description == name:
                            self._progress.update(t.id, total=total)
            if advance:
                state["advance"](advance)

        update.state = state  # type: ignore[attr-defined]
        return update

    @staticmethod
    def close_stages(stage: Any) -> None:
        """End the open bar of a :meth:`stage` callback (or of its state dict)."""
        state: dict[str, Any] = getattr(stage, "state", stage)
        if state.get("cm") is not None:
            state["cm"].__exit__(None, None, None)
            state["cm"] = None
            state["name"] = None


class Lines:
    """Counted progress as plain lines on a text stream (default: stderr), for pipes and log files."""

    def __init__(self, stream: Any = None, *, every: float = 10.0, clock: Callable[[], float] | None = None) -> None:
        import time

        self.stream = stream
        self.every = every
        self.clock = clock or time.monotonic
        self._lock = threading.Lock()

    def _say(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: progress is not worth failing for
            pass

    @contextlib.contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Callable[..., None]]:
        if total is not None and total <= 0:
            yield lambda n=1: None
            return
        start = self.clock()
        state = {"done": 0, "said_at": start, "said_done": 0}
        of = f"/{total}" if total else ""
        self._say(f"{description}: 0{of}")

        def advance(n: int = 1) -> None:
            with self._lock:
                state["done"] += n
                done, now = state["done"], self.clock()
                quarter = bool(total) and (done - state["said_done"]) * 4 >= total  # type: ignore[operator]
                if (now - state["said_at"] < self.every and not quarter) or (total and done >= total):
                    return
                state["said_at"], state["said_done"] = now, done
            elapsed = now - start
            text = f"{description}: {done}{of}"
            if total:
                text += f" ({100 * done // total}%), {elapsed:.0f}s"
                if done:
                    text += f", about {elapsed * (total - done) / done:.0f}s left"
            self._say(text)

        try:
            yield advance
        finally:
            self._say(f"{description}: {state['done']}{of} done in {self.clock() - start:.0f}s")


def for_console(console: Any) -> Reporter:
    """The progress reporter for a command printing on `console`: bars on a terminal, plain lines
    (on the console's file) in a pipe or a log file."""
    if console.is_terminal:
        return Bars(console)
    return Lines(console.file)


def reporter_for(progress: Any) -> Reporter | None:
    """What `apply_ops(progress=...)` means: None → bars when stderr is a terminal, True → bars,
    False → none, anything with ``task()`` → itself."""
    if progress is None:
        return Bars() if stderr_is_tty() else None
    if progress is True:
        return Bars(force=True)
    if progress is False:
        return None
    if hasattr(progress, "task"):
        return progress
    raise TypeError(f"progress must be None, a bool or a reporter with task(), not {type(progress).__name__}")


__all__ = ["Bars", "COMPACT_WIDTH", "Lines", "Reporter", "columns", "for_console", "reporter_for", "stderr_is_tty"]
