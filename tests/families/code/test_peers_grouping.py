"""Laws of the peer ops' grouping by key: every verdict, message and cluster equals the
pairwise rule the ops were first written with (kept below as the reference), on answers of every kind --
floats within the tolerance, True next to 1, lists next to tuples, dicts in any key order, timeouts and
slow answers the time judge rewrites, attempts that ended their run."""

from __future__ import annotations

import math

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.families.code.ops import peers as P
from vx.families.code.probes import budgets as R

# --------------------------------------------------------------------------- the pairwise reference


def ref_judged(mine, voters):
    everyone = [mine, *voters]
    answers = [list(b.answers) for b in everyone]
    judged = (*P._MEASURED, "timeout")
    for j in range(len(mine.answers)):
        column = [b.answers[j] if j < len(b.answers) else None for b in everyone]
        measured = [
            (k, a.cpu)
            for k, a in enumerate(column)
            if k and a is not None and a.kind in P._MEASURED and a.cpu is not None
        ]
        if len(measured) < 3:
            continue
        for a, ans in enumerate(column):
            if ans is None or ans.kind not in judged:
                continue
            if ans.kind != "timeout" and (ans.cpu is None or ans.cpu <= R.PEER_FLOOR):
                continue
            others = [cpu for k, cpu in measured if k != a]
            kind, why = R.against_peers(ans.cpu, ans.budget, ans.kind == "timeout", others)
            if kind == "timeout":
                answers[a][j] = P.Answer("timeout", None, why, ans.cpu, ans.budget)
            elif kind == "unknown":
                answers[a][j] = P.Answer("not_run", None, why)
    out = [attrs.evolve(b, answers=tuple(rows)) for b, rows in zip(everyone, answers)]
    return out[0], out[1:]


def ref_groups(answers):
    groups = []
    for a in answers:
        if a.kind == "not_run":
            continue
        for g in groups:
            if P.same_answer(g[0], a):
                g[1] += 1
                break
        else:
            groups.append([a, 1])
    return groups


def ref_distinguishing(behaviours, calls, classes, selected, cap=P.MAX_SHOWN_SPLITS):
    found = []
    for j, klass in enumerate(classes):
        if klass not in selected:
            continue
        groups = ref_groups([b.answers[j] for b in behaviours if j < len(b.answers)])
        if len(groups) < 2:
            continue
        groups.sort(key=lambda g: -g[1])
        text = ", ".join(f"{g[0].text('').strip() or g[0].kind} x{g[1]}" for g in groups[:3])
        found.append((-len(groups), -groups[1][1], j, f"{calls[j]} ({text})"))
    found.sort()
    return [(j, text) for _, _, j, text in found[:cap]]


def ref_vote(mine, peers, calls, classes, selected, *, quorum=0.5, min_support=3, min_peers=3):
    guard = P._guards(mine, peers, classes, selected, min_peers)
    if guard is not None:
        return guard
    voters = [p for p in peers if p.trusted and len(p.answers) == len(mine.answers)]
    mine, voters = ref_judged(mine, voters)
    mine = P._ended_answers(mine)
    agreed = hits = 0
    first = None
    for j, (ans, klass) in enumerate(zip(mine.answers, classes)):
        if klass not in selected or ans.kind == "not_run":
            continue
        groups = ref_groups([p.answers[j] for p in voters])
        if not groups:
            continue
        groups.sort(key=lambda g: -g[1])
        top, support = groups[0]
        runner = groups[1][1] if len(groups) > 1 else 0
        answered = sum(g[1] for g in groups)
        if support < min_support or support < quorum * answered or support <= runner:
            continue
        if top.kind == "timeout" and ans.kind != "timeout":
            continue  # a plurality that did not return never outvotes an answer
        if P.same_answer(ans, top):
            agreed += 1
            continue
        hits += 1
        if first is None:
            first = P.Vote(
                1,
                f"{calls[j]} {ans.text()}; {support} of {answered} other attempts that pass the "
                f"visible example {top.text('return')}",
                j,
            )
    split = ref_distinguishing([mine, *voters], calls, classes, selected)
    if first is not None:
        more = f" (and {hits - 1} more probe(s))" if hits > 1 else ""
        return attrs.evolve(first, message=first.message + more + P._split_text(split, first.probe))
    if agreed:
        return P.Vote(
            0,
            f"agrees with the clear plurality of the {len(voters)} other attempts that pass the visible "
            f"example on {agreed} probe(s)" + P._split_text(split),
        )
    return P.Vote(
        -1,
        f"no probe has a clear plurality among the {len(voters)} other attempt(s) that pass the "
        "visible example" + P._split_text(split),
    )


def ref_clusters(behaviours):
    clusters = []
    for i, b in enumerate(behaviours):
        for c in clusters:
            a = behaviours[c[0]]
            ka, kb = a.example_answers + a.answers, b.example_answers + b.answers
            if a.loaded == b.loaded and len(ka) == len(kb) and all(P.same_answer(x, y) for x, y in zip(ka, kb)):
                c.append(i)
                break
        else:
            clusters.append([i])
    return clusters


