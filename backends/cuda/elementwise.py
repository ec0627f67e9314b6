"""Elementwise and data-movement kernels: a grid-stride loop over the output.

Consecutive threads take consecutive elements (coalesced loads and stores), and the grid
is capped so that each thread handles several elements. Inputs of other shapes are read
through the index maps of their broadcasts, reshapes, slices, ...; intermediates stay in
registers. Outputs of different shapes (rare) get one loop each in the same kernel.
"""

from __future__ import annotations

import math

from .options import CudaOptions
from .writer import Index, KernelSource, KernelWriter


def launch_1d(n: int, options: CudaOptions, threads: int | None = None) -> tuple:
    threads = threads or options.block_size
    per_block = threads * options.items_per_thread
    blocks = max(1, min(options.max_blocks, math.ceil(n / per_block)))
    return (blocks,), (threads,)


def map_kernel(w: KernelWriter, options: CudaOptions, header: str) -> KernelSource:
    groups: dict = {}
    for param, atom in zip(w.output_params, w.jaxpr.outvars, strict=True):
        groups.setdefault(tuple(atom.aval.shape), []).append((param, atom))
    sizes = [math.prod(shape) for shape in groups]
    w.line("i_start = cuda.grid(1)")
    w.line("i_stride = cuda.gridsize(1)")
    for (shape, outputs), n in zip(groups.items(), sizes, strict=True):
        if n == 0:
            continue
        with w.block(f"for i_flat in range(i_start, {n}, i_stride):"):
            index = Index(shape, flat="i_flat")
            values = w.values([atom for _, atom in outputs], index)
            for (param, _), value in zip(outputs, values, strict=True):
                w.line(f"{param}[i_flat] = {value}")
    grid, block = launch_1d(max(sizes, default=0), options)
    return KernelSource(
        w.name, w.source(header), w.params, grid, block, launch=max(sizes, default=0) > 0
    )
