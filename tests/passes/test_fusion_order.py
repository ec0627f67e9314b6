"""Fusion's order-maintenance list (passes/fusion_order.py) against a plain Python list:
after every move its labels increase along the list the same moves make; and fusion's
kernels stay in a topological order of it through every merge."""

from __future__ import annotations

import random

import corpus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pass_work_scaling import unrolled_loop

from numbax import passes
from numbax.api import trace_to_jaxpr
from numbax.passes import fusion
from numbax.passes.fusion_order import ListOrder


def assert_labels_follow(order: ListOrder, expected: list) -> None:
    labels = [order.labels[item] for item in expected]
    assert labels == sorted(set(labels)), f"labels {labels} out of order for {expected}"
    assert all(0 <= label < 1 << order.bits for label in labels)


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(2, 24),
    crowded=st.booleans(),
    moves=st.integers(0, 150),
    seed=st.integers(0, 2**32 - 1),
)
def test_moves_keep_labels_in_list_order(size, crowded, moves, seed):
    """``moves`` random moves; ``crowded``: each one to the first item, so that the
    labels there run out and are spread again."""
    draw = random.Random(seed)
    expected = list(range(size))
    order = ListOrder(expected)
    assert_labels_follow(order, expected)
    for _ in range(moves):
        if len(expected) < 2:
            break
        kinds = ["after", "before"] if crowded else ["after", "before", "take_place", "remove"]
        kind = draw.choice(kinds)
        anchor = expected[0] if crowded else draw.choice(expected)
        others = [item for item in expected if item != anchor]
        if kind == "remove":
            order.remove(anchor)
            expected.remove(anchor)
        elif kind == "take_place":
            item = draw.choice(others)
            order.take_place(item, of=anchor)
            expected.remove(item)
            expected[expected.index(anchor)] = item
        else:
            items = draw.sample(others, draw.randint(1, min(4, len(others))))
            getattr(order, f"move_{kind}")(items, anchor)
            expected = [item for item in expected if item not in items]
            place = expected.index(anchor) + (kind == "after")
            expected[place:place] = items
        assert_labels_follow(order, expected)


def test_labels_run_out_at_one_place_and_are_spread_again():
    """Each item moved right after the first halves the gap there: the labels around it
    run out many times over and must be spread again, in order."""
    order = ListOrder(range(200))
    for item in range(1, 199):
        order.move_after([item], 0)
    assert_labels_follow(order, [0, *range(198, 0, -1), 199])
    order.move_before([199], 198)
    assert_labels_follow(order, [0, 199, *range(198, 0, -1)])


# Corpus programs whose merges move kernels to both sides of a merged one.
REORDERING_CASES = ["special_values", "nan_reductions", "construct_gradient", "quantile_methods"]


def test_fusion_keeps_its_order_topological_through_every_merge(rng):
    """After fusing, every kernel's readers come after it in ``Partition.order``: the
    merges that moved kernels in front of or behind a merged one kept it an order."""
    partitions = []
    merge_greedily = fusion.Partition.merge_greedily

    def recording(self):
        merge_greedily(self)
        partitions.append(self)

    programs = [unrolled_loop(20)]
    for name in REORDERING_CASES:
        case = corpus.by_name(name)
        programs += [(case.fn, case.arguments(s, rng)) for s in case.signatures]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fusion.Partition, "merge_greedily", recording)
        for program, args in programs:
            traced, _, _, _ = trace_to_jaxpr(program, args)
            passes.optimize(traced, debug_checks=False)
    edges = [(gid, nxt) for p in partitions for gid in p.groups for nxt in p.successors(gid)]
    assert len(edges) > 100
    for p in partitions:
        for gid in p.groups:
            labels = p.order.labels
            assert all(labels[gid] < labels[nxt] for nxt in p.successors(gid)), gid
