"""Shared CLI plumbing: consoles, turning known errors into messages for people, option sets."""

from __future__ import annotations

import errno
import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from vx.text import json_dumps


def _width() -> int | None:
    """Terminal width on a terminal; a roomy fixed width when piped (tables stay readable in logs)."""
    import os

    if sys.stdout.isatty():
        return None
    return int(os.environ.get("COLUMNS", 0)) or 140


def esc(text: Any) -> str:
    """Data (op messages, item ids, errors, anything a candidate or a file may have written) for
    printing inside Rich markup: markup escaped, control characters and unpaired surrogates
    neutralised (``vx.text.printable``). Every interpolation of data into printed markup goes
    through this, including table cells (which Rich also reads as markup)."""
    from rich.markup import escape

    from vx.text import printable

    return escape(printable(str(text)))


console = Console(highlight=False, width=_width())
err_console = Console(stderr=True, highlight=False, width=_width())


class UserError(click.ClickException):
    """An error a person can fix; printed without a traceback, exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        first = self.message.split("\n", 1)[0]
        if ": error: " in first or first.startswith("error: "):  # already a diagnostic (file:line:col: error: …)
            err_console.print(esc(self.message), markup=True, highlight=False)
            return
        err_console.print(f"[bold red]error:[/] {esc(self.message)}", markup=True, highlight=False)


class NotKept(UserError):
    """What was computed could not be written (a full disk): printed without a traceback, exit status 4."""

    exit_code = 4


#: The errors of a disk that cannot take more: full, over quota, over the file size limit, read-only.
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


def friendly_errors(fn: Callable) -> Callable:
    """Turn the project's own exceptions into clean messages and a non-zero exit."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from vx.errors import NotKeptError, VxError

        try:
            return fn(*args, **kwargs)
        except NotKeptError as exc:  # a full disk: exit 4, what was computed was shown
            raise NotKept(str(exc)) from None
        except VxError as exc:  # every error vx raises on purpose: the message is for people
            raise UserError(str(exc)) from None
        except FileNotFoundError as exc:
            raise UserError(f"{exc.filename}: no such file") from None
        except OSError as exc:
            if exc.errno not in _DISK_FULL:
                raise
            raise NotKept(f"{exc.filename or 'a file'}: cannot be written ({exc.strerror})") from None
        except KeyError as exc:  # unknown op / item names carry a readable message
            what = exc.args[0] if exc.args else None
            if isinstance(what, str) and " " in what.strip():
                raise UserError(what) from None
            # a bare key is no message ("error: 101"): say what is missing and where it was looked up
            raise UserError(
                f"{getattr(fn, '__name__', 'vx')}: nothing is recorded under {what!r} (a missing key: "
                "the input is incomplete or damaged; if it is not, this is a vx bug: please report "
                "it)"
            ) from None

    return wrapper


