"""Pytrees: nested tuples, lists, dicts, None and registered classes, flattened to a
list of leaves and a hashable tree definition, for the arguments and results of
every transform."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

# cls -> (flatten: obj -> (children, aux_data), unflatten: (aux_data, children) -> obj)
_REGISTRY: dict[type, tuple[Callable, Callable]] = {}


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Let instances of ``cls`` be pytree nodes.

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    """
    _REGISTRY[cls] = (flatten, unflatten)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls`` is a pytree node through its own ``tree_flatten(self) ->
    (children, aux_data)`` and classmethod ``tree_unflatten(aux_data, children)``, as in
    ``jax.tree_util``.

    >>> @register_pytree_node_class
    ... class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    ...     def tree_flatten(self): return (self.a, self.b), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux, children): return cls(*children)
    >>> tree_leaves(Pair(1.0, (2.0, 3.0)))
    [1.0, 2.0, 3.0]
    """
    register_pytree_node(cls, lambda node: node.tree_flatten(), cls.tree_unflatten)
    return cls


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


class PyTreeDef:
    """The structure of a pytree; hashable so it can be part of a cache key."""

    __slots__ = ("kind", "aux", "children")

    def __init__(self, kind, aux, children: tuple[PyTreeDef, ...]):
        self.kind, self.aux, self.children = kind, aux, children

    @property
    def num_leaves(self) -> int:
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def _key(self):
        return (self.kind, self.aux, self.children)

    def __eq__(self, other):
        return isinstance(other, PyTreeDef) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind is None:
            return "None"
        name = getattr(self.kind, "__name__", str(self.kind))
        return f"{name}({', '.join(map(repr, self.children))})"

    def unflatten(self, leaves) -> Any:
        """The pytree of this structure with ``leaves`` (``tree_unflatten(self, leaves)``)."""
        return tree_unflatten(self, leaves)


LEAF = PyTreeDef("leaf", None, ())


def tree_flatten(tree: Any, is_leaf: Callable | None = None) -> tuple[list, PyTreeDef]:
    """The leaves of ``tree`` in order and its structure; a subtree for which ``is_leaf``
    returns true is one leaf.

    >>> tree_flatten({"b": (1, 2), "a": None})
    ([1, 2], dict(None, tuple(*, *)))
    """
    leaves: list = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _flatten(tree, leaves, is_leaf=None) -> PyTreeDef:
    kind = type(tree)
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LEAF
    if tree is None:
        return PyTreeDef(None, None, ())
    if kind in _REGISTRY:
        children, aux = _REGISTRY[kind][0](tree)
        return PyTreeDef(kind, aux, tuple(_flatten(c, leaves, is_leaf) for c in children))
    if _is_namedtuple(tree) or kind in (tuple, list):
        return PyTreeDef(kind, None, tuple(_flatten(c, leaves, is_leaf) for c in tree))
    if kind is dict:
        keys = tuple(sorted(tree))
        return PyTreeDef(dict, keys, tuple(_flatten(tree[k], leaves, is_leaf) for k in keys))
    leaves.append(tree)
    return LEAF


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
    """The pytree of structure ``treedef`` with ``leaves`` in order."""
    it = iter(leaves)
    out = _unflatten(treedef, it)
    return out


def _unflatten(treedef: PyTreeDef, it):
    if treedef.kind == "leaf":
        return next(it)
    if treedef.kind is None:
        return None
    children = [_unflatten(c, it) for c in treedef.children]
    if treedef.kind in _REGISTRY:
        return _REGISTRY[treedef.kind][1](treedef.aux, children)
    if treedef.kind is dict:
        return dict(zip(treedef.aux, children, strict=False))
    if treedef.kind in (tuple, list):
        return treedef.kind(children)
    return treedef.kind(*children)  # namedtuple


def tree_map(fn: Callable, tree, *rest, is_leaf: Callable | None = None):
    """``fn`` applied to each leaf of ``tree`` (and the matching leaves of the trees in
    ``rest``, which must have ``tree``'s structure), in a tree of ``tree``'s structure.

    >>> tree_map(lambda x, y: x + y, {"w": 1.0, "b": (2.0,)}, {"w": 10.0, "b": (20.0,)})
    {'b': (22.0,), 'w': 11.0}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = [treedef_flatten_like(treedef, r) for r in rest]
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others, strict=False)])


def treedef_flatten_like(treedef: PyTreeDef, tree) -> list:
    leaves, other = tree_flatten(tree)
    if other != treedef:
        raise ValueError(f"pytree structures differ: {treedef} and {other}")
    return leaves


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    """The leaves of ``tree``, in ``tree_flatten``'s order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf: Callable | None = None) -> PyTreeDef:
    """The structure of ``tree``, without its leaves."""
    return tree_flatten(tree, is_leaf)[1]


_NO_INITIAL = object()


def tree_reduce(fn: Callable, tree, initializer=_NO_INITIAL, is_leaf: Callable | None = None):
    """``functools.reduce(fn, tree_leaves(tree)[, initializer])``.

    >>> tree_reduce(lambda a, b: a + b, [1, (2, 3)], 10)
    16
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIAL:
        return functools.reduce(fn, leaves)
    return functools.reduce(fn, leaves, initializer)


def tree_all(tree, is_leaf: Callable | None = None) -> bool:
    """Whether every leaf of ``tree`` is true (``all(tree_leaves(tree))``)."""
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef, tree):
    """A tree of structure ``outer(inner)`` turned into one of structure ``inner(outer)``.

    >>> outer, inner = tree_structure([0, 0]), tree_structure((0, 0))
    >>> tree_transpose(outer, inner, [(1, 2), (3, 4)])
    ([1, 3], [2, 4])
    """
    flat = treedef_flatten_like(_compose(outer_treedef, inner_treedef), tree)
    per_inner = inner_treedef.num_leaves
    columns = [tree_unflatten(outer_treedef, flat[k::per_inner]) for k in range(per_inner)]
    return tree_unflatten(inner_treedef, columns)


def _compose(outer: PyTreeDef, inner: PyTreeDef) -> PyTreeDef:
    """The structure of ``outer`` with ``inner`` in place of each leaf."""
    if outer.kind == "leaf":
        return inner
    return PyTreeDef(outer.kind, outer.aux, tuple(_compose(c, inner) for c in outer.children))