def ref_dual_clusters(voters, sel):
    clusters = []
    for p in voters:
        for c in clusters:
            if all(P.same_answer(c[0].answers[j], p.answers[j]) for j in sel):
                c.append(p)
                break
        else:
            clusters.append([p])
    return clusters


# --------------------------------------------------------------------------- the data

# a small domain, so that equal, nearly equal and differently typed answers meet often
FLOATS = st.sampled_from([0.5, 0.5000008, 0.5000016, 1.0, math.nan])  # 0.5 ~ 0.5000008 ~ 0.5000016, not 0.5 ~ 0.5000016
SCALARS = st.one_of(
    st.integers(0, 1),
    st.booleans(),
    st.none(),
    FLOATS,
    FLOATS,
    FLOATS,
    st.sampled_from(["", "a"]),
    st.sampled_from([b"", b"a"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from([1, True, 0, "a"]), inner, max_size=2),
    ),
    max_leaves=5,
)
CPU = st.sampled_from([None, 0.001, 0.03, 0.06, 0.2, 1.0])


@st.composite
def answers(draw):
    kind = draw(st.sampled_from(["value"] * 6 + ["raised", "timeout", "crashed", "not_run", "opaque"]))
    cpu, budget = draw(CPU), draw(st.sampled_from([None, 0.05, 0.3, 2.0]))
    if kind == "value":
        return P.Answer("value", draw(VALUES), "", cpu, budget)
    if kind in ("raised", "opaque"):
        return P.Answer(kind, None, draw(st.sampled_from(["ValueError", "TypeError"])), cpu, budget)
    return P.Answer(kind, None, draw(st.sampled_from(["", "why"])), cpu if kind == "timeout" else None, budget)


@st.composite
def tasks(draw):
    n = draw(st.integers(1, 4))
    k = draw(st.integers(0, 9))
    # attempts copy earlier ones' answers often, so that real groups form
    pool = draw(st.lists(st.tuples(*[answers()] * n), min_size=1, max_size=5))
    out = []
    for _ in range(k + 1):
        rows = list(draw(st.sampled_from(pool)))
        if draw(st.booleans()):
            rows[draw(st.integers(0, n - 1))] = draw(answers())
        out.append(
            P.Behaviour(
                draw(st.sampled_from([True] * 5 + [False])),
                draw(st.sampled_from([True, True, False, None])),
                tuple(rows),
                tuple(draw(st.lists(answers(), max_size=1))),
                ended=draw(st.sampled_from(["", "", "it exited"])),
            )
        )
    classes = draw(st.lists(st.sampled_from(["gen_mutant", "gen_edge", "model_test"]), min_size=n, max_size=n))
    return out, [f"f({i})" for i in range(n)], classes


def _everyone_judged(behaviours, fn, ref):
    for i, mine in enumerate(behaviours):
        peers = behaviours[:i] + behaviours[i + 1 :]
        assert fn(mine, peers) == ref(mine, peers), i


@settings(max_examples=400, deadline=None)
@given(
    tasks(),
    st.sampled_from([(0.5, 3, 3), (0.5, 2, 2), (1.0, 2, 2), (0.7, 1, 1)]),
    st.sampled_from([frozenset({"gen_mutant"}), frozenset({"gen_mutant", "gen_edge", "model_test"})]),
)
def test_the_vote_by_key_is_the_pairwise_vote(task, params, selected):
    """Law: every attempt's vote (verdict, message with its distinguishing inputs, probe) is the pairwise
    rule's, whatever the answers' kinds, types, tolerances and times."""
    behaviours, calls, classes = task
    quorum, support, need = params
    kw = dict(quorum=quorum, min_support=support, min_peers=need)
    _everyone_judged(
        behaviours,
        lambda m, p: P.vote(m, p, calls, classes, selected, **kw),
        lambda m, p: ref_vote(m, p, calls, classes, selected, **kw),
    )


@settings(max_examples=300, deadline=None)
@given(tasks())
def test_clusters_time_judgements_and_splits_by_key_are_the_pairwise_ones(task):
    behaviours, calls, classes = task
    assert P.behaviour_clusters(behaviours) == ref_clusters(behaviours)
    selected = frozenset(classes)
    assert P.distinguishing(behaviours, calls, classes, selected) == ref_distinguishing(
        behaviours, calls, classes, selected
    )
    for i, mine in enumerate(behaviours):
        voters = behaviours[:i] + behaviours[i + 1 :]
        new, ref = P.judged_against_peers(mine, voters), ref_judged(mine, voters)
        assert (new[0], new[1]) == (ref[0], ref[1])
    _everyone_judged(
        behaviours,
        lambda m, p: P.dual_cluster_vote({}, m, p, calls, classes, selected),
        lambda m, p: _ref_dual_vote(m, p, calls, classes, selected),
    )


