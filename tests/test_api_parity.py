"""The API a JAX user reaches for: ``numbax.tree_util`` and ``numbax.tree``,
``custom_jvp``, ``jit(f).lower(x).compile()`` returning ``f``'s structure,
``numbax.scipy.special``, ``numbax.numpy``'s scalar types and dtype helpers, and
``nn.one_hot``'s float32 default."""

from __future__ import annotations

import collections
import importlib

import numpy as np
import pytest

import numbax

Point = collections.namedtuple("Point", ["x", "y"])


# --- tree_util and tree ----------------------------------------------------------------


def test_tree_util_is_a_module_with_jax_names():
    tree_util = importlib.import_module("numbax.tree_util")
    from numbax.tree_util import (
        register_pytree_node,
        tree_flatten,
        tree_leaves,
        tree_map,
        tree_structure,
        tree_unflatten,
    )

    # The functions numbax already exports, not copies of them.
    assert tree_map is numbax.tree_map and tree_flatten is numbax.tree_flatten
    assert tree_unflatten is numbax.tree_unflatten and tree_leaves is numbax.tree_leaves
    assert tree_structure is numbax.tree_structure
    assert register_pytree_node is numbax.register_pytree_node
    assert numbax.tree_util is tree_util
    tree = {"w": np.ones(2), "b": (1.0, None), "p": Point(2.0, [3.0])}
    leaves, treedef = tree_flatten(tree)
    assert tree_unflatten(treedef, leaves)["p"] == Point(2.0, [3.0])
    assert treedef.unflatten(leaves)["b"] == (1.0, None)
    assert tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6
    assert tree_util.tree_reduce(lambda a, b: a + b, [1, (2, 3)], 10) == 16
    assert tree_util.tree_all([True, (1, np.True_)]) and not tree_util.tree_all([1, (0,)])


def test_tree_is_a_module_with_jax_short_names():
    tree = importlib.import_module("numbax.tree")
    from numbax.tree import flatten, leaves, map, structure, unflatten  # noqa: A004

    assert numbax.tree is tree
    assert map is numbax.tree_map and flatten is numbax.tree_flatten
    assert leaves({"a": 1, "b": (2, 3)}) == [1, 2, 3]
    assert unflatten(structure((0, [0])), [4, 5]) == (4, [5])
    assert tree.reduce(max, [3, (9, 4)]) == 9
    assert tree.all({"a": True, "b": [1]})
    outer, inner = structure([0, 0, 0]), structure((0, 0))
    assert tree.transpose(outer, inner, [(1, 2), (3, 4), (5, 6)]) == ([1, 3, 5], [2, 4, 6])


def test_is_leaf_stops_flattening():
    tree = {"a": (1, 2), "b": [(3, 4)]}
    is_pair = lambda node: isinstance(node, tuple)  # noqa: E731
    assert numbax.tree.leaves(tree, is_leaf=is_pair) == [(1, 2), (3, 4)]
    swapped = numbax.tree.map(lambda p: p[::-1], tree, is_leaf=is_pair)
    assert swapped == {"a": (2, 1), "b": [(4, 3)]}


def test_register_pytree_node_class_round_trips_through_jit_and_grad():
    @numbax.tree_util.register_pytree_node_class
    class Linear:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten(self):
            return (self.w, self.b), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    model = Linear(np.array([1.0, 2.0]), np.float64(0.5))

    def loss(m, x):
        return np.sum((m.w * x + m.b) ** 2)

    x = np.array([0.3, -0.7])
    grads = numbax.jit(numbax.grad(loss))(model, x)
    assert isinstance(grads, Linear)
    residual = model.w * x + model.b
    np.testing.assert_allclose(grads.w, 2 * residual * x, rtol=1e-14)
    np.testing.assert_allclose(grads.b, 2 * residual.sum(), rtol=1e-14)
