"""Pytrees: tuples, lists, dicts, None, namedtuples and registered classes flatten to
leaves plus a hashable structure, and unflatten back."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import numbax

Pair = collections.namedtuple("Pair", ["first", "second"])


class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def __eq__(self, other):
        return isinstance(other, Box) and (self.value, self.label) == (other.value, other.label)


numbax.register_pytree_node(Box, lambda b: ((b.value,), b.label), lambda label, c: Box(c[0], label))

TREES = [
    1.0,
    None,
    (),
    [],
    {},
    (1, 2),
    [1, (2, 3), {"b": 4, "a": [5, None]}],
    {"z": 1, "a": (2, None)},
    Pair(1, [2, 3]),
    Box((1, 2), "tag"),
    [Box(Pair(1, None), "x"), {"k": Box(2, "y")}],
]


@pytest.mark.parametrize("tree", TREES, ids=repr)
def test_flatten_unflatten_round_trip(tree):
    leaves, treedef = numbax.tree_flatten(tree)
    assert numbax.tree_unflatten(treedef, leaves) == tree
    assert treedef.num_leaves == len(leaves)
    assert numbax.tree_structure(tree) == treedef
    assert hash(treedef) == hash(numbax.tree_structure(tree))
    assert numbax.tree_leaves(tree) == leaves


def test_leaf_order_and_none_is_not_a_leaf():
    leaves, _ = numbax.tree_flatten({"b": 2, "a": [1, None, 3]})
    assert leaves == [1, 3, 2]  # dict keys sorted, None holds no leaf


def test_structures_differ_by_container_keys_and_aux_data():
    structure = numbax.tree_structure
    assert structure((1, 2)) != structure([1, 2])
    assert structure({"a": 1}) != structure({"b": 1})
    assert structure(Box(1, "x")) != structure(Box(1, "y"))
    assert structure(Pair(1, 2)) != structure((1, 2))
    assert structure((1, None)) != structure((1, 2))
    assert structure((np.ones(2), 3.0)) == structure((1, "anything"))


def test_tree_map():
    tree = {"w": np.ones(2), "layers": [np.zeros(1), Box(np.full(1, 2.0), "b")]}
    doubled = numbax.tree_map(lambda x: x * 2, tree)
    np.testing.assert_array_equal(doubled["w"], np.full(2, 2.0))
    assert isinstance(doubled["layers"][1], Box) and doubled["layers"][1].label == "b"
    np.testing.assert_array_equal(doubled["layers"][1].value, np.full(1, 4.0))
    summed = numbax.tree_map(lambda x, y: x + y, tree, doubled)
    np.testing.assert_array_equal(summed["w"], np.full(2, 3.0))
    with pytest.raises(ValueError, match="structures differ"):
        numbax.tree_map(lambda x, y: x, tree, {"w": 1})


def test_jit_over_registered_class_with_static_aux_data():
    @numbax.jit
    def scale(box):
        return Box(box.value * (2.0 if box.label == "double" else 3.0), box.label)

    out = scale(Box(np.ones(2), "double"))
    np.testing.assert_array_equal(out.value, np.full(2, 2.0))
    out = scale(Box(np.ones(2), "triple"))
    np.testing.assert_array_equal(out.value, np.full(2, 3.0))
    assert scale.cache_info().traces == 2  # aux data is part of the structure