def _ref_dual_vote(mine, peers, calls, classes, selected):
    """dual_cluster_vote with no model-written tests (scores are cluster sizes), clustering pairwise."""
    guard = P._guards(mine, peers, classes, selected, 1)
    if guard is not None:
        return guard
    voters = [p for p in peers if p.trusted and len(p.answers) == len(mine.answers)]
    mine, voters = ref_judged(mine, voters)
    mine = P._ended_answers(mine)
    sel = [j for j, k in enumerate(classes) if k in selected]
    top = sorted(ref_dual_clusters(voters, sel), key=lambda c: -len(c))[0]
    rep = top[0]
    for j in sel:
        a, t = mine.answers[j], rep.answers[j]
        if a.kind == "not_run" or t.kind == "not_run" or P.same_answer(a, t):
            continue
        return P.Vote(
            1,
            f"{calls[j]} {a.text()}; the top cluster of other attempts that pass the visible example "
            f"({len(top)} of {len(voters)}, dual-agreement score {float(len(top)):.1f}) "
            f"{t.text('return')}",
            j,
        )
    return P.Vote(
        0, f"behaves like the top cluster of other attempts ({len(top)} of {len(voters)}) on {len(sel)} probe(s)"
    )


@settings(max_examples=800, deadline=None)
@given(answers(), answers(), answers())
def test_equal_keys_are_equal_answers_that_compare_alike(a, b, c):
    """Law: answers with equal keys are the same answer and compare alike with any third; without a float
    in either, equal keys means exactly the same answer."""
    ka, kb = P.answer_key(a), P.answer_key(b)
    assert ka is not None and kb is not None  # scalars, lists, tuples, scalar-keyed dicts all have keys
    hash(ka)
    if ka == kb:
        assert P.same_answer(a, b) and P.same_answer(a, c) == P.same_answer(b, c)
        assert P._tolerant(ka) == P._tolerant(kb)
    if not P._tolerant(ka) and not P._tolerant(kb):
        assert (ka == kb) == P.same_answer(a, b)
    assert P._tolerant(ka) == (a.kind == "value" and _has_float(a.value))


def _has_float(v):
    if type(v) is float:
        return True
    if type(v) in (list, tuple):
        return any(map(_has_float, v))
    return type(v) is dict and any(map(_has_float, v.values()))


def test_no_key_below_the_depth_close_compares():
    deep = 1
    for _ in range(45):
        deep = [deep]
    a = P.Answer("value", deep)
    assert P.answer_key(a) is None and not P.same_answer(a, a)
    assert P.answer_key(P.Answer("value", {(1, 2): 3})) is None  # a tuple as a dict key: compared pairwise
    assert P.answer_key(P.Answer("value", {1, 2})) is None  # a set: `close` compares it by == alone
    nan = P.Answer("value", [float("nan")])
    assert P.answer_key(nan) == P.answer_key(P.Answer("value", [float("nan")])) and P.same_answer(nan, nan)
    assert P.answer_key(P.Answer("value", {1: "x"})) == P.answer_key(P.Answer("value", {True: "x"}))
    assert P.answer_key(P.Answer("value", True)) != P.answer_key(P.Answer("value", 1))
    assert P.answer_key(P.Answer("value", [1])) != P.answer_key(P.Answer("value", (1,)))


def test_a_chain_of_floats_within_the_tolerance_groups_as_the_pairwise_rule_does():
    """0.5 ~ 0.5000008 ~ 0.5000016 but not 0.5 ~ 0.5000016: the groups depend on who comes first, and the
    grouping by key follows the pairwise rule (counting equal answers together first)."""
    a, b, c = (P.Answer("value", v) for v in (0.5, 0.5000008, 0.5000016))
    for column in ([a, c, b, c, a], [b, a, c, c], [c, c, a, b, a, b]):
        assert P._groups(column) == ref_groups(column)
    behaviours = [P.Behaviour(True, True, (x,)) for x in (c, a, b, c, a, a)]
    assert P.behaviour_clusters(behaviours) == ref_clusters(behaviours) == [[0, 2, 3], [1, 4, 5]]
    for i, mine in enumerate(behaviours):
        peers = behaviours[:i] + behaviours[i + 1 :]
        for quorum, support in ((0.5, 2), (0.3, 1), (1.0, 1)):
            got = P.vote(
                mine,
                peers,
                ["f(0)"],
                ["gen_mutant"],
                frozenset({"gen_mutant"}),
                quorum=quorum,
                min_support=support,
                min_peers=1,
            )
            assert got == ref_vote(
                mine,
                peers,
                ["f(0)"],
                ["gen_mutant"],
                frozenset({"gen_mutant"}),
                quorum=quorum,
                min_support=support,
                min_peers=1,
            )
