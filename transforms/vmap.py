"""``vmap``: vectorise a function over a batch axis of its arguments.

An IR rewrite, as every transform: ``f`` is traced once on one example's abstract
values (the arguments without their batch axis), the batching interpreter re-emits
that jaxpr for the whole batch inside a new trace (``batch_jaxpr``, a
``Jaxpr -> Jaxpr`` function), and the batched jaxpr is replayed on the arguments, so
``vmap`` composes with ``jit``, ``grad`` and itself. The rules live in
``batching_rules`` and ``batching_control_flow``, keyed in ``batching.BATCH_RULES``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..ir.core import ClosedJaxpr, ShapedArray
from ..ir.errors import BatchingError, at_line, function_name
from ..tracer import functionalize
from ..tracer.core import Tracer, replay, trace_flat
from ..tracer.numpy_namespace import tracing_numpy
from ..tracer.promote import argument_aval, is_python_scalar, is_weak
from ..tracer.pytree import PyTreeDef, tree_flatten, tree_structure, tree_unflatten
from ..tracer.source_info import user_frame_info
from . import batching_control_flow, batching_rules  # noqa: F401 - register the rules
from .batching import BATCH_RULES, batched_aval, eval_batched, moveaxis, to_front

__all__ = ["BATCH_RULES", "batch_jaxpr", "vmap"]


def _error(message: str) -> BatchingError:
    return BatchingError(at_line(message, user_frame_info()))


def vmap(fun: Callable, in_axes=0, out_axes=0) -> Callable:
    """Map ``fun`` over an axis of its arguments, as if by a Python loop, but as one
    batched program.

    ``in_axes``: an int, ``None`` (argument not batched) or a tuple with one entry per
    positional argument, each an int, ``None`` or a pytree prefix of that argument.
    ``out_axes``: the same, for the output pytree. Keyword arguments map over axis 0.

    >>> import numpy as np, numbax
    >>> numbax.vmap(lambda x, y: x @ y, in_axes=(0, None))(np.ones((3, 2)), np.ones(2))
    array([2., 2., 2.])
    """

    @functools.wraps(fun)
    def batched(*args, **kwargs):
        leaves, in_tree = tree_flatten((args, kwargs))
        dims = _in_dims(in_axes, args, kwargs, leaves)
        size = _batch_size(leaves, dims)
        avals = [_example_aval(leaf, d) for leaf, d in zip(leaves, dims, strict=True)]
        weak = [d is None and is_weak(leaf) for leaf, d in zip(leaves, dims, strict=True)]
        closed, out_tree, writes = _trace_example(fun, in_tree, avals, weak)
        _refuse_unbatched_writes(writes, dims)
        if writes:
            name = function_name(fun)
            functionalize.refuse_aliased_writes(leaves, writes, name)
        # A written argument's final value is an extra output, batched where it came in.
        out_dims = [*_prefix_axes(out_axes, out_tree, "out_axes"), *(dims[i] for i in writes)]
        program = batch_jaxpr(closed, dims, size, out_dims)
        operands = [
            leaf
            if isinstance(leaf, Tracer) or is_python_scalar(leaf)
            else np.asarray(leaf, aval.dtype)
            for leaf, aval in zip(leaves, program.in_avals, strict=True)
        ]
        outs = replay(program.jaxpr, program.consts, operands)
        return tree_unflatten(out_tree, functionalize.write_back_outputs(leaves, writes, outs))

    return batched


def batch_jaxpr(closed: ClosedJaxpr, in_dims, size: int, out_axes) -> ClosedJaxpr:
    """The batched program of a per-example ``closed`` jaxpr.

    ``in_dims[i]`` is the batch dimension of input ``i`` (or ``None``); the outputs have
    their batch dimension at ``out_axes[i]`` (``None``: the output must be unbatched).
    """
    avals = [
        a if d is None else batched_aval(a, size, d)
        for a, d in zip(closed.in_avals, in_dims, strict=True)
    ]

    def batched(*args):
        outs, dims = eval_batched(closed.jaxpr, closed.consts, args, in_dims)
        return [_place(x, d, axis, size) for x, d, axis in zip(outs, dims, out_axes, strict=True)]

    program, _ = trace_flat(batched, avals)
    return program


def _place(x, dim, axis, size):
    if axis is None:
        if dim is not None:
            raise _error(
                "vmap: out_axes is None for an output that depends on the batched "
                "arguments; give it an axis, or return a value that does not vary"
            )
        return x
    ndim = len(x.shape if hasattr(x, "shape") else ()) + (dim is None)
    if not -ndim <= axis < ndim:
        raise _error(f"vmap: out_axes {axis} is out of range for an output of rank {ndim}")
    return moveaxis(to_front(x, dim, size), 0, axis % ndim)


def _trace_example(fun, in_tree, avals, weak) -> tuple[ClosedJaxpr, PyTreeDef, list[int]]:
    out_tree = []
    traced_fun = tracing_numpy(fun)  # its np.zeros(...) are traced arrays

    def flat(*tracers):
        for tracer, weak_type in zip(tracers, weak, strict=True):
            tracer.weak_type = weak_type
        entry_vars = [tracer._var for tracer in tracers]
        args, kwargs = tree_unflatten(in_tree, tracers)
        leaves, tree = tree_flatten(traced_fun(*args, **kwargs))
        out_tree.append(tree)
        writes.extend(functionalize.written_arguments(tracers, entry_vars))
        return leaves + [tracers[i] for i in writes]

    writes: list[int] = []
    closed, _ = trace_flat(flat, avals)
    return closed, out_tree[0], writes


def _refuse_unbatched_writes(writes, dims) -> None:
    """A write into an argument that is not mapped (``in_axes`` None) would give it one
    value per example: refused, as NumPy's loop would leave only the last one there."""
    for position in writes:
        if dims[position] is None:
            raise _error(
                f"vmap: the function writes into argument leaf {position}, which is not "
                "mapped (in_axes None), so each example would write its own value into "
                "the one array. Map it (give it an axis in in_axes), or write into a copy "
                "(x = x.copy()) and return it"
            )


