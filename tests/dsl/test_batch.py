"""Many-candidate evaluation equals the reference interpreter, item by item."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vx.dsl.compile import ABSTAIN_OP, ABSTAIN_SLOT, compile_candidates, evaluate_batch, shape_of
from vx.dsl.matrix import Packed, VerdictMatrix
from vx.dsl.semantics import evaluate_item

from .strategies import NAMES
from .strategies import small_trees as trees


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 150).flatmap(
        lambda n: st.lists(st.lists(st.sampled_from([-1, 0, 1]), min_size=5, max_size=5), min_size=n, max_size=n)
    ),
    st.lists(trees(), min_size=1, max_size=10),
)
def test_evaluate_batch_matches_the_reference(rows, nodes):
    m = VerdictMatrix.from_array(np.array(rows, dtype=np.int8), None, NAMES)
    cols = {n: j for j, n in enumerate(NAMES)}
    o, f = evaluate_batch(compile_candidates(nodes, cols), m)
    for c, node in enumerate(nodes):
        got = Packed(o[c], f[c], m.n_items).to_int8()
        want = [int(evaluate_item(node, m.row(item))) for item in m.item_ids]
        assert got.tolist() == want


def test_shapes_group_candidates_and_the_abstain_slot_abstains():
    from vx.dsl.parse import parse

    nodes = [parse("(any a b)"), parse("(any c d)"), parse("(all a b)"), parse(f"(any a {ABSTAIN_OP})")]
    assert shape_of(nodes[0])[0] == shape_of(nodes[1])[0] != shape_of(nodes[2])[0]
    cols = {n: j for j, n in enumerate(NAMES)} | {ABSTAIN_OP: ABSTAIN_SLOT}
    batch = compile_candidates(nodes, cols)
    assert len(batch.groups) == 2
    m = VerdictMatrix.from_array(np.array([[0, 1, 0, -1, 0], [0, -1, 1, 0, 0]], dtype=np.int8), None, NAMES)
    o, f = evaluate_batch(batch, m)
    assert Packed(o[3], f[3], 2).to_int8().tolist() == m.column("a").tolist()
