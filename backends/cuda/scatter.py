"""The updates, scatter and dynamic_update_slice: the launcher copies ``x`` into the
output, unless the update writes in place (its operand dies there, the memory plan's
proof: the output is then ``x``'s own buffer), and the kernel writes only what changes.

scatter: each update is combined in at its index along ``axis``; an update whose index is
outside the axis is dropped (the IR's rule, ``ir/structural.py``), so each thread tests
its index before it writes.

- add (numbers) and min/max (integers): one thread per update element combines it in
  with an atomic; duplicates are safe.
- set, mul, and float min/max (whose NaN rules atomics do not follow): one thread per
  column (a position of the other axes) applies the updates that land in it in order:
  serial per column, so the last of duplicate ``set`` indices wins and every combination
  follows NumPy's ``ufunc.at``, with no atomics.

dynamic_update_slice (``window_kernel``): one thread per element of the window.
"""

from __future__ import annotations

import math

from ...ir import dtypes
from .elementwise import launch_1d
from .indexing import clamped_starts
from .options import CudaOptions
from .scalar import maximum, minimum, wrap
from .writer import CodegenError, Index, KernelSource, KernelWriter, linear

_ATOMIC = {"add": "add", "min": "min", "max": "max"}


def _atomic_ok(mode: str, dtype) -> bool:
    if mode == "add":
        return dtype in (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)
    return mode in ("min", "max") and dtype in (dtypes.int32, dtypes.int64)


def _combine(mode: str, old: str, new: str, dtype) -> str:
    if mode == "set":
        return new
    if mode in ("add", "mul"):
        op = "+" if mode == "add" else "*"
        expr = f"{old} {op} {new}"
        return f"({expr})" if dtype.kind == "f" else wrap(expr, dtype)
    return (maximum if mode == "max" else minimum)(old, new, dtype)


def scatter_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    (eqn,) = [e for e in w.jaxpr.eqns if e.prim.name == "scatter"]
    x, indices, updates = eqn.inputs
    (out_param,) = w.output_params
    if w.jaxpr.outvars != [eqn.outputs[0]] or x not in w.input_param:
        # The fusion contract: a scatter kernel is the one eqn on the kernel's operands.
        raise CodegenError("cuda codegen: a scatter kernel holds exactly one scatter")
    axis, mode = eqn.params["axis"], eqn.params["mode"]
    dtype = x.aval.dtype
    shape = tuple(x.aval.shape)
    size = shape[axis]
    depth = indices.aval.ndim
    comment = w.eqn_text(eqn)

    def target(pre, position, post) -> str:
        return linear(tuple(pre) + (position,) + tuple(post), shape)

    def position_of(index_dims) -> str:
        position = w.value(indices, Index(tuple(indices.aval.shape), dims=tuple(index_dims)))
        name = w.temp("k")
        w.line(f"{name} = {position}")
        return name

    if _atomic_ok(mode, dtype):
        n = updates.aval.size
        with w.block(f"for u_flat in range(cuda.grid(1), {n}, cuda.gridsize(1)):"):
            update_index = Index(tuple(updates.aval.shape), flat="u_flat")
            dims = w.dims(update_index)
            position = position_of(dims[axis : axis + depth])
            with w.block(f"if 0 <= {position} < {size}:"):
                value = w.value(updates, update_index)
                where = target(dims[:axis], position, dims[axis + depth :])
                w.line(f"cuda.atomic.{_ATOMIC[mode]}({out_param}, {where}, {value})", comment)
        grid, block = launch_1d(n, options)
        x_position = w.jaxpr.invars.index(x)
        return KernelSource(
            w.name, w.source(header), w.params, grid, block,
            copies=[(x_position, 0)], launch=n > 0 and size > 0,
        )  # fmt: skip
    pre_shape, post_shape = shape[:axis], shape[axis + 1 :]
    columns = math.prod(pre_shape) * math.prod(post_shape)
    n_updates = indices.aval.size
    with w.block(f"for c_flat in range(cuda.grid(1), {columns}, cuda.gridsize(1)):"):
        column = w.delinearize("c_flat", pre_shape + post_shape)
        pre, post = column[: len(pre_shape)], column[len(pre_shape) :]
        if size:
            with w.block(f"for u_pos in range({n_updates}):"):
                index_dims = w.delinearize("u_pos", indices.aval.shape)
                position = position_of(index_dims)
                with w.block(f"if 0 <= {position} < {size}:"):
                    where = w.temp("t")
                    w.line(f"{where} = {target(pre, position, post)}")
                    update_dims = tuple(pre) + tuple(index_dims) + tuple(post)
                    value = w.value(updates, Index(tuple(updates.aval.shape), dims=update_dims))
                    old = w.temp("o")
                    w.line(f"{old} = {out_param}[{where}]")
                    w.line(f"{out_param}[{where}] = {_combine(mode, old, value, dtype)}", comment)
    grid, block = launch_1d(columns, options)
    x_position = w.jaxpr.invars.index(x)
    return KernelSource(
        w.name, w.source(header), w.params, grid, block,
        copies=[(x_position, 0)], launch=columns > 0,
    )  # fmt: skip


def window_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    """dynamic_update_slice: the launcher copies ``x`` into the output (none when the
    update writes in place, into ``x``'s own buffer), then one thread per element of the
    update writes it into the window, whose starts are clamped so that it fits."""
    (eqn,) = w.jaxpr.eqns
    x, update, *starts = eqn.inputs
    (out_param,) = w.output_params
    shape, window = tuple(x.aval.shape), tuple(update.aval.shape)
    clamped = clamped_starts(w, starts, window, shape)
    n = math.prod(window)
    with w.block(f"for u_flat in range(cuda.grid(1), {n}, cuda.gridsize(1)):"):
        index = Index(window, flat="u_flat")
        value = w.value(update, index)
        dims = tuple(f"{s} + {d}" for s, d in zip(clamped, w.dims(index), strict=True))
        w.line(f"{out_param}[{linear(dims, shape)}] = {value}", w.eqn_text(eqn))
    grid, block = launch_1d(n, options)
    x_position = w.jaxpr.invars.index(x)
    return KernelSource(
        w.name, w.source(header), w.params, grid, block, copies=[(x_position, 0)], launch=n > 0
    )
