"""Fuzzing family loading: random and mutated family.toml files, task and split lines
only ever load or raise vx's own errors (VxError) -- never another exception, never a hang. The
default run loads 2 000 mutated families (with the 12 000 mutated result streams of
tests/sandbox/test_frame_fuzz.py, over 10 000 hostile inputs); ``-m slow`` loads 20 000 more."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

from vx.errors import VxError
from vx.families.family import Family
from vx.families.schema import published

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny"

TOML_TOKENS = [
    "[",
    "]",
    "=",
    '"',
    "'",
    "\n",
    "[splits]",
    "[objective]",
    "[split]",
    "w = -5",
    "op_floor = 1.5",
    "name = 7",
    "packs = [1]",
    "root = []",
    'seed = "missing.vx"',
    'train = "tasks.jsonl"',
    'dev = ".."',
    "sed = 1",
    "\x00",
    "\xff",
    "é",
    "1e999",
    "nan",
    "inf",
    "true",
    "[[x]]",
    "{}",
    'tasks = "/dev/zero"',
    'specs = "seed.vx"',
    'locked = "family.toml"',
]
JSON_TOKENS = [
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '"',
    "\\",
    "\\ud800",
    "null",
    "true",
    "1" * 400,
    '"id"',
    '"task"',
    '"output"',
    '"label"',
    '"pass"',
    '"fail"',
    '"meta"',
    "2",
    "-1",
    "0.5",
    '{"a": {"b": []}}',
    '"\\u0000"',
]


def mutate(rng: random.Random, text: str, tokens: list[str]) -> str:
    chars = list(text)
    for _ in range(rng.randrange(1, 5)):
        at = rng.randrange(len(chars) + 1)
        op = rng.randrange(4)
        if op == 0 and chars:
            del chars[at : at + rng.randrange(1, 10)]
        elif op == 1:
            chars[at:at] = list(rng.choice(tokens))
        elif op == 2 and chars:
            chars[at:at] = chars[at : at + rng.randrange(1, 30)]
        else:
            chars[at : at + 1] = list(rng.choice(tokens))
    return "".join(chars)


def run_family_fuzz(tmp_path: Path, seed: int, count: int) -> dict[str, int]:
    shm = Path("/dev/shm")
    base = (Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() and os.access(shm, os.W_OK) else tmp_path) / "fam"
    shutil.copytree(FIXTURE, base, ignore=shutil.ignore_patterns("__pycache__"))
    originals = {
        name: (base / name).read_text(encoding="utf-8")
        for name in ("family.toml", "tasks.jsonl", "train.jsonl", "dev.jsonl", "locked.jsonl", "seed.vx")
    }
    rng = random.Random(seed)
    outcomes = {"loaded": 0, "refused": 0}
    dirty: list[str] = []
    for _ in range(count):
        for name in dirty:  # restore what the previous round mutated (file writes are the slow part)
            (base / name).write_text(originals[name], encoding="utf-8")
        dirty = rng.sample(sorted(originals), rng.randrange(1, 3))
        for name in dirty:
            tokens = TOML_TOKENS if name.endswith(".toml") or name.endswith(".vx") else JSON_TOKENS
            mutated = mutate(rng, originals[name], tokens)
            (base / name).write_bytes(
                mutated.encode("utf-8", "surrogatepass") if rng.random() < 0.9 else mutated.encode("latin-1", "replace")
            )
        try:
            fam = Family(base)
            fam.pool()
            fam.seed(fam.pool().names)
            outcomes["loaded"] += 1
        except VxError:
            outcomes["refused"] += 1
    if str(base).startswith("/dev/shm"):
        shutil.rmtree(base.parent, ignore_errors=True)
    return outcomes


def test_mutated_families_load_or_raise_vx_errors(tmp_path: Path) -> None:
    outcomes = run_family_fuzz(tmp_path, seed=15, count=2000)
    assert outcomes["refused"] > 100 and outcomes["loaded"] > 10, outcomes  # both paths exercised


@pytest.mark.slow
def test_many_more_mutated_families(tmp_path: Path) -> None:
    run_family_fuzz(tmp_path, seed=1515, count=20_000)


def test_published_schemas_are_current() -> None:
    """docs/schemas/*.json are the schemas vx validates with (regenerate: python -m vx.families.schema
    docs/schemas)."""
    docs = Path(__file__).resolve().parents[2] / "docs" / "schemas"
    for name, schema in published().items():
        assert json.loads((docs / name).read_text(encoding="utf-8")) == schema, f"docs/schemas/{name} is stale"
