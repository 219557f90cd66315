"""LLM composer, synthesizer, teacher and session on the fake API (no network)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.ast import Any as AnyNode
from vx.dsl.ast import OpRef, Vote
from vx.dsl.printer import to_text
from vx.evolve.compose import Composer, CompositionContext, Elite
from vx.evolve.roles.composer import LLMComposer, check_proposal, split_expressions
from vx.evolve.roles.session import start_session
from vx.evolve.roles.synthesizer import extract_specs
from vx.evolve.roles.teacher import LABELS_FILE, parse_teacher, read_labels, teach_family
from vx.evolve.synthesize import Cluster, SynthesisRequest, Synthesizer
from vx.llm import client as llm_client
from vx.llm.cache import ResponseCache
from vx.llm.config import load_config
from vx.ops.specs import template

from .fake import FakeAPI


@template(
    "llmtest_contains",
    kind="static",
    params={"word": "str"},
    family="llmtest",
    description="The output contains a word",
)
def _contains(word: str):
    if not word:
        raise ValueError("word must not be empty")
    return lambda task, output, ctx: word in str(output)


@pytest.fixture
def on(tmp_path):
    """LLM roles on, clients on a fresh fake API."""
    api = FakeAPI()

    def factory(config, run_id):
        return llm_client.LLMClient(
            config,
            run_id=run_id,
            sdk=api.sdk(),
            cache=ResponseCache(config.cache),
            sleep=lambda s: None,
            rng=random.Random(0),
        )

    session = start_session(None, mode=True, factory=factory, run_id="roles-run", say=lambda m: None)
    assert session is not None
    api.session = session
    return api


def ctx(**kw):
    base = dict(
        round=2,
        selectable=("missing_keyword", "shouting", "too_long"),
        incumbent=OpRef("missing_keyword"),
        elites=(
            Elite(OpRef("missing_keyword"), 0.61, 0.7, 0.87),
            Elite(AnyNode([OpRef("missing_keyword"), OpRef("shouting")]), 0.55, 0.6, 0.9),
        ),
        catalog=(
            {
                "name": "missing_keyword",
                "tier": "static",
                "detects": "missing_keyword",
                "description": "lacks the keyword",
                "coverage": 0.9,
            },
            {"name": "shouting", "tier": "static", "detects": "shouting", "description": "capitals"},
            {"name": "too_long", "tier": "static", "detects": "too_long", "description": "long"},
        ),
        gaps=({"item": "tr7", "opining": 1, "split": True},),
        rng=np.random.default_rng(0),
    )
    base.update(kw)
    return CompositionContext(**base)


# --- composer --------------------------------------------------------------------------------------


def test_split_expressions():
    reply = (
        "Here you go:\n```vx\n(any missing_keyword\n     (vote 2 shouting too_long missing_keyword))\n"
        "; a comment\nshouting\n(all too_long (not shouting)) (any a\n```\nThanks"
    )
    assert split_expressions(reply) == [
        "(any missing_keyword\n     (vote 2 shouting too_long missing_keyword))",
        "shouting",
        "(all too_long (not shouting))",
        "(any a",
    ]
    assert split_expressions("no fence: (any a b) c") == ["(any a b)"]
    assert split_expressions("```vx\n(any a b))\n```") == ["(any a b)", ")"]


@pytest.mark.parametrize(
    "text, problem",
    [
        ("(any missing_keyword", "unbalanced"),
        ("(any missing_keyword nonexistent_op)", "nonexistent_op"),
        ("(vote 4 shouting too_long)", ""),
        ("(any)", ""),
        ("(frob shouting)", ""),
        (
            "(any shouting shouting shouting shouting shouting shouting shouting shouting shouting shouting shouting "
            "shouting shouting)",
            "too large",
        ),
    ],
)
def test_invalid_proposals_are_rejected(text, problem):
    c = check_proposal(text, ["missing_keyword", "shouting", "too_long"])
    assert c.node is None and c.problem and problem.lower() in c.problem.lower()


def test_composer_proposals_are_parsed_checked_counted(on):
    on.reply(
        "```vx\n(any missing_keyword shouting)\n(any missing_keyword (vote 2 shouting too_long)\n"
        "(all missing_keyword made_up_op)\n(vote 9 shouting too_long)\n(any shouting missing_keyword)\n"
        "too_long\n```"
    )
    comp = on.session.composer(n=6)
    assert isinstance(comp, Composer)
    out = comp.propose(ctx())
    assert [to_text(n) for n in out] == ["(any missing_keyword shouting)", "(any shouting missing_keyword)", "too_long"]
    (rec,) = comp.history
    assert rec["proposed"] == 6 and rec["invalid"] == 3 and rec["valid"] == 3
    assert any("made_up_op" in d["problem"] for d in rec["dropped"])
    assert comp.invalid == 3
    # what the model saw: the catalog with coverage, elites with scores, gaps; never a label
    sent = on.requests[0]
    system, user = sent["system"][0]["text"], sent["messages"][0]["content"]
    assert "- missing_keyword [static] detects missing_keyword — lacks the keyword (coverage=0.900)" in system
    assert "objective=0.610 A_dev=0.700 A_train=0.870" in user and '"item": "tr7"' in user
    assert "shortcomings: misjudges some labelled items (recall-weighted dev agreement 0.70" in user
    assert "disagrees with the ops' consensus on unlabeled items (A_train 0.87)" in user
    assert '"label"' not in user and "label:" not in user


def test_composer_rerun_is_served_from_cache(on):
    on.default = lambda req: "```vx\n(any shouting too_long)\n```"
    a = on.session.composer().propose(ctx())
    b = on.session.composer().propose(ctx())
    assert a == b and len(on.requests) == 1


def test_composer_survives_errors_and_stops_at_budget(on, monkeypatch):
    on.error(400)
    comp = on.session.composer()
    assert comp.propose(ctx()) == [] and "HTTP 400" in comp.history[0]["error"]
    monkeypatch.setenv("VX_LLM_BUDGET_TOKENS", "5")
    llm_client._ACTIVE.update(config=load_config(), client=None)
    said = []
    comp.say = said.append
    assert comp.propose(ctx(round=3)) == [] and comp.stopped and "budget" in said[0]
    n = len(on.requests)
    assert comp.propose(ctx(round=4)) == [] and len(on.requests) == n  # no further calls


def test_composer_is_silent_when_roles_are_off():
    comp = LLMComposer(llm_client.active_client)
    assert comp.propose(ctx()) == [] and comp.history[0]["skipped"] == "LLM roles are off"


# --- synthesizer -----------------------------------------------------------------------------------


def request(**kw):
    bad = (({"id": "t1", "keyword": "apple"}, "BANANA BANANA"), ({"id": "t2", "keyword": "pear"}, "BANANA split"))
    good = (({"id": "t1", "keyword": "apple"}, "an apple"),)
    base = dict(
        family="llmtest",
        cluster=Cluster("mentions_banana", ("d1", "d2"), bad, True, 2, 0),
        good=good,
        templates=(
            {
                "check": "llmtest_contains",
                "kind": "static",
                "family": "llmtest",
                "params": {"word": "str"},
                "description": "The output contains a word",
            },
        ),
        catalog=({"name": "shouting", "detects": "shouting"},),
        taxonomy=("mentions_banana", "shouting"),
    )
    base.update(kw)
    return SynthesisRequest(**base)


def test_synthesizer_specs_are_validated(on):
    on.reply(
        "```json\n"
        + json.dumps(
            [
                {
                    "kind": "static",
                    "check": "llmtest_contains",
                    "params": {"word": "BANANA"},
                    "detects": "mentions_banana",
                    "description": "mentions bananas",
                },
                {"kind": "static", "check": "llmtest_contains", "params": {"word": 3}, "detects": "mentions_banana"},
                {"kind": "static", "check": "llmtest_contians", "params": {"word": "x"}, "detects": "mentions_banana"},
                {"kind": "exec", "check": "llmtest_contains", "params": {"word": "x"}, "detects": "mentions_banana"},
                {"kind": "static", "check": "llmtest_contains", "params": {"word": "x"}, "detects": "not_a_class"},
                {"kind": "static", "check": "llmtest_contains", "params": {"word": ""}, "detects": "shouting"},
                {
                    "kind": "static",
                    "check": "llmtest_contains",
                    "params": {"word": "x", "extra": 1},
                    "detects": "shouting",
                },
                "just a string",
            ]
        )
        + "\n```"
    )
    syn = on.session.synthesizer(n=8)
    assert isinstance(syn, Synthesizer)
    specs = syn.propose(request())
    assert len(specs) == 1
    (s,) = specs
    assert s["check"] == "llmtest_contains" and s["params"] == {"word": "BANANA"} and s["name"].startswith("llm_")
    (rec,) = syn.history
    assert rec["proposed"] == 8 and rec["invalid"] == 7
    problems = " | ".join(d["problem"] for d in rec["dropped"])
    for expected in (
        "must be str",
        "did you mean llmtest_contains",
        "of kind 'static'",
        "not in the family's taxonomy",
        "word must not be empty",
        "has no parameter(s) extra",
        "must be a JSON object",
    ):
        assert expected in problems
    user = on.requests[0]["messages"][0]["content"]
    assert "BANANA BANANA" in user and "an apple" in user and "shouting (shouting)" in user
    assert "llmtest_contains (kind static; params word: str)" in on.requests[0]["system"][0]["text"]


@pytest.mark.parametrize(
    "reply, problem",
    [
        ("I cannot help with that.", "not JSON"),
        ('```json\n{"kind": "static",}\n```', "not JSON"),
        ("```json\n42\n```", "expected a JSON array"),
    ],
)
def test_synthesizer_rejects_non_json(on, reply, problem):
    on.reply(reply)
    syn = on.session.synthesizer()
    assert syn.propose(request()) == []
    assert syn.invalid == 1 and problem in syn.history[0]["dropped"][0]["problem"]


def test_extract_specs_accepts_one_object():
    assert extract_specs('{"kind": "static"}') == [{"kind": "static"}]


# --- teacher ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, label",
    [
        ("VERDICT: PASS\nP_PASS: 0.9\nREASON: same behaviour", 0.9),
        ("VERDICT: FAIL\nP_PASS: 0.1", 0.1),
        ("verdict: fail\np_pass: 0", 0.0),
        ("VERDICT: PASS\nP_PASS: 1", 1.0),
        ("VERDICT: PASS\nP_PASS: 0.3", None),  # inconsistent
        ("VERDICT: PASS", None),
        ("P_PASS: 0.9\nVERDICT: PASS", None),
        ("VERDICT: PASS\nP_PASS: 1.5", None),
        ("VERDICT: PASS\nP_PASS: high", None),
        ("Looks good!\nVERDICT: PASS\nP_PASS: 0.9", None),
        ("VERDICT: PASS\nP_PASS: 0.9\nI am fairly sure.", None),
    ],
)
def test_teacher_parsing_is_strict(text, label):
    assert parse_teacher(text).label == label


def test_teacher_compares_with_the_reference_and_stores_labels(on, tiny_family):
    from vx.families.family import Family

    fam = Family(tiny_family)
    dev = list(fam.split("dev").items)

    def grade(req):
        user = req["messages"][0]["content"]
        assert "<reference>" in user
        cand = user.split("<candidate>\n", 1)[1]
        return "VERDICT: FAIL\nP_PASS: 0.2" if ("PLUM" in cand or "banana" in cand) else "VERDICT: PASS\nP_PASS: 0.8"

    on.default = grade
    path, records, agree = teach_family(on.session.client(), fam)
    assert path == fam.dir / LABELS_FILE and path.is_file()
    stored = read_labels(fam.dir)
    assert set(stored) == {it.id for it in dev}
    labelled = [r for r in records if r.get("label") is not None]
    assert labelled and all(r["model"] for r in labelled)
    assert agree["compared"] == len(labelled) and 0 <= agree["agreement"] <= 1
    n = len(on.requests)
    teach_family(on.session.client(), fam)  # rerun: all from cache
    assert len(on.requests) == n
    with pytest.raises(PermissionError):
        teach_family(on.session.client(), fam, split="locked")


def test_teacher_never_judges_unaided(on):
    from types import SimpleNamespace

    from vx.evolve.roles.teacher import teach_items

    item = SimpleNamespace(id="x", task="t", output="out", reference=None)
    (rec,) = teach_items(on.session.client(), [item], {"t": {"id": "t", "prompt": "p"}})
    assert rec["label"] is None and "never judges unaided" in rec["skipped"] and on.requests == []


# --- session ---------------------------------------------------------------------------------------


def test_session_modes(tiny_family):
    from vx.families.family import Family

    fam = Family(tiny_family)
    said: list[str] = []
    monkey_notice = llm_client._NOTICE_SHOWN
    monkey_notice[0] = False
    assert start_session(fam, mode=None, say=said.append) is None
    assert start_session(fam, mode=None, say=said.append) is None
    assert len(said) == 1 and said[0].startswith("LLM roles are off: set ANTHROPIC_API_KEY")
    assert start_session(fam, mode=False, say=said.append) is None and len(said) == 1
    with pytest.raises(llm_client.LLMUnavailable, match="LLM roles are required but no API key is set"):
        start_session(fam, mode=True)


def test_session_reads_the_family_llm_table(tiny_family, monkeypatch):
    from vx.families.family import Family

    toml = tiny_family / "family.toml"
    toml.write_text(toml.read_text() + '\n[llm]\nbudget_usd = 0.5\n[llm.judge]\nmodel = "family-judge"\n')
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    s = start_session(Family(tiny_family), overrides={"composer.model": "cli-composer"})
    assert s is not None and llm_client.enabled()
    assert s.config.role("judge").model == "family-judge" and s.config.budget_usd == 0.5
    assert s.config.role("composer").model == "cli-composer"
    d = s.describe()
    assert d["roles"]["judge"]["model"] == "family-judge" and "sk-test" not in json.dumps(d)
    assert s.usage()["api_calls"] == 0
    s.close()  # back to "auto": the run's configuration and run id are gone
    assert llm_client._ACTIVE["state"] == "auto" and llm_client._ACTIVE["config"] is None


def test_synthesizer_offers_judge_templates_only_when_allowed(on):
    judge_tpl = {
        "check": "llm_yes_no",
        "kind": "judge",
        "family": "",
        "description": "ask",
        "params": {"question": "str", "drawback_if": "str"},
    }
    req = request(templates=request().templates + (judge_tpl,))
    on.default = lambda r: "```json\n[]\n```"
    on.session.synthesizer().propose(req)
    assert "llm_yes_no" not in on.requests[-1]["system"][0]["text"]
    on.session.synthesizer(allow_judge=True).propose(req)
    assert "llm_yes_no (kind judge" in on.requests[-1]["system"][0]["text"]


def test_teacher_labels_can_be_applied_to_the_dev_file(on, tiny_family):
    from vx.evolve.roles.teacher import apply_labels
    from vx.families.family import Family

    fam = Family(tiny_family)
    on.default = lambda req: "VERDICT: FAIL\nP_PASS: 0.25"
    _, records, _ = teach_family(on.session.client(), fam)
    dev_text = fam.split("dev").path.read_text()
    with pytest.raises(ValueError, match="no pass items"):  # all fail: the family would become unusable
        apply_labels(fam.split("dev").path, records)
    assert fam.split("dev").path.read_text() == dev_text
    records[0]["label"] = 0.75
    before = {it.id: it.label for it in fam.split("dev").items}
    n = apply_labels(fam.split("dev").path, records)
    assert n == sum(1 for r in records if r.get("label") is not None) > 0
    after = Family(tiny_family)  # still a valid family
    for it in after.split("dev").items:
        if it.id in {r["id"] for r in records if r.get("label") is not None}:
            assert it.label in (0.25, 0.75) and it.meta["label_before"] in ("pass", "fail", before[it.id])
            assert it.meta["teacher"]["p_pass"] == it.label


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.recursive(
            st.sampled_from(["a", "b", "c", "x.y", "t-1"]).map(OpRef),
            lambda kids: st.one_of(
                st.lists(kids, min_size=1, max_size=4).map(AnyNode),
                st.lists(kids, min_size=2, max_size=4).map(lambda cs: Vote(len(cs) - 1, cs)),
            ),
            max_leaves=10,
        ),
        min_size=1,
        max_size=5,
    ),
    st.integers(20, 100),
)
def test_the_composer_reads_back_every_valid_expression_it_is_given(nodes, width):
    """Law: canonical expressions, however wrapped, come back parsed and unchanged, in order."""
    block = "\n".join(to_text(n, width=width) for n in nodes)
    reply = f"Some thoughts first (with parentheses).\n```vx\n{block}\n```\nDone."
    texts = split_expressions(reply)
    checked = [check_proposal(t, ["a", "b", "c", "x.y", "t-1"], max_leaves=50) for t in texts]
    assert [c.node for c in checked] == nodes