class _Number(click.ParamType):
    """A finite number within bounds (click's FloatRange lets nan and inf through)."""

    def __init__(
        self, kind: type[int] | type[float], low: float | None = None, high: float | None = None, low_open: bool = False
    ) -> None:
        self.kind, self.low, self.high, self.low_open = kind, low, high, low_open
        lo = "" if low is None else (f"> {low:g}" if low_open else f">= {low:g}")
        hi = "" if high is None else f"<= {high:g}"
        self.name = f"{'integer' if kind is int else 'number'} {' and '.join(x for x in (lo, hi) if x)}".strip()

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        if isinstance(value, self.kind) and not isinstance(value, bool):
            number = value
        else:
            try:
                number = self.kind(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not {'an integer' if self.kind is int else 'a number'}", param, ctx)
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            self.fail(f"{value!r} must be {self.name.split(' ', 1)[1]}", param, ctx)
        if self.high is not None and number > self.high:
            self.fail(f"{value!r} must be {self.name.split(' ', 1)[1]}", param, ctx)
        return number


#: Option types that refuse nonsense before anything runs (`-j 0`, `--timeout -1`, `--rounds -2`, nan).
POSITIVE_INT = _Number(int, 1)
COUNT = _Number(int, 0)
POSITIVE = _Number(float, 0, low_open=True)
NON_NEGATIVE = _Number(float, 0)
FRACTION = _Number(float, 0, 1)
FINITE = _Number(float)


def show_option(default: int, what: str) -> Callable:
    """``--show N``: how many of `what` a command lists (``--json`` has all)."""
    return click.option(
        "--show", type=COUNT, default=default, show_default=True, help=f"How many {what} to list (--json lists all)."
    )


def family_option(help: str) -> Callable:
    """``--family DIR``: the family directory a command reads (into ``family_dir``)."""
    return click.option(
        "--family", "family_dir", type=click.Path(exists=True, file_okay=False), default=None, help=help
    )


def json_option(help: str) -> Callable:
    """``--json``: print the result as JSON (into ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def file_option(*names: str, help: str, metavar: str = "FILE") -> Callable:
    """An option naming a file a command writes (no default: not written unless named)."""
    return click.option(*names, type=click.Path(dir_okay=False), default=None, metavar=metavar, help=help)


def export_options(rows: str, noun: str) -> Callable:
    """``-o/--export FILE``, ``--csv-formulas`` and ``--html FILE``: one row per `noun` (`rows` says what a
    row holds) written as a table file, and a page browsing every `noun`."""
    export = file_option(
        "--export",
        "-o",
        "export_path",
        help=f"Write one row per {noun} ({rows}) to FILE: .csv, .jsonl or .parquet (needs pyarrow).",
    )
    formulas = click.option(
        "--csv-formulas",
        is_flag=True,
        help="In a .csv export, write cells that begin with = + - @ or a tab as they are (by default they "
        "get a leading ' so that a spreadsheet shows them as text instead of running them as formulas).",
    )
    html = file_option(
        "--html",
        "html_path",
        help=f"Write a self-contained page browsing every {noun} (filters, failure capsules) to FILE.",
    )
    return lambda fn: export(formulas(html(fn)))


def cache_options(fn: Callable) -> Callable:
    fn = click.option("--no-cache", is_flag=True, help="Do not read or write the verdict cache.")(fn)
    fn = click.option(
        "--cache",
        "cache_path",
        type=click.Path(dir_okay=False),
        help="Verdict cache file (default: $VX_CACHE or ~/.cache/vx/verdicts.sqlite).",
    )(fn)
    return fn


def run_options(fn: Callable) -> Callable:
    fn = click.option(
        "--timeout", type=POSITIVE, default=10.0, show_default=True, help="Time limit per op call, in seconds."
    )(fn)
    fn = click.option("--jobs", "-j", type=POSITIVE_INT, default=None, help="Worker processes (default: CPU count).")(
        fn
    )
    return fn


def open_cache(cache_path: str | None, no_cache: bool):
    if no_cache:
        return None
    from vx.ops.cache import VerdictCache

    cache = VerdictCache(
        cache_path, on_write_error=lambda message: err_console.print(f"[bold red]error:[/] {esc(message)}")
    )
    ctx = click.get_current_context(silent=True)
    if ctx is not None:  # closed with the command (its database files are not left open)
        ctx.call_on_close(cache.close)
    return cache


#: The exit status of a command whose results were computed and shown but could not all be kept (a full
#: disk under the verdict cache, an export, a run file).
EXIT_NOT_KEPT = NotKept.exit_code


def written(write: Callable[[], Any], failures: list[str]) -> Any:
    """``write()``, or None when the disk cannot take it (full, over quota, read-only): the reason is added to
    `failures`, for :func:`exit_if_not_kept` to say after the command has shown what it computed."""
    try:
        return write()
    except OSError as exc:
        if exc.errno not in _DISK_FULL:
            raise
        failures.append(f"{exc.filename or 'a file'}: cannot be written ({exc.strerror})")
        return None


def exit_if_not_kept(cache: Any, failures: list[str] | tuple[str, ...] = ()) -> None:
    """Exit with :data:`EXIT_NOT_KEPT` when what was computed could not all be written -- the verdict cache
    (said when it happened) or a file the command writes (`failures`) -- after the results were shown."""
    for failure in failures:
        err_console.print(f"[bold red]error:[/] {esc(failure)}; the results above are complete")
    cache_failed = cache is not None and bool(cache.write_error)
    if cache_failed:
        err_console.print(
            f"[bold red]error:[/] {cache.unwritten} verdict(s) and observation(s) computed in this run were not "
            f"kept in {esc(cache.path)}; the results above are complete"
        )
    if failures or cache_failed:
        sys.exit(EXIT_NOT_KEPT)


def fmt_num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return "—" if math.isnan(x) else f"{x:.{digits}f}"
    return str(x)


def dump_json(obj: Any) -> None:
    def default(o: Any) -> Any:
        if hasattr(o, "as_dict"):
            return o.as_dict()
        if hasattr(o, "item"):
            return o.item()
        return str(o)

    def clean(o: Any) -> Any:
        if isinstance(o, float) and math.isnan(o):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    sys.stdout.write(json_dumps(clean(obj), indent=2, default=default) + "\n")


def dump_document(schema: str, payload: Any) -> None:
    """Print a JSON document that names its shape: ``{"schema": "<name>/<version>", ...}``.

    Every `--json` output of vx carries such a key (a list is wrapped under `key`), so that scripts
    can tell what they read and notice a change of format."""
    body = payload if isinstance(payload, dict) else {"items": payload}
    dump_json({"schema": schema, **{k: v for k, v in body.items() if k != "schema"}})
