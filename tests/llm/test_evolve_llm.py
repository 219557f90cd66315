"""LLM roles inside a real evolution run (fake API): judge ops, composer and synthesizer take part,
every call is accounted for in the run file, and a rerun makes zero API calls."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from vx.evolve.loop import Evolution, EvolveConfig
from vx.evolve.roles.session import engine_roles, start_session
from vx.evolve.run import evolve_family
from vx.evolve.store import RunStore
from vx.families.family import Family
from vx.llm import client as llm_client
from vx.llm.cache import ResponseCache

from .fake import FakeAPI

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "evo"


@pytest.fixture
def evo(tmp_path) -> Path:
    dst = tmp_path / "evo"
    shutil.copytree(FIXTURE, dst, ignore=shutil.ignore_patterns("__pycache__", "make_family.py"))
    toml = dst / "family.toml"
    toml.write_text(toml.read_text().replace('packs = ["ops.py"]', 'packs = ["ops.py", "code-judge"]'))
    return dst


def fake_model(req: dict) -> str:
    system = req["system"][0]["text"] if req.get("system") else ""
    user = req["messages"][0]["content"]
    if "narrow yes/no question" in system:  # judge: outputs with digits "do not do what was asked"
        out = user.split("<output>\n", 1)[1]
        return "ANSWER: NO\nREASON: contains digits" if re.search(r"\d", out) else "ANSWER: YES"
    if "<reference>" in user:  # teacher: the candidate passes unless it is shouted
        cand = user.split("<candidate>\n", 1)[1]
        return "VERDICT: FAIL\nP_PASS: 0.1" if cand[:12].isupper() else "VERDICT: PASS\nP_PASS: 0.9"
    if "vx expression language" in system:  # composer
        ops = re.findall(r"^- (\S+) \[", system, flags=re.M)
        a, b, c = (ops + ops + ops)[:3]
        return f"```vx\n(any {a} {b})\n(vote 2 {a} {b} {c})\n(all {a} (not {c}))\n(any {a}\n```"
    return "```json\n[]\n```"  # synthesizer: nothing to add


def evolve(evo_dir, out, api, run_id):
    def factory(config, rid):
        return llm_client.LLMClient(
            config,
            run_id=rid,
            sdk=api.sdk(),
            cache=ResponseCache(config.cache),
            sleep=lambda s: None,
            rng=random.Random(0),
        )

    fam = Family(evo_dir)
    session = start_session(fam, mode=True, factory=factory, run_id=run_id, say=lambda m: None)
    cfg = EvolveConfig(rounds=2, seed=3, jobs=1)
    roles = engine_roles(session, cfg)
    try:
        result = evolve_family(fam, config=cfg, out=out, llm=session, **roles)
    finally:
        session.close()
    return result, result.llm_usage, roles


def test_llm_roles_take_part_and_a_rerun_is_free(evo, tmp_path):
    api = FakeAPI(default=fake_model)
    out1 = tmp_path / "run1.vxrun.sqlite"
    result, usage, roles = evolve(evo, out1, api, "run-one")
    n_calls = len(api.requests)
    by_role = {r["role"]: r for r in usage["by_role"]}
    assert by_role["judge"]["api_calls"] > 0 and by_role["composer"]["api_calls"] == 2  # one per round
    assert usage["api_calls"] == n_calls and usage["cost_usd"] > 0
    comp = roles["composers"][-1]
    assert comp.name == "llm" and comp.invalid == 2 and comp.proposed == 8  # "(any a" dropped each round
    with RunStore(out1) as s:
        meta = {k: json.loads(v) if k.startswith("llm") else v for k, v in s.meta().items()}
        assert meta["llm_usage"]["api_calls"] == n_calls
        assert meta["llm"]["roles"]["judge"]["model"] == "claude-haiku-4-5"
        assert meta["llm_composer"]["history"][0]["invalid"] == 1
        ops = {o["name"]: o for o in s.ops()}
        assert ops["spec_mismatch"]["uses_llm"]
        assert "ANTHROPIC" not in json.dumps(meta) and "sk-test" not in json.dumps(meta)
        teacher = meta["llm_teacher"]
        assert teacher["items"] == 10 and teacher["labelled"] == 10 and teacher["agreement"]["compared"] == 10
        assert (evo / "teacher_labels.jsonl").is_file()
    assert by_role["teacher"]["api_calls"] > 0

    out2 = tmp_path / "run2.vxrun.sqlite"
    again, usage2, _ = evolve(evo, out2, api, "run-two")
    assert len(api.requests) == n_calls  # the rerun made zero API calls
    assert usage2["api_calls"] == 0 and usage2["cost_usd"] == 0
    assert usage2["cache_hits"] == usage["api_calls"] + usage["cache_hits"]  # every call of run 1, from the cache
    assert again.best_text == result.best_text


def test_with_roles_off_the_engine_keeps_its_own_defaults(evo, tmp_path):
    from vx.evolve.store import RunStore as Store

    assert engine_roles(None, EvolveConfig()) == {"composers": None, "synthesizers": None}
    # the offline part of engine_roles is exactly what the engine builds by itself
    fam = Family(evo)
    cfg = EvolveConfig(rounds=1, enum_max_size=2, mutations_per_elite=7, synth_per_cluster=5)
    engine = Evolution(
        fam.evolution_view(), fam.seed_text, store=Store(tmp_path / "x.vxrun.sqlite", create=True), config=cfg
    )

    class Stub:
        def composer(self):
            return "llm composer"

        def synthesizer(self):
            return "llm synthesizer"

    roles = engine_roles(Stub(), cfg)
    assert roles["composers"][:-1] == engine.composers and roles["composers"][-1] == "llm composer"
    assert roles["synthesizers"][:-1] == engine.synthesizers


def test_judge_ops_abstain_in_a_run_without_a_key(evo, tmp_path):
    said = []
    llm_client._NOTICE_SHOWN[0] = False
    fam = Family(evo)
    assert start_session(fam, mode=None, say=said.append) is None
    result = evolve_family(fam, config=EvolveConfig(rounds=1, seed=3, jobs=1), out=tmp_path / "off.vxrun.sqlite")
    assert len(said) == 1 and said[0].startswith("LLM roles are off")
    with RunStore(result.run_path) as s:
        assert not any(k.startswith("llm") for k in s.meta())
        assert "spec_mismatch" in {o["name"] for o in s.ops()}  # in the pool, abstaining everywhere
    assert "spec_mismatch" not in result.best_text  # an op that always abstains is never selected


# --- the `vx evolve` command -------------------------------------------------------------------------


def cli(*args):
    from click.testing import CliRunner

    from vx.cli.main import main

    return CliRunner().invoke(
        main, ["evolve", *map(str, args), "--rounds", "1", "-j", "1", "-q"], catch_exceptions=False
    )


def test_vx_evolve_without_a_key_says_once_that_roles_are_off(evo, tmp_path, monkeypatch):
    monkeypatch.setattr(llm_client, "_NOTICE_SHOWN", [False])
    r = cli(evo, "--out", tmp_path / "a.vxrun.sqlite")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("LLM roles are off: set ANTHROPIC_API_KEY") == 1
    assert "LLM usage" not in r.stdout
    monkeypatch.setattr(llm_client, "_NOTICE_SHOWN", [False])
    r = cli(evo, "--out", tmp_path / "b.vxrun.sqlite", "--no-llm")
    assert r.exit_code == 0 and "LLM roles are off" not in r.stderr
    r = cli(evo, "--out", tmp_path / "c.vxrun.sqlite", "--llm")
    assert r.exit_code == 2 and "--llm needs an API key" in r.stderr


def test_vx_evolve_with_a_key_accounts_every_call_and_reruns_free(evo, tmp_path, monkeypatch):
    api = FakeAPI(default=fake_model)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setattr(llm_client, "make_sdk_client", lambda config: api.sdk())
    out = tmp_path / "k.vxrun.sqlite"
    r = cli(evo, "--out", out, "--llm-model", "composer=claude-haiku-4-5")
    assert r.exit_code == 0, r.output
    n = len(api.requests)
    assert n > 0 and f"LLM usage: {n} API calls" in r.stdout
    with RunStore(out) as s:
        meta = s.meta()
    llm_meta = json.loads(meta["llm"])
    assert llm_meta["roles"]["composer"]["model"] == "claude-haiku-4-5"
    assert json.loads(meta["llm_usage"])["api_calls"] == n
    r = cli(evo, "--out", tmp_path / "k2.vxrun.sqlite", "--llm-model", "composer=claude-haiku-4-5")
    assert r.exit_code == 0 and len(api.requests) == n and "LLM usage: 0 API calls" in r.stdout
    # a resumed run keeps its LLM run id (its budget and ledger)
    from click.testing import CliRunner

    from vx.cli.main import main

    r = CliRunner().invoke(
        main, ["evolve", "--resume", str(out), "--rounds", "2", "-j", "1", "-q"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    with RunStore(out) as s:
        assert json.loads(s.meta()["llm"])["run"] == llm_meta["run"]
