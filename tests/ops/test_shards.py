"""Shards: any split into n shards merges back into the whole matrix; misfits are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.cli.main import main
from vx.ops.shards import MatrixFile, ShardError, load, merge, parse_shard, shard_indices

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "humaneval"


def _whole(n_items: int, n_ops: int, seed: int) -> MatrixFile:
    rng = np.random.default_rng(seed)
    verdicts = rng.integers(-1, 2, size=(n_items, n_ops)).astype(np.int8)
    ops = [{"name": f"op{k}", "version": "v"} for k in range(n_ops)]
    ids = [f"item{k}" for k in range(n_items)]
    msgs = [[ids[k], "op0", f"message {k}"] for k in range(0, n_items, 3)]
    return MatrixFile("fam", "train", "(any op0)", (1, 1), n_items, ops, list(range(n_items)), ids, verdicts, msgs, [])


def _shard(whole: MatrixFile, i: int, n: int) -> MatrixFile:
    idx = shard_indices(whole.n_items, i, n)
    ids = {whole.item_ids[k] for k in idx}
    return MatrixFile(
        whole.family,
        whole.split,
        whole.expression,
        (i, n),
        whole.n_items,
        whole.ops,
        idx,
        [whole.item_ids[k] for k in idx],
        whole.verdicts[idx],
        [m for m in whole.messages if m[0] in ids],
        [],
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(1, 5), st.integers(1, 7), st.integers(0, 10_000), st.randoms())
def test_shards_merge_back_to_the_whole(n_items, n_ops, n, seed, rnd) -> None:
    whole = _whole(n_items, n_ops, seed)
    shards = [_shard(whole, i, n) for i in range(1, n + 1)]
    rnd.shuffle(shards)
    merged = merge(shards)
    assert merged.item_ids == whole.item_ids and merged.indices == whole.indices
    assert merged.verdicts.tobytes() == whole.verdicts.tobytes() and merged.complete
    assert merged.messages == sorted(whole.messages)


def test_round_trip_through_a_file(tmp_path) -> None:
    whole = _whole(9, 3, 1)
    whole.save(tmp_path / "m.json")
    back = load(tmp_path / "m.json")
    assert back.as_dict() == whole.as_dict()


def test_misfits_are_refused() -> None:
    whole = _whole(10, 2, 2)
    a, b = _shard(whole, 1, 2), _shard(whole, 2, 2)
    with pytest.raises(ShardError, match="in both"):
        merge([a, a])
    import attrs

    other = attrs.evolve(b, expression="(any op1)")
    with pytest.raises(ShardError, match="expression differs"):
        merge([a, other])
    with pytest.raises(ShardError, match="shard 1/3"):
        merge([a, attrs.evolve(_shard(whole, 1, 3), indices=[99])])
    for bad in ("3/2", "0/1", "x", "1/2/3"):
        with pytest.raises(ShardError):
            parse_shard(bad)


def test_malformed_files_say_where(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ShardError, match="bad.json: not a vx matrix file"):
        load(path)
    good = _whole(2, 2, 3).as_dict()
    good["items"][0]["verdicts"] = "1x"
    path.write_text(json.dumps(good))
    with pytest.raises(ShardError, match="malformed verdict string"):
        load(path)
    # a "shard" of one number loaded, then broke merging with an IndexError
    good = _whole(2, 2, 3).as_dict()
    good["shard"] = [1]
    path.write_text(json.dumps(good))
    with pytest.raises(ShardError, match=r'bad.json: "shard" must be two numbers \[i, n\], got \[1\]'):
        load(path)


def test_cli_shards_equal_the_whole_split(tmp_path) -> None:
    runner = CliRunner()
    seed = str(EXAMPLE / "seed.vx")
    for i in (1, 2, 3):
        res = runner.invoke(
            main,
            [
                "eval",
                seed,
                "-d",
                "dev",
                "--shard",
                f"{i}/3",
                "--matrix",
                str(tmp_path / f"s{i}.json"),
                "--no-cache",
                "-j",
                "1",
            ],
        )
        assert res.exit_code == 0, res.output
    res = runner.invoke(
        main,
        ["matrix", "merge", *(str(tmp_path / f"s{i}.json") for i in (1, 2, 3)), "-o", str(tmp_path / "joined.json")],
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        main, ["eval", seed, "-d", "dev", "--matrix", str(tmp_path / "whole.json"), "--no-cache", "-j", "1", "--json"]
    )
    assert res.exit_code == 0, res.output
    joined, whole = load(tmp_path / "joined.json"), load(tmp_path / "whole.json")
    assert joined.item_ids == whole.item_ids and joined.verdicts.tobytes() == whole.verdicts.tobytes()
    res = runner.invoke(main, ["matrix", "merge", str(tmp_path / "s1.json"), "-o", str(tmp_path / "x.json")])
    assert res.exit_code == 1 and "in none of the 1 shards" in res.output
    res = runner.invoke(main, ["eval", seed, "--shard", "1/2", "--no-cache"])
    assert res.exit_code != 0 and "--shard needs --matrix" in res.output
