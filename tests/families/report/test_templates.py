"""Check templates and inducers: registered for the family, specs round-trip, inducers discriminate."""

import random

from vx.families.report import pack as _pack  # noqa: F401  (importing the pack registers its templates)
from vx.families.report.data.degrade import degrade
from vx.ops.core import Context
from vx.ops.specs import op_from_spec, templates_for


def pairs(tasks, cls):
    out = []
    for t in tasks:
        o = degrade(t, cls, random.Random(f"i:{t.id}"))
        if o is not None:
            out.append((t.record(), o))
    return out


def test_templates_are_registered_with_inducers():
    tpls = {t.check: t for t in templates_for("report") if t.family == "report"}
    assert {
        "forbids_phrase",
        "requires_heading",
        "ends_mid_sentence",
        "word_bounds",
        "min_distinct_cards",
        "min_card_coverage",
        "hedge_required_for",
        "tag_value_window",
        "max_untagged_ledger_values",
        "max_uncited_sentences",
    } <= set(tpls)
    assert all(t.induce is not None for t in tpls.values())


def test_spec_round_trip_and_behaviour(bundled_tasks):
    spec = {
        "kind": "static",
        "check": "forbids_phrase",
        "params": {"phrase": "will certainly"},
        "detects": "unhedged_forecast",
    }
    a, b = op_from_spec(spec), op_from_spec(dict(spec))
    assert a.name == b.name and a.version == b.version
    t = bundled_tasks["li-02"]
    assert a(t.record(), t.golden, Context()).verdict == 0
    bad = t.golden.rstrip() + " Prices will certainly recover [E2903].\n"
    r = a(t.record(), bad, Context())
    assert r.verdict == 1 and "“will certainly”" in r.message and "Prices will certainly recover" in r.message


def _check_proposals(check, cluster, good):
    from vx.ops.specs import TEMPLATES

    tpl = TEMPLATES[check]
    props = tpl.induce(cluster, good)
    assert props, check
    for p in props:
        o = op_from_spec({"kind": "static", "check": check, "params": p, "detects": "x"})
        fires = [o(tk, out, Context()).verdict == 1 for tk, out in cluster]
        assert sum(fires) * 2 >= len(cluster), (check, p)
        assert not any(o(tk, out, Context()).verdict == 1 for tk, out in good), (check, p)
    return props


def test_inducers_propose_discriminating_checks(bundled_tasks):
    tasks = sorted(bundled_tasks.values(), key=lambda t: t.id)
    good = [(t.record(), t.golden) for t in tasks[:16]]
    filler = pairs(tasks[16:], "boilerplate_padding")
    props = _check_proposals("forbids_phrase", filler, good)
    assert all(" " in p["phrase"] for p in props)
    cut = [p for p in pairs(tasks[16:], "truncated_section") if not p[1].rstrip().endswith((".", "]"))]
    _check_proposals("ends_mid_sentence", cut, good)
    _check_proposals("tag_value_window", pairs(tasks[16:], "value_erasure"), good)


def test_phrase_inducer_ignores_function_word_phrases(bundled_tasks):
    from vx.ops.specs import TEMPLATES

    tasks = sorted(bundled_tasks.values(), key=lambda t: t.id)
    good = [(t.record(), t.golden) for t in tasks[:10]]
    cluster = [
        (t.record(), t.golden.rstrip() + " It will be of the essence that prices will be firm.\n") for t in tasks[10:14]
    ]
    phrases = [p["phrase"] for p in TEMPLATES["forbids_phrase"].induce(cluster, good)]
    assert phrases and "will be" not in phrases and "of the" not in phrases
    assert any("essence" in p or "firm" in p or "prices" in p for p in phrases)
