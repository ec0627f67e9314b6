"""``numbax.tree_util``: pytrees, under ``jax.tree_util``'s names.

A pytree is nested tuples, lists, dicts, named tuples, None and registered classes; its
leaves are everything else. Every transform flattens its arguments and results this way.
``numbax.tree`` has the same functions under JAX's newer short names (``numbax.tree.map``).

>>> from numbax.tree_util import tree_map, tree_flatten
>>> tree_map(lambda x: x * 2, {"w": 1.0, "b": (2.0, None)})
{'b': (4.0, None), 'w': 2.0}
>>> tree_flatten([1, (2, 3)])
([1, 2, 3], list(*, tuple(*, *)))
"""

from .tracer.pytree import (
    PyTreeDef,
    register_pytree_node,
    register_pytree_node_class,
    tree_all,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
)

__all__ = [
    "PyTreeDef",
    "register_pytree_node",
    "register_pytree_node_class",
    "tree_all",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_reduce",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
]
