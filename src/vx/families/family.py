"""Task families: a directory with family.toml, tasks, three splits and a seed expression.

A family may hold many attempts per task (all attempts of a task live in one split). The other
attempts of a *dev* task are kept, unlabeled, in an optional ``peers.jsonl`` (``[splits] peers``):
they are never graded, only compared with by peer ops (:func:`vx.ops.core.peer_op`).

Loading validates everything and reports every problem with file:line and what to do; nothing
is silently dropped. Leakage safety is structural: `Family.evolution_view()` returns an object
holding the unlabeled train split and the labeled dev split only, and the locked split's labels
live solely inside the `Audit` object returned by `Family.audit()`.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from vx.dsl.ast import Node
from vx.dsl.parse import VxSyntaxError, parse
from vx.errors import VxError
from vx.families import schema
from vx.families.pack import Pack, load_packs
from vx.inputs import read_input_text, read_json_lines
from vx.ops.item import Item, parse_label
from vx.ops.pool import OpPool
from vx.text import file_lines

SPLITS = ("train", "dev", "locked")
OBJECTIVE_DEFAULTS: dict[str, float] = {
    "w": 1.0,  # exponent of A_train (0.25 for report families)
    "fail_weight": 2.0,  # a missed drawback costs twice a false alarm
    "op_cost": 0.001,  # λ per op beyond the floor
    "op_floor": 3,
    "llm_cost": 0.002,  # extra cost per LLM-calling op
}


class FamilyError(VxError):
    """A family that cannot be loaded; `problems` lists every issue found (file:line: message)."""

    def __init__(self, problems: Sequence[str] | str, where: str = "") -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.where = where
        head = f"family {where}: " if where else ""
        shown = self.problems[:20]
        more = f"\n  … and {len(self.problems) - 20} more" if len(self.problems) > 20 else ""
        if len(shown) == 1:
            super().__init__(head + shown[0])
        else:
            super().__init__(f"{head}{len(self.problems)} problems\n  " + "\n  ".join(shown) + more)


@attrs.frozen
class Split:
    name: str
    items: tuple[Item, ...]
    path: Path | None = None

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    @property
    def ids(self) -> list[str]:
        return [it.id for it in self.items]

    def labels(self) -> list[float | None]:
        return [it.label for it in self.items]

    def unlabeled(self) -> Split:
        """The items with no label, no reference and no meta (a builder's provenance, such as the
        mutation that made an output, would tell its label)."""
        return Split(
            self.name, tuple(attrs.evolve(it, label=None, reference=None, meta={}) for it in self.items), self.path
        )


def read_file_text(path: Path, what: str) -> str:
    """A family file's text: a regular file of bounded size (a directory, a FIFO or a device is refused
    before a byte is read, so nothing hangs; `vx.inputs`), UTF-8 (a byte-order mark is dropped). Raises
    FamilyError naming the file."""
    return read_input_text(path, what, error=FamilyError)


def read_jsonl(path: Path, problems: list[str], what: str = "file") -> list[tuple[int, dict[str, Any]]]:
    """(line, object) of a family file's JSON lines (`vx.inputs.read_json_lines`); a file that cannot
    be read and every line that is not a JSON object are added to `problems` (`file:line: ...`), so a
    family's problems are reported together."""
    try:
        rows = read_json_lines(
            path, what, objects=True, error=FamilyError, skip=lambda n, why: problems.append(f"{path}:{n}: {why}")
        )
    except FamilyError as exc:
        problems.append(str(exc))
        return []
    return [(row.number, row.value) for row in rows]


def _toml_line(text: str, path: tuple[Any, ...]) -> int | None:
    """The line of ``key = ...`` (or of the ``[table]`` header) a family.toml path points at."""
    table: tuple[str, ...] = ()
    want_table, key = tuple(str(p) for p in path[:-1]), str(path[-1]) if path else ""
    for n, raw in enumerate(file_lines(text), 1):
        line = raw.strip()
        if line.startswith("["):
            table = tuple(part.strip().strip('"') for part in line.strip("[]").split("."))
            if table == tuple(str(p) for p in path):
                return n
            continue
        name = line.split("=", 1)[0].strip().strip('"') if "=" in line else None
        if name is not None and table == want_table and name == key:
            return n
    return None


