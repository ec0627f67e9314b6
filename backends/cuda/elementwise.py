"""Elementwise and data-movement kernels: a grid-stride loop over the output.

Consecutive threads take consecutive elements (coalesced loads and stores), and the grid
is capped so that each thread handles several elements. Inputs of other shapes are read
through the index maps of their broadcasts, reshapes, slices, ...; intermediates stay in
registers. Outputs of different shapes (rare) get one loop each in the same kernel.

An output that the memory plan stores into the window of the in-place update taking it
(``passes.window_stores``) has no array of its own: element ``i`` goes straight to
``dst[start + i]``, the update's operand, and the update launches nothing.
"""

from __future__ import annotations

import math

from ...passes.window_stores import UpdateWindow
from .indexing import offset, parenthesize
from .options import CudaOptions
from .writer import Index, KernelSource, KernelWriter, Param, linear, storage


def launch_1d(n: int, options: CudaOptions, threads: int | None = None) -> tuple:
    threads = threads or options.block_size
    per_block = threads * options.items_per_thread
    blocks = max(1, min(options.max_blocks, math.ceil(n / per_block)))
    return (blocks,), (threads,)


def map_kernel(
    w: KernelWriter, options: CudaOptions, header: str, windows: dict | None = None
) -> KernelSource:
    """The kernel of ``w``'s outputs; ``windows`` maps an output's position to the
    in-place update whose window it is stored into (``passes.window_stores``)."""
    stores = {k: _window_store(w, k, window) for k, window in (windows or {}).items()}
    w.params = [p for p in w.params if p.role != "out" or p.position not in stores]
    groups: dict = {}
    for position, atom in enumerate(w.jaxpr.outvars):
        groups.setdefault(tuple(atom.aval.shape), []).append((position, atom))
    sizes = [math.prod(shape) for shape in groups]
    w.line("i_start = cuda.grid(1)")
    w.line("i_stride = cuda.gridsize(1)")
    for (shape, outputs), n in zip(groups.items(), sizes, strict=True):
        if n == 0:
            continue
        with w.block(f"for i_flat in range(i_start, {n}, i_stride):"):
            index = Index(shape, flat="i_flat")
            values = w.values([atom for _, atom in outputs], index)
            for (position, _), value in zip(outputs, values, strict=True):
                if position in stores:
                    dst, starts, full = stores[position]
                    dims = [_shifted(d, s) for d, s in zip(w.dims(index), starts, strict=True)]
                    w.line(f"{dst}[{linear(dims, full)}] = {value}", "into the update's window")
                else:
                    w.line(f"{w.output_params[position]}[i_flat] = {value}")
    grid, block = launch_1d(max(sizes, default=0), options)
    return KernelSource(
        w.name, w.source(header), w.params, grid, block, launch=max(sizes, default=0) > 0
    )


def _shifted(dim: str, start) -> str:
    """Index ``dim`` of the window as an index of the destination: ``start + dim``."""
    if dim == "0":
        return str(start)
    return offset(dim, start) if isinstance(start, int) else f"{start} + {parenthesize(dim)}"


def _window_store(w: KernelWriter, position: int, window: UpdateWindow) -> tuple:
    """(the destination's parameter, each dim's start, the destination's shape) for
    output ``position`` stored into ``window``. A literal start is clamped here, a traced
    one once, before the loop, as the update clamps it."""
    operand = window.operand
    dst = f"dst_{position}"
    w.params.append(Param(dst, storage(operand), "var", var=operand))
    starts: list = []
    for d, start in enumerate(window.starts):
        static = window.static_start(d)
        if static is not None:
            starts.append(static)
            continue
        name = f"start_{position}_{d}"
        w.params.append(Param(name, storage(start), "var", var=start))
        high = operand.aval.shape[d] - window.update.aval.shape[d]
        clamped = w.temp("s")
        w.line(f"{clamped} = min(max({name}[0], 0), {high})")
        starts.append(clamped)
    return dst, starts, tuple(operand.aval.shape)
