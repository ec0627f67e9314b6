"""The collectives users call, with JAX's names and arguments, over MPI communicators.

Each function accepts a pytree of arrays (each leaf communicated on its own), works
eagerly and inside ``jit``, ``grad``, ``vmap`` and the loops, and binds the leading-axis
primitives of ``ir/collectives.py`` with moves and reshapes around them for ``axis``,
``tiled``, ``scatter_dimension``, ``split_axis`` and ``concat_axis``. ``axis_name`` is
accepted where JAX has it, for code written for JAX: numbax has one axis per
communicator (every process of ``comm``, ``COMM_WORLD`` by default), so it is ignored.
"""

from __future__ import annotations

import numpy as np

from ..ir import collectives as c
from ..ir import dtypes
from ..ir.core import aval_of
from ..ir.errors import ShapeError
from ..tracer import lax
from ..tracer.core import Tracer, bind
from ..tracer.pytree import tree_map
from . import runtime


def _aval(x):
    return x.aval if isinstance(x, Tracer) else aval_of(np.asarray(x))


def _array(x):
    return x if isinstance(x, Tracer) else np.asarray(x)


def _moveaxis(x, source: int, destination: int):
    if source == destination:
        return x
    perm = list(range(_aval(x).ndim))
    perm.insert(destination, perm.pop(source))
    return lax.transpose(x, perm)


def _axis(axis: int, ndim: int, what: str, function: str) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(
            f"numbax.distributed.{function}: {what}={axis} is out of range for an operand "
            f"of rank {ndim}; pass an axis in [{-ndim}, {ndim - 1}]"
        )
    return axis % ndim


def _reduced(prim, x, comm_id: int):
    """``prim`` over processes, in a dtype MPI reduces (float16 and bfloat16 through
    float32, bool through uint8; a sum of bools counts them, as NumPy's sum does)."""
    x = _array(x)
    dtype = _aval(x).dtype
    if dtype in c.REDUCIBLE:
        return bind(prim, x, comm=comm_id)
    if dtype == dtypes.bool_:
        if prim is c.psum_p:
            return bind(prim, lax.convert_element_type(x, np.dtype("int64")), comm=comm_id)
        wide = bind(prim, lax.convert_element_type(x, np.dtype("uint8")), comm=comm_id)
        return lax.convert_element_type(wide, dtype)
    wide = bind(prim, lax.convert_element_type(x, np.dtype("float32")), comm=comm_id)
    return lax.convert_element_type(wide, dtype)


def psum(x, axis_name=None, *, comm=None):
    """The elementwise sum of ``x`` over every process of ``comm``.

    >>> import numpy as np, numbax.distributed as nd
    >>> nd.psum(np.ones(2)) / nd.process_count()
    array([1., 1.])
    """
    comm_id = runtime.comm_id(comm)
    return tree_map(lambda leaf: _reduced(c.psum_p, leaf, comm_id), x)


def pmean(x, axis_name=None, *, comm=None):
    """The elementwise mean of ``x`` over every process of ``comm``."""
    count = runtime.process_count(comm)
    return tree_map(lambda total: total / count, psum(x, comm=comm))


def pmax(x, axis_name=None, *, comm=None):
    """The elementwise maximum of ``x`` over every process of ``comm``."""
    comm_id = runtime.comm_id(comm)
    return tree_map(lambda leaf: _reduced(c.pmax_p, leaf, comm_id), x)


def pmin(x, axis_name=None, *, comm=None):
    """The elementwise minimum of ``x`` over every process of ``comm``."""
    comm_id = runtime.comm_id(comm)
    return tree_map(lambda leaf: _reduced(c.pmin_p, leaf, comm_id), x)


def all_gather(x, axis_name=None, *, axis: int = 0, tiled: bool = False, comm=None):
    """Every process's ``x``, in rank order: stacked along a new axis ``axis``, or with
    ``tiled=True`` concatenated along the existing axis ``axis``."""
    comm_id, size = runtime.comm_id(comm), runtime.process_count(comm)

    def gather(leaf):
        leaf = _array(leaf)
        ndim = _aval(leaf).ndim
        if tiled and ndim == 0:
            raise ShapeError(
                "numbax.distributed.all_gather: tiled=True concatenates along an existing "
                "axis, and the operand is a scalar; use tiled=False to stack scalars"
            )
        where = _axis(axis, ndim if tiled else ndim + 1, "axis", "all_gather")
        stacked = _moveaxis(bind(c.all_gather_p, leaf, comm=comm_id, size=size), 0, where)
        if not tiled:
            return stacked
        shape = list(_aval(stacked).shape)
        shape[where : where + 2] = [shape[where] * shape[where + 1]]
        return lax.reshape(stacked, shape)

    return tree_map(gather, x)


def _split_size(function: str, what: str, shape, axis: int, size: int, tiled: bool) -> None:
    length = shape[axis]
    if (tiled and length % size) or (not tiled and length != size):
        wanted = f"a multiple of {size}" if tiled else f"{size}"
        raise ShapeError(
            f"numbax.distributed.{function}: {what} {axis} of the operand {tuple(shape)} has "
            f"length {length}, but with {size} processes and tiled={tiled} it must be "
            f"{wanted}; {'pad the axis' if tiled else 'use tiled=True, or reshape'}"
        )


