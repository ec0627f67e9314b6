"""Tracing: Python functions over arrays become jaxprs."""

from .core import Trace, Tracer, bind, current_trace, new_trace, replay, trace_flat
from .pytree import (
    PyTreeDef,
    register_pytree_node,
    tree_flatten,
    tree_leaves,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = [
    "PyTreeDef",
    "Trace",
    "Tracer",
    "bind",
    "current_trace",
    "new_trace",
    "replay",
    "register_pytree_node",
    "trace_flat",
    "tree_flatten",
    "tree_leaves",
    "tree_map",
    "tree_structure",
    "tree_unflatten",
]
