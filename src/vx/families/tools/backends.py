"""BFCL's stateful backends, as the multi-turn replay uses them: which classes exist, whether they
are installed, their public methods, and the directory a sandboxed replay imports them from.

The backends are the classes of ``bfcl_eval.eval_checker.multi_turn_eval.func_source_code`` (a
simulated file system, messaging, posting, ticketing, trading, travel booking, vehicle control, and
a stateless math API), from the optional ``bfcl-eval`` package (installed with ``pip install
--no-deps bfcl-eval``: its declared dependencies are model-provider SDKs the backends never import;
their one dependency, ``mpmath``, comes with vx's ``tools`` extra). vx never imports them in its own
process: it reads their method names from their source (:func:`public_methods`) and runs them in a
sandboxed child whose import path is a private copy of exactly those modules and mpmath
(:func:`staged_dir`) -- not the whole ``site-packages``, which holds BFCL's ground-truth answers.
"""

from __future__ import annotations

import ast
import compileall
import functools
import hashlib
import importlib.util
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from vx.errors import MissingDependency

#: BFCL's backend classes (its ``CLASS_FILE_PATH_MAPPING``, the multi-turn suite's eight) -> module.
CLASSES: dict[str, str] = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
#: The package the backend modules live in.
PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
#: Modules of that package the backends import besides their own.
SUPPORT = ("long_context",)
#: What to run when the backends are missing.
INSTALL = "pip install 'vx-verifiers[tools]' && pip install --no-deps bfcl-eval"

_lock = threading.Lock()
_staged: str | None = None


def _package_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("bfcl_eval")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / Path(*PACKAGE.split(".")[1:])
    return path if path.is_dir() else None


def _mpmath_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("mpmath")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def missing() -> str | None:
    """Why the backends cannot run here (a message naming what to install), or None when they can."""
    src = _package_dir()
    if src is None:
        return f"BFCL's backends (the bfcl-eval package) are not installed: {INSTALL}"
    absent = [m for m in (*CLASSES.values(), *SUPPORT) if not (src / f"{m}.py").is_file()]
    if absent:
        return f"the installed bfcl-eval lacks backend module(s) {', '.join(absent)} under {src}: reinstall it"
    if _mpmath_dir() is None:
        return f"mpmath (which BFCL's math backend imports) is not installed: {INSTALL}"
    return None


def require() -> Path:
    """The backends' source directory; raises MissingDependency (saying what to install) when absent."""
    why = missing()
    if why is not None:
        raise MissingDependency(why)
    path = _package_dir()
    assert path is not None
    return path


@functools.lru_cache(maxsize=1)
def version() -> str:
    """A digest of the backends' source and mpmath's (what a replay's outcome depends on)."""
    src = require()
    digest = hashlib.sha256()
    for name in sorted((*CLASSES.values(), *SUPPORT)):
        digest.update(name.encode() + b"\0" + (src / f"{name}.py").read_bytes())
    mp = _mpmath_dir()
    digest.update(b"mpmath\0" + (mp / "__init__.py").read_bytes() if mp else b"")
    return digest.hexdigest()[:12]


@functools.cache
def signatures(cls_name: str) -> dict[str, tuple[str, ...]]:
    """The public methods of a backend class and their parameter names (``self`` left out), read from
    its source (not imported): what BFCL's executor and the child dispatch to."""
    if cls_name not in CLASSES:
        raise KeyError(cls_name)
    tree = ast.parse((require() / f"{CLASSES[cls_name]}.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls_name:
            return {
                f.name: tuple(a.arg for a in (*f.args.posonlyargs, *f.args.args)[1:])
                for f in sorted(node.body, key=lambda f: getattr(f, "name", ""))
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                and not f.name.startswith("_")
                and not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.decorator_list)
            }
    raise KeyError(f"class {cls_name} not found in its module")


def public_methods(cls_name: str) -> tuple[str, ...]:
    """The public method names of a backend class, sorted."""
    return tuple(signatures(cls_name))


def dispatch_table(classes: Sequence[str]) -> dict[str, str]:
    """Method name -> the class that serves it, for a task's involved classes in their order (a later
    class wins a name two classes share, as in BFCL's executor). Unknown classes are skipped."""
    table: dict[str, str] = {}
    for cls_name in classes:
        if cls_name in CLASSES:
            for name in public_methods(cls_name):
                table[name] = cls_name
    return table


def _secure(path: Path) -> bool:
    """Whether a staged directory may be trusted: ours, not writable by others, complete."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.getuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        and (path / ".complete").is_file()
    )


def _build(target: Path, src: Path, mp: Path) -> None:
    pkg = target / Path(*PACKAGE.split("."))
    pkg.mkdir(parents=True)
    parts = PACKAGE.split(".")
    for i in range(1, len(parts) + 1):
        (target / Path(*parts[:i]) / "__init__.py").write_text("", encoding="utf-8")
    for name in (*CLASSES.values(), *SUPPORT):
        shutil.copy2(src / f"{name}.py", pkg / f"{name}.py")
    shutil.copytree(mp, target / "mpmath", ignore=shutil.ignore_patterns("__pycache__", "tests", "*.pyc"))
    # the child runs without writing bytecode: compiled once here, its imports stay cheap
    compileall.compile_dir(str(target), quiet=2, workers=1)
    for root, dirs, files in os.walk(target):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    (target / ".complete").write_text(version(), encoding="utf-8")
    os.chmod(target, 0o755)


def staged_dir(base: str | None = None) -> str:
    """A directory holding only BFCL's backend modules (under their package names, with empty package
    ``__init__`` files) and mpmath, compiled, readable by the sandbox's account: the child's import
    path. Made once per backend version (under the system temp directory, or ``base``); one that is
    not ours, writable by others or incomplete is never used."""
    global _staged
    with _lock:
        if _staged is not None and Path(_staged).is_dir():
            return _staged
        src = require()
        mp = _mpmath_dir()
        assert mp is not None
        root = Path(base or tempfile.gettempdir())
        final = root / f"vx-backends-{os.getuid()}-{version()}"
        if not _secure(final):
            tmp = Path(tempfile.mkdtemp(prefix=final.name + ".", dir=root))
            try:
                _build(tmp, src, mp)
                try:
                    os.rename(tmp, final)
                except OSError:  # another process made it first, or a stranger's stands there
                    pass
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            if not _secure(final):  # not ours: keep the private one
                final = tmp
            elif tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        _staged = str(final)
        return _staged


def involved(classes: Iterable[str]) -> list[str]:
    """The known backend classes among ``classes``, in order."""
    return [c for c in classes if c in CLASSES]
