"""Pytrees: nested tuples, lists, dicts, None and registered classes, flattened to a
list of leaves and a hashable tree definition, for the arguments and results of
every transform."""

from __future__ import annotations

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


LEAF = PyTreeDef("leaf", None, ())


def tree_flatten(tree: Any) -> tuple[list, PyTreeDef]:
    leaves: list = []
    treedef = _flatten(tree, leaves)
    return leaves, treedef


def _flatten(tree, leaves) -> PyTreeDef:
    kind = type(tree)
    if tree is None:
        return PyTreeDef(None, None, ())
    if kind in _REGISTRY:
        children, aux = _REGISTRY[kind][0](tree)
        return PyTreeDef(kind, aux, tuple(_flatten(c, leaves) for c in children))
    if _is_namedtuple(tree):
        return PyTreeDef(kind, None, tuple(_flatten(c, leaves) for c in tree))
    if kind in (tuple, list):
        return PyTreeDef(kind, None, tuple(_flatten(c, leaves) for c in tree))
    if kind is dict:
        keys = tuple(sorted(tree))
        return PyTreeDef(dict, keys, tuple(_flatten(tree[k], leaves) for k in keys))
    leaves.append(tree)
    return LEAF


def tree_unflatten(treedef: PyTreeDef, leaves) -> Any:
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


def tree_map(fn: Callable, tree, *rest):
    leaves, treedef = tree_flatten(tree)
    others = [treedef_flatten_like(treedef, r) for r in rest]
    return tree_unflatten(treedef, [fn(*xs) for xs in zip(leaves, *others, strict=False)])


def treedef_flatten_like(treedef: PyTreeDef, tree) -> list:
    leaves, other = tree_flatten(tree)
    if other != treedef:
        raise ValueError(f"pytree structures differ: {treedef} and {other}")
    return leaves


def tree_leaves(tree) -> list:
    return tree_flatten(tree)[0]


def tree_structure(tree) -> PyTreeDef:
    return tree_flatten(tree)[1]