def find_family_dir(start: str | Path) -> Path:
    """The nearest directory at or above `start` (a file or directory) holding family.toml."""
    p = Path(start).resolve()
    for d in [p] + list(p.parents) if p.is_dir() else [p.parent] + list(p.parent.parents):
        if (d / "family.toml").is_file():
            return d
    raise FamilyError(
        f"no family.toml found in {p if p.is_dir() else p.parent} or any parent directory; "
        "name the family directory explicitly (the command line: --family DIR)"
    )


class Audit:
    """The only holder of locked-split labels. Evolution never receives this object's labels;
    it may receive a callable that returns agreement numbers (measurement only)."""

    def __init__(self, split: Split) -> None:
        self._labels = {it.id: it.label for it in split.items}
        self.split = split.unlabeled()

    def __len__(self) -> int:
        return len(self.split)

    def labeled_split(self) -> Split:
        """The locked items with their labels — for a person auditing (`vx eval --dataset locked`)."""
        return Split(
            self.split.name,
            tuple(attrs.evolve(it, label=self._labels[it.id]) for it in self.split.items),
            self.split.path,
        )

    def labels(self) -> list[float | None]:
        return [self._labels[i] for i in self.split.ids]


@attrs.frozen
class EvolutionView:
    """What the evolution engine may see: tasks, unlabeled train, labeled dev, the op pool and
    objective constants — never the locked labels."""

    name: str
    tasks: Mapping[str, Mapping[str, Any]]
    train: Split
    dev: Split
    objective: Mapping[str, float]
    family_dir: Path
    root: str | None
    pool_factory: Any = attrs.field(eq=False, repr=False)
    pack_factory: Any = attrs.field(default=None, eq=False, repr=False)
    #: the unlabeled other attempts of the dev tasks (task id -> outputs): peer ops compare with them
    peers: Mapping[str, tuple[Any, ...]] = attrs.field(factory=dict, eq=False, repr=False)

    def pool(self) -> OpPool:
        return self.pool_factory()

    def pack(self) -> Pack:
        """The family's packs combined: taxonomy, failure classifier and template tags for synthesis."""
        if self.pack_factory is None:
            return Pack(self.name, self.pool(), self.root)
        return self.pack_factory()


@attrs.frozen
class FamilyData:
    """A family as read from its directory and checked (`read_family`): what a `Family` holds."""

    dir: Path
    config: Mapping[str, Any]  # family.toml as read
    tasks: dict[str, dict[str, Any]]
    splits: dict[str, Split]  # train, dev and locked
    peers: dict[str, list[Any]]  # dev task id -> the unlabeled other attempts (peers.jsonl)
    peers_path: Path | None
    seed_path: Path
    seed_text: str | None
    specs_path: Path | None
    specs: list[dict[str, Any]]
    pack_factory: Callable[[], Pack] = attrs.field(eq=False, repr=False)


def read_family(directory: str | os.PathLike[str]) -> FamilyData:
    """Read and check a family directory: family.toml, its packs, tasks, splits, peers, seed and specs.
    Every problem found is reported at once, each naming its file and line (`FamilyError`)."""
    return _FamilyReader(Path(directory).resolve()).read()


