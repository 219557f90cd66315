"""Helpers for the hostile-output suite: small code families built from the bundled HumanEval
family (its packs, root and seed verifier; tasks taken from its tasks.jsonl)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


def example_tasks(*ids: str) -> dict[str, dict[str, Any]]:
    found = {}
    for line in (EXAMPLE / "tasks.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["id"] in ids:
            found[record["id"]] = record
    assert set(found) == set(ids), f"tasks {set(ids) - set(found)} are not in {EXAMPLE}"
    return found


def code_family(root: Path, task_ids: tuple[str, ...], outputs: dict[str, list[tuple[str, str, str]]]) -> Path:
    """A family directory under ``root``: the example's packs, root op and seed, the given tasks,
    and per split a list of (task id, output, label) ("" label for train)."""
    config = tomllib.loads((EXAMPLE / "family.toml").read_text(encoding="utf-8"))
    fam = root / "fam"
    fam.mkdir()
    packs = ", ".join(json.dumps(p) for p in config["packs"])
    (fam / "family.toml").write_text(
        f'name = "hostile"\npacks = [{packs}]\nroot = {json.dumps(config["root"])}\nseed = "seed.vx"\n',
        encoding="utf-8",
    )
    (fam / "seed.vx").write_text((EXAMPLE / "seed.vx").read_text(encoding="utf-8"), encoding="utf-8")
    tasks = example_tasks(*task_ids)
    (fam / "tasks.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks.values()), encoding="utf-8")
    for split in ("train", "dev", "locked"):
        lines = []
        for n, (tid, output, label) in enumerate(outputs.get(split, [])):
            row = {"id": f"{split}-{n}", "task": tid, "output": output}
            if split != "train":
                row["label"] = label
            lines.append(json.dumps(row) + "\n")
        (fam / f"{split}.jsonl").write_text("".join(lines), encoding="utf-8")
    return fam


def first_module(*names: str):
    """The first importable module of ``names`` (the package layout moved once; tests follow)."""
    import importlib

    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ImportError(f"none of {names} can be imported")


def sandbox_api():
    return first_module("vx.sandbox")


def exec_module():
    """The code family's module holding the process-wide sandbox of its exec ops."""
    for name in ("vx.families.code.ops.run", "vx.families.code.ops.exec", "vx.families.code.ops"):
        try:
            mod = first_module(name)
        except ImportError:
            continue
        if hasattr(mod, "_sandbox_instance"):
            return mod
    raise ImportError("no module of the code family holds _sandbox_instance")


def groundtruth_module():
    return first_module("vx.families.code.data.groundtruth")


def tasks_module():
    return first_module("vx.families.code.data.tasks")


def family_module():
    return first_module("vx.families.family")


_SANDBOXES: dict[tuple[str, tuple[tuple[str, Any], ...]], object] = {}


def layer_sandbox(layer: str, **config: Any) -> Any:
    """One sandbox per layer and configuration (built once); the test is skipped where the layer is not available."""
    api = sandbox_api()
    key = (layer, tuple(sorted(config.items())))
    if key not in _SANDBOXES:
        try:
            _SANDBOXES[key] = api.Sandbox(api.SandboxConfig(layer=layer, **config))
        except api.SandboxUnavailable as exc:
            _SANDBOXES[key] = str(exc)
    found = _SANDBOXES[key]
    if isinstance(found, str):
        pytest.skip(f"layer {layer} is not available here: {found}")
    return found


@pytest.fixture(params=tuple(sandbox_api().LAYERS))
def layer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Force the exec ops' process-wide sandbox onto one layer for the test."""
    mod = exec_module()
    from vx.families.code.probes import budgets

    sb = layer_sandbox(request.param, per_call_timeout=budgets.EXAMPLE_CPU, load_timeout=budgets.LOAD_CPU)
    monkeypatch.setattr(mod, "_sandbox_instance", sb)
    if hasattr(mod, "_runs"):  # runs are remembered by code and probes: each layer must run its own
        mod._runs.clear()
    return str(request.param)


@pytest.fixture
def fam(tmp_path: Path) -> Path:
    """A copy of the bundled HumanEval family with a small locked split (fast to evaluate)."""
    dst = tmp_path / "fam"
    shutil.copytree(EXAMPLE, dst)
    locked = (dst / "locked.jsonl").read_text(encoding="utf-8").splitlines()
    (dst / "locked.jsonl").write_text("\n".join(locked[:4]) + "\n", encoding="utf-8")
    return dst
