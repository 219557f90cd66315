"""Sharding without a cluster: `vx eval --shard i/n` grades every n-th item and writes a partial
matrix file; `vx matrix merge` joins the shards into the matrix of the whole split.

For batch schedulers (a Slurm array, a CI matrix): each job runs one shard, anywhere, with its own
verdict cache; the merge checks that the shards belong together (same family, split, expression,
ops and op versions, same n), that no item appears twice and that none is missing.

The file (JSON, ``"format": "vx-matrix/1"``)::

    {"format": "vx-matrix/1", "family": "humaneval", "split": "train", "expression": "(any …)",
     "shard": [1, 4],               # 1-based; [1, 1] for a whole split
     "n_items": 544,                # items in the whole split
     "ops": [{"name": "parses", "version": "…"}, …],
     "items": [{"index": 0, "id": "HumanEval/0#0", "verdicts": "10-0…"}, …],   # 1 / 0 / - per op
     "messages": [["HumanEval/0#0", "crash", "…"], …],
     "failures": [{"item": …, "op": …, "kind": …, "error": …}, …]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vx.dsl.matrix import VerdictMatrix
from vx.text import json_dumps

FORMAT = "vx-matrix/1"
_CODE = {1: "1", 0: "0", -1: "-"}
_DECODE = {"1": 1, "0": 0, "-": -1}


class ShardError(ValueError):
    """Shards that do not belong together, or a malformed matrix file."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` → (2, 4); 1 ≤ i ≤ n."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise ShardError(f"--shard must look like i/n (e.g. 2/4), got {text!r}") from None
    if not 1 <= i <= n:
        raise ShardError(f"--shard {text}: need 1 <= i <= n")
    return i, n


def shard_indices(n_items: int, i: int, n: int) -> list[int]:
    """Positions of shard i of n: every n-th item starting at i-1 (tasks spread evenly)."""
    return list(range(i - 1, n_items, n))


@attrs.define
class MatrixFile:
    family: str
    split: str
    expression: str
    shard: tuple[int, int]
    n_items: int
    ops: list[dict[str, str]]
    indices: list[int]
    item_ids: list[str]
    verdicts: np.ndarray  # int8, items x ops
    messages: list[list[str]]
    failures: list[dict[str, Any]]

    @property
    def matrix(self) -> VerdictMatrix:
        return VerdictMatrix.from_array(self.verdicts, self.item_ids, [o["name"] for o in self.ops])

    @property
    def complete(self) -> bool:
        return sorted(self.indices) == list(range(self.n_items))

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "family": self.family,
            "split": self.split,
            "expression": self.expression,
            "shard": list(self.shard),
            "n_items": self.n_items,
            "ops": self.ops,
            "items": [
                {"index": k, "id": item, "verdicts": "".join(_CODE[int(v)] for v in row)}
                for k, item, row in zip(self.indices, self.item_ids, self.verdicts)
            ],
            "messages": self.messages,
            "failures": self.failures,
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json_dumps(self.as_dict()) + "\n", encoding="utf-8")


def from_application(
    app: Any,
    *,
    family: str,
    split: str,
    expression: str,
    shard: tuple[int, int],
    n_items: int,
    indices: Sequence[int],
    versions: dict[str, str],
) -> MatrixFile:
    m = app.matrix
    ids = list(m.item_ids)
    wanted = set(ids)
    messages = sorted([item, op, text] for (item, op), text in app.messages.items() if item in wanted)
    failures = [{"item": f.item, "op": f.op, "kind": f.kind, "error": f.error} for f in app.failures]
    return MatrixFile(
        family,
        split,
        expression,
        (shard[0], shard[1]),
        n_items,
        [{"name": op, "version": versions[op]} for op in m.op_names],
        list(indices),
        ids,
        np.asarray(m.to_array(), dtype=np.int8),
        messages,
        failures,
    )


def load(path: str | Path) -> MatrixFile:
    where = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ShardError(f"{where}: cannot read a matrix file: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ShardError(f'{where}: not a vx matrix file (expected "format": "{FORMAT}")')
    try:
        ops = [{"name": str(o["name"]), "version": str(o["version"])} for o in data["ops"]]
        rows, indices, ids = [], [], []
        for entry in data["items"]:
            codes = entry["verdicts"]
            if len(codes) != len(ops) or set(codes) - set(_DECODE):
                raise ShardError(f"{where}: item {entry.get('id')!r} has a malformed verdict string {codes!r}")
            rows.append([_DECODE[c] for c in codes])
            indices.append(int(entry["index"]))
            ids.append(str(entry["id"]))
        shard = [int(x) for x in data["shard"]]
        if len(shard) != 2:
            raise ShardError(f'{where}: "shard" must be two numbers [i, n], got {data["shard"]!r:.80}')
        verdicts = np.array(rows, dtype=np.int8).reshape(len(rows), len(ops))
        return MatrixFile(
            str(data["family"]),
            str(data["split"]),
            str(data["expression"]),
            (shard[0], shard[1]),
            int(data["n_items"]),
            ops,
            indices,
            ids,
            verdicts,
            [list(map(str, m)) for m in data.get("messages", [])],
            list(data.get("failures", [])),
        )
    except ShardError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise ShardError(f"{where}: malformed matrix file ({type(exc).__name__}: {exc})") from None


def merge(files: Sequence[MatrixFile], names: Sequence[str] | None = None) -> MatrixFile:
    """Join shards of one evaluation; raises ShardError saying what does not fit."""
    if not files:
        raise ShardError("nothing to merge")
    names = list(names or [f"file {k + 1}" for k in range(len(files))])
    first = files[0]
    for name, f in zip(names[1:], files[1:]):
        for what in ("family", "split", "expression", "n_items", "ops"):
            if getattr(f, what) != getattr(first, what):
                raise ShardError(
                    f"{name} is not a shard of the same evaluation as {names[0]}: its {what} differs "
                    f"({getattr(f, what)!r:.80} vs {getattr(first, what)!r:.80})"
                )
        if f.shard[1] != first.shard[1]:
            raise ShardError(f"{name} is shard {f.shard[0]}/{f.shard[1]}, {names[0]} is of {first.shard[1]}")
    seen: dict[int, str] = {}
    for name, f in zip(names, files):
        for k in f.indices:
            if k in seen:
                raise ShardError(f"item {k} is in both {seen[k]} and {name} (a shard given twice?)")
            seen[k] = name
    rows = [(k, item, row) for f in files for k, item, row in zip(f.indices, f.item_ids, f.verdicts)]
    rows.sort(key=lambda r: r[0])
    missing = first.n_items - len(rows)
    merged = MatrixFile(
        first.family,
        first.split,
        first.expression,
        (1, 1) if missing == 0 else (0, first.shard[1]),
        first.n_items,
        first.ops,
        [r[0] for r in rows],
        [r[1] for r in rows],
        np.array([r[2] for r in rows], dtype=np.int8).reshape(len(rows), len(first.ops)),
        sorted(m for f in files for m in f.messages),
        sorted((x for f in files for x in f.failures), key=lambda x: (x["op"], x["item"])),
    )
    return merged
