"""Judge ops: strict parsing (garbage → ABSTAIN, never a guess), prompts, and running inside vx."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vx.dsl.verdict import Verdict
from vx.llm import client as llm_client
from vx.llm.cache import ResponseCache
from vx.llm.config import load_config
from vx.ops.judge import HIDDEN_TASK_FIELDS, judge_spec, parse_answer, render_task
from vx.ops.specs import SpecError, op_from_spec, validate_spec

from .fake import FakeAPI

TASK = {
    "id": "T/0",
    "prompt": 'def add(a, b):\n    """Return a + b."""\n',
    "entry_point": "add",
    "reference": "def add(a, b):\n    return a + b\n",
}


@pytest.mark.parametrize(
    "text, answer, reason",
    [
        ("ANSWER: YES", "yes", ""),
        ("ANSWER: NO", "no", ""),
        ("answer: no", "no", ""),
        ("  ANSWER:NO  \n", "no", ""),
        ("ANSWER: YES\nREASON: it returns a - b", "yes", "it returns a - b"),
        ("\nANSWER: NO\n\nREASON: fine.\n", "no", "fine."),
    ],
)
def test_well_formed_answers(text, answer, reason):
    a = parse_answer(text)
    assert (a.answer, a.reason, a.raw) == (answer, reason, text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "YES",
        "No.",
        "ANSWER: YES.",
        "ANSWER: MAYBE",
        "ANSWER: YES NO",
        "Sure! ANSWER: YES",
        "I think the answer is yes.\nANSWER: YES",
        "ANSWER: YES\nBecause it is wrong",
        "ANSWER: NO\nREASON: a\nREASON: b",
        "ANSWER: yes, mostly",
        "ANSWER - YES",
        "**ANSWER: YES**",
    ],
)
def test_anything_else_is_unparsable(text):
    assert parse_answer(text).answer is None


@given(st.text(max_size=200))
def test_parser_never_guesses(text):
    """An answer is only ever read from a first line that is exactly `ANSWER: YES|NO`."""
    a = parse_answer(text)
    if a.answer is not None:
        first = [ln.strip() for ln in text.strip().splitlines() if ln.strip()][0]
        assert first.upper().replace(" ", "").replace("\t", "") == f"ANSWER:{a.answer.upper()}"


def test_judge_never_sees_references_or_hidden_tests():
    assert "return a + b" not in render_task(TASK)
    no_prompt = {"id": "x", "question": "q?", "reference": "secret", "tests": "assert 0", "_private": 1}
    shown = render_task(no_prompt)
    assert "secret" not in shown and "assert 0" not in shown and "_private" not in shown and "q?" in shown
    assert {"reference", "tests", "canonical_solution"} <= HIDDEN_TASK_FIELDS


def test_judge_specs_validate():
    spec = judge_spec("asks", "Does the code print instead of returning?", drawback_if="yes", detects="prints")
    assert validate_spec(spec)["kind"] == "judge"
    with pytest.raises(SpecError, match="drawback_if"):
        op_from_spec({**spec, "params": {"question": "q?", "drawback_if": "maybe"}})
    with pytest.raises(SpecError, match="must be str"):
        op_from_spec({**spec, "params": {"question": 3, "drawback_if": "yes"}})
    with pytest.raises(SpecError, match="kind"):
        op_from_spec({**spec, "kind": "static"})
    o = op_from_spec(spec)
    assert o.uses_llm and o.tier == "judge"


@pytest.fixture
def judge_on(tmp_path):
    """LLM roles on with the fake API (as `vx evolve --llm` with a key would set up)."""
    api = FakeAPI()
    cfg = load_config()

    def factory(config, run_id):
        return llm_client.LLMClient(
            config,
            run_id=run_id,
            sdk=api.sdk(),
            cache=ResponseCache(config.cache),
            sleep=lambda s: None,
            rng=random.Random(0),
        )

    llm_client.activate(cfg, run_id="judge-run", factory=factory)
    return api


def spec_mismatch():
    from vx.families.code.ops.judge import spec_mismatch as op

    return op


def test_spec_mismatch_verdicts(judge_on):
    o = spec_mismatch()
    judge_on.reply("ANSWER: NO\nREASON: subtracts instead of adding")
    r = o(TASK, "def add(a, b):\n    return a - b\n")
    assert r.verdict == Verdict.DRAWBACK and "subtracts" in r.message
    judge_on.reply("ANSWER: YES")
    assert o(TASK, "def add(a, b):\n    return b + a\n").verdict == Verdict.CLEAN
    judge_on.reply("The code looks right to me!")
    r = o(TASK, "def add(a, b):\n    return a + b + 0\n")
    assert r.verdict == Verdict.ABSTAIN
    assert "unparsable" in r.message and "looks right to me" in r.message and r.evidence["raw"]
    sent = judge_on.requests[0]
    assert "Does the code do what the specification asks" in sent["system"][0]["text"]
    assert sent["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert "return a + b\n" not in sent["messages"][0]["content"]  # never the golden reference
    assert "return a - b" in sent["messages"][0]["content"]


def test_judge_abstains_when_roles_are_off():
    r = spec_mismatch()(TASK, "def add(a, b): return 0")
    assert r.verdict == Verdict.ABSTAIN and "LLM roles are off" in r.message


def test_judge_abstains_when_budget_is_spent(judge_on, monkeypatch):
    monkeypatch.setenv("VX_LLM_BUDGET_TOKENS", "10")
    llm_client._ACTIVE["config"] = load_config()
    llm_client._ACTIVE["client"] = None
    r = spec_mismatch()(TASK, "def add(a, b): return 0")
    assert r.verdict == Verdict.ABSTAIN and "budget" in r.message and judge_on.requests == []


def test_judge_ops_in_apply_are_cached_by_the_llm_cache_not_the_verdict_cache(judge_on, tiny_family, tmp_path):
    """A judge op inside apply_ops: answers come from the LLM cache on rerun; the verdict cache never
    stores them (so "roles off" verdicts cannot leak into a later run with a key)."""
    from vx.families.family import Family
    from vx.ops.apply import apply_ops
    from vx.ops.cache import VerdictCache

    fam = Family(tiny_family)
    pool = fam.pool()
    pool.add(spec_mismatch())
    items = list(fam.split("dev").items)
    cache = VerdictCache(tmp_path / "verdicts.sqlite")
    judge_on.default = lambda req: "ANSWER: NO" if "PLUM" in req["messages"][0]["content"] else "ANSWER: YES"
    first = apply_ops(pool, items, fam.tasks, jobs=1, cache=cache, progress=False)
    n = len(judge_on.requests)
    assert n == len({(it.task, str(it.output)) for it in items})
    again = apply_ops(pool, items, fam.tasks, jobs=1, cache=cache, progress=False)
    assert len(judge_on.requests) == n  # every answer came from the LLM disk cache
    col = first.matrix.column("spec_mismatch")
    assert (col == again.matrix.column("spec_mismatch")).all() and set(col.tolist()) == {0, 1}
    cached_ops = {row["op"] for row in cache.info()["ops"]}
    assert "spec_mismatch" not in cached_ops and pool.root_name in cached_ops
    usage = llm_client.active_client().usage()
    assert usage["api_calls"] == n and usage["cache_hits"] == n
    # with roles off now, the op abstains: nothing stale was served from the verdict cache
    llm_client.deactivate()
    off = apply_ops(pool, items, fam.tasks, jobs=1, cache=cache, progress=False)
    assert (off.matrix.column("spec_mismatch") == -1).all()


def test_with_a_key_judge_ops_work_without_a_session(monkeypatch):
    """`vx eval` or the Python API: roles turn on at first use when a key is set ("auto")."""
    api = FakeAPI()
    api.reply("ANSWER: NO\nREASON: wrong")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("VX_LLM_RUN", "cli-abc")
    monkeypatch.setattr(llm_client, "make_sdk_client", lambda config: api.sdk())
    r = spec_mismatch()(TASK, "def add(a, b): return a - b")
    assert r.verdict == Verdict.DRAWBACK and llm_client.active_client().run_id == "cli-abc"
    llm_client.disable()  # --no-llm: off even with the key
    r = spec_mismatch()(TASK, "def add(a, b): return a - b")
    assert r.verdict == Verdict.ABSTAIN and len(api.requests) == 1


def test_judge_ops_in_worker_processes_share_the_ledger_and_cache(judge_on, tiny_family):
    """Forked workers make their own clients; the ledger and cache (SQLite) see every call."""
    from vx.families.family import Family
    from vx.ops.apply import apply_ops

    fam = Family(tiny_family)
    pool = fam.pool()
    pool.add(spec_mismatch())
    items = list(fam.split("train").items) + list(fam.split("dev").items)
    first = apply_ops(pool, items, fam.tasks, jobs=2, progress=False)
    unique = len({(it.task, str(it.output)) for it in items})
    usage = llm_client.active_client().usage()
    assert usage["api_calls"] + usage["cache_hits"] == len(items) and usage["api_calls"] >= unique
    again = apply_ops(pool, items, fam.tasks, jobs=2, progress=False)
    after = llm_client.active_client().usage()
    assert after["api_calls"] == usage["api_calls"]  # the second pass: all from the cache
    assert (first.matrix.column("spec_mismatch") == again.matrix.column("spec_mismatch")).all()