def psum_scatter(x, axis_name=None, *, scatter_dimension: int = 0, tiled: bool = False, comm=None):
    """The sum over processes of ``x``, of which process ``r`` keeps block ``r`` along
    ``scatter_dimension`` (of length ``process_count()``, removed; with ``tiled=True`` a
    multiple of it, divided)."""
    comm_id, size = runtime.comm_id(comm), runtime.process_count(comm)

    def scatter(leaf):
        leaf = _array(leaf)
        shape = _aval(leaf).shape
        axis = _axis(scatter_dimension, len(shape), "scatter_dimension", "psum_scatter")
        _split_size("psum_scatter", "scatter_dimension", shape, axis, size, tiled)
        front = _moveaxis(leaf, axis, 0)
        dtype = _aval(front).dtype
        if dtype not in c.REDUCIBLE:
            front = lax.convert_element_type(front, _widened(dtype))
        summed = bind(c.psum_scatter_p, front, comm=comm_id, size=size)
        if dtype not in c.REDUCIBLE and dtype != dtypes.bool_:
            summed = lax.convert_element_type(summed, dtype)
        if not tiled:
            return lax.reshape(summed, _aval(summed).shape[1:])
        return _moveaxis(summed, 0, axis)

    return tree_map(scatter, x)


reduce_scatter = psum_scatter


def _widened(dtype):
    return np.dtype("int64") if dtype == dtypes.bool_ else np.dtype("float32")


def all_to_all(
    x, axis_name=None, split_axis: int = 0, concat_axis: int = 0, *, tiled=False, comm=None
):
    """Block ``j`` of ``x`` along ``split_axis`` goes to process ``j``; the blocks received
    are put in rank order along ``concat_axis``. Without ``tiled`` the split axis has
    length ``process_count()`` and is removed, and a new axis of that length is placed at
    ``concat_axis``; with ``tiled=True`` the blocks are concatenated along it."""
    comm_id, size = runtime.comm_id(comm), runtime.process_count(comm)

    def exchange(leaf):
        leaf = _array(leaf)
        shape = _aval(leaf).shape
        split = _axis(split_axis, len(shape), "split_axis", "all_to_all")
        concat = _axis(concat_axis, len(shape), "concat_axis", "all_to_all")
        _split_size("all_to_all", "split_axis", shape, split, size, tiled)
        moved = bind(c.all_to_all_p, _moveaxis(leaf, split, 0), comm=comm_id, size=size)
        if not tiled:
            return _moveaxis(moved, 0, concat)
        rest = _aval(moved).shape[1:]
        blocks = lax.reshape(moved, (size, shape[split] // size, *rest))
        blocks = _moveaxis(blocks, 1, split + 1)  # each block shaped as x, split axis cut
        joined = _moveaxis(blocks, 0, concat)
        merged = list(_aval(joined).shape)
        merged[concat : concat + 2] = [merged[concat] * merged[concat + 1]]
        return lax.reshape(joined, merged)

    return tree_map(exchange, x)


def ppermute(x, axis_name=None, perm=None, *, comm=None):
    """``x`` sent along ``perm``, pairs ``(source, destination)`` of ranks: each process
    receives the ``x`` of its source, or zeros when it is no pair's destination. Called
    as ``ppermute(x, perm)`` or JAX's ``ppermute(x, axis_name, perm)``."""
    if perm is None:
        axis_name, perm = None, axis_name
    comm_id, size = runtime.comm_id(comm), runtime.process_count(comm)
    try:
        pairs = tuple((int(s), int(d)) for s, d in perm)
    except (TypeError, ValueError):
        raise ShapeError(
            f"numbax.distributed.ppermute: perm={perm!r} is not a sequence of (source, "
            "destination) rank pairs, e.g. [(0, 1), (1, 0)]"
        ) from None
    bad = [p for p in pairs if not all(0 <= r < size for r in p)]
    sources, destinations = [s for s, _ in pairs], [d for _, d in pairs]
    if bad or len(set(sources)) < len(pairs) or len(set(destinations)) < len(pairs):
        raise ShapeError(
            f"numbax.distributed.ppermute: perm={perm!r} is not a permutation of ranks "
            f"0..{size - 1}: each rank may send at most once and receive at most once"
            + (f" (out of range: {bad})" if bad else "")
        )
    return tree_map(lambda leaf: bind(c.ppermute_p, _array(leaf), comm=comm_id, perm=pairs), x)


def broadcast(x, root: int = 0, *, comm=None):
    """Process ``root``'s ``x`` on every process of ``comm`` (``MPI_Bcast``)."""
    comm_id, size = runtime.comm_id(comm), runtime.process_count(comm)
    if not 0 <= int(root) < size:
        raise ShapeError(
            f"numbax.distributed.broadcast: root={root} is not a rank of a communicator "
            f"of {size} processes; pass a root in 0..{size - 1}"
        )
    return tree_map(lambda leaf: bind(c.broadcast_p, _array(leaf), comm=comm_id, root=int(root)), x)


def axis_index(axis_name=None, *, comm=None):
    """This process's rank as an int32 array value of the program (JAX's ``axis_index``):
    unlike ``process_index()``, a value of the program, so every process compiles the
    same program."""
    return bind(c.axis_index_p, comm=runtime.comm_id(comm))