def _leaf_aval(leaf) -> ShapedArray:
    return argument_aval(leaf, lambda message: _error(f"vmap: {message}"))[0]


def _example_aval(leaf, dim) -> ShapedArray:
    aval = _leaf_aval(leaf)
    if dim is None:
        return aval
    return aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1 :])


def _in_dims(in_axes, args, kwargs, leaves) -> list:
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
        raise _error(
            f"vmap: in_axes has {len(in_axes)} entries but the function was called with "
            f"{len(args)} positional arguments; give one entry per argument"
        )
    if not isinstance(in_axes, tuple):
        in_axes = (in_axes,) * len(args)
    dims = []
    for spec, arg in zip(in_axes, args, strict=True):
        dims += _prefix_axes(spec, tree_structure(arg), "in_axes")
    dims += [0] * tree_structure(kwargs).num_leaves
    return [_normalize(d, leaf) for d, leaf in zip(dims, leaves, strict=True)]


def _normalize(dim, leaf):
    if dim is None:
        return None
    if is_python_scalar(leaf):
        raise _error(
            f"vmap: a Python scalar ({leaf!r}) cannot be mapped over axis {dim}; use "
            "in_axes=None for it, or pass an array"
        )
    ndim = _leaf_aval(leaf).ndim
    if not -ndim <= dim < ndim:
        raise _error(f"vmap: in_axes {dim} is out of range for an argument of rank {ndim}")
    return dim % ndim


def _prefix_axes(spec, treedef: PyTreeDef, what: str) -> list:
    """One axis per leaf of ``treedef``, from ``spec``: an int or None for a whole
    subtree, or a container of the same kind holding the axes of the children."""
    if spec is None or isinstance(spec, int):
        return [spec] * treedef.num_leaves
    children = _matching_children(spec, treedef)
    if children is None:
        raise _error(
            f"vmap: {what} {spec!r} does not match the structure {treedef}; give an int, "
            "None, or a tuple/list/dict of the same shape as that value"
        )
    return [axis for s, c in children for axis in _prefix_axes(s, c, what)]


def _matching_children(spec, treedef: PyTreeDef):
    """(spec child, tree child) pairs when ``spec`` is a container like the node."""
    kind = treedef.kind
    is_sequence = isinstance(kind, type) and issubclass(kind, (tuple, list))
    if isinstance(spec, (tuple, list)) and is_sequence and len(spec) == len(treedef.children):
        return list(zip(spec, treedef.children, strict=True))
    if isinstance(spec, dict) and kind is dict and tuple(sorted(spec)) == treedef.aux:
        return [(spec[key], c) for key, c in zip(treedef.aux, treedef.children, strict=True)]
    return None


def _batch_size(leaves, dims) -> int:
    sizes = {
        _leaf_aval(leaf).shape[d] for leaf, d in zip(leaves, dims, strict=True) if d is not None
    }
    if not sizes:
        raise _error("vmap: no argument is mapped (every in_axes is None)")
    if len(sizes) > 1:
        described = ", ".join(
            f"argument leaf {i} has size {_leaf_aval(leaf).shape[d]} on axis {d}"
            for i, (leaf, d) in enumerate(zip(leaves, dims, strict=True))
            if d is not None
        )
        raise _error(f"vmap: the mapped axes have different sizes: {described}")
    return sizes.pop()