class _FamilyReader:
    """The steps of reading a family; each adds what is wrong to ``problems`` (file:line: what) and goes on."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.toml_path = directory / "family.toml"
        self.problems: list[str] = []

    def read(self) -> FamilyData:
        cfg = self._config()
        packs = _pack_names(cfg)
        pack_factory = _pack_factory(packs, self.dir, str(cfg.get("name") or self.dir.name))
        task_schema = pack_factory().task_schema if packs else None  # a bad pack is a FamilyError
        tasks = self._tasks(self.dir / str(cfg.get("tasks", "tasks.jsonl")), task_schema)
        splits, seen_ids = self._splits(cfg.get("splits") or {}, tasks)
        peers_rel = (cfg.get("splits") or {}).get("peers")
        peers_path = self.dir / str(peers_rel) if peers_rel is not None else None
        peers = self._peers(peers_path, tasks, splits, seen_ids) if peers_path is not None else {}
        self._check_dev(splits.get("dev"))
        seed_path = self.dir / str(cfg.get("seed", "seed.vx"))
        seed_text = self._seed(seed_path, named="seed" in cfg)
        specs_path = self.dir / str(cfg["specs"]) if "specs" in cfg else None
        specs = self._specs(specs_path) if specs_path is not None else []
        if self.problems:
            raise FamilyError(self.problems, str(self.dir))
        return FamilyData(
            self.dir, cfg, tasks, splits, peers, peers_path, seed_path, seed_text, specs_path, specs, pack_factory
        )

    def _config(self) -> dict[str, Any]:
        toml_path = self.toml_path
        if not toml_path.is_file():
            raise FamilyError(f"{toml_path} does not exist (a family directory needs a family.toml)")
        toml_text = read_file_text(toml_path, "family.toml")
        try:
            config: dict[str, Any] = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as exc:
            raise FamilyError(f"{toml_path}: invalid TOML: {exc}") from None
        problems = []
        for where, message in schema.check(config, schema.FAMILY_SCHEMA):
            line = _toml_line(toml_text, where)
            problems.append(f"{toml_path}{f':{line}' if line else ''}: {message}")
        if problems:  # the rest of loading reads these fields
            raise FamilyError(problems, str(self.dir))
        return config

    def _tasks(self, tasks_path: Path, task_schema: Any) -> dict[str, dict[str, Any]]:
        tasks: dict[str, dict[str, Any]] = {}
        task_lines: dict[str, int] = {}
        for n, obj in read_jsonl(tasks_path, self.problems, "tasks file"):
            found = schema.check(obj, task_schema or schema.TASK_BASE)
            if found:
                self.problems.extend(f"{tasks_path}:{n}: {message}" for _, message in found)
                continue
            tid = obj.get("id")
            if not isinstance(tid, str) or not tid:
                self.problems.append(f'{tasks_path}:{n}: a task needs a non-empty string "id"')
            elif tid in tasks:
                self.problems.append(f"{tasks_path}:{n}: duplicate task id {tid!r} (first at line {task_lines[tid]})")
            else:
                tasks[tid] = obj
                task_lines[tid] = n
        return tasks

    def _splits(
        self, split_paths: Mapping[str, Any], tasks: Mapping[str, Any]
    ) -> tuple[dict[str, Split], dict[str, str]]:
        unknown = set(split_paths) - set(SPLITS) - {"peers"}
        if unknown:
            self.problems.append(
                f"{self.toml_path}: unknown split(s) {', '.join(sorted(unknown))}; splits are {', '.join(SPLITS)}"
            )
        splits: dict[str, Split] = {}
        seen_ids: dict[str, str] = {}
        for name in SPLITS:
            path = self.dir / split_paths.get(name, f"{name}.jsonl")
            if not path.exists() and not path.is_symlink():
                self.problems.append(f"{path}: the {name} split file is missing (set [splits] {name} in family.toml)")
                continue
            splits[name] = self._split(name, path, tasks, seen_ids)
        return splits, seen_ids

    def _check_dev(self, dev: Split | None) -> None:
        if dev is not None and dev.items:
            hard = {it.hard_label() for it in dev.items}
            if hard != {"pass", "fail"}:
                missing = {"pass", "fail"} - hard
                self.problems.append(
                    f"{dev.path}: the dev split has no {'/'.join(sorted(missing))} items; "
                    "evolution needs both classes (5 fail + 5 pass by default)"
                )
        elif dev is not None:
            self.problems.append(f"{dev.path}: the dev split is empty")

    def _seed(self, seed_path: Path, *, named: bool) -> str | None:
        if seed_path.exists():
            from vx.dsl.vxfile import VxFileError, read_text

            try:
                return read_text(seed_path)
            except VxFileError as exc:
                self.problems.append(str(exc))
        elif named:
            self.problems.append(f"{seed_path}: seed expression file not found")
        return None

    def _specs(self, specs_path: Path) -> list[dict[str, Any]]:
        try:
            specs = json.loads(read_file_text(specs_path, "specs file"))
            if not isinstance(specs, list):
                raise ValueError("expected a JSON list of op specs")
            return specs
        except FamilyError as exc:
            self.problems.append(str(exc))
        except (ValueError, RecursionError) as exc:
            self.problems.append(f"{specs_path}: {str(exc)[:200]}")
        return []

    def _split(self, name: str, path: Path, tasks: Mapping[str, Any], seen_ids: dict[str, str]) -> Split:
        items: list[Item] = []
        local: dict[str, int] = {}
        for n, obj in read_jsonl(path, self.problems, f"{name} split file"):
            where = f"{path}:{n}"
            missing = [k for k in ("id", "task", "output") if k not in obj]
            if missing:
                self.problems.append(f"{where}: missing field(s) {', '.join(repr(m) for m in missing)}")
                continue
            found = schema.check(obj, schema.ITEM_SCHEMA)
            if found:
                self.problems.extend(f"{where}: {message}" for _, message in found)
                continue
            iid, tid = obj["id"], obj["task"]
            if not isinstance(iid, str) or not iid:
                self.problems.append(f'{where}: "id" must be a non-empty string')
                continue
            if iid in local:
                self.problems.append(f"{where}: duplicate item id {iid!r} (first at line {local[iid]})")
                continue
            if iid in seen_ids:
                self.problems.append(
                    f"{where}: item id {iid!r} is also in the {seen_ids[iid]} split; splits must be disjoint"
                )
                continue
            if tid not in tasks:
                self.problems.append(f"{where}: task {tid!r} is not in the tasks file")
                continue
            label = None
            if name == "train":
                if obj.get("label") is not None:
                    self.problems.append(
                        f'{where}: train items are unlabeled; remove "label" (labels belong in dev or locked)'
                    )
                    continue
            else:
                if "label" not in obj:
                    self.problems.append(f'{where}: {name} items need a "label" ("pass", "fail" or a probability)')
                    continue
                try:
                    label = parse_label(obj["label"])
                except ValueError as exc:
                    self.problems.append(f"{where}: {exc}")
                    continue
            meta = obj.get("meta") or {}
            if not isinstance(meta, dict):
                self.problems.append(f'{where}: "meta" must be an object')
                continue
            local[iid] = n
            seen_ids[iid] = name
            items.append(Item(iid, tid, obj["output"], label, obj.get("reference"), meta, n))
        return Split(name, tuple(items), path)

    def _peers(
        self, path: Path, tasks: Mapping[str, Any], splits: Mapping[str, Split], seen_ids: dict[str, str]
    ) -> dict[str, list[Any]]:
        peers: dict[str, list[Any]] = {}
        if not path.exists():
            self.problems.append(f"{path}: the peers file named in family.toml is missing")
            return peers
        split_of_task = {it.task: name for name, sp in splits.items() for it in sp.items}
        for n, obj in read_jsonl(path, self.problems):
            where = f"{path}:{n}"
            missing = [k for k in ("id", "task", "output") if k not in obj]
            if missing:
                self.problems.append(f"{where}: missing field(s) {', '.join(repr(m) for m in missing)}")
                continue
            if obj.get("label") is not None:
                self.problems.append(f'{where}: peers are unlabeled attempts; remove "label"')
                continue
            iid, tid = obj["id"], obj["task"]
            if not isinstance(iid, str) or not iid or iid in seen_ids:
                self.problems.append(f"{where}: item id {iid!r} is empty or already used by a split")
                continue
            if tid not in tasks:
                self.problems.append(f"{where}: task {tid!r} is not in the tasks file")
                continue
            if split_of_task.get(tid, "dev") != "dev":
                self.problems.append(
                    f"{where}: task {tid!r} is a {split_of_task[tid]} task; peers.jsonl holds the other "
                    "attempts of dev tasks only (splits stay disjoint by task)"
                )
                continue
            seen_ids[iid] = "peers"
            peers.setdefault(tid, []).append(obj["output"])
        return peers


def _pack_names(config: Mapping[str, Any]) -> list[str]:
    packs = config.get("packs", [])
    return [packs] if isinstance(packs, str) else list(packs)


def _pack_factory(packs: list[str], directory: Path, name: str) -> Callable[[], Pack]:
    """The family's packs, loaded at the first call and kept (the factory captures no reference to the
    family, nor to its locked split)."""
    loaded: list[Pack] = []

    def pack_factory() -> Pack:
        if not loaded:
            loaded.append(load_packs(packs, base_dir=directory, name=name))
        return loaded[0]

    return pack_factory


class Family:
    """A loaded, validated task family: `Family.load(directory)` (or `Family(directory)`, the same)."""

    def __init__(self, source: str | os.PathLike[str] | FamilyData) -> None:
        data = source if isinstance(source, FamilyData) else read_family(source)
        cfg = data.config
        self.dir = data.dir
        self.config: dict[str, Any] = dict(cfg)
        self.name: str = str(cfg.get("name") or self.dir.name)
        self.description: str = str(cfg.get("description", ""))
        self.packs: list[str] = _pack_names(cfg)
        self.root_name: str | None = cfg.get("root")
        self.objective = dict(OBJECTIVE_DEFAULTS)
        for k, v in (cfg.get("objective") or {}).items():
            self.objective[k] = float(v)
        self.provenance: dict[str, Any] = dict(cfg.get("provenance") or {})
        self.llm_config: dict[str, Any] = dict(cfg.get("llm") or {})
        self.tasks = data.tasks
        self.peers_path, self._peers = data.peers_path, data.peers
        self.seed_path, self.seed_text = data.seed_path, data.seed_text
        self.specs_path, self.specs = data.specs_path, data.specs
        self._splits = {name: split for name, split in data.splits.items() if name != "locked"}
        # The locked split (labels included) lives only inside the Audit object.
        self._audit = Audit(data.splits["locked"])
        self._pack_factory = data.pack_factory
        pack_factory, root_, specs_ = data.pack_factory, self.root_name, list(self.specs)
        cached: list[OpPool] = []

        def pool_factory() -> OpPool:
            if not cached:
                cached.append(pack_factory().pool(root=root_, specs=specs_))
            return cached[0].copy()

        self._pool_factory = pool_factory

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Family:
        """Read, check and load the family at `directory` (`read_family`); every problem is a FamilyError."""
        return cls(read_family(directory))

    # --- access -------------------------------------------------------------------------------
    @property
    def peers(self) -> dict[str, list[Any]]:
        """The unlabeled other attempts of the dev tasks (task id -> outputs), from peers.jsonl."""
        return {t: list(v) for t, v in self._peers.items()}

    def attempts_for(self, items: Sequence[Item]) -> dict[str, list[Any]]:
        """The other attempts at the tasks of `items` (task id -> outputs): every output of those
        tasks in the family's splits and peers file that is not one of `items`. Pass it as
        ``peers=`` when grading some items of a family, so that peer ops see the whole attempt set."""
        ids = {it.id for it in items}
        wanted = {it.task for it in items}
        out: dict[str, list[Any]] = {}
        for split in (self._splits["train"], self._splits["dev"], self._audit.split):
            for it in split.items:
                if it.task in wanted and it.id not in ids:
                    out.setdefault(it.task, []).append(it.output)
        for tid, outputs in self._peers.items():
            if tid in wanted:
                out.setdefault(tid, []).extend(outputs)
        return out

    def pool(self) -> OpPool:
        """The family's op pool (packs + typed specs), loaded once."""
        return self._pool_factory()

    def pack(self) -> Pack:
        """The family's packs, loaded once and combined (ops, root, taxonomy, classifier, templates)."""
        return self._pack_factory()

    def seed(self, known_ops: Sequence[str] | None = None) -> Node:
        if self.seed_text is None:
            raise FamilyError(f"{self.seed_path}: the family has no seed expression")
        return parse(self.seed_text, filename=str(self.seed_path), known_ops=known_ops)

    def split(self, name: str) -> Split:
        """train or dev. The locked split is only available through `audit()`."""
        if name == "locked":
            raise PermissionError("locked labels are only reachable through Family.audit()")
        if name not in self._splits:
            raise KeyError(f"unknown split {name!r}; splits are {', '.join(SPLITS)}")
        return self._splits[name]

    def audit(self) -> Audit:
        return self._audit

    def evolution_view(self) -> EvolutionView:
        # train reaches evolution as outputs only: any provenance in its items' meta could leak labels
        return EvolutionView(
            self.name,
            self.tasks,
            self._splits["train"].unlabeled(),
            self._splits["dev"],
            dict(self.objective),
            self.dir,
            self.root_name,
            self._pool_factory,
            self._pack_factory,
            {t: tuple(v) for t, v in self._peers.items()},
        )

    def labeled(self, name: str) -> Split:
        """A split with its labels, for a person evaluating (dev, locked) or unlabeled (train)."""
        return self.audit().labeled_split() if name == "locked" else self.split(name)

    def counts(self) -> dict[str, int]:
        return {**{k: len(v) for k, v in self._splits.items()}, "locked": len(self._audit)}


def load_family(directory: str | Path) -> Family:
    return Family.load(directory)


__all__ = [
    "Audit",
    "EvolutionView",
    "Family",
    "FamilyData",
    "FamilyError",
    "Item",
    "Split",
    "find_family_dir",
    "load_family",
    "read_family",
    "parse_label",
    "VxSyntaxError",
]
