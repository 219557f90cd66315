"""The single-turn tools builder (``vx data build tools``): what it writes, what it leaves out and
says so, BFCL's checker imported without its provider SDKs, and the shared data's own figures."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import shared_data

from vx.cli.main import main as cli
from vx.families.family import Family
from vx.families.tools.data import build, out_dirs
from vx.families.tools.data.single import build_single, stratum
from vx.families.tools.decode import decode

FN = {
    "name": "math.factorial",
    "description": "Factorial of a number.",
    "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]},
}
MODELS = ("m-a", "m-b", "m-c", "m-d")


def _record(q: int, model: str, category: str) -> dict:
    good = (q + MODELS.index(model)) % 3 != 0
    if category == "relevance":
        output, label = ("I cannot do that." if good else "[math.factorial(number=2)]"), good
        decoded = None if good else [{"math.factorial": {"number": 2}}]
        error = "" if good else "relevance_error:decoder_success"
        answer = None
    else:
        n = q if good else q + 1
        output = f"[math.factorial(number={n})]"
        decoded, label, answer = [{"math.factorial": {"number": n}}], good, [{"math.factorial": {"number": [q]}}]
        error = "" if good else "value_error:others"
    return {
        "id": f"{category}_{q}::{model}",
        "task_id": f"{category}_{q}",
        "category": category,
        "model": model,
        "question": f"What is the factorial of {q}?",
        "functions": [FN],
        "possible_answer": answer,
        "output_raw": output,
        "output_decoded": decoded,
        "decode_error": None,
        "fc_name_dots_replaced": False,
        "label": label,
        "error_type": error or None,
    }


def _data(root: Path, *, bad_lines: bool = False) -> Path:
    single = root / "single"
    single.mkdir(parents=True)
    for category, n in (("simple", 40), ("relevance", 12)):
        lines = [json.dumps(_record(q, m, category)) for q in range(1, n + 1) for m in MODELS]
        if bad_lines and category == "simple":
            lines += ["{not json", json.dumps({"task_id": "x"}), lines[0], "[1, 2]"]
        with gzip.open(single / f"{category}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
    return root


def test_a_family_is_built_split_by_question_with_bfcl_s_labels(tmp_path):
    data = _data(tmp_path / "data", bad_lines=True)
    report = build_single(data, tmp_path / "fam", n_locked=40, use_bfcl=False)
    fam = Family(tmp_path / "fam")
    splits = {s: fam.split(s).items for s in ("train", "dev")}
    locked = fam.audit().labeled_split().items
    tasks = {s: {it.task for it in items} for s, items in {**splits, "locked": locked}.items()}
    assert not (tasks["train"] & tasks["dev"]) and not (tasks["train"] & tasks["locked"])
    assert not (tasks["dev"] & tasks["locked"])
    assert len(splits["dev"]) == 10 and sum(it.label == 0 for it in splits["dev"]) == 5
    assert all("possible_answer" not in t for t in fam.tasks.values())
    assert {t["category"] for t in fam.tasks.values()} == {"simple", "relevance"}
    for it in [*locked, *splits["dev"]]:
        q, model = int(it.task.rsplit("_", 1)[1]), it.id.split("::")[1]
        assert it.label == (0.0 if (q + MODELS.index(model)) % 3 == 0 else 1.0), it.id
    assert report.counts["input_skipped"] == 4
    reasons = report.provenance["input_skipped"]["counts"]
    assert any("malformed JSON" in r for r in reasons) and any("second answer" in r for r in reasons)
    assert any("missing field" in r for r in reasons) and any("expected a JSON object" in r for r in reasons)
    assert "labels are the file's own: turned off" in " ".join(report.notes)
    assert report.counts["decoder_read_share"] == 1.0
    assert (tmp_path / "fam" / "peers.jsonl").is_file()


def test_labels_are_re_derived_with_bfcl_s_checker(tmp_path):
    pytest.importorskip("bfcl_eval")
    report = build_single(_data(tmp_path / "data"), tmp_path / "fam", n_locked=40)
    assert report.counts["bfcl_label_agreement"].startswith("208/208 with bfcl-eval")


def test_bfcl_s_checker_imports_without_its_provider_sdks():
    pytest.importorskip("bfcl_eval")
    from vx.families.tools.data.bfcl import bfcl_label, load_checker

    before = set(sys.modules)  # other tests of the same process may have imported a provider SDK themselves
    checker = load_checker()
    assert "bfcl_eval.constants.model_config" not in sys.modules  # the stand-in is gone at once
    added = set(sys.modules) - before
    assert not any(m.split(".")[0] in ("openai", "anthropic", "mistralai", "cohere") for m in added)
    ok, _ = bfcl_label(
        checker,
        category="simple",
        functions=[FN],
        decoded=[{"math_factorial": {"number": 5}}],
        decode_failed=False,
        possible_answer=[{"math.factorial": {"number": [5]}}],
        dots_replaced=True,
    )
    assert ok
    bad, why = bfcl_label(
        checker,
        category="simple",
        functions=[FN],
        decoded=[{"math.factorial": {"number": 6}}],
        decode_failed=False,
        possible_answer=[{"math.factorial": {"number": [5]}}],
        dots_replaced=False,
    )
    assert not bad and why == "value_error:others"
    assert bfcl_label(
        checker,
        category="relevance",
        functions=[FN],
        decoded=None,
        decode_failed=True,
        possible_answer=None,
        dots_replaced=False,
    ) == (True, "")


def test_strata_from_bfcl_s_error_types():
    assert stratum("ast_decoder:decoder_failed") == "format"
    assert stratum("relevance_error:decoder_success") == "irrelevant_call"
    assert stratum("parallel_function_checker_no_order:wrong_count") == "wrong_call"
    assert stratum("value_error:string") == "wrong_value"


def test_out_dirs_and_kinds(tmp_path):
    assert out_dirs("single", tmp_path) == {"single": tmp_path}
    assert out_dirs("both", tmp_path) == {"single": tmp_path / "single", "multi": tmp_path / "multi"}


def test_the_command_builds_and_reports(tmp_path):
    data = _data(tmp_path / "data")
    res = CliRunner().invoke(
        cli,
        [
            "data",
            "build",
            "tools",
            "--data-dir",
            str(data),
            "--out",
            str(tmp_path / "fam"),
            "--n-locked",
            "40",
            "--no-bfcl",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    out = json.loads(res.output[res.output.index("{") :])
    assert out["counts"]["dev_items"] == 10


def test_the_command_s_errors_are_for_people(tmp_path):
    res = CliRunner().invoke(cli, ["data", "build", "tools", "--data-dir", str(tmp_path), "--out", str(tmp_path / "f")])
    assert res.exit_code != 0 and "no single/ folder" in res.output and "Traceback" not in res.output
    data = _data(tmp_path / "data")
    res = CliRunner().invoke(
        cli, ["data", "build", "tools", "--data-dir", str(data), "--out", str(tmp_path / "f"), "--category", "nope"]
    )
    assert res.exit_code != 0 and "unknown category nope" in res.output
    res = CliRunner().invoke(
        cli, ["data", "build", "tools", "--data-dir", str(data), "--out", str(tmp_path / "f"), "--n-locked", "100000"]
    )
    assert res.exit_code != 0 and "locked" in res.output


def test_a_truncated_file_is_an_error_naming_it(tmp_path):
    data = _data(tmp_path / "data")
    blob = (data / "single" / "simple.jsonl.gz").read_bytes()
    (data / "single" / "simple.jsonl.gz").write_bytes(blob[: len(blob) // 2])
    with pytest.raises(Exception, match="simple.jsonl.gz"):
        build("single", data, tmp_path / "fam", single={"use_bfcl": False})


# --------------------------------------------------------------------------- the shared data


@pytest.mark.data
def test_the_decoder_on_the_shared_answers():
    """The decoder reads at least 97% of the 22,320 shared answers, and where each model's own BFCL
    decoder read calls, it reads the same calls in at least 99.5% of them."""
    root = shared_data("tools", "single")
    n = read = bfcl_calls = same = 0
    for path in sorted(root.glob("*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                d = decode(r["output_raw"], r["functions"])
                n += 1
                read += d.ok
                theirs = r["output_decoded"]
                if isinstance(theirs, list) and theirs and all(isinstance(x, dict) for x in theirs):
                    bfcl_calls += 1
                    mine = sorted(json.dumps({c.written: dict(c.args)}, sort_keys=True) for c in d.calls)
                    same += mine == sorted(json.dumps(x, sort_keys=True) for x in theirs)
    assert n == 22_320
    assert read / n >= 0.97, read / n
    assert same / bfcl_calls >= 0.995, (same, bfcl_calls)
